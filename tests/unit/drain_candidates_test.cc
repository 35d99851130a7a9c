#include "engine/drain_candidates.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stsresize {
namespace {

// Objects shaped as the API server lists them, built from the few values each test varies.

// StatefulSet shop/web at generation 4, observed, its status at `replicas` pods.
Json statefulset(int replicas, const std::vector<std::string>& claim_templates = {"data"}) {
  Json sts = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"name": "web", "namespace": "shop", "uid": "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11",
                 "resourceVersion": "48213", "generation": 4, "labels": {"app": "web"},
                 "annotations": {"statefulsets.kubernetes.io/scaledown-pod-template":
                                 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}"}},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
             "volumeClaimTemplates": []},
    "status": {"observedGeneration": 4}})");
  sts["spec"]["replicas"] = replicas;
  sts["status"]["replicas"] = replicas;
  for (const std::string& name : claim_templates) {
    Json claim_template = Json::parse(R"({"metadata": {}, "spec": {
      "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})");
    claim_template["metadata"]["name"] = name;
    sts["spec"]["volumeClaimTemplates"].push_back(std::move(claim_template));
  }
  return sts;
}

// A Bound claim with the uid "uid-<name>" and the labels the StatefulSet controller copies from
// the selector.
Json claim(const std::string& name) {
  Json pvc = Json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"namespace": "shop", "resourceVersion": "48177", "labels": {"app": "web"},
                 "finalizers": ["kubernetes.io/pvc-protection"]},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    "status": {"phase": "Bound"}})");
  pvc["metadata"]["name"] = name;
  pvc["metadata"]["uid"] = "uid-" + name;
  return pvc;
}

Json deleting(Json object) {
  object["metadata"]["deletionTimestamp"] = "2026-11-26T01:00:00Z";
  return object;
}

// A Running pod with the uid "uid-<name>" mounting `claims`.
Json pod(const std::string& name, const std::vector<std::string>& claims = {},
         const std::string& phase = "Running") {
  Json p = Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"namespace": "shop", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "i"}],
             "volumes": [{"name": "token", "projected": {"sources": []}}]},
    "status": {}})");
  p["metadata"]["name"] = name;
  p["metadata"]["uid"] = "uid-" + name;
  p["status"]["phase"] = phase;
  for (const std::string& c : claims) {
    Json volume = Json::parse(R"({"name": "v", "persistentVolumeClaim": {}})");
    volume["persistentVolumeClaim"]["claimName"] = c;
    p["spec"]["volumes"].push_back(std::move(volume));
  }
  return p;
}

// A cleanup pod of StatefulSet `owner` as the StatefulSet Scale-Down Controller made it: only
// its annotation and the scaledown-pod label mark it.
Json cleanup(const std::string& name, const std::vector<std::string>& claims,
             const std::string& phase = "Running", const std::string& owner = "web") {
  Json p = pod(name, claims, phase);
  p["metadata"]["labels"] = {{"app", "datastore-cleanup"}, {"scaledown-pod", name}};
  p["metadata"]["annotations"] = {{"statefulsets.kubernetes.io/scaledown-pod-owner", owner}};
  return p;
}

DrainCandidates candidates_of(const Json& sts, const std::vector<Json>& claims,
                              const std::vector<Json>& pods = {}) {
  auto result = drain_candidates(sts, claims, pods);
  EXPECT_TRUE(result.has_value()) << (result ? std::string{} : explain(result.error()));
  return result ? *result : DrainCandidates{};
}

std::vector<int> ordinals(const DrainCandidates& found) {
  std::vector<int> out;
  for (const DrainCandidate& candidate : found.candidates) out.push_back(candidate.ordinal);
  return out;
}

std::vector<DrainWaitReason> reasons(const DrainCandidate& candidate) {
  std::vector<DrainWaitReason> out;
  for (const DrainWait& wait : candidate.waits) out.push_back(wait.reason);
  return out;
}

using Ordinals = std::vector<int>;
using Reasons = std::vector<DrainWaitReason>;

