#pragma once
// An EventRecorder that keeps what it was told, for assertions.
#include <string>
#include <vector>

#include "engine/ports/event_recorder.h"

namespace stsresize::testing {

class RecordingEvents final : public EventRecorder {
 public:
  struct Entry {
    ObjectRef about;
    EventSeverity severity;
    std::string reason;
    std::string message;
  };
  void record(const ObjectRef& about, EventSeverity severity, std::string_view reason,
              std::string_view message) override {
    entries.push_back({about, severity, std::string{reason}, std::string{message}});
  }
  bool has(std::string_view reason) const {
    for (const Entry& e : entries) {
      if (e.reason == reason) return true;
    }
    return false;
  }
  std::vector<Entry> entries;
};

}  // namespace stsresize::testing
