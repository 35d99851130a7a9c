#include "engine/planner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stsresize {
namespace {

// Objects shaped as the API server returns them (server-set metadata, status, defaulted
// fields), built from the few values each test varies.

struct TemplateSpec {
  std::string name;
  std::string storage;             // "" = no storage request
  std::string storage_class = "";  // "" = field absent (cluster default)
};

Json statefulset(const std::string& name, int replicas, const std::vector<TemplateSpec>& specs) {
  Json templates = Json::array();
  for (const TemplateSpec& spec : specs) {
    Json tmpl = Json::parse(R"({
      "apiVersion": "v1", "kind": "PersistentVolumeClaim",
      "metadata": {"name": ""},
      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}},
               "volumeMode": "Filesystem"},
      "status": {"phase": "Pending"}})");
    tmpl["metadata"]["name"] = spec.name;
    if (!spec.storage.empty()) tmpl["spec"]["resources"]["requests"]["storage"] = spec.storage;
    if (!spec.storage_class.empty()) tmpl["spec"]["storageClassName"] = spec.storage_class;
    templates.push_back(std::move(tmpl));
  }
  Json sts = Json::parse(R"({
    "apiVersion": "apps/v1", "kind": "StatefulSet",
    "metadata": {"namespace": "shop", "uid": "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11",
                 "resourceVersion": "48213", "generation": 4,
                 "creationTimestamp": "2026-11-20T09:14:02Z", "labels": {"app": "web"}},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
             "podManagementPolicy": "OrderedReady",
             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
    "status": {"observedGeneration": 4, "replicas": 3, "readyReplicas": 3,
               "currentReplicas": 3, "updatedReplicas": 3, "availableReplicas": 3}})");
  sts["metadata"]["name"] = name;
  sts["spec"]["replicas"] = replicas;
  sts["spec"]["volumeClaimTemplates"] = std::move(templates);
  return sts;
}

// A Bound claim "<claim_name>" of `size` in `storage_class` ("" = field absent), with the uid
// "uid-<claim_name>" and the labels the StatefulSet controller copies from the selector.
Json bound_claim(const std::string& claim_name, const std::string& size,
                 const std::string& storage_class = "standard") {
  Json pvc = Json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"namespace": "shop", "resourceVersion": "48177",
                 "creationTimestamp": "2026-11-20T09:14:05Z", "labels": {"app": "web"},
                 "annotations": {"pv.kubernetes.io/bind-completed": "yes",
                                 "pv.kubernetes.io/bound-by-controller": "yes",
                                 "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path"},
                 "finalizers": ["kubernetes.io/pvc-protection"]},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}},
             "volumeMode": "Filesystem"},
    "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {}}})");
  pvc["metadata"]["name"] = claim_name;
  pvc["metadata"]["uid"] = "uid-" + claim_name;
  pvc["spec"]["resources"]["requests"]["storage"] = size;
  pvc["spec"]["volumeName"] = "pvc-" + claim_name;
  if (!storage_class.empty()) pvc["spec"]["storageClassName"] = storage_class;
  pvc["status"]["capacity"]["storage"] = size;
  return pvc;
}

Json storage_class(const std::string& name, std::optional<bool> allows_expansion) {
  Json sc = Json::parse(R"({
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"uid": "0b7d7d3e-1111-4c1e-9a54-7c2f3e0d9b10", "resourceVersion": "301"},
    "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer"})");
  sc["metadata"]["name"] = name;
  if (allows_expansion) sc["allowVolumeExpansion"] = *allows_expansion;
  return sc;
}

// "standard" expands in place, "fixed" says it does not, "legacy" omits the field.
std::vector<Json> classes() {
  return {storage_class("standard", true), storage_class("fixed", false),
          storage_class("legacy", std::nullopt)};
}

Quantity q(std::string_view text) {
  return Quantity::parse(text).value();
}

ResizePlan plan_of(const Json& sts, const std::vector<Json>& claims,
                   const std::vector<Json>& storage_classes = classes()) {
  auto result = plan_resize(sts, claims, storage_classes);
  EXPECT_TRUE(result.has_value()) << result.error();
  if (!result || !result->has_value()) {
    ADD_FAILURE() << "expected a plan";
    return {};
  }
  return **result;
}

std::string refusal_of(const Json& sts, const std::vector<Json>& claims,
                       const std::vector<Json>& storage_classes = classes()) {
  auto result = plan_resize(sts, claims, storage_classes);
  EXPECT_FALSE(result.has_value()) << "expected a refusal";
  return result ? std::string{} : result.error();
}

