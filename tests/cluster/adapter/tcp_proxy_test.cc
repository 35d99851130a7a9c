// The TcpProxy test utility in front of a real kube-apiserver: TLS passes through (the client
// still verifies the server), pause() cuts the client off at once and refuses new connections,
// and resume() lets the same client object reconnect.
#include "tests/cluster/adapter/tcp_proxy.h"

#include <atomic>
#include <stop_token>
#include <thread>
#include <vector>

#include "tests/cluster/adapter/cluster_support.h"

namespace stsresize::cluster_test {
namespace {

int port_of(const std::string& server) {
  auto address = parse_server_url(server);
  return address ? address->port : 0;
}

class TcpProxyOnCluster : public OnFixtureCluster {
 protected:
  std::string namespace_prefix() const override { return "proxy"; }

  std::shared_ptr<HttpKubernetes> client_through(const TcpProxy& proxy) {
    KubeConfig config = admin_config_;
    config.server = "https://127.0.0.1:" + std::to_string(proxy.port());
    HttpKubernetesOptions options;
    options.connect_timeout = std::chrono::seconds{2};
    options.read_timeout = std::chrono::seconds{5};
    return connect(config, options);
  }
};

TEST_F(TcpProxyOnCluster, PauseCutsTheClientOffAndResumeLetsTheSameClientBackIn) {
  auto proxy = TcpProxy::start(port_of(admin_config_.server));
  ASSERT_TRUE(proxy) << proxy.error();
  auto kube = client_through(**proxy);
  ASSERT_NE(kube, nullptr);
  ASSERT_OK(admin_->create(Kind::ConfigMap, config_map(ns(), "behind-proxy")));
  const ObjectRef ref{Kind::ConfigMap, ns(), "behind-proxy"};

  ASSERT_OK(kube->get(ref));
  EXPECT_EQ((*proxy)->connections_accepted(), 1u);
  EXPECT_EQ((*proxy)->open_connections(), 1u) << "the client keeps its connection alive";

  (*proxy)->pause();
  EXPECT_TRUE((*proxy)->paused());
  EXPECT_EQ((*proxy)->open_connections(), 0u);
  const auto before = std::chrono::steady_clock::now();
  auto cut_off = kube->get(ref);
  EXPECT_CODE(cut_off, KubeErrorCode::Unreachable);
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds{3})
      << "a refused connection is noticed at once, not after a timeout";
  EXPECT_EQ((*proxy)->connections_accepted(), 1u) << "nothing got through while paused";

  ASSERT_TRUE((*proxy)->resume());
  auto back = kube->get(ref);
  ASSERT_OK(back);
  EXPECT_EQ(name_of(*back), "behind-proxy");
  EXPECT_EQ((*proxy)->connections_accepted(), 2u) << "the client made a new connection";
}

// A server (or a load balancer) closes an idle keep-alive connection at the TCP level: the
// client notices on its next request and connects again instead of failing the request.
// (A Go server's TLS close_notify first: OnPrivateControlPlaneWatch.
// FirstRequestsAfterAnApiserverRestartSucceed.)
TEST_F(TcpProxyOnCluster, RequestAfterTheServerClosedAnIdleConnectionGoesOnANewOne) {
  auto proxy = TcpProxy::start(port_of(admin_config_.server));
  ASSERT_TRUE(proxy) << proxy.error();
  auto kube = client_through(**proxy);
  ASSERT_NE(kube, nullptr);
  ASSERT_OK(kube->list(Kind::ConfigMap, ns()));
  ASSERT_EQ((*proxy)->open_connections(), 1u);

  (*proxy)->close_connections();
  auto created = kube->create(Kind::ConfigMap, config_map(ns(), "after-idle-close"));
  EXPECT_OK(created);
  auto read = kube->get({Kind::ConfigMap, ns(), "after-idle-close"});
  EXPECT_OK(read);
  EXPECT_EQ((*proxy)->connections_accepted(), 2u);
}

TEST_F(TcpProxyOnCluster, TlsThroughTheProxyIsStillVerifiedAgainstTheClustersCa) {
  auto proxy = TcpProxy::start(port_of(admin_config_.server));
  ASSERT_TRUE(proxy) << proxy.error();
  KubeConfig wrong_ca = admin_config_;
  wrong_ca.server = "https://127.0.0.1:" + std::to_string((*proxy)->port());
  // Any other CA: the system roots do not know the cluster's self-made CA.
  wrong_ca.ca_pem.clear();
  auto kube = connect(wrong_ca);
  ASSERT_NE(kube, nullptr);
  auto refused = kube->list(Kind::ConfigMap, ns());
  EXPECT_CODE(refused, KubeErrorCode::Unreachable);
}

// Each client verifies with a store of its own built from the kubeconfig's CA; a PEM that
// parses but did not sign the server's certificate must still fail the handshake.
TEST_F(TcpProxyOnCluster, ACertificateThatIsNotTheServersCaIsRefused) {
  if (admin_config_.client_cert_pem.empty())
    GTEST_SKIP() << "the admin kubeconfig has no client certificate";
  KubeConfig other_ca = admin_config_;
  other_ca.ca_pem = admin_config_.client_cert_pem;  // signed by the cluster CA, but not a CA
  auto kube = connect(other_ca);
  ASSERT_NE(kube, nullptr);
  auto refused = kube->list(Kind::ConfigMap, ns());
  EXPECT_CODE(refused, KubeErrorCode::Unreachable);
}

// The informers' first requests happen at the same instant; each client must set up its TLS
// verification without touching another's (OpenSSL does not lock a store being configured).
TEST_F(TcpProxyOnCluster, ManyFirstRequestsAtOnceAllVerifyAgainstTheCa) {
  auto kube = connect(admin_config_);
  ASSERT_NE(kube, nullptr);
  constexpr int kThreads = 8;
  std::atomic<bool> go{false};
  std::atomic<int> succeeded{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      while (!go) std::this_thread::yield();
      ListOptions options;
      options.limit = 1;
      // A watch gets a dedicated client (a fresh TLS context) every time.
      std::stop_source stop;
      WatchOptions watch;
      watch.timeout = std::chrono::seconds{1};
      auto watched = kube->watch(Kind::ConfigMap, ns(), watch, stop.get_token(),
                                 [](const WatchEvent&) { return false; });
      if (watched && kube->list(Kind::ConfigMap, ns(), options)) ++succeeded;
    });
  }
  go = true;
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(succeeded.load(), kThreads);
}

}  // namespace
}  // namespace stsresize::cluster_test
