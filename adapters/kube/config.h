#pragma once
// Where the kube-apiserver is and how to authenticate to it: from a kubeconfig file (the CLI's
// --kubeconfig, $KUBECONFIG, ~/.kube/config) or from the service account of the pod we run in.
// Loading reads every referenced file once, so a bad path is reported at startup with the key
// that named it; only the bearer token file is re-read later (in-cluster tokens rotate).
#include <expected>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

namespace stsresize {

struct KubeConfig {
  std::string server;  // "https://host:port" with an optional path prefix; "http://" for tests
  std::string ca_pem;  // trusted roots, PEM; empty: the system's roots
  std::string client_cert_pem;  // client certificate and its key, PEM: both or neither
  std::string client_key_pem;
  std::string token;                      // static bearer token
  std::filesystem::path token_file;       // when set, the bearer token is this file's content
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig explicitly says so
  std::string ns = "default";             // the context's (or the pod's) namespace
  std::string source;  // where this came from, for messages: "kubeconfig /x (ctx)"
  // Who, for people: the kubeconfig context's user entry ("" when anonymous); in a pod,
  // "in-cluster service account". `stsresize advance` records it as the operator.
  std::string user;
};

// Errors name the file and the key at fault.
using KubeConfigResult = std::expected<KubeConfig, std::string>;

// The kubeconfig file to read: `flag` (--kubeconfig) if set, else the first entry of
// $KUBECONFIG (a colon-separated list is not merged: only its first file is used), else
// $HOME/.kube/config. Pass the environment values (nullptr when unset) so tests stay hermetic.
std::expected<std::filesystem::path, std::string> kubeconfig_path(std::string_view flag,
                                                                  const char* kubeconfig_env,
                                                                  const char* home_env);

// Reads a kubeconfig (YAML). `context` empty means the file's current-context. Relative file
// references (certificate-authority, client-certificate, client-key, tokenFile) are resolved
// against the kubeconfig's directory. Credential plugins (exec, auth-provider) are not supported.
KubeConfigResult load_kubeconfig(const std::filesystem::path& path, std::string_view context = {});

// What a pod sees of its cluster. from_process() reads KUBERNETES_SERVICE_HOST/PORT; tests set
// the fields (and secrets_dir) directly.
struct InClusterEnvironment {
  std::string service_host;  // may be a bare IPv6 address: brackets are added in the URL
  std::string service_port;
  std::filesystem::path secrets_dir = "/var/run/secrets/kubernetes.io/serviceaccount";

  static InClusterEnvironment from_process();
};

// The service account's token (kept as token_file, so rotation is followed), ca.crt and
// namespace (optional: "default" when absent).
KubeConfigResult load_in_cluster(const InClusterEnvironment& env);

// The bearer token to send now. With a token file, the file is stat'ed on every call and re-read
// when it changed (inode, size or mtime), so a rotated token is picked up on the next request;
// if a re-read fails, the last good token is kept. Thread-safe.
class BearerToken {
 public:
  BearerToken(std::string token, std::filesystem::path file);

  // Empty string: no token configured. Error: the file could never be read.
  std::expected<std::string, std::string> current();

 private:
  std::mutex mutex_;
  std::string token_;
  const std::filesystem::path file_;
  struct FileStamp {
    unsigned long long inode = 0;
    long long size = -1;
    long long mtime_ns = 0;
    friend bool operator==(const FileStamp&, const FileStamp&) = default;
  };
  FileStamp stamp_;
  bool loaded_ = false;
};

}  // namespace stsresize
