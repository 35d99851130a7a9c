// What people and their tools do to a StatefulSet while a copy-path resize runs — scale it (a
// GitOps tool's self-heal, a colleague's kubectl scale), remove or edit the state annotation,
// delete it and apply it again, lose the journal — and what the engine owes them: no write is
// lost, no claim is deleted while anything may write to it, no operation is forgotten while its
// data is outside the claims, and the replicas end where they started.
#include <gtest/gtest.h>

#include "adapters/fake/fake_kubernetes.h"
#include "engine/actions/request.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/operation_codec.h"
#include "engine/resize_request.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class PeopleMidOperation : public ::testing::Test {
 protected:
  void SetUp() override { world.seed(/*expandable=*/false); }

  ResizeWorld world;
  MemoryJournal journal;
  std::unique_ptr<Reconciler> reconciler =
      std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events, two_copies());

  // Reconciles, letting the cluster move, until the engine rests (Idle or Terminal).
  // kubectl delete sts web (the cluster working for `settle` rounds), then kubectl apply of its
  // manifest: 3 replicas, the new templates, none of stsresize's annotations.
  void delete_and_apply_again(int settle) {
    Json manifest = world.live_sts();
    ASSERT_TRUE(world.kube.system().remove(world.sts()));
    world.settle(settle);
    for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generation"}) {
      manifest["metadata"].erase(field);
    }
    manifest["metadata"].erase("annotations");
    manifest.erase("status");
    manifest["spec"]["replicas"] = kReplicas;
    ASSERT_TRUE(world.kube.system().create(Kind::StatefulSet, manifest));
  }

  ReconcileResult run_to_rest() {
    return reconcile_until(*reconciler, world, at_rest(), {.limit = 400, .terminal_fails = false});
  }

  // manual mode: approves until the operation waits to leave `phase`.
  void wait_in(Phase phase) {
    set_mode(world, "manual");
    for (int i = 0; i < 20; ++i) {
      run_to_rest();
      auto waiting = awaiting(world);
      ASSERT_TRUE(waiting) << "nothing waits";
      if (waiting->from == phase) return;
      ASSERT_TRUE(approve_waiting(world, "alice", "approve-" + std::to_string(i)));
    }
    FAIL() << "never waited in " << to_string(phase);
  }
  // stsresize.dev/pre-copy: "false": nothing is created before BackingUp.
  void no_pre_copy() {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["metadata"]["annotations"][std::string{kPreCopyAnnotation}] = "false";
    });
  }
  void auto_mode() {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["metadata"]["annotations"].erase(std::string{kModeAnnotation});
    });
  }
  // Through the API, so that the StatefulSet's generation moves as it does in a cluster.
  void scale_to(int replicas) {
    Json live = world.live_sts();
    live["spec"]["replicas"] = replicas;
    ASSERT_TRUE(world.kube.system().update(Kind::StatefulSet, live));
  }
  // A pod of no owner (made by hand) that mounts `claim`.
  bool start_pod(const std::string& name, const std::string& claim) {
    return world.kube.system()
        .create(Kind::Pod,
                Json{{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata", {{"name", name}, {"namespace", kNs}}},
                     {"spec",
                      {{"containers", Json::array({{{"name", "sh"}, {"image", "busybox"}}})},
                       {"volumes",
                        Json::array({{{"name", "data"},
                                      {"persistentVolumeClaim", {{"claimName", claim}}}}})}}}})
        .has_value();
  }
  std::optional<Operation> live_operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }
  void remove_state() {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["metadata"]["annotations"].erase(std::string{kStateAnnotation});
      live["metadata"]["annotations"].erase(std::string{kPhaseAnnotation});
    });
  }
  // Edits the phase inside the state annotation, as someone with `kubectl edit` would.
  void edit_phase(Phase phase) {
    world.kube.mutate_raw(world.sts(), [&](Json& live) {
      Json& annotations = live["metadata"]["annotations"];
      Json state = Json::parse(annotations[std::string{kStateAnnotation}].get<std::string>());
      state["phase"] = to_string(phase);
      state.erase("awaitingApproval");
      annotations[std::string{kStateAnnotation}] = state.dump();
    });
  }
  // Every claim at 2Gi with its files (and `extra` on top), the set at its replicas, Ready,
  // nothing of the operation left.
  void expect_completed_with_data(const std::map<std::string, VolumeFiles>& extra = {}) {
    const Json sts = world.live_sts();
    EXPECT_FALSE(k8s::annotation(sts, kStateAnnotation)->has_value());
    EXPECT_TRUE(k8s::annotation(sts, kLastOperationAnnotation)->has_value());
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_EQ(world.ready_replicas(), kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      VolumeFiles expected = world.original_files.at(name);
      if (auto more = extra.find(name); more != extra.end()) {
        for (const auto& [path, bytes] : more->second) expected[path] = bytes;
      }
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), std::optional{expected}) << name;
      EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(name)))) << name;
    }
  }
};

