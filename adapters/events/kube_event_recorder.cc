#include "adapters/events/kube_event_recorder.h"

#include <cstdio>
#include <optional>

#include "adapters/clock/rfc3339.h"
#include "engine/text.h"

namespace stsresize {
namespace {

constexpr std::size_t kMaxMessageBytes = 1024;  // client-go's limit for event messages
constexpr std::size_t kMaxNamePrefix = 200;     // leaves room for the suffix within 253
constexpr int kNameAttempts = 3;

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Never in the middle of a UTF-8 sequence: the request body would not serialize.
std::string truncated(std::string_view text, std::size_t max) {
  return std::string{utf8_prefix(text, max)};
}

}  // namespace

KubeEventRecorder::KubeEventRecorder(Kubernetes& kube, const Clock& clock,
                                     KubeEventRecorderOptions options, FailureCallback on_failure)
    : kube_(kube),
      clock_(clock),
      options_(std::move(options)),
      on_failure_(std::move(on_failure)) {}

std::int64_t KubeEventRecorder::failures() const {
  std::lock_guard lock{mutex_};
  return failures_;
}

void KubeEventRecorder::failed(const ObjectRef& about, std::string_view reason,
                               const KubeError& error) {
  {
    std::lock_guard lock{mutex_};
    ++failures_;
  }
  if (on_failure_) on_failure_(about, reason, error);
}

void KubeEventRecorder::record(const ObjectRef& about, EventSeverity severity,
                               std::string_view reason, std::string_view message) {
  const TimePoint now = clock_.now();
  const std::string type = severity == EventSeverity::Warning ? "Warning" : "Normal";
  const std::string text = truncated(message, kMaxMessageBytes);
  const std::string key = to_string(about) + '\n' + type + '\n' + std::string{reason} + '\n' + text;

  // The API calls happen outside the lock: a slow API server must not serialise every worker.
  std::optional<Series> known;
  {
    std::lock_guard lock{mutex_};
    auto it = series_.find(key);
    if (it != series_.end() && now - it->second.last < options_.series_window) known = it->second;
  }
  if (known) {
    const std::int64_t count = known->count + 1;
    auto patched = kube_.patch({Kind::Event, known->ns, known->event_name}, PatchType::Merge,
                               Json{{"count", count}, {"lastTimestamp", format_rfc3339(now)}});
    if (patched) {
      std::lock_guard lock{mutex_};
      Series& series = series_[key];
      series.count = count;
      series.last = now;
      return;
    }
    if (patched.error().code != KubeErrorCode::NotFound) {
      failed(about, reason, patched.error());
      return;
    }
    // The Event expired (the API server keeps them for an hour) or was deleted: start anew.
  }
  create(about, type, reason, text, key, now);
}

void KubeEventRecorder::create(const ObjectRef& about, const std::string& type,
                               std::string_view reason, const std::string& message,
                               const std::string& key, TimePoint now) {
  Json involved{{"kind", std::string{to_string(about.kind)}}, {"name", about.name}};
  if (is_namespaced(about.kind)) involved["namespace"] = about.ns;
  // uid and apiVersion are what `kubectl describe` matches events on; without the object we
  // still record, less findable.
  Kubernetes* reads = reads_.load();
  if (auto object = (reads != nullptr ? *reads : kube_).get(about)) {
    const Json& metadata = object->value("metadata", Json::object());
    for (const char* field : {"uid", "resourceVersion"}) {
      if (metadata.contains(field)) involved[field] = metadata[field];
    }
    if (object->contains("apiVersion")) involved["apiVersion"] = (*object)["apiVersion"];
  }
  const std::string ns = is_namespaced(about.kind) && !about.ns.empty() ? about.ns : "default";
  const std::string timestamp = format_rfc3339(now);
  Json source{{"component", options_.component}};
  if (!options_.host.empty()) source["host"] = options_.host;
  Json event{{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"namespace", ns}}},
             {"involvedObject", involved},
             {"reason", std::string{reason}},
             {"message", message},
             {"type", type},
             {"source", source},
             {"firstTimestamp", timestamp},
             {"lastTimestamp", timestamp},
             {"count", 1},
             {"reportingComponent", options_.component},
             {"reportingInstance", options_.host.empty() ? options_.component : options_.host}};

  const auto nanos = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  KubeResult<Json> created = std::unexpected(KubeError{KubeErrorCode::AlreadyExists, ""});
  std::string name;
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    std::uint64_t sequence = 0;
    {
      std::lock_guard lock{mutex_};
      sequence = sequence_++;
    }
    // client-go names events "<object>.<unix nanos in hex>"; the sequence keeps two events of
    // one instant (a manual clock, a fast loop) apart.
    name = truncated(about.name, kMaxNamePrefix) + "." + hex(nanos + sequence);
    event["metadata"]["name"] = name;
    created = kube_.create(Kind::Event, event);
    if (created || created.error().code != KubeErrorCode::AlreadyExists) break;
  }
  if (!created) {
    failed(about, reason, created.error());
    return;
  }
  std::lock_guard lock{mutex_};
  series_[key] = Series{ns, name, 1, now};
  forget_old_series(now);
}

void KubeEventRecorder::forget_old_series(TimePoint now) {
  if (series_.size() <= options_.max_series) return;
  std::erase_if(series_, [&](const auto& entry) {
    return now - entry.second.last >= options_.series_window;
  });
  while (series_.size() > options_.max_series) {
    auto oldest = std::ranges::min_element(
        series_, [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
    series_.erase(oldest);
  }
}

}  // namespace stsresize
