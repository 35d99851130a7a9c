#include "states/machine.h"

#include "engine/actions/request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace stsresize {
namespace {

// The specification, written independently of states/machine.cc: (from, event, sources
// intact) -> to. Every combination not listed must be refused.
using Key = std::tuple<Phase, Trigger, bool>;
std::map<Key, Phase> expected_table() {
  std::map<Key, Phase> table;
  auto both = [&](Phase from, Trigger event, Phase to) {
    table[{from, event, true}] = to;
    table[{from, event, false}] = to;
  };
  both(Phase::Pending, Trigger::StartPlanning, Phase::Planning);
  both(Phase::Pending, Trigger::StartTemplateUpdate, Phase::UpdatingTemplate);
  // A shrink measures first, then goes on as its trigger would have.
  both(Phase::Pending, Trigger::StartMeasuring, Phase::Measuring);
  both(Phase::Measuring, Trigger::StartPlanning, Phase::Planning);
  both(Phase::Measuring, Trigger::StartTemplateUpdate, Phase::UpdatingTemplate);
  // Nothing but measure Jobs exists yet: ScalingBack deletes them (there is no lost source).
  table[{Phase::Measuring, Trigger::CriticalError, true}] = Phase::ScalingBack;
  both(Phase::UpdatingTemplate, Trigger::StepDone, Phase::Planning);
  both(Phase::UpdatingTemplate, Trigger::CriticalError, Phase::Failed);
  both(Phase::Planning, Trigger::PlannedCopy, Phase::ScalingDown);
  // A warm pre-copy while the replicas run, then ScalingDown as without it.
  both(Phase::Planning, Trigger::PlannedPreCopy, Phase::PreCopying);
  both(Phase::PreCopying, Trigger::StepDone, Phase::ScalingDown);
  // Nothing is scaled or deleted yet: ScalingBack deletes the pre-copy Jobs and backup claims.
  table[{Phase::PreCopying, Trigger::CriticalError, true}] = Phase::ScalingBack;
  both(Phase::Planning, Trigger::PlannedExpand, Phase::Expanding);
  both(Phase::ScalingDown, Trigger::StepDone, Phase::BackingUp);
  both(Phase::BackingUp, Trigger::StepDone, Phase::Recreating);
  both(Phase::Recreating, Trigger::StepDone, Phase::Restoring);
  both(Phase::Restoring, Trigger::StepDone, Phase::ScalingUp);
  both(Phase::ScalingUp, Trigger::StepDone, Phase::CleaningUp);
  both(Phase::CleaningUp, Trigger::StepDone, Phase::Completed);
  both(Phase::Expanding, Trigger::StepDone, Phase::Completed);
  both(Phase::Planning, Trigger::CriticalError, Phase::Failed);
  // Restoring too: on the rebind path the sources' volumes are kept until ScalingUp.
  for (Phase phase : {Phase::ScalingDown, Phase::BackingUp, Phase::Recreating, Phase::Restoring}) {
    table[{phase, Trigger::CriticalError, true}] = Phase::ScalingBack;
    table[{phase, Trigger::CriticalError, false}] = Phase::Failed;
  }
  for (Phase phase : {Phase::ScalingUp, Phase::CleaningUp, Phase::Expanding, Phase::ScalingBack}) {
    both(phase, Trigger::CriticalError, Phase::Failed);
  }
  both(Phase::ScalingBack, Trigger::ScaleBackDone, Phase::Failed);
  // A person's abort: only while every source claim is intact, and only from a phase whose
  // work scale_back_step can undo (not while the template update re-creates the object).
  for (Phase phase : {Phase::Measuring, Phase::Planning, Phase::PreCopying, Phase::ScalingDown,
                      Phase::BackingUp, Phase::Recreating, Phase::Restoring}) {
    table[{phase, Trigger::Abort, true}] = Phase::ScalingBack;
  }
  // A person's skip: only CleaningUp, whose remaining deletes can be left undone.
  both(Phase::CleaningUp, Trigger::Skip, Phase::Completed);
  // A backup that may miss writes (the fence was broken): copied again before more deletes.
  both(Phase::Recreating, Trigger::BackupStale, Phase::BackingUp);
  // A recreated claim given up before its restore was verified: created again.
  both(Phase::Restoring, Trigger::RecreateAgain, Phase::Recreating);
  // The rolling strategy: the copy phases of one ordinal at a time, between stopping its
  // replica and starting it again, then on to the next ordinal.
  both(Phase::Planning, Trigger::RollOn, Phase::StoppingReplica);
  both(Phase::PreCopying, Trigger::RollOn, Phase::StoppingReplica);
  both(Phase::StoppingReplica, Trigger::StepDone, Phase::BackingUp);
  both(Phase::Restoring, Trigger::RollOn, Phase::StartingReplica);
  both(Phase::StartingReplica, Trigger::StepDone, Phase::CleaningUp);
  both(Phase::CleaningUp, Trigger::RollOn, Phase::StoppingReplica);
  // Nothing of the ordinal deleted yet while its replica is stopped: the StatefulSet resumed.
  table[{Phase::StoppingReplica, Trigger::CriticalError, true}] = Phase::ScalingBack;
  table[{Phase::StoppingReplica, Trigger::Abort, true}] = Phase::ScalingBack;
  // Its replica runs on the new claims, as in ScalingUp.
  both(Phase::StartingReplica, Trigger::CriticalError, Phase::Failed);
  return table;
}

// The drain's specification, written independently of states/machine.cc.
std::map<Key, Phase> expected_drain_table() {
  std::map<Key, Phase> table;
  auto both = [&](Phase from, Trigger event, Phase to) {
    table[{from, event, true}] = to;
    table[{from, event, false}] = to;
  };
  both(Phase::Pending, Trigger::StartDrain, Phase::Draining);
  both(Phase::Draining, Trigger::StepDone, Phase::DeletingClaims);
  both(Phase::DeletingClaims, Trigger::StepDone, Phase::Completed);
  // Nothing is deleted before DeletingClaims: a failure in Draining stops it keeping every
  // claim, as a person's abort does (before it starts, or while the cleanup pods run).
  both(Phase::Draining, Trigger::CriticalError, Phase::StoppingDrain);
  table[{Phase::Draining, Trigger::Abort, true}] = Phase::StoppingDrain;
  table[{Phase::Pending, Trigger::Abort, true}] = Phase::StoppingDrain;
  both(Phase::StoppingDrain, Trigger::StepDone, Phase::Failed);
  both(Phase::StoppingDrain, Trigger::CriticalError, Phase::Failed);
  both(Phase::DeletingClaims, Trigger::CriticalError, Phase::Failed);
  return table;
}

// The lost-volume recovery's table. Nothing is deleted before ReplacingVolume: a failure ends it
// Failed keeping every claim, a person may abort until the first lost claim is deleted, and a
// node back before that ends it Completed with nothing more done. With a re-seed the StatefulSet
// is paused from ReplacingVolume to the end of Reseeding: a failure or an abort there goes
// through ScalingBack, which resumes it.
std::map<Key, Phase> expected_recovery_table() {
  std::map<Key, Phase> table;
  auto both = [&](Phase from, Trigger event, Phase to) {
    table[{from, event, true}] = to;
    table[{from, event, false}] = to;
  };
  both(Phase::Pending, Trigger::StartRecovery, Phase::AwaitingNode);
  both(Phase::AwaitingNode, Trigger::StepDone, Phase::ReplacingVolume);
  both(Phase::AwaitingNode, Trigger::NodeReturned, Phase::Completed);
  both(Phase::ReplacingVolume, Trigger::StepDone, Phase::MarkingReplica);
  both(Phase::ReplacingVolume, Trigger::Reseed, Phase::Reseeding);
  both(Phase::Reseeding, Trigger::StepDone, Phase::MarkingReplica);
  table[{Phase::ReplacingVolume, Trigger::NodeReturned, true}] = Phase::Completed;
  both(Phase::MarkingReplica, Trigger::StepDone, Phase::Completed);
  both(Phase::AwaitingNode, Trigger::CriticalError, Phase::Failed);
  both(Phase::ReplacingVolume, Trigger::CriticalError, Phase::ScalingBack);
  both(Phase::Reseeding, Trigger::CriticalError, Phase::ScalingBack);
  both(Phase::MarkingReplica, Trigger::CriticalError, Phase::Failed);
  both(Phase::ScalingBack, Trigger::ScaleBackDone, Phase::Failed);
  both(Phase::ScalingBack, Trigger::CriticalError, Phase::Failed);
  table[{Phase::AwaitingNode, Trigger::Abort, true}] = Phase::Failed;
  table[{Phase::ReplacingVolume, Trigger::Abort, true}] = Phase::ScalingBack;
  return table;
}

bool resize_allowed(Phase from, Trigger event, bool intact, Phase to,
                    std::optional<Phase> failed_in = std::nullopt) {
  return PhaseMachine::rules(OperationKind::Resize).allowed(from, event, intact, to, failed_in);
}

std::string name(Phase from, Trigger event, bool intact) {
  return std::string{to_string(from)} + " + " + std::string{to_string(event)} +
         (intact ? " [sources intact]" : " [sources lost]");
}

TEST(PhaseMachine, EveryRowOfTheTableLeadsWhereTheSpecificationSays) {
  const auto table = expected_table();
  int allowed = 0;
  for (const auto& [key, to] : table) {
    const auto& [from, event, intact] = key;
    SCOPED_TRACE(name(from, event, intact));
    PhaseMachine machine{from};
    auto next = machine.fire(event, intact);
    ASSERT_TRUE(next.has_value()) << next.error();
    EXPECT_EQ(*next, to);
    EXPECT_EQ(machine.phase(), to);
    EXPECT_TRUE(resize_allowed(from, event, intact, to));
    ++allowed;
  }
  EXPECT_EQ(allowed, 87);
}

TEST(PhaseMachine, EveryEventWithoutARowIsRefusedWithAClearErrorAndNoMove) {
  const auto table = expected_table();
  int refused = 0;
  for (Phase from : kAllPhases) {
    for (Trigger event : kAllTriggers) {
      for (bool intact : {true, false}) {
        if (table.contains({from, event, intact})) continue;
        SCOPED_TRACE(name(from, event, intact));
        PhaseMachine machine{from};
        auto next = machine.fire(event, intact);
        ASSERT_FALSE(next.has_value()) << "moved to " << to_string(*next);
        EXPECT_NE(next.error().find(std::string{to_string(event)}), std::string::npos);
        EXPECT_NE(next.error().find(std::string{to_string(from)}), std::string::npos);
        EXPECT_EQ(machine.phase(), from);
        for (Phase to : kAllPhases) EXPECT_FALSE(resize_allowed(from, event, intact, to));
        ++refused;
      }
    }
  }
  EXPECT_EQ(refused, static_cast<int>(std::size(kAllPhases) * std::size(kAllTriggers) * 2) - 87);
}

// Failed is terminal: the only way out is a person's Resume, back to the very phase the
// operation failed in, and only to a phase whose step can run again (Restoring, ScalingUp,
// CleaningUp: kResumable below, written out here so that the table is checked against it).
TEST(PhaseMachine, OnlyAResumeLeavesFailedAndOnlyBackToTheResumablePhaseItFailedIn) {
  std::vector<std::optional<Phase>> failed_ins{std::nullopt};
  for (Phase phase : kAllPhases) failed_ins.push_back(phase);
  int resumed = 0;
  for (Phase from : kAllPhases) {
    for (Trigger event : kAllTriggers) {
      for (bool intact : {true, false}) {
        for (const std::optional<Phase>& failed_in : failed_ins) {
          constexpr Phase kResumable[] = {Phase::Restoring, Phase::ScalingUp, Phase::CleaningUp};
          const bool resumable =
              failed_in && std::ranges::find(kResumable, *failed_in) != std::end(kResumable);
          PhaseMachine machine{from};
          auto next = machine.fire(event, intact, failed_in);
          if (event == Trigger::Resume) {
            SCOPED_TRACE(name(from, event, intact) + " failed in " +
                         (failed_in ? std::string{to_string(*failed_in)} : "?"));
            ASSERT_EQ(next.has_value(), from == Phase::Failed && resumable);
            if (next) {
              EXPECT_EQ(*next, *failed_in);
              EXPECT_TRUE(resize_allowed(from, event, intact, *failed_in, failed_in));
              EXPECT_TRUE(
                  PhaseMachine::rules().allowed(from, event, intact, *failed_in, failed_in));
              ++resumed;
            }
            for (Phase to : kAllPhases) {
              if (next && to == *next) continue;
              EXPECT_FALSE(resize_allowed(from, event, intact, to, failed_in));
            }
          } else if (from == Phase::Failed) {
            EXPECT_FALSE(next.has_value()) << to_string(event);
          }
        }
      }
    }
  }
  EXPECT_EQ(resumed, 3 * 2);
}

// The drain's table, row by row, and nothing else; the rules of every kind (what the fold and
// replay receive) are exactly the union of the two tables, and answer each kind with its own.
TEST(DrainMachine, EveryRowLeadsWhereTheSpecificationSaysAndEveryOtherEventIsRefused) {
  const auto table = expected_drain_table();
  const auto resize = expected_table();
  const auto recovery = expected_recovery_table();
  const TransitionRules& drain = PhaseMachine::rules(OperationKind::Drain);
  int rows = 0;
  for (Phase from : kAllPhases) {
    for (Trigger event : kAllTriggers) {
      for (bool intact : {true, false}) {
        SCOPED_TRACE(name(from, event, intact));
        PhaseMachine machine{OperationKind::Drain, from};
        auto next = machine.fire(event, intact);
        auto row = table.find({from, event, intact});
        if (row == table.end()) {
          EXPECT_FALSE(next.has_value()) << "moved to " << to_string(*next);
          EXPECT_EQ(machine.phase(), from);
        } else {
          ASSERT_TRUE(next.has_value()) << next.error();
          EXPECT_EQ(*next, row->second);
          ++rows;
        }
        for (Phase to : kAllPhases) {
          const bool in_drain = row != table.end() && row->second == to;
          auto resize_row = resize.find({from, event, intact});
          const bool in_resize = resize_row != resize.end() && resize_row->second == to;
          auto recovery_row = recovery.find({from, event, intact});
          const bool in_recovery = recovery_row != recovery.end() && recovery_row->second == to;
          EXPECT_EQ(drain.allowed(from, event, intact, to), in_drain) << to_string(to);
          EXPECT_EQ(PhaseMachine::rules().allowed(from, event, intact, to),
                    in_drain || in_resize || in_recovery)
              << to_string(to);
          EXPECT_EQ(PhaseMachine::rules().of(OperationKind::Drain).allowed(from, event, intact, to),
                    in_drain);
        }
      }
    }
  }
  EXPECT_EQ(rows, 16);
  for (Phase phase : kAllPhases) {
    const bool recovers = phase == Phase::Pending || phase == Phase::AwaitingNode ||
                          phase == Phase::ReplacingVolume || phase == Phase::Reseeding ||
                          phase == Phase::MarkingReplica || phase == Phase::ScalingBack ||
                          is_terminal(phase);
    EXPECT_EQ(PhaseMachine::has_phase(OperationKind::Recovery, phase), recovers)
        << to_string(phase);
    const bool drains = phase == Phase::Pending || phase == Phase::Draining ||
                        phase == Phase::DeletingClaims || phase == Phase::StoppingDrain ||
                        is_terminal(phase);
    EXPECT_EQ(PhaseMachine::has_phase(OperationKind::Drain, phase), drains) << to_string(phase);
  }
}

TEST(RecoveryMachine, EveryRowLeadsWhereTheSpecificationSaysAndEveryOtherEventIsRefused) {
  const auto table = expected_recovery_table();
  const TransitionRules& recovery = PhaseMachine::rules(OperationKind::Recovery);
  int rows = 0;
  for (Phase from : kAllPhases) {
    for (Trigger event : kAllTriggers) {
      for (bool intact : {true, false}) {
        SCOPED_TRACE(name(from, event, intact));
        PhaseMachine machine{OperationKind::Recovery, from};
        auto next = machine.fire(event, intact);
        auto row = table.find({from, event, intact});
        if (row == table.end()) {
          EXPECT_FALSE(next.has_value()) << "moved to " << to_string(*next);
          EXPECT_EQ(machine.phase(), from);
        } else {
          ASSERT_TRUE(next.has_value()) << next.error();
          EXPECT_EQ(*next, row->second);
          ++rows;
        }
        for (Phase to : kAllPhases) {
          const bool in_recovery = row != table.end() && row->second == to;
          EXPECT_EQ(recovery.allowed(from, event, intact, to), in_recovery) << to_string(to);
          EXPECT_EQ(
              PhaseMachine::rules().of(OperationKind::Recovery).allowed(from, event, intact, to),
              in_recovery);
        }
      }
    }
  }
  EXPECT_EQ(rows, 29);
}

TEST(PhaseMachine, AllowedIsFalseForTheWrongTargetOfALegalEvent) {
  EXPECT_FALSE(PhaseMachine::allowed(Phase::BackingUp, Trigger::StepDone, true, Phase::Restoring));
  EXPECT_FALSE(
      PhaseMachine::allowed(Phase::BackingUp, Trigger::CriticalError, false, Phase::ScalingBack));
}

TEST(PhaseMachine, ConstructedAtAPhaseReportsItAndWalksTheCopyPathToCompleted) {
  for (Phase phase : kAllPhases) EXPECT_EQ(PhaseMachine{phase}.phase(), phase);
  PhaseMachine machine;
  EXPECT_EQ(machine.phase(), Phase::Pending);
  ASSERT_TRUE(machine.fire(Trigger::StartPlanning));
  ASSERT_TRUE(machine.fire(Trigger::PlannedCopy));
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(machine.fire(Trigger::StepDone));
  EXPECT_EQ(machine.phase(), Phase::Completed);
  EXPECT_FALSE(machine.fire(Trigger::StepDone));
  EXPECT_EQ(machine.phase(), Phase::Completed);
}

TEST(PhaseMachine, RulesInterfaceAgreesWithAllowed) {
  const TransitionRules& rules = PhaseMachine::rules();
  EXPECT_TRUE(rules.allowed(Phase::Recreating, Trigger::CriticalError, true, Phase::ScalingBack));
  EXPECT_FALSE(rules.allowed(Phase::Recreating, Trigger::CriticalError, false, Phase::ScalingBack));
}

}  // namespace
}  // namespace stsresize
