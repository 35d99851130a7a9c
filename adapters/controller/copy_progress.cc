#include "adapters/controller/copy_progress.h"

#include <set>

#include "adapters/app/logging.h"
#include "engine/k8s_objects.h"
#include "engine/vocabulary.h"

namespace stsresize {
namespace {

// The container of every copy Job (engine/copy_job.cc build_job).
constexpr std::string_view kCopyContainer = "copy";

std::string text_at(const Json& object, std::initializer_list<std::string_view> path) {
  const Json* at = &object;
  for (std::string_view key : path) {
    if (!at->is_object()) return {};
    const auto found = at->find(std::string{key});
    if (found == at->end()) return {};
    at = &*found;
  }
  return at->is_string() ? at->get<std::string>() : std::string{};
}

bool is_copy_purpose(std::string_view purpose) {
  return purpose == kBackupPurpose || purpose == kRestorePurpose || purpose == kPreCopyPurpose;
}

}  // namespace

std::vector<RunningCopy> running_copies(const std::vector<Json>& pods) {
  std::vector<RunningCopy> out;
  for (const Json& pod : pods) {
    RunningCopy copy;
    copy.purpose = text_at(pod, {"metadata", "labels", kPurposeLabel});
    copy.job = text_at(pod, {"metadata", "labels", "job-name"});
    if (!is_copy_purpose(copy.purpose) || copy.job.empty() ||
        text_at(pod, {"status", "phase"}) != "Running") {
      continue;
    }
    copy.ns = text_at(pod, {"metadata", "namespace"});
    copy.pod = text_at(pod, {"metadata", "name"});
    copy.statefulset_label = text_at(pod, {"metadata", "labels", kStatefulSetLabel});
    const Json* volumes = pod.contains("spec") ? &pod.at("spec") : nullptr;
    if (volumes != nullptr && volumes->contains("volumes") && volumes->at("volumes").is_array()) {
      for (const Json& volume : volumes->at("volumes")) {
        if (text_at(volume, {"name"}) == "source") {
          copy.claim = text_at(volume, {"persistentVolumeClaim", "claimName"});
        }
      }
    }
    if (copy.ns.empty() || copy.pod.empty()) continue;
    out.push_back(std::move(copy));
  }
  return out;
}

KubeResult<std::optional<CopyProgress>> read_copy_progress(PodLogs& logs, const RunningCopy& copy,
                                                           int tail_lines) {
  auto log = logs.tail({Kind::Pod, copy.ns, copy.pod}, std::string{kCopyContainer}, tail_lines);
  if (!log) return std::unexpected(log.error());
  return parse_copy_progress(*log);
}

CopyProgressWatcher::CopyProgressWatcher(Kubernetes& reads, PodLogs& logs, EventRecorder& events,
                                         CopyProgressOptions options, std::function<bool()> active)
    : reads_(reads),
      logs_(logs),
      events_(events),
      options_(std::move(options)),
      active_(std::move(active)) {}

CopyProgressWatcher::~CopyProgressWatcher() {
  stop();
}

void CopyProgressWatcher::start() {
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) {
    std::mutex sleep_mutex;
    while (!stop.stop_requested()) {
      {
        std::unique_lock lock(sleep_mutex);
        wake_.wait_for(lock, stop, options_.interval, [] { return false; });
      }
      if (stop.stop_requested()) break;
      if (active_()) poll_once();
    }
  });
}

