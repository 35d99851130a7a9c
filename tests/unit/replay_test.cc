#include "engine/replay.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/app/replay_command.h"
#include "adapters/journal/memory_journal.h"
#include "adapters/journal/sqlite_journal.h"
#include "states/machine.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

using testing::copy_path_journal;
using testing::JournalBuilder;

std::vector<JournalRecord> journal_with_refused_transition() {
  JournalBuilder b;
  b.add(events::OperationStarted{"grew", "uid", 3});
  b.to(Phase::Pending, Phase::Planning, PhaseEvent::StartPlanning);
  b.add(events::Planned{Path::Copy, {testing::sample_claim("data", 0)}});
  b.to(Phase::Planning, Phase::ScalingDown, PhaseEvent::PlannedCopy);
  b.to(Phase::ScalingDown, Phase::Recreating);  // skips BackingUp: refused
  b.to(Phase::Recreating, Phase::Restoring);
  return b.records();
}

TEST(Replay, TimelineShowsThePhaseAfterEveryEvent) {
  const auto records = copy_path_journal(2);
  const Timeline timeline = replay_operation(records, PhaseMachine::rules());
  EXPECT_FALSE(timeline.inconsistency);
  ASSERT_EQ(timeline.rows.size(), records.size());
  EXPECT_EQ(timeline.rows.front().phase, Phase::Pending);
  EXPECT_EQ(timeline.rows[1].phase, Phase::Planning);
  EXPECT_EQ(timeline.rows[1].details, "Pending -> Planning (StartPlanning)");
  EXPECT_EQ(timeline.rows.back().phase, Phase::Completed);
  EXPECT_EQ(timeline.final_state->phase, Phase::Completed);
}

TEST(Replay, StopsAtTheFirstRefusedTransitionAndNamesIt) {
  const Timeline timeline =
      replay_operation(journal_with_refused_transition(), PhaseMachine::rules());
  ASSERT_TRUE(timeline.inconsistency);
  EXPECT_EQ(timeline.inconsistency->sequence, 5);
  EXPECT_EQ(timeline.rows.size(), 5u);
  EXPECT_FALSE(timeline.final_state);
  EXPECT_NE(format_timeline_text({timeline}).find("INCONSISTENT at sequence 5"), std::string::npos);
}

TEST(ReplayCommand, ExitsZeroOnAConsistentJournalAndOneOnARefusedTransition) {
  MemoryJournal good;
  ASSERT_TRUE(good.append(copy_path_journal(2)));
  std::ostringstream out, err;
  EXPECT_EQ(run_replay(good, ReplayOptions{}, out, err), kReplayConsistent) << err.str();
  EXPECT_NE(out.str().find("final phase Completed"), std::string::npos);

  MemoryJournal bad;
  ASSERT_TRUE(bad.append(journal_with_refused_transition()));
  std::ostringstream out2, err2;
  EXPECT_EQ(run_replay(bad, ReplayOptions{}, out2, err2), kReplayInconsistent);
  EXPECT_NE(err2.str().find("inconsistent at sequence 5"), std::string::npos) << err2.str();
  EXPECT_NE(err2.str().find("ScalingDown -> Recreating"), std::string::npos) << err2.str();
}

TEST(ReplayCommand, UnknownOperationAndBadFormatAreUsageErrors) {
  MemoryJournal journal;
  ASSERT_TRUE(journal.append(copy_path_journal(1)));
  std::ostringstream out, err;
  ReplayOptions unknown;
  unknown.operation_id = "nope";
  EXPECT_EQ(run_replay(journal, unknown, out, err), kReplayUsageError);
  ReplayOptions yaml;
  yaml.output = "yaml";
  EXPECT_EQ(run_replay(journal, yaml, out, err), kReplayUsageError);
}

TEST(ReplayCommand, JsonOutputCarriesTheTimelineAndTheVerdict) {
  MemoryJournal journal;
  ASSERT_TRUE(journal.append(journal_with_refused_transition()));
  std::ostringstream out, err;
  ReplayOptions options;
  options.output = "json";
  EXPECT_EQ(run_replay(journal, options, out, err), kReplayInconsistent);
  const Json document = Json::parse(out.str());
  ASSERT_EQ(document.size(), 1u);
  EXPECT_EQ(document[0]["consistent"], false);
  EXPECT_EQ(document[0]["inconsistency"]["sequence"], 5);
  EXPECT_EQ(document[0]["timeline"].size(), 5u);
}

// One smoke test of the real binary: exit codes through the process boundary.
TEST(ReplayBinary, ExitCodesAreZeroOneAndTwo) {
  const std::filesystem::path binary = std::filesystem::path{STSRESIZE_BINARY};
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary;
  const auto dir =
      std::filesystem::temp_directory_path() / ("stsresize-replay-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::vector<JournalRecord>& records) {
    auto journal = SqliteJournal::open(dir / name);
    EXPECT_TRUE(journal);
    EXPECT_TRUE((*journal)->append(records));
    return (dir / name).string();
  };
  const std::string good = write("good.db", copy_path_journal(2));
  const std::string bad = write("bad.db", journal_with_refused_transition());
  auto run = [&](const std::string& args) {
    const std::string command = binary.string() + " " + args + " >/dev/null 2>&1";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(run("replay --journal " + good), 0);
  EXPECT_EQ(run("replay --journal " + bad), 1);
  EXPECT_EQ(run("replay --journal " + (dir / "missing.db").string()), 2);
  EXPECT_EQ(run("replay"), 2);
  EXPECT_EQ(run("--help"), 0);
  EXPECT_EQ(run("replay --help"), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stsresize
