#include "engine/k8s_objects.h"

#include <algorithm>
#include <array>
#include <limits>

namespace stsresize::k8s {
namespace {

using Path = std::initializer_list<std::string_view>;

std::string joined(Path path) {
  std::string out;
  for (std::string_view part : path) {
    if (!out.empty()) out += '.';
    out += part;
  }
  return out;
}

std::unexpected<std::string> fail(const Json& object, std::string_view field,
                                  std::string_view problem) {
  return std::unexpected(describe(object) + ": " + std::string{field} + " " + std::string{problem});
}

// The value at `path`, nullptr when it (or a parent) is absent or null. A parent that exists but
// is not an object is malformed.
Result<const Json*> lookup(const Json& root, const Json& value, Path path) {
  const Json* current = &value;
  std::string walked;
  for (std::string_view key : path) {
    if (!current->is_object()) {
      return fail(root, walked.empty() ? std::string{"object"} : walked, "is not an object");
    }
    const auto it = current->find(key);
    if (it == current->end() || it->is_null()) return nullptr;
    if (!walked.empty()) walked += '.';
    walked += key;
    current = &*it;
  }
  return current;
}

Result<const Json*> lookup(const Json& object, Path path) {
  return lookup(object, object, path);
}

Result<std::optional<std::string>> optional_string(const Json& root, const Json& value, Path path,
                                                   std::string_view field) {
  auto found = lookup(root, value, path);
  if (!found) return std::unexpected(found.error());
  if (*found == nullptr) return std::nullopt;
  if (!(*found)->is_string()) return fail(root, field, "is not a string");
  return (*found)->get<std::string>();
}

Result<std::optional<std::string>> optional_string(const Json& object, Path path) {
  return optional_string(object, object, path, joined(path));
}

Result<std::string> string_or(const Json& object, Path path, std::string fallback) {
  auto value = optional_string(object, path);
  if (!value) return std::unexpected(value.error());
  return value->value_or(std::move(fallback));
}

Result<std::optional<std::int64_t>> optional_int(const Json& root, const Json& value, Path path,
                                                 std::string_view field, std::int64_t min,
                                                 std::int64_t max) {
  auto found = lookup(root, value, path);
  if (!found) return std::unexpected(found.error());
  if (*found == nullptr) return std::nullopt;
  const Json& v = **found;
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    if (n > static_cast<std::uint64_t>(max)) return fail(root, field, "is out of range");
    return static_cast<std::int64_t>(n);
  }
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n < min || n > max) return fail(root, field, "is out of range");
    return n;
  }
  return fail(root, field, "is not an integer");
}

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Counts and sizes Kubernetes declares as non-negative int32, defaulting when omitted.
Result<std::int32_t> count_or(const Json& object, Path path, std::int32_t fallback) {
  auto value = optional_int(object, object, path, joined(path), 0, kInt32Max);
  if (!value) return std::unexpected(value.error());
  return static_cast<std::int32_t>(value->value_or(fallback));
}

Result<std::optional<bool>> optional_bool(const Json& object, Path path) {
  auto found = lookup(object, path);
  if (!found) return std::unexpected(found.error());
  if (*found == nullptr) return std::nullopt;
  if (!(*found)->is_boolean()) return fail(object, joined(path), "is not a boolean");
  return (*found)->get<bool>();
}

Result<StringMap> string_map(const Json& root, const Json& value, Path path,
                             std::string_view field) {
  auto found = lookup(root, value, path);
  if (!found) return std::unexpected(found.error());
  StringMap out;
  if (*found == nullptr) return out;
  if (!(*found)->is_object()) return fail(root, field, "is not an object");
  for (const auto& [key, v] : (*found)->items()) {
    if (!v.is_string()) return fail(root, std::string{field} + "." + key, "is not a string");
    out.emplace(key, v.get<std::string>());
  }
  return out;
}

Result<StringMap> string_map(const Json& object, Path path) {
  return string_map(object, object, path, joined(path));
}

Result<const Json*> optional_array(const Json& object, Path path) {
  auto found = lookup(object, path);
  if (!found) return std::unexpected(found.error());
  if (*found != nullptr && !(*found)->is_array()) {
    return fail(object, joined(path), "is not an array");
  }
  return *found;
}

