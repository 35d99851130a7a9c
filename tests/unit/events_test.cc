#include "engine/fold.h"

#include <gtest/gtest.h>

#include "engine/operation_codec.h"
#include "engine/replay.h"
#include "states/machine.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

using testing::copy_path_journal;
using testing::JournalBuilder;
using testing::sample_claim;
using testing::sample_summary;

std::vector<Entry> one_of_each() {
  Operation snapshot;
  snapshot.id = "web-0123abcd";
  snapshot.ns = "shop";
  snapshot.statefulset = "web";
  snapshot.phase = Phase::BackingUp;
  snapshot.claims = {sample_claim("data", 0)};
  snapshot.template_changes = {TemplateChange{"data", Quantity::parse("2Gi").value(), "fast"},
                               TemplateChange{"logs", std::nullopt, "slow"}};
  snapshot.statefulset_recreated = true;
  snapshot.warning = "pods slow to become Ready";
  return {
      entries::OperationStarted{"grew", "uid-1", 3},
      entries::TemplateUpdateRequested{snapshot.template_changes},
      entries::DefinitionSaved{"stsresize-web-definition",
                               Json{{"kind", "StatefulSet"}, {"metadata", {{"name", "web"}}}}},
      entries::StatefulSetRecreated{"uid-2"},
      entries::Planned{Path::Copy, {sample_claim("data", 0), sample_claim("logs", 1)}, {}},
      entries::PhaseChanged{Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy},
      entries::ActionIntended{Phase::BackingUp, "create", "Job shop/x", "backup"},
      entries::BackupVerified{"data-web-0", sample_summary(1)},
      entries::SourceDeleted{"data-web-0"},
      entries::ClaimRecreated{"data-web-0", "uid-2"},
      entries::RestoreVerified{"data-web-0", sample_summary(2)},
      entries::ClaimExpanded{"data-web-0"},
      entries::StepFailed{Phase::BackingUp, "copy job failed", true},
      entries::Resumed{snapshot},
      entries::OperationFinished{Phase::Failed},
      entries::ApprovalAwaited{Phase::BackingUp, Phase::Recreating, Trigger::StepDone, "step"},
      entries::OperatorAction{"approve", Phase::BackingUp, "alice", "2027-01-15T08:00:00Z", "n1",
                              "it approves another operation"},
  };
}

TEST(EventCodec, EveryEventTypeSurvivesEncodeAndDecode) {
  for (const Entry& event : one_of_each()) {
    SCOPED_TRACE(std::string{entry_type(event)});
    const Json data = encode_entry_data(event);
    auto decoded = decode_entry(entry_type(event), Json::parse(data.dump()));
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(*decoded, event);
  }
}

TEST(EventCodec, RefusesUnknownTypeExtraMissingAndMistypedFields) {
  EXPECT_FALSE(decode_entry("Teleported", Json::object()));
  Json extra = encode_entry_data(entries::SourceDeleted{"c"});
  extra["bonus"] = 1;
  auto e1 = decode_entry("SourceDeleted", extra);
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().find("unknown field \"bonus\""), std::string::npos) << e1.error();
  auto e2 = decode_entry("ClaimRecreated", Json{{"claim", "c"}});
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().find("missing field \"uid\""), std::string::npos) << e2.error();
  auto e3 =
      decode_entry("StepFailed", Json{{"phase", "BackingUp"}, {"reason", "x"}, {"critical", 1}});
  ASSERT_FALSE(e3);
  EXPECT_NE(e3.error().find("\"critical\" must be a boolean"), std::string::npos) << e3.error();
  auto e4 = decode_entry("PhaseChanged",
                         Json{{"from", "Nowhere"}, {"to", "Planning"}, {"event", "StepDone"}});
  ASSERT_FALSE(e4);
  EXPECT_NE(e4.error().find("Nowhere"), std::string::npos) << e4.error();
}

