#pragma once
// The controller's own HTTP endpoints, in the controller-runtime layout: a probe server
// (/healthz, /readyz) and a metrics server (/metrics), each on its own bind address so the
// metrics can be exposed to Prometheus without exposing the probes, or on one when equal.
//
// Bind addresses as controller-runtime spells them: "host:port", ":port" (every interface),
// "[::1]:port", and "0" to disable the server.
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace stsresize {

struct BindAddress {
  std::string host;  // "0.0.0.0" for ":port"; IPv6 without brackets
  int port = 0;      // 0: any free port (tests)
};
// nullopt: "0", the server is disabled. Errors say what is wrong with the text.
std::expected<std::optional<BindAddress>, std::string> parse_bind_address(std::string_view text);

struct Check {
  bool ok = true;
  std::string detail;  // shown in the body, e.g. "informers: 3/4 synced"
};

struct Endpoints {
  std::function<Check()> healthz = {};  // unset: not served
  std::function<Check()> readyz = {};
  std::function<std::string()> metrics = {};
};

// One cpp-httplib server on its own thread. Answers 200 with "ok" (plus details) or 503 with
// the failing check's detail; /metrics with text/plain; version=0.0.4.
class EndpointServer {
 public:
  // Binds at once, so a taken port is an error at startup, not later.
  static std::expected<std::unique_ptr<EndpointServer>, std::string> start(
      const BindAddress& address, Endpoints endpoints);
  ~EndpointServer();  // stops and joins

  int port() const;  // the bound port (useful with port 0)
  void stop();

 private:
  class Impl;
  explicit EndpointServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stsresize
