// The scale-down drain without a cleanup pod, on the simulated cluster: the claim policy
// stsresize.dev/scaledown-claims: delete-after=<duration> deletes the claims a scale-down left
// only once their ordinal has been gone that long (a scale back up inside it keeps them), never
// while a pod uses them; an invalid policy is a Warning and nothing else. And a StatefulSet with
// a cleanup pod template and whenScaled Delete, which cannot be drained: said once, at once,
// without a scale-down, and nothing drained.
#include <gtest/gtest.h>

#include <algorithm>

#include "adapters/app/status_view.h"
#include "engine/annotations.h"
#include "engine/drain_plan.h"
#include "engine/fold.h"
#include "engine/text.h"
#include "engine/vocabulary.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/drain_world.h"

namespace stsresize {
namespace {

using namespace testing;
using std::chrono::minutes;

// The world of tests/support/drain_world.h without a cleanup pod template: the claim policy
// alone. Any pod the cluster runs through the pod runner (a user's bare pod) keeps running.
class DrainPolicy : public ::testing::Test, protected DrainWorld {
 protected:
  EngineSettings settings;

  DrainPolicy() : DrainWorld({.cleanup_template = false}) {}

  void SetUp() override {
    cleanup_exit = std::nullopt;
    // Shorter than the delay: waiting out a long delete-after is not a drain that hangs.
    settings.drain_timeout = minutes{1};
  }

  ReconcileResult until_draining(Reconciler& reconciler) {
    return until_phase(reconciler, "Draining");
  }

  bool ran_cleanup_pod() const {
    return std::ranges::any_of(cleanup_pods, [](const Json& pod) {
      return pod["metadata"]
          .value("annotations", Json::object())
          .contains(std::string{kScaledownPodOwnerAnnotation});
    });
  }

  void expect_replicas_untouched(int replicas) {
    for (int i = 0; i < replicas; ++i) {
      for (const char* tmpl : {"data", "logs"}) {
        const std::string name = naming::claim_name(tmpl, kSts, i);
        ASSERT_TRUE(claim_exists(name)) << name;
        EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name])
            << name;
      }
    }
  }
};

TEST_F(DrainPolicy, DeleteAfterDeletesTheClaimsOnlyOnceTheOrdinalWasGoneThatLong) {
  annotate(kScaledownClaimsAnnotation, "delete-after=10m");
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
  ReconcileResult result = until_draining(reconciler);
  result = reconciler.reconcile(kNs, kSts);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::RequeueAfter)) << result.message;
  // Called back when the delay is over, not polled.
  EXPECT_GT(result.after, minutes{9});
  EXPECT_LE(result.after, minutes{10});

  world.clock.advance(minutes{9});
  result = reconciler.reconcile(kNs, kSts);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::RequeueAfter)) << result.message;
  EXPECT_LE(result.after, minutes{1});
  EXPECT_TRUE(claim_exists("data-web-2"));
  EXPECT_TRUE(claim_exists("logs-web-2"));
  EXPECT_EQ(phase(), "Draining");

  world.clock.advance(minutes{1});
  run_to_idle(reconciler);
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  expect_replicas_untouched(2);
  EXPECT_FALSE(ran_cleanup_pod());
  EXPECT_FALSE(world.live_sts()["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  EXPECT_TRUE(world.events.contains("DrainCompleted"));
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "CleanupPodCreated"), 0);
  EXPECT_EQ(std::ranges::count(types, "CleanupSucceeded"), 1);
  EXPECT_EQ(std::ranges::count(types, "DrainedClaimDeleted"), 2);
  // Each claim's delete is an Event naming the policy, not a cleanup pod that never ran.
  const auto deletes = world.events.with_reason("SuccessfulDelete");
  std::size_t claim_deletes = 0;
  for (const auto& event : deletes) {
    if (event.message.find("claim ") == std::string::npos) continue;
    ++claim_deletes;
    EXPECT_NE(event.message.find("gone for 10m (" + std::string{kScaledownClaimsAnnotation} + ")"),
              std::string::npos)
        << event.message;
    EXPECT_EQ(event.message.find("cleanup pod web-2"), std::string::npos) << event.message;
  }
  EXPECT_EQ(claim_deletes, 2u);
  expect_journal_consistent();
}

