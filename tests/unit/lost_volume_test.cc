// The pure rules of a lost-volume recovery that the engine tests do not pin down one by one: the
// bound on replicas without their data, and the claim a recovery with a re-seed creates itself.
#include "engine/lost_volume.h"

#include <gtest/gtest.h>

#include "engine/vocabulary.h"

namespace stsresize {
namespace {

Json statefulset(const std::map<std::string, std::string>& annotations) {
  Json sts = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "shop", "annotations": {}},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db", "tier": "data"}},
             "volumeClaimTemplates": [
               {"metadata": {"name": "data", "labels": {"backup": "daily"},
                             "annotations": {"note": "kept"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                         "resources": {"requests": {"storage": "5Gi"}}},
                "status": {"phase": "Pending"}},
               {"metadata": {"name": "wal"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}]}})");
  for (const auto& [key, value] : annotations) sts["metadata"]["annotations"][key] = value;
  return sts;
}

TEST(RecoverySetting, TheBoundIsOneByDefaultAndAWholeNumberOfOneOrMore) {
  const std::string mode{kLostVolumeRecoveryAnnotation};
  const std::string bound{kLostVolumeMaxUnavailableAnnotation};
  auto plain = recovery_setting(statefulset({{mode, "auto"}}), Duration{1000});
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain->max_unavailable, 1);
  auto two = recovery_setting(statefulset({{mode, "auto"}, {bound, "2"}}), Duration{1000});
  ASSERT_TRUE(two) << two.error();
  EXPECT_EQ(two->max_unavailable, 2);
  for (const char* bad : {"0", "-2", "2.5", "two", "", " 2", "2 ", "99999999999"}) {
    auto refused = recovery_setting(statefulset({{mode, "auto"}, {bound, bad}}), Duration{1000});
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().find(bound), std::string::npos) << refused.error();
    EXPECT_NE(refused.error().find("1 or more"), std::string::npos) << refused.error();
  }
}

TEST(RecoveredClaim, IsTheClaimTheStatefulSetControllerWouldCreateMarkedWithTheLostVolume) {
  auto claim = recovered_claim(statefulset({}), "data", 2, "pvc-0b1c");
  ASSERT_TRUE(claim) << claim.error();
  EXPECT_EQ(*claim, Json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data-db-2", "namespace": "shop",
                 "labels": {"backup": "daily", "app": "db", "tier": "data"},
                 "annotations": {"note": "kept", "stsresize.dev/recovered-from": "pvc-0b1c"}},
    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
             "resources": {"requests": {"storage": "5Gi"}}}})"));
  auto bare = recovered_claim(statefulset({}), "wal", 0, "pvc-9");
  ASSERT_TRUE(bare) << bare.error();
  EXPECT_EQ((*bare)["metadata"]["name"], "wal-db-0");
  EXPECT_EQ((*bare)["metadata"]["labels"], Json::parse(R"({"app": "db", "tier": "data"})"));
  auto missing = recovered_claim(statefulset({}), "logs", 0, "pvc-9");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no volumeClaimTemplate \"logs\""), std::string::npos);
}

}  // namespace
}  // namespace stsresize
