// Each step's idempotency and each safety rule, on the simulated cluster.
#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "states/machine.h"
#include "states/step.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

// Journals like the reconciler (through fold), without writing annotations.
class TestJournal final : public StepJournal {
 public:
  explicit TestJournal(Operation& op) : op_(op), folder_(PhaseMachine::rules()) {
    EXPECT_TRUE(folder_.apply(make_record(op, 1, op.started, entries::Resumed{op})));
    op_ = *folder_.state();
  }
  std::expected<void, std::string> intend(std::string_view action, const ObjectRef& target,
                                          std::string_view detail) override {
    intents.push_back(std::string{action} + " " + to_string(target) + " " + std::string{detail});
    return apply(entries::ActionIntended{op_.phase, std::string{action}, to_string(target),
                                         std::string{detail}});
  }
  std::expected<void, std::string> commit(const Entry& event) override {
    recorded.push_back(event);
    return apply(event);
  }
  std::expected<void, std::string> append(const Entry& event) override {
    noted.push_back(event);
    return apply(event);
  }
  std::vector<std::string> intents;
  std::vector<Entry> recorded;
  std::vector<Entry> noted;

 private:
  std::expected<void, std::string> apply(const Entry& event) {
    auto applied = folder_.apply(make_record(op_, op_.last_sequence + 1, op_.started, event));
    if (!applied) return std::unexpected(applied.error().message);
    op_ = *folder_.state();
    return {};
  }
  Operation& op_;
  ValidatingFold folder_;
};

class Steps : public ::testing::Test {
 protected:
  void SetUp() override {
    world.seed(/*expandable=*/false);
    auto claims = world.kube.list(Kind::PersistentVolumeClaim, kNs);
    auto classes = world.kube.list(Kind::StorageClass, "");
    auto plan = plan_resize(world.live_sts(), claims->items, classes->items);
    ASSERT_TRUE(plan && plan->has_value());
    op.id = "web-test";
    op.ns = kNs;
    op.statefulset = kSts;
    op.sts_uid = *k8s::uid(world.live_sts());
    op.original_replicas = kReplicas;
    op.path = (*plan)->path;
    op.claims = (*plan)->claims;
    op.started = op.phase_since = world.clock.now();
  }
  // The copy phases start where ScalingDown leaves the set: fenced at 0 replicas, no pod. A
  // backup the test marks verified was taken at the fence's generation.
  void at(Phase phase) {
    if (phase == Phase::BackingUp || phase == Phase::Recreating || phase == Phase::Restoring) {
      fence();
    }
    for (ClaimPlan& claim : op.claims) {
      if (claim.backup_verified && claim.backup_generation == 0) {
        claim.backup_generation = generation();
      }
    }
    op.phase = phase;
    op.phase_since = world.clock.now();
    journal = std::make_unique<TestJournal>(op);
  }
  void fence() {
    world.kube.mutate_raw(world.sts(), [](Json& s) { s["spec"]["replicas"] = 0; });
    world.settle(5);
  }
  // What a person or a GitOps tool does: the StatefulSet back to `replicas`.
  // Through the API, so that the StatefulSet's generation moves as it does in a cluster.
  void scale_to(int replicas) {
    Json live = world.live_sts();
    live["spec"]["replicas"] = replicas;
    ASSERT_TRUE(world.kube.system().update(Kind::StatefulSet, live));
  }
  std::int64_t generation() const { return *k8s::generation(world.live_sts()); }
  // A pod of no owner (a debug pod, another tool) that mounts `claim`.
  void mount_by_hand(const std::string& pod, const std::string& claim) {
    world.kube.put_raw(
        Kind::Pod,
        Json{{"metadata", {{"name", pod}, {"namespace", kNs}}},
             {"spec",
              {{"containers", Json::array({{{"name", "sh"}, {"image", "busybox"}}})},
               {"volumes", Json::array({{{"name", "v"},
                                         {"persistentVolumeClaim", {{"claimName", claim}}}}})}}},
             {"status", {{"phase", "Running"}}}});
  }
  StepOutcome run(Step step) {
    sts = world.live_sts();
    StepContext ctx{world.kube, world.clock, world.events, *journal, settings, op, sts};
    return step(ctx);
  }
  int client_creates(const std::string& name) const {
    int n = 0;
    for (const Mutation& m : world.kube.history()) {
      n += m.actor == Actor::Client && m.verb == Verb::Create && m.ref.name == name;
    }
    return n;
  }
  // Runs the step, letting the cluster move between calls, until it stops making progress.
  StepOutcome run_until_settled(Step step, int rounds = 60) {
    StepOutcome outcome = run(step);
    for (int i = 0; i < rounds && outcome.is(StepOutcome::Kind::Waiting); ++i) {
      world.cluster.tick();
      world.clock.advance(std::chrono::seconds{1});
      outcome = run(step);
    }
    return outcome;
  }
  // The copy Jobs of `purpose` the step has started once it is called again and again while
  // none of them runs to its end (the cluster does not move).
  int copies_started_at_once(Step step, std::string_view purpose) {
    for (int i = 0; i < 20; ++i) run(step);
    int n = 0;
    for (const Json& job : world.kube.list_raw(Kind::Job, kNs)) {
      n += job["metadata"]["labels"].value(std::string{kPurposeLabel}, "") == purpose;
    }
    return n;
  }
  void verify_all_backups() {
    for (ClaimPlan& claim : op.claims) claim.backup_verified = TreeSummary{1, 1, "d"};
  }

  ResizeWorld world;
  EngineSettings settings;
  Operation op;
  Json sts;
  std::unique_ptr<TestJournal> journal;
};

