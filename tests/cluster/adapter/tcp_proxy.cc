#include "tests/cluster/adapter/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stsresize::cluster_test {
namespace {

std::string last_error(const char* call) {
  return std::string{call} + ": " + std::strerror(errno);
}

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

std::expected<int, std::string> listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(last_error("socket"));
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  const sockaddr_in address = loopback(port);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0) {
    std::string error = last_error("bind/listen");
    ::close(fd);
    return std::unexpected(error);
  }
  return fd;
}

// Closing with SO_LINGER 0 sends RST: the peer's next read fails at once, as when a network
// path dies or a server is killed, instead of a clean end of stream.
void reset(int fd) {
  const linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::shutdown(fd, SHUT_RDWR);
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

struct TcpProxy::Connection {
  int client_fd = -1;
  int server_fd = -1;
  std::thread upstream;    // client -> server
  std::thread downstream;  // server -> client
  std::atomic<int> finished_directions{0};

  ~Connection() {
    if (upstream.joinable()) upstream.join();
    if (downstream.joinable()) downstream.join();
    ::close(client_fd);
    ::close(server_fd);
  }
};

std::expected<std::unique_ptr<TcpProxy>, std::string> TcpProxy::start(int target_port, int port) {
  auto fd = listen_on(port);
  if (!fd) return std::unexpected(fd.error());
  sockaddr_in bound{};
  socklen_t size = sizeof bound;
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &size);
  return std::unique_ptr<TcpProxy>(new TcpProxy(target_port, *fd, ntohs(bound.sin_port)));
}

TcpProxy::TcpProxy(int target_port, int listen_fd, int port)
    : target_port_(target_port), port_(port), listen_fd_(listen_fd) {
  acceptor_ = std::thread([this, listen_fd] { accept_loop(listen_fd); });
}

TcpProxy::~TcpProxy() {
  pause();
  std::lock_guard lock(mutex_);
  connections_.clear();
}

void TcpProxy::accept_loop(int listen_fd) {
  for (;;) {
    const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // pause() shut the listening socket down
    }
    ++accepted_;
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in target = loopback(target_port_);
    if (server < 0 ||
        ::connect(server, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
      reset(client);
      ::close(client);
      if (server >= 0) ::close(server);
      continue;
    }
    const int on = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    std::lock_guard lock(mutex_);
    if (listen_fd_ != listen_fd) {  // paused while connecting upstream
      reset(client);
      reset(server);
      ::close(client);
      ::close(server);
      return;
    }
    reap_finished();
    auto connection = std::make_unique<Connection>();
    connection->client_fd = client;
    connection->server_fd = server;
    Connection& relayed = *connection;
    connections_.push_back(std::move(connection));
    relayed.upstream = std::thread([&relayed] { relay(relayed, true); });
    relayed.downstream = std::thread([&relayed] { relay(relayed, false); });
  }
}

void TcpProxy::relay(Connection& connection, bool up) {
  const int from = up ? connection.client_fd : connection.server_fd;
  const int to = up ? connection.server_fd : connection.client_fd;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::recv(from, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !write_all(to, buffer, static_cast<std::size_t>(n))) break;
  }
  // Pass the end on (a half close stays a half close); pause() resets both sides instead.
  ::shutdown(to, SHUT_WR);
  ++connection.finished_directions;
}

void TcpProxy::reap_finished() {
  connections_.remove_if([](const std::unique_ptr<Connection>& connection) {
    return connection->finished_directions.load() == 2;
  });
}

void TcpProxy::pause() {
  std::thread acceptor;
  std::list<std::unique_ptr<Connection>> cut;
  {
    std::lock_guard lock(mutex_);
    if (listen_fd_ < 0) return;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    ::close(listen_fd_);
    listen_fd_ = -1;
    acceptor = std::move(acceptor_);
    for (auto& connection : connections_) {
      reset(connection->client_fd);
      reset(connection->server_fd);
    }
    cut.swap(connections_);
  }
  if (acceptor.joinable()) acceptor.join();
  cut.clear();  // joins the relaying threads, which the resets ended
}

void TcpProxy::close_connections() {
  std::list<std::unique_ptr<Connection>> closed;
  {
    std::lock_guard lock(mutex_);
    for (auto& connection : connections_) {
      ::shutdown(connection->client_fd, SHUT_RDWR);
      ::shutdown(connection->server_fd, SHUT_RDWR);
    }
    closed.swap(connections_);
  }
  closed.clear();  // joins the relaying threads, which the shutdowns ended
}

bool TcpProxy::resume() {
  std::lock_guard lock(mutex_);
  if (listen_fd_ >= 0) return true;
  auto fd = listen_on(port_);
  if (!fd) return false;
  listen_fd_ = *fd;
  acceptor_ = std::thread([this, fd = *fd] { accept_loop(fd); });
  return true;
}

bool TcpProxy::paused() const {
  std::lock_guard lock(mutex_);
  return listen_fd_ < 0;
}

std::size_t TcpProxy::open_connections() const {
  std::lock_guard lock(mutex_);
  std::size_t open = 0;
  for (const auto& connection : connections_)
    if (connection->finished_directions.load() < 2) ++open;
  return open;
}

}  // namespace stsresize::cluster_test
