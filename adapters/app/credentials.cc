#include "adapters/app/credentials.h"

#include <cstdlib>

namespace stsresize::cli {

std::expected<KubeConfig, std::string> load_credentials(const std::string& kubeconfig_flag,
                                                        const std::string& context_flag) {
  const char* kubeconfig_env = std::getenv("KUBECONFIG");
  const bool in_cluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (kubeconfig_flag.empty() && (kubeconfig_env == nullptr || *kubeconfig_env == '\0') &&
      in_cluster) {
    if (!context_flag.empty()) {
      return std::unexpected("--context needs a kubeconfig (--kubeconfig or $KUBECONFIG)");
    }
    return load_in_cluster(InClusterEnvironment::from_process());
  }
  auto path = kubeconfig_path(kubeconfig_flag, kubeconfig_env, std::getenv("HOME"));
  if (!path) return std::unexpected(path.error());
  return load_kubeconfig(*path, context_flag);
}

}  // namespace stsresize::cli