// Journals outlive versions: the payloads are pinned to the bytes the if-chain codec wrote
// before the entry table replaced it.
TEST(EventCodec, WritesTheBytesEarlierVersionsWrote) {
  const TreeSummary summary{2, 512, "ab"};
  EXPECT_EQ(encode_entry_data(entries::OperationStarted{"grew", "uid-1", 3}).dump(),
            R"({"originalReplicas":3,"stsUid":"uid-1","trigger":"grew"})");
  EXPECT_EQ(encode_entry_data(
                entries::PhaseChanged{Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy})
                .dump(),
            R"({"event":"PlannedCopy","from":"Planning","to":"ScalingDown"})");
  EXPECT_EQ(encode_entry_data(entries::BackupVerified{"c", summary, 0}).dump(),
            R"({"claim":"c","summary":{"bytes":512,"digest":"ab","files":2}})");
  EXPECT_EQ(encode_entry_data(entries::BackupVerified{"c", summary, 7}).dump(),
            R"({"claim":"c","generation":7,"summary":{"bytes":512,"digest":"ab","files":2}})");
  EXPECT_EQ(
      encode_entry_data(entries::OperatorAction{"skip", Phase::Expanding, "alice", "t", "n1", ""})
          .dump(),
      R"({"action":"skip","at":"t","by":"alice","nonce":"n1","phase":"Expanding","refused":""})");
  EXPECT_EQ(encode_entry_data(entries::Planned{Path::Copy, {}, {}}).dump(),
            R"({"claims":[],"path":"Copy"})");

  // The generation that later versions added: absent reads as 0, present must be positive.
  Json present = encode_entry_data(entries::BackupVerified{"c", summary, 7});
  present["generation"] = 0;
  auto zero = decode_entry("BackupVerified", present);
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().find("generation must be positive"), std::string::npos) << zero.error();
  auto replicas = decode_entry(
      "OperationStarted",
      Json{{"trigger", ""}, {"stsUid", "u"}, {"originalReplicas", std::int64_t{1} << 31}});
  ASSERT_FALSE(replicas);
  EXPECT_NE(replicas.error().find("originalReplicas out of range"), std::string::npos)
      << replicas.error();
}

TEST(Fold, AnAwaitedApprovalIsClearedByThePhaseChangeItHeld) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid-1", 3});
  b.add(entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning});
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.add(entries::ApprovalAwaited{Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy,
                                 "manual"});
  auto waiting = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(waiting) << waiting.error().message;
  EXPECT_EQ(waiting->awaiting,
            (AwaitedApproval{Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy}));
  b.add(entries::OperatorAction{"approve", Phase::Planning, "alice", "t", "n1", ""});
  b.add(entries::PhaseChanged{Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy});
  auto moved = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_FALSE(moved->awaiting);
}

TEST(Fold, RefusesAnApprovalNothingAwaitedAndAWaitTheMachineDoesNotAllow) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid-1", 3});
  b.add(entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning});
  JournalBuilder accepted = b;
  accepted.add(entries::OperatorAction{"approve", Phase::Planning, "alice", "t", "n1", ""});
  auto e1 = fold(accepted.records(), PhaseMachine::rules());
  ASSERT_FALSE(e1);
  EXPECT_NE(e1.error().message.find("no transition from it awaited approval"), std::string::npos)
      << e1.error().message;
  // A refused one is only history: it folds anywhere.
  JournalBuilder refused = b;
  refused.add(entries::OperatorAction{"approve", Phase::Planning, "alice", "t", "n1", "stale"});
  EXPECT_TRUE(fold(refused.records(), PhaseMachine::rules()));
  JournalBuilder skipping = b;
  skipping.add(
      entries::ApprovalAwaited{Phase::Planning, Phase::Restoring, Trigger::StepDone, "manual"});
  auto e2 = fold(skipping.records(), PhaseMachine::rules());
  ASSERT_FALSE(e2);
  EXPECT_NE(e2.error().message.find("does not allow or never holds"), std::string::npos)
      << e2.error().message;
}

