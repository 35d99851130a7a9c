#include "adapters/app/status_view.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "adapters/app/durations.h"
#include "engine/annotations.h"
#include "tests/support/golden.h"
#include "tests/support/replay_samples.h"
#include "tests/support/status_samples.h"

namespace stsresize::cli {
namespace {

using namespace std::chrono_literals;
using stsresize::testing::completed_statefulset;
using stsresize::testing::invalid_statefulset;
using stsresize::testing::kStatusNow;
using stsresize::testing::kStatusStart;
using stsresize::testing::refused_statefulset;
using stsresize::testing::sample_backup_claim;
using stsresize::testing::sample_event;
using stsresize::testing::sample_job;
using stsresize::testing::sample_operation;
using stsresize::testing::sample_statefulset;
using stsresize::testing::statefulset_in;
using stsresize::testing_support::expect_matches_golden;

std::string lower_name(Phase phase) {
  std::string name{to_string(phase)};
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// One StatefulSet per phase an operation can be in (Completed: the last-operation annotation),
// plus a refused request, an unreadable state and one stsresize never touched, spread over two
// namespaces, with the Jobs and backup claims of the BackingUp one.
struct Cluster {
  std::vector<Json> statefulsets;
  std::vector<Json> claims;
  std::vector<Json> jobs;
};

Cluster every_phase() {
  Cluster cluster;
  Duration in_phase = 3s;
  for (Phase phase : kAllPhases) {
    const std::string ns = phase == Phase::Expanding || phase == Phase::Failed ? "billing" : "shop";
    // Doubling, so that the ages stay distinct and after 1970 with every phase there is.
    in_phase = in_phase * 2;
    if (phase == Phase::Completed) {
      cluster.statefulsets.push_back(completed_statefulset("completed", ns));
      continue;
    }
    cluster.statefulsets.push_back(statefulset_in(lower_name(phase), phase, in_phase, ns));
  }
  // In manual mode, a transition that waits for `stsresize advance --approve`.
  Operation awaiting = sample_operation("awaiting", Phase::BackingUp, 20s);
  awaiting.awaiting = AwaitedApproval{Phase::BackingUp, Phase::Recreating, Trigger::StepDone};
  cluster.statefulsets.push_back(with_operation(sample_statefulset("awaiting"), awaiting));
  cluster.statefulsets.push_back(refused_statefulset("refused"));
  cluster.statefulsets.push_back(invalid_statefulset("broken"));
  cluster.statefulsets.push_back(sample_statefulset("untouched"));

  const Operation backing_up = sample_operation("backingup", Phase::BackingUp, 27s);
  cluster.jobs.push_back(sample_job(backing_up, 0, "backup", "succeeded"));
  cluster.jobs.push_back(sample_job(backing_up, 1, "backup", "running", 1));
  cluster.jobs.push_back(sample_job(backing_up, 2, "backup", "running"));
  for (int i = 0; i < 3; ++i) cluster.claims.push_back(sample_backup_claim(backing_up, i, i < 2));
  // The Jobs of another StatefulSet of the same name elsewhere are not this one's.
  cluster.jobs.push_back(sample_job(sample_operation("backingup", Phase::BackingUp, 27s, "other"),
                                    0, "backup", "failed"));
  return cluster;
}

std::vector<StatusRow> rows_of(const Cluster& cluster) {
  return status_rows(cluster.statefulsets, cluster.claims, cluster.jobs);
}

TEST(StatusView, StatusTable_AllNamespacesShowsEveryPhaseFailedRefusedAndCompleted) {
  const std::vector<StatusRow> rows = rows_of(every_phase());
  expect_matches_golden("status_all_namespaces.txt",
                        render_status_table(rows, kStatusNow, {.all_namespaces = true}));
}

TEST(StatusView, StatusTable_WideAddsOperationTriggerTargetAndReplicas) {
  const std::vector<StatusRow> rows = rows_of(every_phase());
  expect_matches_golden(
      "status_wide.txt",
      render_status_table(rows, kStatusNow, {.all_namespaces = true, .wide = true}));
}

TEST(StatusView, StatusTable_OneNamespaceHasNoNamespaceColumn) {
  Cluster cluster;
  cluster.statefulsets = {statefulset_in("web", Phase::Restoring, 95s),
                          statefulset_in("db", Phase::Expanding, 4s),
                          completed_statefulset("cache")};
  const std::string table = render_status_table(rows_of(cluster), kStatusNow, {});
  EXPECT_EQ(table,
            "NAME    PATH     PHASE       CLAIMS   PROGRESS   STEP AGE   MESSAGE\n"
            "cache   -        Completed   -        -          5m\n"
            "db      expand   Expanding   1/3      -          4s\n"
            "web     copy     Restoring   1/3      -          95s\n")
      << table;
}

TEST(StatusView, StatusTable_ProgressIsTheRunningCopiesTogether) {
  Cluster cluster;
  cluster.statefulsets = {statefulset_in("web", Phase::PreCopying, 36s),
                          statefulset_in("db", Phase::Restoring, 4s)};
  std::vector<StatusRow> rows = rows_of(cluster);
  ASSERT_EQ(rows.size(), 2u);
  StatusRow& web = rows[1].name == "web" ? rows[1] : rows[0];
  // Two copies at once, 1 GiB each, at 24 MiB/s each.
  CopyProgress first;
  first.bytes_done = 429496730;  // 40% of 1 GiB
  first.percent = 40;
  first.bytes_per_second = 24.0 * 1024 * 1024;
  CopyProgress second = first;
  second.bytes_done = 536870912;  // 50%
  second.percent = 50;
  const auto running = [](const std::string& name, std::optional<CopyProgress> progress) {
    JobView job;
    job.name = name;
    job.purpose = "pre-copy";
    job.state = "Running";
    job.progress = progress;
    return job;
  };
  web.jobs = {running("data-web-0-stsresize-pre-copy", first),
              running("data-web-1-stsresize-pre-copy", second),
              running("data-web-2-stsresize-pre-copy", std::nullopt)};  // nothing said yet
  const std::string table = render_status_table(rows, kStatusNow, {});
  // Each total from its percentage (rounded down by rsync: taken at 40.5% and 50.5%), 1011.4
  // and 1013.9 MiB; 921.6 MiB of them done at 24 MiB/s each: the longer has 25.1 s left.
  EXPECT_EQ(table,
            "NAME   PATH   PHASE        CLAIMS   PROGRESS                STEP AGE   MESSAGE\n"
            "db     copy   Restoring    1/3      -                       4s\n"
            "web    copy   PreCopying   0/3      45%/2.0Gi,ETA:0:00:25   36s\n")
      << table;
  const Json item = status_document(rows, kStatusNow)["items"][1];
  EXPECT_EQ(item["progress"]["percent"], 45);
  EXPECT_EQ(item["progress"]["bytesTotal"], 2123596470);
  EXPECT_EQ(item["progress"]["etaSeconds"], 25);
  EXPECT_EQ(item["progress"]["stage"], "Copying");
  EXPECT_EQ(item["jobs"][0]["progress"]["text"],
            "40% (409.6 MiB of 1011.4 MiB) at 24.0 MiB/s, about 0:00:25 left");
  EXPECT_TRUE(item["jobs"][2]["progress"].is_null());
}

TEST(StatusView, StatusRow_ClaimsCountTheCurrentPhasesStep) {
  struct Case {
    Phase phase;
    std::optional<int> done;
  };
  const Case cases[] = {{Phase::Pending, std::nullopt},  {Phase::UpdatingTemplate, std::nullopt},
                        {Phase::Planning, std::nullopt}, {Phase::ScalingDown, 0},
                        {Phase::BackingUp, 1},           {Phase::Recreating, 2},
                        {Phase::Restoring, 1},           {Phase::ScalingUp, 3},
                        {Phase::CleaningUp, 3},          {Phase::Expanding, 1},
                        {Phase::ScalingBack, 0},         {Phase::Failed, 1}};
  for (const Case& c : cases) {
    auto row = status_row(statefulset_in("web", c.phase), {}, {});
    ASSERT_TRUE(row) << to_string(c.phase);
    EXPECT_EQ(row->phase, to_string(c.phase));
    EXPECT_EQ(row->claims_done, c.done) << to_string(c.phase);
    EXPECT_EQ(row->claims_total, c.done ? std::optional<int>{3} : std::nullopt)
        << to_string(c.phase);
  }
}

TEST(StatusView, StatusRow_KindsAndMessages) {
  auto failed = status_row(statefulset_in("web", Phase::Failed), {}, {});
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->kind, StatusKind::Failed);
  EXPECT_EQ(failed->message, "copy Job data-web-1-stsresize-restore failed: BackoffLimitExceeded");

  auto refused = status_row(refused_statefulset("web"), {}, {});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, StatusKind::Refused);
  EXPECT_EQ(refused->phase, "Refused");
  EXPECT_EQ(refused->message, "template \"data\": StorageClass \"gold\" does not exist");

