#include "adapters/kube/http_kubernetes.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <vector>

#include "adapters/kube/watch_framing.h"

namespace stsresize {
namespace {

using Unexpected = std::unexpected<KubeError>;

struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct StoreFree {
  void operator()(X509_STORE* store) const { X509_STORE_free(store); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The first queued OpenSSL error, and the queue cleared so it does not leak into later calls.
std::string openssl_error() {
  const unsigned long code = ERR_peek_last_error();
  std::string text = "unknown OpenSSL error";
  if (code != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    text = buffer;
  }
  ERR_clear_error();
  return text;
}

BioPtr memory_bio(const std::string& pem) {
  return BioPtr{BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))};
}

using Certificates = std::vector<X509Ptr>;

// Every certificate of a PEM bundle; an error when there is none or one does not parse.
std::expected<Certificates, std::string> certificates_from_pem(const std::string& pem) {
  BioPtr bio = memory_bio(pem);
  if (!bio) return std::unexpected("CA: " + openssl_error());
  Certificates certificates;
  while (X509Ptr cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) {
    certificates.push_back(std::move(cert));
  }
  ERR_clear_error();  // reading past the last certificate queues a "no start line" error
  if (certificates.empty()) return std::unexpected(std::string{"CA: no PEM certificate found"});
  return certificates;
}

// A store of its own for one client. Clients must not share one: httplib adds a lookup to the
// store on a client's first connection (SSL_CTX_load_verify_locations), which OpenSSL does not
// lock, so the informers' first requests, made at the same instant, corrupted a shared store
// (a controller died of SIGSEGV when the store was freed at shutdown).
StorePtr store_of(const Certificates& certificates) {
  StorePtr store{X509_STORE_new()};
  if (!store) return nullptr;
  for (const X509Ptr& cert : certificates) {
    if (X509_STORE_add_cert(store.get(), cert.get()) != 1) return nullptr;
  }
  return store;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

KubeErrorCode code_for(int status, std::string_view reason) {
  switch (status) {
    case 400:
      return KubeErrorCode::BadRequest;
    case 401:
      return KubeErrorCode::Unauthorized;
    case 403:
      return KubeErrorCode::Forbidden;
    case 404:
      return KubeErrorCode::NotFound;
    case 409:
      return reason == "AlreadyExists" ? KubeErrorCode::AlreadyExists : KubeErrorCode::Conflict;
    case 410:
      return KubeErrorCode::Gone;
    case 422:
      return KubeErrorCode::Invalid;
    case 429:
      return KubeErrorCode::TooManyRequests;
    default:
      // Other 4xx (405, 406, 415, ...) mean this client sent something the server refuses:
      // retrying unchanged cannot help. Anything else unexpected is the server's problem.
      if (status >= 400 && status < 500) return KubeErrorCode::BadRequest;
      return KubeErrorCode::ServerError;
  }
}

std::optional<std::int64_t> parse_seconds(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::int64_t seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc{} || end != text.data() + text.size() || seconds < 0) return std::nullopt;
  return seconds;
}

KubeError local_error(KubeErrorCode code, std::string message) {
  return KubeError{code, std::move(message), Duration{0}};
}

// Objects the port sends; dump() throws on invalid UTF-8, which is the caller's mistake.
std::expected<std::string, KubeError> serialize(const Json& object, std::string_view what) {
  try {
    return object.dump();
  } catch (const Json::exception& e) {
    return std::unexpected(local_error(KubeErrorCode::BadRequest,
                                       std::string{what} + ": cannot serialize: " + e.what()));
  }
}

std::string_view propagation_policy(Propagation propagation) {
  switch (propagation) {
    case Propagation::Background:
      return "Background";
    case Propagation::Foreground:
      return "Foreground";
    case Propagation::Orphan:
      return "Orphan";
    case Propagation::Default:
      break;
  }
  return {};
}

// Names an object for a request. An empty name would address the whole collection, so it is
// answered here, as the fake answers it: a ref without a name names nothing (NotFound), an
// object body without one is malformed (BadRequest). An empty namespace is left to the server,
// which answers NotFound (as the fake).
enum class Named { ByRef, ByBody };

std::expected<std::string, KubeError> object_path(std::string_view operation, Named named,
                                                  Kind kind, std::string_view ns,
                                                  std::string_view name) {
  if (name.empty()) {
    return std::unexpected(local_error(
        named == Named::ByRef ? KubeErrorCode::NotFound : KubeErrorCode::BadRequest,
        std::string{operation} + " " + std::string{to_string(kind)} + ": the name is empty"));
  }
  return resource_path(kind, ns, name);
}

std::string metadata_string(const Json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return {};
  const auto value = meta->find(key);
  return value != meta->end() && value->is_string() ? value->get<std::string>() : std::string{};
}

// OpenSSL writes to the socket with write(2), not send(MSG_NOSIGNAL): a TLS close_notify on a
// connection the server (or a watch's stop()) has shut down raises SIGPIPE, whose default
// action kills the process. The write then fails with EPIPE instead, which is handled. A
// handler the program installed itself is left alone.
void ignore_broken_pipes() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

// Rather than trust the system's roots in addition to the kubeconfig's CA, point httplib's
// "CA directory" at a path that holds nothing: it then adds no default verify paths.
constexpr const char* kNoExtraRoots = "/nonexistent/stsresize-no-system-roots";

}  // namespace

// ---------------------------------------------------------------------------------------------

void RequestCounters::record(std::string_view operation, int status) {
  std::lock_guard lock(mutex_);
  ++counts_[Key{std::string{operation}, status}];
}

std::uint64_t RequestCounters::count(std::string_view operation, int status) const {
  std::lock_guard lock(mutex_);
  const auto it = counts_.find(Key{std::string{operation}, status});
  return it == counts_.end() ? 0 : it->second;
}

std::map<RequestCounters::Key, std::uint64_t> RequestCounters::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

std::expected<ServerAddress, std::string> parse_server_url(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return std::unexpected("server URL \"" + std::string{url} + "\": " + std::string{why});
  };
  ServerAddress address;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    address.tls = false;
    address.port = 80;
  } else {
    return bad("must start with https:// (or http://)");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) return bad("query or fragment");
  while (path.ends_with('/')) path.remove_suffix(1);
  address.base_path = std::string{path};
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");

  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated [IPv6] host");
    address.host = std::string{authority.substr(1, close - 1)};
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(':')) return bad("garbage after ]");
      port = after.substr(1);
      if (port.empty()) return bad("empty port");
    }
  } else {
    if (std::count(authority.begin(), authority.end(), ':') > 1) {
      return bad("an IPv6 host must be in brackets");
    }
    const auto colon = authority.find(':');
    address.host = std::string{authority.substr(0, colon)};
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return bad("empty port");
    }
  }
  if (address.host.empty()) return bad("no host");
  if (!port.empty()) {
    int value = 0;
    const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (error != std::errc{} || end != port.data() + port.size() || value < 1 || value > 65535) {
      return bad("bad port");
    }
    address.port = value;
  }
  return address;
}

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                            byte == '_' || byte == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0x0F]);
    }
  }
  return out;
}

