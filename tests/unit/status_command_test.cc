#include "adapters/app/status_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "adapters/app/cli.h"
#include "adapters/app/exit_codes.h"
#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/fake/fake_pod_logs.h"
#include "adapters/journal/memory_journal.h"
#include "engine/vocabulary.h"
#include "tests/support/replay_samples.h"
#include "tests/support/status_samples.h"

namespace stsresize::cli {
namespace {

using namespace std::chrono_literals;
using stsresize::testing::completed_statefulset;
using stsresize::testing::kStatusNow;
using stsresize::testing::refused_statefulset;
using stsresize::testing::sample_backup_claim;
using stsresize::testing::sample_event;
using stsresize::testing::sample_job;
using stsresize::testing::sample_operation;
using stsresize::testing::sample_statefulset;
using stsresize::testing::statefulset_in;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class StatusCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kube.put_raw(Kind::StatefulSet, statefulset_in("web", Phase::BackingUp, 27s));
    kube.put_raw(Kind::StatefulSet, completed_statefulset("cache"));
    kube.put_raw(Kind::StatefulSet, sample_statefulset("untouched"));
    kube.put_raw(Kind::StatefulSet, refused_statefulset("queue", "billing"));
    const Operation op = sample_operation("web", Phase::BackingUp, 27s);
    kube.put_raw(Kind::Job, sample_job(op, 0, "backup", "succeeded"));
    kube.put_raw(Kind::Job, sample_job(op, 1, "backup", "running", 1));
    kube.put_raw(Kind::PersistentVolumeClaim, sample_backup_claim(op, 0, true));
    kube.put_raw(Kind::Event, sample_event("web", "Normal", "PhaseChanged",
                                           "operation web-5f0c2a91: ScalingDown -> BackingUp",
                                           kStatusNow - 27s));
    kube.put_raw(Kind::Event,
                 sample_event("cache", "Normal", "ResizeCompleted", "done", kStatusNow - 5min));
  }

  Outcome status(const StatusOptions& options) {
    std::ostringstream out, err;
    const int code = run_status(kube, cluster, options, kStatusNow, out, err);
    return {code, out.str(), err.str()};
  }

  Outcome describe(const DescribeOptions& options, Journal* journal = nullptr) {
    std::ostringstream out, err;
    const int code = run_describe(kube, journal, cluster, options, kStatusNow, out, err);
    return {code, out.str(), err.str()};
  }

  ManualClock clock;
  FakeKubernetes kube{clock};
  ClusterTarget cluster{.default_ns = "shop", .server = "https://127.0.0.1:6443"};
};

TEST_F(StatusCommandTest, StatusCommand_ListsTheOperationsOfTheContextsNamespace) {
  const Outcome result = status({});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out,
            "NAME    PATH   PHASE       CLAIMS   PROGRESS   STEP AGE   MESSAGE\n"
            "cache   -      Completed   -        -          5m\n"
            "web     copy   BackingUp   1/3      -          27s        Job "
            "data-web-1-stsresize-backup: Running (1 failed attempt)\n");
  EXPECT_EQ(result.err, "");
}

