// What one reconcile reads: the StatefulSet once at the start, and again only after a step
// changed it without the server returning it (a delete, a Scale); a create or an update returns
// the object, as the state annotation's write does.
#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

TEST(ReconcilerReads, TheStatefulSetIsReadOnceWhenEveryWriteReturnedIt) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);  // copy path: Planning, then ScalingDown sets replicas
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kPreCopyAnnotation}] = "false";  // no Jobs first
  });
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};

  const ReconcileResult result = reconciler.reconcile(kNs, kSts);

  ASSERT_TRUE(result.is(ReconcileResult::Kind::RequeueAfter)) << result.message;
  auto phase = k8s::annotation(world.live_sts(), kPhaseAnnotation);
  ASSERT_TRUE(phase && phase->has_value());
  EXPECT_EQ(**phase, "ScalingDown");
  EXPECT_EQ(k8s::spec_replicas(world.live_sts()).value_or(-1), 0);
  // Writes: the operation's start; the plan and Planning -> ScalingDown in one annotation
  // write, made before the replicas' update (the first act after them); the replicas.
  EXPECT_EQ(world.kube.calls(Verb::Update, Kind::StatefulSet), 3);
  // Reads: at the start only; every write after it returned the object (the replicas' update
  // too, whose answer ScalingDown then reads).
  EXPECT_EQ(world.kube.calls(Verb::Get, Kind::StatefulSet), 1);
}

TEST(ReconcilerReads, AStepSeesTheReplicasItSetInTheStepAfter) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  ASSERT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::RequeueAfter));
  const int writes = world.kube.mutations();
  // Pods still running: the next reconcile finds replicas already 0 and sets nothing again.
  ASSERT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::RequeueAfter));
  EXPECT_EQ(world.kube.mutations(), writes);
}

// Recreating journals the original policies of data-web-0's two volumes (VolumeRetained,
// source and copy); the process dies on the write that carries them, made before the first is
// set to Retain. The next process finds the annotation at an earlier sequence of its own
// journal and continues from the journal: no Resumed, each policy journaled once, no Warning
// that someone changed the state.
TEST(ReconcilerReads, AProcessThatDiedBeforeTheAnnotationWriteIsContinuedFromItsJournal) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  MemoryJournal journal;
  set_mode(world, "manual");
  {
    Reconciler approved{world.kube, journal, world.clock, world.events};
    for (int i = 0; i < 30; ++i) {
      reconcile_until(approved, world,
                      {"awaiting approval",
                       [&](const ReconcileResult&) { return awaiting(world).has_value(); }},
                      {.limit = 100});
      auto waiting = awaiting(world);
      ASSERT_TRUE(waiting);
      if (waiting->from == Phase::BackingUp) break;
      ASSERT_TRUE(approve_waiting(world, "alice", "approve-" + std::to_string(i)));
    }
  }
  ASSERT_EQ(awaiting(world)->to, Phase::Recreating);
  ASSERT_TRUE(approve_waiting(world, "alice", "recreate"));
  // The transition (with the approval) is written; every later write of the StatefulSet fails.
  const FaultRule dead{.verb = Verb::Update,
                       .kind = Kind::StatefulSet,
                       .times = FaultRule::kForever,
                       .error = KubeError{KubeErrorCode::Unreachable, "injected crash"}};
  world.kube.inject({.verb = Verb::Update, .kind = Kind::StatefulSet, .action = [&] {
                       world.kube.inject(dead);
                     }});
  {
    Reconciler dying{world.kube, journal, world.clock, world.events};
    EXPECT_TRUE(dying.reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
  }
  world.kube.clear_faults();
  auto annotated = read_operation(world.live_sts());
  ASSERT_TRUE(annotated && annotated->has_value());
  ASSERT_EQ((*annotated)->phase, Phase::Recreating);
  ASSERT_TRUE((*annotated)->claims[0].source_policy.empty());
  const std::string id = (*annotated)->id;
  const auto count = [&](std::string_view type) {
    auto records = journal.read(id);
    EXPECT_TRUE(records);
    int n = 0;
    for (const JournalRecord& record : *records) n += record.type == type;
    return n;
  };
  ASSERT_EQ(count("VolumeRetained"), 2);

  set_mode(world, "auto");
  Reconciler next{world.kube, journal, world.clock, world.events};
  reconcile_to_idle(next, world, 200);

  EXPECT_EQ(count("Resumed"), 0);
  EXPECT_EQ(count("VolumeRetained"), 2 * static_cast<int>((*annotated)->claims.size()));
  EXPECT_FALSE(world.events.contains("StateRestored"));
  EXPECT_FALSE(world.events.contains("JournalMismatch"));
  auto records = journal.read(id);
  ASSERT_TRUE(records);
  auto folded = fold(*records, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

}  // namespace
}  // namespace stsresize