TEST_F(PeopleMidOperation, AScaleUpWhileABackupAwaitsApprovalScalesBackAndKeepsEveryWrite) {
  wait_in(Phase::BackingUp);  // every backup verified, Recreating waits for approval
  std::map<std::string, std::string> uids;
  for (const std::string& name : world.claim_names()) {
    uids[name] = *k8s::uid(*world.kube.get_raw(world.claim(name)));
  }
  scale_to(kReplicas);  // Argo CD's self-heal puts spec.replicas back
  world.settle(5);
  const std::string late = naming::claim_name("data", kSts, 1);
  world.cluster.write_file(world.claim(late), "app/after-backup.log", "written after the backup");
  ASSERT_TRUE(approve_waiting(world, "alice", "approve-late"));  // approved anyway
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  const auto op = live_operation();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_EQ(op->failed_in, Phase::ScalingBack);
  EXPECT_NE(op->failure.find("the fence was broken during BackingUp"), std::string::npos)
      << op->failure;
  // Nothing of the source claims was touched: same objects, every write there.
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::uid(*pvc), uids.at(name)) << name;
    EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(name)))) << name;
  }
  const auto files = world.cluster.volume_files(world.claim(late));
  ASSERT_TRUE(files);
  EXPECT_EQ(files->at("app/after-backup.log"), "written after the backup");
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
}

// A scale-up while the pre-copies run (nothing is fenced yet: the application serves) and a
// write after them: the write reaches its resized claim (the copy with the replicas stopped
// moves it), the resize completes at the replicas it started from (as for any scale during it,
// the person's count is not kept), and the replica the plan did not know keeps its claims,
// untouched.
TEST_F(PeopleMidOperation, AScaleUpDuringThePreCopyLosesNoWrite) {
  wait_in(Phase::PreCopying);  // every pre-copy done; ScalingDown waits for approval
  scale_to(kReplicas + 1);
  world.settle(5);
  std::map<std::string, std::string> extra_uids;
  for (const char* volume : {"data", "logs"}) {
    const std::string name = naming::claim_name(volume, kSts, kReplicas);
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    extra_uids[name] = *k8s::uid(*pvc);
  }
  const std::string late = naming::claim_name("data", kSts, 1);
  world.cluster.write_file(world.claim(late), "app/after-pre-copy.log", "after the pre-copy");
  auto_mode();
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data({{late, {{"app/after-pre-copy.log", "after the pre-copy"}}}});
  for (const auto& [name, uid] : extra_uids) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::uid(*pvc), uid) << name;
  }
}