TEST_F(Steps, ScaleDownUpdatesReplicasOnceAndIsDoneOnlyWhenNoPodRemains) {
  at(Phase::ScalingDown);
  EXPECT_TRUE(run(&scale_down_step).is(StepOutcome::Kind::Waiting));
  EXPECT_EQ(world.kube.mutations(), 1);
  ASSERT_EQ(journal->intents.size(), 1u);
  // Not observed yet: the controller has not run. Calling again changes nothing.
  const StepOutcome again = run(&scale_down_step);
  EXPECT_TRUE(again.is(StepOutcome::Kind::Waiting));
  EXPECT_GT(again.requeue_after, Duration{0});
  EXPECT_EQ(world.kube.mutations(), 1);
  EXPECT_TRUE(run_until_settled(&scale_down_step).is(StepOutcome::Kind::Done));
  EXPECT_TRUE(world.kube.list_raw(Kind::Pod, kNs).empty());
  EXPECT_EQ(world.kube.mutations(), 1);
}

TEST_F(Steps, BackupCreatesEachObjectOnceAcrossRepeatedCalls) {
  world.kube.mutate_raw(world.sts(), [](Json& s) { s["spec"]["replicas"] = 0; });
  world.settle(5);
  at(Phase::BackingUp);
  EXPECT_TRUE(run_until_settled(&backup_step, 200).is(StepOutcome::Kind::Done));
  for (const ClaimPlan& claim : op.claims) {
    EXPECT_EQ(client_creates(naming::backup_claim(claim.claim)), 1) << claim.claim;
    EXPECT_EQ(client_creates(naming::backup_job(claim.claim)), 1) << claim.claim;
    EXPECT_TRUE(claim.backup_verified) << claim.claim;
    EXPECT_EQ(world.cluster.volume_files(world.claim(naming::backup_claim(claim.claim))),
              world.original_files.at(claim.claim));
  }
}

// Each claim's copy reads and writes volumes of its own, and the application is down for the
// whole copy: none waits for another unless a bound is given.
TEST_F(Steps, BackupStartsEveryClaimsCopyAtOnceByDefault) {
  at(Phase::BackingUp);
  ASSERT_GT(op.claims.size(), 2u);  // more than any bound below
  EXPECT_EQ(copies_started_at_once(&backup_step, kBackupPurpose), std::ssize(op.claims));
}

TEST_F(Steps, BackupStartsNoMoreCopiesAtOnceThanTheBoundGiven) {
  settings.max_parallel_copies = 2;
  at(Phase::BackingUp);
  EXPECT_EQ(copies_started_at_once(&backup_step, kBackupPurpose), 2);
  EXPECT_TRUE(run_until_settled(&backup_step, 200).is(StepOutcome::Kind::Done));
  for (const ClaimPlan& claim : op.claims) EXPECT_TRUE(claim.backup_verified) << claim.claim;
}

TEST_F(Steps, BackupClaimOfAnotherOperationIsCriticalAndUntouched) {
  at(Phase::BackingUp);
  const std::string name = naming::backup_claim(op.claims[0].claim);
  world.kube.put_raw(Kind::PersistentVolumeClaim,
                     Json{{"metadata",
                           {{"name", name},
                            {"namespace", kNs},
                            {"annotations", {{"stsresize.dev/operation", "web-older"}}}}},
                          {"spec", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("not created by operation"), std::string::npos);
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, BackupClaimWithADifferentSizeIsCritical) {
  at(Phase::BackingUp);
  const std::string name = naming::backup_claim(op.claims[0].claim);
  world.kube.put_raw(Kind::PersistentVolumeClaim,
                     Json{{"metadata",
                           {{"name", name},
                            {"namespace", kNs},
                            {"annotations", {{"stsresize.dev/operation", op.id}}}}},
                          {"spec",
                           {{"storageClassName", "standard"},
                            {"resources", {{"requests", {{"storage", "5Gi"}}}}}}}});
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("5Gi"), std::string::npos) << outcome.message;
}

TEST_F(Steps, FailedCopyJobIsCritical) {
  settings.copy_job.backoff_limit = 0;
  world.cluster.fail_next_job_pods(1);
  at(Phase::BackingUp);
  const StepOutcome outcome = run_until_settled(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("failed"), std::string::npos) << outcome.message;
}

TEST_F(Steps, CopySummaryMismatchIsCriticalEvenWhenTheJobSucceeded) {
  world.cluster.set_job_runner([](const Json&, std::map<std::string, VolumeFiles*>&) {
    return JobRun{0, format_copy_summary(CopySummary{TreeSummary{3, 10, std::string(64, 'a')},
                                                     TreeSummary{2, 7, std::string(64, 'b')}})};
  });
  at(Phase::BackingUp);
  const StepOutcome outcome = run_until_settled(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("differs"), std::string::npos) << outcome.message;
  for (const ClaimPlan& claim : op.claims) EXPECT_FALSE(claim.backup_verified);
}

TEST_F(Steps, BackupClaimPendingPastTheTimeoutIsCritical) {
  world.cluster.fail_provisioning("standard");
  at(Phase::BackingUp);
  EXPECT_TRUE(run(&backup_step).is(StepOutcome::Kind::Waiting));  // creates the claim
  world.cluster.tick();
  world.clock.advance(settings.pending_timeout + std::chrono::seconds{1});
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("pending timeout"), std::string::npos);
}

TEST_F(Steps, SourceIsNeverDeletedWithoutAVerifiedBackup) {
  at(Phase::Recreating);
  const StepOutcome outcome = run(&recreate_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("not been verified"), std::string::npos);
  EXPECT_EQ(world.kube.mutations(), 0);
  EXPECT_TRUE(journal->intents.empty());
}

