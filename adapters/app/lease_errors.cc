#include "adapters/app/lease_errors.h"

namespace stsresize::cli {

LeaseErrorLog::LeaseErrorLog(std::string lease_namespace, std::string lease_name, Sink sink)
    : ns_(std::move(lease_namespace)), name_(std::move(lease_name)), sink_(std::move(sink)) {}

void LeaseErrorLog::failed(std::string_view doing, const KubeError& error) {
  const std::string code{to_string(error.code)};
  const std::string lease = ns_ + "/" + name_;
  std::string message =
      "leader election: " + std::string{doing} + " of Lease " + lease + " failed (" + code + ")";
  if (error.code == KubeErrorCode::Forbidden) {
    message +=
        ": grant get, create and update on leases (apiGroup coordination.k8s.io) in "
        "namespace " +
        ns_ +
        " (a Role and RoleBinding there), or choose with --leader-elect-namespace "
        "a namespace where it has them";
  } else if (error.code == KubeErrorCode::Unauthorized) {
    message += ": the API server rejected the credentials; check --kubeconfig and --context";
  }
  const std::string cause = std::string{doing} + " " + code;
  if (cause == open_) {
    sink_(logging::Level::Debug, message, {{"lease", lease}, {"error", error.message}});
    return;
  }
  open_ = cause;
  sink_(logging::Level::Error, message + "; this replica cannot lead until then",
        {{"lease", lease}, {"error", error.message}});
}

void LeaseErrorLog::recovered() {
  open_.clear();
  sink_(logging::Level::Info, "leader election: the Lease can be read and written again",
        {{"lease", ns_ + "/" + name_}});
}

}  // namespace stsresize::cli
