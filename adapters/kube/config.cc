#include "adapters/kube/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/naming.h"

namespace stsresize {
namespace {

namespace fs = std::filesystem;
using Error = std::unexpected<std::string>;

std::expected<std::string, std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(path.string() + ": cannot read: " + std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return Error(path.string() + ": read failed: " + std::strerror(errno));
  return std::move(content).str();
}

std::string trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return std::string{text.substr(first, last - first + 1)};
}

// Standard alphabet with padding, as kubeconfig *-data fields use; whitespace (line wrapping)
// is skipped.
std::optional<std::string> base64_decode(std::string_view encoded) {
  static constexpr auto kValues = [] {
    std::array<int, 256> values{};
    values.fill(-1);
    constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
      values[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int>(i);
    }
    return values;
  }();
  std::string out;
  unsigned int buffer = 0;
  int bits = 0;
  std::size_t symbols = 0;
  std::size_t padding = 0;
  for (const char c : encoded) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int value = kValues[static_cast<unsigned char>(c)];
    if (value < 0 || padding > 0) return std::nullopt;  // bad symbol, or data after padding
    buffer = (buffer << 6) | static_cast<unsigned int>(value);
    bits += 6;
    ++symbols;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (padding > 2 || symbols % 4 == 1 || (padding > 0 && (symbols + padding) % 4 != 0)) {
    return std::nullopt;
  }
  return out;
}

// A string-valued key of a YAML map; empty when absent or null.
std::expected<std::string, std::string> string_at(const YAML::Node& map, std::string_view where,
                                                  const char* key) {
  const YAML::Node value = map[key];
  if (!value || value.IsNull()) return std::string{};
  if (!value.IsScalar()) return Error(std::string{where} + ": " + key + " must be a string");
  return value.Scalar();
}

// kubeconfig lists look like `clusters: [{name: x, cluster: {...}}]`; returns the inner map.
std::expected<YAML::Node, std::string> named_entry(const YAML::Node& root, std::string_view file,
                                                   const char* list_key, const char* entry_key,
                                                   const std::string& name) {
  const YAML::Node list = root[list_key];
  std::string known;
  if (list && list.IsSequence()) {
    for (const YAML::Node& entry : list) {
      if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) continue;
      if (entry["name"].Scalar() == name) {
        const YAML::Node inner = entry[entry_key];
        if (!inner || inner.IsNull()) return YAML::Node{YAML::NodeType::Map};
        if (!inner.IsMap()) {
          return Error(std::string{file} + ": " + list_key + " entry \"" + name +
                       "\": " + entry_key + " must be a map");
        }
        return inner;
      }
      known += (known.empty() ? "" : ", ") + entry["name"].Scalar();
    }
  }
  return Error(std::string{file} + ": " + entry_key + " \"" + name + "\" not found in " + list_key +
               " (known: " + (known.empty() ? "none" : known) + ")");
}

// PEM material given inline (`data_key`, base64) or by file (`file_key`).
std::expected<std::string, std::string> pem_at(const YAML::Node& map, std::string_view where,
                                               const char* data_key, const char* file_key,
                                               const fs::path& base_dir) {
  auto data = string_at(map, where, data_key);
  if (!data) return Error(data.error());
  auto file = string_at(map, where, file_key);
  if (!file) return Error(file.error());
  if (!data->empty() && !file->empty()) {
    return Error(std::string{where} + ": both " + data_key + " and " + file_key +
                 " are set; use one");
  }
  if (!data->empty()) {
    auto decoded = base64_decode(*data);
    if (!decoded) return Error(std::string{where} + ": " + data_key + " is not valid base64");
    return std::move(*decoded);
  }
  if (!file->empty()) {
    fs::path path{*file};
    if (path.is_relative()) path = base_dir / path;
    auto content = read_file(path);
    if (!content) return Error(std::string{where} + ": " + file_key + " " + content.error());
    return std::move(*content);
  }
  return std::string{};
}