TEST_F(DrainPolicy, AScaleBackUpInsideTheDelayKeepsTheClaimItsUidAndItsData) {
  annotate(kScaledownClaimsAnnotation, "delete-after=10m");
  const std::string uid = claim_uid("data-web-2");
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
  until_draining(reconciler);
  world.clock.advance(minutes{5});
  (void)reconciler.reconcile(kNs, kSts);
  scale_to(3);
  run_to_idle(reconciler);
  // Long after the delay: the replica is back, nothing of it deleted.
  world.clock.advance(minutes{30});
  run_to_idle(reconciler);

  ASSERT_TRUE(claim_exists("data-web-2"));
  EXPECT_EQ(claim_uid("data-web-2"), uid);
  EXPECT_EQ(world.cluster.volume_files(world.claim("data-web-2")),
            world.original_files["data-web-2"]);
  EXPECT_TRUE(claim_exists("logs-web-2"));
  EXPECT_TRUE(world.kube.get_raw({Kind::Pod, kNs, "web-2"}).has_value())
      << "the replica did not come back";
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "DrainCancelled"), 1);
  EXPECT_EQ(std::ranges::count(types, "DrainedClaimDeleted"), 0);
  // Cancelled by the scale-up, not ended by a failure.
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"].value("labels", Json::object()).contains(std::string{kFailedLabel}));
  EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  EXPECT_TRUE(world.events.contains("DrainCompleted"));
  expect_journal_consistent();
}