std::vector<std::string> names(const ResizePlan& plan) {
  std::vector<std::string> out;
  for (const ClaimPlan& claim : plan.claims) out.push_back(claim.claim);
  return out;
}

using Names = std::vector<std::string>;

TEST(Planner, NothingToDoWhenEveryClaimMatchesItsTemplate) {
  const Json sts = statefulset("web", 3, {{"data", "2Gi", "standard"}});
  // "2048Mi" is the same size written differently: equal, not smaller.
  auto result = plan_resize(sts,
                            {bound_claim("data-web-0", "2Gi"), bound_claim("data-web-1", "2Gi"),
                             bound_claim("data-web-2", "2048Mi")},
                            classes());
  ASSERT_TRUE(result.has_value()) << result.error();
  EXPECT_FALSE(result->has_value());
}

TEST(Planner, NothingToDoWhenNoClaimExistsYet) {
  // The StatefulSet controller creates missing claims from the template, at its size.
  auto result = plan_resize(statefulset("web", 3, {{"data", "2Gi", "standard"}}), {}, classes());
  ASSERT_TRUE(result.has_value()) << result.error();
  EXPECT_FALSE(result->has_value());
}

TEST(Planner, PlansOnlyClaimsSmallerThanTheirTemplate) {
  const Json sts = statefulset("web", 3, {{"data", "2Gi", "standard"}});
  Json small = bound_claim("data-web-1", "1Gi");
  small["metadata"]["labels"]["tier"] = "cache";
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "2Gi"), small, bound_claim("data-web-2", "2Gi")});

  ASSERT_EQ(plan.claims.size(), 1u);
  const ClaimPlan& claim = plan.claims[0];
  EXPECT_EQ(claim.claim, "data-web-1");
  EXPECT_EQ(claim.template_name, "data");
  EXPECT_EQ(claim.ordinal, 1);
  EXPECT_EQ(claim.from_size, q("1Gi"));
  EXPECT_EQ(claim.to_size, q("2Gi"));
  EXPECT_EQ(claim.from_class, "standard");
  EXPECT_EQ(claim.to_class, "standard");
  EXPECT_EQ(claim.source_uid, "uid-data-web-1");
  EXPECT_EQ(claim.labels, (std::map<std::string, std::string>{{"app", "web"}, {"tier", "cache"}}));
  EXPECT_EQ(claim.access_modes, Names{"ReadWriteOnce"});
  EXPECT_EQ(claim.volume_mode, "Filesystem");
  EXPECT_EQ(plan.trigger, "data 1Gi -> 2Gi (1 claim)");
}

// StatefulSet web-db with template "data" and StatefulSet db with template "data-web" both name
// their first claim data-web-db-0. The one db created carries db's selector labels: it is not
// web-db's to copy or delete. A claim without those labels (made by hand) is still planned.
TEST(Planner, SkipsAClaimWhoseLabelsNameAnotherStatefulSetsSelector) {
  Json sts = statefulset("web-db", 2, {{"data", "2Gi", "standard"}});
  sts["spec"]["selector"]["matchLabels"] = {{"app", "web-db"}};
  Json of_db = bound_claim("data-web-db-0", "1Gi");
  of_db["metadata"]["labels"] = {{"app", "db"}};
  Json by_hand = bound_claim("data-web-db-1", "1Gi");
  by_hand["metadata"].erase("labels");
  const ResizePlan plan = plan_of(sts, {of_db, by_hand});
  EXPECT_EQ(names(plan), Names{"data-web-db-1"});
  // Said, not silently skipped: the pod of ordinal 0 runs on the other set's claim.
  EXPECT_EQ(plan.left_alone,
            std::vector<std::string>{"data-web-db-0 (label app=db; the selector says app=web-db)"});
  of_db["metadata"]["labels"] = {{"app", "web-db"}};
  EXPECT_EQ(names(plan_of(sts, {of_db, by_hand})), (Names{"data-web-db-0", "data-web-db-1"}));
}

TEST(Planner, ComparesTheRequestNotTheReportedCapacity) {
  // A provisioner may round up: 1Gi requested, 5Gi delivered. The template asks for 2Gi, so the
  // claim's spec (what the StatefulSet wants recorded) is what decides.
  Json rounded_up = bound_claim("data-web-0", "1Gi");
  rounded_up["status"]["capacity"]["storage"] = "5Gi";
  const ResizePlan plan =
      plan_of(statefulset("web", 1, {{"data", "2Gi", "standard"}}), {rounded_up});
  ASSERT_EQ(names(plan), Names{"data-web-0"});
  EXPECT_EQ(plan.claims[0].from_size, q("1Gi"));
}

