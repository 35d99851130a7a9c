#include "adapters/kube/whoami.h"

namespace stsresize {

KubeResult<std::string> authenticated_username(HttpKubernetes& kube) {
  const Json review = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}};
  auto answer = kube.raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review);
  if (!answer) return std::unexpected(answer.error());
  const Json* user = nullptr;
  if (answer->is_object() && answer->contains("status") && (*answer)["status"].is_object() &&
      (*answer)["status"].contains("userInfo") && (*answer)["status"]["userInfo"].is_object()) {
    user = &(*answer)["status"]["userInfo"];
  }
  if (user == nullptr || !user->contains("username") || !(*user)["username"].is_string() ||
      (*user)["username"].get<std::string>().empty()) {
    return std::unexpected(KubeError{KubeErrorCode::ServerError,
                                     "the SelfSubjectReview answer names no "
                                     "status.userInfo.username",
                                     {}});
  }
  return (*user)["username"].get<std::string>();
}

}  // namespace stsresize