// PROGRESS and describe read the running copy's log: the pod of the running Job, its last lines.
TEST_F(StatusCommandTest, StatusCommand_ReadsTheRunningCopysProgressFromItsLog) {
  kube.put_raw(
      Kind::Pod,
      Json{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata",
            {{"name", "data-web-1-stsresize-backup-x7k2p"},
             {"namespace", "shop"},
             {"labels",
              {{"job-name", "data-web-1-stsresize-backup"},
               {std::string{kPurposeLabel}, "backup"},
               {std::string{kStatefulSetLabel}, "web"}}}}},
           {"spec",
            {{"containers", {{{"name", "copy"}, {"image", "rsync"}}}},
             {"volumes",
              {{{"name", "source"}, {"persistentVolumeClaim", {{"claimName", "data-web-1"}}}}}}}},
           {"status", {{"phase", "Running"}}}});
  FakePodLogs logs{kube};
  logs.print({Kind::Pod, "shop", "data-web-1-stsresize-backup-x7k2p"}, "copy",
             "stsresize-copy: rsync /source/ /destination/, summarising /source meanwhile\n"
             "    429,496,730  40%   24.00MB/s    0:00:25  \n");

  // Without a way to read logs (a person without pods/log): no progress, nothing else changes.
  EXPECT_TRUE(contains(status({}).out, "web     copy   BackingUp   1/3      -          27s"));
  EXPECT_EQ(logs.reads(), 0);

  cluster.logs = &logs;
  const Outcome table = status({});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_TRUE(
      contains(table.out, "web     copy   BackingUp   1/3      40%/1011.4Mi,ETA:0:00:25   27s"))
      << table.out;
  EXPECT_EQ(logs.reads(), 1);  // the running copy only
  const Json json = Json::parse(status({.output = "json"}).out);
  EXPECT_EQ(json["items"][1]["jobs"][1]["progress"]["percent"], 40);
  EXPECT_EQ(json["items"][1]["progress"]["bytesDone"], 429496730);

  const Outcome described = describe({.target = "web"});
  ASSERT_EQ(described.code, kExitOk) << described.err;
  EXPECT_TRUE(
      contains(described.out, "40% (409.6 MiB of 1011.4 MiB) at 24.0 MiB/s, about 0:00:25 left"))
      << described.out;
}

TEST_F(StatusCommandTest, StatusCommand_AllNamespacesAndOneStatefulSet) {
  const Outcome all = status({.all_namespaces = true});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  EXPECT_TRUE(contains(all.out, "NAMESPACE   NAME")) << all.out;
  EXPECT_TRUE(contains(all.out, "billing     queue   -      Refused")) << all.out;

  const Outcome one = status({.ns = "shop", .statefulset = "web", .output = "json"});
  ASSERT_EQ(one.code, kExitOk) << one.err;
  const Json document = Json::parse(one.out);
  ASSERT_EQ(document.at("items").size(), 1u);
  EXPECT_EQ(document.at("items").at(0).at("phase"), "BackingUp");
  EXPECT_EQ(document.at("items").at(0).at("jobs").size(), 2u);
  EXPECT_EQ(document.at("items").at(0).at("backupClaims"),
            Json::array({"data-web-0-stsresize-bak"}));
}

// -w: the table, then only the rows that changed, without the header, at once when a
// StatefulSet changes; a row whose STEP AGE alone grew is not printed again.
TEST_F(StatusCommandTest, StatusCommand_WatchPrintsTheRowsThatChangeAsTheyChange) {
  std::ostringstream out, err;
  std::atomic<int> code{-1};
  TimePoint now = kStatusNow;
  std::mutex now_mutex;
  {
    std::jthread watcher([&](std::stop_token stop) {
      code = watch_status(
          kube, cluster, {.watch = true},
          [&] {
            std::lock_guard lock{now_mutex};
            return now;
          },
          out, err, stop);
    });
    const auto wait_for_watches = [&](int n) {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (kube.calls(Verb::Watch) < n && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(1ms);
      }
      ASSERT_GE(kube.calls(Verb::Watch), n) << "the watcher did not wait again";
    };
    wait_for_watches(1);
    {
      std::lock_guard lock{now_mutex};
      now += 1min;  // every STEP AGE grows: nothing to print for that alone
    }
    // A change that the rows do not show (a label): read again, nothing printed.
    kube.mutate_raw({Kind::StatefulSet, "shop", "cache"},
                    [](Json& sts) { sts["metadata"]["labels"]["tier"] = "cold"; });
    wait_for_watches(2);
    // web moves on to Recreating.
    const Json next = statefulset_in("web", Phase::Recreating, 0s);
    kube.mutate_raw({Kind::StatefulSet, "shop", "web"}, [&](Json& sts) {
      sts["metadata"]["annotations"] = next["metadata"]["annotations"];
    });
    wait_for_watches(3);
    watcher.request_stop();
  }
  EXPECT_EQ(code, kExitOk) << err.str();
  const std::string printed = out.str();
  EXPECT_TRUE(
      printed.starts_with("NAME    PATH   PHASE       CLAIMS   PROGRESS   STEP AGE   MESSAGE\n"
                          "cache   -      Completed   -        -          5m\n"
                          "web     copy   BackingUp   1/3      -          27s"))
      << printed;
  // One more line, web's, and no header again.
  const auto lines = std::ranges::count(printed, '\n');
  EXPECT_EQ(lines, 4) << printed;
  EXPECT_TRUE(contains(printed, "\nweb     copy   Recreating   2/3      -          60s"))
      << printed;
  EXPECT_EQ(printed.find("NAME", 1), std::string::npos) << printed;
}

