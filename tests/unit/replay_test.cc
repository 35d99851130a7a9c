#include "engine/replay.h"

#include <gtest/gtest.h>

#include "states/machine.h"
#include "tests/support/operation_samples.h"
#include "tests/support/replay_samples.h"

namespace stsresize {
namespace {

using testing::copy_path_journal;
using testing::JournalBuilder;
using testing::one_claim_copy;
using testing::sample_claim;

const TimePoint kStart{std::chrono::seconds{1'800'000'000}};

// The builder stamps record n at kStart + n seconds.
TimePoint at_sequence(std::int64_t sequence) {
  return kStart + std::chrono::seconds{sequence};
}

std::vector<JournalRecord> concat(std::vector<JournalRecord> a,
                                  const std::vector<JournalRecord>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::int64_t> sequences(const Replay& r) {
  std::vector<std::int64_t> out;
  for (const TimelineRow& row : r.rows) out.push_back(row.sequence);
  return out;
}

TEST(Replay, ConsistentJournalGivesOneRowPerRecordWithPhasesAndDetails) {
  const auto records = one_claim_copy();
  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  ASSERT_EQ(r.rows.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(r.rows[i].sequence, static_cast<std::int64_t>(i) + 1);
    EXPECT_EQ(r.rows[i].time, records[i].time);
    EXPECT_EQ(r.rows[i].operation_id, "web-0123abcd");
    EXPECT_EQ(r.rows[i].event_type, records[i].type);
  }
  EXPECT_EQ(r.rows[0], (TimelineRow{at_sequence(1), "web-0123abcd", 1, std::nullopt, Phase::Pending,
                                    "OperationStarted", "template grew (3 replicas)"}));
  EXPECT_EQ(r.rows[2].details, "Copy path, 1 claim: data-web-0 1Gi → 2Gi");
  EXPECT_EQ(r.rows[4],
            (TimelineRow{at_sequence(5), "web-0123abcd", 5, Phase::ScalingDown, Phase::BackingUp,
                         "PhaseChanged", "ScalingDown → BackingUp (StepDone)"}));
  EXPECT_EQ(r.rows[5].details, "create Job shop/data-web-0-stsresize-backup");
  EXPECT_EQ(r.rows[6].details, "data-web-0: 1,204 files, 1.2 GiB, sha256 3f2a1b2c…");
  EXPECT_EQ(r.rows[6].phase_before, Phase::BackingUp);
  EXPECT_EQ(r.rows[6].phase_after, Phase::BackingUp);
  EXPECT_EQ(r.rows[9].details, "data-web-0, uid uid-new");
  EXPECT_EQ(r.rows[15].details, "Completed");

  ASSERT_EQ(r.operations.size(), 1u);
  const OperationOutcome& op = r.operations[0];
  EXPECT_TRUE(op.consistent);
  EXPECT_EQ(op.final_phase, Phase::Completed);
  EXPECT_EQ(op.path, Path::Copy);
  EXPECT_EQ(op.events, 16);
  EXPECT_EQ(op.ns, "shop");
  EXPECT_EQ(op.statefulset, "web");
  EXPECT_EQ(op.duration(), std::chrono::seconds{15});
}

TEST(Replay, TransitionRefusedByTheMachineIsInconsistentAtExactlyThatSequence) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.to(Phase::Planning, Phase::Restoring, Trigger::PlannedCopy);  // 3: no such row
  b.to(Phase::Restoring, Phase::ScalingUp);
  const auto& records = b.records();

  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->operation_id, "web-0123abcd");
  EXPECT_EQ(r.inconsistency->sequence, 3);
  EXPECT_EQ(r.inconsistency->record, records[2]);
  EXPECT_NE(r.inconsistency->reason.find("Planning -> Restoring"), std::string::npos)
      << r.inconsistency->reason;
  EXPECT_NE(r.inconsistency->reason.find("refused by the state machine"), std::string::npos)
      << r.inconsistency->reason;
  EXPECT_EQ(sequences(r), (std::vector<std::int64_t>{1, 2}));
  ASSERT_EQ(r.operations.size(), 1u);
  EXPECT_FALSE(r.operations[0].consistent);
  EXPECT_EQ(r.operations[0].final_phase, Phase::Planning);
}

TEST(Replay, PendingStraightToRestoringIsRefused) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Restoring, Trigger::StepDone);