TEST(DrainCandidates, OrdinalsAboveTheReplicasWithTheirClaimsHighestFirst) {
  // Scaled from 5 to 2; ordinal 3's claim was deleted by hand.
  const DrainCandidates found = candidates_of(
      statefulset(2),
      {claim("data-web-0"), claim("data-web-1"), claim("data-web-2"), claim("data-web-4")});
  ASSERT_EQ(ordinals(found), (Ordinals{4, 2}));
  EXPECT_EQ(found.candidates[0].claims,
            (std::vector<DrainClaim>{{"data", "data-web-4", "uid-data-web-4"}}));
  EXPECT_EQ(found.candidates[1].claims,
            (std::vector<DrainClaim>{{"data", "data-web-2", "uid-data-web-2"}}));
  EXPECT_TRUE(found.candidates[0].ready());
  EXPECT_TRUE(found.candidates[1].ready());
  EXPECT_EQ(found.candidates[0].cleanup_pod, std::nullopt);
  EXPECT_TRUE(found.in_range_cleanup_pods.empty());
  EXPECT_TRUE(found.left_alone.empty());
}

TEST(DrainCandidates, NothingWhenNoClaimIsOutsideTheReplicas) {
  EXPECT_TRUE(
      candidates_of(statefulset(2), {claim("data-web-0"), claim("data-web-1")}).candidates.empty());
  EXPECT_TRUE(candidates_of(statefulset(2), {}).candidates.empty());
}

TEST(DrainCandidates, ScaledToZeroEveryOrdinalIsACandidate) {
  EXPECT_EQ(ordinals(candidates_of(statefulset(0), {claim("data-web-0"), claim("data-web-1")})),
            (Ordinals{1, 0}));
}

// A StatefulSet being deleted keeps no replica: every ordinal with a claim is a candidate, and
// no set-wide wait holds (its controller never observes the generation the delete bumped); the
// replicas' pods still wait on their names and claims.
TEST(DrainCandidates, BeingDeletedEveryOrdinalIsACandidateWithoutSetWideWaits) {
  Json sts = deleting(statefulset(2));
  sts["metadata"]["generation"] = 5;  // observedGeneration stays 4
  const DrainCandidates found = candidates_of(sts, {claim("data-web-0"), claim("data-web-1")},
                                              {pod("web-0", {"data-web-0"})});
  EXPECT_EQ(ordinals(found), (Ordinals{1, 0}));
  ASSERT_EQ(found.candidates.size(), 2u);
  EXPECT_TRUE(found.candidates[0].ready());
  EXPECT_EQ(reasons(found.candidates[1]),
            (Reasons{DrainWaitReason::ClaimInUse, DrainWaitReason::NameTaken}));
}

TEST(DrainCandidates, OneClaimPerTemplateThatHasOne) {
  const DrainCandidates found =
      candidates_of(statefulset(1, {"data", "logs"}),
                    {claim("logs-web-3"), claim("data-web-2"), claim("logs-web-2")});
  ASSERT_EQ(ordinals(found), (Ordinals{3, 2}));
  EXPECT_EQ(found.candidates[0].claims,
            (std::vector<DrainClaim>{{"logs", "logs-web-3", "uid-logs-web-3"}}));
  EXPECT_EQ(found.candidates[1].claims,
            (std::vector<DrainClaim>{{"data", "data-web-2", "uid-data-web-2"},
                                     {"logs", "logs-web-2", "uid-logs-web-2"}}));
}

TEST(DrainCandidates, ClaimsBeingDeletedAreIgnored) {
  EXPECT_TRUE(candidates_of(statefulset(1), {deleting(claim("data-web-1"))}).candidates.empty());
  const DrainCandidates found = candidates_of(statefulset(1, {"data", "logs"}),
                                              {deleting(claim("data-web-1")), claim("logs-web-1")});
  ASSERT_EQ(ordinals(found), (Ordinals{1}));
  EXPECT_EQ(found.candidates[0].claims,
            (std::vector<DrainClaim>{{"logs", "logs-web-1", "uid-logs-web-1"}}));
}

TEST(DrainCandidates, OnlyCanonicalNonNegativeOrdinalsNameAClaimOfTheSet) {
  const DrainCandidates found = candidates_of(
      statefulset(0), {claim("data-web-01"), claim("data-web--1"), claim("data-web--0"),
                       claim("data-web-+1"), claim("data-web-1a"), claim("data-web- 1"),
                       claim("data-web-"), claim("data-web-99999999999"), claim("data-web-db-0"),
                       claim("data-webs-0"), claim("other-web-0"), claim("data-web-10")});
  EXPECT_EQ(ordinals(found), (Ordinals{10}));
}

