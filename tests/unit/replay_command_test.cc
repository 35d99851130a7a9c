#include "adapters/app/replay_command.h"

#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "adapters/app/cli.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/version_command.h"
#include "adapters/journal/memory_journal.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/json.h"
#include "states/machine.h"
#include "tests/support/golden.h"
#include "tests/support/replay_samples.h"
#include "tests/support/scratch_dir.h"

namespace stsresize::cli {
namespace {

using stsresize::testing::one_claim_copy;

using testing_support::expect_matches_golden;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome run(const ReplayOptions& options) {
  std::ostringstream out, err;
  const int code = run_replay(options, out, err);
  return {code, out.str(), err.str()};
}

Outcome run_command_line(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ReplayCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto journal = SqliteJournal::open(path);
    ASSERT_TRUE(journal) << journal.error().message;
    for (const auto& records :
         {one_claim_copy(), one_claim_copy("db-89abcdef", "db", std::chrono::hours{1})}) {
      auto appended = (*journal)->append(records);
      ASSERT_TRUE(appended) << appended.error().message;
    }
  }

  ReplayOptions options() const { return ReplayOptions{.journal = path.string()}; }

  testing_support::ScratchDir dir;
  std::filesystem::path path = dir.file("journal.db");
};

TEST_F(ReplayCommandTest, ReplayCommand_PrintsTheTimelineTableAndOneSummaryPerOperation) {
  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.err, "");
  expect_matches_golden("replay_two_operations.txt", result.out);
}

TEST_F(ReplayCommandTest, ReplayCommand_FiltersByStatefulSetAndTimeWindow) {
  ReplayOptions by_set = options();
  by_set.ns = "shop";
  by_set.statefulset = "db";
  by_set.since = "2027-01-15T09:00:05Z";
  by_set.until = "2027-01-15T09:00:08Z";
  const Outcome result = run(by_set);

  EXPECT_EQ(result.code, kExitOk) << result.err;
  expect_matches_golden("replay_db_window.txt", result.out);
}

TEST_F(ReplayCommandTest, ReplayCommand_FiltersByOperation) {
  ReplayOptions one = options();
  one.operation = "web-0123abcd";
  const Outcome result = run(one);

  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_TRUE(contains(result.out,
                       "operation web-0123abcd (shop/web): Completed, 16 events in "
                       "15s, Copy path\n"))
      << result.out;
  EXPECT_FALSE(contains(result.out, "db-89abcdef")) << result.out;
}

TEST_F(ReplayCommandTest, ReplayCommand_OperationTheJournalNeverSawIsAUsageError) {
  ReplayOptions typo = options();
  typo.operation = "web-0123abce";
  const Outcome result = run(typo);

  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_EQ(result.err, "stsresize replay: no operation web-0123abce in " + path.string() + "\n");
  EXPECT_EQ(result.out, "");
}

TEST(ReplayCommand, ReplayCommand_RunsOnAnyJournal) {
  MemoryJournal journal;
  ASSERT_TRUE(journal.append(one_claim_copy()));
  std::vector<JournalRecord> refused = one_claim_copy("db-89abcdef", "db");
  refused[4].data["to"] = "Recreating";  // ScalingDown -> Recreating skips the backup
  refused.resize(5);
  ASSERT_TRUE(journal.append(refused));

  std::ostringstream out, err;
  const int code = run_replay(journal, ReplayOptions{.statefulset = "web"}, out, err);
  EXPECT_EQ(code, kExitOk) << err.str();
  EXPECT_TRUE(contains(out.str(), "operation web-0123abcd (shop/web): Completed")) << out.str();

  std::ostringstream out2, err2;
  EXPECT_EQ(run_replay(journal, ReplayOptions{}, out2, err2), kExitInconsistent);
  EXPECT_TRUE(contains(err2.str(), "operation db-89abcdef, sequence 5, event PhaseChanged"))
      << err2.str();
  EXPECT_TRUE(contains(err2.str(), "ScalingDown -> Recreating on StepDone is refused"))
      << err2.str();
}

