#pragma once
// A container's log, as the kubelet serves it through the API server (pods/log). Read only for
// what people see of a long copy (adapters/controller/copy_progress.h), never for a decision:
// a log is the container's own words, and the proof of a copy is its termination message.
#include <string>

#include "engine/ports/kubernetes.h"

namespace stsresize {

class PodLogs {
 public:
  virtual ~PodLogs() = default;
  // The last `lines` lines of the container's log (its current run): NotFound for a pod that
  // is not there, BadRequest for a container it does not have or that has not started.
  virtual KubeResult<std::string> tail(const ObjectRef& pod, const std::string& container,
                                       int lines) = 0;
};

}  // namespace stsresize