TEST(Planner, IncludesClaimsOfOrdinalsAboveTheReplicaCount) {
  // Scaled down from 5 to 2: claims 2..4 are kept (retention policy Retain) and come back on
  // scale-up, so they must be resized too. Ordinal 3's claim was deleted by hand.
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "2Gi"), bound_claim("data-web-1", "2Gi"),
                    bound_claim("data-web-2", "2Gi"), bound_claim("data-web-4", "1Gi")});
  ASSERT_EQ(names(plan), Names{"data-web-4"});
  EXPECT_EQ(plan.claims[0].ordinal, 4);
  EXPECT_EQ(plan.claims[0].source_uid, "uid-data-web-4");
}

TEST(Planner, OrdersClaimsByOrdinalNotByName) {
  const Json sts = statefulset("web", 11, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-10", "1Gi"), bound_claim("data-web-9", "1Gi"),
                    bound_claim("data-web-2", "1Gi")});
  EXPECT_EQ(names(plan), (Names{"data-web-2", "data-web-9", "data-web-10"}));
}

TEST(Planner, IgnoresClaimsOfOtherStatefulSetsWithSimilarNames) {
  // "web-2" is another StatefulSet: its claims "data-web-2-<i>" start with "data-web-" too.
  // So do claims made by hand that only look like ordinals.
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "2Gi"),
                    bound_claim("data-web-2-0", "1Gi"), bound_claim("data-web-2-1", "1Gi"),
                    bound_claim("data-web-02", "1Gi"), bound_claim("data-web--1", "1Gi"),
                    bound_claim("data-web-3x", "1Gi"), bound_claim("data-web-", "1Gi"),
                    bound_claim("data-webapp-0", "1Gi"), bound_claim("xdata-web-0", "1Gi"),
                    bound_claim("data-web-99999999999999999999", "1Gi")});
  EXPECT_EQ(names(plan), Names{"data-web-0"});
}

TEST(Planner, TheShorterStatefulSetNameDoesNotClaimTheLongerOnesClaims) {
  // And from the other side: StatefulSet "web-2" owns exactly "data-web-2-<i>".
  const Json sts = statefulset("web-2", 1, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-2", "1Gi"),
                    bound_claim("data-web-2-0", "1Gi"), bound_claim("data-web-2-3", "1Gi")});
  EXPECT_EQ(names(plan), (Names{"data-web-2-0", "data-web-2-3"}));
}

TEST(Planner, ChoosesExpandWhenTheClassAllowsExpansionAndItIsAPureGrow) {
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "1Gi")});
  EXPECT_EQ(plan.path, Path::Expand);
  EXPECT_EQ(plan.claims.size(), 2u);
}

TEST(Planner, ChoosesExpandWhenTheTemplateLeavesTheClassToTheClaim) {
  // No storageClassName in the template: the claims keep the class they were provisioned with.
  const Json sts = statefulset("web", 1, {{"data", "2Gi"}});
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", "standard")});
  EXPECT_EQ(plan.path, Path::Expand);
  EXPECT_EQ(plan.claims[0].to_class, "standard");
}

// Moving the volumes to another class at the same size: the copy path, to claims of that class.
TEST(Planner, AClassChangeAloneIsACopyToTheNewClassAtTheSameSize) {
  const Json sts = statefulset("web", 2, {{"data", "1Gi", "standard"}});
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", "fixed"),
                                        bound_claim("data-web-1", "1Gi", "standard")});
  ASSERT_EQ(names(plan), Names{"data-web-0"});  // data-web-1 is already as the template asks
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.claims[0].from_class, "fixed");
  EXPECT_EQ(plan.claims[0].to_class, "standard");
  EXPECT_EQ(plan.claims[0].from_size, plan.claims[0].to_size);
  EXPECT_EQ(plan.trigger, "data class fixed -> standard (1 claim)");
}

TEST(Planner, AGrowAndAClassChangeSayBoth) {
  const Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}});
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", "fixed")});
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.trigger, "data 1Gi -> 2Gi, class fixed -> standard (1 claim)");
}

// A template that names no class asks for none: claims of any class at its size are left alone.
TEST(Planner, ATemplateWithoutAClassChangesNoClaimsClass) {
  const Json sts = statefulset("web", 2, {{"data", "1Gi"}});
  auto plan = plan_resize(
      sts, {bound_claim("data-web-0", "1Gi", "fixed"), bound_claim("data-web-1", "1Gi", "")},
      classes());
  ASSERT_TRUE(plan) << plan.error();
  EXPECT_FALSE(plan->has_value());
}