  const Replay r = replay(b.records(), PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 2);
  EXPECT_NE(r.inconsistency->reason.find("Pending -> Restoring"), std::string::npos)
      << r.inconsistency->reason;
}

// Another process (`stsresize advance --apply-locally`, with a journal of its own) took the
// transitions in between: consistent, and the row says where this journal was.
TEST(Replay, ResumedAheadOfTheJournalOverAllowedTransitionsIsConsistentAndExplained) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  auto folded = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  Operation snapshot = *folded;
  snapshot.phase = Phase::Recreating;  // BackingUp was journaled elsewhere
  b.add(entries::Resumed{snapshot});

  const Replay r = replay(b.records(), PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[4].phase_before, Phase::ScalingDown);
  EXPECT_EQ(r.rows[4].phase_after, Phase::Recreating);
  EXPECT_EQ(r.rows[4].details,
            "from the annotation, at phase Recreating (this journal was at ScalingDown: the "
            "transitions between were taken by another process and journaled elsewhere, e.g. by "
            "`stsresize advance --apply-locally`)");
}

TEST(Replay, ResumedAtAPhaseTheJournalCannotReachIsInconsistent) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Expand, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::Expanding, Trigger::PlannedExpand);
  auto folded = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  Operation snapshot = *folded;
  snapshot.phase = Phase::Recreating;  // the expansion path never recreates
  b.add(entries::Resumed{snapshot});

  const Replay r = replay(b.records(), PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 5);
  EXPECT_EQ(r.inconsistency->record.type, "Resumed");
  EXPECT_NE(r.inconsistency->reason.find("Resumed at phase Recreating"), std::string::npos)
      << r.inconsistency->reason;
  EXPECT_EQ(r.rows.size(), 4u);
}

TEST(Replay, ResumedAtTheJournalsPhaseIsConsistentAndShowsTheSnapshotPhase) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  auto folded = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(folded);
  b.add(entries::Resumed{*folded});

  const Replay r = replay(b.records(), PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[2].details, "from the annotation, at phase Planning");
  EXPECT_EQ(r.rows[2].phase_after, Phase::Planning);
}

TEST(Replay, UndecodablePayloadIsInconsistentWithTheCodecsMessage) {
  auto records = one_claim_copy();
  records[6].data["summary"]["files"] = "many";

  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 7);
  EXPECT_NE(r.inconsistency->reason.find("files"), std::string::npos) << r.inconsistency->reason;
  EXPECT_EQ(r.rows.size(), 6u);
}

TEST(Replay, SequenceGapIsInconsistent) {
  auto records = one_claim_copy();
  records.erase(records.begin() + 3);

  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 5);
  EXPECT_NE(r.inconsistency->reason.find("gap"), std::string::npos) << r.inconsistency->reason;
}

std::vector<JournalRecord> two_operations() {
  return concat(one_claim_copy(), one_claim_copy("db-89abcdef", "db", std::chrono::hours{1}));
}

