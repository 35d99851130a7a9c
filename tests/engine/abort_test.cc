// `stsresize advance --abort`: while every source claim is intact the engine takes the abort
// before the current step (waiting for approval or not), journals the person's OperatorAction
// with StepFailed and the PhaseChanged on Abort in one append, scales back onto the source
// claims, removes its Jobs and backup claims and ends in Failed ("aborted by ..."). Once a
// source claim is deleted, the CLI and the engine refuse it and the resize goes on.
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

class Abort : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  std::unique_ptr<Reconciler> reconciler =
      std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events, two_copies());
  AdvanceCli advance{world};

  void run_to_idle() { reconcile_to_idle(*reconciler, world, 300); }

  CliResult abort() { return advance({.target = "shop/web", .abort = true}); }

  Operation live_operation() {
    auto op = read_operation(world.live_sts());
    EXPECT_TRUE(op && op->has_value());
    return op && op->has_value() ? **op : Operation{};
  }

  // manual mode: approves until the operation waits to leave `phase`.
  void wait_in(Phase phase) {
    set_mode(world, "manual");
    for (int i = 0; i < 20; ++i) {
      run_to_idle();
      auto waiting = awaiting(world);
      ASSERT_TRUE(waiting) << "nothing waits";
      if (waiting->from == phase) return;
      ASSERT_TRUE(approve_waiting(world, "alice", "approve-" + std::to_string(i)));
    }
    FAIL() << "never waited in " << to_string(phase);
  }

  std::vector<JournalRecord> records() {
    auto operations = journal.operations();
    EXPECT_TRUE(operations && operations->size() == 1u);
    if (!operations || operations->empty()) return {};
    auto read = journal.read(operations->front().operation_id);
    EXPECT_TRUE(read);
    return read ? *read : std::vector<JournalRecord>{};
  }

  std::vector<entries::OperatorAction> operator_actions(const std::string& action) {
    std::vector<entries::OperatorAction> actions;
    for (const JournalRecord& record : records()) {
      auto event = decode_entry(record);
      if (!event) continue;
      if (auto* a = std::get_if<entries::OperatorAction>(&*event); a && a->action == action) {
        actions.push_back(*a);
      }
    }
    return actions;
  }

  // Failed, aborted by alice in `phase`, back where it started: the original replicas, every
  // source claim the same object at 1Gi with its files, nothing of the operation left.
  void expect_rolled_back(Phase phase, const std::map<std::string, std::string>& uids) {
    const Json sts = world.live_sts();
    const Operation op = live_operation();
    EXPECT_EQ(op.phase, Phase::Failed);
    EXPECT_EQ(op.failure, "aborted by alice in " + std::string{to_string(phase)});
    EXPECT_TRUE(is_marked_failed(sts));
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_EQ(world.ready_replicas(), kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("1Gi")) << name;
      EXPECT_EQ(*k8s::uid(*pvc), uids.at(name)) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    }
    for (const Json& pvc : world.kube.list_raw(Kind::PersistentVolumeClaim, kNs)) {
      EXPECT_EQ(pvc["metadata"]["name"].get<std::string>().find("-stsresize-"), std::string::npos)
          << pvc["metadata"]["name"];
    }
    EXPECT_TRUE(world.kube.list_raw(Kind::Job, kNs).empty());
    EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
    EXPECT_FALSE(k8s::annotation(sts, kAwaitingApprovalAnnotation)->has_value());
    auto folded = fold(records(), PhaseMachine::rules());
    ASSERT_TRUE(folded) << folded.error().message;
    EXPECT_EQ(folded->phase, Phase::Failed);
    EXPECT_EQ(folded->failure, op.failure);
    const auto aborts = operator_actions("abort");
    ASSERT_FALSE(aborts.empty());
    EXPECT_EQ(aborts.back().by, "alice");
    EXPECT_TRUE(aborts.back().refused.empty()) << aborts.back().refused;
    const auto aborted = world.events.with_reason("ResizeAborted");
    ASSERT_EQ(aborted.size(), 1u);
    EXPECT_NE(aborted[0].message.find("aborted by alice"), std::string::npos);
    EXPECT_FALSE(world.events.contains("ResizeFailed"));
    // The label keeps the template trigger from starting it again at once.
    run_to_idle();
    EXPECT_EQ(live_operation().phase, Phase::Failed);
  }

  std::map<std::string, std::string> claim_uids() {
    std::map<std::string, std::string> uids;
    for (const std::string& name : world.claim_names()) {
      uids[name] = *k8s::uid(*world.kube.get_raw(world.claim(name)));
    }
    return uids;
  }

  // Reconciles until the live operation is in `phase` (auto mode, nothing waits). Asked before
  // the first reconcile too, and the cluster settles once after the one that got there: the
  // tests go on from that world.
  void run_until(Phase phase) {
    auto in_phase = [&] {
      auto op = read_operation(world.live_sts());
      return op && op->has_value() && (*op)->phase == phase;
    };
    if (in_phase()) return;
    reconcile_until(*reconciler, world,
                    {"phase " + std::string{to_string(phase)},
                     [&](const ReconcileResult&) { return in_phase(); }},
                    {.limit = 300, .pace = {.ticks = 1}, .terminal_fails = false});
    world.settle(1);
  }

  // The next delete of a claim fails (it stays); `before` runs first.
  void fail_next_claim_delete(std::function<void()> before = {}) {
    world.kube.inject({.verb = Verb::Remove,
                       .kind = Kind::PersistentVolumeClaim,
                       .error = KubeError{KubeErrorCode::ServerError, "injected"},
                       .action = std::move(before)});
  }
};