TEST(Planner, ChoosesCopyWhenTheClassForbidsExpansion) {
  for (const std::string class_name : {"fixed", "legacy"}) {
    SCOPED_TRACE(class_name);
    const Json sts = statefulset("web", 1, {{"data", "2Gi", class_name}});
    const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", class_name)});
    EXPECT_EQ(plan.path, Path::Copy);
    EXPECT_EQ(plan.claims[0].from_class, class_name);
  }
}

TEST(Planner, ChoosesCopyWhenTheClaimHasNoClass) {
  // Neither the claim nor the template names a class: nothing says expansion is allowed.
  const Json sts = statefulset("web", 1, {{"data", "2Gi"}});
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", "")});
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.claims[0].from_class, "");
}

TEST(Planner, ChoosesCopyWhenAnyPlannedClaimNeedsCopy) {
  // Ordinal 1 was provisioned in a class that cannot expand; the whole operation copies.
  const Json sts = statefulset("web", 3, {{"data", "2Gi"}});
  const ResizePlan plan = plan_of(
      sts, {bound_claim("data-web-0", "1Gi", "standard"), bound_claim("data-web-1", "1Gi", "fixed"),
            bound_claim("data-web-2", "1Gi", "standard")});
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.claims.size(), 3u);
}

TEST(Planner, AnUnplannedClaimInAFixedClassDoesNotForceCopy) {
  const Json sts = statefulset("web", 2, {{"data", "2Gi"}});
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi", "standard"),
                                        bound_claim("data-web-1", "2Gi", "fixed")});
  EXPECT_EQ(plan.path, Path::Expand);
  EXPECT_EQ(names(plan), Names{"data-web-0"});
}

TEST(Planner, ChoosesCopyWhenTheTemplateChangesTheStorageClass) {
  // Both classes expand, but a volume cannot move between classes in place.
  std::vector<Json> storage_classes = classes();
  storage_classes.push_back(storage_class("fast", true));
  const Json sts = statefulset("web", 1, {{"data", "2Gi", "fast"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi", "standard")}, storage_classes);
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.claims[0].from_class, "standard");
  EXPECT_EQ(plan.claims[0].to_class, "fast");
}

TEST(Planner, PlansEachTemplateOnItsOwn) {
  // "data" grows in an expandable class, "logs" is already right: only data is planned.
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}, {"logs", "500M", "fixed"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "1Gi"),
                    bound_claim("logs-web-0", "500M", "fixed"),
                    bound_claim("logs-web-1", "500M", "fixed")});
  EXPECT_EQ(names(plan), (Names{"data-web-0", "data-web-1"}));
  EXPECT_EQ(plan.path, Path::Expand);
  EXPECT_EQ(plan.trigger, "data 1Gi -> 2Gi (2 claims)");
}

TEST(Planner, TwoGrowingTemplatesAreOneOperationThatCopiesIfEitherMust) {
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}, {"logs", "1G", "fixed"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "2Gi"),
                    bound_claim("logs-web-0", "500M", "fixed"),
                    bound_claim("logs-web-1", "500M", "fixed")});
  EXPECT_EQ(names(plan), (Names{"data-web-0", "logs-web-0", "logs-web-1"}));
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_EQ(plan.claims[1].template_name, "logs");
  EXPECT_EQ(plan.claims[1].to_size, q("1G"));
  EXPECT_EQ(plan.trigger, "data 1Gi -> 2Gi, logs 500M -> 1G (3 claims)");
}

TEST(Planner, PlansAShrinkOnTheCopyPathEvenWhereTheClassExpands) {
  // A volume never shrinks in place: copied into a smaller claim once its data is known to fit.
  const Json sts = statefulset("web", 2, {{"data", "1Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "2Gi")});
  EXPECT_EQ(names(plan), (Names{"data-web-1"}));
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_TRUE(shrinks(plan.claims[0]));
  EXPECT_EQ(plan.trigger, "data 2Gi -> 1Gi (1 claim)");
}

TEST(Planner, PlansAShrinkBesideAGrowOnTheCopyPath) {
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}});
  const ResizePlan plan =
      plan_of(sts, {bound_claim("data-web-0", "1Gi"), bound_claim("data-web-1", "3Gi")});
  EXPECT_EQ(names(plan), (Names{"data-web-0", "data-web-1"}));
  EXPECT_EQ(plan.path, Path::Copy);
  EXPECT_FALSE(shrinks(plan.claims[0]));
  EXPECT_TRUE(shrinks(plan.claims[1]));
}

