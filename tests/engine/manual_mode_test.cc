// Operating a resize by hand: stsresize.dev/mode manual holds every transition after the start
// until `stsresize advance --approve`, step holds only the one that deletes source claims;
// the approval is an annotation the engine consumes (journaled as OperatorAction with the
// person's identity) and an approval of another phase or operation is refused, not applied.
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

class ManualMode : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  AdvanceCli advance{world};

  // Reconciles (and lets the cluster work) until the engine is idle.
  void run_to_idle() { reconcile_to_idle(reconciler, world, 300); }

  CliResult approve() { return advance({.target = "shop/web", .approve = true}); }

  bool completed() {
    const Json sts = world.live_sts();
    return !k8s::annotation(sts, kStateAnnotation)->has_value() &&
           k8s::annotation(sts, kLastOperationAnnotation)->has_value();
  }

  std::vector<JournalRecord> records() {
    auto operations = journal.operations();
    EXPECT_TRUE(operations && operations->size() == 1u);
    if (!operations || operations->empty()) return {};
    auto read = journal.read(operations->front().operation_id);
    EXPECT_TRUE(read);
    return read ? *read : std::vector<JournalRecord>{};
  }

  std::vector<entries::OperatorAction> operator_actions() {
    std::vector<entries::OperatorAction> actions;
    for (const JournalRecord& record : records()) {
      auto event = decode_entry(record);
      if (!event) continue;
      if (auto* action = std::get_if<entries::OperatorAction>(&*event)) actions.push_back(*action);
    }
    return actions;
  }

  // Runs the operation to its end, approving through the CLI every time it waits; returns the
  // transitions approved, in order.
  std::vector<std::string> approve_to_completion() {
    std::vector<std::string> approved;
    for (int i = 0; i < 20 && !completed(); ++i) {
      run_to_idle();
      if (completed()) break;
      auto waiting = awaiting(world);
      if (!waiting) {
        ADD_FAILURE() << "idle, not completed, and nothing waits";
        break;
      }
      // Waiting does nothing more, however often it is reconciled.
      const int mutations = world.kube.mutations();
      const std::size_t events_before = world.events.events().size();
      EXPECT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
      EXPECT_EQ(world.kube.mutations(), mutations);
      EXPECT_EQ(world.events.events().size(), events_before);
      approved.push_back(std::string{to_string(waiting->from)} + " -> " +
                         std::string{to_string(waiting->to)});
      const CliResult result = approve();
      EXPECT_EQ(result.code, cli::kExitOk) << result.err;
    }
    EXPECT_TRUE(completed());
    return approved;
  }

  void expect_resized_with_data_intact() {
    const Json sts = world.live_sts();
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_EQ(world.ready_replicas(), kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    }
    EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
    EXPECT_FALSE(k8s::annotation(sts, kAwaitingApprovalAnnotation)->has_value());
    auto folded = fold(records(), PhaseMachine::rules());
    ASSERT_TRUE(folded) << folded.error().message;
    EXPECT_EQ(folded->phase, Phase::Completed);
  }

  // Runs until the operation waits, and returns the live StatefulSet then.
  Json run_until_waiting() {
    run_to_idle();
    EXPECT_TRUE(awaiting(world));
    return world.live_sts();
  }
};

TEST_F(ManualMode, EveryTransitionOfACopyResizeWaitsForApprovalAndTheDataIsIntact) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  const auto approved = approve_to_completion();
  EXPECT_EQ(approved,
            (std::vector<std::string>{"Planning -> PreCopying", "PreCopying -> ScalingDown",
                                      "ScalingDown -> BackingUp", "BackingUp -> Recreating",
                                      "Recreating -> Restoring", "Restoring -> ScalingUp",
                                      "ScalingUp -> CleaningUp", "CleaningUp -> Completed"}));
  expect_resized_with_data_intact();
  const auto actions = operator_actions();
  ASSERT_EQ(actions.size(), approved.size());
  for (const auto& action : actions) {
    EXPECT_EQ(action.action, "approve");
    EXPECT_EQ(action.by, "alice");
    EXPECT_TRUE(action.refused.empty()) << action.refused;
  }
  EXPECT_EQ(world.events.with_reason("AwaitingApproval").size(), approved.size());
  const auto first = world.events.with_reason("AwaitingApproval").front();
  EXPECT_NE(first.message.find("Planning -> PreCopying"), std::string::npos) << first.message;
  EXPECT_NE(first.message.find("stsresize advance shop/web --approve"), std::string::npos)
      << first.message;
}

