#include "adapters/runtime/informer.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "adapters/clock/system_clock.h"
#include "adapters/fake/fake_kubernetes.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Json config_map(const std::string& ns, const std::string& name, const std::string& value = "v") {
  return {{"metadata", {{"namespace", ns}, {"name", name}}}, {"data", {{"key", value}}}};
}

std::string version_of(const Json& object) {
  return object.at("metadata").at("resourceVersion").get<std::string>();
}

// Every handler call, with a way to wait for some.
class EventLog {
 public:
  struct Entry {
    WatchEventType type;
    std::string key;
    std::string resource_version;
    Json object;
  };

  Informer::Handler handler() {
    return [this](WatchEventType type, const Store::Object& object) {
      std::lock_guard lock(mutex_);
      entries_.push_back({type, store_key(*object), version_of(*object), *object});
      changed_.notify_all();
    };
  }

  bool wait_for(const std::function<bool(const std::vector<Entry>&)>& condition,
                Duration limit = seconds{10}) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return condition(entries_); });
  }
  bool wait_for_count(std::size_t n) {
    return wait_for([n](const auto& entries) { return entries.size() >= n; });
  }
  bool wait_for_key(WatchEventType type, const std::string& key) {
    return wait_for([&](const auto& entries) {
      for (const Entry& entry : entries) {
        if (entry.type == type && entry.key == key) return true;
      }
      return false;
    });
  }
  std::vector<Entry> entries() {
    std::lock_guard lock(mutex_);
    return entries_;
  }
  int count(WatchEventType type, const std::string& key) {
    int n = 0;
    for (const Entry& entry : entries()) n += entry.type == type && entry.key == key;
    return n;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Entry> entries_;
};

class InformerTest : public ::testing::Test {
 protected:
  InformerOptions options() {
    return {.kind = Kind::ConfigMap,
            .min_watch_timeout = seconds{30},
            .initial_backoff = milliseconds{10},
            .max_backoff = milliseconds{50}};
  }
  Json create(const std::string& ns, const std::string& name, const std::string& value = "v") {
    return kube.system().create(Kind::ConfigMap, config_map(ns, name, value)).value();
  }
  // Waits until the informer's watch is serving (it delivered a write made now).
  void wait_for_watch(Informer& informer, EventLog& log, const std::string& probe) {
    create("probe", probe);
    ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "probe/" + probe));
    (void)informer;
  }

  SystemClock clock;
  FakeKubernetes kube{clock};
};

TEST(StoreTest, ListsOneNamespaceWithoutItsPrefixNeighbours) {
  Store store;
  store.put("a/x", config_map("a", "x"));
  store.put("ab/y", config_map("ab", "y"));
  store.put("node-1", Json{{"metadata", {{"name", "node-1"}}}});
  ASSERT_EQ(store.list("a").size(), 1u);
  EXPECT_EQ(store.list("a")[0]->at("metadata").at("name"), "x");
  EXPECT_EQ(store.list().size(), 3u);
  EXPECT_NE(store.get("a", "x"), nullptr);
  EXPECT_NE(store.get("", "node-1"), nullptr);
  EXPECT_EQ(store.get("ab", "x"), nullptr);
}

TEST_F(InformerTest, InitialSyncReadsEveryPage) {
  for (int i = 0; i < 1234; ++i) {
    create(i % 2 == 0 ? "even" : "odd", "cm-" + std::to_string(i));
  }
  InformerOptions opts = options();
  opts.page_size = 500;
  Informer informer(kube, opts);
  EventLog log;
  informer.add_handler(log.handler());
  EXPECT_FALSE(informer.has_synced());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  EXPECT_EQ(informer.store().size(), 1234u);
  EXPECT_EQ(informer.store().list("even").size(), 617u);
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.list_pages, 3u);
  EXPECT_EQ(kube.calls(Verb::List, Kind::ConfigMap), 3);
  EXPECT_EQ(log.entries().size(), 1234u);
  for (const auto& entry : log.entries()) ASSERT_EQ(entry.type, WatchEventType::Added);
}

