#pragma once
// Who the API server says we are: a SelfSubjectReview (authentication.k8s.io/v1, GA since
// Kubernetes 1.28) returns the user name it authenticated from our credentials. A kubeconfig's
// user entry is only a local nickname ("admin", "my-laptop"): the journal of an operator's
// action deserves the name the cluster's audit log and RBAC see.
#include <string>

#include "adapters/kube/http_kubernetes.h"

namespace stsresize {

// status.userInfo.username of a SelfSubjectReview. NotFound (an API server older than 1.28, or
// the API disabled) and Forbidden are errors like any other: the caller decides what to fall
// back to.
KubeResult<std::string> authenticated_username(HttpKubernetes& kube);

}  // namespace stsresize
