#pragma once
// A loopback TCP forwarder for cutting a client off from a server deterministically: clients
// connect to 127.0.0.1:port() and every connection is relayed byte for byte to the target (TLS
// passes through untouched: point a client at the proxy and it still verifies the server's
// certificate, which must cover 127.0.0.1).
//
// pause() resets every relayed connection and closes the listening socket, so the client sees
// its stream break and new connections refused; resume() listens again on the same port. Both
// return once done, so a test knows the client is cut off (or may reconnect) from that point.
//
// Threads: one accepting thread while listening, two relaying threads per connection; every
// method may be called from any thread.
#include <atomic>
#include <cstdint>
#include <expected>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace stsresize::cluster_test {

class TcpProxy {
 public:
  // Listens on a free loopback port (or `port` when non-zero) and forwards to
  // 127.0.0.1:target_port. Error: the socket call that failed.
  static std::expected<std::unique_ptr<TcpProxy>, std::string> start(int target_port, int port = 0);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Resets every connection (RST) and stops listening. Idempotent.
  void pause();
  // Ends every relayed connection with a clean close (FIN to both sides) but keeps listening:
  // what a server does to idle keep-alive connections when it restarts or times them out.
  void close_connections();
  // Listens again on port(); false if the port could not be bound again.
  bool resume();
  bool paused() const;

  // Connections accepted since start (a client reconnecting shows up here).
  std::uint64_t connections_accepted() const { return accepted_.load(); }
  // Connections currently relayed.
  std::size_t open_connections() const;

 private:
  struct Connection;
  TcpProxy(int target_port, int listen_fd, int port);
  void accept_loop(int listen_fd);
  // One direction of a connection: client -> server when `up`.
  static void relay(Connection& connection, bool up);
  void reap_finished();

  const int target_port_;
  const int port_;
  mutable std::mutex mutex_;
  int listen_fd_ = -1;  // -1 while paused
  std::thread acceptor_;
  std::list<std::unique_ptr<Connection>> connections_;
  std::atomic<std::uint64_t> accepted_{0};
};

}  // namespace stsresize::cluster_test
