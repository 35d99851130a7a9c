// FakeKubernetes beyond the contract suite: test controls (faults, crash budget, history, raw
// access) and API rules a cluster without nodes cannot show (bound claims, owner references).
#include "adapters/fake/fake_kubernetes.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "tests/support/kube_assertions.h"

namespace stsresize {
namespace {

Json config_map(const std::string& name, Json labels = Json::object()) {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", labels}}},
              {"data", {{"key", "value"}}}};
}

Json claim(const std::string& name, const std::string& size, const std::string& storage_class) {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", storage_class},
                {"resources", {{"requests", {{"storage", size}}}}}}}};
}

Json storage_class(const std::string& name, bool expandable) {
  return Json{{"metadata", {{"name", name}}},
              {"provisioner", "fake.csi"},
              {"allowVolumeExpansion", expandable}};
}

class FakeKubernetesTest : public ::testing::Test {
 protected:
  ManualClock clock;
  FakeKubernetes kube{clock};

  // A claim as the volume controllers leave it once bound.
  void bind(const std::string& name, const std::string& capacity) {
    ASSERT_TRUE(kube.mutate_raw({Kind::PersistentVolumeClaim, "ns", name}, [&](Json& pvc) {
      pvc["spec"]["volumeName"] = "pv-" + name;
      pvc["status"] = Json{{"phase", "Bound"}, {"capacity", {{"storage", capacity}}}};
    }));
  }
  KubeResult<Json> resize(const std::string& name, const std::string& size) {
    return kube.patch({Kind::PersistentVolumeClaim, "ns", name}, PatchType::Merge,
                      Json{{"spec", {{"resources", {{"requests", {{"storage", size}}}}}}}});
  }
};

TEST_F(FakeKubernetesTest, InjectedErrorFailsTheNextMatchingCallsOnly) {
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("a")));
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("b")));
  kube.inject({.verb = Verb::Get,
               .kind = Kind::ConfigMap,
               .name = "a",
               .times = 2,
               .error = KubeError{KubeErrorCode::ServerError, "etcd timeout"}});
  auto first = kube.get({Kind::ConfigMap, "ns", "a"});
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code, KubeErrorCode::ServerError);
  EXPECT_TRUE(kube.get({Kind::ConfigMap, "ns", "b"})) << "another name does not match";
  EXPECT_FALSE(kube.get({Kind::ConfigMap, "ns", "a"}));
  EXPECT_TRUE(kube.get({Kind::ConfigMap, "ns", "a"})) << "the rule is spent after 2 failures";
}

TEST_F(FakeKubernetesTest, InjectedErrorBeforeAWriteLeavesNoTrace) {
  kube.inject({.verb = Verb::Create, .error = KubeError{KubeErrorCode::Unreachable, "reset"}});
  EXPECT_FALSE(kube.create(Kind::ConfigMap, config_map("a")));
  EXPECT_FALSE(kube.get_raw({Kind::ConfigMap, "ns", "a"}));
  EXPECT_TRUE(kube.history().empty());
}

TEST_F(FakeKubernetesTest, LostResponseAppliesTheWriteButReportsTheError) {
  kube.inject({.verb = Verb::Create,
               .error = KubeError{KubeErrorCode::Unreachable, "connection reset"},
               .fail_after_applying = true});
  auto created = kube.create(Kind::ConfigMap, config_map("a"));
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, KubeErrorCode::Unreachable);
  EXPECT_TRUE(kube.get_raw({Kind::ConfigMap, "ns", "a"}));
  auto retried = kube.create(Kind::ConfigMap, config_map("a"));
  ASSERT_FALSE(retried);
  EXPECT_EQ(retried.error().code, KubeErrorCode::AlreadyExists);
}

TEST_F(FakeKubernetesTest, FaultActionRunsBeforeTheCallAndCanRaceIt) {
  auto created = kube.create(Kind::ConfigMap, config_map("raced"));
  ASSERT_OK(created);
  kube.inject({.verb = Verb::Update, .action = [&] {
                 clock.advance(std::chrono::seconds{3});
                 ASSERT_TRUE(kube.system().patch({Kind::ConfigMap, "ns", "raced"}, PatchType::Merge,
                                                 Json{{"data", {{"key", "theirs"}}}}));
               }});
  const TimePoint before = clock.now();
  Json mine = *created;
  mine["data"]["key"] = "mine";
  auto written = kube.update(Kind::ConfigMap, mine);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, KubeErrorCode::Conflict);
  EXPECT_EQ(clock.now() - before, std::chrono::seconds{3});
}

