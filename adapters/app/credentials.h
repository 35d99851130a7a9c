#pragma once
// Where the commands that talk to a cluster (run, status, describe) find it, the way kubectl
// does: --kubeconfig, else $KUBECONFIG, else the pod's service account when running in a
// cluster, else ~/.kube/config; --context picks a kubeconfig context.
#include <expected>
#include <string>

#include "adapters/kube/config.h"

namespace stsresize::cli {

// Errors say which file or setting is at fault.
std::expected<KubeConfig, std::string> load_credentials(const std::string& kubeconfig_flag,
                                                        const std::string& context_flag);

}  // namespace stsresize::cli