TEST(Fold, AnAcceptedAbortFoldsOnlyWhereAnAbortIsAllowed) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid-1", 3});
  b.add(entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning});
  b.add(entries::Planned{Path::Expand, {sample_claim("data", 0)}, {}});
  b.add(entries::PhaseChanged{Phase::Planning, Phase::Expanding, Trigger::PlannedExpand});
  JournalBuilder expanding = b;
  expanding.add(entries::OperatorAction{"abort", Phase::Expanding, "alice", "t", "n1", ""});
  auto refused = fold(expanding.records(), PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("OperatorAction abort accepted in phase Expanding"),
            std::string::npos)
      << refused.error().message;

  JournalBuilder planning;
  planning.add(entries::OperationStarted{"grew", "uid-1", 3});
  planning.add(entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning});
  planning.add(entries::OperatorAction{"abort", Phase::Planning, "alice", "t", "n1", ""});
  planning.add(entries::StepFailed{Phase::Planning, "aborted by alice in Planning", true});
  planning.add(entries::PhaseChanged{Phase::Planning, Phase::ScalingBack, Trigger::Abort});
  planning.add(entries::PhaseChanged{Phase::ScalingBack, Phase::Failed, Trigger::ScaleBackDone});
  auto aborted = fold(planning.records(), PhaseMachine::rules());
  ASSERT_TRUE(aborted) << aborted.error().message;
  EXPECT_EQ(aborted->phase, Phase::Failed);
  EXPECT_EQ(aborted->failure, "aborted by alice in Planning");
}

TEST(Fold, AnAcceptedRetryFoldsOnlyOnAFailedOperationWithItsSourcesIntact) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid-1", 3});
  b.add(entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning});
  JournalBuilder running = b;
  running.add(entries::OperatorAction{"retry", Phase::Planning, "alice", "t", "n1", ""});
  auto refused = fold(running.records(), PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("OperatorAction retry accepted in phase Planning"),
            std::string::npos)
      << refused.error().message;
  b.add(entries::StepFailed{Phase::Planning, "no plan", true});
  b.add(entries::PhaseChanged{Phase::Planning, Phase::Failed, Trigger::CriticalError});
  b.add(entries::OperationFinished{Phase::Failed});
  b.add(entries::OperatorAction{"retry", Phase::Failed, "alice", "t", "n2", ""});
  auto retried = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_EQ(retried->phase, Phase::Failed);
}

// The copy path up to CleaningUp (copy_path_journal without its end), and one more record.
std::vector<JournalRecord> until_cleaning_up() {
  auto records = copy_path_journal(2);
  records.resize(records.size() - 2);  // PhaseChanged CleaningUp -> Completed, OperationFinished
  return records;
}
void append(std::vector<JournalRecord>& records, const Entry& event) {
  Operation op;
  op.id = records.back().operation_id;
  op.ns = records.back().ns;
  op.statefulset = records.back().statefulset;
  records.push_back(make_record(op, records.back().sequence + 1,
                                records.back().time + std::chrono::seconds{1}, event));
}