TEST_F(PeopleMidOperation, AScaleUpAndDownWhileTheControllerWasAwayIsCopiedAgain) {
  wait_in(Phase::BackingUp);
  // The controller is down; someone scales up, the application writes, and scales down again.
  reconciler.reset();
  scale_to(kReplicas);
  world.settle(5);
  const std::string late = naming::claim_name("logs", kSts, 2);
  world.cluster.write_file(world.claim(late), "app/while-away.log", "written while away");
  scale_to(0);
  world.settle(5);
  reconciler =
      std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events, two_copies());
  auto_mode();
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data({{late, {{"app/while-away.log", "written while away"}}}});
}

// `kubectl scale --replicas 2` of a set of 3 during its resize, after the sources were deleted:
// to the resize, whose set is at 0, a breach of its fence. It sets 0 again and ends at the 3 it
// started from, so the Warning says that too: the person's 2 is not kept, and they learn to
// scale again once the resize has completed.
TEST_F(PeopleMidOperation, AScaleDownDuringTheRestoreIsFencedAndSaysTheCountItEndsAt) {
  wait_in(Phase::Recreating);
  scale_to(2);
  world.settle(3);
  auto_mode();
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  const auto restored = world.events.with_reason("FenceRestored");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_NE(restored[0].message.find("spec.replicas of the StatefulSet is 2"), std::string::npos)
      << restored[0].message;
  EXPECT_NE(restored[0].message.find("then scales it back to the 3 replicas it started from"),
            std::string::npos)
      << restored[0].message;
}

TEST_F(PeopleMidOperation, TheStateRemovedAfterASourceDeleteIsContinuedFromTheJournal) {
  wait_in(Phase::Recreating);  // every source deleted and recreated empty
  auto_mode();
  remove_state();
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  const auto recovered = world.events.with_reason("OperationRecovered");
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_NE(recovered[0].message.find("the state annotation was removed"), std::string::npos)
      << recovered[0].message;
  EXPECT_NE(recovered[0].message.find("with the 3 replicas it started from"), std::string::npos)
      << recovered[0].message;
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_EQ(operations->size(), 1u);  // the same operation, not a second one
}

// The rebind path: every claim already on its copy's volume when the state goes.
TEST_F(PeopleMidOperation, OnTheRebindPathTheStateRemovedAfterASourceDeleteIsContinued) {
  reconciler = std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events,
                                            EngineSettings{});
  wait_in(Phase::Recreating);
  auto_mode();
  remove_state();
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  EXPECT_EQ(world.events.with_reason("OperationRecovered").size(), 1u);
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_EQ(operations->size(), 1u);
}

TEST_F(PeopleMidOperation, AStatefulSetDeletedAndAppliedAgainIsFencedUntilRestored) {
  wait_in(Phase::Recreating);
  // kubectl delete sts web; kubectl apply -f web.yaml (the manifest: 3 replicas, 2Gi, no state)
  delete_and_apply_again(5);
  world.settle(3);  // its pods start on the recreated, still empty claims
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  const auto recovered = world.events.with_reason("OperationRecovered");
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_NE(recovered[0].message.find("deleted and created again"), std::string::npos)
      << recovered[0].message;
  EXPECT_TRUE(world.events.contains("FenceRestored"));
}

TEST_F(PeopleMidOperation, WithTheJournalLostTooNoOperationStartsOverItsBackups) {
  wait_in(Phase::Recreating);
  auto_mode();
  remove_state();
  MemoryJournal empty;
  reconciler =
      std::make_unique<Reconciler>(world.kube, empty, world.clock, world.events, two_copies());
  const int before = world.kube.mutations();
  const ReconcileResult result = reconciler->reconcile(kNs, kSts);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Terminal)) << result.message;
  EXPECT_NE(result.message.find("did not complete"), std::string::npos) << result.message;
  EXPECT_EQ(world.kube.mutations(), before + 1);  // the resize-status annotation, nothing else
  EXPECT_NE(k8s::annotation(world.live_sts(), kResizeStatusAnnotation)
                ->value_or("")
                .find("rejected: backup claims"),
            std::string::npos);
  EXPECT_TRUE(world.events.contains("UnfinishedOperation"));
  auto streams = empty.operations();
  ASSERT_TRUE(streams);
  EXPECT_TRUE(streams->empty());
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 0);
}

