// The scale-down drain on the simulated cluster: a scale-down of a StatefulSet that carries the
// StatefulSet Scale-Down Controller's cleanup pod template runs that pod, with the removed
// replica's identity, on the claims left behind, then deletes them; a scale back up stops it
// keeping the claims; a cleanup that keeps failing ends Failed keeping them; a crash at any
// side effect converges.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "adapters/app/status_view.h"
#include "engine/fold.h"
#include "engine/vocabulary.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/drain_world.h"

namespace stsresize {
namespace {

using namespace testing;

// The world of tests/support/drain_world.h: shop/web with a cleanup pod template, nothing to
// resize; its cleanup pods succeed (moving the data off their claim) unless told otherwise.
class Drain : public ::testing::Test, protected DrainWorld {
 protected:
  // The journal holds two operations: a drain, then a resize that ended and planned only the
  // claims of the replicas left (nothing of ordinal 2).
  void expect_drain_then_resize_without_web_2() {
    auto operations = journal.operations();
    ASSERT_TRUE(operations);
    ASSERT_EQ(operations->size(), 2u);
    auto drain = journal.read(operations->at(0).operation_id);
    auto resize = journal.read(operations->at(1).operation_id);
    ASSERT_TRUE(drain && resize);
    EXPECT_EQ(drain->at(1).type, "DrainPlanned");
    EXPECT_EQ(resize->back().type, "OperationFinished");
    for (const JournalRecord& record : *resize) {
      EXPECT_EQ(record.data.dump().find("data-web-2"), std::string::npos)
          << record.type << record.data.dump();
    }
  }
};

TEST_F(Drain, AScaleDownRunsTheCleanupPodWithTheReplicasIdentityThenDeletesItsClaims) {
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);

  ASSERT_FALSE(cleanup_pods.empty()) << "no cleanup pod ran";
  const Json& pod = cleanup_pods.front();
  EXPECT_EQ(pod["metadata"]["name"], "web-2");
  EXPECT_EQ(pod["spec"]["hostname"], "web-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "web");
  EXPECT_EQ(pod["metadata"]["labels"]["scaledown-pod"], "web-2");
  EXPECT_EQ(pod["metadata"]["annotations"][std::string{kScaledownPodOwnerAnnotation}], "web");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(moved["web-2"], world.original_files["data-web-2"]);

  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, "web-2"}).has_value());
  for (int i = 0; i < 2; ++i) {
    for (const char* tmpl : {"data", "logs"}) {
      const std::string name = naming::claim_name(tmpl, kSts, i);
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
    }
  }
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  EXPECT_NE(
      sts["metadata"]["annotations"][std::string{kLastOperationAnnotation}].get<std::string>().find(
          "\"kind\":\"Drain\""),
      std::string::npos);
  EXPECT_TRUE(world.events.contains("DrainStarted"));
  ASSERT_EQ(world.events.with_reason("DrainCompleted").size(), 1u);
  EXPECT_NE(world.events.with_reason("DrainCompleted")[0].message.find("; drained: ordinal 2"),
            std::string::npos);
  auto row = cli::status_row(sts, {}, {});
  ASSERT_TRUE(row);
  EXPECT_EQ(row->message, "drained: ordinal 2");
  // Each step on the StatefulSet, as `kubectl describe sts` shows them; deletes under the old
  // controller's reason.
  EXPECT_EQ(world.events.with_reason("CleanupPodRunning").size(), 1u);
  EXPECT_EQ(world.events.with_reason("CleanupSucceeded").size(), 1u);
  EXPECT_EQ(world.events.with_reason("SuccessfulDelete").size(), 3u);  // the pod, 2 claims
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "DrainedClaimDeleted"), 2);
  EXPECT_EQ(std::ranges::count(types, "CleanupSucceeded"), 1);
  expect_journal_consistent();
}

