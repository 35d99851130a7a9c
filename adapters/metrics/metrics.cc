#include "adapters/metrics/metrics.h"

#include <algorithm>
#include <cctype>

#include <dirent.h>
#include <unistd.h>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <fstream>
#include <mutex>
#include <sstream>

namespace stsresize {

namespace {

double seconds(Duration d) {
  return std::chrono::duration<double>(d).count();
}

// Reconciles run from a millisecond (idle) to a minute (many steps back to back); API calls
// from a millisecond to the 30 s read timeout.
const prometheus::Histogram::BucketBoundaries kReconcileBuckets{0.001, 0.005, 0.025, 0.1, 0.5, 1,
                                                                2.5,   5,     10,    30,  60};
const prometheus::Histogram::BucketBoundaries kRequestBuckets{
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

}  // namespace

class ControllerMetrics::Sampled {
 public:
  Sampled(std::string name, std::string help, MetricType type,
          std::function<std::vector<MetricSample>()> sample)
      : name_(std::move(name)), help_(std::move(help)), type_(type), sample_(std::move(sample)) {}

  prometheus::MetricFamily collect() const {
    prometheus::MetricFamily family;
    family.name = name_;
    family.help = help_;
    family.type = type_ == MetricType::Counter ? prometheus::MetricType::Counter
                                               : prometheus::MetricType::Gauge;
    for (const MetricSample& sample : sample_()) {
      prometheus::ClientMetric metric;
      for (const auto& [key, value] : sample.labels) metric.label.push_back({key, value});
      if (type_ == MetricType::Counter) {
        metric.counter.value = sample.value;
      } else {
        metric.gauge.value = sample.value;
      }
      family.metric.push_back(std::move(metric));
    }
    return family;
  }

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::function<std::vector<MetricSample>()> sample_;
};

ControllerMetrics::ControllerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      reconciles_(&prometheus::BuildCounter()
                       .Name("stsresize_reconciles_total")
                       .Help("Reconciles of StatefulSets, by result (idle, requeue, retry, "
                             "terminal).")
                       .Register(*registry_)),
      reconcile_seconds_(&prometheus::BuildHistogram()
                              .Name("stsresize_reconcile_duration_seconds")
                              .Help("Time one reconcile took, all steps it ran included.")
                              .Register(*registry_)),
      api_requests_(&prometheus::BuildCounter()
                         .Name("stsresize_api_requests_total")
                         .Help("Requests to the Kubernetes API server, by verb and HTTP code "
                               "(0: no answer).")
                         .Register(*registry_)),
      api_request_seconds_(&prometheus::BuildHistogram()
                                .Name("stsresize_api_request_duration_seconds")
                                .Help("Latency of requests to the Kubernetes API server, by verb "
                                      "(for watches: until the response headers).")
                                .Register(*registry_)),
      operations_started_(&prometheus::BuildCounter()
                               .Name("stsresize_operations_started_total")
                               .Help("Operations begun, by kind (resize, drain, recovery); the "
                                     "path is known only once planned: see "
                                     "stsresize_operations_ended_total.")
                               .Register(*registry_)),
      operations_ended_(&prometheus::BuildCounter()
                             .Name("stsresize_operations_ended_total")
                             .Help("Operations ended, by kind, path (expand, copy: two copies, "
                                   "rebind: one; none: a drain, a recovery, or a resize ended "
                                   "before it was planned) and outcome (completed, failed, "
                                   "aborted).")
                             .Register(*registry_)),
      operation_seconds_(&prometheus::BuildHistogram()
                              .Name("stsresize_operation_duration_seconds")
                              .Help("Time from an operation's start to its end, by kind, path "
                                    "and outcome.")
                              .Register(*registry_)),
      drain_ordinals_(&prometheus::BuildCounter()
                           .Name("stsresize_drain_ordinals_total")
                           .Help("Ordinals of ended drains, by result: drained (claims deleted "
                                 "after the cleanup pod Succeeded) or cancelled (claims kept).")
                           .Register(*registry_)),
      phase_seconds_(&prometheus::BuildHistogram()
                          .Name("stsresize_phase_duration_seconds")
                          .Help("Time operations spent in a phase, by kind and phase, observed "
                                "when they leave it.")
                          .Register(*registry_)),
      copied_bytes_(&prometheus::BuildCounter()
                         .Name("stsresize_copied_bytes_total")
                         .Help("Bytes copied and verified equal to their source by ended "
                               "operations, by kind and path (each verified copy counts its "
                               "tree's bytes: the two-copy path counts every claim twice).")
                         .Register(*registry_)),
      degraded_seconds_(&prometheus::BuildCounter()
                             .Name("stsresize_operation_degraded_seconds_total")
                             .Help("Time operations under way spent with fewer Ready replicas "
                                   "than a resize started with (a drain or a recovery: than "
                                   "spec.replicas), by kind; counted up to each reconcile that "
                                   "sees the StatefulSet.")
                             .Register(*registry_)) {}

ControllerMetrics::~ControllerMetrics() = default;

void ControllerMetrics::reconciled(std::string_view result, Duration took) {
  const std::string label{result};
  reconciles_->Add({{"result", label}}).Increment();
  reconcile_seconds_->Add({}, kReconcileBuckets).Observe(seconds(took));
}

void ControllerMetrics::api_request(std::string_view verb, int code, Duration latency) {
  const std::string verb_label{verb};
  api_requests_->Add({{"verb", verb_label}, {"code", std::to_string(code)}}).Increment();
  api_request_seconds_->Add({{"verb", verb_label}}, kRequestBuckets).Observe(seconds(latency));
}

namespace {

std::string lowercase(std::string_view text) {
  std::string out{text};
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// From a second to a day: a drain's cleanup or an expansion is quick, a copy of hundreds of GiB
// takes hours.
const prometheus::Histogram::BucketBoundaries kOperationBuckets{
    1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400};

}  // namespace

std::string kind_label(OperationKind kind) {
  return lowercase(to_string(kind));
}

void ControllerMetrics::started(OperationKind kind) {
  operations_started_->Add({{"kind", kind_label(kind)}}).Increment();
}

void ControllerMetrics::left(const PhaseLeft& left) {
  phase_seconds_
      ->Add({{"kind", kind_label(left.kind)}, {"phase", std::string{to_string(left.phase)}}},
            kOperationBuckets)
      .Observe(seconds(left.took));
}

void ControllerMetrics::seen(const OperationSeen& seen) {
  const bool short_of_ready = seen.ready < seen.wanted;
  double add = 0;
  {
    std::lock_guard lock{seen_mutex_};
    auto [at, first] = seen_.try_emplace(seen.id, Seen{seen.now, short_of_ready});
    if (!first) {
      if (at->second.short_of_ready && seen.now > at->second.at) {
        add = seconds(std::chrono::duration_cast<Duration>(seen.now - at->second.at));
      }
      at->second = Seen{std::max(seen.now, at->second.at), short_of_ready};
    }
  }
  // Always present once an operation was seen, so that rate() has a series from its start.
  degraded_seconds_->Add({{"kind", kind_label(seen.kind)}}).Increment(add);
}

void ControllerMetrics::ended(const OperationEnded& ended) {
  const std::string outcome = ended.aborted ? "aborted" : lowercase(to_string(ended.outcome));
  const std::string kind = kind_label(ended.kind);
  const std::string path =
      ended.path == Path::Undecided ? std::string{"none"} : lowercase(to_string(ended.path));
  const MetricLabels labels{{"kind", kind}, {"path", path}, {"outcome", outcome}};
  operations_ended_->Add(labels).Increment();
  operation_seconds_->Add(labels, kOperationBuckets).Observe(seconds(ended.took));
  copied_bytes_->Add({{"kind", kind}, {"path", path}})
      .Increment(static_cast<double>(ended.bytes_copied));
  {
    std::lock_guard lock{seen_mutex_};
    seen_.erase(ended.id);
  }
  if (ended.kind == OperationKind::Drain) {
    drain_ordinals_->Add({{"result", "drained"}}).Increment(ended.ordinals_drained);
    drain_ordinals_->Add({{"result", "cancelled"}}).Increment(ended.ordinals_cancelled);
  }
}

void ControllerMetrics::add_sampled(std::string name, std::string help, MetricType type,
                                    std::function<std::vector<MetricSample>()> sample) {
  sampled_.push_back(
      std::make_shared<Sampled>(std::move(name), std::move(help), type, std::move(sample)));
}

std::string ControllerMetrics::scrape() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (const auto& sampled : sampled_) families.push_back(sampled->collect());
  std::ostringstream out;
  prometheus::TextSerializer{}.Serialize(out, families);
  return out.str();
}

std::optional<ProcessStats> read_process_stats(int pid) {
  const std::string dir = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  std::ifstream stat_file(dir + "/stat");
  std::string line;
  if (!stat_file || !std::getline(stat_file, line)) return std::nullopt;
  // The command name (field 2) may contain spaces and parentheses: fields start after the
  // last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> values;
  for (std::string field; fields >> field;) values.push_back(field);
  // values[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
  if (values.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  ProcessStats stats;
  try {
    stats.cpu_seconds = (std::stod(values[11]) + std::stod(values[12])) / ticks;
    stats.virtual_bytes = std::stod(values[20]);
    stats.resident_bytes = std::stod(values[21]) * page;
    const double started_after_boot = std::stod(values[19]) / ticks;
    std::ifstream stat_all("/proc/stat");
    for (std::string key; stat_all >> key;) {
      if (key == "btime") {
        double boot = 0;
        stat_all >> boot;
        stats.start_time_seconds = boot + started_after_boot;
        break;
      }
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return stats;
}

namespace {

double open_fds() {
  double count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (const dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
    return count - 1;  // the directory stream's own descriptor
  }
  return 0;
}

}  // namespace

void add_process_metrics(ControllerMetrics& metrics) {
  auto one = [](auto read) {
    return [read]() -> std::vector<MetricSample> {
      auto stats = read_process_stats(0);
      if (!stats) return {};
      return {MetricSample{{}, read(*stats)}};
    };
  };
  metrics.add_sampled("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", MetricType::Counter,
                      one([](const ProcessStats& s) { return s.cpu_seconds; }));
  metrics.add_sampled("process_resident_memory_bytes", "Resident memory size in bytes.",
                      MetricType::Gauge,
                      one([](const ProcessStats& s) { return s.resident_bytes; }));
  metrics.add_sampled("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                      MetricType::Gauge,
                      one([](const ProcessStats& s) { return s.virtual_bytes; }));
  metrics.add_sampled("process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                      one([](const ProcessStats& s) { return s.start_time_seconds; }));
  metrics.add_sampled("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                      [] {
                        return std::vector<MetricSample>{{{}, open_fds()}};
                      });
}

}  // namespace stsresize