TEST_F(ReplayCommandTest, ReplayCommand_SaysSoWhenNothingMatches) {
  ReplayOptions none = options();
  none.ns = "billing";
  const Outcome result = run(none);

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_EQ(result.out, "No journal records match.\n");
}

TEST_F(ReplayCommandTest, ReplayCommand_JsonHasRowsOperationsAndVerdict) {
  ReplayOptions as_json = options();
  as_json.output = "json";
  const Outcome result = run(as_json);

  ASSERT_EQ(result.code, kExitOk) << result.err;
  const Json document = Json::parse(result.out);
  EXPECT_EQ(document.at("consistent"), true);
  EXPECT_TRUE(document.at("inconsistency").is_null());
  ASSERT_EQ(document.at("rows").size(), 32u);
  const Json& first = document.at("rows").at(0);
  EXPECT_EQ(first.at("time"), "2027-01-15T08:00:01.000Z");
  EXPECT_EQ(first.at("operation"), "web-0123abcd");
  EXPECT_TRUE(first.at("phaseBefore").is_null());
  EXPECT_EQ(first.at("phaseAfter"), "Pending");
  const Json& fifth = document.at("rows").at(4);
  EXPECT_EQ(fifth.at("phaseBefore"), "ScalingDown");
  EXPECT_EQ(fifth.at("phaseAfter"), "BackingUp");
  EXPECT_EQ(fifth.at("details"), "ScalingDown → BackingUp (StepDone)");
  ASSERT_EQ(document.at("operations").size(), 2u);
  EXPECT_EQ(document.at("operations").at(1).at("statefulset"), "db");
  EXPECT_EQ(document.at("operations").at(1).at("finalPhase"), "Completed");
  EXPECT_EQ(document.at("operations").at(1).at("durationMs"), 15000);
}

// The journal accepts any JSON at the SQL level: a hand edit that makes a phase jump is only
// caught by replaying it through the machine.
void tamper(const std::filesystem::path& path, const std::string& operation, int sequence,
            const std::string& data) {
  SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
  SQLite::Statement update(raw,
                           "UPDATE events SET data = ? WHERE operation_id = ? AND sequence = ?");
  update.bind(1, data);
  update.bind(2, operation);
  update.bind(3, sequence);
  ASSERT_EQ(update.exec(), 1);
}

TEST_F(ReplayCommandTest, ReplayCommand_TamperedPhaseIsInconsistentWithExitCode1) {
  tamper(path, "db-89abcdef", 4, R"({"from":"Planning","to":"Restoring","event":"PlannedCopy"})");

  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_EQ(result.err,
            "stsresize replay: inconsistent journal: operation db-89abcdef, sequence 4, event "
            "PhaseChanged {\"event\":\"PlannedCopy\",\"from\":\"Planning\",\"to\":\"Restoring\"}: "
            "transition Planning -> Restoring on PlannedCopy is refused by the state machine\n");
  expect_matches_golden("replay_tampered.txt", result.out);
}

TEST_F(ReplayCommandTest, ReplayCommand_TamperedJsonOutputCarriesTheVerdict) {
  tamper(path, "web-0123abcd", 7, R"({"claim":"data-web-0","summary":{"files":1}})");
  ReplayOptions as_json = options();
  as_json.output = "json";

  const Outcome result = run(as_json);

  EXPECT_EQ(result.code, kExitInconsistent);
  const Json document = Json::parse(result.out);
  EXPECT_EQ(document.at("consistent"), false);
  EXPECT_EQ(document.at("inconsistency").at("operation"), "web-0123abcd");
  EXPECT_EQ(document.at("inconsistency").at("sequence"), 7);
  EXPECT_EQ(document.at("inconsistency").at("event"), "BackupVerified");
  EXPECT_EQ(document.at("rows").size(), 6u);
  EXPECT_EQ(document.at("operations").size(), 1u);
}

