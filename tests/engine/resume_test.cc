// `stsresize advance --retry` of an operation that failed after its source claims were replaced
// (a restore Job failed for good): the SAME operation goes back to the phase it failed in once
// the CLI and then the engine have checked the preconditions; its failed Jobs are deleted
// first so that the step really runs again; one journal stream holds the failure, the
// OperatorAction with the Resume transition, and the completion.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/app/advance_command.h"
#include "adapters/app/exit_codes.h"
#include "engine/actions/request.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

EngineSettings one_attempt_per_copy() {
  EngineSettings settings = two_copies();
  settings.copy_job.backoff_limit = 0;
  return settings;
}

class Resume : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  std::unique_ptr<Reconciler> reconciler = std::make_unique<Reconciler>(
      world.kube, journal, world.clock, world.events, one_attempt_per_copy());

  std::optional<Operation> live_operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }
  Phase phase() {
    auto op = live_operation();
    return op ? op->phase : Phase::Completed;
  }
  void run_until(Phase until) {
    reconcile_until(
        *reconciler, world,
        {"phase " + std::string{to_string(until)},
         [&](const ReconcileResult& result) {
           if (phase() == until || (is_terminal(phase()) && until != Phase::Completed)) {
             return true;
           }
           return result.is(ReconcileResult::Kind::Idle) && until == Phase::Completed;
         }},
        {.limit = 300});
  }

  // Every restore Job fails: Failed in Restoring, replicas 0, the data in the backup claims.
  // The fault is then cleared.
  std::string fail_restoring() {
    world.seed(/*expandable=*/false);
    run_until(Phase::Restoring);
    EXPECT_EQ(phase(), Phase::Restoring);
    world.cluster.fail_next_job_pods(1000);
    run_until(Phase::Failed);
    world.cluster.fail_next_job_pods(0);
    auto op = live_operation();
    EXPECT_TRUE(op && op->phase == Phase::Failed);
    EXPECT_TRUE(op && op->failed_in == Phase::Restoring);
    EXPECT_TRUE(op && !op->sources_intact());
    EXPECT_TRUE(is_marked_failed(world.live_sts()));
    return op ? op->id : "";
  }

  std::pair<int, std::string> retry(const std::string& as = "alice", bool dry_run = false) {
    const CliResult run =
        run_advance_command(world.kube, {.target = "shop/web", .retry = true, .dry_run = dry_run},
                            {as, "default", world.clock.now(), "nonce-" + as});
    return {run.code, run.out + run.err};
  }

  std::vector<JournalRecord> stream(const std::string& id) {
    auto read = journal.read(id);
    EXPECT_TRUE(read);
    return read ? *read : std::vector<JournalRecord>{};
  }
};