// No backup yet (no pre-copy), so nothing says an operation was under way but the set's own
// marks: the one stsresize keeps apart from the state gives the replica count back. (After a
// pre-copy its backup claims are there, and the start is refused as in BackingUp above.)
TEST_F(PeopleMidOperation,
       TheStateRemovedInScalingDownWithTheJournalLostEndsAtTheOriginalReplicas) {
  no_pre_copy();
  wait_in(Phase::ScalingDown);
  ASSERT_EQ(world.live_sts()["spec"]["replicas"], 0);
  auto_mode();
  remove_state();
  MemoryJournal empty;
  reconciler =
      std::make_unique<Reconciler>(world.kube, empty, world.clock, world.events, two_copies());
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kOriginalReplicasAnnotation)->has_value());
  const auto recovered = world.events.with_reason("OriginalReplicasRecovered");
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_NE(recovered[0].message.find("starts from the " + std::to_string(kReplicas) + " replicas"),
            std::string::npos)
      << recovered[0].message;
  reconciler.reset();
}

TEST_F(PeopleMidOperation, AnUnreadableOriginalReplicasMarkIsRefusedAndChangesNothing) {
  no_pre_copy();
  wait_in(Phase::ScalingDown);
  auto_mode();
  remove_state();
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kOriginalReplicasAnnotation}] = "three";
  });
  MemoryJournal empty;
  reconciler =
      std::make_unique<Reconciler>(world.kube, empty, world.clock, world.events, two_copies());
  const int before = world.kube.mutations();
  const ReconcileResult result = reconciler->reconcile(kNs, kSts);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Terminal)) << result.message;
  EXPECT_EQ(world.kube.mutations(), before + 1);  // the resize-status annotation, nothing else
  EXPECT_EQ(k8s::annotation(world.live_sts(), kResizeStatusAnnotation)->value_or(""),
            "rejected: annotation stsresize.dev/original-replicas is \"three\", not a replica "
            "count: stsresize starts no operation from a guess; set it to the replica count the "
            "StatefulSet should return to, or remove it");
  EXPECT_TRUE(world.events.contains("InvalidOriginalReplicas"));
  EXPECT_TRUE(empty.operations()->empty());
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 0);
  reconciler.reset();
}

// A person who scaled the set up again took it back: a later scale to 0 of theirs is not undone.
TEST_F(PeopleMidOperation, AnOriginalReplicasMarkIsDroppedOnceTheSetRunsAgain) {
  no_pre_copy();
  wait_in(Phase::ScalingDown);
  auto_mode();
  remove_state();
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
      tmpl["spec"]["resources"]["requests"]["storage"] = "1Gi";  // the change taken back too
    }
  });
  scale_to(kReplicas);
  MemoryJournal empty;
  reconciler =
      std::make_unique<Reconciler>(world.kube, empty, world.clock, world.events, two_copies());
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kOriginalReplicasAnnotation)->has_value());
  EXPECT_TRUE(empty.operations()->empty());
  reconciler.reset();
}

