#include "adapters/controller/attention.h"

#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/cached_fields.h"
#include "engine/drain_plan.h"
#include "engine/k8s_objects.h"
#include "engine/resize_request.h"
#include "engine/vocabulary.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using testing::ResizeWorld;

std::vector<Json> trimmed(Kind kind, const std::vector<Json>& objects) {
  std::vector<Json> out;
  for (const Json& object : objects) out.push_back(trim_for_cache(kind, object));
  return out;
}

// The controller decides on cached objects, which keep only the fields it reads
// (engine/cached_fields.h): every case here also checks that the decision on them is the one
// on the full objects.
Attention attention_of(const ResizeWorld& world) {
  const Json sts = world.live_sts();
  const auto claims = world.kube.list_raw(Kind::PersistentVolumeClaim, testing::kNs);
  const auto classes = world.kube.list_raw(Kind::StorageClass);
  const Attention full = needs_attention(sts, claims, classes);
  const Attention cached = needs_attention(trim_for_cache(Kind::StatefulSet, sts),
                                           trimmed(Kind::PersistentVolumeClaim, claims),
                                           trimmed(Kind::StorageClass, classes));
  EXPECT_EQ(cached, full) << "decided on the trimmed objects: " << to_string(cached)
                          << ", on the full ones: " << to_string(full);
  return full;
}

void set_annotation(ResizeWorld& world, std::string_view key, std::string_view value) {
  world.kube.mutate_raw(world.sts(),
                        [&](Json& sts) { ASSERT_TRUE(k8s::set_annotation(sts, key, value)); });
}

TEST(Attention, IdleStatefulSetWithClaimsAsLargeAsTheirTemplatesIsLeftAlone) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  EXPECT_EQ(attention_of(world), Attention::None);
}

TEST(Attention, TemplatesLargerThanClaimsAreDetected) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  EXPECT_EQ(attention_of(world), Attention::Detected);
}

TEST(Attention, AShrinkIsDetectedSoThatTheRefusalIsReported) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "512Mi");
  EXPECT_EQ(attention_of(world), Attention::Detected);
}

// Opted in to the drain: claims left outside the replicas by a scale-down are reconciled (the
// reconciler decides with the live pods whether they can be drained yet); without the template,
// or with every claim a replica's, nothing is.
TEST(Attention, ClaimsLeftByAScaleDownAreDetectedOnlyWhenTheStatefulSetOptsInToTheDrain) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  world.kube.mutate_raw(world.sts(), [](Json& sts) { sts["spec"]["replicas"] = 2; });
  EXPECT_EQ(attention_of(world), Attention::None);
  set_annotation(world, kScaledownPodTemplateAnnotation,
                 R"({"spec":{"containers":[{"name":"c","image":"busybox"}]}})");
  EXPECT_EQ(attention_of(world), Attention::Detected);
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["spec"]["replicas"] = 3;
    sts["metadata"]["finalizers"] = Json::array({std::string{kScaledownFinalizer}});
  });
  EXPECT_EQ(attention_of(world), Attention::None);
}

// The drain's finalizer to add (opted in), to remove (opted out), or holding a delete: the
// reconciler settles it.
TEST(Attention, TheDrainsFinalizerToAddToRemoveOrHoldingADeleteIsDetected) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  set_annotation(world, kScaledownPodTemplateAnnotation,
                 R"({"spec":{"containers":[{"name":"c","image":"busybox"}]}})");
  EXPECT_EQ(attention_of(world), Attention::Detected);  // to add
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["metadata"]["finalizers"] = Json::array({std::string{kScaledownFinalizer}});
  });
  EXPECT_EQ(attention_of(world), Attention::None);
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z";
  });
  EXPECT_EQ(attention_of(world), Attention::Detected);  // holding a delete
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["metadata"].erase("deletionTimestamp");
    sts["metadata"]["annotations"].erase(std::string{kScaledownPodTemplateAnnotation});
  });
  EXPECT_EQ(attention_of(world), Attention::Detected);  // opted out: to remove
}

