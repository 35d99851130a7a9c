// The controller assembled from informers, filter, queue and workers, on FakeKubernetes with
// its simulated cluster: resizes happen from watch events alone, and an idle cluster costs no
// requests once the caches have synced.
#include "adapters/controller/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace std::chrono_literals;
using testing::ResizeWorld;

ControllerOptions fast_options() {
  ControllerOptions options;
  options.workers = 2;
  options.engine.poll_interval = 20ms;
  // The simulated clock moves 200 ms a tick whether or not the controller's threads got to run:
  // on a loaded machine minutes of it pass between two reconciles, which must not read as a
  // claim Pending or a Job running too long (these tests are not about those limits).
  options.engine.pending_timeout = std::chrono::hours{24};
  options.engine.scale_up_timeout = std::chrono::hours{24};
  options.engine.job_timeout = std::chrono::hours{24};
  return options;
}

// Ticks the simulated cluster (and its clock) until `done` or `ticks` run out; real time passes
// too, so that the controller's threads get to run.
bool run_cluster_until(ResizeWorld& world, const std::function<bool()>& done, int ticks = 3000) {
  for (int i = 0; i < ticks; ++i) {
    if (done()) return true;
    world.cluster.tick();
    world.clock.advance(200ms);
    std::this_thread::sleep_for(2ms);
  }
  return done();
}

bool resized(const ResizeWorld& world, const std::string& size) {
  const Json sts = world.live_sts();
  auto state = k8s::annotation(sts, kStateAnnotation);
  if (!state || state->has_value()) return false;  // an operation is still under way
  for (const std::string& name : world.claim_names()) {
    auto claim = world.kube.get_raw(world.claim(name));
    if (!claim) return false;
    auto request = k8s::requested_storage(*claim);
    if (!request || request->to_string() != size) return false;
  }
  return world.ready_replicas() == testing::kReplicas;
}

TEST(Controller, ResizesADetectedStatefulSetFromWatchEventsAlone) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  MemoryJournal journal;
  Controller controller(world.kube, journal, world.clock, world.events, fast_options());
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  const bool done = run_cluster_until(world, [&] { return resized(world, "2Gi"); });
  controller.stop();
  starter.join();
  ASSERT_TRUE(done) << "operation did not complete; phase: "
                    << world.live_sts()["metadata"]["annotations"].dump();
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
  }
  EXPECT_EQ(world.events.with_reason("ResizeStarted").size(), 1u);
}

// A rebind resize, its volumes watched or not: the GETs of volumes it makes, and its data.
int volume_gets_of_a_rebind_resize(bool watch_volumes) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  MemoryJournal journal;
  ControllerOptions options = fast_options();
  options.watch_volumes = watch_volumes;
  Controller controller(world.kube, journal, world.clock, world.events, options);
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  const bool done = run_cluster_until(world, [&] { return resized(world, "2Gi"); });
  controller.stop();
  starter.join();
  EXPECT_TRUE(done) << "watch_volumes " << watch_volumes;
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
  }
  EXPECT_EQ(world.events.with_reason("RebindUnavailable").size(), 0u);
  return world.kube.calls(Verb::Get, Kind::PersistentVolume);
}

TEST(Controller, WatchedVolumesAreReadLiveOnlyWhereAStepChangesThem) {
  const int live = volume_gets_of_a_rebind_resize(false);
  const int watched = volume_gets_of_a_rebind_resize(true);
  // Without the informer every first read of a volume in a reconcile is a GET; with it, only
  // the live runs of the steps that change a volume (its claimRef, a policy put back) read it.
  EXPECT_GT(live, 0);
  EXPECT_LT(watched, live) << "watched " << watched << ", live " << live;
}

TEST(Controller, AnIdleClusterCostsOnlyItsWatchesAfterTheInitialLists) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "1Gi");  // claims as large as their templates
  MemoryJournal journal;
  Controller controller(world.kube, journal, world.clock, world.events, fast_options());
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  ASSERT_TRUE(run_cluster_until(world, [&] { return controller.caches_synced(); }));
  const int lists = world.kube.calls(Verb::List);
  // The cluster keeps writing statuses; every write reaches the informers as an event.
  run_cluster_until(
      world, [] { return false; }, 200);
  controller.stop();
  starter.join();
  EXPECT_EQ(world.kube.calls(Verb::Get), 0);
  EXPECT_EQ(world.kube.calls(Verb::List), lists);
  EXPECT_EQ(world.kube.mutations(), 0);
}

// Templates that name a StorageClass that does not exist: the planner refuses them
// (InvalidResize) and nothing starts.
void refuse_templates(ResizeWorld& world) {
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    for (Json& tmpl : sts["spec"]["volumeClaimTemplates"])
      tmpl["spec"]["storageClassName"] = "gold";
  });
}

TEST(Controller, ARefusalIsReportedOnceNotOnEveryStatusUpdate) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "2Gi");
  refuse_templates(world);
  MemoryJournal journal;
  Controller controller(world.kube, journal, world.clock, world.events, fast_options());
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  ASSERT_TRUE(
      run_cluster_until(world, [&] { return !world.events.with_reason("InvalidResize").empty(); }));
  // Status updates (the simulated StatefulSet controller) do not bring the refusal back...
  for (int i = 0; i < 20; ++i) {
    world.kube.mutate_raw(world.sts(),
                          [&](Json& sts) { sts["status"]["observedGeneration"] = 100 + i; });
    run_cluster_until(
        world, [] { return false; }, 5);
  }
  EXPECT_EQ(world.events.with_reason("InvalidResize").size(), 1u);
  // ...a change of the templates does: here, back to a valid grow.
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    for (Json& tmpl : sts["spec"]["volumeClaimTemplates"]) {
      tmpl["spec"]["storageClassName"] = "standard";
    }
  });
  const bool done = run_cluster_until(world, [&] { return resized(world, "2Gi"); });
  controller.stop();
  starter.join();
  EXPECT_TRUE(done);
}