TEST_F(FakeKubernetesTest, MutationBudgetCrashesEveryCallAfterTheKthWrite) {
  kube.set_mutation_budget(2);
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("one")));
  {
    SCOPED_TRACE("reads do not spend the budget");
    ASSERT_OK(kube.get({Kind::ConfigMap, "ns", "one"}));
  }
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("two")));
  auto third = kube.create(Kind::ConfigMap, config_map("three"));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, KubeErrorCode::Unreachable);
  EXPECT_FALSE(kube.get({Kind::ConfigMap, "ns", "one"})) << "a crashed client reads nothing";
  EXPECT_FALSE(kube.get_raw({Kind::ConfigMap, "ns", "three"}));

  kube.set_mutation_budget(std::nullopt);  // the controller restarts
  EXPECT_TRUE(kube.create(Kind::ConfigMap, config_map("three")));
  EXPECT_EQ(kube.mutations(), 3);
}

TEST_F(FakeKubernetesTest, SystemWritesIgnoreFaultsAndBudgetAndAreNotCounted) {
  kube.set_mutation_budget(0);
  kube.inject({.times = FaultRule::kForever, .error = KubeError{KubeErrorCode::ServerError, "x"}});
  ASSERT_OK(kube.system().create(Kind::ConfigMap, config_map("setup")));
  EXPECT_EQ(kube.mutations(), 0);
  EXPECT_EQ(kube.calls(Verb::Create), 0);
  ASSERT_EQ(kube.history().size(), 1u);
  EXPECT_EQ(kube.history()[0].actor, Actor::System);
}

TEST_F(FakeKubernetesTest, CountsCallsByVerbAndKindIncludingFailures) {
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("a")));
  EXPECT_FALSE(kube.get({Kind::ConfigMap, "ns", "missing"}));
  EXPECT_TRUE(kube.get({Kind::ConfigMap, "ns", "a"}));
  EXPECT_FALSE(kube.get({Kind::Pod, "ns", "a"}));
  EXPECT_EQ(kube.calls(Verb::Get), 3);
  EXPECT_EQ(kube.calls(Verb::Get, Kind::ConfigMap), 2);
  EXPECT_EQ(kube.calls(Verb::Create, Kind::ConfigMap), 1);
  EXPECT_EQ(kube.calls(Verb::Remove), 0);
}

TEST_F(FakeKubernetesTest, HistoryRecordsEveryWriteWithTheResultingObject) {
  std::vector<std::int64_t> observed;
  kube.on_mutation([&](const Mutation& mutation) { observed.push_back(mutation.sequence); });
  auto created = kube.create(Kind::ConfigMap, config_map("h"));
  ASSERT_OK(created);
  clock.advance(std::chrono::seconds{10});
  ASSERT_OK(
      kube.patch({Kind::ConfigMap, "ns", "h"}, PatchType::Merge, Json{{"data", {{"key", "2"}}}}));
  ASSERT_OK(
      kube.patch({Kind::ConfigMap, "ns", "h"}, PatchType::Merge, Json{{"data", {{"key", "2"}}}}));
  ASSERT_OK(kube.remove({Kind::ConfigMap, "ns", "h"}));

  const auto history = kube.history();
  ASSERT_EQ(history.size(), 3u) << "the no-op patch is not a write";
  EXPECT_EQ(history[0].verb, Verb::Create);
  EXPECT_EQ(history[1].verb, Verb::Patch);
  EXPECT_EQ(history[1].object["data"]["key"], "2");
  EXPECT_EQ(history[1].time - history[0].time, std::chrono::seconds{10});
  EXPECT_EQ(history[2].verb, Verb::Remove);
  EXPECT_TRUE(history[2].deleted);
  EXPECT_EQ(history[2].ref, (ObjectRef{Kind::ConfigMap, "ns", "h"}));
  EXPECT_EQ(observed, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(kube.mutations(), 4) << "the no-op patch was still a successful call";
}

TEST_F(FakeKubernetesTest, UidsAreDeterministicPerSeedAndDistinct) {
  FakeKubernetes same_seed{clock};
  auto a = kube.create(Kind::ConfigMap, config_map("a"));
  auto b = kube.create(Kind::ConfigMap, config_map("b"));
  auto a_again = same_seed.create(Kind::ConfigMap, config_map("a"));
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(a_again);
  EXPECT_NE(a->at("metadata")["uid"], b->at("metadata")["uid"]);
  EXPECT_EQ(a->at("metadata")["uid"], a_again->at("metadata")["uid"]);
  EXPECT_EQ(a->at("metadata")["uid"].get<std::string>().size(), 36u);
}

TEST_F(FakeKubernetesTest, GenerateNameMakesAFreshName) {
  auto created = kube.create(Kind::ConfigMap,
                             Json{{"metadata", {{"generateName", "copy-"}, {"namespace", "ns"}}}});
  ASSERT_OK(created);
  const std::string name = created->at("metadata")["name"];
  EXPECT_TRUE(name.starts_with("copy-"));
  EXPECT_EQ(name.size(), 10u);
}

TEST_F(FakeKubernetesTest, InvalidNamesAndMissingNamespaceAreInvalid) {
  for (const Json& body : {config_map("Upper"), config_map(""), config_map("under_score")}) {
    auto created = kube.create(Kind::ConfigMap, body);
    ASSERT_FALSE(created);
    EXPECT_EQ(created.error().code, KubeErrorCode::Invalid) << body.dump();
  }
  auto no_namespace = kube.create(Kind::ConfigMap, Json{{"metadata", {{"name", "x"}}}});
  ASSERT_FALSE(no_namespace);
  EXPECT_EQ(no_namespace.error().code, KubeErrorCode::Invalid);
}

TEST_F(FakeKubernetesTest, BoundClaimGrowsOnlyWhenItsClassAllowsExpansion) {
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("fixed", false)));
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("elastic", true)));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("fixed-claim", "1Gi", "fixed")));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("elastic-claim", "1Gi", "elastic")));
  bind("fixed-claim", "1Gi");
  bind("elastic-claim", "1Gi");

  auto refused = resize("fixed-claim", "2Gi");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, KubeErrorCode::Forbidden);
  auto grown = resize("elastic-claim", "2Gi");
  ASSERT_OK(grown);
  EXPECT_EQ(grown->at("spec")["resources"]["requests"]["storage"], "2Gi");
  EXPECT_EQ(grown->at("status")["capacity"]["storage"], "1Gi") << "the resizer has not run";
}

