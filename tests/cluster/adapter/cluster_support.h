#pragma once
// For the real-cluster adapter tests (cluster_adapter_tests): the shared `cluster` fixture's
// admin config, private control planes for tests that restart or compact, and small helpers.
//
// The fixture's kubeconfig path is in the file named by $STSRESIZE_KUBECONFIG_PATH_FILE (set by
// stsresize_add_cluster_test); $STSRESIZE_KUBECONFIG (a kubeconfig path) works by hand. Without
// either, tests skip.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"
#include "tests/support/kube_assertions.h"

namespace stsresize::cluster_test {

inline const char* const kNoClusterReason =
    "neither STSRESIZE_KUBECONFIG_PATH_FILE nor STSRESIZE_KUBECONFIG is set: no cluster (run "
    "through ctest -L cluster, or set STSRESIZE_KUBECONFIG to what scripts/cluster up prints)";

// The fixture cluster's kubeconfig path, or nullopt when none is configured.
std::optional<std::filesystem::path> fixture_kubeconfig_path();

// Loads a kubeconfig; a failure is reported as a test failure (nullopt returned).
std::optional<KubeConfig> load_config(const std::filesystem::path& kubeconfig);

// HttpKubernetes for `config`, or nullptr with a test failure.
std::shared_ptr<HttpKubernetes> connect(const KubeConfig& config,
                                        HttpKubernetesOptions options = {});

// The cluster's server and CA with no credentials: callers add a token or token file.
KubeConfig without_credentials(KubeConfig config);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout only; stderr goes to the test's log
};
// Runs `argv` (no shell) and collects its stdout.
CommandResult run_command(const std::vector<std::string>& argv);

// Polls `condition` every `interval` until it holds or `timeout` passes (real clocks: the
// cluster runs on its own time).
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds{30},
                std::chrono::milliseconds interval = std::chrono::milliseconds{100});

// A control plane of its own (`scripts/cluster up --name <name> --no-nodesim`), for tests that
// restart its apiserver or compact its etcd while other tests use the fixture. Brought down in
// the destructor. The name comes from $STSRESIZE_PRIVATE_CLUSTER_NAME when set (so that the
// CTest command can bring it down even if this process crashes), else "adapter-<pid>".
class PrivateControlPlane {
 public:
  // Starts it; error() says why not.
  PrivateControlPlane();
  ~PrivateControlPlane();
  PrivateControlPlane(const PrivateControlPlane&) = delete;
  PrivateControlPlane& operator=(const PrivateControlPlane&) = delete;

  bool up() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }
  int apiserver_port() const;

  // scripts/cluster restart-apiserver: returns once /readyz answers again.
  bool restart_apiserver();
  // scripts/cluster compact: the etcd revision compacted at, or nullopt.
  std::optional<std::int64_t> compact();

 private:
  std::string name_;
  std::filesystem::path kubeconfig_;
  std::string error_;
};

// A ConfigMap body (no resourceVersion), with labels and one data key.
Json config_map(const std::string& ns, const std::string& name, const Json& labels = Json::object(),
                const std::string& value = "v");

std::string name_of(const Json& object);
std::string resource_version_of(const Json& object);

// A namespace made with generateName and deleted (background propagation) in the destructor.
class ScopedNamespace {
 public:
  ScopedNamespace(std::shared_ptr<HttpKubernetes> kube, const std::string& prefix);
  ~ScopedNamespace();
  ScopedNamespace(const ScopedNamespace&) = delete;
  ScopedNamespace& operator=(const ScopedNamespace&) = delete;
  const std::string& name() const { return name_; }  // empty if creation failed

 private:
  std::shared_ptr<HttpKubernetes> kube_;
  std::string name_;
};

// Base for tests on the shared fixture cluster: an admin client and a fresh namespace (`ns()`),
// or the test is skipped when no cluster is configured.
class OnFixtureCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = fixture_kubeconfig_path();
    if (!path) {
      if (!HasFailure()) GTEST_SKIP() << kNoClusterReason;
      return;
    }
    auto config = load_config(*path);
    ASSERT_TRUE(config);
    admin_config_ = *config;
    admin_ = connect(admin_config_);
    ASSERT_NE(admin_, nullptr);
    namespace_ = std::make_unique<ScopedNamespace>(admin_, namespace_prefix());
    ASSERT_FALSE(namespace_->name().empty());
  }
  virtual std::string namespace_prefix() const { return "adapter"; }
  const std::string& ns() const { return namespace_->name(); }

  KubeConfig admin_config_;
  std::shared_ptr<HttpKubernetes> admin_;
  std::unique_ptr<ScopedNamespace> namespace_;
};

}  // namespace stsresize::cluster_test
