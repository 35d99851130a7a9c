// FakeKubernetes watch beyond the contract suite: the test controls (compaction, broken
// watches, faults, counters) and what only the fake can show cheaply (namespaces, cluster
// writes, handlers that write back).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "tests/support/kube_assertions.h"

namespace stsresize {
namespace {

using namespace std::chrono_literals;

Json config_map(const std::string& ns, const std::string& name) {
  return Json{{"metadata", {{"name", name}, {"namespace", ns}}}, {"data", {{"key", "value"}}}};
}

WatchOptions from_version(std::string version, Duration timeout = 5s) {
  WatchOptions options;
  options.resource_version = std::move(version);
  options.timeout = timeout;
  return options;
}

std::string describe(const WatchEvent& event) {
  return std::string{to_string(event.type)} + " " +
         event.object["metadata"].value("namespace", "") + "/" +
         event.object["metadata"].value("name", "");
}

class FakeKubernetesWatchTest : public ::testing::Test {
 protected:
  ManualClock clock;
  FakeKubernetes kube{clock};

  // Watches `ns` until `count` events (bookmarks included) arrived or the stream ended.
  std::pair<KubeResult<void>, std::vector<std::string>> watch_for(const std::string& ns,
                                                                  const WatchOptions& options,
                                                                  std::size_t count) {
    std::vector<std::string> seen;
    auto result = kube.watch(Kind::ConfigMap, ns, options, {}, [&](const WatchEvent& event) {
      seen.push_back(describe(event));
      return seen.size() < count;
    });
    return {result, seen};
  }
};

TEST_F(FakeKubernetesWatchTest, CompactionMakesOlderVersionsGoneButNotTheCurrentOne) {
  const std::string before = kube.current_resource_version();
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "a")));
  const std::string compacted_at = kube.current_resource_version();
  kube.compact();
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "b")));

  auto [old_result, old_seen] = watch_for("ns", from_version(before), 1);
  ASSERT_FALSE(old_result);
  EXPECT_EQ(old_result.error().code, KubeErrorCode::Gone) << old_result.error().message;
  EXPECT_TRUE(old_seen.empty());

  auto [result, seen] = watch_for("ns", from_version(compacted_at), 1);
  ASSERT_OK(result);
  EXPECT_EQ(seen, std::vector<std::string>{"Added ns/b"});
}

TEST_F(FakeKubernetesWatchTest, BreakingWatchesEndsABlockedWatchWithThatError) {
  auto blocked = std::async(std::launch::async, [&] {
    return kube.watch(Kind::ConfigMap, "ns", from_version(kube.current_resource_version(), 30s), {},
                      [](const WatchEvent&) { return true; });
  });
  std::this_thread::sleep_for(100ms);
  const auto broken_at = std::chrono::steady_clock::now();
  kube.break_watches(KubeError{KubeErrorCode::Unreachable, "apiserver restarted", Duration{0}});
  ASSERT_EQ(blocked.wait_for(2s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - broken_at, 1s);
  auto result = blocked.get();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, KubeErrorCode::Unreachable);
  EXPECT_EQ(result.error().message, "apiserver restarted");

  // Only the watches open at the time: a new one works.
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "after")));
  auto [again, seen] = watch_for("ns", from_version(""), 1);
  ASSERT_OK(again);
  EXPECT_EQ(seen, std::vector<std::string>{"Added ns/after"});
}

TEST_F(FakeKubernetesWatchTest, InjectedFaultFailsTheWatchAndEveryCallIsCounted) {
  kube.inject({.verb = Verb::Watch,
               .kind = Kind::ConfigMap,
               .error = KubeError{KubeErrorCode::Gone, "too old resource version", Duration{0}}});
  auto [failed, none] = watch_for("ns", from_version(""), 1);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, KubeErrorCode::Gone);
  EXPECT_TRUE(none.empty());

  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "a")));
  auto [result, seen] = watch_for("ns", from_version(""), 1);
  ASSERT_OK(result);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(kube.calls(Verb::Watch), 2);
  EXPECT_EQ(kube.calls(Verb::Watch, Kind::Pod), 0);
  EXPECT_EQ(kube.mutations(), 1) << "a watch is not a mutation";
}

TEST_F(FakeKubernetesWatchTest, ANamedFaultRuleNeverMatchesAWatch) {
  kube.inject({.verb = Verb::Watch,
               .name = "a",
               .error = KubeError{KubeErrorCode::ServerError, "boom", Duration{0}}});
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "a")));
  auto [result, seen] = watch_for("ns", from_version(""), 1);
  ASSERT_OK(result);
  EXPECT_EQ(seen, std::vector<std::string>{"Added ns/a"});
}

TEST_F(FakeKubernetesWatchTest, SpentMutationBudgetFailsAWatchLikeAnyOtherCall) {
  kube.set_mutation_budget(0);
  auto [result, seen] = watch_for("ns", from_version(""), 1);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, KubeErrorCode::Unreachable);
}