TEST_F(DrainPolicy, APodUsingTheClaimsHoldsTheirDeletePastTheDelay) {
  annotate(kScaledownClaimsAnnotation, "delete-after=10m");
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
  until_draining(reconciler);
  // Someone mounts the claim while the drain waits (a debug pod, a backup tool).
  world.kube.put_raw(
      Kind::Pod,
      Json{{"metadata", {{"name", "inspect"}, {"namespace", kNs}}},
           {"spec",
            {{"containers", Json::array({{{"name", "sh"}, {"image", "busybox"}}})},
             {"volumes",
              Json::array(
                  {{{"name", "d"}, {"persistentVolumeClaim", {{"claimName", "data-web-2"}}}}})}}},
           {"status", {{"phase", "Running"}}}});
  world.clock.advance(minutes{10});
  for (int i = 0; i < 10; ++i) {
    const ReconcileResult result = reconciler.reconcile(kNs, kSts);
    EXPECT_TRUE(result.is(ReconcileResult::Kind::RequeueAfter)) << result.message;
    world.settle(1);
  }
  EXPECT_TRUE(claim_exists("data-web-2"));
  EXPECT_TRUE(claim_exists("logs-web-2"));
  EXPECT_EQ(phase(), "Draining");
  EXPECT_EQ(std::ranges::count(journal_types(), "CleanupSucceeded"), 0);

  // The pod gone, the claims go.
  world.kube.mutate_raw({Kind::Pod, kNs, "inspect"}, [](Json& pod) {
    pod["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z";
  });
  run_to_idle(reconciler);
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_FALSE(claim_exists("logs-web-2"));
  expect_replicas_untouched(2);
  expect_journal_consistent();
}

// kill -9 after every mutating call of a drain by claim policy (annotation writes, claim
// deletes), with the journal kept and lost: the next process finishes it, the claims of ordinal
// 2 go, the replicas' claims keep their data, and no claim went before the delay.
TEST_F(DrainPolicy, ACrashAfterAnySideEffectConverges) {
  auto prepare = [](ResizeWorld& w) {
    w.seed(false, "1Gi");
    w.kube.mutate_raw(w.sts(), [](Json& live) {
      live["metadata"]["annotations"][std::string{kScaledownClaimsAnnotation}] = "delete-after=1m";
      live["spec"]["replicas"] = 2;
    });
    w.settle(3);
  };
  const Rounds rounds{.limit = 300, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}};
  int total = 0;
  {
    ResizeWorld w;
    MemoryJournal j;
    prepare(w);
    const int before = w.kube.mutations();
    Reconciler reconciler{w.kube, j, w.clock, w.events};
    reconcile_until(reconciler, w, idle(), rounds);
    total = w.kube.mutations() - before;
    w.settle(3);
    EXPECT_FALSE(w.kube.get_raw(w.claim("data-web-2")).has_value());
  }
  ASSERT_GT(total, 3);
  for (const bool keep_journal : {true, false}) {
    for (int k = 1; k < total; ++k) {
      SCOPED_TRACE("crash after mutation " + std::to_string(k) +
                   (keep_journal ? ", journal kept" : ", journal lost"));
      ResizeWorld w;
      MemoryJournal first;
      prepare(w);
      const TimePoint scaled = w.clock.now();
      const int start = w.kube.mutations();
      w.kube.set_mutation_budget(k);
      {
        Reconciler reconciler{w.kube, first, w.clock, w.events};
        Rounds until_crash = rounds;
        until_crash.terminal_fails = false;
        reconcile_until(reconciler, w,
                        {"a crash",
                         [&](const ReconcileResult& r) {
                           return w.kube.mutations() - start >= k ||
                                  r.is(ReconcileResult::Kind::Idle);
                         }},
                        until_crash);
      }
      w.kube.set_mutation_budget(std::nullopt);
      MemoryJournal lost;
      Journal& second = keep_journal ? static_cast<Journal&>(first) : lost;
      {
        Reconciler reconciler{w.kube, second, w.clock, w.events};
        reconcile_until(reconciler, w, idle(), rounds);
        w.settle(3);
      }
      EXPECT_FALSE(w.kube.get_raw(w.claim("data-web-2")).has_value());
      EXPECT_FALSE(w.kube.get_raw(w.claim("logs-web-2")).has_value());
      for (const Mutation& m : w.kube.history()) {
        if (m.actor == Actor::Client && m.verb == Verb::Remove &&
            m.ref.kind == Kind::PersistentVolumeClaim) {
          EXPECT_GE(m.time, scaled + minutes{1}) << to_string(m.ref);
        }
      }
      for (int i = 0; i < 2; ++i) {
        const std::string name = naming::claim_name("data", kSts, i);
        EXPECT_EQ(w.cluster.volume_files(w.claim(name)), w.original_files[name]);
      }
      EXPECT_FALSE(w.live_sts()["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
      if (keep_journal) {
        auto operations = first.operations();
        ASSERT_TRUE(operations);
        for (const auto& summary : *operations) {
          auto folded = fold(*first.read(summary.operation_id), PhaseMachine::rules());
          EXPECT_TRUE(folded) << folded.error().message;
        }
      }
    }
  }
}

// Said once (a Warning, and stsresize.dev/resize-status for `stsresize status`), not on every
// reconcile; nothing drained; taken back once the value is fixed.
TEST_F(DrainPolicy, AnInvalidPolicyIsAWarningQuotingItAndChangesNothing) {
  for (const std::string& value :
       std::vector<std::string>{"delete-after=soon", "delete-after=30", "keep-for=1h",
                                "delete-after=0", "delete-after=" + std::string(300, '9')}) {
    SCOPED_TRACE(value);
    world.events.clear();
    annotate(kScaledownClaimsAnnotation, value);
    scale_to(2);
    Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
    for (int i = 0; i < 3; ++i) {
      const ReconcileResult result = reconciler.reconcile(kNs, kSts);
      EXPECT_TRUE(result.is(ReconcileResult::Kind::Idle)) << result.message;
      world.settle(1);
    }
    const auto warnings = world.events.with_reason("InvalidDrain");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].severity, EventSeverity::Warning);
    EXPECT_NE(warnings[0].message.find(std::string{kScaledownClaimsAnnotation}), std::string::npos);
    EXPECT_NE(warnings[0].message.find(quote(value)), std::string::npos) << warnings[0].message;
    EXPECT_LT(warnings[0].message.size(), 400u);
    const Json sts = world.live_sts();
    auto row = cli::status_row(sts, {}, {});
    ASSERT_TRUE(row);
    EXPECT_EQ(row->kind, cli::StatusKind::Refused);
    EXPECT_NE(row->message.find(quote(value)), std::string::npos) << row->message;
    EXPECT_TRUE(claim_exists("data-web-2"));
    EXPECT_TRUE(claim_exists("logs-web-2"));
    EXPECT_TRUE(journal_types().empty());
    EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  }
  // Fixed: the refusal is taken back, and the drain follows.
  annotate(kScaledownClaimsAnnotation, "delete-after=1m");
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
  until_draining(reconciler);
  EXPECT_FALSE(
      world.live_sts()["metadata"]["annotations"].contains(std::string{kResizeStatusAnnotation}));
}