TEST(Fold, AnAcceptedSkipOfCleaningUpEndsCompletedAndReplayShowsIt) {
  auto records = until_cleaning_up();
  append(records, entries::OperatorAction{"skip", Phase::CleaningUp, "alice", "t", "n1", ""});
  append(records, entries::PhaseChanged{Phase::CleaningUp, Phase::Completed, Trigger::Skip});
  append(records, entries::OperationFinished{Phase::Completed});
  auto skipped = fold(records, PhaseMachine::rules());
  ASSERT_TRUE(skipped) << skipped.error().message;
  EXPECT_EQ(skipped->phase, Phase::Completed);
  EXPECT_TRUE(skipped->failure.empty());

  const Replay replayed = replay(records, PhaseMachine::rules(), {}, ReplayStates::Kept,
                                 std::span<const OperationSummary>{});
  ASSERT_FALSE(replayed.inconsistency) << replayed.inconsistency->reason;
  ASSERT_GE(replayed.rows.size(), 3u);
  const auto& rows = replayed.rows;
  const TimelineRow& action = rows[rows.size() - 3];
  const TimelineRow& changed = rows[rows.size() - 2];
  EXPECT_EQ(action.event_type, "OperatorAction");
  EXPECT_EQ(action.details, "skip in CleaningUp by alice at t");
  EXPECT_EQ(changed.event_type, "PhaseChanged");
  EXPECT_NE(changed.details.find("(Skip)"), std::string::npos) << changed.details;
  ASSERT_TRUE(changed.state_before && changed.state_after);
  EXPECT_EQ(changed.state_before->phase, Phase::CleaningUp);
  EXPECT_EQ(changed.state_after->phase, Phase::Completed);
}

TEST(Fold, RefusesASkipWithoutAPersonsAcceptedSkipOrOutsideCleaningUp) {
  // The engine never skips on its own: a PhaseChanged on Skip follows an accepted skip.
  auto alone = until_cleaning_up();
  append(alone, entries::PhaseChanged{Phase::CleaningUp, Phase::Completed, Trigger::Skip});
  auto refused = fold(alone, PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("on Skip without a person's accepted skip"),
            std::string::npos)
      << refused.error().message;

  auto after_refusal = until_cleaning_up();
  append(after_refusal,
         entries::OperatorAction{"skip", Phase::CleaningUp, "bob", "t", "n1", "no reason"});
  append(after_refusal, entries::PhaseChanged{Phase::CleaningUp, Phase::Completed, Trigger::Skip});
  EXPECT_FALSE(fold(after_refusal, PhaseMachine::rules()));

  // Restoring is not on the allow-list, whatever the journal says.
  auto restoring = until_cleaning_up();
  restoring.resize(restoring.size() - 2);  // back to Restoring
  auto folded = fold(restoring, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  ASSERT_EQ(folded->phase, Phase::Restoring);
  append(restoring, entries::OperatorAction{"skip", Phase::Restoring, "alice", "t", "n1", ""});
  auto in_restoring = fold(restoring, PhaseMachine::rules());
  ASSERT_FALSE(in_restoring);
  EXPECT_NE(in_restoring.error().message.find("OperatorAction skip accepted in phase Restoring"),
            std::string::npos)
      << in_restoring.error().message;

  // A skip of another phase than the current one is not accepted either.
  auto other_phase = until_cleaning_up();
  append(other_phase, entries::OperatorAction{"skip", Phase::ScalingUp, "alice", "t", "n1", ""});
  EXPECT_FALSE(fold(other_phase, PhaseMachine::rules()));
}

// Failed in Restoring after the sources were replaced: an accepted retry and the PhaseChanged
// on Resume back to Restoring, in that order and nothing between, and only to the phase it
// failed in.
TEST(Fold, AResumeLeavesFailedOnlyRightAfterAnAcceptedRetryAndOnlyToThePhaseItFailedIn) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  b.to(Phase::ScalingDown, Phase::BackingUp);
  b.add(entries::BackupVerified{"data-web-0", sample_summary(0)});
  b.to(Phase::BackingUp, Phase::Recreating);
  b.add(entries::SourceDeleted{"data-web-0"});
  b.add(entries::ClaimRecreated{"data-web-0", "new-uid"});
  b.to(Phase::Recreating, Phase::Restoring);
  b.add(entries::StepFailed{Phase::Restoring, "copy Job failed", true});
  b.to(Phase::Restoring, Phase::Failed, Trigger::CriticalError);
  b.add(entries::OperationFinished{Phase::Failed});
  auto failed = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(failed->failed_in, Phase::Restoring);
  EXPECT_EQ(failed->failure, "copy Job failed");

  auto refused_at_end = [](JournalBuilder builder, const std::string& fragment) {
    auto refused = fold(builder.records(), PhaseMachine::rules());
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().sequence, static_cast<std::int64_t>(builder.records().size()));
    EXPECT_NE(refused.error().message.find(fragment), std::string::npos) << refused.error().message;
  };
  const entries::OperatorAction retry{"retry", Phase::Failed, "alice", "t", "n1", ""};
  {
    JournalBuilder no_action = b;
    no_action.to(Phase::Failed, Phase::Restoring, Trigger::Resume);
    refused_at_end(no_action, "without an accepted OperatorAction retry");
  }
  {
    JournalBuilder other_phase = b;
    other_phase.add(retry);
    other_phase.to(Phase::Failed, Phase::ScalingUp, Trigger::Resume);
    refused_at_end(other_phase, "refused by the state machine");
  }
  {
    JournalBuilder between = b;
    between.add(retry);
    between.add(entries::ActionIntended{Phase::Failed, "delete", "Job shop/x", ""});
    refused_at_end(between, "right after an accepted retry");
  }
  b.add(retry);
  b.to(Phase::Failed, Phase::Restoring, Trigger::Resume);
  auto resumed = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->phase, Phase::Restoring);
  EXPECT_EQ(resumed->failed_in, std::nullopt);
  EXPECT_EQ(resumed->failure, "");
  b.add(entries::RestoreVerified{"data-web-0", sample_summary(0)});
  b.to(Phase::Restoring, Phase::ScalingUp);
  b.to(Phase::ScalingUp, Phase::CleaningUp);
  b.to(Phase::CleaningUp, Phase::Completed);
  b.add(entries::OperationFinished{Phase::Completed});
  auto completed = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(completed) << completed.error().message;
  EXPECT_EQ(completed->phase, Phase::Completed);
}

