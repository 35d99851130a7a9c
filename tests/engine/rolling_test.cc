// The rolling strategy (stsresize.dev/strategy: rolling, states/rolling.h): one ordinal at a
// time, highest first, the others Ready; each replica taken down through the Eviction API, so a
// PodDisruptionBudget holds the resize rather than being bypassed; a failure scales back the
// rolling ordinal only. (Crash points: CrashResume.Rolling*; on the local control plane:
// E2E_Rolling_*.)
#include <gtest/gtest.h>

#include <algorithm>

#include "adapters/fake/fake_kubernetes.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/vocabulary.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class Rolling : public ::testing::Test {
 protected:
  void SetUp() override {
    world.seed(/*expandable=*/false);
    set_strategy("rolling");
    world.kube.on_mutation([this](const Mutation&) { note_ready(); });
  }

  void set_strategy(const std::string& value) {
    world.kube.mutate_raw(world.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kStrategyAnnotation}] = value;
    });
  }

  // The pods of the set Ready and not being deleted, at every write of anyone.
  void note_ready() {
    int ready = 0;
    for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
      const std::string name = pod["metadata"]["name"];
      if (name.find("stsresize") != std::string::npos ||
          pod["metadata"].contains("deletionTimestamp")) {
        continue;
      }
      if (k8s::pod_ready(pod).value_or(false)) ++ready;
      // While an ordinal is copied its StatefulSet is paused, not gone: the other pods keep it
      // as their owner (a budget counts them against its replicas; orphaned, it could not).
      const auto sts = world.kube.get_raw(world.sts());
      const std::string phase = sts ? (*sts)["metadata"]
                                          .value("annotations", Json::object())
                                          .value(std::string{kPhaseAnnotation}, "")
                                    : "";
      if ((phase == "BackingUp" || phase == "Recreating" || phase == "Restoring") &&
          pod["metadata"].value("ownerReferences", Json::array()).empty()) {
        orphaned_mid_copy = true;
      }
    }
    min_ready = std::min(min_ready, ready);
  }

  std::optional<Operation> state() const {
    auto sts = world.kube.get_raw(world.sts());
    if (!sts) return std::nullopt;
    auto op = read_operation(*sts);
    return op && op->has_value() ? std::optional<Operation>{**op} : std::nullopt;
  }

  std::map<std::string, std::string> pod_uids() const {
    std::map<std::string, std::string> uids;
    for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
      uids[pod["metadata"]["name"]] = pod["metadata"]["uid"];
    }
    return uids;
  }

  std::vector<std::string> evicted() const {
    std::vector<std::string> pods;
    for (const Mutation& m : world.kube.history()) {
      if (m.actor == Actor::Client && m.verb == Verb::Evict) pods.push_back(m.ref.name);
    }
    return pods;
  }

  void add_budget(const Json& spec) {
    Json budget{{"apiVersion", "policy/v1"},
                {"kind", "PodDisruptionBudget"},
                {"metadata", {{"name", "web"}, {"namespace", kNs}}},
                {"spec", spec}};
    budget["spec"]["selector"] = {{"matchLabels", {{"app", "web"}}}};
    ASSERT_TRUE(world.kube.system().create(Kind::PodDisruptionBudget, budget));
  }

  void expect_resized(const std::string& size, const std::vector<int>& ordinals) {
    for (const std::string& name : world.claim_names()) {
      const bool resized = std::ranges::any_of(
          ordinals, [&](int o) { return name.ends_with("-" + std::to_string(o)); });
      auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse(resized ? size : "1Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name))
          << name;
    }
  }

  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events, EngineSettings{}};
  int min_ready = kReplicas;
  bool orphaned_mid_copy = false;
};