class AbortWhileWaiting : public Abort, public ::testing::WithParamInterface<Phase> {};

TEST_P(AbortWhileWaiting, ScalesBackOntoTheIntactSourcesAndEndsFailed) {
  world.seed(/*expandable=*/false);
  const auto uids = claim_uids();
  wait_in(GetParam());
  const CliResult result = abort();
  ASSERT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_NE(result.out.find("abort of operation"), std::string::npos) << result.out;
  run_to_idle();
  expect_rolled_back(GetParam(), uids);
  // Taken before the step: the transition it waited for never happened.
  for (const JournalRecord& record : records()) {
    auto event = decode_entry(record);
    ASSERT_TRUE(event);
    if (auto* changed = std::get_if<entries::PhaseChanged>(&*event);
        changed && changed->from == GetParam()) {
      EXPECT_EQ(changed->to, Phase::ScalingBack);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPhaseBeforeADelete, AbortWhileWaiting,
                         ::testing::Values(Phase::Planning, Phase::PreCopying, Phase::ScalingDown,
                                           Phase::BackingUp),
                         [](const auto& info) { return std::string{to_string(info.param)}; });

TEST_F(Abort, TheOperatorActionStepFailedAndTransitionAreOneAppend) {
  world.seed(/*expandable=*/false);
  wait_in(Phase::BackingUp);
  ASSERT_EQ(abort().code, cli::kExitOk);
  reconciler->reconcile(kNs, kSts);  // takes the abort; what ScalingBack answers does not matter
  const auto all = records();
  std::size_t at = all.size();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].type == "OperatorAction") at = i;
  }
  ASSERT_LT(at + 2, all.size());
  EXPECT_EQ(all[at + 1].type, "StepFailed");
  EXPECT_EQ(all[at + 2].type, "PhaseChanged");
  EXPECT_EQ(all[at].time, all[at + 2].time);
  auto changed = decode_entry(all[at + 2]);
  ASSERT_TRUE(changed);
  EXPECT_EQ(std::get<entries::PhaseChanged>(*changed),
            (entries::PhaseChanged{Phase::BackingUp, Phase::ScalingBack, Trigger::Abort}));
}

TEST_F(Abort, InAutoModeDuringBackingUpItStopsTheCopy) {
  world.seed(/*expandable=*/false);
  const auto uids = claim_uids();
  run_until(Phase::BackingUp);
  ASSERT_EQ(abort().code, cli::kExitOk);
  run_to_idle();
  expect_rolled_back(Phase::BackingUp, uids);
}

// While the pre-copies run: their Jobs and the backup claims go, the replicas were never touched.
TEST_F(Abort, InAutoModeDuringPreCopyingItStopsThePreCopies) {
  world.seed(/*expandable=*/false);
  const auto uids = claim_uids();
  run_until(Phase::PreCopying);
  ASSERT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
  ASSERT_EQ(abort().code, cli::kExitOk);
  run_to_idle();
  expect_rolled_back(Phase::PreCopying, uids);
  for (const Mutation& m : world.kube.history()) {
    if (m.ref.kind == Kind::StatefulSet && m.actor == Actor::Client) {
      EXPECT_EQ(m.object["spec"]["replicas"], kReplicas) << "the replicas were changed";
    }
  }
}

