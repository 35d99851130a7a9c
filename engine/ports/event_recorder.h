#pragma once
// Kubernetes Events about a StatefulSet, for the people watching `kubectl describe`.
// Best effort by design: failing to record an event never fails a step.
#include <string_view>

#include "engine/ports/kubernetes.h"

namespace stsresize {

enum class EventSeverity { Normal, Warning };

class EventRecorder {
 public:
  virtual ~EventRecorder() = default;
  virtual void record(const ObjectRef& about, EventSeverity severity, std::string_view reason,
                      std::string_view message) = 0;
};

}  // namespace stsresize