// The reconciler tells its OperationListener (the controller's /metrics) of the drain's start
// and end: its kind, outcome, duration and what became of its ordinals.
TEST_F(Drain, TheListenerIsToldOfTheDrainsStartAndEnd) {
  struct Heard final : OperationListener {
    std::vector<OperationKind> started_kinds;
    std::vector<OperationEnded> ends;
    void started(OperationKind kind) override { started_kinds.push_back(kind); }
    void left(const PhaseLeft&) override {}
    void seen(const OperationSeen&) override {}
    void ended(const OperationEnded& e) override { ends.push_back(e); }
  } heard;
  scale_to(1);
  Reconciler reconciler{world.kube, journal, world.clock, world.events, {}, &heard};
  run_to_idle(reconciler);
  ASSERT_EQ(heard.started_kinds, std::vector<OperationKind>{OperationKind::Drain});
  ASSERT_EQ(heard.ends.size(), 1u);
  EXPECT_EQ(heard.ends[0].kind, OperationKind::Drain);
  EXPECT_EQ(heard.ends[0].outcome, Phase::Completed);
  EXPECT_FALSE(heard.ends[0].aborted);
  EXPECT_EQ(heard.ends[0].ordinals_drained, 2);
  EXPECT_EQ(heard.ends[0].ordinals_cancelled, 0);
  EXPECT_GT(heard.ends[0].took, Duration{0});
}

TEST_F(Drain, NothingIsDrainedWithoutTheTemplateOrWhileTheScaleDownIsNotObserved) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"].erase(std::string{kScaledownPodTemplateAnnotation});
  });
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);
  EXPECT_TRUE(cleanup_pods.empty());
  EXPECT_TRUE(claim_exists("data-web-2"));
  EXPECT_TRUE(journal_types().empty());
}

// 3 -> 1 drains ordinals 2 and 1: in parallel (bounded by max_parallel_drains) for a Parallel
// StatefulSet, one at a time for an OrderedReady one, as its replicas start and stop.
TEST_F(Drain, TwoOrdinalsAreDrainedAtOnceOrOneAtATimeAsThePodManagementPolicySays) {
  for (const std::string policy : {"Parallel", "OrderedReady"}) {
    SCOPED_TRACE(policy);
    ResizeWorld fresh;
    MemoryJournal fresh_journal;
    fresh.seed(false, "1Gi");
    fresh.kube.mutate_raw(fresh.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kScaledownPodTemplateAnnotation}] =
          kCleanupTemplate.dump();
      live["spec"]["podManagementPolicy"] = policy;
    });
    std::set<std::string> drained;
    std::size_t most_at_once = 0;
    std::map<std::string, int> passes;
    fresh.cluster.set_pod_runner(
        [&](const Json& pod, std::map<std::string, VolumeFiles*>&) -> std::optional<JobRun> {
          std::size_t cleanup_pods = 0;
          for (const Json& p : fresh.kube.list_raw(Kind::Pod)) {
            // Running ones: a Succeeded cleanup pod waits for DeletingClaims.
            const bool cleanup = p["metadata"]
                                     .value("annotations", Json::object())
                                     .contains(std::string{kScaledownPodOwnerAnnotation});
            cleanup_pods += cleanup && p["status"].value("phase", "") != "Succeeded";
          }
          most_at_once = std::max(most_at_once, cleanup_pods);
          const std::string name = pod["metadata"]["name"];
          if (++passes[name] < 3) return std::nullopt;  // runs a while
          drained.insert(name);
          return JobRun{0, ""};
        });
    fresh.kube.mutate_raw(fresh.sts(), [](Json& live) { live["spec"]["replicas"] = 1; });
    fresh.settle(6);
    Reconciler reconciler{fresh.kube, fresh_journal, fresh.clock, fresh.events};
    reconcile_until(reconciler, fresh, idle(),
                    {.limit = 300, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
    fresh.settle(3);
    EXPECT_EQ(drained, (std::set<std::string>{"web-1", "web-2"}));
    EXPECT_EQ(most_at_once, policy == "Parallel" ? 2u : 1u);
    for (const char* claim : {"data-web-1", "logs-web-1", "data-web-2", "logs-web-2"}) {
      EXPECT_FALSE(fresh.kube.get_raw(fresh.claim(claim)).has_value()) << claim;
    }
    EXPECT_TRUE(fresh.kube.get_raw(fresh.claim("data-web-0")).has_value());
  }
}

