// The /scale subresource part of the Kubernetes contract (same fixture, so every instantiation
// runs it). Checked against kube-apiserver's StatefulSet ScaleREST (scaleFromStatefulSet: the
// Scale carries the StatefulSet's name, namespace, uid, resourceVersion and creationTimestamp,
// spec.replicas, status.replicas and the selector as a string; an update sets spec.replicas with
// the Scale's resourceVersion as the precondition).
#include "tests/contract/kubernetes_contract.h"
#include "tests/support/kube_assertions.h"

namespace stsresize::contract {
namespace {

using test_support::rv;

Json scaled_statefulset(const std::string& ns, const std::string& name) {
  const Json labels = {{"app", name}};
  Json selector = {
      {"matchLabels", labels},
      {"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"db", "cache"}}}}}};
  Json template_labels = labels;
  template_labels["tier"] = "db";
  return Json{
      {"apiVersion", "apps/v1"},
      {"kind", "StatefulSet"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec",
       {{"replicas", 0},
        {"serviceName", name},
        {"selector", selector},
        {"template",
         {{"metadata", {{"labels", template_labels}}},
          {"spec",
           {{"containers", {{{"name", "main"}, {"image", "registry.k8s.io/pause:3.10"}}}}}}}}}}};
}

TEST_P(KubernetesContract, ScaleOfAStatefulSetMirrorsItsReplicasMetadataAndSelector) {
  auto created = kube().create(Kind::StatefulSet, scaled_statefulset(ns(), "scaled"));
  ASSERT_OK(created);
  const ObjectRef ref{Kind::StatefulSet, ns(), "scaled"};
  // On a real cluster the StatefulSet controller writes a new object's status at a moment of
  // its own: the Scale is compared with the object read just before and just after it, once
  // the two reads agree.
  KubeResult<Json> scale;
  std::string live_version;
  for (int attempt = 0; live_version.empty(); ++attempt) {
    ASSERT_LT(attempt, 20) << "the StatefulSet kept changing";
    auto before = kube().get(ref);
    ASSERT_OK(before);
    scale = kube().get_scale(ref);
    ASSERT_OK(scale);
    auto after = kube().get(ref);
    ASSERT_OK(after);
    if (rv(*before) == rv(*after)) live_version = rv(*after);
  }
  EXPECT_EQ(scale->value("apiVersion", ""), "autoscaling/v1");
  EXPECT_EQ(scale->value("kind", ""), "Scale");
  const Json& metadata = (*scale)["metadata"];
  EXPECT_EQ(metadata["name"], "scaled");
  EXPECT_EQ(metadata["namespace"], ns());
  EXPECT_EQ(metadata["uid"], (*created)["metadata"]["uid"]);
  EXPECT_EQ(metadata["creationTimestamp"], (*created)["metadata"]["creationTimestamp"]);
  EXPECT_EQ(rv(*scale), live_version);
  EXPECT_FALSE((*scale)["spec"].contains("replicas")) << "autoscaling/v1 omits 0 replicas";
  EXPECT_EQ((*scale)["status"]["replicas"], 0);
  // labels.Selector's String(): requirements sorted by key, set values sorted.
  EXPECT_EQ((*scale)["status"]["selector"], "app=scaled,tier in (cache,db)");
}

TEST_P(KubernetesContract, UpdatingTheScaleSetsTheStatefulSetsReplicas) {
  ASSERT_OK(kube().create(Kind::StatefulSet, scaled_statefulset(ns(), "grow")));
  const ObjectRef ref{Kind::StatefulSet, ns(), "grow"};
  auto before = kube().get(ref);
  ASSERT_OK(before);
  auto scaled = kube().update_scale(ref, 1, "");
  ASSERT_OK(scaled);
  EXPECT_EQ((*scaled)["kind"], "Scale");
  EXPECT_EQ((*scaled)["spec"]["replicas"], 1);
  EXPECT_NE(rv(*scaled), rv(*before));
  auto after = kube().get(ref);
  ASSERT_OK(after);
  EXPECT_EQ((*after)["spec"]["replicas"], 1);
  EXPECT_EQ((*after)["metadata"]["generation"], (*before)["metadata"]["generation"].get<int>() + 1);
}

TEST_P(KubernetesContract, ScaleUpdateChecksTheResourceVersionItCarries) {
  ASSERT_OK(kube().create(Kind::StatefulSet, scaled_statefulset(ns(), "guarded")));
  const ObjectRef ref{Kind::StatefulSet, ns(), "guarded"};
  auto seen = kube().get_scale(ref);
  ASSERT_OK(seen);
  ASSERT_OK(kube().patch(ref, PatchType::Merge,
                         Json{{"metadata", {{"annotations", {{"touched", "yes"}}}}}}));
  auto stale = kube().update_scale(ref, 1, rv(*seen));
  EXPECT_CODE(stale, KubeErrorCode::Conflict);
  auto unchanged = kube().get(ref);
  ASSERT_OK(unchanged);
  EXPECT_EQ((*unchanged)["spec"]["replicas"], 0);

  // A fresh version is taken; the StatefulSet controller's own status writes may still
  // overtake it on a real cluster, hence a few tries.
  KubeResult<Json> scaled;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto fresh = kube().get_scale(ref);
    ASSERT_OK(fresh);
    scaled = kube().update_scale(ref, 1, rv(*fresh));
    if (scaled || scaled.error().code != KubeErrorCode::Conflict) break;
  }
  ASSERT_OK(scaled);
  EXPECT_EQ((*scaled)["spec"]["replicas"], 1);
}

TEST_P(KubernetesContract, ScaleIsNotFoundForAMissingObjectOrAKindWithoutIt) {
  EXPECT_CODE(kube().get_scale({Kind::StatefulSet, ns(), "absent"}), KubeErrorCode::NotFound);
  EXPECT_CODE(kube().update_scale({Kind::StatefulSet, ns(), "absent"}, 1, ""),
              KubeErrorCode::NotFound);
  ASSERT_OK(
      kube().create(Kind::ConfigMap, Json{{"apiVersion", "v1"},
                                          {"kind", "ConfigMap"},
                                          {"metadata", {{"name", "plain"}, {"namespace", ns()}}}}));
  EXPECT_CODE(kube().get_scale({Kind::ConfigMap, ns(), "plain"}), KubeErrorCode::NotFound);
  EXPECT_CODE(kube().update_scale({Kind::ConfigMap, ns(), "plain"}, 1, ""),
              KubeErrorCode::NotFound);
}

TEST_P(KubernetesContract, NegativeScaleIsInvalid) {
  ASSERT_OK(kube().create(Kind::StatefulSet, scaled_statefulset(ns(), "negative")));
  EXPECT_CODE(kube().update_scale({Kind::StatefulSet, ns(), "negative"}, -1, ""),
              KubeErrorCode::Invalid);
}

}  // namespace
}  // namespace stsresize::contract