// The claim policy opts in without a template: claims left outside the replicas are reconciled;
// an invalid policy is too (the reconciler warns about it), even with nothing to drain.
TEST(Attention, TheClaimPolicyOptsInToTheDrainAndAnInvalidOneIsReported) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  set_annotation(world, kScaledownClaimsAnnotation, "delete-after=30m");
  EXPECT_EQ(attention_of(world), Attention::None);
  world.kube.mutate_raw(world.sts(), [](Json& sts) { sts["spec"]["replicas"] = 2; });
  EXPECT_EQ(attention_of(world), Attention::Detected);
  world.kube.mutate_raw(world.sts(), [](Json& sts) { sts["spec"]["replicas"] = 3; });
  set_annotation(world, kScaledownClaimsAnnotation, "delete-after=later");
  EXPECT_EQ(attention_of(world), Attention::Detected);
}

// A cleanup pod template with whenScaled Delete: reconciled without a scale-down until the
// refusal is recorded in stsresize.dev/resize-status, then left alone; reconciled again when
// whenScaled changes, so that the refusal is taken back.
TEST(Attention, ATemplateWithWhenScaledDeleteIsReconciledUntilTheRefusalIsRecorded) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  set_annotation(world, kScaledownPodTemplateAnnotation,
                 R"({"spec":{"containers":[{"name":"c","image":"busybox"}]}})");
  // (the reconciler has added the drain's finalizer)
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["metadata"]["finalizers"] = Json::array({std::string{kScaledownFinalizer}});
  });
  EXPECT_EQ(attention_of(world), Attention::None);
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Delete";
  });
  EXPECT_EQ(attention_of(world), Attention::Detected);
  set_annotation(world, kResizeStatusAnnotation,
                 drain_refusal_status(*drain_refusal(world.live_sts())));
  EXPECT_EQ(attention_of(world), Attention::None);
  // Even scaled down: Kubernetes deletes those claims, nothing is drained.
  world.kube.mutate_raw(world.sts(), [](Json& sts) { sts["spec"]["replicas"] = 2; });
  EXPECT_EQ(attention_of(world), Attention::None);
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["spec"]["replicas"] = 3;
    sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Retain";
  });
  EXPECT_EQ(attention_of(world), Attention::Detected);
}

// An invalid claim policy: reconciled until its refusal is recorded, again when the value
// changes (a new refusal) and when it is fixed (the refusal taken back).
TEST(Attention, AnInvalidClaimPolicyIsReconciledUntilItsRefusalIsRecordedAndWhenFixed) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, /*to_size=*/"1Gi");
  set_annotation(world, kScaledownClaimsAnnotation, "delete-after=soon");
  EXPECT_EQ(attention_of(world), Attention::Detected);
  set_annotation(world, kResizeStatusAnnotation,
                 drain_refusal_status(*drain_refusal(world.live_sts())));
  EXPECT_EQ(attention_of(world), Attention::None);
  set_annotation(world, kScaledownClaimsAnnotation, "delete-after=later");
  EXPECT_EQ(attention_of(world), Attention::Detected);
  set_annotation(world, kResizeStatusAnnotation,
                 drain_refusal_status(*drain_refusal(world.live_sts())));
  EXPECT_EQ(attention_of(world), Attention::None);
  set_annotation(world, kScaledownClaimsAnnotation, "delete-after=1h");
  EXPECT_EQ(attention_of(world), Attention::Detected);
}

TEST(Attention, AnOperationUnderWayNeedsAttentionUntilItEnds) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "2Gi");
  MemoryJournal journal;
  Reconciler reconciler(world.kube, journal, world.clock, world.events);
  auto first = reconciler.reconcile(testing::kNs, testing::kSts);
  ASSERT_TRUE(first.is(ReconcileResult::Kind::RequeueAfter)) << first.message;
  EXPECT_EQ(attention_of(world), Attention::Operation);
  world.settle(2);
  testing::reconcile_until(reconciler, world, testing::idle(),
                           {.limit = 60, .terminal_fails = false});
  EXPECT_EQ(attention_of(world), Attention::None);
}