TEST_F(Drain, AScaleBackUpWhileTheCleanupRunsCancelsItKeepingTheClaimAndItsData) {
  cleanup_exit = std::nullopt;  // the cleanup keeps running
  const std::string uid = world.kube.get_raw(world.claim("data-web-2"))->at("metadata").at("uid");
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  reconcile_until(reconciler, world,
                  {"the cleanup pod running",
                   [&](const ReconcileResult&) {
                     auto pod = world.kube.get_raw({Kind::Pod, kNs, "web-2"});
                     return pod && (*pod)["status"].value("phase", "") == "Running";
                   }},
                  {.limit = 50});
  scale_to(3);
  run_to_idle(reconciler);
  const auto claim = world.kube.get_raw(world.claim("data-web-2"));
  ASSERT_TRUE(claim);
  EXPECT_EQ((*claim)["metadata"]["uid"], uid);
  EXPECT_EQ(world.cluster.volume_files(world.claim("data-web-2")),
            world.original_files["data-web-2"]);
  auto pod = world.kube.get_raw({Kind::Pod, kNs, "web-2"});
  ASSERT_TRUE(pod) << "the replica did not come back";
  EXPECT_FALSE((*pod)["metadata"]
                   .value("annotations", Json::object())
                   .contains(std::string{kScaledownPodOwnerAnnotation}))
      << "web-2 is still the cleanup pod";
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "DrainCancelled"), 1);
  EXPECT_EQ(std::ranges::count(types, "DrainedClaimDeleted"), 0);
  EXPECT_EQ(world.events.with_reason("DrainCancelled").size(), 1u);
  // Completed, and its Event says that nothing was drained.
  const auto completed = world.events.with_reason("DrainCompleted");
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_NE(completed[0].message.find("; cancelled: ordinal 2 (its claims kept)"),
            std::string::npos)
      << completed[0].message;
  EXPECT_EQ(completed[0].message.find("drained:"), std::string::npos) << completed[0].message;
  // So do last-operation and `stsresize status`.
  const Json sts = world.live_sts();
  const Json last = Json::parse(
      sts["metadata"]["annotations"][std::string{kLastOperationAnnotation}].get<std::string>());
  EXPECT_EQ(last["outcome"], "Completed");
  EXPECT_EQ(last["drained"], Json::array());
  EXPECT_EQ(last["cancelled"], Json::array({2}));
  auto row = cli::status_row(sts, {}, {});
  ASSERT_TRUE(row);
  EXPECT_EQ(row->message, "cancelled: ordinal 2 (its claims kept)");
  expect_journal_consistent();
}

TEST_F(Drain, ACleanupThatKeepsFailingEndsFailedKeepingTheClaimsAndARetryDrainsThem) {
  cleanup_exit = 1;
  scale_to(2);
  EngineSettings settings;
  settings.drain_restart_limit = 2;
  {
    Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
    run_to_idle(reconciler);
  }
  Json sts = world.live_sts();
  EXPECT_EQ(sts["metadata"]["annotations"][std::string{kPhaseAnnotation}], "Failed");
  EXPECT_EQ(sts["metadata"]["labels"][std::string{kFailedLabel}], "true");
  EXPECT_TRUE(claim_exists("data-web-2"));
  EXPECT_TRUE(claim_exists("logs-web-2"));
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, "web-2"}).has_value())
      << "the failing cleanup pod was left";
  EXPECT_TRUE(world.events.contains("DrainFailed"));
  EXPECT_EQ(world.cluster.volume_files(world.claim("data-web-2")),
            world.original_files["data-web-2"]);
  expect_journal_consistent();

  // The fault cleared, a person retries: a new drain completes.
  cleanup_exit = 0;
  const std::string operation = read_operation(sts)->value().id;
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Retry, Phase::Failed, operation, "alice", "2026-11-26T00:00:00Z", "n1"});
  });
  {
    Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
    run_to_idle(reconciler);
  }
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  EXPECT_FALSE(world.live_sts()["metadata"]["labels"].contains(std::string{kFailedLabel}));
  expect_journal_consistent();
}

// A resize scales the set to 0 for its copy; if its state is then removed, the set stays at 0
// with the stsresize.dev/original-replicas mark: that is no scale-down, and nothing is drained
// (the resize that begins again scales it back).
TEST_F(Drain, ASetAtZeroBecauseOfAResizeIsNotDrained) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kOriginalReplicasAnnotation}] = "3";
  });
  scale_to(0);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);
  EXPECT_TRUE(cleanup_pods.empty());
  for (const std::string& claim : world.claim_names()) EXPECT_TRUE(claim_exists(claim)) << claim;
  EXPECT_EQ(std::ranges::count(journal_types(), "DrainPlanned"), 0);
}