TEST_F(Abort, InRecreatingBeforeAnyDeleteItScalesBack) {
  world.seed(/*expandable=*/false);
  const auto uids = claim_uids();
  // The first source delete fails, and the person's abort arrives just before it.
  fail_next_claim_delete([&] { ASSERT_EQ(abort().code, cli::kExitOk); });
  run_to_idle();
  expect_rolled_back(Phase::Recreating, uids);
}

TEST_F(Abort, AfterASourceDeleteItIsRefusedAndTheResizeFinishes) {
  world.seed(/*expandable=*/false);
  // The delete after the first source claim's fails once: one source is gone, the
  // operation stays in Recreating.
  std::string deleted;
  world.kube.on_mutation([&](const Mutation& m) {
    if (m.actor != Actor::Client || m.verb != Verb::Remove ||
        m.ref.kind != Kind::PersistentVolumeClaim || !deleted.empty()) {
      return;
    }
    deleted = m.ref.name;
    fail_next_claim_delete();
  });
  for (int i = 0; i < 300 && deleted.empty(); ++i) {
    reconciler->reconcile(kNs, kSts);
    world.settle(1);
  }
  ASSERT_FALSE(deleted.empty());
  // The delete asked for, not yet finished (pvc-protection): not recorded in the operation,
  // but no more undoable — refused already.
  ASSERT_TRUE(live_operation().sources_intact());
  CliResult refused = abort();
  EXPECT_EQ(refused.code, cli::kExitRefused);
  EXPECT_NE(refused.err.find("is deleting source claim " + deleted), std::string::npos)
      << refused.err;
  // Written anyway (by hand, or by a CLI that read the claims a moment earlier): the engine
  // refuses it too, says so, removes it and goes on.
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] =
        encode_advance_request({Action::Abort, Phase::Recreating, live_operation().id, "bob",
                                "2027-01-15T08:00:00Z", "n1"});
  });
  reconciler->reconcile(kNs, kSts);
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  EXPECT_EQ(live_operation().phase, Phase::Recreating);
  for (int i = 0; i < 300 && live_operation().sources_intact(); ++i) {
    reconciler->reconcile(kNs, kSts);
    world.settle(1);
  }
  Operation op = live_operation();
  ASSERT_EQ(op.phase, Phase::Recreating);
  ASSERT_FALSE(op.sources_intact());
  const int mutations = world.kube.mutations();
  refused = abort();
  EXPECT_EQ(refused.code, cli::kExitRefused);
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(refused.err.find("has deleted source claim " + deleted), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find(naming::backup_claim(deleted)), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("Let it finish"), std::string::npos) << refused.err;
  run_to_idle();
  const Json sts = world.live_sts();
  EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
  EXPECT_FALSE(k8s::annotation(sts, kStateAnnotation)->has_value()) << "not completed";
  const auto warnings = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("by bob refused"), std::string::npos) << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("is deleting source claim"), std::string::npos);
  const auto aborts = operator_actions("abort");
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_FALSE(aborts[0].refused.empty());
  auto folded = fold(records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

TEST_F(Abort, ACrashBetweenTheJournalAndTheAnnotationStillEndsRolledBack) {
  for (const bool journal_kept : {true, false}) {
    SCOPED_TRACE(journal_kept ? "journal kept" : "journal lost");
    ResizeWorld fresh;
    MemoryJournal first_journal;
    Reconciler first{fresh.kube, first_journal, fresh.clock, fresh.events, two_copies()};
    fresh.seed(/*expandable=*/false);
    std::map<std::string, std::string> uids;
    for (const std::string& name : fresh.claim_names()) {
      uids[name] = *k8s::uid(*fresh.kube.get_raw(fresh.claim(name)));
    }
    set_mode(fresh, "manual");
    for (int i = 0; i < 20; ++i) {
      for (int r = 0; r < 100 && !first.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle); ++r) {
        fresh.settle(2);
      }
      auto waiting = awaiting(fresh);
      ASSERT_TRUE(waiting);
      if (waiting->from == Phase::BackingUp) break;
      ASSERT_TRUE(approve_waiting(fresh, "alice", "a" + std::to_string(i)));
    }
    const Operation op = **read_operation(fresh.live_sts());
    fresh.kube.mutate_raw(fresh.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
          {Action::Abort, Phase::BackingUp, op.id, "alice", "2027-01-15T08:00:00Z", "n1"});
    });
    // The annotation write after the abort's append is lost: the process dies there.
    fresh.kube.inject({.verb = Verb::Update,
                       .kind = Kind::StatefulSet,
                       .error = KubeError{KubeErrorCode::Unreachable, "injected crash"}});
    EXPECT_TRUE(first.reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
    auto stale = read_operation(fresh.live_sts());
    ASSERT_EQ((*stale)->phase, Phase::BackingUp);
    ASSERT_TRUE(k8s::annotation(fresh.live_sts(), kAdvanceAnnotation)->has_value());

    MemoryJournal lost;
    Journal& journal_now = journal_kept ? static_cast<Journal&>(first_journal) : lost;
    Reconciler second{fresh.kube, journal_now, fresh.clock, fresh.events, two_copies()};
    for (int r = 0; r < 100 && !second.reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle); ++r) {
      fresh.settle(2);
    }
    const Json sts = fresh.live_sts();
    auto after = read_operation(sts);
    ASSERT_TRUE(after && after->has_value());
    EXPECT_EQ((*after)->phase, Phase::Failed);
    EXPECT_EQ((*after)->failure, "aborted by alice in BackingUp");
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
    for (const std::string& name : fresh.claim_names()) {
      const auto pvc = fresh.kube.get_raw(fresh.claim(name));
      ASSERT_TRUE(pvc);
      EXPECT_EQ(*k8s::uid(*pvc), uids.at(name));
      EXPECT_EQ(fresh.cluster.volume_files(fresh.claim(name)), fresh.original_files.at(name));
    }
    EXPECT_TRUE(fresh.kube.list_raw(Kind::Job, kNs).empty());
    auto operations = journal_now.operations();
    ASSERT_TRUE(operations && operations->size() == 1u);
    auto folded = fold(*journal_now.read(operations->front().operation_id), PhaseMachine::rules());
    ASSERT_TRUE(folded) << folded.error().message;
    EXPECT_EQ(folded->phase, Phase::Failed);
  }
}

