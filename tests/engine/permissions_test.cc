// A namespace-scoped installation (no cluster-level rights) and RBAC mistakes: StorageClasses
// that may not be listed degrade the plan to the copy path with a Normal event; any other
// Forbidden answer names the missing rule once (Warning event, result message), changes
// nothing further, and the operation completes once the rule is granted.
#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

KubeError forbidden(const std::string& verb, const std::string& resource) {
  return KubeError{KubeErrorCode::Forbidden,
                   resource +
                       " is forbidden: User \"system:serviceaccount:shop:stsresize\" cannot " +
                       verb + " resource \"" + resource + "\""};
}

class Permissions : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  // One copy at a time: a copy Job is still to be created after a denial is resolved, so that
  // a denial coming back is met again (ADenialIsReportedAgainAfterItWasResolvedAndCameBack).
  static EngineSettings one_copy_at_a_time() {
    EngineSettings settings;
    settings.max_parallel_copies = 1;
    return settings;
  }
  Reconciler reconciler{world.kube, journal, world.clock, world.events, one_copy_at_a_time()};

  ReconcileResult reconcile() { return reconciler.reconcile(kNs, kSts); }

  void forbid_listing_storage_classes() {
    world.kube.inject({.verb = Verb::List,
                       .kind = Kind::StorageClass,
                       .times = FaultRule::kForever,
                       .error = forbidden("list", "storageclasses")});
  }

  // Reconciles (letting the cluster work in between) until idle; the results on the way.
  std::vector<ReconcileResult> run_to_idle() {
    std::vector<ReconcileResult> results;
    reconcile_until(reconciler, world,
                    {"rest (idle or terminal)",
                     [&](const ReconcileResult& result) {
                       results.push_back(result);
                       return at_rest().reached(result);
                     }},
                    {.limit = 300, .terminal_fails = false});
    return results;
  }

  std::optional<Operation> operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }

  std::string last_operation() {
    auto value = k8s::annotation(world.live_sts(), kLastOperationAnnotation);
    return value && value->has_value() ? **value : "";
  }

  void expect_resized_with_data_intact() {
    EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    }
  }
};

TEST_F(Permissions, ExpandableClassIsExpandedInPlaceWhenStorageClassesCanBeRead) {
  world.seed(/*expandable=*/true);
  reconcile();
  auto op = operation();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->path, Path::Expand);
  EXPECT_FALSE(world.events.contains("StorageClassesUnreadable"));
}

TEST_F(Permissions, ForbiddenStorageClassesTakeTheCopyPathWithAnEventSayingWhy) {
  world.seed(/*expandable=*/true);
  forbid_listing_storage_classes();
  const auto results = run_to_idle();
  ASSERT_TRUE(results.back().is(ReconcileResult::Kind::Idle)) << results.back().message;
  for (const ReconcileResult& result : results) {
    EXPECT_FALSE(result.is(ReconcileResult::Kind::Retry)) << result.message;
  }
  EXPECT_NE(last_operation().find("Completed"), std::string::npos) << last_operation();
  const auto unreadable = world.events.with_reason("StorageClassesUnreadable");
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].severity, EventSeverity::Normal);
  EXPECT_NE(unreadable[0].message.find("taking the copy path"), std::string::npos);
  EXPECT_FALSE(world.events.contains("Forbidden"));
  // The copy path: backup claims were created (and removed again).
  bool backed_up = false;
  for (const Mutation& mutation : world.kube.history()) {
    backed_up = backed_up || (mutation.actor == Actor::Client && mutation.verb == Verb::Create &&
                              mutation.ref.kind == Kind::Job);
  }
  EXPECT_TRUE(backed_up);
  expect_resized_with_data_intact();
}

TEST_F(Permissions, ExplicitRequestIsAcceptedWhenStorageClassesCannotBeChecked) {
  world.seed(/*expandable=*/false, "2Gi", ResizeTrigger::Request);
  forbid_listing_storage_classes();
  const auto results = run_to_idle();
  ASSERT_TRUE(results.back().is(ReconcileResult::Kind::Idle)) << results.back().message;
  EXPECT_FALSE(world.events.contains("InvalidResizeRequest"));
  EXPECT_TRUE(world.events.contains("StorageClassesUnreadable"));
  EXPECT_NE(last_operation().find("Completed"), std::string::npos) << last_operation();
  expect_resized_with_data_intact();
}