void CopyProgressWatcher::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void CopyProgressWatcher::poll_once() {
  // Every pod of the watched namespaces from the cache (a list without a selector: no request).
  auto pods = reads_.list(Kind::Pod, options_.ns);
  if (!pods) {
    logging::debug("copy progress: listing pods failed", {{"error", pods.error().message}});
    return;
  }
  std::set<std::string> seen;
  for (const RunningCopy& running : running_copies(pods->items)) {
    const std::string key = running.ns + "/" + running.pod;
    auto progress = read_copy_progress(logs_, running, options_.tail_lines);
    if (!progress) {
      logging::debug("copy progress: reading the log failed",
                     {{"pod", key}, {"error", progress.error().message}});
      continue;
    }
    if (!*progress) continue;  // rsync has not said anything yet
    Copy copy;
    {
      std::lock_guard lock(mutex_);
      if (const auto known = copies_.find(key); known != copies_.end()) copy = known->second;
    }
    if (copy.statefulset.empty()) {
      // The full name is on the Job (labels may be shortened), in the cache.
      auto job = reads_.get({Kind::Job, running.ns, running.job});
      if (!job) continue;
      copy.statefulset = text_at(*job, {"metadata", "annotations", kStatefulSetLabel});
      if (copy.statefulset.empty()) continue;
    }
    copy.ns = running.ns;
    copy.job = running.job;
    copy.claim = running.claim;
    copy.purpose = running.purpose;
    copy.progress = **progress;
    // A long pass's line leaves the end of the log read: the pass is the last one seen.
    if (copy.progress.pre_copy_pass == 0 && copy.pass_reported > 0) {
      copy.progress.pre_copy_pass = copy.pass_reported;
    }
    seen.insert(key);

    // An Event at each tenth reached (per pre-copy pass), and when the proof begins; none for
    // 0%, which says nothing.
    if (copy.progress.pre_copy_pass != copy.pass_reported) {
      copy.pass_reported = copy.progress.pre_copy_pass;
      copy.tenth_reported = -1;
    }
    const int tenth = copy.progress.tenth();
    if (tenth > copy.tenth_reported && tenth > 0) {
      events_.record({Kind::StatefulSet, copy.ns, copy.statefulset}, EventSeverity::Normal,
                     "CopyProgress",
                     copy.purpose + " " + copy.claim + ": " + format_copy_progress(copy.progress));
    }
    copy.tenth_reported = std::max(copy.tenth_reported, tenth);
    std::lock_guard lock(mutex_);
    copies_[key] = std::move(copy);
  }
  std::lock_guard lock(mutex_);
  std::erase_if(copies_, [&](const auto& entry) { return !seen.contains(entry.first); });
}

std::map<std::string, CopyProgressWatcher::Copy> CopyProgressWatcher::copies() const {
  std::lock_guard lock(mutex_);
  return copies_;
}

void CopyProgressWatcher::export_metrics(ControllerMetrics& metrics) {
  // One set per copy running; a copy that ends leaves the series.
  const auto sample = [this](auto value) {
    return [this, value] {
      std::vector<MetricSample> samples;
      for (const auto& [uid, copy] : copies()) {
        const std::optional<double> v = value(copy.progress);
        if (!v) continue;
        samples.push_back({{{"namespace", copy.ns},
                            {"statefulset", copy.statefulset},
                            {"claim", copy.claim},
                            {"purpose", copy.purpose}},
                           *v});
      }
      return samples;
    };
  };
  metrics.add_sampled("stsresize_copy_progress_bytes",
                      "Bytes a running copy has gone through (copied or found equal), from rsync.",
                      MetricType::Gauge, sample([](const CopyProgress& p) -> std::optional<double> {
                        return static_cast<double>(p.bytes_done);
                      }));
  metrics.add_sampled("stsresize_copy_progress_total_bytes",
                      "Bytes of the files a running copy has listed (once rsync has listed all).",
                      MetricType::Gauge, sample([](const CopyProgress& p) -> std::optional<double> {
                        const auto total = p.bytes_total();
                        if (!total) return std::nullopt;
                        return static_cast<double>(*total);
                      }));
  metrics.add_sampled(
      "stsresize_copy_progress_rate_bytes_per_second",
      "A running copy's rate, rsync's since it began.", MetricType::Gauge,
      sample([](const CopyProgress& p) -> std::optional<double> { return p.bytes_per_second; }));
  metrics.add_sampled("stsresize_copy_progress_eta_seconds",
                      "What is left of a running copy at its rate (before its proof).",
                      MetricType::Gauge, sample([](const CopyProgress& p) -> std::optional<double> {
                        const auto eta = p.eta();
                        if (!eta) return std::nullopt;
                        return std::chrono::duration<double>(*eta).count();
                      }));
}

}  // namespace stsresize