// Without the admission fence a pod can start between the last fence check and a source delete:
// pvc-protection then keeps the claim, Terminating, under the pod. Setting the fence again would
// stop the pod and the claim would go with its newest writes: the engine changes nothing, says
// what can be kept and how, and goes on once a person has stopped the pod.
TEST_F(PeopleMidOperation, ASourceBeingDeletedUnderAPodIsReportedAndNothingIsScaled) {
  wait_in(Phase::BackingUp);
  auto_mode();
  std::string deleted;
  world.kube.on_mutation([&](const Mutation& m) {
    if (m.actor == Actor::Client && m.verb == Verb::Remove &&
        m.ref.kind == Kind::PersistentVolumeClaim && deleted.empty()) {
      deleted = m.ref.name;
    }
  });
  ASSERT_TRUE(approve_waiting(world, "alice", "approve-recreate"));
  for (int i = 0; i < 50 && deleted.empty(); ++i) reconciler->reconcile(kNs, kSts);
  ASSERT_FALSE(deleted.empty());
  // The pod that started in that moment, before pvc-protection could let the claim go.
  ASSERT_TRUE(start_pod("debug", deleted));
  world.settle(3);
  const ObjectRef claim = world.claim(deleted);
  const int before = world.kube.mutations();
  for (int i = 0; i < 20; ++i) {
    reconciler->reconcile(kNs, kSts);
    world.settle(1);
  }
  const auto held = world.kube.get_raw(claim);
  ASSERT_TRUE(held) << deleted << " is gone: pvc-protection did not hold it";
  EXPECT_TRUE((*held)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 0);  // nothing scaled either way
  const Operation op = *live_operation();
  EXPECT_EQ(op.phase, Phase::Recreating);
  EXPECT_TRUE(op.sources_intact());  // the delete is asked for, not done
  EXPECT_TRUE(op.warning.starts_with("source claim " + deleted +
                                     " is being deleted but pod debug (no owner) mounts it"))
      << op.warning;
  EXPECT_NE(op.warning.find("persistentVolumeReclaimPolicy"), std::string::npos) << op.warning;
  EXPECT_EQ(world.events.with_reason("SourceHeldByPod").size(), 1u);
  // No other source was touched meanwhile: the writes of the journal and the annotation only.
  for (const std::string& name : world.claim_names()) {
    if (name == deleted) continue;
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_FALSE((*pvc)["metadata"].contains("deletionTimestamp")) << name;
  }
  EXPECT_LE(world.kube.mutations(), before + 2);
  // The person stops the pod (after keeping what it wrote): the resize goes on from the backup.
  ASSERT_TRUE(world.kube.system().remove(ObjectRef{Kind::Pod, kNs, "debug"}, {}));
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
}

// A claim of this set's name that another owner's pod uses (a name collision, or a pod made by
// hand) is refused in Planning, before anything is stopped.
TEST_F(PeopleMidOperation, AClaimAnotherOwnersPodMountsIsRefusedBeforeAnythingStops) {
  const std::string claim = world.claim_names().front();
  ASSERT_TRUE(start_pod("inspect", claim));
  world.settle(2);
  bool scaled = false;
  world.kube.on_mutation([&](const Mutation& m) {
    scaled = scaled || (m.actor == Actor::Client && m.ref.kind == Kind::StatefulSet &&
                        m.object["spec"]["replicas"] != kReplicas);
  });
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  const auto op = live_operation();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_NE(op->failure.find("pod inspect (no owner) mounts " + claim), std::string::npos)
      << op->failure;
  EXPECT_FALSE(scaled) << "the StatefulSet was scaled";
  EXPECT_EQ(world.ready_replicas(), kReplicas);
}

TEST_F(PeopleMidOperation, ARequestWrittenDuringAnOperationIsReportedAsQueuedOnce) {
  wait_in(Phase::BackingUp);
  world.request(Json{{"data", {{"storage", "3Gi"}}}}.dump());
  run_to_rest();
  run_to_rest();
  const auto status = k8s::annotation(world.live_sts(), kResizeStatusAnnotation);
  ASSERT_TRUE(status && status->has_value());
  EXPECT_TRUE((*status)->starts_with("queued: operation ")) << **status;
  EXPECT_NE((*status)->find("is running; this request is validated and started when it ends"),
            std::string::npos)
      << **status;
  EXPECT_EQ(world.events.with_reason("ResizeRequestQueued").size(), 1u);
  // Across the operation's phase changes too: once per operation.
  ASSERT_TRUE(approve_waiting(world, "alice", "approve-queued"));
  run_to_rest();
  EXPECT_NE(awaiting(world)->from, Phase::BackingUp);
  EXPECT_EQ(world.events.with_reason("ResizeRequestQueued").size(), 1u);
}

