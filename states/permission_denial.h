#pragma once
// RBAC denials made legible. The API server answers 403 when the installation's Role or
// ClusterRole lacks a rule; the fix is for an administrator to grant it, so the reconciler
// retries with backoff and tells them, once, exactly which rule is missing.
#include <optional>
#include <string>

#include "engine/ports/kubernetes.h"

namespace stsresize {

// One refused call, in the terms of an RBAC rule.
struct PermissionDenial {
  std::string verb;       // get, list, watch, create, update, patch, delete
  std::string resource;   // plural, with the subresource: "jobs", "statefulsets/scale"
  std::string api_group;  // "" for the core group, "apps", "batch", ...
  std::string ns;         // "" for a cluster-scoped kind or a call across all namespaces
  std::string server_message;

  friend bool operator==(const PermissionDenial&, const PermissionDenial&) = default;
};

// `cannot delete persistentvolumeclaims in namespace shop (RBAC: grant verbs ["delete"] on
// resources ["persistentvolumeclaims"] in apiGroups [""])`
std::string describe(const PermissionDenial& denial);

// A Kubernetes port that passes every call on and remembers the last one the server refused
// with Forbidden, as an RBAC rule. Not thread-safe: one per Reconciler, which runs one
// reconcile at a time.
class DenialTrackingKubernetes final : public Kubernetes {
 public:
  explicit DenialTrackingKubernetes(Kubernetes& inner) : inner_(inner) {}

  // The latest denial since forget(); nullopt when none.
  const std::optional<PermissionDenial>& last_denial() const { return last_denial_; }
  void forget() { last_denial_.reset(); }

  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override;
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override;
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override;
  KubeResult<Json> get_scale(const ObjectRef& ref) override;
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override;
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override;

 private:
  template <class Result>
  Result noted(Result result, std::string_view verb, Kind kind, std::string_view subresource,
               const std::string& ns);

  Kubernetes& inner_;
  std::optional<PermissionDenial> last_denial_;
};

}  // namespace stsresize