TEST(Fold, CopyPathJournalFoldsToCompletedWithEveryClaimsProgress) {
  const auto records = copy_path_journal(6);
  auto op = fold(records, PhaseMachine::rules());
  ASSERT_TRUE(op.has_value()) << op.error().sequence << ": " << op.error().message;
  EXPECT_EQ(op->phase, Phase::Completed);
  EXPECT_EQ(op->path, Path::Copy);
  EXPECT_EQ(op->original_replicas, 3);
  EXPECT_EQ(op->sts_uid, "sts-uid");
  EXPECT_EQ(op->last_sequence, static_cast<std::int64_t>(records.size()));
  EXPECT_EQ(op->phase_since, records[records.size() - 2].time);
  ASSERT_EQ(op->claims.size(), 6u);
  for (const ClaimPlan& claim : op->claims) {
    EXPECT_TRUE(claim.backup_verified.has_value()) << claim.claim;
    EXPECT_TRUE(claim.source_deleted) << claim.claim;
    EXPECT_EQ(claim.recreated_uid, "new-" + claim.claim);
    EXPECT_EQ(claim.restore_verified, sample_summary(claim.ordinal));
  }
}

TEST(Fold, RefusesAGapInSequences) {
  auto records = copy_path_journal(2);
  records.erase(records.begin() + 3);
  auto op = fold(records, PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 5);
  EXPECT_NE(op.error().message.find("gap"), std::string::npos);
}

TEST(Fold, RefusesADuplicateSequence) {
  auto records = copy_path_journal(2);
  records.insert(records.begin() + 2, records[1]);
  auto op = fold(records, PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 2);
}

TEST(Fold, RefusesATransitionTheMachineWouldRefuseAndNamesItsSequence) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.to(Phase::Planning, Phase::Restoring, Trigger::StepDone);
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 3);
  EXPECT_NE(op.error().message.find("refused by the state machine"), std::string::npos);
}

TEST(Fold, RefusesAPhaseChangeFromAnotherPhaseThanTheCurrentOne) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 2);
}