TEST(DrainCandidates, OrdinalsStartIsHonoured) {
  // Replicas occupy ordinals 3 and 4: below the start is outside too.
  Json sts = statefulset(2);
  sts["spec"]["ordinals"] = {{"start", 3}};
  std::vector<Json> claims;
  for (int i = 0; i <= 6; ++i) claims.push_back(claim("data-web-" + std::to_string(i)));
  EXPECT_EQ(ordinals(candidates_of(sts, claims)), (Ordinals{6, 5, 2, 1, 0}));
  // Absent: 0.
  sts["spec"]["ordinals"] = Json::object();
  EXPECT_EQ(ordinals(candidates_of(sts, claims)), (Ordinals{6, 5, 4, 3, 2}));
}

TEST(DrainCandidates, AMalformedOrdinalsStartIsAnError) {
  for (const Json& start : {Json(-1), Json("3"), Json(1.5)}) {
    Json sts = statefulset(2);
    sts["spec"]["ordinals"] = {{"start", start}};
    auto result = drain_candidates(sts, std::vector<Json>{claim("data-web-4")}, {});
    ASSERT_FALSE(result.has_value()) << start;
    EXPECT_EQ(explain(result.error()),
              "cannot tell which claims to drain: StatefulSet shop/web: spec.ordinals.start is "
              "not a non-negative integer");
  }
}

TEST(DrainCandidates, WaitsUntilTheStatefulSetControllerObservedTheScaleDown) {
  Json sts = statefulset(2);
  sts["status"]["observedGeneration"] = 3;
  DrainCandidates found = candidates_of(sts, {claim("data-web-3"), claim("data-web-2")});
  ASSERT_EQ(ordinals(found), (Ordinals{3, 2}));
  for (const DrainCandidate& candidate : found.candidates) {
    ASSERT_EQ(reasons(candidate), Reasons{DrainWaitReason::NotObserved});
    EXPECT_FALSE(candidate.ready());
  }
  EXPECT_EQ(found.candidates[0].waits[0].generation, 4);
  EXPECT_EQ(found.candidates[0].waits[0].observed_generation, 3);
  EXPECT_EQ(explain(found.candidates[0].waits[0]),
            "the StatefulSet controller has not observed generation 4 yet (observedGeneration 3)");

  sts["status"].erase("observedGeneration");
  found = candidates_of(sts, {claim("data-web-2")});
  ASSERT_EQ(ordinals(found), (Ordinals{2}));
  ASSERT_EQ(reasons(found.candidates[0]), Reasons{DrainWaitReason::NotObserved});
  EXPECT_EQ(explain(found.candidates[0].waits[0]),
            "the StatefulSet controller has not observed generation 4 yet (no observedGeneration)");
  sts.erase("status");
  EXPECT_EQ(reasons(candidates_of(sts, {claim("data-web-2")}).candidates.at(0)),
            Reasons{DrainWaitReason::NotObserved});
  // No observedGeneration is never observed, even with no metadata.generation to compare.
  sts["metadata"].erase("generation");
  EXPECT_EQ(reasons(candidates_of(sts, {claim("data-web-2")}).candidates.at(0)),
            Reasons{DrainWaitReason::NotObserved});

  // Observed a later generation than read (a stale read of the spec): nothing to wait for.
  sts = statefulset(2);
  sts["status"]["observedGeneration"] = 5;
  EXPECT_TRUE(candidates_of(sts, {claim("data-web-2")}).candidates.at(0).ready());
}

TEST(DrainCandidates, WaitsWhileTheStatefulSetStillHasMorePodsThanReplicas) {
  Json sts = statefulset(2);
  sts["status"]["replicas"] = 3;
  const DrainCandidates found = candidates_of(sts, {claim("data-web-2")});
  ASSERT_EQ(ordinals(found), (Ordinals{2}));
  ASSERT_EQ(reasons(found.candidates[0]), Reasons{DrainWaitReason::PodsTerminating});
  EXPECT_EQ(explain(found.candidates[0].waits[0]),
            "the StatefulSet still has 3 pods for 2 replicas (pods terminating)");
  sts["status"]["replicas"] = 2;
  EXPECT_TRUE(candidates_of(sts, {claim("data-web-2")}).candidates.at(0).ready());
  sts["status"]["replicas"] = 1;  // fewer (still creating, or a pod lost): nothing of ours
  EXPECT_TRUE(candidates_of(sts, {claim("data-web-2")}).candidates.at(0).ready());
}