TEST_F(Abort, ARequestForAnotherOperationIsRefusedAndNothingChanges) {
  world.seed(/*expandable=*/false);
  wait_in(Phase::ScalingDown);
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Abort, Phase::ScalingDown, "web-00000000", "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_EQ(live_operation().phase, Phase::ScalingDown);
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  const auto warnings = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("aborts operation web-00000000"), std::string::npos)
      << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("stsresize advance shop/web --abort"), std::string::npos)
      << warnings[0].message;
}

TEST_F(Abort, ARequestReachingAnEndedOperationIsRefusedAndRemoved) {
  world.seed(/*expandable=*/false);
  wait_in(Phase::ScalingDown);
  ASSERT_EQ(abort().code, cli::kExitOk);
  run_to_idle();
  ASSERT_EQ(live_operation().phase, Phase::Failed);
  const std::string id = live_operation().id;
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Abort, Phase::ScalingDown, id, "bob", "2027-01-15T08:00:00Z", "n2"});
  });
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  const auto warnings = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("already ended in Failed"), std::string::npos)
      << warnings[0].message;
  EXPECT_EQ(live_operation().phase, Phase::Failed);
  auto folded = fold(records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
}

TEST_F(Abort, AbortDryRunWritesNothing) {
  world.seed(/*expandable=*/false);
  wait_in(Phase::BackingUp);
  const int mutations = world.kube.mutations();
  const CliResult result = advance({.target = "shop/web", .abort = true, .dry_run = true});
  EXPECT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(result.out.find("dry run: would abort operation"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("scale back to 3 replicas"), std::string::npos) << result.out;
}

TEST_F(Abort, AnAbortReplacesAPendingApproval) {
  world.seed(/*expandable=*/false);
  const auto uids = claim_uids();
  wait_in(Phase::BackingUp);
  ASSERT_EQ(advance({.target = "shop/web", .approve = true}).code, cli::kExitOk);
  const CliResult result = abort();
  ASSERT_EQ(result.code, cli::kExitOk) << result.err;
  EXPECT_NE(result.out.find("replaces the pending stsresize.dev/advance approve by alice"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(abort().code, cli::kExitRefused);  // the abort is already pending
  const CliResult approval = advance({.target = "shop/web", .approve = true});
  EXPECT_EQ(approval.code, cli::kExitRefused);  // and an approval does not replace it
  EXPECT_NE(approval.err.find("the abort of operation"), std::string::npos) << approval.err;
  run_to_idle();
  expect_rolled_back(Phase::BackingUp, uids);
  // The three approvals before BackingUp (into PreCopying, ScalingDown and BackingUp).
  EXPECT_TRUE(operator_actions("approve").size() == 3u);
}

}  // namespace
}  // namespace stsresize