TEST_F(InformerTest, WatchEventsUpdateTheStoreBeforeHandlersRun) {
  create("ns", "existing");
  Informer informer(kube, options());
  EventLog log;
  std::vector<std::string> problems;
  informer.add_handler([&](WatchEventType type, const Store::Object& object) {
    const auto stored = informer.store().get(store_key(*object));
    if (type == WatchEventType::Deleted ? stored != nullptr
                                        : stored == nullptr || *stored != *object) {
      problems.push_back(std::string(to_string(type)) + " " + store_key(*object));
    }
  });
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));

  create("ns", "new");
  kube.system().patch({Kind::ConfigMap, "ns", "existing"}, PatchType::Merge,
                      {{"data", {{"key", "changed"}}}});
  ASSERT_TRUE(kube.system().remove({Kind::ConfigMap, "ns", "new"}).has_value());
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Deleted, "ns/new"));

  const auto entries = log.entries();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[1].type, WatchEventType::Added);
  EXPECT_EQ(entries[2].type, WatchEventType::Modified);
  EXPECT_EQ(entries[2].object.at("data").at("key"), "changed");
  EXPECT_EQ(entries[3].type, WatchEventType::Deleted);
  EXPECT_EQ(informer.store().get("ns", "existing")->at("data").at("key"), "changed");
  EXPECT_EQ(informer.store().get("ns", "new"), nullptr);
  EXPECT_EQ(informer.last_resource_version(), kube.current_resource_version());
  EXPECT_EQ(informer.stats().events, 3u);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST_F(InformerTest, WatchTimeoutsResumeWithoutRelistingOrLosingEvents) {
  InformerOptions opts = options();
  opts.min_watch_timeout = milliseconds{20};  // each watch lasts 20..40 ms
  Informer informer(kube, opts);
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  for (int i = 0; i < 30; ++i) {
    create("ns", "cm-" + std::to_string(i));
    std::this_thread::sleep_for(milliseconds{7});
  }
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "ns/cm-29"));
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(log.count(WatchEventType::Added, "ns/cm-" + std::to_string(i)), 1) << i;
  }
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_GE(stats.watch_restarts, 3u) << "the watches should have timed out meanwhile";
  EXPECT_EQ(stats.watches_started, stats.watch_restarts + 1);
  EXPECT_TRUE(stats.errors.empty());
}

TEST_F(InformerTest, BrokenWatchResumesFromTheLastVersionWithoutGapsOrRepeats) {
  create("ns", "before");
  Informer informer(kube, options());
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  wait_for_watch(informer, log, "first");
  // Written while the informer backs off after the break.
  kube.inject({.verb = Verb::Watch, .action = [&] {
                 for (int i = 0; i < 5; ++i) create("ns", "gap-" + std::to_string(i));
               }});
  kube.break_watches({KubeErrorCode::Unreachable, "connection reset"});
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "ns/gap-4"));
  create("ns", "after");
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "ns/after"));
  for (const std::string name : {"before", "gap-0", "gap-1", "gap-2", "gap-3", "gap-4", "after"}) {
    EXPECT_EQ(log.count(WatchEventType::Added, "ns/" + name), 1) << name;
  }
  EXPECT_EQ(log.count(WatchEventType::Added, "probe/first"), 1)
      << "an event seen before the break was delivered again";
  EXPECT_EQ(informer.stats().events, 7u);  // probe, 5 in the gap, after
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 1u) << "Unreachable must not relist";
  EXPECT_EQ(stats.errors.at(KubeErrorCode::Unreachable), 1u);
  EXPECT_GE(stats.watch_restarts, 1u);
  EXPECT_EQ(informer.store().size(), 8u);  // 7 + the probe
}

TEST_F(InformerTest, CompactionDuringABreakRelistsAndReportsTheGap) {
  create("ns", "deleted-in-gap");
  create("ns", "modified-in-gap");
  create("ns", "unchanged");
  Informer informer(kube, options());
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  wait_for_watch(informer, log, "first");
  const std::size_t before_gap = log.entries().size();
  kube.inject({.verb = Verb::Watch, .action = [&] {
                 (void)kube.system().remove({Kind::ConfigMap, "ns", "deleted-in-gap"});
                 (void)kube.system().patch({Kind::ConfigMap, "ns", "modified-in-gap"},
                                           PatchType::Merge, {{"data", {{"key", "new"}}}});
                 create("ns", "created-in-gap");
                 kube.compact();
               }});
  kube.break_watches({KubeErrorCode::Unreachable, "apiserver restart"});
  ASSERT_TRUE(log.wait_for_count(before_gap + 3));
  std::this_thread::sleep_for(milliseconds{50});
  const auto entries = log.entries();
  std::map<std::string, WatchEventType> gap;
  for (std::size_t i = before_gap; i < entries.size(); ++i) gap[entries[i].key] = entries[i].type;
  EXPECT_EQ(gap.size(), 3u) << "unchanged objects must not be reported";
  EXPECT_EQ(gap.at("ns/deleted-in-gap"), WatchEventType::Deleted);
  EXPECT_EQ(gap.at("ns/modified-in-gap"), WatchEventType::Modified);
  EXPECT_EQ(gap.at("ns/created-in-gap"), WatchEventType::Added);
  EXPECT_EQ(informer.store().get("ns", "deleted-in-gap"), nullptr);
  EXPECT_EQ(informer.store().get("ns", "modified-in-gap")->at("data").at("key"), "new");
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 2u);
  EXPECT_EQ(stats.relists_after_gone, 1u);
  EXPECT_EQ(stats.errors.at(KubeErrorCode::Gone), 1u);
}

