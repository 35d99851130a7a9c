#pragma once
// For tests that hold HttpKubernetes to a real API server: the cluster named by
// $STSRESIZE_KUBECONFIG (a kubeconfig path; CTest's contract_real_apiserver sets it from the
// `cluster` fixture) and a throwaway namespace per test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"

namespace stsresize::testing {

inline constexpr const char* kKubeconfigVariable = "STSRESIZE_KUBECONFIG";

// The cluster's admin config, or nullopt when no cluster is configured (say so with
// GTEST_SKIP() << kNoClusterReason). A kubeconfig that does not load is a test failure.
inline const char* const kNoClusterReason =
    "STSRESIZE_KUBECONFIG is not set: no API server to test HttpKubernetes against (start one "
    "with scripts/cluster up and set it to the kubeconfig path it prints)";

inline std::optional<KubeConfig> cluster_config() {
  const char* path = std::getenv(kKubeconfigVariable);
  if (path == nullptr || *path == '\0') return std::nullopt;
  auto config = load_kubeconfig(path);
  if (!config) {
    ADD_FAILURE() << config.error();
    return std::nullopt;
  }
  return *config;
}

// A namespace created with generateName and deleted (in the background) when this goes away.
class TestNamespace {
 public:
  explicit TestNamespace(std::shared_ptr<HttpKubernetes> kube) : kube_(std::move(kube)) {
    const Json request = {
        {"apiVersion", "v1"},
        {"kind", "Namespace"},
        {"metadata",
         {{"generateName", "stsresize-test-"}, {"labels", {{"stsresize.dev/test", "http"}}}}}};
    auto created = kube_->raw("POST", "/api/v1/namespaces", request);
    if (!created) {
      ADD_FAILURE() << "creating a test namespace: " << created.error().message;
      return;
    }
    name_ = (*created)["metadata"]["name"].get<std::string>();
  }
  ~TestNamespace() {
    if (name_.empty()) return;
    auto deleted = kube_->raw(
        "DELETE", "/api/v1/namespaces/" + url_encode(name_),
        Json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}});
    if (!deleted)
      ADD_FAILURE() << "deleting namespace " << name_ << ": " << deleted.error().message;
  }
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;

  const std::string& name() const { return name_; }  // empty if creation failed

 private:
  std::shared_ptr<HttpKubernetes> kube_;
  std::string name_;
};

}  // namespace stsresize::testing