std::string resource_path(Kind kind, std::string_view ns, std::string_view name) {
  const KindInfo info = kind_info(kind);
  // The core group is served under /api/v1, every other group under /apis/<group>/<version>.
  std::string path = info.group.empty() ? "/api" : "/apis/" + std::string{info.group};
  path += "/" + std::string{info.version};
  if (info.namespaced && !ns.empty()) path += "/namespaces/" + url_encode(ns);
  path += '/';
  path += info.plural;
  if (!name.empty()) path += "/" + url_encode(name);
  return path;
}

KubeError error_from_response(int status, std::string_view body, std::string_view retry_after,
                              std::string_view request) {
  std::string reason;
  std::string server_message;
  std::vector<std::string> causes;
  std::optional<std::int64_t> retry_after_seconds = parse_seconds(retry_after);

  const Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    reason = parsed.value("reason", "");
    server_message = parsed.value("message", "");
    if (const auto details = parsed.find("details");
        details != parsed.end() && details->is_object()) {
      if (const auto list = details->find("causes"); list != details->end() && list->is_array()) {
        for (const Json& cause : *list) {
          if (!cause.is_object()) continue;
          const std::string field = cause.value("field", "");
          const std::string text = cause.value("message", cause.value("reason", ""));
          causes.push_back(field.empty() ? text : field + ": " + text);
        }
      }
      if (!retry_after_seconds) {
        if (const auto seconds = details->find("retryAfterSeconds");
            seconds != details->end() && seconds->is_number_integer()) {
          retry_after_seconds = seconds->get<std::int64_t>();
        }
      }
    }
  } else {
    // Not the API server speaking (a proxy, a load balancer): show what came back, briefly.
    constexpr std::size_t kShown = 200;
    server_message = std::string{body.substr(0, kShown)};
    if (body.size() > kShown) server_message += "...";
  }

  const KubeErrorCode code = code_for(status, reason);
  std::string message{request};
  message += ": HTTP " + std::to_string(status);
  if (const auto phrase = reason_phrase(status); !phrase.empty())
    message += " " + std::string{phrase};
  if (!server_message.empty()) message += ": " + server_message;
  // The API server usually spells the causes out in its message already; add the ones it did not.
  std::string missing;
  for (const std::string& cause : causes) {
    if (server_message.find(cause) != std::string::npos) continue;
    missing += (missing.empty() ? "" : "; ") + cause;
  }
  if (!missing.empty()) message += " [causes: " + missing + "]";

  Duration wait{0};
  if (retry_after_seconds) wait = std::chrono::seconds{*retry_after_seconds};
  return KubeError{code, std::move(message), wait};
}