TEST_F(StatusCommandTest, StatusCommand_WatchRefusesJsonAndYaml) {
  const Outcome json = status({.output = "json", .watch = true});
  EXPECT_EQ(json.code, kExitUsage);
  EXPECT_TRUE(contains(json.err, "-w prints table rows")) << json.err;
}

TEST_F(StatusCommandTest, StatusCommand_SaysSoWhenThereIsNothing) {
  EXPECT_EQ(status({.ns = "empty"}).out, "No resize operations found in namespace empty.\n");
  EXPECT_EQ(status({.statefulset = "untouched"}).out,
            "No resize operation on StatefulSet shop/untouched (it has no stsresize.dev "
            "annotation).\n");
  const Outcome json = status({.ns = "empty", .output = "yaml"});
  EXPECT_EQ(json.code, kExitOk);
  EXPECT_TRUE(contains(json.out, "items: []")) << json.out;
}

TEST_F(StatusCommandTest, StatusCommand_UsageErrorsSayWhatToRunInstead) {
  const Outcome bad_output = status({.output = "xml"});
  EXPECT_EQ(bad_output.code, kExitUsage);
  EXPECT_EQ(bad_output.err,
            "stsresize status: --output must be wide, json or yaml (or left out for a table), "
            "not \"xml\"\n");
  const Outcome both = status({.ns = "shop", .all_namespaces = true});
  EXPECT_EQ(both.code, kExitUsage);
  const Outcome name_everywhere = status({.all_namespaces = true, .statefulset = "web"});
  EXPECT_EQ(name_everywhere.code, kExitUsage);
  EXPECT_TRUE(contains(name_everywhere.err, "run `stsresize status -n NS web`"))
      << name_everywhere.err;
  EXPECT_EQ(kube.calls(Verb::List), 0);
  EXPECT_EQ(kube.calls(Verb::Get), 0);
  const Outcome missing = status({.statefulset = "nope"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_TRUE(contains(missing.err, "no StatefulSet nope in namespace shop")) << missing.err;
}

// A namespace is a segment of the request's path: "..", "a/b" would address something else.
TEST_F(StatusCommandTest, StatusCommand_AnInvalidNamespaceIsAUsageErrorAndNothingIsSent) {
  const std::string what_it_is =
      " is not a namespace name (at most 63 lowercase letters, digits and '-', starting and "
      "ending with a letter or digit, e.g. shop)\n";
  for (const std::string& ns :
       std::vector<std::string>{"..", "a/b", "UPPER", "-shop", std::string(64, 'a')}) {
    const Outcome result = status({.ns = ns});
    EXPECT_EQ(result.code, kExitUsage) << ns;
    EXPECT_EQ(result.err, "stsresize status: -n/--namespace: \"" + ns + "\"" + what_it_is);
  }
  const Outcome named = status({.ns = "..", .statefulset = "web"});
  EXPECT_EQ(named.code, kExitUsage);
  EXPECT_EQ(kube.calls(Verb::List), 0);
  EXPECT_EQ(kube.calls(Verb::Get), 0);
}

TEST_F(StatusCommandTest, DescribeCommand_AnInvalidNamespaceIsAUsageErrorAndNothingIsSent) {
  const std::string what_it_is =
      " is not a namespace name (at most 63 lowercase letters, digits and '-', starting and "
      "ending with a letter or digit, e.g. shop)\n";
  const Outcome dots = describe({.target = "../web"});
  EXPECT_EQ(dots.code, kExitUsage);
  EXPECT_EQ(dots.err, "stsresize describe: ../web: \"..\"" + what_it_is);
  const Outcome upper = describe({.target = "Shop/web"});
  EXPECT_EQ(upper.code, kExitUsage);
  EXPECT_EQ(upper.err, "stsresize describe: Shop/web: \"Shop\"" + what_it_is);
  const Outcome flag = describe({.ns = "a.b", .target = "web"});
  EXPECT_EQ(flag.code, kExitUsage);
  EXPECT_EQ(flag.err, "stsresize describe: -n/--namespace: \"a.b\"" + what_it_is);
  EXPECT_EQ(kube.calls(Verb::List), 0);
  EXPECT_EQ(kube.calls(Verb::Get), 0);
}

// A StatefulSet's name is a path segment too.
TEST_F(StatusCommandTest, AnInvalidStatefulSetNameIsAUsageErrorAndNothingIsSent) {
  const std::string what_it_is =
      " is not a StatefulSet name (at most 253 lowercase letters, digits, '-' and '.', starting "
      "and ending with a letter or digit, e.g. web)\n";
  const Outcome listed = status({.ns = "shop", .statefulset = ".."});
  EXPECT_EQ(listed.code, kExitUsage);
  EXPECT_EQ(listed.err, "stsresize status: \"..\"" + what_it_is);
  const Outcome described = describe({.target = "shop/Web_1"});
  EXPECT_EQ(described.code, kExitUsage);
  EXPECT_EQ(described.err, "stsresize describe: shop/Web_1: \"Web_1\"" + what_it_is);
  const Outcome bare = describe({.ns = "shop", .target = "web..0"});
  EXPECT_EQ(bare.code, kExitUsage);
  EXPECT_EQ(kube.calls(Verb::List), 0);
  EXPECT_EQ(kube.calls(Verb::Get), 0);
  const Outcome dotted = describe({.target = "shop/web.v2"});  // dots are fine: looked up
  EXPECT_EQ(dotted.err.find("is not a StatefulSet name"), std::string::npos) << dotted.err;
}

TEST_F(StatusCommandTest, StatusCommand_UnreachableClusterHasItsOwnExitCode) {
  kube.inject({.verb = Verb::List,
               .kind = Kind::StatefulSet,
               .error = KubeError{KubeErrorCode::Unreachable, "connection refused", 0ms}});
  const Outcome result = status({});
  EXPECT_EQ(result.code, kExitClusterUnreachable);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "stsresize status: cannot list statefulsets in namespace shop: no answer from the API "
            "server https://127.0.0.1:6443 (connection refused). Is the cluster up (`kubectl "
            "cluster-info`), and do --kubeconfig / --context name it?\n");
}

TEST_F(StatusCommandTest, StatusCommand_ForbiddenNamesTheRightsNeeded) {
  kube.inject({.verb = Verb::List,
               .kind = Kind::Job,
               .error = KubeError{KubeErrorCode::Forbidden, "jobs.batch is forbidden", 0ms}});
  const Outcome result = status({});
  EXPECT_EQ(result.code, kExitClusterUnreachable);
  EXPECT_TRUE(contains(result.err, "cannot list jobs in namespace shop: forbidden")) << result.err;
  EXPECT_TRUE(contains(result.err, "need get and list on statefulsets")) << result.err;
}

TEST_F(StatusCommandTest, DescribeCommand_ReadsTheStatefulSetItsObjectsAndEvents) {
  const Outcome result = describe({.target = "shop/web"});
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_TRUE(contains(result.out, "Phase:              BackingUp (for 27s")) << result.out;
  EXPECT_TRUE(contains(result.out, "data-web-1-stsresize-backup")) << result.out;
  EXPECT_TRUE(contains(result.out, "data-web-0-stsresize-bak")) << result.out;
  EXPECT_TRUE(contains(result.out, "ScalingDown -> BackingUp")) << result.out;
  EXPECT_FALSE(contains(result.out, "ResizeCompleted")) << "another StatefulSet's event";

  const Outcome by_flag = describe({.ns = "shop", .target = "web"});
  EXPECT_EQ(by_flag.out, result.out);
}

TEST_F(StatusCommandTest, DescribeCommand_WithTheJournalShowsTheSteps) {
  MemoryJournal journal;
  std::vector<JournalRecord> records =
      stsresize::testing::one_claim_copy("cache-0123abcd", "cache");
  ASSERT_TRUE(journal.append(records));
  ASSERT_TRUE(journal.append(stsresize::testing::one_claim_copy("db-0123abcd", "db")));
  const Outcome result = describe({.target = "shop/cache", .journal = "j.db"}, &journal);
  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_TRUE(contains(result.out,
                       "Journal j.db:\n  Operation cache-0123abcd: Completed, copy path, "
                       "16 events"))
      << result.out;
  EXPECT_FALSE(contains(result.out, "db-0123abcd")) << result.out;
}

TEST_F(StatusCommandTest, DescribeCommand_RefusalsSayWhy) {
  const Outcome none = describe({});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_TRUE(contains(none.err, "Run `stsresize describe NS/NAME`")) << none.err;
  const Outcome contradiction = describe({.ns = "billing", .target = "shop/web"});
  EXPECT_EQ(contradiction.code, kExitUsage);
  EXPECT_TRUE(contains(contradiction.err, "-n billing contradicts shop/web")) << contradiction.err;
  const Outcome malformed = describe({.target = "shop/"});
  EXPECT_EQ(malformed.code, kExitUsage);
  const Outcome missing = describe({.target = "shop/nope"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_TRUE(contains(missing.err, "ConfigMap stsresize-nope-definition")) << missing.err;

  kube.inject({.verb = Verb::Get,
               .kind = Kind::StatefulSet,
               .error = KubeError{KubeErrorCode::Unreachable, "timeout", 0ms}});
  EXPECT_EQ(describe({.target = "shop/web"}).code, kExitClusterUnreachable);
}

TEST_F(StatusCommandTest, StatusCommand_AStatefulSetBeingRecreatedShowsFromItsDefinition) {
  kube.put_raw(Kind::ConfigMap, stsresize::testing::definition_config_map_of("db"));

  const Outcome all = status({});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  EXPECT_TRUE(
      contains(all.out,
               "db      -      UpdatingTemplate   -        -          3s         StatefulSet "
               "absent while it is re-created from ConfigMap "
               "stsresize-db-definition\n"))
      << all.out;
  const Outcome one = status({.statefulset = "db"});
  ASSERT_EQ(one.code, kExitOk) << one.err;
  EXPECT_TRUE(contains(one.out, "UpdatingTemplate")) << one.out;

  const Outcome described = describe({.target = "shop/db"});
  ASSERT_EQ(described.code, kExitOk) << described.err;
  EXPECT_TRUE(contains(described.out,
                       "StatefulSet:        absent: being re-created from its definition in "
                       "ConfigMap stsresize-db-definition\n"))
      << described.out;
  EXPECT_TRUE(contains(described.out, "Phase:              UpdatingTemplate")) << described.out;
}

Outcome command_line(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(StatusCli, StatusCli_HelpExplainsColumnsExamplesAndExitCodes) {
  for (const std::string command : {"status", "describe"}) {
    const Outcome help = command_line({command, "--help"});
    EXPECT_EQ(help.code, kExitOk) << command;
    EXPECT_TRUE(contains(help.out, "Examples:")) << help.out;
    EXPECT_TRUE(contains(help.out, "Exit codes:")) << help.out;
    EXPECT_TRUE(contains(help.out, "--kubeconfig")) << help.out;
  }
  EXPECT_TRUE(contains(command_line({"--help"}).out, "describe"));
  // Refused before any credentials are looked for.
  const Outcome bad = command_line({"status", "-o", "table"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_TRUE(contains(bad.err, "--output must be wide, json or yaml")) << bad.err;
  EXPECT_EQ(command_line({"describe"}).code, kExitUsage);
}

TEST(StatusCli, StatusCli_UnusableKubeconfigIsAUsageError) {
  const Outcome result =
      command_line({"status", "--kubeconfig", "/nonexistent/stsresize-kubeconfig"});
  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_TRUE(contains(result.err, "stsresize status: credentials:")) << result.err;
}

}  // namespace
}  // namespace stsresize::cli