// With a budget of one disruption, which counts the pods against their StatefulSet's replicas:
// a pause that orphaned them would leave it nothing to count with, and no eviction allowed.
TEST_F(Rolling, ResizesOneOrdinalAtATimeHighestFirstWithTheOthersReady) {
  add_budget({{"maxUnavailable", 1}});
  const auto before = pod_uids();
  reconcile_to_idle(reconciler, world, 600);
  EXPECT_FALSE(state()) << "operation still annotated";
  expect_resized("2Gi", {0, 1, 2});
  EXPECT_EQ(evicted(), (std::vector<std::string>{"web-2", "web-1", "web-0"}));
  EXPECT_GE(min_ready, kReplicas - 1);
  EXPECT_FALSE(orphaned_mid_copy);
  // Every pod was replaced once, each by its own eviction; none of them restarted otherwise.
  const auto after = pod_uids();
  for (const auto& [name, uid] : before) {
    if (!name.starts_with("web-")) continue;
    EXPECT_NE(after.at(name), uid) << name;
  }
  // Paused and resumed once per ordinal: never scaled.
  int creates = 0;
  for (const Mutation& m : world.kube.history()) {
    if (m.actor != Actor::Client || m.ref.kind != Kind::StatefulSet) continue;
    if (m.verb == Verb::Create) ++creates;
    if (m.verb == Verb::Update || m.verb == Verb::Create) {
      EXPECT_EQ(m.object["spec"].value("replicas", 0), kReplicas);
    }
  }
  EXPECT_EQ(creates, kReplicas);
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(sts["metadata"].value("finalizers", Json::array()).empty());
  EXPECT_FALSE(
      world.kube.get_raw(ObjectRef{Kind::ConfigMap, kNs, naming::definition_config_map(kSts)}));
  world.settle(2);
  EXPECT_EQ(world.ready_replicas(), kReplicas);
}

// A pod not yet replaced keeps running, untouched, until its own turn.
TEST_F(Rolling, AnOrdinalIsTouchedOnlyInItsTurn) {
  const auto before = pod_uids();
  reconcile_until(reconciler, world,
                  {"ordinal 1 stopped",
                   [&](const ReconcileResult&) {
                     auto op = state();
                     return op && op->rolling_ordinal() == 1 && op->phase == Phase::BackingUp;
                   }},
                  {.limit = 400});
  const auto now = pod_uids();
  EXPECT_EQ(now.at("web-0"), before.at("web-0"));
  EXPECT_FALSE(now.contains("web-1"));
  EXPECT_NE(now.at("web-2"), before.at("web-2"));
  expect_resized("2Gi", {2});
}

TEST_F(Rolling, ABudgetThatAllowsNoDisruptionHoldsTheResizeAndChangesNothing) {
  add_budget({{"minAvailable", kReplicas}});
  const auto before = pod_uids();
  reconcile_until(reconciler, world,
                  {"held in StoppingReplica",
                   [&](const ReconcileResult&) {
                     auto op = state();
                     return op && op->phase == Phase::StoppingReplica && !op->warning.empty();
                   }},
                  {.limit = 400});
  for (int i = 0; i < 20; ++i) {
    reconciler.reconcile(kNs, kSts);
    world.settle(2);
  }
  EXPECT_EQ(state()->phase, Phase::StoppingReplica);
  EXPECT_NE(state()->warning.find("disruption budget"), std::string::npos) << state()->warning;
  EXPECT_EQ(world.events.with_reason("EvictionBlocked").size(), 1u);
  EXPECT_TRUE(evicted().empty());
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(sts["metadata"].value("finalizers", Json::array()).empty());
  EXPECT_EQ(pod_uids(), before);
  expect_resized("2Gi", {});

  // Relaxed: one disruption allowed, and the roll goes on by itself.
  world.kube.mutate_raw(ObjectRef{Kind::PodDisruptionBudget, kNs, "web"},
                        [](Json& budget) { budget["spec"]["minAvailable"] = kReplicas - 1; });
  reconcile_to_idle(reconciler, world, 600);
  expect_resized("2Gi", {0, 1, 2});
  EXPECT_GE(min_ready, kReplicas - 1);
}

TEST_F(Rolling, AnUnknownStrategyFailsPlanningAndChangesNothing) {
  set_strategy("one-by-one");
  const auto before = pod_uids();
  reconcile_until(reconciler, world, at_rest(), {.limit = 50, .terminal_fails = false});
  auto op = state();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_NE(op->failure.find("one-by-one"), std::string::npos) << op->failure;
  EXPECT_EQ(pod_uids(), before);
  expect_resized("2Gi", {});
}