// ---------------------------------------------------------------------------------------------

class HttpKubernetes::Connections {
 public:
  Connections(ServerAddress address, HttpKubernetesOptions options, Certificates ca, X509Ptr cert,
              KeyPtr key, bool verify)
      : address_(std::move(address)),
        options_(std::move(options)),
        ca_(std::move(ca)),
        cert_(std::move(cert)),
        key_(std::move(key)),
        verify_(verify) {}

  const ServerAddress& address() const { return address_; }
  const std::string& user_agent() const { return options_.user_agent; }

  // A client ready to send; nullptr when one cannot be set up (OpenSSL failure).
  // `reused` says whether it comes from the pool (its connection may have died meanwhile).
  std::unique_ptr<httplib::ClientImpl> acquire(bool& reused) {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto client = std::move(idle_.back());
        idle_.pop_back();
        reused = true;
        return client;
      }
    }
    reused = false;
    return make();
  }
  std::unique_ptr<httplib::ClientImpl> fresh() const { return make(); }

  // A client for one long request, never pooled: reads wait at most `read_timeout` for data.
  std::unique_ptr<httplib::ClientImpl> make_dedicated(Duration read_timeout) const {
    auto client = make();
    if (!client) return nullptr;
    client->set_read_timeout(read_timeout);
    client->set_keep_alive(false);
    client->set_socket_options([](socket_t sock) {
      int on = 1;
      int idle = 15;
      int interval = 5;
      int probes = 3;
      setsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
      setsockopt(sock, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
      setsockopt(sock, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
      setsockopt(sock, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    });
    return client;
  }

  const HttpKubernetesOptions& options() const { return options_; }

  // Back into the pool after a complete exchange; clients that failed are just dropped.
  void release(std::unique_ptr<httplib::ClientImpl> client) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(client));
  }

 private:
  std::unique_ptr<httplib::ClientImpl> make() const {
    std::unique_ptr<httplib::ClientImpl> client;
    if (address_.tls) {
      auto tls = cert_ ? std::make_unique<httplib::SSLClient>(address_.host, address_.port,
                                                              cert_.get(), key_.get())
                       : std::make_unique<httplib::SSLClient>(address_.host, address_.port);
      if (!tls->is_valid()) return nullptr;
      tls->enable_server_certificate_verification(verify_);
      if (verify_ && !ca_.empty()) {
        StorePtr store = store_of(ca_);
        if (!store) return nullptr;
        tls->set_ca_cert_store(store.release());  // takes ownership
        tls->set_ca_cert_path("", kNoExtraRoots);
      }
      client = std::move(tls);
    } else {
      client = std::make_unique<httplib::ClientImpl>(address_.host, address_.port);
    }
    client->set_connection_timeout(options_.connect_timeout);
    client->set_read_timeout(options_.read_timeout);
    client->set_write_timeout(options_.read_timeout);
    client->set_keep_alive(true);
    // httplib writes headers and body separately; with Nagle on, every request on a reused
    // connection waits out the server's delayed ACK (~40 ms).
    client->set_tcp_nodelay(true);
    client->set_url_encode(false);  // paths and queries are encoded here, exactly once
    client->set_follow_location(false);
    return client;
  }

  const ServerAddress address_;
  const HttpKubernetesOptions options_;
  const Certificates ca_;  // the kubeconfig's CA; each client gets a store of its own
  const X509Ptr cert_;
  const KeyPtr key_;
  const bool verify_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle_;
};