TEST(Fold, RefusesAJournalThatDoesNotStartWithOperationStartedOrResumed) {
  JournalBuilder b;
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 1);
}

TEST(Fold, RefusesASourceDeletedBeforeItsBackupWasVerified) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  b.to(Phase::ScalingDown, Phase::BackingUp);
  b.to(Phase::BackingUp, Phase::Recreating);
  b.add(entries::SourceDeleted{"data-web-0"});
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 7);
  EXPECT_NE(op.error().message.find("before its backup was verified"), std::string::npos);
}

TEST(Fold, CriticalErrorWithDeletedSourcesMayOnlyLeadToFailed) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  b.to(Phase::ScalingDown, Phase::BackingUp);
  b.add(entries::BackupVerified{"data-web-0", sample_summary(0)});
  b.to(Phase::BackingUp, Phase::Recreating);
  b.add(entries::SourceDeleted{"data-web-0"});
  b.add(entries::StepFailed{Phase::Recreating, "pending too long", true});
  auto records = b.records();
  records.push_back(records.back());
  records.back().sequence += 1;
  records.back().type = "PhaseChanged";
  records.back().data = encode_entry_data(
      entries::PhaseChanged{Phase::Recreating, Phase::ScalingBack, Trigger::CriticalError});
  auto refused = fold(records, PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().sequence, 10);
  b.to(Phase::Recreating, Phase::Failed, Trigger::CriticalError);
  auto failed = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(failed->phase, Phase::Failed);
  EXPECT_EQ(failed->failure, "pending too long");
}

Operation snapshot_at(Phase phase) {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid";
  op.phase = phase;
  op.original_replicas = 3;
  return op;
}

TEST(Fold, ResumedAsFirstRecordStartsFromTheSnapshot) {
  JournalBuilder b;
  Operation snapshot = snapshot_at(Phase::BackingUp);
  snapshot.path = Path::Copy;
  snapshot.claims = {sample_claim("data", 0)};
  snapshot.last_sequence = 40;
  b.add(entries::Resumed{snapshot});
  b.add(entries::BackupVerified{"data-web-0", sample_summary(0)});
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(op) << op.error().message;
  EXPECT_EQ(op->phase, Phase::BackingUp);
  EXPECT_EQ(op->last_sequence, 2);
  EXPECT_TRUE(op->claims[0].backup_verified);
}

TEST(Fold, ResumedMayLagTheJournalByOneTransitionButNotTwo) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  b.to(Phase::ScalingDown, Phase::BackingUp);
  auto lagging = b.records();
  lagging.push_back(make_record(snapshot_at(Phase::ScalingDown), 6, b.time(),
                                entries::Resumed{snapshot_at(Phase::ScalingDown)}));
  auto ok = fold(lagging, PhaseMachine::rules());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->phase, Phase::ScalingDown);

  auto too_far = b.records();
  too_far.push_back(make_record(snapshot_at(Phase::Planning), 6, b.time(),
                                entries::Resumed{snapshot_at(Phase::Planning)}));
  auto refused = fold(too_far, PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().sequence, 6);
  EXPECT_NE(refused.error().message.find("lag"), std::string::npos);
}

// Another process with a journal of its own (`stsresize advance --apply-locally`) took the
// transitions in between: the annotation leads this journal, and that is taken as it is.
TEST(Fold, ResumedMayLeadTheJournalByTransitionsTheMachineAllows) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  auto leading = b.records();
  leading.push_back(make_record(snapshot_at(Phase::Recreating), 3, b.time(),
                                entries::Resumed{snapshot_at(Phase::Recreating)}));
  auto ok = fold(leading, PhaseMachine::rules());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->phase, Phase::Recreating);

  // Not where the machine cannot go: an operation on the expansion path never restores.
  b.add(entries::Planned{Path::Expand, {sample_claim("data", 0)}, {}});
  b.to(Phase::Planning, Phase::Expanding, Trigger::PlannedExpand);
  auto elsewhere = b.records();
  elsewhere.push_back(make_record(snapshot_at(Phase::Restoring), 5, b.time(),
                                  entries::Resumed{snapshot_at(Phase::Restoring)}));
  auto refused = fold(elsewhere, PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().sequence, 5);
  EXPECT_NE(refused.error().message.find("Resumed at phase Restoring"), std::string::npos);
}