TEST(ReplayCommand, ReplayCommand_MissingJournalIsExitCode2AndIsNotCreated) {
  testing_support::ScratchDir dir;
  const std::filesystem::path missing = dir.file("nope.db");

  const Outcome result = run(ReplayOptions{.journal = missing.string()});

  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_TRUE(contains(result.err, "stsresize replay: cannot read journal " + missing.string()))
      << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST_F(ReplayCommandTest, ReplayCommand_JournalFromNewerStsresizeIsExitCode2WithItsMessage) {
  {
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
    raw.exec("INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')");
  }
  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_TRUE(contains(result.err, "newer stsresize")) << result.err;
}

TEST_F(ReplayCommandTest, ReplayCommand_MalformedTimeIsAUsageError) {
  ReplayOptions bad = options();
  bad.since = "yesterday";
  const Outcome result = run(bad);

  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_TRUE(contains(result.err, "--since")) << result.err;
  EXPECT_TRUE(contains(result.err, "yesterday")) << result.err;
}

TEST_F(ReplayCommandTest, ReplayCommand_AnInvalidNamespaceIsAUsageError) {
  ReplayOptions bad = options();
  bad.ns = "Shop";
  const Outcome result = run(bad);
  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_EQ(result.err,
            "stsresize replay: --namespace: \"Shop\" is not a namespace name (at most 63 "
            "lowercase letters, digits and '-', starting and ending with a letter or digit, e.g. "
            "shop)\n");
  EXPECT_EQ(result.out, "");
}

TEST_F(ReplayCommandTest, CommandLine_ParsesReplayFlags) {
  const Outcome result =
      run_command_line({"replay", "--journal", path.string(), "--statefulset", "db", "-o", "json"});

  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(Json::parse(result.out).at("operations").size(), 1u);
}

TEST(CommandLine, CommandLine_HelpListsTheSubcommands) {
  const Outcome result = run_command_line({"--help"});

  EXPECT_EQ(result.code, kExitOk);
  // One line per subcommand.
  EXPECT_TRUE(contains(result.out, "\n  replay  ")) << result.out;
  EXPECT_TRUE(contains(result.out, "timeline\n  version  ")) << result.out;
  EXPECT_TRUE(contains(result.out, "Exit codes:")) << result.out;
}

TEST(CommandLine, CommandLine_ReplayHelpExplainsItselfWithExamplesAndExitCodes) {
  const Outcome result = run_command_line({"replay", "--help"});

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_TRUE(contains(result.out, "--journal FILE")) << result.out;
  EXPECT_TRUE(contains(result.out, "Replay reads the events")) << result.out;
  EXPECT_TRUE(contains(result.out, "Examples:")) << result.out;
  EXPECT_TRUE(contains(result.out, "  1  the journal is inconsistent")) << result.out;
}

TEST(CommandLine, CommandLine_UsageErrorsAreExitCode2) {
  EXPECT_EQ(run_command_line({}).code, kExitUsage);
  EXPECT_EQ(run_command_line({"resize"}).code, kExitUsage);
  EXPECT_EQ(run_command_line({"replay"}).code, kExitUsage);
  const Outcome bad_format = run_command_line({"replay", "--journal", "j.db", "-o", "yaml"});
  EXPECT_EQ(bad_format.code, kExitUsage);
  EXPECT_TRUE(contains(bad_format.err, "yaml")) << bad_format.err;
}

TEST(CommandLine, CommandLine_AnEmptyFlagValueIsRefusedNotTakenFromTheNextArgument) {
  const Outcome empty = run_command_line({"replay", "--journal=", "--operation", "x"});
  EXPECT_EQ(empty.code, kExitUsage);
  EXPECT_EQ(empty.err,
            "stsresize: --journal= gives --journal an empty value: give it one (--journal=VALUE "
            "or --journal VALUE) or leave it out\n");
  // After "--" everything is an argument, whatever it looks like.
  EXPECT_FALSE(contains(run_command_line({"replay", "--", "--x="}).err, "empty value"));
}

TEST(CommandLine, CommandLine_VersionPrintsTheProjectVersion) {
  const Outcome result = run_command_line({"version"});

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_TRUE(std::regex_match(std::string{version()}, std::regex{R"(\d+\.\d+\.\d+)"}))
      << version();
  EXPECT_EQ(result.out, "stsresize " + std::string{version()} + "\n");
}

// --step: every record with the operation's state before and after it.

TEST_F(ReplayCommandTest, ReplayStep_TextShowsEachRecordWithStatesAndChangedFields) {
  ReplayOptions step = options();
  step.operation = "web-0123abcd";
  step.step = true;
  const Outcome result = run(step);

  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.err, "");
  expect_matches_golden("replay_step_web.txt", result.out);
  EXPECT_TRUE(contains(result.out, "    phase: BackingUp -> Recreating\n")) << result.out;
  EXPECT_TRUE(contains(result.out, "    claims[data-web-0].stage: backed up -> source deleted\n"))
      << result.out;
}