// A bad claim policy holds no resize: the resize request is served (and plans the claims of
// the removed ordinal too, as it does for any StatefulSet not drained).
TEST_F(DrainPolicy, AnInvalidPolicyHoldsNoResize) {
  annotate(kScaledownClaimsAnnotation, "delete-after=soon");
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kResizeRequestAnnotation}] =
        R"({"data":{"storage":"2Gi"}})";
  });
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
  run_to_idle(reconciler);
  EXPECT_EQ(world.events.with_reason("InvalidDrain").size(), 1u);
  EXPECT_TRUE(world.events.contains("ResizeCompleted"));
  const Json claim = *world.kube.get_raw(world.claim("data-web-0"));
  EXPECT_EQ(claim["spec"]["resources"]["requests"]["storage"], "2Gi");
  expect_journal_consistent();
}

// The template wins over the claim policy, with a Warning: its cleanup pod drains the ordinal.
TEST_F(DrainPolicy, WithACleanupTemplateThePolicyIsIgnoredWithAWarning) {
  cleanup_exit = 0;  // the cleanup pod succeeds
  annotate(kScaledownPodTemplateAnnotation, kCleanupTemplate.dump());
  annotate(kScaledownClaimsAnnotation, "delete-after=10h");
  scale_to(2);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  run_to_idle(reconciler);
  EXPECT_TRUE(ran_cleanup_pod());
  EXPECT_FALSE(claim_exists("data-web-2"));
  EXPECT_EQ(world.events.with_reason("DrainPolicyIgnored").size(), 1u);
  expect_journal_consistent();
}

TEST_F(DrainPolicy, ATemplateWithWhenScaledDeleteIsRefusedOnceWithoutAScaleDownAndNotDrained) {
  annotate(kScaledownPodTemplateAnnotation, kCleanupTemplate.dump());
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Delete";
  });
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  for (int i = 0; i < 5; ++i) {
    const ReconcileResult result = reconciler.reconcile(kNs, kSts);
    EXPECT_FALSE(result.is(ReconcileResult::Kind::Retry)) << result.message;
    world.settle(1);
  }
  const auto warnings = world.events.with_reason("DrainImpossible");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].severity, EventSeverity::Warning);
  EXPECT_NE(warnings[0].message.find("whenScaled Delete"), std::string::npos);
  Json sts = world.live_sts();
  EXPECT_EQ(sts["metadata"]["annotations"][std::string{kResizeStatusAnnotation}],
            drain_refusal_status(*drain_refusal(sts)));
  // `stsresize status` shows it.
  auto row = cli::status_row(sts, {}, {});
  ASSERT_TRUE(row);
  EXPECT_EQ(row->kind, cli::StatusKind::Refused);
  EXPECT_NE(row->message.find("whenScaled Delete"), std::string::npos);

  // A scale-down: Kubernetes deletes the claims with the pods; stsresize runs nothing.
  scale_to(2);
  run_to_idle(reconciler);
  EXPECT_FALSE(ran_cleanup_pod());
  EXPECT_TRUE(journal_types().empty());
  EXPECT_EQ(world.events.with_reason("DrainImpossible").size(), 1u);

  // Set to Retain: the refusal is taken back.
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Retain";
  });
  (void)reconciler.reconcile(kNs, kSts);
  sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kResizeStatusAnnotation}));
}

}  // namespace
}  // namespace stsresize
