#include "states/permission_denial.h"

namespace stsresize {

namespace {

std::string namespace_of(const Json& object) {
  const Json& metadata = object.value("metadata", Json::object());
  return metadata.value("namespace", "");
}

}  // namespace

std::string describe(const PermissionDenial& denial) {
  const std::string where = denial.ns.empty() ? "cluster-wide" : "in namespace " + denial.ns;
  return "cannot " + denial.verb + " " + denial.resource + " " + where + " (RBAC: grant verbs [\"" +
         denial.verb + "\"] on resources [\"" + denial.resource + "\"] in apiGroups [\"" +
         denial.api_group + "\"])";
}

template <class Result>
Result DenialTrackingKubernetes::noted(Result result, std::string_view verb, Kind kind,
                                       std::string_view subresource, const std::string& ns) {
  if (!result && result.error().code == KubeErrorCode::Forbidden) {
    const KindInfo resource = kind_info(kind);
    std::string plural{resource.plural};
    if (!subresource.empty()) {
      // Two appends: `"/" + std::string{...}` trips g++ 12's false -Werror=restrict at -O3.
      plural += '/';
      plural += subresource;
    }
    last_denial_ =
        PermissionDenial{std::string{verb}, std::move(plural), std::string{resource.group},
                         resource.namespaced ? ns : std::string{}, result.error().message};
  }
  return result;
}

KubeResult<Json> DenialTrackingKubernetes::get(const ObjectRef& ref) {
  return noted(inner_.get(ref), "get", ref.kind, "", ref.ns);
}

KubeResult<ObjectList> DenialTrackingKubernetes::list(Kind kind, const std::string& ns,
                                                      const ListOptions& options) {
  return noted(inner_.list(kind, ns, options), "list", kind, "", ns);
}

KubeResult<Json> DenialTrackingKubernetes::create(Kind kind, const Json& object) {
  return noted(inner_.create(kind, object), "create", kind, "", namespace_of(object));
}

KubeResult<Json> DenialTrackingKubernetes::update(Kind kind, const Json& object) {
  return noted(inner_.update(kind, object), "update", kind, "", namespace_of(object));
}

KubeResult<Json> DenialTrackingKubernetes::update_status(Kind kind, const Json& object) {
  return noted(inner_.update_status(kind, object), "update", kind, "status", namespace_of(object));
}

KubeResult<Json> DenialTrackingKubernetes::patch(const ObjectRef& ref, PatchType type,
                                                 const Json& patch) {
  return noted(inner_.patch(ref, type, patch), "patch", ref.kind, "", ref.ns);
}

KubeResult<void> DenialTrackingKubernetes::remove(const ObjectRef& ref,
                                                  const DeleteOptions& options) {
  return noted(inner_.remove(ref, options), "delete", ref.kind, "", ref.ns);
}

KubeResult<void> DenialTrackingKubernetes::evict(const ObjectRef& pod,
                                                 const EvictOptions& options) {
  return noted(inner_.evict(pod, options), "create", pod.kind, "eviction", pod.ns);
}

KubeResult<Json> DenialTrackingKubernetes::get_scale(const ObjectRef& ref) {
  return noted(inner_.get_scale(ref), "get", ref.kind, "scale", ref.ns);
}

KubeResult<Json> DenialTrackingKubernetes::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                                        const std::string& resource_version) {
  return noted(inner_.update_scale(ref, replicas, resource_version), "update", ref.kind, "scale",
               ref.ns);
}

KubeResult<void> DenialTrackingKubernetes::watch(Kind kind, const std::string& ns,
                                                 const WatchOptions& options, std::stop_token stop,
                                                 const WatchHandler& handler) {
  return noted(inner_.watch(kind, ns, options, stop, handler), "watch", kind, "", ns);
}

}  // namespace stsresize
