#pragma once
// Records core/v1 Events through any Kubernetes port, the way client-go's recorder does:
// involvedObject (uid, apiVersion and resourceVersion read from the object, so that
// `kubectl describe` finds the event), reason, message (cut at 1024 bytes), type, source
// component, first/lastTimestamp from the Clock, count. A repeat of the same series (object,
// type, reason, message) within `series_window` of its last occurrence patches count and
// lastTimestamp of the existing Event instead of creating another.
//
// Best effort, as the EventRecorder port demands: failures never propagate. Each one is
// counted and handed to `on_failure` (the application logs it). Thread-safe.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "engine/ports/clock.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/kubernetes.h"

namespace stsresize {

struct KubeEventRecorderOptions {
  std::string component = "stsresize";
  std::string host;  // source.host / reportingInstance; the pod name in production
  Duration series_window = std::chrono::minutes{10};
  std::size_t max_series = 4096;  // series remembered for counting; the oldest are forgotten
};

class KubeEventRecorder final : public EventRecorder {
 public:
  using FailureCallback =
      std::function<void(const ObjectRef& about, std::string_view reason, const KubeError& error)>;

  KubeEventRecorder(Kubernetes& kube, const Clock& clock, KubeEventRecorderOptions options = {},
                    FailureCallback on_failure = {});

  void record(const ObjectRef& about, EventSeverity severity, std::string_view reason,
              std::string_view message) override;

  std::int64_t failures() const;

  // Read the involved object (its uid, apiVersion, resourceVersion) through `reads` rather than
  // the port events are written to: the controller's cached reads, which answer from the
  // informers an object the controller has just written. Set before the first record().
  void read_objects_through(Kubernetes& reads) { reads_ = &reads; }

 private:
  struct Series {
    std::string ns;
    std::string event_name;
    std::int64_t count = 0;
    TimePoint last;
  };

  void create(const ObjectRef& about, const std::string& type, std::string_view reason,
              const std::string& message, const std::string& key, TimePoint now);
  void forget_old_series(TimePoint now);
  void failed(const ObjectRef& about, std::string_view reason, const KubeError& error);

  Kubernetes& kube_;
  std::atomic<Kubernetes*> reads_{nullptr};
  const Clock& clock_;
  KubeEventRecorderOptions options_;
  FailureCallback on_failure_;
  mutable std::mutex mutex_;
  std::map<std::string, Series> series_;
  std::int64_t failures_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace stsresize
