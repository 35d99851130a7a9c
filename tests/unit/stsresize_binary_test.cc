// Smoke tests of the real executable: main() wires argv, stdout, stderr and the exit status to
// the command line (adapters/app/cli.h), which the other tests drive in-process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/journal/sqlite_journal.h"
#include "engine/json.h"
#include "tests/support/replay_samples.h"
#include "tests/support/scratch_dir.h"
#include "tests/unit/kube_test_support.h"

#ifndef STSRESIZE_BINARY
#error "STSRESIZE_BINARY must name the stsresize executable (tests/CMakeLists.txt)"
#endif

namespace stsresize {
namespace {

struct Process {
  int status = -1;
  std::string output;  // stdout and stderr
};

// `timeout`: seconds after which the process gets SIGTERM (empty: none).
Process run_binary_for(const std::string& timeout, const std::string& arguments) {
  const std::string prefix =
      timeout.empty() ? std::string{} : "timeout --preserve-status -s TERM " + timeout + " ";
  const std::string command =
      prefix + std::string{"'"} + STSRESIZE_BINARY + "' " + arguments + " 2>&1";
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

Process run_binary(const std::string& arguments) {
  return run_binary_for("", arguments);
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
        "--max-concurrent-operations", "--log-format", "--copy-job-memory-limit", "baseline",
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
      {"--copy-job-cpu-request lots",
       "--copy-job-cpu-request: quantity \"lots\" does not start with a number (a CPU "
       "quantity, e.g. 500m or 2, or none)"},
      {"--copy-job-cpu-limit 0.0001", "--copy-job-cpu-limit: quantity \"0.0001\" is finer"},
      {"--copy-job-memory-request 1Gb",
       "--copy-job-memory-request: quantity \"1Gb\" has an unknown suffix"},
      {"--copy-job-memory-limit=-1Gi", "--copy-job-memory-limit: quantity \"-1Gi\" is negative"},
      {"--copy-job-memory-request 4Gi",
       "--copy-job-memory-request: 4Gi is more than the limit 2Gi (--copy-job-memory-limit; "
       "none for no limit)"},
      {"--copy-job-cpu-request 2 --copy-job-cpu-limit 500m",
       "--copy-job-cpu-request: 2 is more than the limit 500m"},
  };
  for (const Case& c : cases) {
    const Process result = run_binary("run --journal '" + journal + "' " + c.arguments);
    EXPECT_EQ(result.status, 2) << c.arguments << "\n" << result.output;
    EXPECT_NE(result.output.find(c.says), std::string::npos) << c.arguments << "\n"
                                                             << result.output;
  }
  EXPECT_FALSE(std::filesystem::exists(journal)) << "a refused start must not create the journal";
}

// `run` against an API server that refuses every request with `status` for `seconds`, then
// SIGTERM: its log lines (JSON) and how many requests the server saw.
struct RefusedRun {
  Process process;
  std::vector<Json> lines;
  std::size_t requests = 0;
};

RefusedRun run_against_refusing_server(int status, const std::string& reason) {
  testing::StubApiServer server;
  server.answer(status, Json{{"kind", "Status"},
                             {"apiVersion", "v1"},
                             {"status", "Failure"},
                             {"reason", reason},
                             {"message", "refused by the stub"},
                             {"code", status}}
                            .dump());
  testing::TempDir dir;
  const auto kubeconfig =
      dir.write("kubeconfig",
                "current-context: c\n"
                "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster:\n    server: " +
                    server.url() + "\nusers:\n- name: u\n  user:\n    token: t\n");
  RefusedRun result;
  // Long enough for every informer to retry at least once (first backoff: 0.8 s to 1.6 s).
  result.process = run_binary_for("3", "run --kubeconfig '" + kubeconfig.string() +
                                           "' --journal '" + dir.file("journal.db").string() +
                                           "' --metrics-bind-address 0 "
                                           "--health-probe-bind-address 0 --log-format json");
  std::istringstream output(result.process.output);
  for (std::string line; std::getline(output, line);) {
    Json parsed = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) result.lines.push_back(std::move(parsed));
  }
  result.requests = server.requests().size();
  return result;
}

std::vector<Json> lines_at(const RefusedRun& run, const std::string& level,
                           const std::string& starting) {
  std::vector<Json> found;
  for (const Json& line : run.lines) {
    if (line.value("level", "") == level && line.value("msg", "").starts_with(starting)) {
      found.push_back(line);
    }
  }
  return found;
}

TEST(StsresizeBinary, RunLogsRejectedCredentialsOnceWithWhatToFix) {
  const RefusedRun run = run_against_refusing_server(401, "Unauthorized");
  EXPECT_EQ(run.process.status, 0) << run.process.output;
  EXPECT_GE(run.requests, 12u) << "six informers, each listing at least twice";
  const auto errors = lines_at(run, "error", "");
  ASSERT_EQ(errors.size(), 1u) << run.process.output;
  EXPECT_EQ(errors[0]["msg"],
            "the API server rejected the credentials (401 Unauthorized): check --kubeconfig and "
            "--context, or in a pod its ServiceAccount token; retrying with backoff");
  EXPECT_EQ(errors[0]["error"], "Unauthorized");
  EXPECT_NE(errors[0]["message"].get<std::string>().find("refused by the stub"), std::string::npos);
}

TEST(StsresizeBinary, RunLogsEachForbiddenListOnceNamingTheRuleToGrant) {
  const RefusedRun run = run_against_refusing_server(403, "Forbidden");
  EXPECT_EQ(run.process.status, 0) << run.process.output;
  EXPECT_GE(run.requests, 12u);
  EXPECT_EQ(lines_at(run, "error", "").size(), 6u) << run.process.output;
  const auto statefulsets = lines_at(run, "error", "listing statefulsets in every namespace");
  ASSERT_EQ(statefulsets.size(), 1u) << run.process.output;
  EXPECT_EQ(statefulsets[0]["msg"],
            "listing statefulsets in every namespace is forbidden (403): grant verbs "
            "[\"list\",\"watch\"] on resources [\"statefulsets\"] in apiGroups [\"apps\"] to these "
            "credentials (a ClusterRole and ClusterRoleBinding; README.md, RBAC); retrying with "
            "backoff");
  for (const char* resource : {"persistentvolumeclaims", "jobs", "pods", "configmaps"}) {
    EXPECT_EQ(
        lines_at(run, "error", "listing " + std::string{resource} + " in every namespace").size(),
        1u)
        << resource;
  }
  EXPECT_EQ(lines_at(run, "error", "listing storageclasses is forbidden").size(), 1u);
}

}  // namespace
}  // namespace stsresize
