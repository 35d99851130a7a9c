// The Kubernetes contract (kubernetes_contract_test.cc) instantiated for HttpKubernetes against a
// real kube-apiserver: the cluster whose kubeconfig path is in $STSRESIZE_KUBECONFIG (CTest's
// contract_real_apiserver sets it from the `cluster` fixture; by hand:
// `STSRESIZE_KUBECONFIG=$(scripts/cluster up | tail -1) build/bin/contract_tests
// --gtest_filter='Http/*'`). Without it every case is skipped. Each case gets a fresh namespace,
// deleted afterwards (its objects go with it, once the namespace controller has run).
#include <cstdlib>

#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"
#include "tests/contract/kubernetes_contract.h"

namespace stsresize::contract {
namespace {

constexpr const char* kKubeconfigVariable = "STSRESIZE_KUBECONFIG";

void skip_without_cluster() {
  GTEST_SKIP() << kKubeconfigVariable
               << " is not set: no API server to hold HttpKubernetes to the contract (start one "
                  "with scripts/cluster up and set it to the kubeconfig path it prints)";
}

std::unique_ptr<KubernetesUnderTest> make_http() {
  const char* kubeconfig = std::getenv(kKubeconfigVariable);
  if (kubeconfig == nullptr || *kubeconfig == '\0') {
    skip_without_cluster();
    return nullptr;
  }
  auto config = load_kubeconfig(kubeconfig);
  if (!config) {
    ADD_FAILURE() << config.error();
    return nullptr;
  }
  auto created = HttpKubernetes::create(*config);
  if (!created) {
    ADD_FAILURE() << created.error();
    return nullptr;
  }
  std::shared_ptr<HttpKubernetes> kube = std::move(*created);

  // The port has no Namespace kind: go around it.
  const Json request = {{"apiVersion", "v1"},
                        {"kind", "Namespace"},
                        {"metadata",
                         {{"generateName", "stsresize-contract-"},
                          {"labels", {{"stsresize.dev/test", "contract"}}}}}};
  auto ns = kube->raw("POST", "/api/v1/namespaces", request);
  if (!ns) {
    ADD_FAILURE() << "creating the test namespace: " << ns.error().message;
    return nullptr;
  }
  auto under_test = std::make_unique<KubernetesUnderTest>();
  under_test->kubernetes = kube.get();
  under_test->ns = (*ns)["metadata"]["name"].get<std::string>();
  under_test->owned = {kube};
  under_test->cleanup = [kube, name = under_test->ns] {
    auto deleted = kube->raw(
        "DELETE", "/api/v1/namespaces/" + url_encode(name),
        Json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}});
    if (!deleted)
      ADD_FAILURE() << "deleting test namespace " << name << ": " << deleted.error().message;
  };
  return under_test;
}

INSTANTIATE_TEST_SUITE_P(Http, KubernetesContract,
                         ::testing::Values(KubernetesFactory{"Http", make_http}));

}  // namespace
}  // namespace stsresize::contract