TEST_F(ReplayCommandTest, ReplayStep_JsonIsAnArrayOfSequenceEventBeforeAndAfter) {
  ReplayOptions step = options();
  step.operation = "web-0123abcd";
  step.step = true;
  step.output = "json";
  const Outcome result = run(step);

  ASSERT_EQ(result.code, kExitOk) << result.err;
  expect_matches_golden("replay_step_web.json", result.out);
  const Json steps = Json::parse(result.out);
  ASSERT_TRUE(steps.is_array());
  ASSERT_EQ(steps.size(), 16u);
  EXPECT_TRUE(steps.at(0).at("before").is_null());
  EXPECT_EQ(steps.at(0).at("after").at("phase"), "Pending");
  const Json& fifth = steps.at(4);
  EXPECT_EQ(fifth.at("sequence"), 5);
  EXPECT_EQ(fifth.at("event"), "PhaseChanged");
  EXPECT_EQ(fifth.at("before").at("phase"), "ScalingDown");
  EXPECT_EQ(fifth.at("after").at("phase"), "BackingUp");
  EXPECT_EQ(fifth.at("changes").at(0),
            (Json{{"field", "phase"}, {"before", "ScalingDown"}, {"after", "BackingUp"}}));
  // ActionIntended changes nothing in the operation but its sequence.
  EXPECT_EQ(steps.at(5).at("changes"), Json::array());
  EXPECT_EQ(steps.at(5).at("before"), [&] {
    Json before = steps.at(5).at("after");
    before["lastSequence"] = 5;
    return before;
  }());
}

TEST_F(ReplayCommandTest, ReplayStep_FollowsTheFilters) {
  ReplayOptions step = options();
  step.statefulset = "db";
  step.since = "2027-01-15T09:00:05Z";
  step.until = "2027-01-15T09:00:08Z";
  step.step = true;
  step.output = "json";
  const Outcome result = run(step);

  ASSERT_EQ(result.code, kExitOk) << result.err;
  const Json steps = Json::parse(result.out);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps.at(0).at("operation"), "db-89abcdef");
  EXPECT_EQ(steps.at(0).at("sequence"), 5);
  EXPECT_EQ(steps.at(2).at("sequence"), 7);
  // The state before the first record shown is rebuilt from the records the window hides.
  EXPECT_EQ(steps.at(0).at("before").at("phase"), "ScalingDown");
}

TEST_F(ReplayCommandTest, ReplayStep_TamperedRecordComesLastRefusedWithItsReason) {
  tamper(path, "db-89abcdef", 4, R"({"from":"Planning","to":"Restoring","event":"PlannedCopy"})");
  ReplayOptions step = options();
  step.statefulset = "db";
  step.step = true;
  const Outcome text = run(step);

  EXPECT_EQ(text.code, kExitInconsistent);
  expect_matches_golden("replay_step_tampered.txt", text.out);

  step.output = "json";
  const Outcome json = run(step);
  EXPECT_EQ(json.code, kExitInconsistent);
  const Json steps = Json::parse(json.out);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps.at(3).at("sequence"), 4);
  EXPECT_TRUE(steps.at(3).at("after").is_null());
  EXPECT_EQ(steps.at(3).at("before").at("phase"), "Planning");
  EXPECT_EQ(steps.at(3).at("refused"),
            "transition Planning -> Restoring on PlannedCopy is refused by the state machine");
}

// Tampering with the SQLite file the way a person with sqlite3 would: the journal's own
// rules (primary key, insert trigger) do not see UPDATE and DELETE, replay does.
void exec_sql(const std::filesystem::path& path, const std::string& sql) {
  SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
  raw.exec(sql);
}