TEST_F(InformerTest, OtherWatchErrorsRelistAfterBackoff) {
  kube.inject({.verb = Verb::Watch, .error = KubeError{KubeErrorCode::Forbidden, "rbac"}});
  Informer informer(kube, options());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  EventLog log;
  for (int i = 0; i < 500 && kube.calls(Verb::Watch) < 2; ++i) {
    std::this_thread::sleep_for(milliseconds{2});
  }
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 2u);
  EXPECT_EQ(stats.relists_after_gone, 0u);
  EXPECT_EQ(stats.errors.at(KubeErrorCode::Forbidden), 1u);
}

TEST_F(InformerTest, FailedListsAreRetriedWithBackoff) {
  create("ns", "a");
  kube.inject({.verb = Verb::List,
               .times = 3,
               .error = KubeError{KubeErrorCode::ServerError, "etcd leader changed"}});
  Informer informer(kube, options());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  EXPECT_EQ(informer.store().size(), 1u);
  const InformerStats stats = informer.stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.errors.at(KubeErrorCode::ServerError), 3u);
  EXPECT_EQ(kube.calls(Verb::List), 4);
}

// What a caller needs to say why the cache is not syncing (a 401, a missing RBAC rule): each
// failed call, then the first success after them, once; a relist after Gone is routine.
TEST_F(InformerTest, FailedCallsAndTheFirstSuccessAfterThemAreTold) {
  std::mutex mutex;
  std::vector<InformerError> errors;
  int recovered = 0;
  const auto count = [&] {
    std::lock_guard lock(mutex);
    return std::pair{errors.size(), recovered};
  };
  InformerOptions opts = options();
  opts.on_error = [&](const InformerError& error) {
    std::lock_guard lock(mutex);
    errors.push_back(error);
  };
  opts.on_recovered = [&](Kind kind) {
    std::lock_guard lock(mutex);
    EXPECT_EQ(kind, Kind::ConfigMap);
    ++recovered;
  };
  kube.inject({.verb = Verb::List,
               .times = 3,
               .error = KubeError{KubeErrorCode::Forbidden, "rbac", Duration{0}}});
  Informer informer(kube, opts);
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  EXPECT_EQ(count(), std::pair(std::size_t{3}, 1));
  for (const InformerError& error : errors) {
    EXPECT_EQ(error.kind, Kind::ConfigMap);
    EXPECT_EQ(error.ns, "");
    EXPECT_EQ(error.verb, "list");
    EXPECT_EQ(error.error.code, KubeErrorCode::Forbidden);
    EXPECT_EQ(error.error.message, "rbac");
  }

  // A broken watch is told; its recovery is the first event of the next watch.
  wait_for_watch(informer, log, "first");
  kube.break_watches({KubeErrorCode::Unreachable, "connection reset", Duration{0}});
  for (int i = 0; i < 500 && count().first < 4; ++i) std::this_thread::sleep_for(milliseconds{2});
  ASSERT_EQ(count(), std::pair(std::size_t{4}, 1));
  EXPECT_EQ(errors[3].verb, "watch");
  EXPECT_EQ(errors[3].error.code, KubeErrorCode::Unreachable);
  wait_for_watch(informer, log, "second");
  EXPECT_EQ(count(), std::pair(std::size_t{4}, 2));

  // Gone (the version was compacted away) only relists: nothing to tell.
  kube.compact();
  kube.break_watches({KubeErrorCode::Gone, "too old", Duration{0}});
  for (int i = 0; i < 500 && informer.stats().relists_after_gone < 1; ++i) {
    std::this_thread::sleep_for(milliseconds{2});
  }
  wait_for_watch(informer, log, "third");
  informer.stop();
  EXPECT_EQ(count(), std::pair(std::size_t{4}, 2));
}