  auto completed = status_row(completed_statefulset("web"), {}, {});
  ASSERT_TRUE(completed);
  EXPECT_EQ(completed->kind, StatusKind::Completed);
  EXPECT_EQ(completed->operation_id, "web-5f0c2a91");
  EXPECT_EQ(completed->since, kStatusNow - 5min);

  auto broken = status_row(invalid_statefulset("web"), {}, {});
  ASSERT_TRUE(broken);
  EXPECT_EQ(broken->kind, StatusKind::Invalid);
  EXPECT_NE(broken->message.find("stsresize.dev/state"), std::string::npos) << broken->message;

  EXPECT_FALSE(status_row(sample_statefulset("web"), {}, {}));

  // A Failed label left without its state still shows, with what to do.
  Json labelled = sample_statefulset("web");
  labelled["metadata"]["labels"] = {{"stsresize.dev/failed", "true"}};
  auto orphan_label = status_row(labelled, {}, {});
  ASSERT_TRUE(orphan_label);
  EXPECT_EQ(orphan_label->kind, StatusKind::Failed);
  EXPECT_NE(orphan_label->message.find("remove the label"), std::string::npos);
}

TEST(StatusView, StatusRows_ADefinitionCountsOnlyWhileItsStatefulSetIsAbsent) {
  const std::vector<Json> definitions = {stsresize::testing::definition_config_map_of("db")};
  const std::vector<StatusRow> absent = status_rows({}, {}, {}, definitions);
  ASSERT_EQ(absent.size(), 1u);
  EXPECT_EQ(absent[0].name, "db");
  EXPECT_EQ(absent[0].phase, "UpdatingTemplate");
  EXPECT_EQ(absent[0].message,
            "StatefulSet absent while it is re-created from ConfigMap stsresize-db-definition");

  const std::vector<Json> present = {statefulset_in("db", Phase::UpdatingTemplate)};
  const std::vector<StatusRow> once = status_rows(present, {}, {}, definitions);
  ASSERT_EQ(once.size(), 1u);
  EXPECT_EQ(once[0].message, "");
}

TEST(StatusView, StatusRow_AFailingJobIsTheMessageWhenNothingElseIs) {
  const Operation op = sample_operation("web", Phase::BackingUp);
  const std::vector<Json> jobs = {sample_job(op, 0, "backup", "succeeded"),
                                  sample_job(op, 1, "backup", "running", 2)};
  auto row = status_row(statefulset_in("web", Phase::BackingUp), {}, jobs);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->message, "Job data-web-1-stsresize-backup: Running (2 failed attempts)");
  ASSERT_EQ(row->jobs.size(), 2u);
  EXPECT_EQ(row->jobs[0].state, "Succeeded");
}

