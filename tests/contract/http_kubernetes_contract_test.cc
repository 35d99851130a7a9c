// The Kubernetes contract (kubernetes_contract_test.cc) instantiated for HttpKubernetes against a
// real kube-apiserver: the cluster whose kubeconfig path is in $STSRESIZE_KUBECONFIG (CTest's
// contract_real_apiserver sets it from the `cluster` fixture; by hand:
// `STSRESIZE_KUBECONFIG=$(scripts/cluster up | tail -1) build/bin/contract_tests
// --gtest_filter='Http*'`). Without it every case is skipped. Each case gets a fresh namespace,
// deleted afterwards (its objects go with it, once the namespace controller has run).
#include "tests/contract/http_cluster_support.h"
#include "tests/contract/kubernetes_contract.h"

namespace stsresize::contract {
namespace {

void skip_without_cluster() {
  GTEST_SKIP() << testing::kNoClusterReason;
}

std::unique_ptr<KubernetesUnderTest> make_http() {
  auto config = testing::cluster_config();
  if (!config) {
    if (!::testing::Test::HasFailure()) skip_without_cluster();
    return nullptr;
  }
  auto created = HttpKubernetes::create(*config);
  if (!created) {
    ADD_FAILURE() << created.error();
    return nullptr;
  }
  std::shared_ptr<HttpKubernetes> kube = std::move(*created);
  // The port has no Namespace kind: the helper goes around it.
  auto ns = std::make_shared<testing::TestNamespace>(kube);
  if (ns->name().empty()) return nullptr;

  auto under_test = std::make_unique<KubernetesUnderTest>();
  under_test->kubernetes = kube.get();
  under_test->ns = ns->name();
  under_test->owned = {kube, ns};  // the namespace keeps its own reference to the client
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Http, KubernetesContract,
                         ::testing::Values(KubernetesFactory{"Http", make_http}));

}  // namespace
}  // namespace stsresize::contract
