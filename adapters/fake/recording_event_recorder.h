#pragma once
// An EventRecorder that keeps what it is told, for assertions in tests. Thread-safe.
#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ports/event_recorder.h"

namespace stsresize {

struct RecordedEvent {
  ObjectRef about;
  EventSeverity severity = EventSeverity::Normal;
  std::string reason;
  std::string message;

  friend bool operator==(const RecordedEvent&, const RecordedEvent&) = default;
};

class RecordingEventRecorder final : public EventRecorder {
 public:
  void record(const ObjectRef& about, EventSeverity severity, std::string_view reason,
              std::string_view message) override {
    std::lock_guard lock{mutex_};
    events_.push_back({about, severity, std::string{reason}, std::string{message}});
  }

  std::vector<RecordedEvent> events() const {
    std::lock_guard lock{mutex_};
    return events_;
  }
  // Events with that reason, in recording order.
  std::vector<RecordedEvent> with_reason(std::string_view reason) const {
    std::lock_guard lock{mutex_};
    std::vector<RecordedEvent> matching;
    std::ranges::copy_if(events_, std::back_inserter(matching),
                         [&](const RecordedEvent& event) { return event.reason == reason; });
    return matching;
  }
  bool contains(std::string_view reason) const { return !with_reason(reason).empty(); }
  void clear() {
    std::lock_guard lock{mutex_};
    events_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<RecordedEvent> events_;
};

}  // namespace stsresize
