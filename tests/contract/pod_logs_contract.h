#pragma once
// The PodLogs port contract: what the API server answers for pods/log, which the in-memory fake
// (adapters/fake/fake_pod_logs.h) and HttpKubernetes must both do. Each factory gives a
// namespace and a way to have a pod's container print a text and stop (the fake records it; on
// a cluster a pod runs `printf` on the node simulator and Succeeds).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/ports/kubernetes.h"
#include "engine/ports/pod_logs.h"

namespace stsresize::contract {

struct PodLogsUnderTest {
  PodLogs* logs = nullptr;
  std::string ns;
  // Creates pod NAME in `ns` with one container CONTAINER that prints TEXT, and returns once
  // it has (a failure is a test failure).
  std::function<void(const std::string& name, const std::string& container,
                     const std::string& text)>
      print;
  std::function<void()> cleanup;
  std::vector<std::shared_ptr<void>> owned;

  PodLogsUnderTest() = default;
  PodLogsUnderTest(const PodLogsUnderTest&) = delete;
  PodLogsUnderTest& operator=(const PodLogsUnderTest&) = delete;
  ~PodLogsUnderTest() {
    if (cleanup) cleanup();
  }
};

struct PodLogsFactory {
  std::string name;
  std::function<std::unique_ptr<PodLogsUnderTest>()> make;
  friend void PrintTo(const PodLogsFactory& factory, std::ostream* out) { *out << factory.name; }
};

class PodLogsContract : public ::testing::TestWithParam<PodLogsFactory> {
 protected:
  void SetUp() override {
    under_test_ = GetParam().make();
    if (IsSkipped()) return;
    ASSERT_NE(under_test_, nullptr);
    ASSERT_NE(under_test_->logs, nullptr);
  }
  std::unique_ptr<PodLogsUnderTest> under_test_;
};

}  // namespace stsresize::contract