// A copy of the second ordinal fails: that ordinal scales back onto its intact sources (its
// StatefulSet resumed), the first one stays on its new claims, the last is never touched.
TEST_F(Rolling, AFailureInTheSecondOrdinalScalesBackThatOrdinalOnly) {
  EngineSettings settings;
  settings.copy_job.backoff_limit = 0;
  Reconciler failing{world.kube, journal, world.clock, world.events, settings};
  reconcile_until(failing, world,
                  {"ordinal 1 stopped",
                   [&](const ReconcileResult&) {
                     auto op = state();
                     return op && op->rolling_ordinal() == 1 && op->phase == Phase::BackingUp;
                   }},
                  {.limit = 400});
  world.cluster.fail_next_job_pods(4);
  reconcile_until(failing, world, at_rest(), {.limit = 400, .terminal_fails = false});
  auto op = state();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_TRUE(world.events.contains("ResizeFailed"));
  expect_resized("2Gi", {2});
  const Json sts = world.live_sts();
  EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(sts["metadata"].value("finalizers", Json::array()).empty());
  world.settle(4);
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  EXPECT_GE(min_ready, kReplicas - 1);
  for (const Json& pvc : world.kube.list_raw(Kind::PersistentVolumeClaim, kNs)) {
    EXPECT_EQ(pvc["metadata"]["name"].get<std::string>().find("-stsresize-"), std::string::npos)
        << pvc["metadata"]["name"];
  }
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

using namespace testing;

// spec.persistentVolumeClaimRetentionPolicy.whenScaled: Delete makes Kubernetes delete the claims
// of every replica a scale-down removes (the fake does as the StatefulSet controller does): the
// all-at-once copy path, which scales to 0, is refused; the rolling one never scales.
class WhenScaledDelete : public ::testing::Test {
 protected:
  void SetUp() override {
    world.seed(/*expandable=*/false);
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["spec"]["persistentVolumeClaimRetentionPolicy"] = {{"whenScaled", "Delete"},
                                                              {"whenDeleted", "Retain"}};
    });
    for (const std::string& name : world.claim_names()) {
      uids[name] = world.kube.get_raw(world.claim(name))->at("metadata")["uid"];
    }
  }

  void expect_claims_untouched() {
    for (const std::string& name : world.claim_names()) {
      auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name << " deleted";
      EXPECT_EQ(pvc->at("metadata")["uid"], uids.at(name)) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name))
          << name;
    }
  }

  std::optional<Operation> state() const {
    auto op = read_operation(world.live_sts());
    return op && op->has_value() ? std::optional<Operation>{**op} : std::nullopt;
  }

  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events, EngineSettings{}};
  std::map<std::string, std::string> uids;
};

TEST_F(WhenScaledDelete, AnAllAtOnceCopyIsRefusedInPlanningBeforeAnythingChanges) {
  reconcile_until(reconciler, world, at_rest(), {.limit = 50, .terminal_fails = false});
  auto op = state();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_NE(op->failure.find("whenScaled is Delete"), std::string::npos) << op->failure;
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
  expect_claims_untouched();
  // Refused before anything: no Job, no claim, no pre-copy.
  for (const Mutation& m : world.kube.history()) {
    EXPECT_FALSE(m.actor == Actor::Client && m.verb == Verb::Create && m.ref.kind != Kind::Event)
        << "created " << to_string(m.ref);
  }
}

