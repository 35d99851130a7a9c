// TcpProxy on its own, against a local echo server (no cluster needed): bytes pass both ways
// unchanged, pause() breaks open connections and refuses new ones, resume() serves again on the
// same port.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "tests/cluster/adapter/tcp_proxy.h"

namespace stsresize::cluster_test {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Echoes every byte back on each accepted connection until the peer closes.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = loopback(0);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(fd_, 16);
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (int client; (client = ::accept(fd_, nullptr, nullptr)) >= 0;) {
        std::thread([client] {
          char buffer[4096];
          for (ssize_t n; (n = ::recv(client, buffer, sizeof buffer, 0)) > 0;)
            if (::send(client, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
          ::close(client);
        }).detach();
      }
    });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
};

// -1 when the connection is refused.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in address = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

// Sends `text` and reads as many bytes back; what came back (shorter if the stream ended).
std::string round_trip(int fd, const std::string& text) {
  if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
    return {};
  std::string back;
  char buffer[4096];
  while (back.size() < text.size()) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    back.append(buffer, static_cast<std::size_t>(n));
  }
  return back;
}

TEST(TcpProxy, RelaysBytesBothWaysUnchanged) {
  EchoServer echo;
  auto proxy = TcpProxy::start(echo.port());
  ASSERT_TRUE(proxy) << proxy.error();
  const int fd = connect_to((*proxy)->port());
  ASSERT_GE(fd, 0);
  std::string big(300 * 1024, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 251);
  std::string back;
  std::thread reader([&] {
    char buffer[65536];
    while (back.size() < big.size()) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      back.append(buffer, static_cast<std::size_t>(n));
    }
  });
  ASSERT_EQ(::send(fd, big.data(), big.size(), MSG_NOSIGNAL), static_cast<ssize_t>(big.size()));
  reader.join();
  EXPECT_TRUE(back == big) << "got " << back.size() << " bytes back, want " << big.size();
  EXPECT_EQ((*proxy)->connections_accepted(), 1u);
  ::close(fd);
}

TEST(TcpProxy, PauseBreaksOpenConnectionsRefusesNewOnesAndResumeServesTheSamePort) {
  EchoServer echo;
  auto proxy = TcpProxy::start(echo.port());
  ASSERT_TRUE(proxy) << proxy.error();
  const int port = (*proxy)->port();
  const int open = connect_to(port);
  ASSERT_GE(open, 0);
  ASSERT_EQ(round_trip(open, "hello"), "hello");

  (*proxy)->pause();
  EXPECT_EQ(round_trip(open, "anyone?"), "") << "the open connection still works";
  ::close(open);
  EXPECT_EQ(connect_to(port), -1) << "a new connection was accepted while paused";
  EXPECT_EQ((*proxy)->connections_accepted(), 1u);

  ASSERT_TRUE((*proxy)->resume());
  EXPECT_EQ((*proxy)->port(), port);
  const int again = connect_to(port);
  ASSERT_GE(again, 0);
  EXPECT_EQ(round_trip(again, "back"), "back");
  EXPECT_EQ((*proxy)->connections_accepted(), 2u);
  ::close(again);
}

TEST(TcpProxy, AConnectionToADeadTargetIsClosedAtOnce) {
  int dead_port = 0;
  {
    EchoServer gone;
    dead_port = gone.port();
  }
  auto proxy = TcpProxy::start(dead_port);
  ASSERT_TRUE(proxy) << proxy.error();
  const int fd = connect_to((*proxy)->port());
  ASSERT_GE(fd, 0);  // the proxy accepts, then finds nobody behind it
  EXPECT_EQ(round_trip(fd, "x"), "");
  ::close(fd);
}

}  // namespace
}  // namespace stsresize::cluster_test