TEST_F(FakeKubernetesTest, BoundClaimCannotShrinkToItsCapacityButMayUndoAFailedExpansion) {
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("elastic", true)));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("c", "1Gi", "elastic")));
  bind("c", "1Gi");
  ASSERT_OK(resize("c", "4Gi"));
  auto to_capacity = resize("c", "1Gi");
  ASSERT_FALSE(to_capacity);
  EXPECT_EQ(to_capacity.error().code, KubeErrorCode::Invalid);
  ASSERT_OK(resize("c", "2Gi"));  // RecoverVolumeExpansionFailure: above capacity is allowed
}

TEST_F(FakeKubernetesTest, BoundClaimSpecOtherThanRequestsIsImmutable) {
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("c", "1Gi", "any")));
  bind("c", "1Gi");
  auto changed = kube.patch({Kind::PersistentVolumeClaim, "ns", "c"}, PatchType::Merge,
                            Json{{"spec", {{"accessModes", {"ReadWriteMany"}}}}});
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, KubeErrorCode::Invalid);
}

TEST_F(FakeKubernetesTest, ClaimWithoutClassGetsTheDefaultClass) {
  Json fast = storage_class("fast", true);
  fast["metadata"]["annotations"] = {{"storageclass.kubernetes.io/is-default-class", "true"}};
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("slow", false)));
  ASSERT_OK(kube.create(Kind::StorageClass, fast));
  Json body = claim("c", "1Gi", "");
  body["spec"].erase("storageClassName");
  auto created = kube.create(Kind::PersistentVolumeClaim, body);
  ASSERT_OK(created);
  EXPECT_EQ(created->at("spec")["storageClassName"], "fast");
}

Json owned_config_map(const std::string& name, const Json& owner, Kind owner_kind) {
  Json object = config_map(name);
  object["metadata"]["ownerReferences"] = {{{"apiVersion", owner["apiVersion"]},
                                            {"kind", to_string(owner_kind)},
                                            {"name", owner["metadata"]["name"]},
                                            {"uid", owner["metadata"]["uid"]},
                                            {"controller", true}}};
  return object;
}