TEST(StatusView, StatusJson_IsTheStableMachineSchema) {
  const std::vector<StatusRow> rows = rows_of(every_phase());
  const std::string json = render_status_json(rows, kStatusNow);
  expect_matches_golden("status_all.json", json);

  const Json document = Json::parse(json);
  ASSERT_EQ(document.at("items").size(), std::size(kAllPhases) + 3);  // awaiting, refused, broken
  const Json& items = document.at("items");
  auto found = std::find_if(items.begin(), items.end(),
                            [](const Json& item) { return item.at("name") == "backingup"; });
  ASSERT_NE(found, items.end());
  const Json& backing_up = *found;
  EXPECT_EQ(items.at(0).at("namespace"), "billing");
  EXPECT_EQ(backing_up.at("path"), "copy");
  EXPECT_EQ(backing_up.at("claims"), (Json{{"done", 1}, {"total", 3}}));
  EXPECT_EQ(backing_up.at("stepAgeSeconds"), 384);  // 3s * 2^7: the seventh phase
  EXPECT_EQ(backing_up.at("jobs").size(), 3u);
  EXPECT_EQ(backing_up.at("backupClaims").size(), 3u);
}

TEST(StatusView, StatusYaml_SaysWhatTheJsonSays) {
  const std::vector<StatusRow> rows = rows_of(every_phase());
  const std::string yaml = render_status_yaml(rows, kStatusNow);
  expect_matches_golden("status_all.yaml", yaml);

  // Read back, every scalar is what the JSON has, strings included that look like numbers.
  const YAML::Node node = YAML::Load(yaml);
  const Json json = status_document(rows, kStatusNow);
  ASSERT_EQ(node["items"].size(), json.at("items").size());
  for (std::size_t i = 0; i < json.at("items").size(); ++i) {
    const Json& item = json.at("items").at(i);
    const YAML::Node yitem = node["items"][i];
    EXPECT_EQ(yitem["name"].as<std::string>(), item.at("name").get<std::string>());
    EXPECT_EQ(yitem["message"].as<std::string>(), item.at("message").get<std::string>());
    EXPECT_EQ(yitem["since"].IsNull(), item.at("since").is_null());
  }
  EXPECT_EQ(to_yaml(Json{{"a", "3"}, {"b", 3}, {"c", "true"}, {"d", ""}, {"e", nullptr}}),
            "a: \"3\"\nb: 3\nc: \"true\"\nd: \"\"\ne: null\n");
}

