// `stsresize advance --retry`: a Failed operation whose source claims are intact (a copy Job
// failed and it scaled back, or it was aborted) is started again as a NEW operation once the
// CLI and then the engine have checked the preconditions; the old operation's journal stream
// ends with the person's OperatorAction, the label stsresize.dev/failed goes in the new
// operation's first write, and its trigger names the operation it retries.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/app/advance_command.h"
#include "adapters/app/exit_codes.h"
#include "engine/actions/request.h"
#include "engine/k8s_objects.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
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

class Retry : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  std::unique_ptr<Reconciler> reconciler = std::make_unique<Reconciler>(
      world.kube, journal, world.clock, world.events, one_attempt_per_copy());
  AdvanceCli advance{world};

  void run_to_idle() { reconcile_to_idle(*reconciler, world, 300); }

  CliResult retry() { return advance({.target = "shop/web", .retry = true}); }

  std::optional<Operation> live_operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }

  // A backup Job fails: the operation scales back and ends Failed, sources intact.
  std::string fail_a_backup() {
    world.seed(/*expandable=*/false);
    world.cluster.fail_next_job_pods(1);
    run_to_idle();
    auto op = live_operation();
    EXPECT_TRUE(op && op->phase == Phase::Failed);
    EXPECT_TRUE(op && op->sources_intact());
    EXPECT_TRUE(is_marked_failed(world.live_sts()));
    return op ? op->id : "";
  }

  bool completed() {
    const Json sts = world.live_sts();
    return !k8s::annotation(sts, kStateAnnotation)->has_value() &&
           k8s::annotation(sts, kLastOperationAnnotation)->has_value();
  }

  std::vector<JournalRecord> stream(const std::string& id) {
    auto read = journal.read(id);
    EXPECT_TRUE(read);
    return read ? *read : std::vector<JournalRecord>{};
  }

  void expect_resized_with_data_intact() {
    const Json sts = world.live_sts();
    EXPECT_TRUE(completed());
    EXPECT_FALSE(is_marked_failed(sts));
    EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_EQ(world.ready_replicas(), kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    }
  }
};

TEST_F(Retry, AFailedCopyRetriedAsANewOperationCompletesWithTheDataIntact) {
  const std::string old_id = fail_a_backup();
  const CliResult result = retry();
  ASSERT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_NE(result.out.find("retry of operation " + old_id), std::string::npos) << result.out;
  run_to_idle();
  expect_resized_with_data_intact();

  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  ASSERT_EQ(operations->size(), 2u);
  // The old stream ends with who retried it, and still folds to Failed.
  const auto old_records = stream(old_id);
  ASSERT_FALSE(old_records.empty());
  auto last = decode_entry(old_records.back());
  ASSERT_TRUE(last);
  const auto* action = std::get_if<entries::OperatorAction>(&*last);
  ASSERT_TRUE(action) << old_records.back().type;
  EXPECT_EQ(action->action, "retry");
  EXPECT_EQ(action->by, "alice");
  EXPECT_TRUE(action->refused.empty());
  auto old_folded = fold(old_records, PhaseMachine::rules());
  ASSERT_TRUE(old_folded) << old_folded.error().message;
  EXPECT_EQ(old_folded->phase, Phase::Failed);
  // The new one names it.
  const std::string new_id = operations->front().operation_id == old_id
                                 ? operations->back().operation_id
                                 : operations->front().operation_id;
  ASSERT_NE(new_id, old_id);
  const auto new_records = stream(new_id);
  auto started = decode_entry(new_records.front());
  ASSERT_TRUE(started);
  const auto& start = std::get<entries::OperationStarted>(*started);
  EXPECT_TRUE(start.trigger.starts_with("retry of " + old_id + " by alice: ")) << start.trigger;
  auto new_folded = fold(new_records, PhaseMachine::rules());
  ASSERT_TRUE(new_folded) << new_folded.error().message;
  EXPECT_EQ(new_folded->phase, Phase::Completed);
}

TEST_F(Retry, AnAbortedOperationCanBeRetried) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_to_idle();
  ASSERT_EQ(advance({.target = "shop/web", .abort = true}).code, cli::kExitOk);
  run_to_idle();
  ASSERT_EQ(live_operation()->phase, Phase::Failed);
  set_mode(world, "auto");
  ASSERT_EQ(retry().code, cli::kExitOk);
  run_to_idle();
  expect_resized_with_data_intact();
}