std::expected<std::unique_ptr<HttpKubernetes>, std::string> HttpKubernetes::create(
    KubeConfig config, HttpKubernetesOptions options) {
  ignore_broken_pipes();
  const std::string where = config.source.empty() ? "kube config" : config.source;
  auto address = parse_server_url(config.server);
  if (!address) return std::unexpected(where + ": " + address.error());

  Certificates ca;
  X509Ptr cert;
  KeyPtr key;
  if (address->tls) {
    if (!config.ca_pem.empty() && !config.insecure_skip_tls_verify) {
      auto certificates = certificates_from_pem(config.ca_pem);
      if (!certificates) return std::unexpected(where + ": " + certificates.error());
      ca = std::move(*certificates);
    }
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return std::unexpected(where + ": a client certificate needs both certificate and key");
    }
    if (!config.client_cert_pem.empty()) {
      BioPtr cert_bio = memory_bio(config.client_cert_pem);
      cert.reset(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr) : nullptr);
      if (!cert) return std::unexpected(where + ": client certificate: " + openssl_error());
      BioPtr key_bio = memory_bio(config.client_key_pem);
      key.reset(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr)
                        : nullptr);
      if (!key) return std::unexpected(where + ": client key: " + openssl_error());
      if (X509_check_private_key(cert.get(), key.get()) != 1) {
        return std::unexpected(
            where + ": client key does not match the client certificate: " + openssl_error());
      }
    }
  }
  const bool verify = !config.insecure_skip_tls_verify;
  auto connections =
      std::make_unique<Connections>(std::move(*address), std::move(options), std::move(ca),
                                    std::move(cert), std::move(key), verify);
  return std::unique_ptr<HttpKubernetes>(
      new HttpKubernetes(std::move(config), std::move(connections)));
}

HttpKubernetes::HttpKubernetes(KubeConfig config, std::unique_ptr<Connections> connections)
    : config_(std::move(config)),
      token_(config_.token, config_.token_file),
      connections_(std::move(connections)) {}

HttpKubernetes::~HttpKubernetes() = default;

const std::string& HttpKubernetes::default_namespace() const {
  return config_.ns;
}