// A resize and a drain wanted at once (the templates raised and the set scaled down together):
// one operation at a time, the drain first (the resize would otherwise copy claims about to be
// drained); then the resize of the replicas that are left. No data lost.
TEST_F(Drain, AResizeAndADrainWantedTogetherRunOneAfterTheOther) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
      tmpl["spec"]["resources"]["requests"]["storage"] = "2Gi";
    }
  });
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);  // the drain
  // The drain's last annotation write wakes the controller again (a watch event): the resize.
  run_to_idle(reconciler);
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  EXPECT_EQ(moved["web-2"], world.original_files["data-web-2"]);
  for (int i = 0; i < 2; ++i) {
    for (const char* tmpl : {"data", "logs"}) {
      const std::string name = naming::claim_name(tmpl, kSts, i);
      auto claim = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(claim) << name;
      EXPECT_EQ((*claim)["spec"]["resources"]["requests"]["storage"], "2Gi") << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
    }
  }
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  ASSERT_EQ(operations->size(), 2u);
  auto first = journal.read(operations->at(0).operation_id);
  auto second = journal.read(operations->at(1).operation_id);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->at(1).type, "DrainPlanned");
  EXPECT_EQ(second->back().type, "OperationFinished");
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 2);
  expect_journal_consistent();
}

// The same, as it happens with `kubectl scale` and `kubectl annotate` run together: the request
// is read before the StatefulSet controller has observed the scale-down (the replica's pod still
// runs on its claim), so no drain may begin yet. The resize still waits for it: begun now, it
// would copy the claims of ordinal 2 that the drain takes next, and the drain would come second.
// The request says whom it waits for, the drain runs, then the resize of the two left.
TEST_F(Drain, AResizeRequestedWhileTheScaleDownIsNotObservedWaitsForTheDrain) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"]["replicas"] = 2;
    live["metadata"]["generation"] = live["metadata"].value("generation", 1) + 1;
  });
  world.request(Json{{"data", {{"storage", "2Gi"}}}, {"logs", {{"storage", "2Gi"}}}}.dump());
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  const ReconcileResult first = reconciler.reconcile(kNs, kSts);
  EXPECT_TRUE(first.is(ReconcileResult::Kind::RequeueAfter)) << first.message;
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_TRUE(operations->empty()) << "an operation began before the scale-down was observed";
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  const std::string status =
      sts["metadata"]["annotations"].value(std::string{kResizeStatusAnnotation}, "");
  EXPECT_TRUE(status.starts_with("queued: ")) << status;
  EXPECT_NE(status.find("drain of ordinal 2"), std::string::npos) << status;
  EXPECT_EQ(world.events.with_reason("ResizeRequestQueued").size(), 1u);
  // Asked again before anything changed: nothing written, said once.
  const std::string version = sts["metadata"].value("resourceVersion", "");
  (void)reconciler.reconcile(kNs, kSts);
  EXPECT_EQ(world.live_sts()["metadata"].value("resourceVersion", ""), version);
  EXPECT_EQ(world.events.with_reason("ResizeRequestQueued").size(), 1u);

  world.settle(3);
  (void)reconciler.reconcile(kNs, kSts);  // the drain begins; the request names it
  const std::string during =
      world.live_sts()["metadata"]["annotations"].value(std::string{kResizeStatusAnnotation}, "");
  EXPECT_TRUE(during.starts_with("queued: drain ")) << during;
  run_to_idle(reconciler);  // the drain
  run_to_idle(reconciler);  // then the resize
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  EXPECT_EQ(moved["web-2"], world.original_files["data-web-2"]);
  for (int i = 0; i < 2; ++i) {
    for (const char* tmpl : {"data", "logs"}) {
      const std::string name = naming::claim_name(tmpl, kSts, i);
      auto claim = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(claim) << name;
      EXPECT_EQ((*claim)["spec"]["resources"]["requests"]["storage"], "2Gi") << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
    }
  }
  expect_drain_then_resize_without_web_2();
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 2);
  EXPECT_FALSE(
      world.live_sts()["metadata"]["annotations"].contains(std::string{kResizeStatusAnnotation}));
  expect_journal_consistent();
}