TEST(Replay, SeveralOperationsAreReplayedInOrderOfFirstAppearance) {
  const Replay r = replay(two_operations(), PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  ASSERT_EQ(r.operations.size(), 2u);
  EXPECT_EQ(r.operations[0].operation_id, "web-0123abcd");
  EXPECT_EQ(r.operations[1].operation_id, "db-89abcdef");
  EXPECT_EQ(r.rows.size(), 32u);
  EXPECT_EQ(r.rows[16].operation_id, "db-89abcdef");
  EXPECT_EQ(r.rows[16].sequence, 1);
}

TEST(Replay, InterleavedOperationsAreEachFoldedOnTheirOwn) {
  const auto a = one_claim_copy();
  auto b = one_claim_copy("db-89abcdef");
  std::vector<JournalRecord> interleaved;
  for (std::size_t i = 0; i < a.size(); ++i) {
    interleaved.push_back(a[i]);
    interleaved.push_back(b[i]);
  }

  const Replay r = replay(interleaved, PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  ASSERT_EQ(r.operations.size(), 2u);
  EXPECT_EQ(r.operations[0].final_phase, Phase::Completed);
  EXPECT_EQ(r.operations[1].final_phase, Phase::Completed);
  EXPECT_EQ(r.rows[16].operation_id, "db-89abcdef");
}

TEST(Replay, FilterByOperationIdKeepsOnlyThatOperation) {
  const Replay r =
      replay(two_operations(), PhaseMachine::rules(), ReplayFilter{.operation_id = "db-89abcdef"});

  ASSERT_EQ(r.operations.size(), 1u);
  EXPECT_EQ(r.operations[0].operation_id, "db-89abcdef");
  ASSERT_EQ(r.rows.size(), 16u);
  for (const TimelineRow& row : r.rows) EXPECT_EQ(row.operation_id, "db-89abcdef");
}

TEST(Replay, FilterByNamespaceAndStatefulSet) {
  const auto records = two_operations();
  const Replay web =
      replay(records, PhaseMachine::rules(), ReplayFilter{.ns = "shop", .statefulset = "web"});
  ASSERT_EQ(web.operations.size(), 1u);
  EXPECT_EQ(web.operations[0].operation_id, "web-0123abcd");

  const Replay other_ns = replay(records, PhaseMachine::rules(), ReplayFilter{.ns = "billing"});
  EXPECT_TRUE(other_ns.operations.empty());
  EXPECT_TRUE(other_ns.rows.empty());
  EXPECT_TRUE(other_ns.consistent());
}

TEST(Replay, TimeWindowShowsOnlyItsRecordsButFoldsFromTheStart) {
  const auto records = one_claim_copy();
  // since inclusive, until exclusive: sequences 5..7.
  const Replay r = replay(records, PhaseMachine::rules(),
                          ReplayFilter{.since = at_sequence(5), .until = at_sequence(8)});

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  EXPECT_EQ(sequences(r), (std::vector<std::int64_t>{5, 6, 7}));
  EXPECT_EQ(r.rows[0].phase_before, Phase::ScalingDown);
  EXPECT_EQ(r.rows[0].phase_after, Phase::BackingUp);
  ASSERT_EQ(r.operations.size(), 1u);
  EXPECT_EQ(r.operations[0].events, 16);
  EXPECT_EQ(r.operations[0].final_phase, Phase::Completed);
}

TEST(Replay, TimeWindowLeavesOutOperationsWithNothingInIt) {
  const Replay r = replay(two_operations(), PhaseMachine::rules(),
                          ReplayFilter{.since = kStart + std::chrono::minutes{30}});

  ASSERT_EQ(r.operations.size(), 1u);
  EXPECT_EQ(r.operations[0].operation_id, "db-89abcdef");
}

TEST(Replay, InconsistencyAfterTheTimeWindowIsStillReported) {
  auto records = one_claim_copy();
  records[12].data["to"] = "Completed";  // Restoring -> Completed on StepDone: no such row

  const Replay r = replay(records, PhaseMachine::rules(), ReplayFilter{.until = at_sequence(3)});

  EXPECT_EQ(sequences(r), (std::vector<std::int64_t>{1, 2}));
  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 13);
}

TEST(Replay, StopsAtTheFirstInconsistentOperation) {
  auto records = two_operations();
  records[1].data["to"] = "Restoring";  // web, sequence 2

  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->operation_id, "web-0123abcd");
  EXPECT_EQ(r.inconsistency->sequence, 2);
  ASSERT_EQ(r.operations.size(), 1u);
  EXPECT_EQ(sequences(r), (std::vector<std::int64_t>{1}));
}

TEST(Replay, LargePlansAreAbbreviated) {
  const auto records = copy_path_journal(6);
  const Replay r = replay(records, PhaseMachine::rules());

  ASSERT_TRUE(r.consistent()) << r.inconsistency->reason;
  EXPECT_EQ(r.rows[2].details,
            "Copy path, 6 claims: data-web-0 1Gi → 2Gi, logs-web-0 1Gi → 2Gi, data-web-1 1Gi → "
            "2Gi, … and 3 more");
}

TEST(TimelineDetails, StorageClassChangeAndFailuresAreSpelledOut) {
  ClaimPlan claim = sample_claim("data", 0);
  claim.to_class = "fast";
  EXPECT_EQ(describe(entries::Planned{Path::Copy, {claim}, {}}),
            "Copy path, 1 claim: data-web-0 1Gi standard → 2Gi fast");
  EXPECT_EQ(describe(entries::StepFailed{Phase::BackingUp, "copy job failed", true}),
            "critical: copy job failed");
  EXPECT_EQ(describe(entries::StepFailed{Phase::BackingUp, "conflict", false}),
            "transient: conflict");
  EXPECT_EQ(describe(entries::BackupVerified{"c", TreeSummary{2, 512, "ab"}}),
            "c: 2 files, 512 B, sha256 ab");
}

