// The runtime's Informer over HttpKubernetes, surviving what happens to a real control plane: an
// apiserver restart, and a client cut off while etcd is compacted so that its resourceVersion
// is gone (410) when it comes back. These restart the apiserver, so they run on a private
// control plane (one for the suite), never on the shared fixture.
#include <set>
#include <thread>

#include "adapters/runtime/informer.h"
#include "tests/cluster/adapter/cluster_support.h"
#include "tests/cluster/adapter/tcp_proxy.h"

namespace stsresize::cluster_test {
namespace {

using namespace std::chrono_literals;

struct DeliveredEvent {
  WatchEventType type;
  std::string name;
  std::string resource_version;
};

class OnPrivateControlPlaneWatch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fixture_kubeconfig_path()) return;  // no cluster tests asked for: skip
    plane_ = std::make_unique<PrivateControlPlane>();
  }
  static void TearDownTestSuite() { plane_.reset(); }

  void SetUp() override {
    if (!plane_) GTEST_SKIP() << kNoClusterReason;
    ASSERT_TRUE(plane_->up()) << plane_->error();
    auto config = load_config(plane_->kubeconfig());
    ASSERT_TRUE(config);
    config_ = *config;
    // A direct client for the test's own writes.
    direct_ = connect(config_, quick());
    ASSERT_NE(direct_, nullptr);
    namespace_ = std::make_unique<ScopedNamespace>(direct_, "watch");
    ASSERT_FALSE(ns().empty());
  }
  void TearDown() override {
    informer_.reset();  // stop and join before the client goes
    namespace_.reset();
  }

  static HttpKubernetesOptions quick() {
    HttpKubernetesOptions options;
    options.connect_timeout = 2s;
    options.read_timeout = 10s;
    return options;
  }

  const std::string& ns() const { return namespace_->name(); }

  void start_watching(std::shared_ptr<HttpKubernetes> kube) {
    watched_client_ = std::move(kube);
    runtime::InformerOptions options;
    options.kind = Kind::ConfigMap;
    options.ns = ns();
    options.initial_backoff = 200ms;
    options.max_backoff = 2s;
    informer_ = std::make_unique<runtime::Informer>(*watched_client_, options);
    informer_->add_handler([this](WatchEventType type, const runtime::Store::Object& object) {
      std::lock_guard lock(events_mutex_);
      events_.push_back({type, name_of(*object), resource_version_of(*object)});
    });
    informer_->start();
  }

  // The store equals the server's list: the same names at the same resourceVersions.
  ::testing::AssertionResult converges(std::chrono::milliseconds timeout = 60s) {
    std::map<std::string, std::string> server;
    std::map<std::string, std::string> cached;
    const bool same = eventually(
        [&] {
          if (!informer_->has_synced()) return false;
          auto list = direct_->list(Kind::ConfigMap, ns());
          if (!list) return false;
          server.clear();
          for (const Json& item : list->items) server[name_of(item)] = resource_version_of(item);
          cached.clear();
          for (const auto& object : informer_->store().list(ns()))
            cached[name_of(*object)] = resource_version_of(*object);
          return cached == server;
        },
        timeout, 100ms);
    if (same) return ::testing::AssertionSuccess();
    auto failure = ::testing::AssertionFailure() << "store never matched the server; server has";
    for (const auto& [name, version] : server) failure << " " << name << "@" << version;
    failure << "; store has";
    for (const auto& [name, version] : cached) failure << " " << name << "@" << version;
    return failure;
  }

  std::vector<DeliveredEvent> events_for(const std::string& name) const {
    std::vector<DeliveredEvent> out;
    std::lock_guard lock(events_mutex_);
    for (const DeliveredEvent& event : events_)
      if (event.name == name) out.push_back(event);
    return out;
  }

  static std::string describe(const std::vector<DeliveredEvent>& events) {
    std::string text;
    for (const auto& event : events)
      text += std::string{to_string(event.type)} + "@" + event.resource_version + " ";
    return text;
  }

  static inline std::unique_ptr<PrivateControlPlane> plane_;
  KubeConfig config_;
  std::shared_ptr<HttpKubernetes> direct_;
  std::unique_ptr<ScopedNamespace> namespace_;
  std::shared_ptr<HttpKubernetes> watched_client_;
  std::unique_ptr<runtime::Informer> informer_;
  mutable std::mutex events_mutex_;
  std::vector<DeliveredEvent> events_;
};