TEST(DrainCandidates, WaitsWhileAPodThatIsNotACleanupPodUsesAClaim) {
  const Json sts = statefulset(2, {"data", "logs"});
  const std::vector<Json> claims = {claim("data-web-2"), claim("logs-web-2"), claim("data-web-3")};
  // Someone's backup pod (finished, but it still names the claim), and a terminating one.
  const DrainCandidates found = candidates_of(
      sts, claims,
      {pod("backup-x", {"logs-web-2"}, "Succeeded"),
       deleting(pod("inspect", {"data-web-2", "data-web-0"})), pod("web-0", {"data-web-0"})});
  ASSERT_EQ(ordinals(found), (Ordinals{3, 2}));
  EXPECT_TRUE(found.candidates[0].ready());
  const DrainCandidate& two = found.candidates[1];
  ASSERT_EQ(reasons(two), (Reasons{DrainWaitReason::ClaimInUse, DrainWaitReason::ClaimInUse}));
  EXPECT_EQ(two.waits[0].pod, "inspect");
  EXPECT_EQ(two.waits[0].claim, "data-web-2");
  EXPECT_EQ(two.waits[1].pod, "backup-x");
  EXPECT_EQ(two.waits[1].claim, "logs-web-2");
  EXPECT_EQ(explain(two.waits[0]),
            "pod inspect (not a cleanup pod of this StatefulSet) uses claim data-web-2");
}

TEST(DrainCandidates, ACleanupPodOfAnotherStatefulSetOnTheClaimIsAUserToo) {
  const DrainCandidates found = candidates_of(statefulset(2), {claim("data-web-2")},
                                              {cleanup("db-0", {"data-web-2"}, "Running", "db")});
  EXPECT_EQ(reasons(found.candidates.at(0)), Reasons{DrainWaitReason::ClaimInUse});
}

TEST(DrainCandidates, TheReplicaOfThatNameStillThereWaits) {
  // The StatefulSet's own pod web-2 has not gone yet: it uses the claim and has the name.
  DrainCandidates found =
      candidates_of(statefulset(2), {claim("data-web-2")}, {pod("web-2", {"data-web-2"})});
  EXPECT_EQ(reasons(found.candidates.at(0)),
            (Reasons{DrainWaitReason::ClaimInUse, DrainWaitReason::NameTaken}));
  // A pod of that name that is not a cleanup pod, on no claim: the name is still taken.
  found = candidates_of(statefulset(2), {claim("data-web-2")}, {pod("web-2")});
  ASSERT_EQ(reasons(found.candidates.at(0)), Reasons{DrainWaitReason::NameTaken});
  EXPECT_EQ(found.candidates[0].waits[0].pod, "web-2");
  EXPECT_EQ(explain(found.candidates[0].waits[0]),
            "pod web-2 exists and is not a cleanup pod: the cleanup pod needs its name");
  EXPECT_EQ(found.candidates[0].cleanup_pod, std::nullopt);
}

TEST(DrainCandidates, EveryReasonIsGivenSetWideFirst) {
  Json sts = statefulset(2);
  sts["status"]["observedGeneration"] = 3;
  sts["status"]["replicas"] = 3;
  const DrainCandidates found =
      candidates_of(sts, {claim("data-web-2")}, {pod("web-2", {"data-web-2"})});
  EXPECT_EQ(reasons(found.candidates.at(0)),
            (Reasons{DrainWaitReason::NotObserved, DrainWaitReason::PodsTerminating,
                     DrainWaitReason::ClaimInUse, DrainWaitReason::NameTaken}));
}

TEST(DrainCandidates, AnExistingCleanupPodIsReportedAndDoesNotBlock) {
  // The StatefulSet Scale-Down Controller's pod, running on the claim: to be taken over.
  const DrainCandidates found = candidates_of(statefulset(2), {claim("data-web-2")},
                                              {cleanup("web-2", {"data-web-2"}, "Running")});
  ASSERT_EQ(ordinals(found), (Ordinals{2}));
  EXPECT_TRUE(found.candidates[0].ready());
  EXPECT_EQ(found.candidates[0].cleanup_pod,
            (ExistingCleanupPod{"web-2", "uid-web-2", "Running", false}));

  const DrainCandidates going =
      candidates_of(statefulset(2), {claim("data-web-2")},
                    {deleting(cleanup("web-2", {"data-web-2"}, "Succeeded"))});
  EXPECT_EQ(going.candidates.at(0).cleanup_pod,
            (ExistingCleanupPod{"web-2", "uid-web-2", "Succeeded", true}));
  // No phase yet: Pending.
  Json fresh = cleanup("web-2", {"data-web-2"});
  fresh.erase("status");
  EXPECT_EQ(candidates_of(statefulset(2), {claim("data-web-2")}, {fresh})
                .candidates.at(0)
                .cleanup_pod->phase,
            "Pending");
}