// The rebind path leaves no backup claim once Recreating ends (each claim is on its copy's
// volume): with the state then removed, the claims created again by the operation are what
// says it did not complete, so that the reconciler continues it from the journal.
TEST(Attention, AnOperationWhoseStateWasRemovedAfterItsClaimsWereRebornNeedsAttention) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  MemoryJournal journal;
  Reconciler reconciler(world.kube, journal, world.clock, world.events);
  testing::reconcile_until(reconciler, world,
                           {"phase Restoring",
                            [&](const ReconcileResult&) {
                              auto op = read_operation(world.live_sts());
                              return op && op->has_value() && (*op)->phase == Phase::Restoring;
                            }},
                           {.limit = 200});
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"].erase(std::string{kStateAnnotation});
    live["metadata"]["annotations"].erase(std::string{kPhaseAnnotation});
  });
  EXPECT_EQ(attention_of(world), Attention::Operation);
  testing::reconcile_until(reconciler, world, testing::idle(),
                           {.limit = 200, .terminal_fails = false});
  EXPECT_EQ(attention_of(world), Attention::None);
}

TEST(Attention, AFailedOperationNeedsAttentionOnlyWhileAnAdvanceRequestWaitsForAnAnswer) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    Operation op;
    op.id = "web-0123abcd";
    op.ns = testing::kNs;
    op.statefulset = testing::kSts;
    op.sts_uid = live["metadata"]["uid"].get<std::string>();
    op.phase = Phase::Failed;
    op.failure = "copy Job failed";
    live = with_operation(live, op);
  });
  EXPECT_EQ(attention_of(world), Attention::None);
  set_annotation(world, "stsresize.dev/advance", "{}");
  EXPECT_EQ(attention_of(world), Attention::Operation);
}

TEST(Attention, AnExplicitRequestAndAnUnreadableStateAreBothReconciled) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "1Gi");
  set_annotation(world, kResizeRequestAnnotation, R"({"data":{"storage":"5Gi"}})");
  EXPECT_EQ(attention_of(world), Attention::Request);
  set_annotation(world, kStateAnnotation, "{not json");
  EXPECT_EQ(attention_of(world), Attention::Invalid);
}

TEST(Attention, AFailedStatefulSetIsNeverResizedAgain) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi");
  world.kube.mutate_raw(world.sts(),
                        [](Json& sts) { ASSERT_TRUE(k8s::set_label(sts, kFailedLabel, "true")); });
  EXPECT_EQ(attention_of(world), Attention::None);
}

TEST(RefusalFingerprint, IgnoresStatusButNotSpecLabelsOrAnnotations) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "512Mi");
  const Json before = world.live_sts();
  Json status_changed = before;
  status_changed["status"]["readyReplicas"] = 1;
  status_changed["metadata"]["resourceVersion"] = "999999";
  EXPECT_EQ(refusal_fingerprint(status_changed), refusal_fingerprint(before));
  Json spec_changed = before;
  spec_changed["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] =
      "2Gi";
  EXPECT_NE(refusal_fingerprint(spec_changed), refusal_fingerprint(before));
  Json annotated = before;
  annotated["metadata"]["annotations"]["note"] = "x";
  EXPECT_NE(refusal_fingerprint(annotated), refusal_fingerprint(before));
}

// The cache drops the pod template (engine/cached_fields.h), but a change to it may answer a
// refusal the reconciler read live: the generation the API server raises stands for it.
TEST(RefusalFingerprint, ChangesWithAChangeTheCacheDoesNotKeep) {
  ResizeWorld world;
  world.seed(/*expandable=*/true, "512Mi");
  Json before = world.live_sts();
  before["metadata"]["generation"] = 1;
  Json template_changed = before;
  template_changed["spec"]["template"]["spec"]["nodeSelector"] = {{"disk", "fast"}};
  template_changed["metadata"]["generation"] = 2;
  EXPECT_NE(refusal_fingerprint(trim_for_cache(Kind::StatefulSet, template_changed)),
            refusal_fingerprint(trim_for_cache(Kind::StatefulSet, before)));
}

}  // namespace
}  // namespace stsresize