KubeConfigResult parse_kubeconfig(const YAML::Node& root, const fs::path& path,
                                  std::string_view requested_context) {
  const std::string file = "kubeconfig " + path.string();
  if (!root.IsMap()) return Error(file + ": not a YAML map");
  const fs::path base_dir = path.parent_path();

  std::string context_name{requested_context};
  if (context_name.empty()) {
    auto current = string_at(root, file, "current-context");
    if (!current) return Error(current.error());
    if (current->empty()) return Error(file + ": no context given and current-context is not set");
    context_name = *current;
  }
  auto context = named_entry(root, file, "contexts", "context", context_name);
  if (!context) return Error(context.error());
  const std::string context_where = file + ": context \"" + context_name + "\"";

  KubeConfig config;
  config.source = file + " (context " + context_name + ")";
  auto ns = string_at(*context, context_where, "namespace");
  if (!ns) return Error(ns.error());
  if (!ns->empty()) {
    // It becomes a segment of request paths: "..", "a/b" or "UPPER" must not reach the server.
    if (!naming::is_dns1123_label(*ns)) {
      return Error(context_where + ": namespace \"" + *ns +
                   "\" is not a namespace name (at most 63 lowercase letters, digits and '-', "
                   "starting and ending with a letter or digit)");
    }
    config.ns = *ns;
  }

  auto cluster_name = string_at(*context, context_where, "cluster");
  if (!cluster_name) return Error(cluster_name.error());
  if (cluster_name->empty()) return Error(context_where + ": cluster is not set");
  auto cluster = named_entry(root, file, "clusters", "cluster", *cluster_name);
  if (!cluster) return Error(cluster.error());
  const std::string cluster_where = file + ": cluster \"" + *cluster_name + "\"";

  auto server = string_at(*cluster, cluster_where, "server");
  if (!server) return Error(server.error());
  if (server->empty()) return Error(cluster_where + ": server is not set");
  if (!server->starts_with("https://") && !server->starts_with("http://")) {
    return Error(cluster_where + ": server \"" + *server + "\" must start with https://");
  }
  config.server = *server;

  if (const YAML::Node insecure = (*cluster)["insecure-skip-tls-verify"]; insecure) {
    bool value = false;
    if (!YAML::convert<bool>::decode(insecure, value)) {
      return Error(cluster_where + ": insecure-skip-tls-verify must be true or false");
    }
    config.insecure_skip_tls_verify = value;
  }
  auto ca = pem_at(*cluster, cluster_where, "certificate-authority-data", "certificate-authority",
                   base_dir);
  if (!ca) return Error(ca.error());
  config.ca_pem = std::move(*ca);
  if (config.insecure_skip_tls_verify && !config.ca_pem.empty()) {
    // As kubectl: trusting a CA and skipping verification contradict each other.
    return Error(cluster_where +
                 ": insecure-skip-tls-verify and a certificate authority are both set");
  }

  auto user_name = string_at(*context, context_where, "user");
  if (!user_name) return Error(user_name.error());
  if (user_name->empty()) return config;  // anonymous
  config.user = *user_name;
  auto user = named_entry(root, file, "users", "user", *user_name);
  if (!user) return Error(user.error());
  const std::string user_where = file + ": user \"" + *user_name + "\"";

  auto cert = pem_at(*user, user_where, "client-certificate-data", "client-certificate", base_dir);
  if (!cert) return Error(cert.error());
  auto key = pem_at(*user, user_where, "client-key-data", "client-key", base_dir);
  if (!key) return Error(key.error());
  if (cert->empty() != key->empty()) {
    return Error(user_where + ": " +
                 (cert->empty() ? "client-key is set without client-certificate"
                                : "client-certificate is set without client-key") +
                 " (-data or file)");
  }
  config.client_cert_pem = std::move(*cert);
  config.client_key_pem = std::move(*key);

  auto token = string_at(*user, user_where, "token");
  if (!token) return Error(token.error());
  config.token = *token;
  auto token_file = string_at(*user, user_where, "tokenFile");
  if (!token_file) return Error(token_file.error());
  if (!token_file->empty()) {
    fs::path token_path{*token_file};
    if (token_path.is_relative()) token_path = base_dir / token_path;
    if (auto content = read_file(token_path); !content) {
      return Error(user_where + ": tokenFile " + content.error());
    }
    config.token_file = token_path;
  }

  const bool has_credentials =
      !config.client_cert_pem.empty() || !config.token.empty() || !config.token_file.empty();
  if (!has_credentials) {
    for (const char* unsupported : {"exec", "auth-provider", "username"}) {
      if ((*user)[unsupported]) {
        return Error(user_where + ": uses " + unsupported +
                     ", which stsresize does not support; use a client certificate or a token");
      }
    }
  }
  return config;
}

}  // namespace

