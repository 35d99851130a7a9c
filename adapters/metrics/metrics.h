#pragma once
// What `stsresize run` exports on /metrics, in the Prometheus text format (prometheus-cpp core).
//
// Two kinds of series:
// - events the controller counts as they happen (reconciles, API requests), held in
//   prometheus-cpp families;
// - values that already live elsewhere (queue depth, informer counters, operations by phase,
//   leadership, the process's CPU and memory), read at scrape time through samplers, so the
//   numbers cannot drift from their source and idle scrapes cost nothing between them.
//
// Thread-safe: recording and scraping may happen on any thread.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ports/operation_listener.h"
#include "engine/time.h"

namespace prometheus {
class Registry;
template <typename T>
class Family;
class Counter;
class Histogram;
}  // namespace prometheus

namespace stsresize {

using MetricLabels = std::map<std::string, std::string>;

struct MetricSample {
  MetricLabels labels;
  double value = 0;
};

enum class MetricType { Counter, Gauge };

// Also the reconcilers' OperationListener: operations started and ended by kind, path and
// outcome, their durations and each phase's, the bytes they copied, the time they spent short of
// Ready replicas, and a drain's ordinals drained or cancelled.
class ControllerMetrics final : public OperationListener {
 public:
  ControllerMetrics();
  ~ControllerMetrics();
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // One reconcile of one StatefulSet: `result` is idle, requeue, retry or terminal.
  void reconciled(std::string_view result, Duration took);
  // One request to the API server; `code` 0 when no answer came (connection failure).
  void api_request(std::string_view verb, int code, Duration latency);

  void started(OperationKind kind) override;
  void left(const PhaseLeft& left) override;
  void seen(const OperationSeen& seen) override;
  void ended(const OperationEnded& ended) override;

  // A family whose samples are read from `sample` at every scrape. `name` without the
  // stsresize_ prefix is taken as is (for process_* series).
  void add_sampled(std::string name, std::string help, MetricType type,
                   std::function<std::vector<MetricSample>()> sample);

  // The exposition: every family, text format 0.0.4.
  std::string scrape() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* reconciles_;
  prometheus::Family<prometheus::Histogram>* reconcile_seconds_;
  prometheus::Family<prometheus::Counter>* api_requests_;
  prometheus::Family<prometheus::Histogram>* api_request_seconds_;
  prometheus::Family<prometheus::Counter>* operations_started_;
  prometheus::Family<prometheus::Counter>* operations_ended_;
  prometheus::Family<prometheus::Histogram>* operation_seconds_;
  prometheus::Family<prometheus::Counter>* drain_ordinals_;
  prometheus::Family<prometheus::Histogram>* phase_seconds_;
  prometheus::Family<prometheus::Counter>* copied_bytes_;
  prometheus::Family<prometheus::Counter>* degraded_seconds_;
  // Per operation under way: when it was last seen, and whether it was short of Ready replicas
  // then (the time until it is seen next is counted as it was).
  struct Seen {
    TimePoint at;
    bool short_of_ready = false;
  };
  std::mutex seen_mutex_;
  std::map<std::string, Seen> seen_;
  class Sampled;
  std::vector<std::shared_ptr<Sampled>> sampled_;
};

// An operation's kind as the `kind` label of every series spells it: "resize", "drain",
// "recovery".
std::string kind_label(OperationKind kind);

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_start_time_seconds, read from /proc/self like the Go client's
// process collector, so dashboards written for other operators work unchanged.
void add_process_metrics(ControllerMetrics& metrics);

// The same figures for any process, for benchmarks that watch the controller from outside.
struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // since the epoch
};
// `pid` 0: this process. nullopt when /proc/<pid> cannot be read (the process is gone).
std::optional<ProcessStats> read_process_stats(int pid);

}  // namespace stsresize