TEST(StatusView, HumanAge_IsKubectls) {
  EXPECT_EQ(human_age(-5s), "0s");
  EXPECT_EQ(human_age(0s), "0s");
  EXPECT_EQ(human_age(119s), "119s");
  EXPECT_EQ(human_age(120s), "2m");
  EXPECT_EQ(human_age(192s), "3m12s");
  EXPECT_EQ(human_age(10min + 59s), "10m");
  EXPECT_EQ(human_age(179min), "179m");
  EXPECT_EQ(human_age(3h), "3h");
  EXPECT_EQ(human_age(2h + 125min), "4h5m");
  EXPECT_EQ(human_age(26h), "26h");
  EXPECT_EQ(human_age(76h), "3d4h");
  EXPECT_EQ(human_age(24h * 12), "12d");
  EXPECT_EQ(human_age(24h * 800), "2y70d");
}

// ---- describe ------------------------------------------------------------------------------

TEST(StatusView, Describe_InProgressShowsClaimsJobsBackupsAndEvents) {
  const Operation op = sample_operation("web", Phase::BackingUp, 27s);
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::BackingUp, 27s);
  input.jobs = {sample_job(op, 0, "backup", "succeeded"),
                sample_job(op, 1, "backup", "running", 1)};
  input.claims = {sample_backup_claim(op, 0, true), sample_backup_claim(op, 1, false)};
  input.events = {
      sample_event("web", "Normal", "PhaseChanged",
                   "operation web-5f0c2a91: ScalingDown -> BackingUp", kStatusNow - 27s),
      sample_event("web", "Normal", "ResizeStarted", "operation web-5f0c2a91: template grew",
                   kStatusStart),
      sample_event("web", "Warning", "Forbidden", "cannot create jobs", kStatusNow - 60s, 3),
  };
  expect_matches_golden("describe_backing_up.txt", render_describe(input, kStatusNow));
}