TEST(DrainCandidates, ACleanupPodWhoseClaimsAreGoneIsStillACandidate) {
  // A crash between the claim's delete and the pod's: the pod must still be found and deleted.
  const DrainCandidates found = candidates_of(statefulset(2), {deleting(claim("data-web-3"))},
                                              {cleanup("web-3", {"data-web-3"}, "Succeeded")});
  ASSERT_EQ(ordinals(found), (Ordinals{3}));
  EXPECT_TRUE(found.candidates[0].claims.empty());
  EXPECT_EQ(found.candidates[0].cleanup_pod->name, "web-3");
}

TEST(DrainCandidates, ACleanupPodInsideTheReplicasIsReportedApart) {
  // Scaled back up to 3 while web-2 drained: the StatefulSet wants the name back.
  const DrainCandidates found =
      candidates_of(statefulset(3), {claim("data-web-2"), claim("data-web-4")},
                    {cleanup("web-2", {"data-web-2"}), cleanup("web-0-x", {})});
  EXPECT_EQ(ordinals(found), (Ordinals{4}));
  EXPECT_EQ(found.in_range_cleanup_pods,
            (std::vector<ExistingCleanupPod>{{"web-2", "uid-web-2", "Running", false}}));
}

TEST(DrainCandidates, AClaimLabelledForAnotherStatefulSetIsLeftAlone) {
  // StatefulSet web-db (template data) and db (template data-web) both name data-web-db-0.
  Json sts = statefulset(0);
  sts["metadata"]["name"] = "db";
  sts["spec"]["selector"]["matchLabels"] = {{"app", "db"}};
  sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] = "data-web";
  Json of_web_db = claim("data-web-db-0");
  of_web_db["metadata"]["labels"] = {{"app", "web-db"}};
  Json by_hand = claim("data-web-db-1");
  by_hand["metadata"].erase("labels");
  const DrainCandidates found = candidates_of(sts, {of_web_db, by_hand});
  EXPECT_EQ(ordinals(found), (Ordinals{1}));
  ASSERT_EQ(found.left_alone.size(), 1u);
  EXPECT_EQ(found.left_alone[0], (ForeignClaim{"data-web-db-0", "app", "web-db", "db"}));
  EXPECT_EQ(explain(found.left_alone[0]),
            "data-web-db-0 (label app=web-db; the selector says app=db)");
}

TEST(DrainCandidates, UnreadableObjectsAreErrorsNotGuesses) {
  Json sts = statefulset(2);
  sts["spec"]["replicas"] = "2";
  auto of_sts = drain_candidates(sts, std::vector<Json>{claim("data-web-2")}, {});
  ASSERT_FALSE(of_sts.has_value());
  EXPECT_EQ(of_sts.error().what, DrainUnreadable::StatefulSet);

  Json bad_claim = claim("data-web-2");
  bad_claim["metadata"]["uid"] = 7;
  auto of_claim = drain_candidates(statefulset(2), std::vector<Json>{bad_claim}, {});
  ASSERT_FALSE(of_claim.has_value());
  EXPECT_EQ(of_claim.error().what, DrainUnreadable::Claim);

  Json bad_pod = pod("inspect");
  bad_pod["spec"]["volumes"] =
      Json::parse(R"([{"name": "v", "persistentVolumeClaim": "data-web-2"}])");
  auto result = drain_candidates(statefulset(2), std::vector<Json>{claim("data-web-2")},
                                 std::vector<Json>{bad_pod});
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().what, DrainUnreadable::Pod);
  EXPECT_NE(explain(result.error()).find("spec.volumes[0].persistentVolumeClaim"),
            std::string::npos)
      << explain(result.error());
}

TEST(DrainCandidates, ReplicasDefaultToOne) {
  Json sts = statefulset(1);
  sts["spec"].erase("replicas");
  EXPECT_EQ(ordinals(candidates_of(sts, {claim("data-web-0"), claim("data-web-1")})),
            (Ordinals{1}));
}

TEST(ClaimsDeletedWhenScaled, OnlyWhenScaledDelete) {
  Json sts = statefulset(2);
  EXPECT_FALSE(claims_deleted_when_scaled(sts));
  sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {{"whenDeleted", "Delete"},
                                                         {"whenScaled", "Retain"}};
  EXPECT_FALSE(claims_deleted_when_scaled(sts));
  sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Delete";
  EXPECT_TRUE(claims_deleted_when_scaled(sts));
}

}  // namespace
}  // namespace stsresize
