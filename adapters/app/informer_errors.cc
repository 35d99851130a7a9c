#include "adapters/app/informer_errors.h"

#include <vector>

namespace stsresize::cli {

namespace {

bool needs_a_person(KubeErrorCode code) {
  return code == KubeErrorCode::Unauthorized || code == KubeErrorCode::Forbidden ||
         code == KubeErrorCode::NotFound;
}

// A missing rule or resource concerns one informer; anything else is the server's or the
// credentials', whichever informer meets it.
bool per_resource(KubeErrorCode code) {
  return code == KubeErrorCode::Forbidden || code == KubeErrorCode::NotFound;
}

std::string cause_key(const runtime::InformerError& error) {
  std::string key{to_string(error.error.code)};
  if (per_resource(error.error.code)) {
    key += " " + error.verb + " " + std::string{to_string(error.kind)};
  }
  return key;
}

std::string plural(Kind kind) {
  return std::string{kind_info(kind).plural};
}

// "listing statefulsets in every namespace", "watching storageclasses".
std::string call(const runtime::InformerError& error) {
  std::string text = (error.verb == "watch" ? "watching " : "listing ") + plural(error.kind);
  if (!is_namespaced(error.kind)) return text;
  return text + (error.ns.empty() ? " in every namespace" : " in namespace " + error.ns);
}

std::string resolved(KubeErrorCode code, Kind kind) {
  switch (code) {
    case KubeErrorCode::Unauthorized:
      return "the API server accepts the credentials again";
    case KubeErrorCode::Forbidden:
      return "listing and watching " + plural(kind) + " is allowed again";
    case KubeErrorCode::NotFound:
      return "the API server serves " + plural(kind) + " again";
    case KubeErrorCode::Unreachable:
      return "the API server answers again";
    default:
      return "the informers' lists and watches work again";
  }
}

}  // namespace

std::string explain(const runtime::InformerError& error) {
  const KindInfo resource = kind_info(error.kind);
  const std::string retrying = "; retrying with backoff";
  switch (error.error.code) {
    case KubeErrorCode::Unauthorized:
      return "the API server rejected the credentials (401 Unauthorized): check --kubeconfig and "
             "--context, or in a pod its ServiceAccount token" +
             retrying;
    case KubeErrorCode::Forbidden: {
      const bool cluster_wide = !is_namespaced(error.kind) || error.ns.empty();
      return call(error) +
             " is forbidden (403): grant verbs [\"list\",\"watch\"] on resources [\"" +
             std::string{resource.plural} + "\"] in apiGroups [\"" + std::string{resource.group} +
             "\"] to these credentials (" +
             (cluster_wide ? std::string{"a ClusterRole and ClusterRoleBinding"}
                           : "a Role and RoleBinding in namespace " + error.ns) +
             "; README.md, RBAC)" + retrying;
    }
    case KubeErrorCode::NotFound: {
      const std::string group_version = resource.group.empty() ? std::string{resource.version}
                                                               : std::string{resource.group} + "/" +
                                                                     std::string{resource.version};
      return "the API server does not serve " + plural(error.kind) + " (" + group_version +
             ", 404 Not Found): do --kubeconfig and --context name a Kubernetes API server?" +
             retrying;
    }
    case KubeErrorCode::Unreachable:
      return "no answer from the API server while " + call(error) + retrying;
    case KubeErrorCode::TooManyRequests:
      return "the API server asked to slow down (429 Too Many Requests) while " + call(error) +
             retrying;
    case KubeErrorCode::ServerError:
      return "the API server failed (5xx) while " + call(error) + retrying;
    default:
      return call(error) + " failed (" + std::string{to_string(error.error.code)} + ")" + retrying;
  }
}

InformerErrorLog::InformerErrorLog(Sink sink) : sink_(std::move(sink)) {}

void InformerErrorLog::failed(const runtime::InformerError& error) {
  const std::string key = cause_key(error);
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    auto [cause, inserted] = open_.try_emplace(key, Cause{error.error.code, error.kind, {}});
    cause->second.failing.insert(error.kind);
    first = inserted;
  }
  const logging::Level level = !first                             ? logging::Level::Debug
                               : needs_a_person(error.error.code) ? logging::Level::Error
                                                                  : logging::Level::Warn;
  sink_(level, explain(error),
        {{"kind", std::string{to_string(error.kind)}},
         {"verb", error.verb},
         {"namespace", error.ns.empty() ? "(all)" : error.ns},
         {"error", std::string{to_string(error.error.code)}},
         {"message", error.error.message}});
}

void InformerErrorLog::recovered(Kind kind) {
  std::vector<Cause> ended;
  {
    std::lock_guard lock(mutex_);
    for (auto it = open_.begin(); it != open_.end();) {
      it->second.failing.erase(kind);
      if (it->second.failing.empty()) {
        ended.push_back(it->second);
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Cause& cause : ended) {
    sink_(logging::Level::Info, resolved(cause.code, cause.kind),
          {{"kind", std::string{to_string(kind)}}, {"error", std::string{to_string(cause.code)}}});
  }
}

}  // namespace stsresize::cli
