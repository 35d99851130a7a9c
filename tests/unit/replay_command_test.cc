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
#include "tests/support/replay_samples.h"
#include "tests/support/scratch_dir.h"

namespace stsresize::cli {
namespace {

using stsresize::testing::one_claim_copy;

// Golden files live in tests/unit/golden/ and are compared byte for byte. After an intended
// change of the output, run the tests once with STSRESIZE_UPDATE_GOLDEN=1: every golden file
// is rewritten from the actual output (the test then fails once, so that a rewrite is never
// silent); review the diff and commit it.
std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path{STSRESIZE_SOURCE_DIR} / "tests/unit/golden" / name;
}

void expect_matches_golden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = golden_path(name);
  const char* update = std::getenv("STSRESIZE_UPDATE_GOLDEN");
  if (update != nullptr && std::string{update} == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream{path, std::ios::binary} << actual;
    ADD_FAILURE() << "rewrote golden file " << path
                  << "; run again without STSRESIZE_UPDATE_GOLDEN";
    return;
  }
  std::ifstream file{path, std::ios::binary};
  ASSERT_TRUE(file) << "missing golden file " << path
                    << " (create it with STSRESIZE_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << file.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from golden file " << path;
}

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

TEST(CommandLine, CommandLine_VersionPrintsTheProjectVersion) {
  const Outcome result = run_command_line({"version"});

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_TRUE(std::regex_match(std::string{version()}, std::regex{R"(\d+\.\d+\.\d+)"}))
      << version();
  EXPECT_EQ(result.out, "stsresize " + std::string{version()} + "\n");
}

}  // namespace
}  // namespace stsresize::cli