TEST_F(Resume, AFailedRestoreResumedInPlaceCompletesWithTheDataIntactInOneStream) {
  const std::string id = fail_restoring();
  const int before = world.kube.mutations();
  auto [dry_code, dry] = retry("alice", /*dry_run=*/true);
  ASSERT_EQ(dry_code, cli::kExitOk) << dry;
  EXPECT_EQ(world.kube.mutations(), before);
  EXPECT_NE(dry.find("dry run: would resume Restoring of operation " + id), std::string::npos)
      << dry;
  auto [code, output] = retry();
  ASSERT_EQ(code, cli::kExitOk) << output;
  EXPECT_NE(output.find("resume of Restoring of operation " + id), std::string::npos) << output;

  run_until(Phase::Completed);
  const Json sts = world.live_sts();
  EXPECT_FALSE(k8s::annotation(sts, kStateAnnotation)->has_value());
  EXPECT_TRUE(k8s::annotation(sts, kLastOperationAnnotation)->has_value());
  EXPECT_FALSE(is_marked_failed(sts));
  EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
  EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(name)))) << name;
  }
  const auto resumed = world.events.with_reason("ResizeResumed");
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_NE(resumed[0].message.find("Failed -> Restoring (resumed by alice"), std::string::npos)
      << resumed[0].message;

  // One operation; its stream has the accepted retry right before Failed -> Restoring on
  // Resume, the failed Jobs' deletes journaled before them, and folds to Completed.
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  ASSERT_EQ(operations->size(), 1u);
  const auto records = stream(id);
  std::size_t resume_at = 0, deletes = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto event = decode_entry(records[i]);
    ASSERT_TRUE(event);
    if (const auto* changed = std::get_if<entries::PhaseChanged>(&*event);
        changed && changed->event == Trigger::Resume) {
      EXPECT_EQ(changed->from, Phase::Failed);
      EXPECT_EQ(changed->to, Phase::Restoring);
      resume_at = i;
    }
    if (const auto* intended = std::get_if<entries::ActionIntended>(&*event);
        intended && intended->phase == Phase::Failed && intended->action == "delete") {
      ++deletes;
    }
  }
  ASSERT_GT(resume_at, 0u);
  EXPECT_GT(deletes, 0u);
  auto action = decode_entry(records[resume_at - 1]);
  ASSERT_TRUE(action);
  const auto* taken = std::get_if<entries::OperatorAction>(&*action);
  ASSERT_TRUE(taken) << records[resume_at - 1].type;
  EXPECT_EQ(taken->action, "retry");
  EXPECT_EQ(taken->by, "alice");
  EXPECT_TRUE(taken->refused.empty());
  auto folded = fold(records, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

TEST_F(Resume, IsRefusedWhenABackupClaimIsMissingAndChangesNothing) {
  const std::string id = fail_restoring();
  const std::string backup = naming::backup_claim("data-web-1");
  world.kube.mutate_raw(world.claim(backup),
                        [](Json& live) { live["metadata"].erase("finalizers"); });
  ASSERT_TRUE(world.kube.system().remove(world.claim(backup), {}));
  world.settle(2);
  ASSERT_FALSE(world.kube.get_raw(world.claim(backup)));
  const int before = world.kube.mutations();
  auto [code, output] = retry();
  EXPECT_EQ(code, cli::kExitRefused);
  EXPECT_EQ(world.kube.mutations(), before);
  EXPECT_NE(output.find("backup claim " + backup + " of data-web-1 is gone"), std::string::npos)
      << output;

  // Written anyway: the engine decides again, refuses, removes the request; the failed Jobs,
  // the label and the failure stay.
  auto jobs_before = world.kube.list(Kind::Job, kNs);
  ASSERT_TRUE(jobs_before);
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Retry, Phase::Failed, id, "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  auto op = live_operation();
  ASSERT_TRUE(op);
  EXPECT_EQ(op->phase, Phase::Failed);
  EXPECT_EQ(op->failed_in, Phase::Restoring);
  EXPECT_FALSE(op->failure.empty());
  EXPECT_TRUE(is_marked_failed(world.live_sts()));
  auto jobs_after = world.kube.list(Kind::Job, kNs);
  ASSERT_TRUE(jobs_after);
  EXPECT_EQ(jobs_after->items.size(), jobs_before->items.size());
  const auto refused = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].message.find("by bob refused"), std::string::npos) << refused[0].message;
  EXPECT_TRUE(world.events.with_reason("ResizeResumed").empty());
  auto folded = fold(stream(id), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Failed);
}

TEST_F(Resume, ACrashBeforeTheResumeIsAnnotatedResumesOnce) {
  const std::string id = fail_restoring();
  ASSERT_EQ(retry().first, cli::kExitOk);
  // The first reconcile deletes the failed Jobs and waits for them to be gone.
  reconciler->reconcile(kNs, kSts);
  world.settle(2);
  // The annotation write of the resume is lost; the process dies there.
  world.kube.inject({.verb = Verb::Update,
                     .kind = Kind::StatefulSet,
                     .error = KubeError{KubeErrorCode::Unreachable, "injected crash"}});
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
  EXPECT_EQ(phase(), Phase::Failed);
  EXPECT_TRUE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  reconciler = std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events,
                                            one_attempt_per_copy());
  run_until(Phase::Completed);
  EXPECT_FALSE(live_operation());
  EXPECT_FALSE(is_marked_failed(world.live_sts()));
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
  }
  auto folded = fold(stream(id), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

}  // namespace
}  // namespace stsresize
