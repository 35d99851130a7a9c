#include "engine/statefulset_deletion.h"

#include <algorithm>

#include "engine/cleanup_pod.h"
#include "engine/k8s_objects.h"

namespace stsresize {

namespace {

// "<sts>-<ordinal>" with a canonical non-negative ordinal.
bool named_as_replica(const std::string& pod, const std::string& sts) {
  const std::string prefix = sts + "-";
  if (!pod.starts_with(prefix) || pod.size() == prefix.size()) return false;
  const std::string_view digits = std::string_view{pod}.substr(prefix.size());
  if (digits.size() > 1 && digits.front() == '0') return false;
  return std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool has_finalizer(const Json& object, std::string_view finalizer) {
  const Json& metadata = object.value("metadata", Json::object());
  const Json& finalizers = metadata.value("finalizers", Json::array());
  return finalizers.is_array() && std::ranges::any_of(finalizers, [&](const Json& f) {
           return f.is_string() && f.get<std::string>() == finalizer;
         });
}

void add_finalizer(Json& object, std::string_view finalizer) {
  if (has_finalizer(object, finalizer)) return;
  Json& finalizers = object["metadata"]["finalizers"];
  if (!finalizers.is_array()) finalizers = Json::array();
  finalizers.push_back(std::string{finalizer});
}

void remove_finalizer(Json& object, std::string_view finalizer) {
  if (!has_finalizer(object, finalizer)) return;
  Json kept = Json::array();
  for (const Json& f : object["metadata"]["finalizers"]) {
    if (!(f.is_string() && f.get<std::string>() == finalizer)) kept.push_back(f);
  }
  if (kept.empty()) {
    object["metadata"].erase("finalizers");
  } else {
    object["metadata"]["finalizers"] = std::move(kept);
  }
}

Deletion read_deletion(const Json& statefulset, std::span<const Json> pods) {
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting || !*deleting) return {DeletionReading::NotDeleted, "not being deleted"};
  if (has_finalizer(statefulset, kOrphanFinalizer)) {
    return {DeletionReading::Orphan,
            "deleted with propagation Orphan (finalizer " + std::string{kOrphanFinalizer} + ")"};
  }
  const std::string sts = k8s::name(statefulset).value_or("");
  const std::string uid = k8s::uid(statefulset).value_or("");
  bool owned_pod = false;
  std::string owned_name;
  for (const Json& pod : pods) {
    const std::string name = k8s::name(pod).value_or("");
    if (!named_as_replica(name, sts) || is_cleanup_pod(pod, sts)) continue;
    auto owners = k8s::owner_references(pod);
    const bool owned = owners && std::ranges::any_of(*owners, [&](const k8s::OwnerReference& o) {
                         return o.uid == uid;
                       });
    if (!owned) {
      return {DeletionReading::Orphan,
              "pod " + name + " runs without an ownerReference to it (its pods were orphaned)"};
    }
    if (!owned_pod) owned_name = name;
    owned_pod = true;
  }
  if (has_finalizer(statefulset, kForegroundFinalizer)) {
    return {DeletionReading::Cascade, "deleted with propagation Foreground (finalizer " +
                                          std::string{kForegroundFinalizer} + ")"};
  }
  if (owned_pod) {
    return {DeletionReading::Cascade,
            "deleted with propagation Background (pod " + owned_name + " still names it as owner)"};
  }
  return {DeletionReading::Unclear,
          "no pod of it is left and no finalizer of Kubernetes says how it was deleted (an orphan "
          "delete looks the same)"};
}

}  // namespace stsresize