std::expected<std::filesystem::path, std::string> kubeconfig_path(std::string_view flag,
                                                                  const char* kubeconfig_env,
                                                                  const char* home_env) {
  if (!flag.empty()) return fs::path{flag};
  if (kubeconfig_env != nullptr) {
    std::string_view list{kubeconfig_env};
    while (!list.empty()) {
      const auto colon = list.find(':');
      const std::string_view entry = list.substr(0, colon);
      if (!entry.empty()) return fs::path{entry};
      if (colon == std::string_view::npos) break;
      list.remove_prefix(colon + 1);
    }
  }
  if (home_env != nullptr && *home_env != '\0') return fs::path{home_env} / ".kube" / "config";
  return Error("no kubeconfig: pass --kubeconfig, or set KUBECONFIG or HOME");
}

KubeConfigResult load_kubeconfig(const std::filesystem::path& path, std::string_view context) {
  auto text = read_file(path);
  if (!text) return Error("kubeconfig " + text.error());
  try {
    return parse_kubeconfig(YAML::Load(*text), path, context);
  } catch (const YAML::Exception& e) {
    return Error("kubeconfig " + path.string() + ": " + e.what());
  }
}

InClusterEnvironment InClusterEnvironment::from_process() {
  InClusterEnvironment env;
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST")) env.service_host = host;
  if (const char* port = std::getenv("KUBERNETES_SERVICE_PORT")) env.service_port = port;
  return env;
}

KubeConfigResult load_in_cluster(const InClusterEnvironment& env) {
  if (env.service_host.empty() || env.service_port.empty()) {
    return Error(
        "not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  KubeConfig config;
  config.source = "in-cluster service account " + env.secrets_dir.string();
  config.user = "in-cluster service account";
  const bool bare_ipv6 =
      env.service_host.find(':') != std::string::npos && !env.service_host.starts_with('[');
  config.server = "https://" + (bare_ipv6 ? "[" + env.service_host + "]" : env.service_host) + ":" +
                  env.service_port;

  const fs::path token_path = env.secrets_dir / "token";
  auto token = read_file(token_path);
  if (!token) return Error("in-cluster token " + token.error());
  if (trimmed(*token).empty())
    return Error("in-cluster token " + token_path.string() + " is empty");
  config.token_file = token_path;

  auto ca = read_file(env.secrets_dir / "ca.crt");
  if (!ca) return Error("in-cluster CA " + ca.error());
  config.ca_pem = std::move(*ca);

  if (auto ns = read_file(env.secrets_dir / "namespace"); ns && !trimmed(*ns).empty()) {
    config.ns = trimmed(*ns);
    if (!naming::is_dns1123_label(config.ns)) {
      return Error("in-cluster namespace file " + (env.secrets_dir / "namespace").string() +
                   " holds \"" + config.ns + "\", not a namespace name");
    }
  }
  return config;
}

BearerToken::BearerToken(std::string token, std::filesystem::path file)
    : token_(std::move(token)), file_(std::move(file)) {}

std::expected<std::string, std::string> BearerToken::current() {
  std::lock_guard lock(mutex_);
  if (file_.empty()) return token_;
  struct stat info {};
  if (::stat(file_.c_str(), &info) != 0) {
    if (!token_.empty()) return token_;
    return Error("token file " + file_.string() + ": " + std::strerror(errno));
  }
  const FileStamp stamp{
      static_cast<unsigned long long>(info.st_ino), static_cast<long long>(info.st_size),
      static_cast<long long>(info.st_mtim.tv_sec) * 1'000'000'000LL + info.st_mtim.tv_nsec};
  if (loaded_ && stamp == stamp_) return token_;
  auto content = read_file(file_);
  // A token file caught mid-write or briefly missing must not log us out: keep the last token.
  if (!content || trimmed(*content).empty()) {
    if (!token_.empty()) return token_;
    return Error("token file " + (content ? file_.string() + " is empty" : content.error()));
  }
  token_ = trimmed(*content);
  stamp_ = stamp;
  loaded_ = true;
  return token_;
}

}  // namespace stsresize