TEST_F(Steps, SourceIsNeverDeletedWhenItsBackupClaimIsGone) {
  verify_all_backups();
  at(Phase::Recreating);
  const StepOutcome outcome = run(&recreate_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("is gone"), std::string::npos) << outcome.message;
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, ASourceReplacedBySomeoneElseIsCriticalNotDeleted) {
  verify_all_backups();
  op.claims[0].source_uid = "uid-of-the-claim-we-planned";
  at(Phase::Recreating);
  const StepOutcome outcome = run(&recreate_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("replaced"), std::string::npos);
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, RecreatedClaimKeepsTheOriginalLabelsAndGetsTheTargetSize) {
  verify_all_backups();
  ClaimPlan& first = op.claims[0];
  first.labels["team"] = "payments";
  first.source_deleted = true;
  world.kube.mutate_raw(world.claim(first.claim), [](Json& pvc) {
    pvc["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
    pvc["metadata"]["finalizers"] = Json::array();
  });
  ASSERT_FALSE(world.kube.get_raw(world.claim(first.claim)));
  at(Phase::Recreating);
  EXPECT_TRUE(run(&recreate_step).is(StepOutcome::Kind::Waiting));
  const auto created = world.kube.get_raw(world.claim(first.claim));
  ASSERT_TRUE(created);
  EXPECT_EQ((*created)["metadata"]["labels"]["team"], "payments");
  EXPECT_EQ(*k8s::requested_storage(*created), *Quantity::parse("2Gi"));
  EXPECT_EQ((*created)["spec"]["storageClassName"], "standard");
  // The second call records the new uid instead of creating again.
  EXPECT_TRUE(run(&recreate_step).is(StepOutcome::Kind::Waiting));
  EXPECT_EQ(client_creates(first.claim), 1);
  EXPECT_EQ(op.claims[0].recreated_uid, *k8s::uid(*created));
}

TEST_F(Steps, BackupIsNeverDeletedBeforeItsRestoreIsVerified) {
  const std::string name = naming::backup_claim(op.claims[0].claim);
  world.kube.put_raw(Kind::PersistentVolumeClaim,
                     Json{{"metadata",
                           {{"name", name},
                            {"namespace", kNs},
                            {"annotations", {{"stsresize.dev/operation", op.id}}}}},
                          {"spec", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
  at(Phase::CleaningUp);
  const StepOutcome outcome = run(&cleanup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("never verified"), std::string::npos);
  EXPECT_TRUE(world.kube.get_raw(world.claim(name)));
  EXPECT_EQ(world.kube.mutations(), 0);
}

// On the rebind path a claim's policies are put back only once its backup claim is gone: a
// claim whose two policies are back is not looked at again (each policy put back runs again on
// live reads, which would ask for every earlier backup claim, each answered 404).
TEST_F(Steps, CleanupDoesNotReadTheBackupOfAClaimWhosePoliciesAreBack) {
  op.path = Path::Rebind;
  for (ClaimPlan& claim : op.claims) {
    claim.restore_verified = TreeSummary{1, 1, "d"};
    claim.source_volume = "pv-" + claim.claim;
    claim.copy_volume = "pv-" + claim.claim + "-copy";
    claim.source_policy = claim.copy_policy = "Delete";
    claim.source_policy_restored = claim.copy_policy_restored = true;
  }
  at(Phase::CleaningUp);
  const int reads = world.kube.calls(Verb::Get, Kind::PersistentVolumeClaim);
  EXPECT_TRUE(run(&cleanup_step).is(StepOutcome::Kind::Done));
  EXPECT_EQ(world.kube.calls(Verb::Get, Kind::PersistentVolumeClaim), reads);
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, ScaleBackRefusesWhenASourceIsNoLongerIntact) {
  op.claims[1].source_uid = "another-uid";
  at(Phase::ScalingBack);
  const StepOutcome outcome = run(&scale_back_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, ScaleUpWarnsOnceWhenPodsAreNotReadyPastTheTimeoutAndKeepsWaiting) {
  world.kube.mutate_raw(world.sts(), [](Json& s) { s["spec"]["replicas"] = 0; });
  world.settle(5);
  // data-web-0 hangs in deletion (a foreign finalizer): pod web-0 can never start again.
  const ObjectRef held = world.claim(naming::claim_name("data", kSts, 0));
  world.kube.mutate_raw(held, [](Json& c) { c["metadata"]["finalizers"].push_back("x.io/hold"); });
  ASSERT_TRUE(world.kube.system().remove(held));
  settings.scale_up_timeout = std::chrono::minutes{10};
  at(Phase::ScalingUp);
  EXPECT_TRUE(run_until_settled(&scale_up_step, 30).is(StepOutcome::Kind::Waiting));
  EXPECT_FALSE(world.events.contains("ScaleUpTimeout"));
  EXPECT_TRUE(journal->recorded.empty());

  world.clock.advance(std::chrono::minutes{10});
  EXPECT_TRUE(run(&scale_up_step).is(StepOutcome::Kind::Waiting));
  const auto warnings = world.events.with_reason("ScaleUpTimeout");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].severity, EventSeverity::Warning);
  EXPECT_NE(warnings[0].message.find("only 2 of 3 pods Ready"), std::string::npos)
      << warnings[0].message;
  ASSERT_EQ(journal->recorded.size(), 1u);
  EXPECT_FALSE(op.warning.empty());
  EXPECT_TRUE(op.failure.empty());

  // Given once: later calls keep waiting without another warning.
  world.clock.advance(std::chrono::minutes{30});
  const StepOutcome later = run(&scale_up_step);
  EXPECT_TRUE(later.is(StepOutcome::Kind::Waiting));
  EXPECT_GT(later.requeue_after, Duration{0});
  EXPECT_EQ(world.events.with_reason("ScaleUpTimeout").size(), 1u);
  EXPECT_EQ(journal->recorded.size(), 1u);
}

TEST_F(Steps, CopyJobCarriesTheConfiguredImageFlagsAndPlacement) {
  world.kube.mutate_raw(world.sts(), [](Json& s) { s["spec"]["replicas"] = 0; });
  world.settle(5);
  settings.copy_job.image = "registry.local/rsync:7";
  settings.copy_job.rsync_flags = {"-a", "--bwlimit=10m"};
  settings.copy_job.resources.cpu_request = "50m";
  settings.copy_job.resources.memory_limit = "128Mi";
  settings.copy_job.security_context = {{"runAsNonRoot", true}};
  settings.copy_job.node_selector = {{"disk", "ssd"}};
  settings.copy_job.tolerations = Json::array({{{"key", "storage"}, {"operator", "Exists"}}});
  at(Phase::BackingUp);
  run_until_settled(&backup_step, 5);
  const auto job =
      world.kube.get_raw(ObjectRef{Kind::Job, kNs, naming::backup_job(op.claims.front().claim)});
  ASSERT_TRUE(job);
  const Json& pod = (*job)["spec"]["template"]["spec"];
  const Json& container = pod["containers"][0];
  EXPECT_EQ(container["image"], "registry.local/rsync:7");
  EXPECT_NE(container["command"].dump().find("'--bwlimit=10m'"), std::string::npos);
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "50m");
  EXPECT_EQ(container["resources"]["limits"]["memory"], "128Mi");
  EXPECT_EQ(container["securityContext"], settings.copy_job.security_context);
  EXPECT_EQ(pod["nodeSelector"], settings.copy_job.node_selector);
  EXPECT_EQ(pod["tolerations"], settings.copy_job.tolerations);
}

TEST_F(Steps, BackupWhileTheSetIsScaledUpWithEverySourceIntactIsCritical) {
  at(Phase::BackingUp);
  EXPECT_TRUE(run(&backup_step).is(StepOutcome::Kind::Waiting));  // a backup claim
  const int before = world.kube.mutations();
  scale_to(3);  // kubectl scale, or a GitOps tool putting spec.replicas back
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("spec.replicas of the StatefulSet is 3"), std::string::npos)
      << outcome.message;
  EXPECT_EQ(world.kube.mutations(), before);
  // The machine turns that into ScalingBack while every source is intact.
  EXPECT_EQ(PhaseMachine{Phase::BackingUp}.fire(Trigger::CriticalError, op.sources_intact()),
            Phase::ScalingBack);
}

TEST_F(Steps, BackupVerifiedBeforeAScaleUpIsNotTakenAsDoneWhileAnApprovalWaits) {
  at(Phase::BackingUp);
  ASSERT_TRUE(run_until_settled(&backup_step, 200).is(StepOutcome::Kind::Done));
  // The transition to Recreating waits for approval; the step runs again at each reconcile.
  scale_to(2);
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
}

TEST_F(Steps, AClaimMountedByAPodOfAnotherOwnerBreaksTheFence) {
  at(Phase::BackingUp);
  mount_by_hand("debug", op.claims[1].claim);
  const StepOutcome outcome = run(&backup_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("pod debug (no owner) mounts " + op.claims[1].claim),
            std::string::npos)
      << outcome.message;
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, ScaleDownRefusesAClaimThatAPodOfAnotherOwnerMounts) {
  at(Phase::ScalingDown);
  mount_by_hand("db-0", op.claims[0].claim);
  const StepOutcome outcome = run_until_settled(&scale_down_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("not touching it"), std::string::npos) << outcome.message;
}

TEST_F(Steps, AnEndedPodAndTheOperationsOwnCopyPodsDoNotBreakTheFence) {
  at(Phase::BackingUp);
  mount_by_hand("finished", op.claims[0].claim);
  world.kube.mutate_raw(ObjectRef{Kind::Pod, kNs, "finished"},
                        [](Json& pod) { pod["status"]["phase"] = "Succeeded"; });
  // The backup Jobs' pods mount every source while they copy.
  EXPECT_TRUE(run_until_settled(&backup_step, 200).is(StepOutcome::Kind::Done));
}

TEST_F(Steps, ABackupTakenAtAnotherGenerationIsCopiedAgainWithANewJob) {
  at(Phase::BackingUp);
  ASSERT_TRUE(run_until_settled(&backup_step, 200).is(StepOutcome::Kind::Done));
  const std::int64_t first = generation();
  for (const ClaimPlan& claim : op.claims) EXPECT_EQ(claim.backup_generation, first);
  // Scaled up and back down while the controller was away: the pods may have written.
  scale_to(3);
  world.settle(5);
  world.cluster.write_file(world.claim(op.claims[0].claim), "app/late.log", "written late");
  scale_to(0);
  world.settle(5);
  ASSERT_GT(generation(), first);
  EXPECT_TRUE(run_until_settled(&backup_step, 300).is(StepOutcome::Kind::Done));
  for (const ClaimPlan& claim : op.claims) {
    EXPECT_EQ(claim.backup_generation, generation()) << claim.claim;
    EXPECT_EQ(client_creates(naming::backup_job(claim.claim)), 2) << claim.claim;
  }
  const auto backup =
      world.cluster.volume_files(world.claim(naming::backup_claim(op.claims[0].claim)));
  ASSERT_TRUE(backup);
  EXPECT_EQ(backup->at("app/late.log"), "written late");
}

TEST_F(Steps, RecreateSendsAStaleBackupBackToBackingUpBeforeDeletingAnything) {
  verify_all_backups();
  at(Phase::Recreating);
  scale_to(3);
  world.settle(5);
  scale_to(0);
  world.settle(5);
  const StepOutcome outcome = run(&recreate_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  EXPECT_EQ(outcome.event, Trigger::BackupStale);
  EXPECT_EQ(world.kube.mutations(), 0);
  EXPECT_EQ(PhaseMachine{Phase::Recreating}.fire(Trigger::BackupStale), Phase::BackingUp);
}

TEST_F(Steps, RecreateBeforeAnySourceDeleteRefusesAScaleUp) {
  verify_all_backups();
  at(Phase::Recreating);
  scale_to(3);
  const StepOutcome outcome = run(&recreate_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(Steps, AfterASourceDeleteAScaleUpIsUndoneAndTheStepWaits) {
  verify_all_backups();
  at(Phase::Recreating);
  ClaimPlan& first = op.claims[0];
  ASSERT_TRUE(world.kube.system().remove(world.claim(first.claim)));
  first.source_deleted = true;
  journal = std::make_unique<TestJournal>(op);
  scale_to(3);
  EXPECT_TRUE(run(&recreate_step).is(StepOutcome::Kind::Waiting));  // the warning, journaled
  EXPECT_NE(op.warning.find("the fence was broken in Recreating"), std::string::npos) << op.warning;
  ASSERT_EQ(world.events.with_reason("FenceRestored").size(), 1u);
  EXPECT_TRUE(run(&recreate_step).is(StepOutcome::Kind::Waiting));  // replicas back to 0
  EXPECT_EQ(*k8s::spec_replicas(world.live_sts()), 0);
  EXPECT_EQ(world.events.with_reason("FenceRestored").size(), 1u);
  // Nothing is deleted or created while pods may still run.
  EXPECT_EQ(client_creates(first.claim), 0);
}

TEST_F(Steps, RestoreRefusesWhenTheBackupClaimIsGone) {
  verify_all_backups();
  at(Phase::Restoring);
  for (ClaimPlan& claim : op.claims) {
    ASSERT_TRUE(world.kube.system().remove(world.claim(claim.claim)));
    claim.source_deleted = true;
  }
  world.settle(3);  // pvc-protection lets them go: no pod uses them
  for (ClaimPlan& claim : op.claims) {
    auto created = world.kube.system().create(
        Kind::PersistentVolumeClaim, Json{{"metadata", {{"name", claim.claim}, {"namespace", kNs}}},
                                          {"spec",
                                           {{"storageClassName", "standard"},
                                            {"accessModes", {"ReadWriteOnce"}},
                                            {"resources", {{"requests", {{"storage", "2Gi"}}}}}}}});
    ASSERT_TRUE(created);
    claim.recreated_uid = *k8s::uid(*created);
  }
  world.settle(3);
  journal = std::make_unique<TestJournal>(op);
  const StepOutcome outcome = run(&restore_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical)) << outcome.message;
  EXPECT_NE(outcome.message.find("is gone (deleted by someone else)"), std::string::npos)
      << outcome.message;
}

// Restoring with every source replaced by an empty claim of the operation.
class RestoringSteps : public Steps {
 protected:
  void SetUp() override {
    Steps::SetUp();
    verify_all_backups();
    at(Phase::Restoring);
    for (ClaimPlan& claim : op.claims) {
      ASSERT_TRUE(world.kube.system().remove(world.claim(claim.claim)));
      claim.source_deleted = true;
    }
    world.settle(3);
    for (ClaimPlan& claim : op.claims) {
      Json backup = Json{{"metadata",
                          {{"name", naming::backup_claim(claim.claim)},
                           {"namespace", kNs},
                           {"labels", {{"stsresize.dev/operation", naming::label_value(op.id)}}},
                           {"annotations", {{"stsresize.dev/operation", op.id}}}}},
                         {"spec",
                          {{"storageClassName", "standard"},
                           {"accessModes", {"ReadWriteOnce"}},
                           {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
      ASSERT_TRUE(world.kube.system().create(Kind::PersistentVolumeClaim, backup));
      auto created = world.kube.system().create(
          Kind::PersistentVolumeClaim,
          Json{{"metadata",
                {{"name", claim.claim},
                 {"namespace", kNs},
                 {"annotations", {{"stsresize.dev/recreated-by", op.id}}}}},
               {"spec",
                {{"storageClassName", "standard"},
                 {"accessModes", {"ReadWriteOnce"}},
                 {"resources", {{"requests", {{"storage", "2Gi"}}}}}}}});
      ASSERT_TRUE(created);
      claim.recreated_uid = *k8s::uid(*created);
    }
    world.settle(3);
    journal = std::make_unique<TestJournal>(op);
  }
};

TEST_F(RestoringSteps, RestoreStartsEveryClaimsCopyAtOnceByDefault) {
  ASSERT_GT(op.claims.size(), 1u);
  EXPECT_EQ(copies_started_at_once(&restore_step, kRestorePurpose), std::ssize(op.claims));
}

TEST_F(RestoringSteps, RestoreStartsNoMoreCopiesAtOnceThanTheBoundGiven) {
  settings.max_parallel_copies = 1;
  EXPECT_EQ(copies_started_at_once(&restore_step, kRestorePurpose), 1);
}

TEST_F(RestoringSteps, ARecreatedClaimDeletedBeforeItsRestoreIsGivenUpAndCreatedAgain) {
  const ClaimPlan first = op.claims[0];
  ASSERT_TRUE(world.kube.system().remove(world.claim(first.claim)));
  world.settle(2);
  StepOutcome outcome = run(&restore_step);
  for (int i = 0; i < 10 && outcome.is(StepOutcome::Kind::Waiting); ++i)
    outcome = run(&restore_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  EXPECT_EQ(outcome.event, Trigger::RecreateAgain);
  EXPECT_TRUE(op.claims[0].recreated_uid.empty());
  ASSERT_FALSE(journal->recorded.empty());
  EXPECT_TRUE(std::holds_alternative<entries::ClaimDiscarded>(journal->recorded.back()));
  EXPECT_EQ(PhaseMachine{Phase::Restoring}.fire(Trigger::RecreateAgain), Phase::Recreating);
}

TEST_F(RestoringSteps, ARestoreThatCannotBePlacedGivesItsClaimUpAfterDeletingItsJob) {
  const ClaimPlan first = op.claims[0];
  ASSERT_TRUE(run(&restore_step).is(StepOutcome::Kind::Waiting));  // the first restore Job
  const ObjectRef job{Kind::Job, kNs, naming::restore_job(first.claim)};
  const auto created_job = world.kube.get_raw(job);
  ASSERT_TRUE(created_job);
  // The scheduler's word for a pod whose two volumes no one node reaches.
  world.kube.put_raw(
      Kind::Pod,
      Json{{"metadata",
            {{"name", naming::restore_job(first.claim) + "-x"},
             {"namespace", kNs},
             {"labels", {{"stsresize.dev/operation", naming::label_value(op.id)}}},
             {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                               {"kind", "Job"},
                                               {"name", naming::restore_job(first.claim)},
                                               {"uid", (*created_job)["metadata"]["uid"]}}})}}},
           {"spec", {{"containers", Json::array({{{"name", "copy"}, {"image", "rsync"}}})}}},
           {"status",
            {{"phase", "Pending"},
             {"conditions", Json::array({{{"type", "PodScheduled"},
                                          {"status", "False"},
                                          {"reason", "Unschedulable"},
                                          {"message",
                                           "0/3 nodes are available: 3 node(s) didn't match "
                                           "PersistentVolume's node affinity."}}})}}}});
  EXPECT_TRUE(run(&restore_step).is(StepOutcome::Kind::Waiting));  // the claim is deleted
  EXPECT_TRUE(run(&restore_step).is(StepOutcome::Kind::Waiting));  // then the Job that holds it
  EXPECT_FALSE(world.kube.get_raw(job) &&
               !(*world.kube.get_raw(job))["metadata"].contains("deletionTimestamp"));
  world.kube.system().remove(ObjectRef{Kind::Pod, kNs, naming::restore_job(first.claim) + "-x"});
  world.settle(2);
  StepOutcome outcome = run(&restore_step);
  for (int i = 0; i < 20 && outcome.is(StepOutcome::Kind::Waiting); ++i) {
    world.settle(1);
    outcome = run(&restore_step);
  }
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  EXPECT_EQ(outcome.event, Trigger::RecreateAgain);
  EXPECT_TRUE(op.claims[0].recreated_uid.empty());
  bool deleted = false;
  for (const std::string& intent : journal->intents) {
    deleted = deleted || (intent.starts_with("delete PersistentVolumeClaim") &&
                          intent.find("its restore cannot be scheduled") != std::string::npos);
  }
  EXPECT_TRUE(deleted);
}

TEST_F(Steps, PlanningRecordsThePlanOnceThenChoosesThePath) {
  op.path = Path::Undecided;
  op.claims.clear();
  at(Phase::Planning);
  EXPECT_TRUE(run(&plan_step).is(StepOutcome::Kind::Waiting));
  ASSERT_EQ(journal->recorded.size(), 1u);
  // A class that cannot expand, with rights on PersistentVolumes: the copy path, rebinding.
  EXPECT_EQ(op.path, Path::Rebind);
  EXPECT_EQ(op.rebind_unavailable, "");
  ASSERT_EQ(op.claims.size(), 6u);
  for (const ClaimPlan& claim : op.claims) {
    const Json live = *world.kube.get_raw(world.claim(claim.claim));
    EXPECT_EQ(claim.source_volume, live["spec"]["volumeName"]) << claim.claim;
    // The binder's own annotations are not the claim's to keep.
    EXPECT_FALSE(claim.annotations.contains("pv.kubernetes.io/bind-completed")) << claim.claim;
  }
  const StepOutcome outcome = run(&plan_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done));
  EXPECT_EQ(outcome.event, Trigger::PlannedPreCopy);
  EXPECT_EQ(journal->recorded.size(), 1u);
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

// The rebind path needs rights to read and patch PersistentVolumes, and no ReadWriteOncePod
// claim; without them the plan is the two-copy path, and says why (journal, Event).
class PlanningWithoutRebind
    : public Steps,
      public ::testing::WithParamInterface<std::pair<std::string, std::string>> {};

TEST_P(PlanningWithoutRebind, TakesTheTwoCopyPathAndSaysWhy) {
  const auto& [denial, why] = GetParam();
  op.path = Path::Undecided;
  op.claims.clear();
  at(Phase::Planning);
  const KubeError forbidden{KubeErrorCode::Forbidden, "persistentvolumes is forbidden"};
  if (denial == "get") {
    world.kube.inject({.verb = Verb::Get, .kind = Kind::PersistentVolume, .error = forbidden});
  } else if (denial == "patch") {
    world.kube.inject({.verb = Verb::Patch, .kind = Kind::PersistentVolume, .error = forbidden});
  } else if (denial == "flag") {
    settings.rebind = false;
  } else {
    world.kube.mutate_raw(world.claim("data-web-1"), [](Json& live) {
      live["spec"]["accessModes"] = Json::array({"ReadWriteOncePod"});
    });
  }
  EXPECT_TRUE(run(&plan_step).is(StepOutcome::Kind::Waiting));
  EXPECT_EQ(op.path, Path::Copy);
  EXPECT_NE(op.rebind_unavailable.find(why), std::string::npos) << op.rebind_unavailable;
  bool said = false;
  for (const auto& event : world.events.events()) {
    said = said ||
           (event.reason == "RebindUnavailable" && event.message.find(why) != std::string::npos);
  }
  EXPECT_TRUE(said);
  // Nothing but the plan was written: the probe's patch changes nothing.
  for (const std::string& intent : journal->intents) ADD_FAILURE() << intent;
}

INSTANTIATE_TEST_SUITE_P(
    Denials, PlanningWithoutRebind,
    ::testing::Values(std::pair{"get", "reading PersistentVolumes is forbidden"},
                      std::pair{"patch", "patching PersistentVolumes is forbidden"},
                      std::pair{"flag", "--no-rebind"},
                      std::pair{"rwop", "claim data-web-1 is ReadWriteOncePod"}),
    [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

// Planning begins the copy with a warm pre-copy unless the StatefulSet says
// stsresize.dev/pre-copy: "false"; any other value is refused before anything is written.
TEST_F(Steps, PlanningChoosesThePreCopyFromTheStatefulSetsAnnotation) {
  op.path = Path::Undecided;
  op.claims.clear();
  at(Phase::Planning);
  ASSERT_TRUE(run(&plan_step).is(StepOutcome::Kind::Waiting));
  EXPECT_EQ(run(&plan_step).event, Trigger::PlannedPreCopy);
  const auto annotate = [&](const std::string& value) {
    world.kube.mutate_raw(world.sts(), [&](Json& s) {
      s["metadata"]["annotations"][std::string{kPreCopyAnnotation}] = value;
    });
  };
  annotate("true");
  EXPECT_EQ(run(&plan_step).event, Trigger::PlannedPreCopy);
  annotate("false");
  const StepOutcome without = run(&plan_step);
  ASSERT_TRUE(without.is(StepOutcome::Kind::Done));
  EXPECT_EQ(without.event, Trigger::PlannedCopy);
  annotate("no");
  const std::size_t mutations = world.kube.history().size();
  const StepOutcome refused = run(&plan_step);
  ASSERT_TRUE(refused.is(StepOutcome::Kind::Critical));
  EXPECT_NE(refused.message.find("stsresize.dev/pre-copy is \"no\""), std::string::npos)
      << refused.message;
  EXPECT_NE(refused.message.find("nothing was changed"), std::string::npos) << refused.message;
  EXPECT_EQ(world.kube.history().size(), mutations);
  EXPECT_EQ(journal->recorded.size(), 1u);  // the plan alone
}

class PreCopy : public Steps {
 protected:
  void SetUp() override {
    Steps::SetUp();
    world.settle(5);  // every replica Running
    // The simulated kubelet places no pod: each replica runs on a node of its own here.
    for (int i = 0; i < kReplicas; ++i) {
      world.kube.mutate_raw(
          {Kind::Pod, kNs, std::string{kSts} + "-" + std::to_string(i)},
          [&](Json& pod) { pod["spec"]["nodeName"] = "node-" + std::to_string(i); });
    }
    at(Phase::PreCopying);
  }
  std::optional<Json> job(const std::string& claim) {
    return world.kube.get_raw({Kind::Job, kNs, naming::pre_copy_job(world.claim(claim).name)});
  }
  std::string node_of(const std::string& pod) {
    return world.kube.get_raw({Kind::Pod, kNs, pod})
        .value_or(Json::object())["spec"]
        .value("nodeName", "");
  }
};

// Each claim: its backup claim, then a pre-copy Job beside the replica that mounts it, the
// source read-only, never retried; PreCopied from each Job's result, and Done only once every
// pre-copy Job is gone. (That it is deleted in the foreground, gone only with its pod, is
// checked on the local control plane: E2E_PreCopyWhileTheReplicasWrite.)
TEST_F(PreCopy, CopiesEachClaimBesideItsReplicaThenDeletesItsJobsBeforeDone) {
  ASSERT_TRUE(run(&pre_copy_step).is(StepOutcome::Kind::Waiting));
  const std::string first = op.claims.front().claim;
  ASSERT_TRUE(world.kube.get_raw(world.claim(naming::backup_claim(first))));
  ASSERT_TRUE(run(&pre_copy_step).is(StepOutcome::Kind::Waiting));
  const auto created = job(first);
  ASSERT_TRUE(created);
  const Json& pod = (*created)["spec"]["template"]["spec"];
  const std::string replica = std::string{kSts} + "-" + std::to_string(op.claims.front().ordinal);
  ASSERT_FALSE(node_of(replica).empty());
  EXPECT_EQ(pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            node_of(replica));
  EXPECT_EQ(pod["volumes"][0]["persistentVolumeClaim"]["readOnly"], true);
  EXPECT_EQ(pod["volumes"][1]["persistentVolumeClaim"]["claimName"], naming::backup_claim(first));
  EXPECT_EQ((*created)["spec"]["backoffLimit"], 0);
  EXPECT_EQ((*created)["metadata"]["labels"][std::string{kPurposeLabel}], "pre-copy");
  EXPECT_NE(pod["containers"][0]["command"][2].get<std::string>().find("stsresize pre-copy Job"),
            std::string::npos);
  // The replicas were never touched.
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);

  const StepOutcome outcome = run_until_settled(&pre_copy_step, 200);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  for (const ClaimPlan& claim : op.claims) {
    EXPECT_TRUE(claim.pre_copied) << claim.claim;
    EXPECT_FALSE(job(claim.claim)) << claim.claim;
    // The simulated pre-copy leaves the backup equal to the source.
    EXPECT_EQ(world.cluster.volume_files(world.claim(naming::backup_claim(claim.claim))),
              world.cluster.volume_files(world.claim(claim.claim)))
        << claim.claim;
  }
  int recorded = 0;
  for (const Entry& entry : journal->recorded) {
    if (const auto* pre = std::get_if<entries::PreCopied>(&entry)) {
      ++recorded;
      EXPECT_EQ(pre->passes, 1) << pre->claim;
      EXPECT_TRUE(pre->skipped.empty()) << pre->claim;
    }
  }
  EXPECT_EQ(recorded, static_cast<int>(op.claims.size()));
  EXPECT_FALSE(world.events.contains("PreCopyFailed"));
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
}

// A pre-copy that fails costs time, not the resize: a Warning, PreCopied saying why, Done.
TEST_F(PreCopy, AFailedPreCopyIsAWarningAndTheResizeGoesOn) {
  world.cluster.fail_next_pre_copies(1);
  const StepOutcome outcome = run_until_settled(&pre_copy_step, 200);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  int skipped = 0;
  for (const Entry& entry : journal->recorded) {
    if (const auto* pre = std::get_if<entries::PreCopied>(&entry); pre && !pre->skipped.empty()) {
      ++skipped;
      EXPECT_NE(pre->skipped.find("its Job failed"), std::string::npos) << pre->skipped;
      EXPECT_NE(pre->skipped.find("rsync failed with exit code 23"), std::string::npos)
          << pre->skipped;
    }
  }
  EXPECT_EQ(skipped, 1);
  EXPECT_TRUE(world.events.contains("PreCopyFailed"));
}

// A ReadWriteOncePod claim may not be mounted by a second pod: no pre-copy, and PreCopied says
// so; no backup claim or Job is created for it here.
TEST_F(PreCopy, AReadWriteOncePodClaimIsNotPreCopied) {
  op.claims.front().access_modes = {"ReadWriteOncePod"};
  at(Phase::PreCopying);
  ASSERT_TRUE(run(&pre_copy_step).is(StepOutcome::Kind::Waiting));
  ASSERT_EQ(journal->recorded.size(), 1u);
  const auto* pre = std::get_if<entries::PreCopied>(&journal->recorded.front());
  ASSERT_TRUE(pre);
  EXPECT_NE(pre->skipped.find("ReadWriteOncePod"), std::string::npos) << pre->skipped;
  EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(pre->claim))));
  EXPECT_FALSE(job(pre->claim));
}

// Someone else's Job of that name is never taken for a pre-copy.
TEST_F(PreCopy, AJobOfThatNameNotCreatedByTheOperationIsCritical) {
  const std::string first = op.claims.front().claim;
  run(&pre_copy_step);  // the backup claim
  world.kube.put_raw(Kind::Job,
                     Json{{"metadata", {{"name", naming::pre_copy_job(first)}, {"namespace", kNs}}},
                          {"spec", Json::object()}});
  const StepOutcome outcome = run(&pre_copy_step);
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Critical));
  EXPECT_NE(outcome.message.find("was not created by operation"), std::string::npos)
      << outcome.message;
}

// A pre-copy Job still running at the job timeout is recorded and stopped; Done once gone. (The
// cluster does not move here: the Jobs never start.)
TEST_F(PreCopy, APreCopyPastTheJobTimeoutIsStoppedAndTheResizeGoesOn) {
  settings.pending_timeout = settings.job_timeout * 2;
  for (int i = 0; i < 30; ++i) run(&pre_copy_step);
  ASSERT_TRUE(job(op.claims.front().claim));
  world.clock.advance(settings.job_timeout + std::chrono::seconds{1});
  StepOutcome outcome = run(&pre_copy_step);
  for (int i = 0; i < 60 && outcome.is(StepOutcome::Kind::Waiting); ++i) {
    outcome = run(&pre_copy_step);
  }
  ASSERT_TRUE(outcome.is(StepOutcome::Kind::Done)) << outcome.message;
  int timed_out = 0;
  for (const Entry& entry : journal->recorded) {
    if (const auto* pre = std::get_if<entries::PreCopied>(&entry)) {
      timed_out += pre->skipped.find("job timeout") != std::string::npos;
    }
  }
  EXPECT_GT(timed_out, 0);
  EXPECT_TRUE(world.events.contains("PreCopyFailed"));
  for (const ClaimPlan& claim : op.claims) EXPECT_FALSE(job(claim.claim)) << claim.claim;
}

// A pre-copy pod the scheduler cannot place beside its replica (a full node) is given up once
// the phase has lasted the pending timeout, with a Warning, instead of holding the resize until
// the job timeout; before that it is waited for.
TEST_F(PreCopy, APreCopyPodThatCannotBeScheduledIsGivenUpAfterThePendingTimeout) {
  const std::string first = op.claims.front().claim;
  for (int i = 0; i < 30 && !job(first); ++i) run(&pre_copy_step);
  const auto created = job(first);
  ASSERT_TRUE(created);
  world.kube.put_raw(
      Kind::Pod,
      Json{{"metadata",
            {{"name", naming::pre_copy_job(first) + "-x"},
             {"namespace", kNs},
             {"labels", {{"stsresize.dev/operation", naming::label_value(op.id)}}},
             {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                               {"kind", "Job"},
                                               {"name", naming::pre_copy_job(first)},
                                               {"uid", (*created)["metadata"]["uid"]}}})}}},
           {"spec", {{"containers", Json::array({{{"name", "copy"}, {"image", "rsync"}}})}}},
           {"status",
            {{"phase", "Pending"},
             {"conditions",
              Json::array({{{"type", "PodScheduled"},
                            {"status", "False"},
                            {"reason", "Unschedulable"},
                            {"message",
                             "0/3 nodes are available: 1 Insufficient cpu, 2 "
                             "node(s) didn't match Pod's node affinity/selector."}}})}}}});
  const auto given_up = [&] {
    for (const Entry& entry : journal->recorded) {
      if (const auto* pre = std::get_if<entries::PreCopied>(&entry); pre && pre->claim == first) {
        return pre->skipped;
      }
    }
    return std::string{};
  };
  for (int i = 0; i < 10; ++i) run(&pre_copy_step);
  EXPECT_EQ(given_up(), "");
  EXPECT_FALSE(world.events.contains("PreCopyFailed"));

  world.clock.advance(settings.pending_timeout + std::chrono::seconds{1});
  for (int i = 0; i < 10 && given_up().empty(); ++i) run(&pre_copy_step);
  EXPECT_NE(given_up().find("could not be scheduled beside its replica"), std::string::npos)
      << given_up();
  EXPECT_NE(given_up().find("Insufficient cpu"), std::string::npos) << given_up();
  EXPECT_TRUE(world.events.contains("PreCopyFailed"));
  ASSERT_TRUE(op.claims.front().pre_copied);
}

}  // namespace
}  // namespace stsresize