void HttpKubernetes::report(std::string_view operation, std::string_view request, int status,
                            std::chrono::steady_clock::time_point started) {
  counters_.record(operation, status);
  if (const auto& hook = connections_->options().on_request) {
    hook(operation, request, status,
         std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
  }
}

namespace {

// Why httplib got no answer, with OpenSSL's reason when the server's certificate was refused;
// clears OpenSSL's error queue so that it cannot leak into the next request's message.
std::string failure_reason(const httplib::Result& result, httplib::ClientImpl& client) {
  std::string why = httplib::to_string(result.error());
  if (result.error() == httplib::Error::SSLServerVerification) {
    if (auto* tls = dynamic_cast<httplib::SSLClient*>(&client)) {
      why +=
          std::string{" ("} + X509_verify_cert_error_string(tls->get_openssl_verify_result()) + ")";
    }
  }
  ERR_clear_error();
  return why;
}

}  // namespace

KubeResult<Json> HttpKubernetes::call(std::string_view operation, std::string_view method,
                                      const std::string& path_and_query, const std::string* body,
                                      std::string_view content_type) {
  auto text = send(operation, method, path_and_query, body, content_type, "application/json");
  if (!text) return Unexpected(text.error());
  if (text->empty()) return Json{};
  Json parsed = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Unexpected(
        local_error(KubeErrorCode::ServerError, std::string{method} + " " + path_and_query +
                                                    ": a 2xx answer with a body that is not JSON"));
  }
  return parsed;
}

KubeResult<std::string> HttpKubernetes::send(std::string_view operation, std::string_view method,
                                             const std::string& path_and_query,
                                             const std::string* body, std::string_view content_type,
                                             std::string_view accept) {
  const std::string request = std::string{method} + " " + path_and_query;
  const auto started = std::chrono::steady_clock::now();
  try {
    auto token = token_.current();
    if (!token)
      return Unexpected(local_error(KubeErrorCode::Unauthorized, request + ": " + token.error()));

    httplib::Request http;
    http.method = std::string{method};
    http.path = connections_->address().base_path + path_and_query;
    http.set_header("Accept", std::string{accept});
    http.set_header("User-Agent", connections_->user_agent());
    if (!token->empty()) http.set_header("Authorization", "Bearer " + *token);
    if (body != nullptr) {
      http.set_header("Content-Type", std::string{content_type});
      http.body = *body;
    }

    bool reused = false;
    auto client = connections_->acquire(reused);
    if (!client) {
      report(operation, request, 0, started);
      return Unexpected(local_error(KubeErrorCode::Unreachable,
                                    request + ": cannot set up a TLS client: " + openssl_error()));
    }
    httplib::Result result = client->send(http);
    // A pooled keep-alive connection the server closed while idle (an apiserver restart) fails
    // the next request sent on it. Like Go's transport, try once more on a new connection when
    // that cannot repeat an effect: the request was never fully written, or it only reads.
    if (!result && reused &&
        (result.error() == httplib::Error::Write ||
         (http.method == "GET" && result.error() == httplib::Error::Read))) {
      ERR_clear_error();
      client = connections_->fresh();
      if (client) result = client->send(http);
    }
    if (!client || !result) {
      report(operation, request, 0, started);
      if (!client) {
        return Unexpected(
            local_error(KubeErrorCode::Unreachable,
                        request + ": cannot set up a TLS client: " + openssl_error()));
      }
      const std::string why = failure_reason(result, *client);
      return Unexpected(local_error(KubeErrorCode::Unreachable,
                                    request + ": no answer from " + config_.server + ": " + why));
    }
    connections_->release(std::move(client));
    const int status = result->status;
    report(operation, request, status, started);
    if (status < 200 || status >= 300) {
      return Unexpected(error_from_response(status, result->body,
                                            result->get_header_value("Retry-After"), request));
    }
    return std::move(result->body);
  } catch (const std::exception& e) {
    return Unexpected(
        local_error(KubeErrorCode::Unreachable, request + ": request failed: " + e.what()));
  }
}

