// The Kubernetes contract (kubernetes_contract_test.cc) instantiated for HttpKubernetes against a
// real kube-apiserver: the cluster whose kubeconfig path is in $STSRESIZE_KUBECONFIG (CTest's
// contract_real_apiserver sets it from the `cluster` fixture; by hand:
// `STSRESIZE_KUBECONFIG=$(scripts/cluster up | tail -1) build/bin/contract_tests
// --gtest_filter='Http*'`). Without it every case is skipped. Each case gets a fresh namespace,
// deleted afterwards (its objects go with it, once the namespace controller has run).
#include "tests/contract/http_cluster_support.h"
#include "tests/contract/kubernetes_contract.h"
#include "tests/contract/pod_logs_contract.h"

#include <chrono>
#include <thread>
#include <utility>

namespace stsresize::contract {
namespace {

void skip_without_cluster() {
  GTEST_SKIP() << testing::kNoClusterReason;
}

// A client of the configured cluster and a fresh namespace; nullptr when there is none (the
// case is then skipped, or has failed).
std::pair<std::shared_ptr<HttpKubernetes>, std::shared_ptr<testing::TestNamespace>> connect() {
  auto config = testing::cluster_config();
  if (!config) {
    if (!::testing::Test::HasFailure()) skip_without_cluster();
    return {};
  }
  auto created = HttpKubernetes::create(*config);
  if (!created) {
    ADD_FAILURE() << created.error();
    return {};
  }
  std::shared_ptr<HttpKubernetes> kube = std::move(*created);
  // The port has no Namespace kind: the helper goes around it.
  auto ns = std::make_shared<testing::TestNamespace>(kube);
  if (ns->name().empty()) return {};
  return {kube, ns};
}

std::unique_ptr<KubernetesUnderTest> make_http() {
  auto [kube, ns] = connect();
  if (!kube) return nullptr;
  auto under_test = std::make_unique<KubernetesUnderTest>();
  under_test->kubernetes = kube.get();
  under_test->ns = ns->name();
  under_test->owned = {kube, ns};  // the namespace keeps its own reference to the client
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Http, KubernetesContract,
                         ::testing::Values(KubernetesFactory{"Http", make_http}));

// The pods run on the cluster's node simulator, whose kubelet log API the API server proxies
// (tests/cluster/nodesim/README.md, "Logs"): the host's /bin/sh prints the text.
std::unique_ptr<PodLogsUnderTest> make_http_logs() {
  auto [kube, ns] = connect();
  if (!kube) return nullptr;
  auto under_test = std::make_unique<PodLogsUnderTest>();
  under_test->logs = kube.get();
  under_test->ns = ns->name();
  under_test->print = [kube = kube.get(), ns = ns->name()](const std::string& name,
                                                           const std::string& container,
                                                           const std::string& text) {
    const Json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"spec",
                       {{"restartPolicy", "Never"},
                        {"containers",
                         {{{"name", container},
                           {"image", "busybox"},
                           {"command", {"/bin/sh", "-c", "printf '%s' \"$TEXT\""}},
                           {"env", {{{"name", "TEXT"}, {"value", text}}}}}}}}}};
    auto made = kube->create(Kind::Pod, pod);
    ASSERT_TRUE(made) << made.error().message;
    std::string phase;
    for (int i = 0; i < 600 && phase != "Succeeded" && phase != "Failed"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
      auto got = kube->get({Kind::Pod, ns, name});
      ASSERT_TRUE(got) << got.error().message;
      phase = got->contains("status") ? got->at("status").value("phase", "") : "";
    }
    ASSERT_EQ(phase, "Succeeded") << "pod " << name << " did not succeed in 60 s";
  };
  under_test->owned = {kube, ns};
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Http, PodLogsContract,
                         ::testing::Values(PodLogsFactory{"Http", make_http_logs}));

}  // namespace
}  // namespace stsresize::contract