TEST_F(ReplayCommandTest, ReplayTampered_ChangedTypeIsNamedAtItsRecord) {
  exec_sql(path,
           "UPDATE events SET type = 'SourceDeleted' WHERE operation_id = 'web-0123abcd' AND "
           "sequence = 7");
  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_TRUE(contains(result.err, "operation web-0123abcd, sequence 7, event SourceDeleted"))
      << result.err;
}

TEST_F(ReplayCommandTest, ReplayTampered_DeletedRecordIsAGapNamedAtTheNextRecord) {
  exec_sql(path, "DELETE FROM events WHERE operation_id = 'web-0123abcd' AND sequence = 9");
  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_TRUE(contains(result.err, "operation web-0123abcd, sequence 10, event ClaimRecreated"))
      << result.err;
  EXPECT_TRUE(contains(result.err, "sequence 10 where 9 was expected (gap or duplicate)"))
      << result.err;
}

TEST_F(ReplayCommandTest, ReplayTampered_DeletedLastRecordsAreNamedFromTheJournalsHead) {
  // What is left folds cleanly: only the head the journal writes with every append
  // (operations.last_sequence) still counts the deleted records.
  const std::int64_t last = [&] {
    SQLite::Database raw(path.string(), SQLite::OPEN_READONLY);
    return raw
        .execAndGet(
            "SELECT last_sequence FROM operations WHERE operation_id = "
            "'web-0123abcd'")
        .getInt64();
  }();
  ASSERT_GT(last, 3);
  exec_sql(path, "DELETE FROM events WHERE operation_id = 'web-0123abcd' AND sequence >= " +
                     std::to_string(last - 1));
  const std::string first_missing = std::to_string(last - 1);

  const Outcome result = run(options());
  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_TRUE(contains(result.err, "operation web-0123abcd, sequence " + first_missing +
                                       " is missing: the journal's head says this operation's "
                                       "last record is sequence " +
                                       std::to_string(last)))
      << result.err;
  EXPECT_TRUE(contains(result.err, "records " + first_missing + ".." + std::to_string(last) +
                                       " were deleted after they were written"))
      << result.err;

  ReplayOptions step = options();
  step.step = true;
  const Outcome stepped = run(step);
  EXPECT_EQ(stepped.code, kExitInconsistent);
  EXPECT_TRUE(contains(stepped.out, "(missing)")) << stepped.out;

  ReplayOptions json = options();
  json.output = "json";
  const Outcome verdict = run(json);
  EXPECT_EQ(verdict.code, kExitInconsistent);
  EXPECT_EQ(Json::parse(verdict.out).at("consistent"), false) << verdict.out;
}

TEST_F(ReplayCommandTest, ReplayTampered_SwappedRecordsAreNamedAtTheFirstOutOfPlace) {
  // Records 4 (Planning -> ScalingDown) and 5 (ScalingDown -> BackingUp) change places.
  exec_sql(
      path,
      "UPDATE events SET sequence = 1004 WHERE operation_id = 'db-89abcdef' AND sequence = 4;"
      "UPDATE events SET sequence = 4 WHERE operation_id = 'db-89abcdef' AND sequence = 5;"
      "UPDATE events SET sequence = 5 WHERE operation_id = 'db-89abcdef' AND sequence = 1004;");
  const Outcome result = run(options());

  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_TRUE(contains(result.err, "operation db-89abcdef, sequence 4, event PhaseChanged"))
      << result.err;
  EXPECT_TRUE(contains(result.err, "ScalingDown")) << result.err;
}

TEST(ReplayStep, ManyClaimsAreCountedByStage) {
  const auto records = stsresize::testing::copy_path_journal(6);
  const Replay result = replay(records, PhaseMachine::rules(), {}, ReplayStates::Kept);
  const std::string text = render_replay_steps_text(result);

  // #9 verifies the second backup of six.
  EXPECT_TRUE(contains(text, "  after:   BackingUp, Copy path; 6 claims: 2 backed up, 4 planned\n"))
      << text;
}

}  // namespace
}  // namespace stsresize::cli