TEST(Planner, RefusesToShrinkAReadWriteOncePodClaim) {
  const Json sts = statefulset("web", 1, {{"data", "1Gi", "standard"}});
  Json claim = bound_claim("data-web-0", "2Gi");
  claim["spec"]["accessModes"] = Json::array({"ReadWriteOncePod"});
  const std::string message = refusal_of(sts, {claim});
  EXPECT_NE(message.find("data-web-0"), std::string::npos) << message;
  EXPECT_NE(message.find("ReadWriteOncePod"), std::string::npos) << message;
}

TEST(Planner, RefusesATemplateWithoutStorageRequest) {
  const Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}, {"scratch", ""}});
  const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi")});
  EXPECT_NE(message.find("\"scratch\""), std::string::npos) << message;
  EXPECT_NE(message.find("no storage request"), std::string::npos) << message;
}

TEST(Planner, RefusesAnUnparsableQuantity) {
  {
    SCOPED_TRACE("in the template");
    const Json sts = statefulset("web", 1, {{"data", "2 gigs", "standard"}});
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi")});
    EXPECT_NE(message.find("2 gigs"), std::string::npos) << message;
  }
  {
    SCOPED_TRACE("in a claim");
    const Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}});
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1GiB")});
    EXPECT_NE(message.find("1GiB"), std::string::npos) << message;
  }
}

TEST(Planner, RefusesAMissingStorageClass) {
  {
    SCOPED_TRACE("the claim's class");
    const Json sts = statefulset("web", 1, {{"data", "2Gi"}});
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi", "gone")});
    EXPECT_NE(message.find("\"gone\""), std::string::npos) << message;
    EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
  }
  {
    SCOPED_TRACE("the template's class");
    const Json sts = statefulset("web", 1, {{"data", "2Gi", "premium"}});
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi", "standard")});
    EXPECT_NE(message.find("\"premium\""), std::string::npos) << message;
  }
}

TEST(Planner, RefusesAMalformedStatefulSet) {
  {
    SCOPED_TRACE("volumeClaimTemplates not an array");
    Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}});
    sts["spec"]["volumeClaimTemplates"] = Json{{"name", "data"}};
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi")});
    EXPECT_NE(message.find("volumeClaimTemplates"), std::string::npos) << message;
  }
  {
    SCOPED_TRACE("replicas a string");
    Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}});
    sts["spec"]["replicas"] = "3";
    const std::string message = refusal_of(sts, {bound_claim("data-web-0", "1Gi")});
    EXPECT_NE(message.find("replicas"), std::string::npos) << message;
  }
  {
    SCOPED_TRACE("no name");
    Json sts = statefulset("web", 1, {{"data", "2Gi", "standard"}});
    sts["metadata"].erase("name");
    refusal_of(sts, {bound_claim("data-web-0", "1Gi")});
  }
}

TEST(Planner, SkipsAClaimThatIsBeingDeleted) {
  // A terminating claim is held only by the pvc-protection finalizer until its Pod goes; then
  // the StatefulSet controller recreates it from the template, already at the new size. Resizing
  // it would act on a volume someone chose to delete: a copy Job's Pod cannot even mount it.
  const Json sts = statefulset("web", 2, {{"data", "2Gi", "standard"}});
  Json terminating = bound_claim("data-web-1", "1Gi");
  terminating["metadata"]["deletionTimestamp"] = "2026-11-23T07:40:00Z";
  terminating["metadata"]["deletionGracePeriodSeconds"] = 0;
  const ResizePlan plan = plan_of(sts, {bound_claim("data-web-0", "1Gi"), terminating});
  EXPECT_EQ(names(plan), Names{"data-web-0"});
}

TEST(Planner, NeitherPlansNorRefusesAClaimThatIsBeingDeleted) {
  // Larger than the template: were it live, this would be a shrink and refused.
  const Json sts = statefulset("web", 1, {{"data", "2Gi", "fixed"}});
  Json terminating = bound_claim("data-web-0", "3Gi", "fixed");
  terminating["metadata"]["deletionTimestamp"] = "2026-11-23T07:40:00Z";
  auto result = plan_resize(sts, {terminating}, classes());
  ASSERT_TRUE(result.has_value()) << result.error();
  EXPECT_FALSE(result->has_value());
}

}  // namespace
}  // namespace stsresize
