#include "adapters/fake/simulation_support.h"

#include <algorithm>

#include "adapters/fake/api_rules.h"

namespace stsresize::sim {

const Json& at(const Json& object, std::initializer_list<const char*> path) {
  return fake::at_or_null(object, path);
}

std::string text(const Json& object, std::initializer_list<const char*> path) {
  const Json& value = at(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

std::int64_t integer(const Json& object, std::initializer_list<const char*> path,
                     std::int64_t fallback) {
  const Json& value = at(object, path);
  return value.is_number_integer() ? value.get<std::int64_t>() : fallback;
}

bool is_deleting(const Json& object) {
  return !at(object, {"metadata", "deletionTimestamp"}).is_null();
}

bool has_owner(const Json& object, const std::string& owner_uid) {
  const Json& owners = at(object, {"metadata", "ownerReferences"});
  return owners.is_array() && std::ranges::any_of(owners, [&](const Json& owner) {
           return owner.is_object() && owner.value("uid", "") == owner_uid;
         });
}

Json controller_reference(Kind kind, const Json& owner) {
  return Json{{"apiVersion", api_version_of(kind)},
              {"kind", to_string(kind)},
              {"name", text(owner, {"metadata", "name"})},
              {"uid", text(owner, {"metadata", "uid"})},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

void remove_finalizer(Json& object, const std::string& finalizer) {
  Json& finalizers = object["metadata"]["finalizers"];
  if (!finalizers.is_array()) return;
  Json kept = Json::array();
  for (const Json& entry : finalizers) {
    if (entry != finalizer) kept.push_back(entry);
  }
  finalizers = kept;
}

bool has_finalizer(const Json& object, const std::string& finalizer) {
  const Json& finalizers = at(object, {"metadata", "finalizers"});
  return finalizers.is_array() &&
         std::ranges::find(finalizers, Json(finalizer)) != finalizers.end();
}

bool pod_is_ready(const Json& pod) {
  if (text(pod, {"status", "phase"}) != "Running") return false;
  const Json& conditions = at(pod, {"status", "conditions"});
  return conditions.is_array() && std::ranges::any_of(conditions, [](const Json& condition) {
           return condition.value("type", "") == "Ready" && condition.value("status", "") == "True";
         });
}

bool pod_is_terminated(const Json& pod) {
  const std::string phase = text(pod, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

std::vector<std::pair<std::string, std::string>> pod_claims(const Json& pod) {
  std::vector<std::pair<std::string, std::string>> claims;
  const Json& volumes = at(pod, {"spec", "volumes"});
  if (!volumes.is_array()) return claims;
  for (const Json& volume : volumes) {
    const std::string claim = text(volume, {"persistentVolumeClaim", "claimName"});
    if (!claim.empty()) claims.emplace_back(text(volume, {"name"}), claim);
  }
  return claims;
}

Json condition(const std::string& type, const std::string& reason, const std::string& message,
               const std::string& now) {
  return Json{{"type", type},       {"status", "True"},     {"reason", reason},
              {"message", message}, {"lastProbeTime", now}, {"lastTransitionTime", now}};
}

}  // namespace stsresize::sim