TEST_F(ManualMode, StepModeWaitsOnlyBeforeTheSourceClaimsAreDeleted) {
  world.seed(/*expandable=*/false);
  set_mode(world, "step");
  run_to_idle();
  ASSERT_EQ(awaiting(world), (AwaitedApproval{Phase::BackingUp, Phase::Recreating}));
  for (const std::string& name : world.claim_names()) {
    EXPECT_TRUE(world.kube.get_raw(world.claim(name))) << name << " deleted before approval";
  }
  EXPECT_EQ(world.live_sts()["metadata"]["annotations"][std::string{kAwaitingApprovalAnnotation}],
            "BackingUp -> Recreating");
  const auto approved = approve_to_completion();
  EXPECT_EQ(approved, (std::vector<std::string>{"BackingUp -> Recreating"}));
  expect_resized_with_data_intact();
}

TEST_F(ManualMode, ExpandPathInManualModeWaitsAtEachTransitionToo) {
  world.seed(/*expandable=*/true);
  set_mode(world, "manual");
  EXPECT_EQ(approve_to_completion(),
            (std::vector<std::string>{"Planning -> Expanding", "Expanding -> Completed"}));
}

TEST_F(ManualMode, SwitchingBackToAutoLetsTheWaitingTransitionGo) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  set_mode(world, "auto");
  run_to_idle();
  EXPECT_TRUE(completed());
  EXPECT_TRUE(operator_actions().empty());
}

TEST_F(ManualMode, AnUnknownModeIsReadAsManualAndSaysSo) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manaul");
  run_until_waiting();
  const auto waiting = world.events.with_reason("AwaitingApproval");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_NE(waiting[0].message.find("\"manaul\", not auto, manual or step"), std::string::npos)
      << waiting[0].message;
}

TEST_F(ManualMode, AnApprovalOfAnotherPhaseIsRefusedRemovedAndJournaled) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  const Json waiting = run_until_waiting();
  auto op = *read_operation(waiting);
  const AdvanceRequest stale{Action::Approve, Phase::BackingUp,       op->id,
                             "bob",           "2027-01-15T08:00:00Z", "n1"};
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] =
        encode_advance_request(stale);
  });
  EXPECT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  const Json after = world.live_sts();
  EXPECT_EQ((*read_operation(after))->phase, Phase::Planning);
  EXPECT_FALSE(k8s::annotation(after, kAdvanceAnnotation)->has_value());
  const auto refused = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].severity, EventSeverity::Warning);
  EXPECT_NE(refused[0].message.find("leaving phase BackingUp, but the operation is in phase "
                                    "Planning"),
            std::string::npos)
      << refused[0].message;
  EXPECT_NE(refused[0].message.find("stsresize advance shop/web --approve"), std::string::npos);
  const auto actions = operator_actions();
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].by, "bob");
  EXPECT_FALSE(actions[0].refused.empty());
}

TEST_F(ManualMode, AnApprovalOfAnotherOperationIsRefused) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  const AdvanceRequest other{Action::Approve, Phase::Planning,        "web-00000000",
                             "bob",           "2027-01-15T08:00:00Z", "n1"};
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] =
        encode_advance_request(other);
  });
  EXPECT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_EQ((*read_operation(world.live_sts()))->phase, Phase::Planning);
  const auto refused = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].message.find("approves operation web-00000000"), std::string::npos)
      << refused[0].message;
}

TEST_F(ManualMode, AMalformedApprovalIsRefused) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = "yes please";
  });
  EXPECT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_EQ((*read_operation(world.live_sts()))->phase, Phase::Planning);
  ASSERT_EQ(world.events.with_reason("AdvanceRefused").size(), 1u);
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
}