TEST_F(OnPrivateControlPlaneWatch, WatchResumesAfterAnApiserverRestartWithEveryChangeOnce) {
  for (int i = 0; i < 3; ++i)
    ASSERT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), "before-" + std::to_string(i))));
  start_watching(connect(config_, quick()));
  ASSERT_TRUE(converges(30s));
  const runtime::InformerStats before = informer_->stats();

  ASSERT_TRUE(plane_->restart_apiserver());
  // A new client for the test's writes: the old one's pooled connections were closed by the
  // restart, and HttpKubernetes fails the first request on each (see the disabled test below).
  direct_ = connect(config_, quick());
  ASSERT_NE(direct_, nullptr);

  std::vector<std::string> created_after;
  for (int i = 0; i < 5; ++i) {
    created_after.push_back("after-" + std::to_string(i));
    ASSERT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), created_after.back())));
  }
  ASSERT_OK(direct_->patch({Kind::ConfigMap, ns(), "before-0"}, PatchType::Merge,
                           Json{{"data", {{"key", "changed after the restart"}}}}));
  ASSERT_OK(direct_->remove({Kind::ConfigMap, ns(), "before-1"}));
  ASSERT_OK(direct_->patch({Kind::ConfigMap, ns(), "after-0"}, PatchType::Merge,
                           Json{{"data", {{"key", "changed"}}}}));

  ASSERT_TRUE(converges());
  const runtime::InformerStats after = informer_->stats();
  EXPECT_GT(after.watch_restarts, before.watch_restarts) << "the watch was started again";
  EXPECT_GE(after.errors.count(KubeErrorCode::Unreachable)
                ? after.errors.at(KubeErrorCode::Unreachable)
                : 0u,
            1u)
      << "the restart broke the watch";
  std::printf("after the restart: %llu watch restarts, %llu relists after Gone, %llu lists\n",
              static_cast<unsigned long long>(after.watch_restarts),
              static_cast<unsigned long long>(after.relists_after_gone),
              static_cast<unsigned long long>(after.lists));

  for (const std::string& name : created_after) {
    const auto events = events_for(name);
    ASSERT_FALSE(events.empty()) << name << ": no event";
    EXPECT_EQ(events.front().type, WatchEventType::Added) << name << ": " << describe(events);
    const auto added = std::count_if(events.begin(), events.end(), [](const auto& event) {
      return event.type == WatchEventType::Added;
    });
    EXPECT_EQ(added, 1) << name << ": " << describe(events);
    std::set<std::string> versions;
    for (const auto& event : events)
      EXPECT_TRUE(versions.insert(event.resource_version).second)
          << name << ": the same version delivered twice: " << describe(events);
  }
  const auto removed = events_for("before-1");
  ASSERT_FALSE(removed.empty());
  EXPECT_EQ(removed.back().type, WatchEventType::Deleted) << describe(removed);
}

// An apiserver restart closes every idle keep-alive connection (Go's server sends a TLS
// close_notify, then FIN). A client must not fail requests because of it: Go's http.Transport
// (client-go) retries a request that failed on a reused connection before any answer.
// cpp-httplib's liveness check peeks, sees the close_notify bytes and takes the connection for
// alive, so the write fails: HttpKubernetes then sends the request once more on a new one.
TEST_F(OnPrivateControlPlaneWatch, FirstRequestsAfterAnApiserverRestartSucceed) {
  ASSERT_OK(direct_->list(Kind::ConfigMap, ns()));
  ASSERT_TRUE(plane_->restart_apiserver());
  EXPECT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), "first-after-restart")));
  EXPECT_OK(direct_->get({Kind::ConfigMap, ns(), "first-after-restart"}));
}

// The client is cut off (proxy paused) while X is created, Y deleted and Z updated; etcd is
// compacted and the apiserver restarted, so its watch cache starts past the client's version.
// When the client comes back, its watch from the old version is Gone: it relists, and the
// relist delivers exactly what it missed, including the deletion of Y.
TEST_F(OnPrivateControlPlaneWatch, ClientCutOffDuringCompactionRelistsOnGoneAndSeesTheDeletion) {
  ASSERT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), "y")));
  ASSERT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), "z")));
  auto proxy = TcpProxy::start(plane_->apiserver_port());
  ASSERT_TRUE(proxy) << proxy.error();
  KubeConfig through_proxy = config_;
  through_proxy.server = "https://127.0.0.1:" + std::to_string((*proxy)->port());
  start_watching(connect(through_proxy, quick()));
  ASSERT_TRUE(converges(30s));
  const std::string version_when_cut = informer_->last_resource_version();

  (*proxy)->pause();
  ASSERT_OK(direct_->create(Kind::ConfigMap, config_map(ns(), "x")));
  ASSERT_OK(direct_->remove({Kind::ConfigMap, ns(), "y"}));
  ASSERT_OK(direct_->patch({Kind::ConfigMap, ns(), "z"}, PatchType::Merge,
                           Json{{"data", {{"key", "changed while cut off"}}}}));
  const auto compacted = plane_->compact();
  ASSERT_TRUE(compacted);
  EXPECT_GT(*compacted, std::stoll(version_when_cut));
  ASSERT_TRUE(plane_->restart_apiserver());
  EXPECT_EQ(informer_->stats().relists_after_gone, 0u)
      << "no Gone while the client could not reach the server";
  ASSERT_TRUE((*proxy)->resume());

  ASSERT_TRUE(converges());
  const runtime::InformerStats stats = informer_->stats();
  EXPECT_GE(stats.relists_after_gone, 1u)
      << "the watch from " << version_when_cut << " was not Gone";
  EXPECT_GE(stats.lists, 2u) << "no relist after Gone";

  const auto y = events_for("y");
  ASSERT_FALSE(y.empty());
  EXPECT_EQ(y.back().type, WatchEventType::Deleted) << describe(y);
  const auto x = events_for("x");
  ASSERT_EQ(x.size(), 1u) << describe(x);
  EXPECT_EQ(x.front().type, WatchEventType::Added);
  const auto z = events_for("z");
  ASSERT_FALSE(z.empty());
  EXPECT_EQ(z.back().type, WatchEventType::Modified) << describe(z);
  const auto stored_z = informer_->store().get(ns(), "z");
  ASSERT_NE(stored_z, nullptr);
  EXPECT_EQ((*stored_z)["data"]["key"], "changed while cut off");
}

}  // namespace
}  // namespace stsresize::cluster_test
