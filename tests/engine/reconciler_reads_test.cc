// What one reconcile reads: the StatefulSet once at the start, and again only after a step
// changed it without the server returning it (a delete, a Scale); a create or an update returns
// the object, as the state annotation's write does.
#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

TEST(ReconcilerReads, TheStatefulSetIsReadOnceWhenEveryWriteReturnedIt) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);  // copy path: Planning, then ScalingDown sets replicas
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

// The plan and Planning -> ScalingDown are journaled; the process dies before the one write
// that carries them (made before the replicas' update). The next process finds the annotation
// at an earlier sequence of its own journal and continues from the journal: no Resumed, no
// plan made twice, no Warning that someone changed the state.
TEST(ReconcilerReads, AProcessThatDiedBeforeTheAnnotationWriteIsContinuedFromItsJournal) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  MemoryJournal journal;
  // The operation's start is written; every later write of the StatefulSet fails.
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
  const std::string id = (*annotated)->id;
  auto before = journal.read(id);
  ASSERT_TRUE(before);
  auto journaled = fold(*before, PhaseMachine::rules());
  ASSERT_TRUE(journaled) << journaled.error().message;
  ASSERT_EQ(journaled->phase, Phase::ScalingDown);
  // The annotation as the start wrote it: the plan and a transition behind.
  ASSERT_EQ((*annotated)->phase, Phase::Planning);
  ASSERT_EQ((*annotated)->path, Path::Undecided);
  ASSERT_EQ(k8s::spec_replicas(world.live_sts()).value_or(-1), 3);

  Reconciler next{world.kube, journal, world.clock, world.events};
  ASSERT_TRUE(next.reconcile(kNs, kSts).is(ReconcileResult::Kind::RequeueAfter));

  EXPECT_EQ(k8s::spec_replicas(world.live_sts()).value_or(-1), 0);
  auto phase = k8s::annotation(world.live_sts(), kPhaseAnnotation);
  ASSERT_TRUE(phase && phase->has_value());
  EXPECT_EQ(**phase, "ScalingDown");
  EXPECT_FALSE(world.events.contains("StateRestored"));
  EXPECT_FALSE(world.events.contains("JournalMismatch"));
  auto after = journal.read(id);
  ASSERT_TRUE(after);
  int resumed = 0, planned = 0;
  for (const JournalRecord& record : *after) {
    resumed += record.type == "Resumed";
    planned += record.type == "Planned";
  }
  EXPECT_EQ(resumed, 0);
  EXPECT_EQ(planned, 1);
  auto folded = fold(*after, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::ScalingDown);
}

}  // namespace
}  // namespace stsresize
