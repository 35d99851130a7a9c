// Smoke tests of the real executable: main() wires argv, stdout, stderr and the exit status to
// the command line (adapters/app/cli.h), which the other tests drive in-process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "adapters/journal/sqlite_journal.h"
#include "tests/support/replay_samples.h"
#include "tests/support/scratch_dir.h"

#ifndef STSRESIZE_BINARY
#error "STSRESIZE_BINARY must name the stsresize executable (tests/CMakeLists.txt)"
#endif

namespace stsresize {
namespace {

struct Process {
  int status = -1;
  std::string output;  // stdout and stderr
};

Process run_binary(const std::string& arguments) {
  const std::string command = std::string{"'"} + STSRESIZE_BINARY + "' " + arguments + " 2>&1";
  Process result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), read);
  }
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(StsresizeBinary, ReplaysAJournalFileAndExitsZero) {
  testing_support::ScratchDir dir;
  const auto path = dir.file("journal.db");
  {
    auto journal = SqliteJournal::open(path);
    ASSERT_TRUE(journal) << journal.error().message;
    ASSERT_TRUE((*journal)->append(testing::one_claim_copy()));
  }

  const Process result = run_binary("replay --journal '" + path.string() + "'");

  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_EQ(result.output.rfind("TIME ", 0), 0u) << result.output;
  EXPECT_NE(result.output.find("operation web-0123abcd (shop/web): Completed, 16 events"),
            std::string::npos)
      << result.output;
}

TEST(StsresizeBinary, InconsistentJournalExitsOneNamingTheSequence) {
  testing_support::ScratchDir dir;
  const auto path = dir.file("journal.db");
  {
    std::vector<JournalRecord> records = testing::one_claim_copy();
    records[4].data["to"] = "Recreating";  // ScalingDown -> Recreating skips the backup
    records.resize(5);
    auto journal = SqliteJournal::open(path);
    ASSERT_TRUE(journal) << journal.error().message;
    ASSERT_TRUE((*journal)->append(records));
  }

  const Process result = run_binary("replay --journal '" + path.string() + "'");

  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("operation web-0123abcd, sequence 5, event PhaseChanged"),
            std::string::npos)
      << result.output;
}

TEST(StsresizeBinary, MissingJournalExitsTwo) {
  testing_support::ScratchDir dir;
  const Process result = run_binary("replay --journal '" + dir.file("missing.db").string() + "'");

  EXPECT_EQ(result.status, 2) << result.output;
  EXPECT_NE(result.output.find("cannot read journal"), std::string::npos) << result.output;
}

TEST(StsresizeBinary, HelpExitsZeroAndUsageErrorsExitTwo) {
  const Process help = run_binary("--help");
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_NE(help.output.find("replay"), std::string::npos) << help.output;

  const Process replay_help = run_binary("replay --help");
  EXPECT_EQ(replay_help.status, 0) << replay_help.output;
  EXPECT_NE(replay_help.output.find("Exit codes:"), std::string::npos) << replay_help.output;

  EXPECT_EQ(run_binary("replay").status, 2);
  EXPECT_EQ(run_binary("").status, 2);
}

TEST(StsresizeBinary, RunHelpExplainsFlagsCredentialsAndExitCodes) {
  const Process result = run_binary("run --help");
  EXPECT_EQ(result.status, 0) << result.output;
  for (const char* text :
       {"--leader-elect", "--metrics-bind-address", "--health-probe-bind-address", "--journal",
        "--max-concurrent-operations", "--log-format",
        "Credentials:", "Exit codes:", "lease was lost"}) {
    EXPECT_NE(result.output.find(text), std::string::npos) << text << "\n" << result.output;
  }
}

TEST(StsresizeBinary, RunRefusesBadFlagsBeforeStartingAnything) {
  testing_support::ScratchDir dir;
  const std::string journal = dir.file("journal.db").string();
  struct Case {
    std::string arguments;
    std::string says;
  };
  const Case cases[] = {
      {"--log-format yaml", "--log-format: log format \"yaml\""},
      {"--leader-elect-lease-duration 10s --leader-elect-renew-deadline 10s",
       "--leader-elect-renew-deadline: must be shorter"},
      {"--poll-interval 5", "--poll-interval: duration \"5\""},
      {"--metrics-bind-address 8080", "--metrics-bind-address: bind address \"8080\""},
      {"--max-concurrent-operations 0", "--max-concurrent-operations: must be from 1 to 64"},
      {"--kubeconfig '" + dir.file("missing").string() + "'", "credentials:"},
      {"--namespace ..", "--namespace: \"..\" is not a namespace name (at most 63 lowercase"},
      {"-n UPPER", "--namespace: \"UPPER\" is not a namespace name"},
      {"--namespace a/b", "--namespace: \"a/b\" is not a namespace name"},
      {"--leader-elect --leader-elect-namespace ..",
       "--leader-elect-namespace: \"..\" is not a namespace name"},
  };
  for (const Case& c : cases) {
    const Process result = run_binary("run --journal '" + journal + "' " + c.arguments);
    EXPECT_EQ(result.status, 2) << c.arguments << "\n" << result.output;
    EXPECT_NE(result.output.find(c.says), std::string::npos) << c.arguments << "\n"
                                                             << result.output;
  }
  EXPECT_FALSE(std::filesystem::exists(journal)) << "a refused start must not create the journal";
}

}  // namespace
}  // namespace stsresize