TEST(StatusView, Describe_ARunningCopySaysWhereItIs) {
  const Operation op = sample_operation("web", Phase::BackingUp, 27s);
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::BackingUp, 27s);
  input.jobs = {sample_job(op, 0, "backup", "succeeded"),
                sample_job(op, 1, "backup", "running", 1)};
  CopyProgress progress;
  progress.bytes_done = 429496730;
  progress.percent = 40;
  progress.bytes_per_second = 24.0 * 1024 * 1024;
  input.progress["data-web-1-stsresize-backup"] = progress;
  const std::string text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("AGE   PROGRESS\n"), std::string::npos) << text;
  EXPECT_NE(text.find("   40% (409.6 MiB of 1011.4 MiB) at 24.0 MiB/s, about 0:00:25 left\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("data-web-0-stsresize-backup"), std::string::npos) << text;
}

// Recreating asks for a source delete before it records it, and pvc-protection keeps a claim
// a pod mounts: SOURCE says what the cluster shows, not what the state recorded.
TEST(StatusView, Describe_SourceSaysKeptOnlyOfAClaimThatIsThereAndNotGoing) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Recreating, 27s);
  auto claim_row = [&](const std::string& claim) {
    const std::string text = render_describe(input, kStatusNow);
    const auto at = text.find("\n  " + claim + " ");
    if (at == std::string::npos) return std::string{"(no row) "} + text;
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  auto source = [](const std::string& uid, bool deleting) {
    Json claim = {{"metadata", {{"name", "data-web-2"}, {"namespace", "shop"}, {"uid", uid}}}};
    if (deleting) claim["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
    return claim;
  };
  // Not read (the sources unknown): as the state says.
  EXPECT_NE(claim_row("data-web-2").find(" kept "), std::string::npos) << claim_row("data-web-2");
  input.sources = std::vector<Json>{source("uid-data-web-2", false)};
  EXPECT_NE(claim_row("data-web-2").find(" kept "), std::string::npos) << claim_row("data-web-2");
  input.sources = std::vector<Json>{source("uid-data-web-2", true)};
  EXPECT_NE(claim_row("data-web-2").find(" deleting "), std::string::npos)
      << claim_row("data-web-2");
  input.sources = std::vector<Json>{source("uid-someone-elses", false)};
  EXPECT_NE(claim_row("data-web-2").find(" replaced "), std::string::npos)
      << claim_row("data-web-2");
  input.sources = std::vector<Json>{};
  EXPECT_NE(claim_row("data-web-2").find(" gone "), std::string::npos) << claim_row("data-web-2");
  EXPECT_NE(claim_row("data-web-0").find(" deleted "), std::string::npos)
      << claim_row("data-web-0");
}

TEST(StatusView, Describe_FailedInRestoringSaysWhereTheDataIsAndHowToResume) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Failed, 5min);
  Operation op = **read_operation(input.statefulset);
  op.failed_in = Phase::Restoring;
  input.statefulset = with_operation(input.statefulset, op);
  const std::string text = render_describe(input, kStatusNow);
  expect_matches_golden("describe_failed.txt", text);
  EXPECT_NE(text.find("Once the cause is fixed, resume it in Restoring, where it failed"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  stsresize advance shop/web --retry\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find("get pvc -l stsresize.dev/operation=web-5f0c2a91,stsresize.dev/purpose=backup"),
      std::string::npos);
}

