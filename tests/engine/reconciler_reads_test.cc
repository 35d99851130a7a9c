// What one reconcile reads: the StatefulSet once at the start, and again only after a step
// changed it without the server returning it (a delete, a Scale); a create or an update returns
// the object, as the state annotation's write does.
#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
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
  // Writes: the operation's start, the plan, Planning -> ScalingDown (annotations), replicas.
  EXPECT_EQ(world.kube.calls(Verb::Update, Kind::StatefulSet), 4);
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

}  // namespace
}  // namespace stsresize
