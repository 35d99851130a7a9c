#include "adapters/metrics/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

namespace stsresize {
namespace {

// The value of the first sample line starting with `series` (name and labels as exposed).
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

TEST(ControllerMetrics_Counts, ReconcilesByResultAndRequestsByVerbAndCode) {
  ControllerMetrics metrics;
  metrics.reconciled("idle", std::chrono::milliseconds{2});
  metrics.reconciled("idle", std::chrono::milliseconds{3});
  metrics.reconciled("retry", std::chrono::milliseconds{40});
  metrics.api_request("get", 200, std::chrono::milliseconds{4});
  metrics.api_request("update", 409, std::chrono::milliseconds{9});
  metrics.api_request("get", 0, std::chrono::milliseconds{5000});
  const std::string text = metrics.scrape();
  EXPECT_EQ(sample(text, R"(stsresize_reconciles_total{result="idle"})"), 2);
  EXPECT_EQ(sample(text, R"(stsresize_reconciles_total{result="retry"})"), 1);
  EXPECT_EQ(sample(text, R"(stsresize_api_requests_total{code="409",verb="update"})"), 1);
  EXPECT_EQ(sample(text, R"(stsresize_api_requests_total{code="0",verb="get"})"), 1);
  EXPECT_EQ(sample(text, R"(stsresize_reconcile_duration_seconds_count)"), 3);
  EXPECT_EQ(sample(text, R"(stsresize_api_request_duration_seconds_count{verb="get"})"), 2);
  EXPECT_EQ(sample(text, R"(stsresize_api_request_duration_seconds_bucket{verb="get",le="0.005"})"),
            1);
  EXPECT_NE(text.find("# TYPE stsresize_reconciles_total counter"), std::string::npos);
}

TEST(ControllerMetrics_Operations, StartedAndEndedByKindAndOutcomeWithDurationsAndDrainOrdinals) {
  ControllerMetrics metrics;
  OperationListener& listener = metrics;
  listener.started(OperationKind::Drain);
  listener.started(OperationKind::Drain);
  listener.started(OperationKind::Resize);
  listener.ended({OperationKind::Drain, Phase::Completed, false, std::chrono::seconds{40}, 2, 1,
                  "d-1", Path::Undecided, 0});
  listener.ended({OperationKind::Drain, Phase::Failed, true, std::chrono::seconds{3}, 0, 1, "d-2",
                  Path::Undecided, 0});
  listener.ended({OperationKind::Resize, Phase::Failed, false, std::chrono::hours{2}, 0, 0, "web-1",
                  Path::Rebind, 3 << 20});
  const std::string text = metrics.scrape();
  EXPECT_EQ(sample(text, R"(stsresize_operations_started_total{kind="drain"})"), 2);
  EXPECT_EQ(sample(text, R"(stsresize_operations_started_total{kind="resize"})"), 1);
  EXPECT_EQ(
      sample(text,
             R"(stsresize_operations_ended_total{kind="drain",outcome="completed",path="none"})"),
      1);
  EXPECT_EQ(
      sample(text,
             R"(stsresize_operations_ended_total{kind="drain",outcome="aborted",path="none"})"),
      1);
  EXPECT_EQ(
      sample(text,
             R"(stsresize_operations_ended_total{kind="resize",outcome="failed",path="rebind"})"),
      1);
  EXPECT_EQ(sample(text, R"(stsresize_drain_ordinals_total{result="drained"})"), 2);
  EXPECT_EQ(sample(text, R"(stsresize_drain_ordinals_total{result="cancelled"})"), 2);
  EXPECT_EQ(
      sample(
          text,
          R"(stsresize_operation_duration_seconds_bucket{kind="drain",outcome="completed",path="none",le="60"})"),
      1);
  EXPECT_EQ(
      sample(
          text,
          R"(stsresize_operation_duration_seconds_bucket{kind="drain",outcome="completed",path="none",le="15"})"),
      0);
  EXPECT_EQ(
      sample(
          text,
          R"(stsresize_operation_duration_seconds_sum{kind="resize",outcome="failed",path="rebind"})"),
      7200);
}

TEST(ControllerMetrics_Operations, PhasesBytesCopiedAndTimeShortOfReadyReplicas) {
  ControllerMetrics metrics;
  OperationListener& listener = metrics;
  using std::chrono::seconds;
  listener.left({OperationKind::Resize, Phase::BackingUp, seconds{90}});
  listener.left({OperationKind::Resize, Phase::BackingUp, seconds{10}});
  listener.left({OperationKind::Drain, Phase::Draining, seconds{4}});
  const TimePoint t0{seconds{1'000'000}};
  // web-1: 3 Ready of 3, then 0 of 3 for 50 s, 2 of 3 for 20 s, then 3 of 3 again.
  listener.seen({OperationKind::Resize, "web-1", 3, 3, t0});
  listener.seen({OperationKind::Resize, "web-1", 0, 3, t0 + seconds{10}});
  listener.seen({OperationKind::Resize, "web-1", 2, 3, t0 + seconds{60}});
  listener.seen({OperationKind::Resize, "web-1", 3, 3, t0 + seconds{80}});
  listener.seen({OperationKind::Resize, "web-1", 3, 3, t0 + seconds{500}});
  // A recovery seen short once only: nothing to count yet.
  listener.seen({OperationKind::Recovery, "db-2", 1, 2, t0});
  listener.ended({OperationKind::Resize, Phase::Completed, false, seconds{600}, 0, 0, "web-1",
                  Path::Copy, 5'000});
  // Seen again after its end (a stale reconcile): counted from scratch, not from t0 + 500 s.
  listener.seen({OperationKind::Resize, "web-1", 0, 3, t0 + seconds{900}});
  const std::string text = metrics.scrape();
  EXPECT_EQ(
      sample(text, R"(stsresize_phase_duration_seconds_count{kind="resize",phase="BackingUp"})"),
      2);
  EXPECT_EQ(
      sample(text, R"(stsresize_phase_duration_seconds_sum{kind="resize",phase="BackingUp"})"),
      100);
  EXPECT_EQ(sample(text, R"(stsresize_phase_duration_seconds_sum{kind="drain",phase="Draining"})"),
            4);
  EXPECT_EQ(sample(text, R"(stsresize_copied_bytes_total{kind="resize",path="copy"})"), 5000);
  EXPECT_EQ(
      sample(text,
             R"(stsresize_operations_ended_total{kind="resize",outcome="completed",path="copy"})"),
      1);
  EXPECT_EQ(sample(text, R"(stsresize_operation_degraded_seconds_total{kind="resize"})"), 70);
  EXPECT_EQ(sample(text, R"(stsresize_operation_degraded_seconds_total{kind="recovery"})"), 0);
}

TEST(ControllerMetrics_Sampled, ReadAtEveryScrapeFromTheirSource) {
  ControllerMetrics metrics;
  int depth = 3;
  metrics.add_sampled("stsresize_workqueue_depth", "Keys waiting.", MetricType::Gauge, [&] {
    return std::vector<MetricSample>{{{}, static_cast<double>(depth)}};
  });
  metrics.add_sampled(
      "stsresize_watch_restarts_total", "Watches restarted.", MetricType::Counter, [] {
        return std::vector<MetricSample>{{{{"kind", "StatefulSet"}}, 4}, {{{"kind", "Pod"}}, 1}};
      });
  EXPECT_EQ(sample(metrics.scrape(), "stsresize_workqueue_depth"), 3);
  depth = 7;
  const std::string text = metrics.scrape();
  EXPECT_EQ(sample(text, "stsresize_workqueue_depth"), 7);
  EXPECT_EQ(sample(text, R"(stsresize_watch_restarts_total{kind="StatefulSet"})"), 4);
  EXPECT_NE(text.find("# TYPE stsresize_watch_restarts_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE stsresize_workqueue_depth gauge"), std::string::npos);
}

TEST(ControllerMetrics_Process, CpuMemoryAndFdsOfThisProcess) {
  ControllerMetrics metrics;
  add_process_metrics(metrics);
  const std::string text = metrics.scrape();
  auto rss = sample(text, "process_resident_memory_bytes");
  ASSERT_TRUE(rss);
  EXPECT_GT(*rss, 1024 * 1024);  // a gtest binary is more than a megabyte resident
  auto fds = sample(text, "process_open_fds");
  ASSERT_TRUE(fds);
  EXPECT_GE(*fds, 3);
  auto start = sample(text, "process_start_time_seconds");
  ASSERT_TRUE(start);
  EXPECT_GT(*start, 1.7e9);  // after 2023
  ASSERT_TRUE(sample(text, "process_cpu_seconds_total"));
}

TEST(ReadProcessStats, AnotherProcessAndAMissingOne) {
  auto self = read_process_stats(static_cast<int>(getpid()));
  ASSERT_TRUE(self);
  EXPECT_GT(self->resident_bytes, 0);
  EXPECT_FALSE(read_process_stats(999'999'999));
}

}  // namespace
}  // namespace stsresize