// What lost-volume recoveries left: each recovered claim, the volume lost with its node, and
// the command to delete those volumes once nothing is to be salvaged.
TEST(StatusView, Describe_ListsRecoveredClaimsAndHowToDeleteTheirLostVolumes) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Completed, 5min);
  std::string text = render_describe(input, kStatusNow);
  EXPECT_EQ(text.find("Recovered replicas"), std::string::npos) << text;
  input.recovered.push_back(
      Json{{"metadata",
            {{"name", "data-web-1"},
             {"namespace", "shop"},
             {"annotations", {{std::string{kRecoveredFromAnnotation}, "pvc-lost-1"}}}}}});
  text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("Recovered replicas"), std::string::npos) << text;
  EXPECT_NE(text.find("data-web-1   pvc-lost-1"), std::string::npos) << text;
  EXPECT_NE(text.find("kubectl delete pv pvc-lost-1\n"), std::string::npos) << text;
}

// A drain: its ordinals, their claims, cleanup pods and what became of each; failed, what is
// kept and how to drain the rest.
TEST(StatusView, Describe_ADrainShowsItsOrdinalsAndFailedSaysTheClaimsAreKept) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Draining, 5min);
  std::string text = render_describe(input, kStatusNow);
  expect_matches_golden("describe_drain.txt", text);
  EXPECT_NE(text.find("Trigger:"), std::string::npos) << text;
  EXPECT_NE(text.find("scale-down (drain 4,3)"), std::string::npos) << text;
  EXPECT_NE(text.find("4         data-web-4   web-4         cleanup Succeeded"), std::string::npos)
      << text;
  EXPECT_NE(text.find("3         data-web-3   web-3         cleanup running"), std::string::npos)
      << text;
  Operation op = **read_operation(input.statefulset);
  op.phase = Phase::Failed;
  op.failure = "cleanup pod web-3 restarted 6 times (limit 5)";
  op.drains[1].cancelled = "the drain failed: cleanup pod web-3 restarted 6 times (limit 5)";
  input.statefulset = with_operation(input.statefulset, op);
  text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("Every claim not drained is kept."), std::string::npos) << text;
  EXPECT_NE(text.find("drain what is left as a new operation:\n  stsresize advance shop/web "
                      "--retry\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("backup claim"), std::string::npos) << text;
}

TEST(StatusView, Describe_FailedWithoutTheFailedPhaseRecordedSaysItIsNotResumed) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Failed, 5min);
  std::string text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("The phase it failed in is not recorded"), std::string::npos) << text;
  EXPECT_EQ(text.find("--retry"), std::string::npos) << text;
  Operation op = **read_operation(input.statefulset);
  op.failed_in = Phase::Recreating;
  input.statefulset = with_operation(input.statefulset, op);
  text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("It failed in Recreating, which is not resumed in place"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("--retry"), std::string::npos) << text;
}