// The policy set after the plan: the scale-down itself refuses, and the resize scales back onto
// the claims it never touched.
TEST_F(WhenScaledDelete, APolicySetAfterThePlanStopsTheScaleDownAndKeepsEveryClaim) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"].erase("persistentVolumeClaimRetentionPolicy");
    live["metadata"]["annotations"][std::string{kPreCopyAnnotation}] = "false";
  });
  // Held for approval after the plan (stsresize.dev/mode: manual), the policy set, then approved.
  set_mode(world, "manual");
  reconcile_until(reconciler, world, at_rest(), {.limit = 50});
  auto waiting = awaiting(world);
  ASSERT_TRUE(waiting);
  ASSERT_EQ(waiting->to, Phase::ScalingDown);
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"]["persistentVolumeClaimRetentionPolicy"] = {{"whenScaled", "Delete"},
                                                            {"whenDeleted", "Retain"}};
    live["metadata"]["annotations"].erase(std::string{kModeAnnotation});
  });
  ASSERT_TRUE(approve_waiting(world, "alice", "after-the-plan"));
  reconcile_until(reconciler, world, at_rest(), {.limit = 200, .terminal_fails = false});
  auto op = state();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_NE(op->failure.find("whenScaled is Delete"), std::string::npos) << op->failure;
  world.settle(4);
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  expect_claims_untouched();
}

TEST_F(WhenScaledDelete, ARollingResizeCompletesWithoutScaling) {
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kStrategyAnnotation}] = "rolling";
  });
  reconcile_to_idle(reconciler, world, 600);
  EXPECT_FALSE(state());
  for (const std::string& name : world.claim_names()) {
    auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name)) << name;
  }
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

using namespace testing;

// What people and their tools do to a StatefulSet while one of its ordinals is copied (the set
// paused: being deleted, held by stsresize.dev/rolling): scale it, delete it and apply it again,
// edit the annotations. None of it may cost a byte of the planned claims or stop the roll.
class RollingPeople : public ::testing::Test {
 protected:
  void SetUp() override {
    world.seed(/*expandable=*/false);
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["metadata"]["annotations"][std::string{kStrategyAnnotation}] = "rolling";
    });
  }

  std::optional<Operation> state() const {
    auto sts = world.kube.get_raw(world.sts());
    if (!sts) return std::nullopt;
    auto op = read_operation(*sts);
    return op && op->has_value() ? std::optional<Operation>{**op} : std::nullopt;
  }

  // Until ordinal `ordinal` is in `phase` (its StatefulSet paused from StoppingReplica's end to
  // StartingReplica's start).
  void run_until(int ordinal, Phase phase) {
    reconcile_until(reconciler, world,
                    {"ordinal " + std::to_string(ordinal) + " in " + std::string{to_string(phase)},
                     [&](const ReconcileResult&) {
                       auto op = state();
                       return op && op->rolling_ordinal() == ordinal && op->phase == phase;
                     }},
                    {.limit = 400});
    ASSERT_TRUE(world.live_sts()["metadata"].contains("deletionTimestamp")) << "not paused";
  }

  // kubectl apply of the StatefulSet's manifest onto the live object: its spec (3 replicas, the
  // templates as they are now) and its own annotations; the fields it does not name (finalizers,
  // stsresize's annotations) stay, as with a three-way merge or a server-side apply.
  void apply_manifest() {
    Json live = world.live_sts();
    live["spec"]["replicas"] = kReplicas;
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}";
    ASSERT_TRUE(world.kube.system().update(Kind::StatefulSet, live));
  }

  void scale_to(int replicas) {
    Json live = world.live_sts();
    live["spec"]["replicas"] = replicas;
    ASSERT_TRUE(world.kube.system().update(Kind::StatefulSet, live));
  }

  std::string pod_uid(const std::string& name) const {
    auto pod = world.kube.get_raw(ObjectRef{Kind::Pod, kNs, name});
    return pod ? (*pod)["metadata"].value("uid", "") : "";
  }

  // Every planned claim at 2Gi with its files, nothing of the operation left, the set running.
  void expect_completed_with_data() {
    EXPECT_FALSE(state()) << "operation still annotated: " << to_string(state()->phase) << " "
                          << state()->failure;
    for (const std::string& name : world.claim_names()) {
      auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name))
          << name;
      EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(name)))) << name;
    }
    const Json sts = world.live_sts();
    EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
    EXPECT_TRUE(sts["metadata"].value("finalizers", Json::array()).empty());
  }

  // The roll to its end: completed with every byte, `ready` pods Ready once the cluster settles.
  void finish(int ready) {
    reconcile_to_idle(reconciler, world, 800);
    expect_completed_with_data();
    world.settle(6);
    EXPECT_EQ(world.ready_replicas(), ready);
  }

  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events, EngineSettings{}};
};

