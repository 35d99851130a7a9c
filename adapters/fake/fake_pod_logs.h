#pragma once
// PodLogs over the in-memory fake: what a test says a container printed, answered the way the
// API server does (tests/contract/pod_logs_contract.h). The pod must exist in the Kubernetes
// given, and name the container.
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

#include "engine/ports/kubernetes.h"
#include "engine/ports/pod_logs.h"

namespace stsresize {

class FakePodLogs final : public PodLogs {
 public:
  explicit FakePodLogs(Kubernetes& pods) : pods_(pods) {}

  // The container printed `text` (appended to what it printed before).
  void print(const ObjectRef& pod, const std::string& container, std::string_view text);
  KubeResult<std::string> tail(const ObjectRef& pod, const std::string& container,
                               int lines) override;
  int reads() const;  // tail() calls answered, for tests that count requests

 private:
  Kubernetes& pods_;
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, std::string> logs_;
  int reads_ = 0;
};

}  // namespace stsresize