// `stsresize advance --retry --apply-locally` resumed a failed restore and took the operation
// on, journaling elsewhere; the controller's journal ends in Failed, and its Resumed from the
// annotation leads it through the Resume the machine allows from the phase that failed.
TEST(Fold, ResumedMayLeadAFailedJournalThroughAResumeToThePhaseThatFailed) {
  auto failed_in = [](Phase phase) {
    JournalBuilder b;
    b.add(entries::OperationStarted{"grew", "uid", 3});
    b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
    if (phase == Phase::Expanding) {
      b.add(entries::Planned{Path::Expand, {sample_claim("data", 0)}, {}});
      b.to(Phase::Planning, Phase::Expanding, Trigger::PlannedExpand);
    } else {
      b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
      b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
      b.to(Phase::ScalingDown, Phase::BackingUp);
      b.add(entries::BackupVerified{"data-web-0", sample_summary(0)});
      b.to(Phase::BackingUp, Phase::Recreating);
      b.add(entries::SourceDeleted{"data-web-0"});
      b.add(entries::ClaimRecreated{"data-web-0", "new-uid"});
      b.to(Phase::Recreating, Phase::Restoring);
    }
    b.add(entries::StepFailed{phase, "it failed", true});
    b.to(phase, Phase::Failed, Trigger::CriticalError);
    return b;
  };
  auto resumed_at = [](JournalBuilder b, Phase phase) {
    auto records = b.records();
    records.push_back(make_record(snapshot_at(phase), records.back().sequence + 1, b.time(),
                                  entries::Resumed{snapshot_at(phase)}));
    return fold(records, PhaseMachine::rules());
  };
  for (Phase ahead : {Phase::Restoring, Phase::ScalingUp, Phase::CleaningUp}) {
    auto ok = resumed_at(failed_in(Phase::Restoring), ahead);
    ASSERT_TRUE(ok) << to_string(ahead) << ": " << ok.error().message;
    EXPECT_EQ(ok->phase, ahead);
  }
  // A failed expansion is never resumed (a retry starts a new operation): no way to Restoring.
  auto refused = resumed_at(failed_in(Phase::Expanding), Phase::Restoring);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("Resumed at phase Restoring"), std::string::npos);
  // Nor from a restore that failed back to a phase before it. (Not BackingUp any more: the table
  // now leads Restoring -> Recreating on RecreateAgain and Recreating -> BackingUp on BackupStale.)
  EXPECT_FALSE(resumed_at(failed_in(Phase::Restoring), Phase::ScalingDown));
  EXPECT_FALSE(resumed_at(failed_in(Phase::Restoring), Phase::UpdatingTemplate));
}

TEST(Fold, ProgressEventOutsideItsPhaseIsRefused) {
  JournalBuilder b;
  b.add(entries::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, {sample_claim("data", 0)}, {}});
  b.add(entries::RestoreVerified{"data-web-0", sample_summary(0)});
  auto op = fold(b.records(), PhaseMachine::rules());
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().sequence, 4);
}

