// The Kubernetes contract (kubernetes_contract_test.cc) instantiated for the in-memory fake.
#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "tests/contract/kubernetes_contract.h"

namespace stsresize::contract {
namespace {

std::unique_ptr<KubernetesUnderTest> make_fake() {
  auto clock = std::make_shared<ManualClock>();
  auto fake = std::make_shared<FakeKubernetes>(*clock);
  auto under_test = std::make_unique<KubernetesUnderTest>();
  under_test->kubernetes = fake.get();
  under_test->ns = "contract";
  under_test->owned = {fake, clock};
  under_test->expired_resource_version = "1";  // its history starts at its creation
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Fake, KubernetesContract,
                         ::testing::Values(KubernetesFactory{"Fake", make_fake}));

}  // namespace
}  // namespace stsresize::contract
