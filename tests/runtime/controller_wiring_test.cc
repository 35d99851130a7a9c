// The runtime pieces assembled as a controller uses them: an informer's handler queues keys,
// workers reconcile them from the informer's cache.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "adapters/clock/system_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/runtime/informer.h"
#include "adapters/runtime/work_queue.h"
#include "adapters/runtime/worker_pool.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Json config_map(const std::string& ns, const std::string& name, const std::string& value) {
  return {{"metadata", {{"namespace", ns}, {"name", name}}}, {"data", {{"key", value}}}};
}

// What the reconciler saw of each key, as the controller's level-based logic would: the cached
// object's latest value.
class SeenValues {
 public:
  void record(const std::string& key, const std::string& value) {
    std::lock_guard lock(mutex_);
    latest_[key] = value;
    ++reconciles_;
  }
  std::map<std::string, std::string> latest() {
    std::lock_guard lock(mutex_);
    return latest_;
  }
  int reconciles() {
    std::lock_guard lock(mutex_);
    return reconciles_;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> latest_;
  int reconciles_ = 0;
};

bool eventually(const std::function<bool()>& condition, Duration limit = seconds{10}) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds{5});
  }
  return condition();
}

TEST(ControllerWiring, EveryObjectConvergesToItsLatestValueAndDeletionsAreSeen) {
  SystemClock clock;
  FakeKubernetes kube(clock);
  for (int i = 0; i < 40; ++i) {
    kube.system()
        .create(Kind::ConfigMap, config_map("ns", "cm-" + std::to_string(i), "v0"))
        .value();
  }
  WorkQueue queue(clock);
  Informer informer(kube, {.kind = Kind::ConfigMap, .page_size = 16});
  informer.add_handler(
      [&](WatchEventType, const Store::Object& object) { queue.add(store_key(*object)); });
  SeenValues seen;
  std::set<std::string> gone;
  std::mutex gone_mutex;
  WorkerPool pool(
      queue,
      [&](const std::string& key) {
        const auto object = informer.store().get(key);
        if (!object) {
          std::lock_guard lock(gone_mutex);
          gone.insert(key);
        } else {
          seen.record(key, object->at("data").at("key").get<std::string>());
        }
        return ReconcileResult{};
      },
      3);
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{10}));

  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 40; i += 3) {
      kube.system().patch({Kind::ConfigMap, "ns", "cm-" + std::to_string(i)}, PatchType::Merge,
                          {{"data", {{"key", "v" + std::to_string(round)}}}});
    }
  }
  ASSERT_TRUE(kube.system().remove({Kind::ConfigMap, "ns", "cm-1"}).has_value());

  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(gone_mutex);
    // cm-1 may be deleted before a worker first saw it: only the 39 others must be seen.
    const auto latest = seen.latest();
    return gone.contains("ns/cm-1") && latest.size() - latest.count("ns/cm-1") == 39 &&
           latest.contains("ns/cm-39") && latest.at("ns/cm-39") == "v3";
  }));
  ASSERT_TRUE(eventually([&] { return queue.depth() == 0 && queue.in_flight() == 0; }));
  const auto latest = seen.latest();
  for (int i = 0; i < 40; ++i) {
    if (i == 1) continue;  // deleted
    const std::string key = "ns/cm-" + std::to_string(i);
    ASSERT_TRUE(latest.contains(key)) << key;
    EXPECT_EQ(latest.at(key), i % 3 == 0 ? "v3" : "v0") << key;
  }
  // De-duplication: never more reconciles than events (40 listed, 42 patches).
  EXPECT_LE(seen.reconciles(), 40 + 42);
  pool.stop();
  informer.stop();
}

TEST(InformerScale, SyncsTwentyThousandObjectsInFortyPages) {
  SystemClock clock;
  FakeKubernetes kube(clock);
  Json claim = {
      {"metadata", {{"namespace", "ns"}, {"labels", {{"app", "db"}}}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "10Gi"}}}}}}}};
  for (int i = 0; i < 20'000; ++i) {
    claim["metadata"]["name"] = "data-db-" + std::to_string(i);
    claim["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
    kube.put_raw(Kind::PersistentVolumeClaim, claim);
  }
  Informer informer(kube, {.kind = Kind::PersistentVolumeClaim});
  const auto started = std::chrono::steady_clock::now();
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(seconds{60}));
  const auto took =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
  EXPECT_EQ(informer.store().size(), 20'000u);
  EXPECT_EQ(informer.stats().list_pages, 40u);
  EXPECT_FALSE(
      informer.store().get("ns", "data-db-19999")->at("metadata").contains("managedFields"));
  RecordProperty("sync_ms", std::to_string(took.count()));
  std::cout << "synced 20,000 claims from the fake in " << took.count() << " ms\n";
}

}  // namespace
}  // namespace stsresize::runtime
