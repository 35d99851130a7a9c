// How a StatefulSet is being deleted, read from every signal there is: an orphan delete (or one
// that cannot be told from it) must never be read as one that removes the replicas.
#include "engine/statefulset_deletion.h"

#include <gtest/gtest.h>

namespace stsresize {
namespace {

constexpr const char* kUid = "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11";

Json statefulset(std::vector<std::string> finalizers = {"statefulsets.kubernetes.io/scaledown"},
                 bool deleting = true) {
  Json sts = {{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", kUid}}},
              {"spec", {{"replicas", 3}}}};
  if (deleting) sts["metadata"]["deletionTimestamp"] = "2026-11-26T01:00:00Z";
  if (!finalizers.empty()) sts["metadata"]["finalizers"] = finalizers;
  return sts;
}

Json pod(const std::string& name, bool owned) {
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "shop"}, {"uid", "uid-" + name}}}};
  if (owned) {
    p["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                                     {"kind", "StatefulSet"},
                                                     {"name", "web"},
                                                     {"uid", kUid},
                                                     {"controller", true}}});
  }
  return p;
}

DeletionReading reading(const Json& sts, const std::vector<Json>& pods = {}) {
  return read_deletion(sts, pods).reading;
}

TEST(StatefulSetDeletion, NotDeletedWithoutADeletionTimestamp) {
  EXPECT_EQ(reading(statefulset({}, false), {pod("web-0", true)}), DeletionReading::NotDeleted);
}

TEST(StatefulSetDeletion, TheOrphanFinalizerIsAnOrphanDeleteWhateverThePodsSay) {
  EXPECT_EQ(reading(statefulset({"statefulsets.kubernetes.io/scaledown", "orphan"}),
                    {pod("web-0", true), pod("web-1", true)}),
            DeletionReading::Orphan);
}

TEST(StatefulSetDeletion, AReplicaNamedPodWithoutOwnerIsAnOrphanDelete) {
  EXPECT_EQ(reading(statefulset(), {pod("web-1", true), pod("web-0", false)}),
            DeletionReading::Orphan);
  // ...even beside the foreground finalizer: the safe reading wins.
  EXPECT_EQ(reading(statefulset({"foregroundDeletion"}), {pod("web-0", false)}),
            DeletionReading::Orphan);
}

TEST(StatefulSetDeletion, PodsOfOtherNamesOrCleanupPodsSayNothing) {
  Json cleanup = pod("web-2", false);
  cleanup["metadata"]["annotations"] = {{"statefulsets.kubernetes.io/scaledown-pod-owner", "web"}};
  cleanup["metadata"]["labels"] = {{"scaledown-pod", "web-2"}};
  EXPECT_EQ(reading(statefulset(), {pod("web-01", false), pod("webx-0", false), pod("web-", false),
                                    pod("other-0", false), cleanup}),
            DeletionReading::Unclear);
}

TEST(StatefulSetDeletion, ForegroundOrPodsStillOwnedAreACascade) {
  EXPECT_EQ(reading(statefulset({"foregroundDeletion"})), DeletionReading::Cascade);
  EXPECT_EQ(reading(statefulset(), {pod("web-0", true)}), DeletionReading::Cascade);
}

TEST(StatefulSetDeletion, NoSignalIsUnclear) {
  EXPECT_EQ(reading(statefulset()), DeletionReading::Unclear);
}

TEST(StatefulSetDeletion, FinalizersAreAddedOnceAndRemovedAlone) {
  Json sts = statefulset({"a"}, false);
  add_finalizer(sts, "statefulsets.kubernetes.io/scaledown");
  add_finalizer(sts, "statefulsets.kubernetes.io/scaledown");
  EXPECT_EQ(sts["metadata"]["finalizers"],
            Json::array({"a", "statefulsets.kubernetes.io/scaledown"}));
  remove_finalizer(sts, "statefulsets.kubernetes.io/scaledown");
  EXPECT_EQ(sts["metadata"]["finalizers"], Json::array({"a"}));
  remove_finalizer(sts, "a");
  EXPECT_FALSE(sts["metadata"].contains("finalizers"));
  EXPECT_FALSE(has_finalizer(sts, "a"));
}

}  // namespace
}  // namespace stsresize