TEST(Replay, StatesAreKeptOnlyWhenAskedAndFollowTheFolder) {
  const auto records = one_claim_copy();
  const Replay plain = replay(records, PhaseMachine::rules());
  EXPECT_FALSE(plain.rows[4].state_after.has_value());

  const Replay kept = replay(records, PhaseMachine::rules(), {}, ReplayStates::Kept);
  ASSERT_TRUE(kept.consistent());
  EXPECT_FALSE(kept.rows[0].state_before.has_value());
  for (std::size_t i = 0; i < kept.rows.size(); ++i) {
    const auto folded =
        fold(std::span{records}.first(i + 1), PhaseMachine::rules());  // the engine's own fold
    ASSERT_TRUE(folded);
    EXPECT_EQ(kept.rows[i].state_after, *folded) << "row " << i;
    if (i > 0) {
      EXPECT_EQ(kept.rows[i].state_before, kept.rows[i - 1].state_after);
    }
    EXPECT_EQ(kept.rows[i].data, records[i].data);
  }
}

TEST(Replay, RefusedRecordKeepsTheStateItWasRefusedIn) {
  auto records = one_claim_copy();
  records[8].type = "ClaimExpanded";  // SourceDeleted's payload under another type
  const Replay r = replay(records, PhaseMachine::rules(), {}, ReplayStates::Kept);

  ASSERT_FALSE(r.consistent());
  EXPECT_EQ(r.inconsistency->sequence, 9);
  ASSERT_TRUE(r.inconsistency->state_before.has_value());
  EXPECT_EQ(r.inconsistency->state_before->phase, Phase::Recreating);
  EXPECT_EQ(r.inconsistency->state_before->last_sequence, 8);
}

TEST(OperationChanges, PhaseFirstThenFieldsAndDerivedClaimStages) {
  const auto records = copy_path_journal(2);
  const Replay r = replay(records, PhaseMachine::rules(), {}, ReplayStates::Kept);
  ASSERT_TRUE(r.consistent());

  // #6: ScalingDown -> BackingUp.
  EXPECT_EQ(operation_changes(r.rows[5].state_before, *r.rows[5].state_after),
            (std::vector<FieldChange>{
                {"phase", "ScalingDown", "BackingUp"},
                {"phaseSince", "2027-01-15T08:00:04.000Z", "2027-01-15T08:00:06.000Z"}}));
  // #10: SourceDeleted of data-web-0.
  const Operation& before = *r.rows[11].state_before;
  Operation after = *r.rows[11].state_after;
  EXPECT_EQ(operation_changes(before, after),
            (std::vector<FieldChange>{{"claims[data-web-0].stage", "backed up", "source deleted"},
                                      {"claims[data-web-0].sourceDeleted", "false", "true"}}));
  // A warning that goes, a claim that goes.
  Operation warned = after;
  warned.warning = "pods not Ready";
  after.claims.pop_back();
  EXPECT_EQ(operation_changes(warned, after),
            (std::vector<FieldChange>{{"claims[logs-web-0]", "present", "(none)"},
                                      {"warning", "pods not Ready", "(none)"}}));
}

TEST(ClaimStage, FollowsTheProgressOfEachPath) {
  ClaimPlan claim = sample_claim("data", 0);
  EXPECT_EQ(claim_stage(claim), "planned");
  claim.backup_verified = TreeSummary{1, 1, "ab"};
  EXPECT_EQ(claim_stage(claim), "backed up");
  claim.source_deleted = true;
  EXPECT_EQ(claim_stage(claim), "source deleted");
  claim.recreated_uid = "u";
  EXPECT_EQ(claim_stage(claim), "recreated");
  claim.restore_verified = TreeSummary{1, 1, "ab"};
  EXPECT_EQ(claim_stage(claim), "restored");
  ClaimPlan grown = sample_claim("data", 1);
  grown.expanded = true;
  EXPECT_EQ(claim_stage(grown), "expanded");
}

}  // namespace
}  // namespace stsresize
