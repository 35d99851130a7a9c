#pragma once
// The Kubernetes port contract: behaviour of the real kube-apiserver that stsresize relies on.
// The in-memory fake (adapters/fake) and the HTTP adapter (adapters/kube) must both pass it.
//
// Adding an implementation: write a factory returning a KubernetesUnderTest and, in your own
// .cc file of a test binary that also compiles tests/contract/kubernetes_contract_test.cc,
//   INSTANTIATE_TEST_SUITE_P(Http, KubernetesContract, ::testing::Values(KubernetesFactory{
//       "Http", [] { return make_http_under_test(); }}));
// (see fake_kubernetes_contract_test.cc for the fake's). Each test calls the factory once and
// needs a namespace that exists and holds none of its objects (a fresh namespace per test is
// simplest; `cleanup` may delete it). A factory whose backend is unavailable (no cluster) may
// call GTEST_SKIP() from a void helper and return nullptr: the case is then skipped. Subjects are
// chosen to work on a cluster without nodes or provisioners: ConfigMaps, PVCs of a StorageClass
// that does not exist (they stay Pending) and StatefulSets with 0 replicas.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/ports/kubernetes.h"

namespace stsresize::contract {

struct KubernetesUnderTest {
  Kubernetes* kubernetes = nullptr;  // valid while this object lives
  std::string ns;
  std::function<void()> cleanup;             // runs on destruction
  std::vector<std::shared_ptr<void>> owned;  // whatever `kubernetes` needs to stay alive
  // A resourceVersion a watch certainly cannot start from any more (Gone), or empty when none is
  // known. A freshly started kube-apiserver has none: its watch cache began before the first
  // write (a watch from "1" replays everything), and it only forgets events once its buffer
  // evicts them (full, and the oldest older than 75 s) or etcd compacts (every 5 minutes).
  std::string expired_resource_version;

  KubernetesUnderTest() = default;
  KubernetesUnderTest(const KubernetesUnderTest&) = delete;
  KubernetesUnderTest& operator=(const KubernetesUnderTest&) = delete;
  ~KubernetesUnderTest() {
    if (cleanup) cleanup();
  }
};

struct KubernetesFactory {
  std::string name;  // shown in test names: "Fake", "Http"
  std::function<std::unique_ptr<KubernetesUnderTest>()> make;

  friend void PrintTo(const KubernetesFactory& factory, std::ostream* out) { *out << factory.name; }
};

class KubernetesContract : public ::testing::TestWithParam<KubernetesFactory> {
 protected:
  void SetUp() override {
    under_test_ = GetParam().make();
    if (IsSkipped()) return;  // the factory called GTEST_SKIP(): its backend is unavailable
    ASSERT_NE(under_test_, nullptr);
    ASSERT_NE(under_test_->kubernetes, nullptr);
  }
  Kubernetes& kube() { return *under_test_->kubernetes; }
  const std::string& ns() const { return under_test_->ns; }
  const KubernetesUnderTest& under_test() const { return *under_test_; }

 private:
  std::unique_ptr<KubernetesUnderTest> under_test_;
};

}  // namespace stsresize::contract