TEST_F(PeopleMidOperation, AStateEditedToCompletedIsRestoredFromTheJournal) {
  wait_in(Phase::BackingUp);
  auto_mode();
  edit_phase(Phase::Completed);
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  EXPECT_TRUE(world.events.contains("StateRestored"));
}

TEST_F(PeopleMidOperation, AStateEditedToRestoringWithTheSourcesIntactIsRestoredFromTheJournal) {
  wait_in(Phase::BackingUp);
  auto_mode();
  edit_phase(Phase::Restoring);
  EXPECT_TRUE(run_to_rest().is(ReconcileResult::Kind::Idle));
  expect_completed_with_data();
  const auto restored = world.events.with_reason("StateRestored");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_NE(restored[0].message.find("continuing from the journal at BackingUp"), std::string::npos)
      << restored[0].message;
}

// Found by the simulation (a second controller): a controller whose journal is behind the
// cluster (another replica held the Lease meanwhile and journaled elsewhere, or `advance
// --apply-locally` with its own --journal) adopts the operation from that journal once the
// StatefulSet is deleted and applied again (adopt_unfinished). Its view has sources intact that
// the other deleted and recreated; the new object makes their backups stale, and BackingUp would
// copy each recreated, empty claim over its backup, the only copy of its data. BackingUp copies
// only from the planned source itself (uid): the operation fails instead, every backup kept.
TEST_F(PeopleMidOperation, ALeaderBackWithAStaleJournalKeepsTheBackupsOfClaimsItMissed) {
  wait_in(Phase::BackingUp);  // every backup verified, Recreating waits for approval
  ASSERT_TRUE(approve_waiting(world, "alice", "go"));
  // Leader A deletes and recreates data-web-0, then loses the Lease before data-web-1.
  world.kube.inject({.verb = Verb::Remove,
                     .kind = Kind::PersistentVolumeClaim,
                     .name = naming::claim_name("data", kSts, 1),
                     .times = FaultRule::kForever,
                     .error = KubeError{KubeErrorCode::Unreachable, "lease lost", Duration{0}}});
  for (int i = 0; i < 10; ++i) {
    (void)reconciler->reconcile(kNs, kSts);
    world.settle(2);
  }
  world.kube.clear_faults();
  ASSERT_TRUE(live_operation()->find_claim(naming::claim_name("data", kSts, 0))->source_deleted);
  // Leader B, with its own journal, deletes and recreates every other source.
  MemoryJournal other_journal;
  Reconciler other{world.kube, other_journal, world.clock, world.events, two_copies()};
  for (int i = 0; i < 100 && live_operation()->awaiting == std::nullopt; ++i) {
    (void)other.reconcile(kNs, kSts);
    world.settle(2);
  }
  ASSERT_EQ(live_operation()->phase, Phase::Recreating);  // Restoring awaits approval
  ASSERT_TRUE(live_operation()->find_claim(naming::claim_name("logs", kSts, 2))->source_deleted);
  // kubectl delete sts web; kubectl apply -f web.yaml
  delete_and_apply_again(2);
  // A holds the Lease again, with its journal.
  run_to_rest();
  for (const auto& [claim, files] : world.original_files) {
    const auto on_claim = world.cluster.volume_files(world.claim(claim));
    const auto backup = world.cluster.volume_files(world.claim(naming::backup_claim(claim)));
    for (const auto& [path, bytes] : files) {
      const bool kept = (on_claim && on_claim->contains(path) && on_claim->at(path) == bytes) ||
                        (backup && backup->contains(path) && backup->at(path) == bytes);
      EXPECT_TRUE(kept) << claim << " lost " << path;
    }
  }
}

}  // namespace
}  // namespace stsresize