KubeResult<Json> HttpKubernetes::raw(std::string_view method, std::string_view path_and_query,
                                     const std::optional<Json>& body,
                                     std::string_view content_type) {
  const std::string path{path_and_query};
  if (!body) return call("raw", method, path, nullptr, content_type);
  auto text = serialize(*body, std::string{method} + " " + path);
  if (!text) return Unexpected(text.error());
  return call("raw", method, path, &*text, content_type);
}

KubeResult<Json> HttpKubernetes::get(const ObjectRef& ref) {
  auto path = object_path("get", Named::ByRef, ref.kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  return call("get", "GET", *path, nullptr, {});
}

KubeResult<ObjectList> HttpKubernetes::list(Kind kind, const std::string& ns,
                                            const ListOptions& options) {
  std::string path = resource_path(kind, ns);
  char separator = '?';
  const auto add = [&](std::string_view key, std::string_view value) {
    path += separator;
    separator = '&';
    path += key;
    path += '=';
    path += url_encode(value);
  };
  if (!options.label_selector.empty()) add("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) add("fieldSelector", options.field_selector);
  if (options.limit > 0) add("limit", std::to_string(options.limit));
  if (!options.continue_token.empty()) add("continue", options.continue_token);

  auto answer = call("list", "GET", path, nullptr, {});
  if (!answer) return Unexpected(answer.error());
  if (!answer->is_object()) {
    return Unexpected(local_error(KubeErrorCode::ServerError, "GET " + path + ": not a list"));
  }
  ObjectList list;
  list.resource_version = metadata_string(*answer, "resourceVersion");
  list.continue_token = metadata_string(*answer, "continue");
  if (auto items = answer->find("items"); items != answer->end() && items->is_array()) {
    list.items.reserve(items->size());
    // As the API server sends them: kind and apiVersion are on the list, not on each item
    // (the fake does the same; update() does not need them).
    for (Json& item : *items) list.items.push_back(std::move(item));
  }
  return list;
}

KubeResult<Json> HttpKubernetes::create(Kind kind, const Json& object) {
  const std::string ns = is_namespaced(kind) ? metadata_string(object, "namespace") : "";
  if (is_namespaced(kind) && ns.empty()) {
    // POSTing to the all-namespaces collection would only earn a 405; say what is wrong, with
    // the code the fake gives.
    return Unexpected(
        local_error(KubeErrorCode::Invalid, "create " + std::string{to_string(kind)} + " \"" +
                                                metadata_string(object, "name") +
                                                "\": metadata.namespace: Required value"));
  }
  const std::string path = resource_path(kind, ns);
  auto body = serialize(object, "POST " + path);
  if (!body) return Unexpected(body.error());
  return call("create", "POST", path, &*body, "application/json");
}

KubeResult<Json> HttpKubernetes::update(Kind kind, const Json& object) {
  const ObjectRef ref = ref_of(kind, object);
  auto path = object_path("update", Named::ByBody, kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  auto body = serialize(object, "PUT " + *path);
  if (!body) return Unexpected(body.error());
  return call("update", "PUT", *path, &*body, "application/json");
}

KubeResult<Json> HttpKubernetes::update_status(Kind kind, const Json& object) {
  const ObjectRef ref = ref_of(kind, object);
  auto path = object_path("update_status", Named::ByBody, kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  *path += "/status";
  auto body = serialize(object, "PUT " + *path);
  if (!body) return Unexpected(body.error());
  return call("update_status", "PUT", *path, &*body, "application/json");
}

KubeResult<Json> HttpKubernetes::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  auto path = object_path("patch", Named::ByRef, ref.kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  auto body = serialize(patch, "PATCH " + *path);
  if (!body) return Unexpected(body.error());
  const std::string_view content_type =
      type == PatchType::Merge ? "application/merge-patch+json" : "application/json-patch+json";
  return call("patch", "PATCH", *path, &*body, content_type);
}

KubeResult<void> HttpKubernetes::remove(const ObjectRef& ref, const DeleteOptions& options) {
  auto path = object_path("delete", Named::ByRef, ref.kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  Json delete_options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (const auto policy = propagation_policy(options.propagation); !policy.empty()) {
    delete_options["propagationPolicy"] = policy;
  }
  if (options.uid) delete_options["preconditions"]["uid"] = *options.uid;
  if (options.resource_version) {
    delete_options["preconditions"]["resourceVersion"] = *options.resource_version;
  }
  if (options.grace_period_seconds) {
    delete_options["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  auto body = serialize(delete_options, "DELETE " + *path);
  if (!body) return Unexpected(body.error());
  auto answer = call("delete", "DELETE", *path, &*body, "application/json");
  if (!answer) return Unexpected(answer.error());
  return {};
}

KubeResult<void> HttpKubernetes::evict(const ObjectRef& pod, const EvictOptions& options) {
  auto path = object_path("evict", Named::ByRef, pod.kind, pod.ns, pod.name);
  if (!path) return Unexpected(path.error());
  *path += "/eviction";
  Json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod.name}, {"namespace", pod.ns}}}};
  if (options.uid) eviction["deleteOptions"]["preconditions"]["uid"] = *options.uid;
  if (options.dry_run) *path += "?dryRun=All";
  auto body = serialize(eviction, "POST " + *path);
  if (!body) return Unexpected(body.error());
  auto answer = call("evict", "POST", *path, &*body, "application/json");
  if (!answer) {
    // A disruption budget's refusal is not throttling: its Retry-After would only make a
    // caller wait for a budget that changes when pods do.
    KubeError error = std::move(answer.error());
    if (error.code == KubeErrorCode::TooManyRequests) error.retry_after = Duration{0};
    return Unexpected(std::move(error));
  }
  return {};
}

KubeResult<std::string> HttpKubernetes::tail(const ObjectRef& pod, const std::string& container,
                                             int lines) {
  auto path = object_path("pod_log", Named::ByRef, Kind::Pod, pod.ns, pod.name);
  if (!path) return Unexpected(path.error());
  *path += "/log?container=" + url_encode(container) + "&tailLines=" + std::to_string(lines);
  return send("pod_log", "GET", *path, nullptr, {}, "text/plain, */*");
}

KubeResult<Json> HttpKubernetes::get_scale(const ObjectRef& ref) {
  auto path = object_path("get_scale", Named::ByRef, ref.kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  // Kinds without /scale are left to the server, which answers 404 as the fake does.
  return call("get_scale", "GET", *path + "/scale", nullptr, {});
}

KubeResult<Json> HttpKubernetes::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                              const std::string& resource_version) {
  auto path = object_path("update_scale", Named::ByRef, ref.kind, ref.ns, ref.name);
  if (!path) return Unexpected(path.error());
  *path += "/scale";
  Json metadata = {{"name", ref.name}};
  if (is_namespaced(ref.kind)) metadata["namespace"] = ref.ns;
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  const Json scale = {{"apiVersion", "autoscaling/v1"},
                      {"kind", "Scale"},
                      {"metadata", std::move(metadata)},
                      {"spec", {{"replicas", replicas}}}};
  auto body = serialize(scale, "PUT " + *path);
  if (!body) return Unexpected(body.error());
  return call("update_scale", "PUT", *path, &*body, "application/json");
}

KubeResult<void> HttpKubernetes::watch(Kind kind, const std::string& ns,
                                       const WatchOptions& options, std::stop_token stop,
                                       const WatchHandler& handler) {
  std::string path = resource_path(kind, ns) + "?watch=1";
  const auto add = [&](std::string_view key, std::string_view value) {
    path += '&';
    path += key;
    path += '=';
    path += url_encode(value);
  };
  if (!options.resource_version.empty()) add("resourceVersion", options.resource_version);
  if (options.allow_bookmarks) add("allowWatchBookmarks", "true");
  const auto timeout_seconds =
      std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::seconds>(options.timeout).count());
  add("timeoutSeconds", std::to_string(timeout_seconds));
  if (!options.label_selector.empty()) add("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) add("fieldSelector", options.field_selector);
  const std::string request = "GET " + path;
  const auto started = std::chrono::steady_clock::now();

  try {
    auto token = token_.current();
    if (!token)
      return Unexpected(local_error(KubeErrorCode::Unauthorized, request + ": " + token.error()));

    // Silence is normal until the server's own timeout; a dead peer is found by keepalive.
    const Duration idle_timeout =
        std::chrono::seconds{timeout_seconds} + connections_->options().watch_timeout_grace;
    auto client = connections_->make_dedicated(idle_timeout);
    if (!client) {
      report("watch", request, 0, started);
      return Unexpected(local_error(KubeErrorCode::Unreachable,
                                    request + ": cannot set up a TLS client: " + openssl_error()));
    }
    // stop() shuts the socket down under httplib's socket mutex, which is safe while another
    // thread reads from it; a stop before the connection exists is caught by the flag when the
    // response headers (or the first bytes) arrive.
    std::atomic<bool> stopping{false};
    const std::stop_callback on_stop{stop, [&] {
                                       stopping = true;
                                       client->stop();
                                     }};
    if (stopping) return {};

    httplib::Request http;
    http.method = "GET";
    http.path = connections_->address().base_path + path;
    http.set_header("Accept", "application/json");
    http.set_header("User-Agent", connections_->user_agent());
    if (!token->empty()) http.set_header("Authorization", "Bearer " + *token);

    int status = 0;
    bool reported = false;
    std::string retry_after;
    std::string error_body;  // the answer when it is not a stream
    std::optional<KubeError> stream_error;
    bool handler_done = false;
    LineFramer framer;
    http.response_handler = [&](const httplib::Response& response) {
      status = response.status;
      retry_after = response.get_header_value("Retry-After");
      report("watch", request, status, started);
      reported = true;
      return !stopping;
    };
    http.content_receiver = [&](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
      if (stopping) return false;
      if (status < 200 || status >= 300) {
        constexpr std::size_t kKeptErrorBody = 64 * 1024;
        error_body.append(
            data, std::min(size, kKeptErrorBody - std::min(kKeptErrorBody, error_body.size())));
        return true;
      }
      const auto fed = framer.feed({data, size}, [&](std::string_view line) {
        auto event = decode_watch_event(line, request);
        if (!event) {
          stream_error = std::move(event.error());
          return false;
        }
        if (!handler(*event)) {
          handler_done = true;
          return false;
        }
        return !stopping.load();
      });
      if (fed == LineFramer::Fed::LineTooLong) {
        stream_error = local_error(KubeErrorCode::ServerError,
                                   request + ": watch stream: a line longer than " +
                                       std::to_string(LineFramer::kDefaultMaxLine) + " bytes");
      }
      return fed == LineFramer::Fed::Consumed;
    };

    const httplib::Result result = client->send(http);
    if (!reported) report("watch", request, 0, started);
    if (handler_done || stopping) return {};
    if (stream_error) return Unexpected(std::move(*stream_error));
    if (!result) {
      const std::string why = failure_reason(result, *client);
      const std::string what =
          reported
              ? "the stream broke or stayed silent for " +
                    std::to_string(std::chrono::ceil<std::chrono::seconds>(idle_timeout).count()) +
                    " s"
              : "no answer from " + config_.server;
      return Unexpected(
          local_error(KubeErrorCode::Unreachable, request + ": " + what + ": " + why));
    }
    if (status < 200 || status >= 300) {
      return Unexpected(error_from_response(status, error_body, retry_after, request));
    }
    if (framer.pending() > 0) {
      return Unexpected(local_error(KubeErrorCode::Unreachable,
                                    request + ": the stream ended in the middle of an event"));
    }
    return {};
  } catch (const std::exception& e) {
    return Unexpected(
        local_error(KubeErrorCode::Unreachable, request + ": watch failed: " + e.what()));
  }
}

}  // namespace stsresize
