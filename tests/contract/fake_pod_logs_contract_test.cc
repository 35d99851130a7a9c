// The PodLogs contract (pod_logs_contract_test.cc) instantiated for the in-memory fake.
#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/fake/fake_pod_logs.h"
#include "tests/contract/pod_logs_contract.h"

namespace stsresize::contract {
namespace {

std::unique_ptr<PodLogsUnderTest> make_fake_logs() {
  auto clock = std::make_shared<ManualClock>();
  auto fake = std::make_shared<FakeKubernetes>(*clock);
  auto logs = std::make_shared<FakePodLogs>(*fake);
  auto under_test = std::make_unique<PodLogsUnderTest>();
  under_test->logs = logs.get();
  under_test->ns = "contract";
  under_test->print = [fake = fake.get(), logs = logs.get()](const std::string& name,
                                                             const std::string& container,
                                                             const std::string& text) {
    const Json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}, {"namespace", "contract"}}},
                      {"spec", {{"containers", {{{"name", container}, {"image", "busybox"}}}}}}};
    auto created = fake->create(Kind::Pod, pod);
    ASSERT_TRUE(created) << created.error().message;
    logs->print({Kind::Pod, "contract", name}, container, text);
  };
  under_test->owned = {logs, fake, clock};
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Fake, PodLogsContract,
                         ::testing::Values(PodLogsFactory{"Fake", make_fake_logs}));

}  // namespace
}  // namespace stsresize::contract