TEST(Fold, FolderAppliedIncrementallyEqualsFoldOfTheWhole) {
  const auto records = copy_path_journal(4);
  ValidatingFold folder{PhaseMachine::rules()};
  for (const auto& record : records) ASSERT_TRUE(folder.apply(record));
  EXPECT_EQ(*folder.state(), *fold(records, PhaseMachine::rules()));
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

// A drain by claim policy (delete-after): DrainPlanned records the delay, written only when set
// (a drain by cleanup pod is recorded as before); the fold takes a CleanupSucceeded without a
// cleanup pod, and only once the delay is over; a cleanup pod has no place in it.
std::vector<JournalRecord> policy_drain(Duration recorded_after, const Entry& last) {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  TimePoint time{std::chrono::seconds{1'800'000'000}};
  std::vector<JournalRecord> records;
  auto add = [&](const Entry& entry) {
    records.push_back(make_record(op, static_cast<std::int64_t>(records.size()) + 1, time, entry));
  };
  add(entries::OperationStarted{"scaled down", "sts-uid", 2, OperationKind::Drain});
  OrdinalDrain drain;
  drain.ordinal = 2;
  drain.claims = {{"data-web-2", "uid-d2", false}};
  add(entries::DrainPlanned{{drain}, std::chrono::minutes{30}});
  add(entries::PhaseChanged{Phase::Pending, Phase::Draining, Trigger::StartDrain});
  time += recorded_after;
  add(last);
  return records;
}

TEST(EventCodec, DrainPlannedWritesItsDelayOnlyForAClaimPolicy) {
  OrdinalDrain drain;
  drain.ordinal = 2;
  drain.claims = {{"data-web-2", "u", false}};
  const std::vector<OrdinalDrain> ordinals{drain};
  const Json by_pod = encode_entry_data(entries::DrainPlanned{ordinals, Duration{0}});
  EXPECT_FALSE(by_pod.contains("deleteAfterMs")) << by_pod.dump();
  const Json by_policy =
      encode_entry_data(entries::DrainPlanned{ordinals, std::chrono::minutes{30}});
  EXPECT_EQ(by_policy["deleteAfterMs"], 1'800'000);
  auto decoded = decode_entry("DrainPlanned", Json::parse(by_policy.dump()));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(std::get<entries::DrainPlanned>(*decoded).delete_after, std::chrono::minutes{30});
  Json zero = by_policy;
  zero["deleteAfterMs"] = 0;
  EXPECT_FALSE(decode_entry("DrainPlanned", zero));
  zero["deleteAfterMs"] = -5;
  EXPECT_FALSE(decode_entry("DrainPlanned", zero));
}

TEST(Fold, APolicyDrainSucceedsWithoutACleanupPodOnlyOnceItsDelayIsOver) {
  auto early = fold(policy_drain(std::chrono::minutes{29}, entries::CleanupSucceeded{2}),
                    PhaseMachine::rules());
  ASSERT_FALSE(early);
  EXPECT_NE(early.error().message.find("delete-after"), std::string::npos) << early.error().message;
  auto due = fold(policy_drain(std::chrono::minutes{30}, entries::CleanupSucceeded{2}),
                  PhaseMachine::rules());
  ASSERT_TRUE(due) << due.error().message;
  EXPECT_TRUE(due->drains[0].succeeded);
  EXPECT_EQ(due->delete_after, std::chrono::minutes{30});
  auto pod = fold(policy_drain(std::chrono::minutes{1}, entries::CleanupPodCreated{2, "p"}),
                  PhaseMachine::rules());
  EXPECT_FALSE(pod);
}

TEST(OperationCodec, APolicyDrainKeepsItsDelayInTheStateAnnotation) {
  auto op = fold(policy_drain(std::chrono::minutes{1}, entries::DrainCancelled{2, "scaled up"}),
                 PhaseMachine::rules());
  ASSERT_TRUE(op) << op.error().message;
  const Json document = encode_operation(*op);
  EXPECT_EQ(document["deleteAfterMs"], 1'800'000);
  auto decoded = decode_operation(Json::parse(document.dump()), "state");
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, *op);
  Operation resize;
  EXPECT_FALSE(encode_operation(resize).contains("deleteAfterMs"));
}

}  // namespace
}  // namespace stsresize