TEST_F(ManualMode, AnApprovalWrittenBeforeTheWaitIsTakenWhenItsPhaseMatches) {
  world.seed(/*expandable=*/false);
  set_mode(world, "step");
  // Reach BackingUp without waiting, then approve ahead through the annotation.
  reconcile_until(reconciler, world,
                  {"phase BackingUp",
                   [&](const ReconcileResult&) {
                     auto op = read_operation(world.live_sts());
                     return op && op->has_value() && (*op)->phase == Phase::BackingUp;
                   }},
                  {.limit = 300, .pace = {.ticks = 1}, .terminal_fails = false});
  world.settle(1);  // as the loop this replaces did after the reconcile that got there
  auto op = *read_operation(world.live_sts());
  ASSERT_EQ(op->phase, Phase::BackingUp);
  ASSERT_FALSE(op->awaiting);
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Approve, Phase::BackingUp, op->id, "carol", "2027-01-15T08:00:00Z", "n1"});
  });
  run_to_idle();
  EXPECT_TRUE(completed());
  ASSERT_EQ(operator_actions().size(), 1u);
  EXPECT_EQ(operator_actions()[0].by, "carol");
  // It still waited (journaled and announced) before it was taken.
  EXPECT_EQ(world.events.with_reason("AwaitingApproval").size(), 1u);
}

TEST_F(ManualMode, AdvanceDryRunShowsTheAnnotationAndWritesNothing) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  const int mutations = world.kube.mutations();
  const CliResult result = advance({.target = "shop/web", .approve = true, .dry_run = true});
  EXPECT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(result.out.find("dry run: would approve Planning -> PreCopying"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("\"by\":\"alice\""), std::string::npos) << result.out;
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
}

TEST_F(ManualMode, AdvanceRecordsTheNameGivenWithAs) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  const CliResult result = advance({.target = "shop/web", .approve = true, .as = "dave"});
  ASSERT_EQ(result.code, cli::kExitOk) << result.err;
  auto request = decode_advance_request(**k8s::annotation(world.live_sts(), kAdvanceAnnotation));
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(request->by, "dave");
  EXPECT_EQ(request->phase, Phase::Planning);
}

TEST_F(ManualMode, AdvanceRefusesWhenNothingWaitsAndSaysWhatToRun) {
  world.seed(/*expandable=*/false);
  CliResult result = approve();  // no operation yet
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("has no resize in progress"), std::string::npos) << result.err;

  // An operation in auto mode never waits.
  reconciler.reconcile(kNs, kSts);
  ASSERT_TRUE(read_operation(world.live_sts())->has_value());
  result = approve();
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("waits for no approval (stsresize.dev/mode: auto)"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("-L stsresize.dev/awaiting-approval -w"), std::string::npos);

  result = advance({.target = "shop/nope", .approve = true});
  EXPECT_EQ(result.code, cli::kExitRefused);
  EXPECT_NE(result.err.find("does not exist"), std::string::npos) << result.err;
}

TEST_F(ManualMode, AdvanceRefusesASecondApprovalNotYetTaken) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  ASSERT_EQ(approve().code, cli::kExitOk);
  const CliResult again = approve();
  EXPECT_EQ(again.code, cli::kExitRefused);
  EXPECT_NE(again.err.find("already given by alice"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("is `stsresize run` running?"), std::string::npos) << again.err;
}

TEST_F(ManualMode, AdvanceReadsAgainAfterAConflictAndDecidesOnWhatItFinds) {
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  run_until_waiting();
  // Someone writes the StatefulSet between the CLI's read and its write: the update gets 409.
  world.kube.inject({.verb = Verb::Update, .kind = Kind::StatefulSet, .action = [&] {
                       world.kube.mutate_raw(world.sts(), [](Json& live) {
                         live["metadata"]["labels"]["touched"] = "yes";
                       });
                     }});
  const CliResult result = approve();
  EXPECT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_TRUE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  EXPECT_EQ(world.live_sts()["metadata"]["labels"]["touched"], "yes");
}

TEST_F(ManualMode, AdvanceWithoutAnActionIsAUsageError) {
  const CliResult result = advance({.target = "shop/web"});
  EXPECT_EQ(result.code, cli::kExitUsage);
  EXPECT_NE(result.err.find("--approve"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace stsresize