Json job(const std::string& name) {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec",
               {{"template",
                 {{"spec",
                   {{"restartPolicy", "Never"},
                    {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}};
}

TEST_F(FakeKubernetesTest, DeletingAJobWithDefaultPropagationOrphansItsDependents) {
  auto owner = kube.create(Kind::Job, job("copy"));
  ASSERT_OK(owner);
  ASSERT_OK(kube.create(Kind::ConfigMap, owned_config_map("dependent", *owner, Kind::Job)));
  ASSERT_OK(kube.remove({Kind::Job, "ns", "copy"}));
  auto dependent = kube.get_raw({Kind::ConfigMap, "ns", "dependent"});
  ASSERT_TRUE(dependent);
  EXPECT_FALSE(dependent->at("metadata").contains("ownerReferences"));
}

TEST_F(FakeKubernetesTest, BackgroundDeletionLeavesDependentsToTheGarbageCollector) {
  auto owner = kube.create(Kind::Job, job("copy"));
  ASSERT_OK(owner);
  ASSERT_OK(kube.create(Kind::ConfigMap, owned_config_map("dependent", *owner, Kind::Job)));
  DeleteOptions background;
  background.propagation = Propagation::Background;
  ASSERT_OK(kube.remove({Kind::Job, "ns", "copy"}, background));
  EXPECT_FALSE(kube.get_raw({Kind::Job, "ns", "copy"}));
  auto dependent = kube.get_raw({Kind::ConfigMap, "ns", "dependent"});
  ASSERT_TRUE(dependent);
  EXPECT_TRUE(dependent->at("metadata").contains("ownerReferences"));
}

TEST_F(FakeKubernetesTest, JobCreationGeneratesSelectorAndPodLabels) {
  auto created = kube.create(Kind::Job, job("copy"));
  ASSERT_OK(created);
  const std::string uid = created->at("metadata")["uid"];
  EXPECT_EQ(created->at("spec")["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            uid);
  EXPECT_EQ(created->at("spec")["template"]["metadata"]["labels"]["job-name"], "copy");
  EXPECT_EQ(created->at("spec")["backoffLimit"], 6);
  EXPECT_EQ(created->at("metadata")["generation"], 1);
}

TEST_F(FakeKubernetesTest, JobTemplateIsImmutable) {
  ASSERT_OK(kube.create(Kind::Job, job("copy")));
  auto changed =
      kube.patch({Kind::Job, "ns", "copy"}, PatchType::Merge,
                 Json{{"spec", {{"template", {{"spec", {{"activeDeadlineSeconds", 5}}}}}}}});
  ASSERT_FALSE(changed);
  EXPECT_EQ(changed.error().code, KubeErrorCode::Invalid);
}

TEST_F(FakeKubernetesTest, LeaseUpdateNeedsAResourceVersion) {
  ASSERT_OK(kube.create(Kind::Lease, Json{{"metadata", {{"name", "leader"}, {"namespace", "ns"}}},
                                          {"spec", {{"holderIdentity", "a"}}}}));
  auto written =
      kube.update(Kind::Lease, Json{{"metadata", {{"name", "leader"}, {"namespace", "ns"}}},
                                    {"spec", {{"holderIdentity", "b"}}}});
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().code, KubeErrorCode::Invalid);
}

TEST_F(FakeKubernetesTest, RawWritesBypassValidationButKeepFinalizerSemantics) {
  Json invalid = config_map("Not_Valid");
  kube.put_raw(Kind::ConfigMap, invalid);
  EXPECT_TRUE(kube.get({Kind::ConfigMap, "ns", "Not_Valid"}));

  Json held = config_map("held");
  held["metadata"]["finalizers"] = {"x"};
  ASSERT_OK(kube.create(Kind::ConfigMap, held));
  ASSERT_OK(kube.remove({Kind::ConfigMap, "ns", "held"}));
  auto released = kube.mutate_raw({Kind::ConfigMap, "ns", "held"},
                                  [](Json& object) { object["metadata"].erase("finalizers"); });
  EXPECT_FALSE(released);
  EXPECT_FALSE(kube.get_raw({Kind::ConfigMap, "ns", "held"}));
}

TEST_F(FakeKubernetesTest, ListOfAllNamespacesAndClusterScopedKinds) {
  ASSERT_OK(kube.create(Kind::ConfigMap, config_map("a")));
  Json other = config_map("b");
  other["metadata"]["namespace"] = "other";
  ASSERT_OK(kube.create(Kind::ConfigMap, other));
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("sc", true)));
  auto all = kube.list(Kind::ConfigMap, "");
  ASSERT_OK(all);
  EXPECT_EQ(all->items.size(), 2u);
  auto one = kube.list(Kind::ConfigMap, "other");
  ASSERT_OK(one);
  ASSERT_EQ(one->items.size(), 1u);
  EXPECT_EQ(one->items[0]["metadata"]["name"], "b");
  auto classes = kube.list(Kind::StorageClass, "");
  ASSERT_OK(classes);
  ASSERT_EQ(classes->items.size(), 1u);
  EXPECT_FALSE(classes->items[0]["metadata"].contains("namespace"));
}

}  // namespace
}  // namespace stsresize