// The same with the templates raised instead of a request; and with no resize wanted, a
// scale-down still under way leaves the controller idle (woken by the StatefulSet's changes),
// not polling.
TEST_F(Drain, TemplatesRaisedWhileTheScaleDownIsNotObservedWaitForTheDrainAndNothingElsePolls) {
  const auto scale_down_unobserved = [&] {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["spec"]["replicas"] = 2;
      live["metadata"]["generation"] = live["metadata"].value("generation", 1) + 1;
    });
  };
  scale_down_unobserved();
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  const ReconcileResult nothing_wanted = reconciler.reconcile(kNs, kSts);
  EXPECT_TRUE(nothing_wanted.is(ReconcileResult::Kind::Idle)) << nothing_wanted.message;

  world.kube.mutate_raw(world.sts(), [](Json& live) {
    for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
      tmpl["spec"]["resources"]["requests"]["storage"] = "2Gi";
    }
  });
  const ReconcileResult first = reconciler.reconcile(kNs, kSts);
  EXPECT_TRUE(first.is(ReconcileResult::Kind::RequeueAfter)) << first.message;
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_TRUE(operations->empty()) << "an operation began before the scale-down was observed";
  world.settle(3);
  run_to_idle(reconciler);  // the drain
  run_to_idle(reconciler);  // then the resize
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_EQ(moved["web-2"], world.original_files["data-web-2"]);
  expect_drain_then_resize_without_web_2();
  for (int i = 0; i < 2; ++i) {
    const std::string name = naming::claim_name("data", kSts, i);
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
  }
  expect_journal_consistent();
}

// A cleanup pod found on the ordinal: one still running (the old controller's, at the switch) is
// taken over, not duplicated; one that already ended before the drain began says nothing about
// the claims as they are now, and a cleanup pod of this drain runs instead.
TEST_F(Drain, AFoundCleanupPodIsTakenOverWhileItRunsAndReplacedIfItEndedBefore) {
  for (const bool ended : {false, true}) {
    SCOPED_TRACE(ended ? "ended before" : "running");
    ResizeWorld fresh;
    MemoryJournal fresh_journal;
    fresh.seed(false, "1Gi");
    fresh.kube.mutate_raw(fresh.sts(), [](Json& live) {
      live["metadata"]["annotations"][std::string{kScaledownPodTemplateAnnotation}] =
          kCleanupTemplate.dump();
      live["spec"]["replicas"] = 2;
    });
    fresh.settle(3);
    std::vector<std::string> ran;  // uids of the pods the runner ran, once each
    fresh.cluster.set_pod_runner(
        [&](const Json& pod, std::map<std::string, VolumeFiles*>&) -> std::optional<JobRun> {
          const std::string uid = pod["metadata"]["uid"];
          if (std::ranges::count(ran, uid) == 0) {
            ran.push_back(uid);
            return std::nullopt;  // its first pass: it runs a while
          }
          return JobRun{0, ""};
        });
    // What the old controller left: its cleanup pod for web-2 (its markers only).
    Json left = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "web-2"},
          {"namespace", kNs},
          {"labels", {{"scaledown-pod", "web-2"}}},
          {"annotations", {{std::string{kScaledownPodOwnerAnnotation}, "web"}}}}},
        {"spec",
         {{"restartPolicy", "OnFailure"},
          {"containers", Json::array({{{"name", "drain"}, {"image", "busybox"}}})},
          {"volumes", Json::array({{{"name", "data"},
                                    {"persistentVolumeClaim", {{"claimName", "data-web-2"}}}}})}}}};
    auto created = fresh.kube.system().create(Kind::Pod, left);
    ASSERT_TRUE(created);
    const std::string left_uid = (*created)["metadata"]["uid"];
    if (ended) {
      fresh.kube.mutate_raw({Kind::Pod, kNs, "web-2"},
                            [](Json& pod) { pod["status"]["phase"] = "Succeeded"; });
    } else {
      fresh.settle(1);  // the kubelet starts it (the runner's first pass)
    }
    fresh.clock.advance(std::chrono::seconds{5});
    Reconciler reconciler{fresh.kube, fresh_journal, fresh.clock, fresh.events};
    reconcile_until(reconciler, fresh, idle(),
                    {.limit = 300, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
    fresh.settle(3);
    EXPECT_FALSE(fresh.kube.get_raw(fresh.claim("data-web-2")).has_value());
    EXPECT_FALSE(fresh.kube.get_raw({Kind::Pod, kNs, "web-2"}).has_value());
    auto operations = fresh_journal.operations();
    ASSERT_TRUE(operations && operations->size() == 1u);
    auto records = fresh_journal.read(operations->front().operation_id);
    ASSERT_TRUE(records);
    std::vector<std::string> recorded;
    for (const JournalRecord& record : *records) {
      if (record.type == "CleanupPodCreated") recorded.push_back(record.data["uid"]);
    }
    ASSERT_EQ(recorded.size(), 1u);
    if (ended) {
      EXPECT_NE(recorded[0], left_uid) << "a cleanup pod that ended before was trusted";
      EXPECT_EQ(std::ranges::count(ran, left_uid), 0);
      EXPECT_EQ(ran.size(), 1u);
    } else {
      EXPECT_EQ(recorded[0], left_uid) << "the running cleanup pod was not taken over";
      EXPECT_EQ(ran, std::vector<std::string>{left_uid});
    }
  }
}