TEST_F(Retry, IsRefusedWhileALeftoverOfTheFailedOperationIsThereAndTakenOnceItIsGone) {
  const std::string old_id = fail_a_backup();
  // What a scale-back that did not finish would leave.
  Json job{{"apiVersion", "batch/v1"},
           {"kind", "Job"},
           {"metadata",
            {{"name", "data-web-0-stsresize-backup"},
             {"namespace", kNs},
             {"labels", {{"stsresize.dev/operation", naming::label_value(old_id)}}}}},
           {"spec", Json::object()}};
  world.kube.put_raw(Kind::Job, job);
  const int mutations = world.kube.mutations();
  CliResult result = retry();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(result.err.find("job data-web-0-stsresize-backup of the failed operation is still "
                            "there"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("kubectl -n shop delete job data-web-0-stsresize-backup"),
            std::string::npos)
      << result.err;

  // Written anyway: the engine checks again, refuses, removes it; nothing starts.
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Retry, Phase::Failed, old_id, "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  EXPECT_EQ(live_operation()->id, old_id);
  EXPECT_EQ(live_operation()->phase, Phase::Failed);
  EXPECT_TRUE(is_marked_failed(world.live_sts()));
  const auto refused = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].message.find("by bob refused"), std::string::npos) << refused[0].message;
  EXPECT_EQ(journal.operations()->size(), 1u);

  ASSERT_TRUE(world.kube.system().remove({Kind::Job, kNs, "data-web-0-stsresize-backup"}, {}));
  result = retry();
  ASSERT_EQ(result.code, cli::kExitOk) << result.err;
  run_to_idle();
  expect_resized_with_data_intact();
}

TEST_F(Retry, IsRefusedWhenASourceClaimChangedOrNothingIsAskedFor) {
  const std::string old_id = fail_a_backup();
  // A source claim being deleted since.
  world.kube.mutate_raw(world.claim("data-web-1"), [](Json& live) {
    live["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  });
  CliResult result = retry();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("source claim data-web-1 is gone, replaced or being deleted"),
            std::string::npos)
      << result.err;
  world.kube.mutate_raw(world.claim("data-web-1"),
                        [](Json& live) { live["metadata"].erase("deletionTimestamp"); });
  // The templates put back to what the claims have: nothing to retry.
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
      tmpl["spec"]["resources"]["requests"]["storage"] = "1Gi";
    }
  });
  result = retry();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("no resize is asked for now"), std::string::npos) << result.err;
  EXPECT_EQ(live_operation()->id, old_id);
}

TEST_F(Retry, IsRefusedForAnOperationInProgressOrNone) {
  world.seed(/*expandable=*/false);
  CliResult result = retry();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("has no failed operation to retry"), std::string::npos) << result.err;
  reconciler->reconcile(kNs, kSts);
  result = retry();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find(", not Failed: there is nothing to retry"), std::string::npos)
      << result.err;
  // Written anyway: refused by the engine too, and the operation goes on.
  const Operation running = *live_operation();
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Retry, running.phase, running.id, "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  run_to_idle();
  EXPECT_TRUE(completed());
  const auto refused = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].message.find("not Failed"), std::string::npos) << refused[0].message;
}

TEST_F(Retry, ACrashBeforeTheNewOperationsFirstWriteStartsItOnce) {
  const std::string old_id = fail_a_backup();
  ASSERT_EQ(retry().code, cli::kExitOk);
  // The write that would start the new operation is lost; the process dies there.
  world.kube.inject({.verb = Verb::Update,
                     .kind = Kind::StatefulSet,
                     .error = KubeError{KubeErrorCode::Unreachable, "injected crash"}});
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
  EXPECT_EQ(live_operation()->id, old_id);
  EXPECT_TRUE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  reconciler = std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events,
                                            one_attempt_per_copy());
  run_to_idle();
  expect_resized_with_data_intact();
  // One new operation (the start journaled before the crash was adopted), two retry actions
  // on the old stream, and both streams fold.
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_EQ(operations->size(), 2u);
  for (const auto& summary : *operations) {
    auto folded = fold(stream(summary.operation_id), PhaseMachine::rules());
    ASSERT_TRUE(folded) << summary.operation_id << ": " << folded.error().message;
  }
}

}  // namespace
}  // namespace stsresize
