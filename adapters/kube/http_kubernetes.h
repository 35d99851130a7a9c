#pragma once
// The Kubernetes port against a real kube-apiserver, over HTTPS (cpp-httplib + OpenSSL).
//
// TLS: the server certificate is always verified (against KubeConfig::ca_pem only when given,
// else the system's roots), unless insecure_skip_tls_verify is set. Client certificates and
// bearer tokens (a token file is followed through rotation) authenticate.
//
// Threads: every method may be called concurrently. Each call borrows an HTTP client from a
// small pool (keep-alive connection, TLS session set up once) and returns it afterwards, so
// concurrent workers neither serialize on one connection nor pay a TLS handshake per request.
//
// Errors: every non-2xx answer becomes a KubeError mapped from the HTTP status and the Status
// object (error_from_response); no exception from httplib, nlohmann or OpenSSL escapes.
//
// Watch: each call has a client (and connection) of its own, outside the pool, so that `stop`
// can shut its socket down from another thread and so a long stream holds no pooled client.
// A watch whose stream neither ends at its timeout (plus watch_timeout_grace) nor answers TCP
// keepalive probes ends in Unreachable.
#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "adapters/kube/config.h"
#include "engine/ports/kubernetes.h"
#include "engine/ports/pod_logs.h"

namespace stsresize {

struct HttpKubernetesOptions {
  Duration connect_timeout = std::chrono::seconds{5};
  Duration read_timeout = std::chrono::seconds{30};  // also the write timeout
  std::string user_agent = "stsresize/0.1";
  std::size_t max_idle_connections = 8;  // clients kept for reuse; more are made on demand
  // How long after its own timeout (WatchOptions::timeout, sent as timeoutSeconds) a watch
  // stream that has not ended counts as dead. Silence before that is normal: kube-apiserver
  // sends bookmarks only when its cache moves, so a quiet cluster may send nothing for the whole
  // watch; ending such healthy watches early would cost a re-watch every minute or so on an
  // idle cluster. A peer that vanished (host down, network cut) is found sooner by TCP
  // keepalive, which every watch socket enables (probes after 15 s of silence, every 5 s, 3
  // unanswered: about 30 s), as Go's dialer does for client-go.
  Duration watch_timeout_grace = std::chrono::seconds{30};
  // Called after every request: `verb` is the operation as RequestCounters names it, `request`
  // the method and path with its query ("GET /api/v1/namespaces/a/pods?limit=100"), `status`
  // the HTTP status (0: no answer), `latency` until the answer (for a watch: until the
  // response headers, or the failure). Runs on the calling thread; must not throw.
  std::function<void(std::string_view verb, std::string_view request, int status, Duration latency)>
      on_request;
};

// Requests made, by operation ("get", "list", "create", "update", "update_status", "patch",
// "delete", "watch", "get_scale", "update_scale", "raw") and HTTP status; status 0 means no answer
// (Unreachable). For /metrics later.
class RequestCounters {
 public:
  using Key = std::pair<std::string, int>;  // operation, status

  void record(std::string_view operation, int status);
  std::uint64_t count(std::string_view operation, int status) const;
  std::map<Key, std::uint64_t> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<Key, std::uint64_t> counts_;
};

// "https://[::1]:6443/prefix" -> tls, host "::1", port 6443, base_path "/prefix".
struct ServerAddress {
  bool tls = true;
  std::string host;  // IPv6 without brackets
  int port = 443;
  std::string base_path;  // no trailing slash; empty for the root
};
std::expected<ServerAddress, std::string> parse_server_url(std::string_view url);

// Percent-encodes everything but RFC 3986 unreserved characters (for query values and names).
std::string url_encode(std::string_view text);

// The REST path of a kind's collection (name empty) or of one object, e.g.
// "/apis/apps/v1/namespaces/db/statefulsets/web"; `ns` is ignored for cluster-scoped kinds and
// empty means "all namespaces" for a namespaced collection.
std::string resource_path(Kind kind, std::string_view ns, std::string_view name = {});

// Maps a non-2xx answer: `status` the HTTP status, `body` the response (a Status object when the
// API server produced it), `retry_after` the Retry-After header (seconds; may be empty),
// `request` e.g. "GET /api/v1/..." to prefix the message with.
KubeError error_from_response(int status, std::string_view body, std::string_view retry_after,
                              std::string_view request);

class HttpKubernetes final : public Kubernetes, public PodLogs {
 public:
  // Fails when the server URL or the PEM material is unusable (the message says which).
  static std::expected<std::unique_ptr<HttpKubernetes>, std::string> create(
      KubeConfig config, HttpKubernetesOptions options = {});
  ~HttpKubernetes() override;

  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override;
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override;
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override;
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override;
  KubeResult<Json> get_scale(const ObjectRef& ref) override;
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override;
  // PodLogs: GET .../pods/NAME/log?container=C&tailLines=N (text, not JSON).
  KubeResult<std::string> tail(const ObjectRef& pod, const std::string& container,
                               int lines) override;

  // A request outside the port's kinds (e.g. creating a Namespace in tests). `path_and_query`
  // is sent as is (already encoded); a 2xx answer's JSON body (null if empty) is returned.
  KubeResult<Json> raw(std::string_view method, std::string_view path_and_query,
                       const std::optional<Json>& body = std::nullopt,
                       std::string_view content_type = "application/json");

  const RequestCounters& counters() const { return counters_; }
  // The namespace of the kubeconfig context (or the pod); the port itself never defaults it.
  const std::string& default_namespace() const;

 private:
  class Connections;
  HttpKubernetes(KubeConfig config, std::unique_ptr<Connections> connections);

  KubeResult<Json> call(std::string_view operation, std::string_view method,
                        const std::string& path_and_query, const std::string* body,
                        std::string_view content_type);
  // The body of a 2xx answer as it came (call() parses it as JSON).
  KubeResult<std::string> send(std::string_view operation, std::string_view method,
                               const std::string& path_and_query, const std::string* body,
                               std::string_view content_type, std::string_view accept);
  void report(std::string_view operation, std::string_view request, int status,
              std::chrono::steady_clock::time_point started);

  KubeConfig config_;
  BearerToken token_;
  std::unique_ptr<Connections> connections_;
  RequestCounters counters_;
};

}  // namespace stsresize