TEST_F(Permissions, ForbiddenDeleteNamesTheRuleOnceChangesNothingAndCompletesWhenGranted) {
  world.seed(/*expandable=*/false);
  world.kube.inject({.verb = Verb::Remove,
                     .kind = Kind::PersistentVolumeClaim,
                     .times = FaultRule::kForever,
                     .error = forbidden("delete", "persistentvolumeclaims")});
  const ReconcileResult result = reconcile_until(
      reconciler, world,
      {"a retry", [](const ReconcileResult& r) { return r.is(ReconcileResult::Kind::Retry); }},
      {.limit = 100, .terminal_fails = false});
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Retry)) << result.message;
  EXPECT_TRUE(result.message.starts_with(
      "Forbidden: cannot delete persistentvolumeclaims in namespace shop (RBAC: grant verbs "
      "[\"delete\"] on resources [\"persistentvolumeclaims\"] in apiGroups [\"\"])"))
      << result.message;
  ASSERT_TRUE(operation());
  EXPECT_EQ(operation()->phase, Phase::Recreating);
  // Retried many times: the same denial, one event; no claim was deleted.
  for (int retry = 0; retry < 5; ++retry) {
    world.settle(1);
    EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Retry));
  }
  const auto warnings = world.events.with_reason("Forbidden");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].severity, EventSeverity::Warning);
  EXPECT_EQ(warnings[0].about, world.sts());
  EXPECT_NE(warnings[0].message.find("cannot delete persistentvolumeclaims in namespace shop"),
            std::string::npos);
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_FALSE(*k8s::is_being_deleted(*pvc)) << name;
  }
  ASSERT_TRUE(operation());
  EXPECT_EQ(operation()->phase, Phase::Recreating);
  EXPECT_FALSE(operation()->claims.front().source_deleted);

  world.kube.clear_faults();  // an administrator grants the verb
  const auto results = run_to_idle();
  ASSERT_TRUE(results.back().is(ReconcileResult::Kind::Idle)) << results.back().message;
  EXPECT_NE(last_operation().find("Completed"), std::string::npos) << last_operation();
  EXPECT_EQ(world.events.with_reason("Forbidden").size(), 1u);
  expect_resized_with_data_intact();
}

TEST_F(Permissions, ADenialIsReportedAgainAfterItWasResolvedAndCameBack) {
  world.seed(/*expandable=*/false);
  const FaultRule deny_jobs{.verb = Verb::Create,
                            .kind = Kind::Job,
                            .times = FaultRule::kForever,
                            .error = forbidden("create", "jobs")};
  world.kube.inject(deny_jobs);
  ReconcileResult result;
  for (int round = 0; round < 50 && !result.is(ReconcileResult::Kind::Retry); ++round) {
    result = reconcile();
    world.settle(1);
  }
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Retry)) << result.message;
  EXPECT_NE(result.message.find("cannot create jobs in namespace shop"), std::string::npos);
  EXPECT_NE(result.message.find("apiGroups [\"batch\"]"), std::string::npos);
  EXPECT_EQ(world.events.with_reason("Forbidden").size(), 1u);
  world.kube.clear_faults();
  EXPECT_FALSE(reconcile().is(ReconcileResult::Kind::Retry));
  world.kube.inject(deny_jobs);
  result = {};
  for (int round = 0; round < 50 && !result.is(ReconcileResult::Kind::Retry); ++round) {
    world.settle(1);
    result = reconcile();
  }
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Retry)) << result.message;
  EXPECT_EQ(world.events.with_reason("Forbidden").size(), 2u);
}

TEST(DenialTrackingKubernetes, NamesVerbResourceGroupAndNamespaceOfTheRefusedCall) {
  ManualClock clock;
  FakeKubernetes fake{clock};
  DenialTrackingKubernetes tracked{fake};
  fake.inject({.verb = Verb::UpdateScale,
               .times = FaultRule::kForever,
               .error = KubeError{KubeErrorCode::Forbidden, "no scale for you"}});
  EXPECT_FALSE(tracked.get({Kind::StatefulSet, "shop", "web"}));  // NotFound: not a denial
  EXPECT_FALSE(tracked.last_denial());
  EXPECT_FALSE(tracked.update_scale({Kind::StatefulSet, "shop", "web"}, 0, ""));
  ASSERT_TRUE(tracked.last_denial());
  EXPECT_EQ(*tracked.last_denial(),
            (PermissionDenial{"update", "statefulsets/scale", "apps", "shop", "no scale for you"}));
  fake.inject({.verb = Verb::List,
               .kind = Kind::StorageClass,
               .error = KubeError{KubeErrorCode::Forbidden, "cluster-scoped"}});
  EXPECT_FALSE(tracked.list(Kind::StorageClass, ""));
  EXPECT_EQ(describe(*tracked.last_denial()),
            "cannot list storageclasses cluster-wide (RBAC: grant verbs [\"list\"] on resources "
            "[\"storageclasses\"] in apiGroups [\"storage.k8s.io\"])");
  tracked.forget();
  EXPECT_FALSE(tracked.last_denial());
}

}  // namespace
}  // namespace stsresize