TEST(StatusView, Describe_FailedWithItsSourcesIntactSaysHowToRetry) {
  DescribeInput input;
  input.statefulset = statefulset_in("web", Phase::Failed, 5min);
  Operation op = **read_operation(input.statefulset);
  for (ClaimPlan& claim : op.claims) {
    claim.source_deleted = false;
    claim.recreated_uid.clear();
    claim.restore_verified.reset();
  }
  input.statefulset = with_operation(input.statefulset, op);
  const std::string text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("Once the cause is fixed, start it again as a new operation:\n  "
                      "stsresize advance shop/web --retry\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("backup claim:"), std::string::npos) << text;
}

TEST(StatusView, AwaitingApproval_TheTransitionAndTheCommandInEveryView) {
  Operation op = sample_operation("web", Phase::ScalingDown, 20s);
  op.awaiting = AwaitedApproval{Phase::ScalingDown, Phase::BackingUp, Trigger::StepDone};
  op.warning = "2 of 3 pods still running";
  auto row = status_row(with_operation(sample_statefulset("web"), op), {}, {});
  ASSERT_TRUE(row);
  EXPECT_EQ(row->kind, StatusKind::InProgress);
  EXPECT_EQ(row->awaiting_approval, "ScalingDown -> BackingUp");
  EXPECT_EQ(row->message,
            "awaiting approval of ScalingDown -> BackingUp: run `stsresize advance shop/web "
            "--approve`; 2 of 3 pods still running");
  EXPECT_EQ(status_document(std::vector{*row}, kStatusNow)["items"][0]["awaitingApproval"],
            "ScalingDown -> BackingUp");

  op.awaiting.reset();
  auto moving = status_row(with_operation(sample_statefulset("web"), op), {}, {});
  ASSERT_TRUE(moving);
  EXPECT_EQ(moving->awaiting_approval, "");
  EXPECT_EQ(moving->message, "2 of 3 pods still running");
  EXPECT_TRUE(
      status_document(std::vector{*moving}, kStatusNow)["items"][0]["awaitingApproval"].is_null());
}

TEST(StatusView, Describe_AwaitingApprovalSaysWhatToRun) {
  DescribeInput input;
  Operation op = sample_operation("web", Phase::BackingUp, 20s);
  op.awaiting = AwaitedApproval{Phase::BackingUp, Phase::Recreating, Trigger::StepDone};
  input.statefulset = with_operation(sample_statefulset("web"), op);
  expect_matches_golden("describe_awaiting.txt", render_describe(input, kStatusNow));
}

TEST(StatusView, Describe_RefusedSaysHowToCorrectTheRequest) {
  DescribeInput input;
  input.statefulset = refused_statefulset("web");
  expect_matches_golden("describe_refused.txt", render_describe(input, kStatusNow));
}

TEST(StatusView, Describe_WithTheJournalShowsEveryPhaseInOrderAndEveryRecord) {
  DescribeInput input;
  input.statefulset = completed_statefulset("web");
  input.journal = "journal.db";
  input.journal_records = stsresize::testing::one_claim_copy();
  const std::string text = render_describe(input, kStatusNow);
  expect_matches_golden("describe_journal.txt", text);

  std::size_t at = 0;
  for (std::string_view phase : {"Planning", "ScalingDown", "BackingUp", "Recreating", "Restoring",
                                 "ScalingUp", "CleaningUp", "Completed"}) {
    const std::size_t next = text.find("    " + std::string{phase} + " ", at);
    ASSERT_NE(next, std::string::npos) << phase << " not after offset " << at << ":\n" << text;
    at = next;
  }
}

TEST(StatusView, Describe_CompletedNamesWhatASkippedCleanupKept) {
  const Operation op = sample_operation("web", Phase::Completed, 5min);
  DescribeInput input;
  input.statefulset = completed_statefulset("web");
  input.claims = {sample_backup_claim(op, 0, true), sample_backup_claim(op, 1, true)};
  input.jobs = {sample_job(op, 1, "restore", "succeeded")};
  const std::string text = render_describe(input, kStatusNow);
  expect_matches_golden("describe_completed_kept.txt", text);
  EXPECT_NE(text.find("Kept by operation web-5f0c2a91 (its cleanup was skipped): 2 claims and 1 "
                      "Job, listed below."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  kubectl -n shop delete pvc,job -l stsresize.dev/operation=web-5f0c2a91\n"),
            std::string::npos)
      << text;

  // Nothing of the operation left (a cleanup that finished): no such note.
  input.claims.clear();
  input.jobs.clear();
  EXPECT_EQ(render_describe(input, kStatusNow).find("Kept by operation"), std::string::npos);
}

TEST(StatusView, Describe_WithoutOperationStillShowsEvents) {
  DescribeInput input;
  input.statefulset = sample_statefulset("web");
  input.journal = "journal.db";
  const std::string text = render_describe(input, kStatusNow);
  EXPECT_NE(text.find("Status:             no resize operation\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Journal journal.db: no records of this StatefulSet\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Events: <none>\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace stsresize::cli
