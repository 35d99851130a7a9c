#include "adapters/server/probe_server.h"

#include <httplib.h>

#include <charconv>
#include <thread>

namespace stsresize {

std::expected<std::optional<BindAddress>, std::string> parse_bind_address(std::string_view text) {
  if (text == "0") return std::optional<BindAddress>{};
  BindAddress address;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::unexpected("bind address \"" + std::string{text} + "\": expected [IPv6]:port");
    }
    address.host = std::string{text.substr(1, close - 1)};
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return std::unexpected("bind address \"" + std::string{text} +
                             "\": expected host:port, :port or 0 (disabled)");
    }
    address.host = colon == 0 ? "0.0.0.0" : std::string{text.substr(0, colon)};
    if (address.host.find(':') != std::string::npos) {
      return std::unexpected("bind address \"" + std::string{text} +
                             "\": put an IPv6 address in brackets, e.g. [::1]:8080");
    }
    port_text = text.substr(colon + 1);
  }
  int port = -1;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc{} || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return std::unexpected("bind address \"" + std::string{text} + "\": port \"" +
                           std::string{port_text} + "\" is not a number from 0 to 65535");
  }
  address.port = port;
  return address;
}

class EndpointServer::Impl {
 public:
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

namespace {

void serve_check(httplib::Server& server, const std::string& path, std::function<Check()> check) {
  server.Get(path, [check = std::move(check)](const httplib::Request&, httplib::Response& res) {
    const Check result = check();
    res.status = result.ok ? 200 : 503;
    std::string body = result.ok ? "ok" : "not ok";
    if (!result.detail.empty()) body += ": " + result.detail;
    res.set_content(body + "\n", "text/plain; charset=utf-8");
  });
}

}  // namespace

std::expected<std::unique_ptr<EndpointServer>, std::string> EndpointServer::start(
    const BindAddress& address, Endpoints endpoints) {
  auto impl = std::make_unique<Impl>();
  if (endpoints.healthz) serve_check(impl->server, "/healthz", std::move(endpoints.healthz));
  if (endpoints.readyz) serve_check(impl->server, "/readyz", std::move(endpoints.readyz));
  if (endpoints.metrics) {
    impl->server.Get("/metrics", [metrics = std::move(endpoints.metrics)](const httplib::Request&,
                                                                          httplib::Response& res) {
      res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
  if (address.host.find(':') != std::string::npos) impl->server.set_address_family(AF_INET6);
  // httplib's default adds SO_REUSEPORT, which would let a second controller on this host
  // share the port silently; a taken port must be an error.
  impl->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (address.port == 0) {
    impl->port = impl->server.bind_to_any_port(address.host);
    if (impl->port < 0) {
      return std::unexpected("cannot bind " + address.host + " to any port");
    }
  } else {
    if (!impl->server.bind_to_port(address.host, address.port)) {
      return std::unexpected("cannot bind " + address.host + ":" + std::to_string(address.port) +
                             " (in use, or not an address of this host)");
    }
    impl->port = address.port;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  // httplib's stop() does nothing to a server not yet running: wait until it is, so that a
  // stop() right after start() cannot leave the thread listening forever.
  while (!impl->server.is_running()) std::this_thread::yield();
  return std::unique_ptr<EndpointServer>(new EndpointServer(std::move(impl)));
}

EndpointServer::EndpointServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

EndpointServer::~EndpointServer() {
  stop();
}

int EndpointServer::port() const {
  return impl_->port;
}

void EndpointServer::stop() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace stsresize