// RBAC can grant list without watch: each relist works, each watch is refused. That is one
// failure until a watch works, not a recovery after every list (which would also reset the
// back-off and retry as fast as the server answers).
TEST_F(InformerTest, AWatchRefusedWhileListsWorkIsNotRecoveredByTheLists) {
  std::mutex mutex;
  int errors = 0;
  int recovered = 0;
  InformerOptions opts = options();
  opts.on_error = [&](const InformerError& error) {
    std::lock_guard lock(mutex);
    EXPECT_EQ(error.verb, "watch");
    ++errors;
  };
  opts.on_recovered = [&](Kind) {
    std::lock_guard lock(mutex);
    ++recovered;
  };
  const auto count = [&] {
    std::lock_guard lock(mutex);
    return std::pair{errors, recovered};
  };
  kube.inject({.verb = Verb::Watch,
               .times = 4,
               .error = KubeError{KubeErrorCode::Forbidden, "rbac", Duration{0}}});
  Informer informer(kube, opts);
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  for (int i = 0; i < 2000 && count().first < 4; ++i) std::this_thread::sleep_for(milliseconds{2});
  EXPECT_GE(informer.stats().lists, 4u);  // a relist after each refused watch, each one working
  EXPECT_EQ(count(), std::pair(4, 0));
  // The fifth watch is granted: a write made once it runs reaches the informer through it.
  for (int i = 0; i < 2000 && kube.calls(Verb::Watch) < 5; ++i) {
    std::this_thread::sleep_for(milliseconds{2});
  }
  wait_for_watch(informer, log, "granted");
  informer.stop();
  EXPECT_EQ(count(), std::pair(4, 1));
}

TEST_F(InformerTest, StopReturnsPromptlyFromAWatch) {
  Informer informer(kube, options());  // 30 s watches
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  wait_for_watch(informer, log, "first");
  const auto start = std::chrono::steady_clock::now();
  informer.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds{500});
}

TEST_F(InformerTest, StopReturnsPromptlyFromABackoff) {
  kube.inject({.verb = Verb::List,
               .times = FaultRule::kForever,
               .error = KubeError{KubeErrorCode::ServerError, "down"}});
  InformerOptions opts = options();
  opts.initial_backoff = seconds{20};
  opts.max_backoff = seconds{30};
  Informer informer(kube, opts);
  informer.start();
  for (int i = 0; i < 500 && kube.calls(Verb::List) < 1; ++i) {
    std::this_thread::sleep_for(milliseconds{2});
  }
  std::this_thread::sleep_for(milliseconds{20});
  const auto start = std::chrono::steady_clock::now();
  informer.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds{500});
  EXPECT_FALSE(informer.has_synced());
  EXPECT_FALSE(informer.wait_for_sync(seconds{5})) << "a stopped informer does not block";
}

TEST_F(InformerTest, ManagedFieldsAreDroppedFromListedAndWatchedObjects) {
  const Json managed = Json::array({{{"manager", "kubectl"}, {"operation", "Update"}}});
  Json listed = config_map("ns", "listed");
  listed["metadata"]["managedFields"] = managed;
  kube.put_raw(Kind::ConfigMap, listed);
  Informer informer(kube, options());
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  Json watched = config_map("ns", "watched");
  watched["metadata"]["managedFields"] = managed;
  kube.put_raw(Kind::ConfigMap, watched);
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "ns/watched"));
  for (const std::string name : {"listed", "watched"}) {
    const auto stored = informer.store().get("ns", name);
    ASSERT_NE(stored, nullptr) << name;
    EXPECT_FALSE(stored->at("metadata").contains("managedFields")) << name;
    EXPECT_EQ(stored->at("data").at("key"), "v") << name;
  }
  for (const auto& entry : log.entries()) {
    EXPECT_FALSE(entry.object.at("metadata").contains("managedFields")) << entry.key;
  }
}

TEST_F(InformerTest, ACustomTransformSeesEveryObject) {
  create("ns", "a");
  InformerOptions opts = options();
  opts.transform = [](Json object) {
    object.erase("data");
    return object;
  };
  Informer informer(kube, opts);
  EventLog log;
  informer.add_handler(log.handler());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  create("ns", "b");
  ASSERT_TRUE(log.wait_for_key(WatchEventType::Added, "ns/b"));
  EXPECT_FALSE(informer.store().get("ns", "a")->contains("data"));
  EXPECT_FALSE(informer.store().get("ns", "b")->contains("data"));
}

TEST_F(InformerTest, NamespaceAndLabelSelectorLimitWhatIsCached) {
  Json labelled = config_map("mine", "labelled");
  labelled["metadata"]["labels"] = {{"app", "web"}};
  kube.system().create(Kind::ConfigMap, labelled).value();
  create("mine", "unlabelled");
  Json elsewhere = config_map("other", "labelled");
  elsewhere["metadata"]["labels"] = {{"app", "web"}};
  kube.system().create(Kind::ConfigMap, elsewhere).value();
  InformerOptions opts = options();
  opts.ns = "mine";
  opts.label_selector = "app=web";
  Informer informer(kube, opts);
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));
  EXPECT_EQ(informer.store().keys(), std::vector<std::string>{"mine/labelled"});
}

}  // namespace
}  // namespace stsresize::runtime