Result<std::vector<std::string>> string_list(const Json& root, const Json& value, Path path,
                                             std::string_view field) {
  auto found = lookup(root, value, path);
  if (!found) return std::unexpected(found.error());
  std::vector<std::string> out;
  if (*found == nullptr) return out;
  if (!(*found)->is_array()) return fail(root, field, "is not an array");
  for (const Json& item : **found) {
    if (!item.is_string()) return fail(root, field, "has an entry that is not a string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<std::optional<Quantity>> optional_quantity(const Json& root, const Json& value, Path path,
                                                  std::string_view field) {
  auto text = optional_string(root, value, path, field);
  if (!text) return std::unexpected(text.error());
  if (!*text) return std::nullopt;
  auto quantity = Quantity::parse(**text);
  if (!quantity) return fail(root, field, "is invalid: " + quantity.error());
  return *quantity;
}

// The map at metadata.<which>, created if absent; an error if something else is in the way.
Result<Json*> writable_metadata_map(Json& object, std::string_view which) {
  if (!object.is_object()) return fail(object, "object", "is not an object");
  Json& meta = object["metadata"];
  if (meta.is_null()) meta = Json::object();
  if (!meta.is_object()) return fail(object, "metadata", "is not an object");
  Json& map = meta[std::string{which}];
  if (map.is_null()) map = Json::object();
  if (!map.is_object()) return fail(object, "metadata." + std::string{which}, "is not an object");
  return &map;
}

Result<void> set_in_metadata_map(Json& object, std::string_view which, std::string_view key,
                                 std::string_view value) {
  // Check before writing, so that a malformed object is left untouched.
  if (object.is_object() && object.contains("metadata")) {
    const Json& meta = object.at("metadata");
    if (!meta.is_null() && !meta.is_object()) return fail(object, "metadata", "is not an object");
    if (meta.is_object() && meta.contains(which) && !meta.at(which).is_null() &&
        !meta.at(which).is_object()) {
      return fail(object, "metadata." + std::string{which}, "is not an object");
    }
  }
  auto map = writable_metadata_map(object, which);
  if (!map) return std::unexpected(map.error());
  (**map)[std::string{key}] = std::string{value};
  return {};
}

bool is_binder_annotation(std::string_view key) {
  static constexpr std::array<std::string_view, 3> kPrefixes = {
      "pv.kubernetes.io/", "volume.beta.kubernetes.io/", "volume.kubernetes.io/"};
  return std::ranges::any_of(kPrefixes, [&](std::string_view p) { return key.starts_with(p); });
}

}  // namespace

std::string describe(const Json& object) {
  if (!object.is_object()) return "object";
  std::string out;
  if (const auto kind = object.find("kind"); kind != object.end() && kind->is_string()) {
    out = kind->get<std::string>();
  } else {
    out = "object";
  }
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return out;
  const auto ns = meta->find("namespace");
  const auto n = meta->find("name");
  out += ' ';
  if (ns != meta->end() && ns->is_string() && !ns->get<std::string>().empty()) {
    out += ns->get<std::string>() + "/";
  }
  out += (n != meta->end() && n->is_string()) ? n->get<std::string>() : "<unnamed>";
  return out;
}

// --- metadata -------------------------------------------------------------------------------

Result<std::string> name(const Json& object) {
  auto value = optional_string(object, {"metadata", "name"});
  if (!value) return std::unexpected(value.error());
  if (!*value || (*value)->empty()) return fail(object, "metadata.name", "is missing");
  return **value;
}

Result<std::string> namespace_of(const Json& object) {
  return string_or(object, {"metadata", "namespace"}, "");
}
Result<std::string> uid(const Json& object) {
  return string_or(object, {"metadata", "uid"}, "");
}
Result<std::string> resource_version(const Json& object) {
  return string_or(object, {"metadata", "resourceVersion"}, "");
}

Result<std::int64_t> generation(const Json& object) {
  auto value =
      optional_int(object, object, {"metadata", "generation"}, "metadata.generation", 0, kInt64Max);
  if (!value) return std::unexpected(value.error());
  return value->value_or(0);
}

Result<StringMap> labels(const Json& object) {
  return string_map(object, {"metadata", "labels"});
}
Result<StringMap> annotations(const Json& object) {
  return string_map(object, {"metadata", "annotations"});
}

Result<std::optional<std::string>> label(const Json& object, std::string_view key) {
  auto all = labels(object);
  if (!all) return std::unexpected(all.error());
  const auto it = all->find(std::string{key});
  if (it == all->end()) return std::nullopt;
  return it->second;
}

Result<std::optional<std::string>> annotation(const Json& object, std::string_view key) {
  auto all = annotations(object);
  if (!all) return std::unexpected(all.error());
  const auto it = all->find(std::string{key});
  if (it == all->end()) return std::nullopt;
  return it->second;
}

Result<void> set_label(Json& object, std::string_view key, std::string_view value) {
  return set_in_metadata_map(object, "labels", key, value);
}

Result<void> set_annotation(Json& object, std::string_view key, std::string_view value) {
  return set_in_metadata_map(object, "annotations", key, value);
}

Result<void> remove_annotation(Json& object, std::string_view key) {
  auto found = lookup(object, {"metadata", "annotations"});
  if (!found) return std::unexpected(found.error());
  if (*found == nullptr) return {};
  if (!(*found)->is_object()) return fail(object, "metadata.annotations", "is not an object");
  object["metadata"]["annotations"].erase(std::string{key});
  return {};
}

Result<bool> is_being_deleted(const Json& object) {
  auto value = optional_string(object, {"metadata", "deletionTimestamp"});
  if (!value) return std::unexpected(value.error());
  return value->has_value();
}

Result<std::vector<OwnerReference>> owner_references(const Json& object) {
  auto list = optional_array(object, {"metadata", "ownerReferences"});
  if (!list) return std::unexpected(list.error());
  std::vector<OwnerReference> out;
  if (*list == nullptr) return out;
  for (const Json& item : **list) {
    const std::string field = "metadata.ownerReferences[" + std::to_string(out.size()) + "]";
    if (!item.is_object()) return fail(object, field, "is not an object");
    OwnerReference ref;
    for (auto [key, target] :
         {std::pair{"apiVersion", &ref.api_version}, std::pair{"kind", &ref.kind},
          std::pair{"name", &ref.name}, std::pair{"uid", &ref.uid}}) {
      auto value = optional_string(object, item, {key}, field + "." + key);
      if (!value) return std::unexpected(value.error());
      if (!*value) return fail(object, field + "." + key, "is missing");
      *target = **value;
    }
    const auto controller = item.find("controller");
    if (controller != item.end() && !controller->is_null()) {
      if (!controller->is_boolean()) return fail(object, field + ".controller", "is not a boolean");
      ref.controller = controller->get<bool>();
    }
    out.push_back(std::move(ref));
  }
  return out;
}

Result<std::vector<Condition>> conditions(const Json& object) {
  auto list = optional_array(object, {"status", "conditions"});
  if (!list) return std::unexpected(list.error());
  std::vector<Condition> out;
  if (*list == nullptr) return out;
  for (const Json& item : **list) {
    const std::string field = "status.conditions[" + std::to_string(out.size()) + "]";
    if (!item.is_object()) return fail(object, field, "is not an object");
    Condition c;
    for (auto [key, target, required] :
         {std::tuple{"type", &c.type, true}, std::tuple{"status", &c.status, true},
          std::tuple{"reason", &c.reason, false}, std::tuple{"message", &c.message, false}}) {
      auto value = optional_string(object, item, {key}, field + "." + key);
      if (!value) return std::unexpected(value.error());
      if (!*value && required) return fail(object, field + "." + key, "is missing");
      *target = value->value_or("");
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::optional<Condition>> condition(const Json& object, std::string_view type) {
  auto all = conditions(object);
  if (!all) return std::unexpected(all.error());
  const auto it = std::ranges::find(*all, type, &Condition::type);
  if (it == all->end()) return std::nullopt;
  return *it;
}

// --- StatefulSet ----------------------------------------------------------------------------

Result<std::int32_t> spec_replicas(const Json& statefulset) {
  return count_or(statefulset, {"spec", "replicas"}, 1);
}

Result<StatefulSetStatus> statefulset_status(const Json& statefulset) {
  StatefulSetStatus out;
  auto observed = optional_int(statefulset, statefulset, {"status", "observedGeneration"},
                               "status.observedGeneration", 0, kInt64Max);
  if (!observed) return std::unexpected(observed.error());
  out.observed_generation = observed->value_or(0);
  for (auto [key, target] :
       {std::pair{"replicas", &out.replicas}, std::pair{"readyReplicas", &out.ready_replicas},
        std::pair{"currentReplicas", &out.current_replicas},
        std::pair{"updatedReplicas", &out.updated_replicas},
        std::pair{"availableReplicas", &out.available_replicas}}) {
    auto value = count_or(statefulset, {"status", key}, 0);
    if (!value) return std::unexpected(value.error());
    *target = *value;
  }
  return out;
}

Result<std::vector<ClaimTemplate>> claim_templates(const Json& statefulset) {
  auto list = optional_array(statefulset, {"spec", "volumeClaimTemplates"});
  if (!list) return std::unexpected(list.error());
  std::vector<ClaimTemplate> out;
  if (*list == nullptr) return out;
  for (const Json& item : **list) {
    const std::string field = "spec.volumeClaimTemplates[" + std::to_string(out.size()) + "]";
    if (!item.is_object()) return fail(statefulset, field, "is not an object");
    ClaimTemplate t;
    auto template_name =
        optional_string(statefulset, item, {"metadata", "name"}, field + ".metadata.name");
    if (!template_name) return std::unexpected(template_name.error());
    if (!*template_name || (*template_name)->empty()) {
      return fail(statefulset, field + ".metadata.name", "is missing");
    }
    t.name = **template_name;
    auto storage =
        optional_quantity(statefulset, item, {"spec", "resources", "requests", "storage"},
                          field + ".spec.resources.requests.storage");
    if (!storage) return std::unexpected(storage.error());
    t.storage = *storage;
    auto storage_class = optional_string(statefulset, item, {"spec", "storageClassName"},
                                         field + ".spec.storageClassName");
    if (!storage_class) return std::unexpected(storage_class.error());
    t.storage_class = *storage_class;
    auto modes =
        string_list(statefulset, item, {"spec", "accessModes"}, field + ".spec.accessModes");
    if (!modes) return std::unexpected(modes.error());
    t.access_modes = std::move(*modes);
    out.push_back(std::move(t));
  }
  return out;
}

Result<ClaimTemplate> claim_template(const Json& statefulset, std::string_view template_name) {
  auto all = claim_templates(statefulset);
  if (!all) return std::unexpected(all.error());
  const auto it = std::ranges::find(*all, template_name, &ClaimTemplate::name);
  if (it == all->end()) {
    return fail(statefulset, "spec.volumeClaimTemplates",
                "has no template named \"" + std::string{template_name} + "\"");
  }
  return *it;
}

Result<StringMap> selector_match_labels(const Json& statefulset) {
  return string_map(statefulset, {"spec", "selector", "matchLabels"});
}

// --- PersistentVolumeClaim ------------------------------------------------------------------

Result<Quantity> requested_storage(const Json& pvc) {
  auto value = optional_quantity(pvc, pvc, {"spec", "resources", "requests", "storage"},
                                 "spec.resources.requests.storage");
  if (!value) return std::unexpected(value.error());
  if (!*value) return fail(pvc, "spec.resources.requests.storage", "is missing");
  return **value;
}

Result<std::optional<Quantity>> capacity(const Json& pvc) {
  return optional_quantity(pvc, pvc, {"status", "capacity", "storage"}, "status.capacity.storage");
}

Result<std::string> pvc_phase(const Json& pvc) {
  return string_or(pvc, {"status", "phase"}, "Pending");
}

Result<std::optional<std::string>> storage_class_name(const Json& pvc) {
  auto spec = optional_string(pvc, {"spec", "storageClassName"});
  if (!spec) return std::unexpected(spec.error());
  if (*spec) return *spec;
  return annotation(pvc, "volume.beta.kubernetes.io/storage-class");
}

Result<std::string> volume_name(const Json& pvc) {
  return string_or(pvc, {"spec", "volumeName"}, "");
}

Result<std::vector<std::string>> access_modes(const Json& pvc) {
  return string_list(pvc, pvc, {"spec", "accessModes"}, "spec.accessModes");
}

Result<Json> strip_for_recreate(const Json& pvc, const Quantity& storage,
                                std::optional<std::string> storage_class) {
  auto claim_name = name(pvc);
  if (!claim_name) return std::unexpected(claim_name.error());
  auto ns = namespace_of(pvc);
  if (!ns) return std::unexpected(ns.error());
  auto claim_labels = labels(pvc);
  if (!claim_labels) return std::unexpected(claim_labels.error());
  auto claim_annotations = annotations(pvc);
  if (!claim_annotations) return std::unexpected(claim_annotations.error());
  if (!storage_class) {
    auto old_class = storage_class_name(pvc);
    if (!old_class) return std::unexpected(old_class.error());
    storage_class = *old_class;
  }
  // Validate what is carried over, so the new body is no less well-formed than the old one.
  if (auto modes = access_modes(pvc); !modes) return std::unexpected(modes.error());
  for (const char* field : {"volumeMode", "volumeAttributesClassName"}) {
    if (auto v = optional_string(pvc, {"spec", field}); !v) return std::unexpected(v.error());
  }
  auto resources = lookup(pvc, {"spec", "resources"});
  if (!resources) return std::unexpected(resources.error());
  if (*resources != nullptr && !(*resources)->is_object()) {
    return fail(pvc, "spec.resources", "is not an object");
  }
  auto limit = optional_quantity(pvc, pvc, {"spec", "resources", "limits", "storage"},
                                 "spec.resources.limits.storage");
  if (!limit) return std::unexpected(limit.error());
  if (*limit && **limit < storage) {
    return fail(pvc, "spec.resources.limits.storage",
                "(" + (*limit)->to_string() + ") is below the new request " + storage.to_string());
  }
  if (auto requests = lookup(pvc, {"spec", "resources", "requests"});
      !requests || (*requests != nullptr && !(*requests)->is_object())) {
    return requests ? fail(pvc, "spec.resources.requests", "is not an object")
                    : std::unexpected(requests.error());
  }

  Json metadata = {{"name", *claim_name}};
  if (!ns->empty()) metadata["namespace"] = *ns;
  if (!claim_labels->empty()) metadata["labels"] = *claim_labels;
  Json kept_annotations = Json::object();
  for (const auto& [key, value] : *claim_annotations) {
    if (!is_binder_annotation(key)) kept_annotations[key] = value;
  }
  if (!kept_annotations.empty()) metadata["annotations"] = std::move(kept_annotations);

  auto old_spec = lookup(pvc, {"spec"});
  if (!old_spec) return std::unexpected(old_spec.error());
  if (*old_spec == nullptr) return fail(pvc, "spec", "is missing");
  Json spec = Json::object();
  for (const char* field : {"accessModes", "volumeMode", "volumeAttributesClassName"}) {
    const auto it = (*old_spec)->find(field);
    if (it != (*old_spec)->end() && !it->is_null()) spec[field] = *it;
  }
  Json new_resources = *resources != nullptr ? **resources : Json::object();
  if (!new_resources.contains("requests") || new_resources.at("requests").is_null()) {
    new_resources["requests"] = Json::object();
  }
  new_resources["requests"]["storage"] = storage.to_string();
  spec["resources"] = std::move(new_resources);
  if (storage_class) spec["storageClassName"] = *storage_class;

  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

// --- StorageClass ---------------------------------------------------------------------------

Result<bool> allows_volume_expansion(const Json& storage_class) {
  auto value = optional_bool(storage_class, {"allowVolumeExpansion"});
  if (!value) return std::unexpected(value.error());
  return value->value_or(false);
}

Result<std::string> provisioner(const Json& storage_class) {
  auto value = optional_string(storage_class, {"provisioner"});
  if (!value) return std::unexpected(value.error());
  if (!*value || (*value)->empty()) return fail(storage_class, "provisioner", "is missing");
  return **value;
}

// --- Job ------------------------------------------------------------------------------------

Result<JobStatus> job_status(const Json& job) {
  JobStatus out;
  for (auto [key, target] :
       {std::pair{"active", &out.active}, std::pair{"succeeded", &out.succeeded},
        std::pair{"failed", &out.failed}}) {
    auto value = count_or(job, {"status", key}, 0);
    if (!value) return std::unexpected(value.error());
    *target = *value;
  }
  auto all = conditions(job);
  if (!all) return std::unexpected(all.error());
  const auto is_true = [&](std::string_view type) {
    return std::ranges::find_if(
        *all, [&](const Condition& c) { return c.type == type && c.status == "True"; });
  };
  if (auto failed = is_true("Failed"); failed != all->end()) {
    out.outcome = JobOutcome::Failed;
    out.reason = failed->reason;
    out.message = failed->message;
  } else if (auto complete = is_true("Complete"); complete != all->end()) {
    out.outcome = JobOutcome::Complete;
    out.reason = complete->reason;
    out.message = complete->message;
  }
  return out;
}

Result<std::int32_t> backoff_limit(const Json& job) {
  return count_or(job, {"spec", "backoffLimit"}, 6);
}

// --- Pod ------------------------------------------------------------------------------------

Result<std::string> pod_phase(const Json& pod) {
  return string_or(pod, {"status", "phase"}, "Pending");
}

Result<std::vector<std::string>> mounted_claims(const Json& pod) {
  auto volumes = optional_array(pod, {"spec", "volumes"});
  if (!volumes) return std::unexpected(volumes.error());
  std::vector<std::string> claims;
  if (*volumes == nullptr) return claims;
  std::size_t index = 0;
  for (const Json& volume : **volumes) {
    const std::string field = "spec.volumes[" + std::to_string(index++) + "]";
    if (!volume.is_object()) return fail(pod, field, "is not an object");
    auto source = volume.find("persistentVolumeClaim");
    if (source == volume.end() || source->is_null()) continue;
    if (!source->is_object())
      return fail(pod, field + ".persistentVolumeClaim", "is not an object");
    auto claim = source->find("claimName");
    if (claim == source->end() || !claim->is_string()) {
      return fail(pod, field + ".persistentVolumeClaim.claimName", "is not a string");
    }
    claims.push_back(claim->get<std::string>());
  }
  return claims;
}

Result<std::optional<TerminatedContainer>> terminated_container(const Json& pod,
                                                                std::string_view container) {
  auto list = optional_array(pod, {"status", "containerStatuses"});
  if (!list) return std::unexpected(list.error());
  if (*list == nullptr) return std::nullopt;
  std::size_t index = 0;
  for (const Json& item : **list) {
    const std::string field = "status.containerStatuses[" + std::to_string(index++) + "]";
    if (!item.is_object()) return fail(pod, field, "is not an object");
    auto container_name = optional_string(pod, item, {"name"}, field + ".name");
    if (!container_name) return std::unexpected(container_name.error());
    if (*container_name != container) continue;
    auto terminated = lookup(pod, item, {"state", "terminated"});
    if (!terminated) return std::unexpected(terminated.error());
    if (*terminated == nullptr) return std::nullopt;
    const std::string t = field + ".state.terminated";
    TerminatedContainer out;
    auto exit_code = optional_int(pod, **terminated, {"exitCode"}, t + ".exitCode",
                                  std::numeric_limits<std::int32_t>::min(), kInt32Max);
    if (!exit_code) return std::unexpected(exit_code.error());
    if (!*exit_code) return fail(pod, t + ".exitCode", "is missing");
    out.exit_code = static_cast<std::int32_t>(**exit_code);
    auto reason = optional_string(pod, **terminated, {"reason"}, t + ".reason");
    if (!reason) return std::unexpected(reason.error());
    out.reason = reason->value_or("");
    auto message = optional_string(pod, **terminated, {"message"}, t + ".message");
    if (!message) return std::unexpected(message.error());
    out.message = message->value_or("");
    return out;
  }
  return std::nullopt;
}

Result<bool> pod_ready(const Json& pod) {
  auto ready = condition(pod, "Ready");
  if (!ready) return std::unexpected(ready.error());
  return ready->has_value() && (*ready)->status == "True";
}

}  // namespace stsresize::k8s