TEST_F(Drain, ManualModeHoldsTheDrainBeforeItsFirstCleanupPod) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kModeAnnotation}] = "manual";
  });
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);
  EXPECT_TRUE(cleanup_pods.empty());
  const Json sts = world.live_sts();
  EXPECT_EQ(sts["metadata"]["annotations"][std::string{kAwaitingApprovalAnnotation}],
            "Pending -> Draining");
  EXPECT_TRUE(claim_exists("data-web-2"));
}

// kill -9 after every mutating call of a drain (the annotation writes included), with the journal
// kept and lost: the next process finishes it, the claims of ordinal 2 go only after a cleanup
// pod Succeeded, the other claims keep their data, no cleanup pod is left.
TEST_F(Drain, ACrashAfterAnySideEffectConverges) {
  int total = 0;
  // Count the mutations of a whole drain first.
  {
    scale_to(2);
    const int before = world.kube.mutations();
    Reconciler reconciler{world.kube, journal, world.clock, world.events};
    run_to_idle(reconciler);
    total = world.kube.mutations() - before;
  }
  ASSERT_GT(total, 4);
  for (const bool keep_journal : {true, false}) {
    for (int k = 1; k < total; ++k) {
      SCOPED_TRACE("crash after mutation " + std::to_string(k) +
                   (keep_journal ? ", journal kept" : ", journal lost"));
      ResizeWorld fresh;
      MemoryJournal first_journal;
      fresh.seed(false, "1Gi");
      fresh.kube.mutate_raw(fresh.sts(), [](Json& live) {
        live["metadata"]["annotations"][std::string{kScaledownPodTemplateAnnotation}] =
            kCleanupTemplate.dump();
      });
      bool succeeded_once = false;
      fresh.cluster.set_pod_runner(
          [&](const Json&, std::map<std::string, VolumeFiles*>& volumes) -> std::optional<JobRun> {
            volumes["data"]->clear();
            succeeded_once = true;
            return JobRun{0, ""};
          });
      fresh.kube.mutate_raw(fresh.sts(), [](Json& live) { live["spec"]["replicas"] = 2; });
      fresh.settle(3);
      const int start = fresh.kube.mutations();
      fresh.kube.set_mutation_budget(k);
      {
        Reconciler reconciler{fresh.kube, first_journal, fresh.clock, fresh.events};
        reconcile_until(reconciler, fresh,
                        {"a crash",
                         [&](const ReconcileResult& r) {
                           return fresh.kube.mutations() - start >= k ||
                                  r.is(ReconcileResult::Kind::Idle);
                         }},
                        {.limit = 300,
                         .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}},
                         .terminal_fails = false});
      }
      fresh.kube.set_mutation_budget(std::nullopt);
      MemoryJournal lost;
      Journal& second = keep_journal ? static_cast<Journal&>(first_journal) : lost;
      {
        Reconciler reconciler{fresh.kube, second, fresh.clock, fresh.events};
        reconcile_until(
            reconciler, fresh, idle(),
            {.limit = 300, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
        fresh.settle(3);
      }
      EXPECT_TRUE(succeeded_once);
      EXPECT_FALSE(fresh.kube.get_raw(fresh.claim("data-web-2")).has_value());
      EXPECT_FALSE(fresh.kube.get_raw(fresh.claim("logs-web-2")).has_value());
      EXPECT_FALSE(fresh.kube.get_raw({Kind::Pod, kNs, "web-2"}).has_value());
      for (int i = 0; i < 2; ++i) {
        const std::string name = naming::claim_name("data", kSts, i);
        EXPECT_EQ(fresh.cluster.volume_files(fresh.claim(name)), fresh.original_files[name]);
      }
      const Json sts = fresh.live_sts();
      EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kStateAnnotation}))
          << sts["metadata"]["annotations"].dump();
      if (keep_journal) {
        auto operations = first_journal.operations();
        ASSERT_TRUE(operations);
        for (const auto& summary : *operations) {
          auto folded = fold(*first_journal.read(summary.operation_id), PhaseMachine::rules());
          EXPECT_TRUE(folded) << folded.error().message;
        }
      }
    }
  }
}

}  // namespace
}  // namespace stsresize