// A status update that arrives while the reconcile that refuses the StatefulSet runs is queued
// before that refusal is recorded: it must not bring the refusal back (it did, under load: a
// second InvalidResize Event).
TEST(Controller, AnEventDuringTheRefusingReconcileDoesNotRepeatTheRefusal) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "2Gi");
  refuse_templates(world);
  // The reconciler's read of the StatefulSet: the StatefulSet controller writes its status
  // meanwhile, and its watch event reaches the controller while the reconcile goes on.
  world.kube.inject({.verb = Verb::Get, .kind = Kind::StatefulSet, .action = [&] {
                       world.kube.mutate_raw(world.sts(), [](Json& sts) {
                         sts["status"]["observedGeneration"] = 99;
                       });
                       std::this_thread::sleep_for(300ms);
                     }});
  MemoryJournal journal;
  Controller controller(world.kube, journal, world.clock, world.events, fast_options());
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  ASSERT_TRUE(
      run_cluster_until(world, [&] { return !world.events.with_reason("InvalidResize").empty(); }));
  run_cluster_until(
      world, [] { return false; }, 50);
  controller.stop();
  starter.join();
  EXPECT_EQ(world.events.with_reason("InvalidResize").size(), 1u);
}

TEST(Controller, StopWhileWaitingForCachesReturns) {
  ResizeWorld world;
  world.kube.inject({.verb = Verb::List,
                     .times = FaultRule::kForever,
                     .error = KubeError{KubeErrorCode::Forbidden, "no list for you", {}}});
  MemoryJournal journal;
  Controller controller(world.kube, journal, world.clock, world.events, fast_options());
  controller.start_caches();
  std::thread starter([&] { controller.start_workers(); });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(controller.caches_synced());
  EXPECT_NE(controller.sync_detail().find("waiting for"), std::string::npos);
  controller.stop();
  starter.join();
  EXPECT_FALSE(controller.working() && controller.caches_synced());
}

// A copy-path operation driven until BackingUp, then left alone (no ticks, no time passing):
// the controller settles with nothing to do until the clock moves. Counts its reconciles.
class BatchedEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    world_.seed(/*expandable=*/false, "2Gi");
    ControllerOptions options = fast_options();
    options.engine.poll_interval = 1h;  // only events bring a reconcile here
    options.event_batching_window = 1s;
    controller_ =
        std::make_unique<Controller>(world_.kube, journal_, world_.clock, world_.events, options);
    controller_->on_reconciled([this](const std::string&, std::string_view, Duration,
                                      const std::string&) { ++reconciles_; });
    controller_->start_caches();
    starter_ = std::thread([this] { controller_->start_workers(); });
    ASSERT_TRUE(run_cluster_until(world_, [this] {
      auto phase = k8s::annotation(world_.live_sts(), kPhaseAnnotation);
      return phase && phase->has_value() && **phase == "BackingUp";
    }));
    // Every batching delay still pending falls due, and an event wakes the queue to notice:
    // afterwards nothing is pending but what the last reconcile leaves.
    world_.clock.advance(2s);
    const int seen = reconciles_;
    poke(-1);
    await_more_than(seen);
    settle();
  }
  void TearDown() override {
    controller_->stop();
    if (starter_.joinable()) starter_.join();
  }
  // Until no reconcile has happened for 300 ms of real time.
  void settle() {
    int seen = -1;
    for (int i = 0; i < 50 && seen != reconciles_; ++i) {
      seen = reconciles_;
      std::this_thread::sleep_for(300ms);
    }
  }
  // Until more than `count` reconciles have happened, or 10 s of real time: the queue notices a
  // delay that fell due on the manual clock only when it next wakes (every few seconds).
  void await_more_than(int count) {
    for (int i = 0; i < 200 && reconciles_ <= count; ++i) std::this_thread::sleep_for(50ms);
  }
  // A change nothing depends on, that still reaches the informer as an event.
  void poke(int i) {
    world_.kube.mutate_raw(world_.sts(), [i](Json& sts) {
      sts["metadata"]["annotations"]["test.example/poke"] = std::to_string(i);
    });
  }

  ResizeWorld world_;
  MemoryJournal journal_;
  std::unique_ptr<Controller> controller_;
  std::thread starter_;
  std::atomic<int> reconciles_{0};
};

TEST_F(BatchedEvents, EventsRightAfterAReconcileWaitForTheWindowThenMakeOneReconcile) {
  const int before = reconciles_;
  for (int i = 0; i < 5; ++i) poke(i);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(reconciles_, before) << "no time has passed since the last reconcile";
  world_.clock.advance(1s);
  await_more_than(before);
  settle();
  EXPECT_EQ(reconciles_, before + 1);
}

TEST_F(BatchedEvents, AnEventLaterThanTheWindowIsHandledAtOnce) {
  world_.clock.advance(2s);
  const int before = reconciles_;
  poke(1);
  settle();
  EXPECT_EQ(reconciles_, before + 1);
}

}  // namespace
}  // namespace stsresize