// A scale-up while an ordinal is copied: the paused controller ignores it, the resume keeps it
// (the definition is saved from the live object), and no byte of the planned claims is lost.
TEST_F(RollingPeople, AScaleUpWhileAnOrdinalIsCopiedIsKeptAndLosesNothing) {
  run_until(2, Phase::BackingUp);
  scale_to(kReplicas + 1);
  finish(kReplicas + 1);
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas + 1);
}

// A scale-down below the ordinal being copied: the resume keeps the count asked for, so no replica
// of that ordinal (nor of the next one) starts again; the roll does not wait for one, and still
// resizes every planned claim, whose data stays for a later scale-up.
TEST_F(RollingPeople, AScaleDownBelowTheOrdinalEndsAtTheCountAskedForWithEveryClaimResized) {
  run_until(2, Phase::BackingUp);
  scale_to(1);
  finish(1);
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 1);
  EXPECT_FALSE(world.events.contains("ScaleUpTimeout"));
}

// kubectl delete sts web; kubectl apply -f web.yaml, mid-copy: the delete of an object already
// being deleted changes nothing, the apply updates it in place (it cannot create it again while
// it exists), and the pods of the other ordinals keep running throughout.
TEST_F(RollingPeople, ADeleteAndApplyWhileAnOrdinalIsCopiedStopsNothing) {
  run_until(2, Phase::Recreating);
  const std::string web0 = pod_uid("web-0");
  ASSERT_TRUE(world.kube.system().remove(world.sts()));
  world.settle(3);
  apply_manifest();
  world.settle(3);
  EXPECT_EQ(pod_uid("web-0"), web0);
  run_until(1, Phase::BackingUp);
  EXPECT_EQ(pod_uid("web-0"), web0) << "ordinal 0 restarted before its turn";
  finish(kReplicas);
}

// kubectl delete sts web --cascade=orphan, mid-copy: the API server switches the delete to
// orphan, the garbage collector takes the set's owner reference off its pods; the roll resumes
// the set as it would (its own Orphan delete is then a no-op) and adopts them.
TEST_F(RollingPeople, AnOrphanDeleteWhileAnOrdinalIsCopiedIsResumedAsUsual) {
  run_until(2, Phase::BackingUp);
  DeleteOptions orphan;
  orphan.propagation = Propagation::Orphan;
  ASSERT_TRUE(world.kube.system().remove(world.sts(), orphan));
  world.settle(3);
  finish(kReplicas);
}

// The strategy annotation edited mid-roll: the operation keeps the strategy it planned with (an
// all-at-once copy now would scale the set to 0 under the ordinals not yet copied).
TEST_F(RollingPeople, TheStrategyEditedMidRollIsIgnoredUntilTheNextOperation) {
  run_until(2, Phase::BackingUp);
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kStrategyAnnotation}] = "all-at-once";
  });
  finish(kReplicas);
  for (const Mutation& m : world.kube.history()) {
    if (m.actor != Actor::Client || m.ref.kind != Kind::StatefulSet) continue;
    if (m.verb == Verb::Update || m.verb == Verb::Create) {
      EXPECT_EQ(m.object["spec"].value("replicas", 0), kReplicas) << "scaled";
    }
  }
}

// The state annotations removed while the set is paused (a GitOps replace of the metadata): the
// operation is continued from the journal, the same one, and completes.
TEST_F(RollingPeople, TheStateRemovedWhilePausedIsContinuedFromTheJournal) {
  run_until(1, Phase::Recreating);
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"].erase(std::string{kStateAnnotation});
    live["metadata"]["annotations"].erase(std::string{kPhaseAnnotation});
  });
  finish(kReplicas);
  EXPECT_EQ(world.events.with_reason("OperationRecovered").size(), 1u);
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_EQ(operations->size(), 1u);
}

}  // namespace
}  // namespace stsresize