TEST_F(FakeKubernetesWatchTest, ANamespaceScopesTheWatchAndNoneSeesThemAll) {
  const std::string start = kube.current_resource_version();
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("one", "a")));
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("two", "b")));
  ASSERT_OK(
      kube.create(Kind::Lease, Json{{"metadata", {{"name", "lease"}, {"namespace", "one"}}}}));

  auto [scoped, in_one] = watch_for("two", from_version(start, 200ms), 10);
  ASSERT_OK(scoped);
  EXPECT_EQ(in_one, (std::vector<std::string>{"Added two/b", "Bookmark /"}));
  auto [all, everywhere] = watch_for("", from_version(start, 200ms), 2);
  ASSERT_OK(all);
  EXPECT_EQ(everywhere, (std::vector<std::string>{"Added one/a", "Added two/b"}));
}

TEST_F(FakeKubernetesWatchTest, WritesOfTheClusterItselfAreWatchedToo) {
  const std::string start = kube.current_resource_version();
  ASSERT_OK(kube.system().create(Kind::ConfigMap, config_map("ns", "by-controller")));
  kube.put_raw(Kind::ConfigMap, config_map("ns", "raw"));
  ASSERT_TRUE(kube.mutate_raw({Kind::ConfigMap, "ns", "raw"},
                              [](Json& object) { object["data"]["key"] = "edited"; }));
  auto [result, seen] = watch_for("ns", from_version(start), 3);
  ASSERT_OK(result);
  EXPECT_EQ(seen, (std::vector<std::string>{"Added ns/by-controller", "Added ns/raw",
                                            "Modified ns/raw"}));
}

TEST_F(FakeKubernetesWatchTest, AHandlerMayWriteBackIntoTheFake) {
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "echo")));
  std::vector<std::string> seen;
  auto result =
      kube.watch(Kind::ConfigMap, "ns", from_version(""), {}, [&](const WatchEvent& event) {
        seen.push_back(describe(event));
        if (event.type != WatchEventType::Added) return false;
        Json changed = event.object;
        changed["data"]["key"] = "answered";
        EXPECT_TRUE(kube.update(Kind::ConfigMap, changed));
        return true;
      });
  ASSERT_OK(result);
  EXPECT_EQ(seen, (std::vector<std::string>{"Added ns/echo", "Modified ns/echo"}));
}

TEST_F(FakeKubernetesWatchTest, TheTimeoutEndsTheStreamWithABookmarkOfTheCurrentVersion) {
  const std::string start = kube.current_resource_version();
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("ns", "hidden")));
  WatchOptions options = from_version(start, 100ms);
  options.field_selector = "metadata.name=other";
  std::vector<WatchEvent> events;
  auto result = kube.watch(Kind::ConfigMap, "ns", options, {}, [&](const WatchEvent& event) {
    events.push_back(event);
    return true;
  });
  ASSERT_OK(result);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::Bookmark);
  EXPECT_EQ(events[0].object,
            (Json{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", {{"resourceVersion", kube.current_resource_version()}}}}));
  EXPECT_NE(kube.current_resource_version(), start);
}

TEST_F(FakeKubernetesWatchTest, WithoutBookmarksTheTimeoutEndsTheStreamSilently) {
  WatchOptions options = from_version(kube.current_resource_version(), 100ms);
  options.allow_bookmarks = false;
  auto [result, seen] = watch_for("ns", options, 1);
  ASSERT_OK(result);
  EXPECT_TRUE(seen.empty());
}

TEST_F(FakeKubernetesWatchTest, AnUnparsableResourceVersionIsBadRequest) {
  auto [result, seen] = watch_for("ns", from_version("12abc"), 1);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, KubeErrorCode::BadRequest) << result.error().message;
}

TEST_F(FakeKubernetesWatchTest, DeletedEventsCarryTheDeletionsResourceVersion) {
  const std::string start = kube.current_resource_version();
  auto created = kube.create(Kind::ConfigMap, config_map("ns", "gone"));
  ASSERT_OK(created);
  ASSERT_OK(kube.remove({Kind::ConfigMap, "ns", "gone"}));
  std::vector<WatchEvent> events;
  auto result = kube.watch(Kind::ConfigMap, "ns", from_version(start), {}, [&](const auto& event) {
    events.push_back(event);
    return events.size() < 2;
  });
  ASSERT_OK(result);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].type, WatchEventType::Deleted);
  EXPECT_EQ(events[1].object["metadata"]["resourceVersion"], kube.current_resource_version());
  EXPECT_EQ(events[1].object["data"], (*created)["data"]);
  EXPECT_EQ(kube.history().back().resource_version, std::stoll(kube.current_resource_version()));
}

}  // namespace
}  // namespace stsresize
