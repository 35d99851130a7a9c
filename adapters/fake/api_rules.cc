#include "adapters/fake/api_rules.h"

#include <algorithm>
#include <cctype>

#include "adapters/fake/selectors.h"
#include "engine/quantity.h"

namespace stsresize::fake {
namespace {

bool is_lower_alnum(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}

// RFC 1123 label (max 63) or subdomain (max 253, dots allowed between labels).
bool is_dns_name(const std::string& name, bool subdomain) {
  const std::size_t max = subdomain ? 253 : 63;
  if (name.empty() || name.size() > max) return false;
  if (!is_lower_alnum(name.front()) || !is_lower_alnum(name.back())) return false;
  return std::ranges::all_of(
      name, [&](char c) { return is_lower_alnum(c) || c == '-' || (subdomain && c == '.'); });
}

// Go's zero values: an absent field equals "", 0, false, an empty list or map.
bool is_zero(const Json& value) {
  return value.is_null() || (value.is_string() && value.get<std::string>().empty()) ||
         (value.is_number() && value == 0) || (value.is_boolean() && !value.get<bool>()) ||
         (value.is_array() && value.empty()) || (value.is_object() && value.empty());
}
bool semantically_equal(const Json& a, const Json& b) {
  return a == b || (is_zero(a) && is_zero(b));
}

void set_default(Json& object, const char* key, Json value) {
  if (!object.contains(key) || object[key].is_null()) object[key] = std::move(value);
}

std::string name_of(const Json& object) {
  const Json& name = at_or_null(object, {"metadata", "name"});
  return name.is_string() ? name.get<std::string>() : "";
}

void validate_pod_spec(const Json& pod_spec, const std::string& path, FieldErrors& errors) {
  const Json& containers = at_or_null(pod_spec, {"containers"});
  if (!containers.is_array() || containers.empty()) {
    errors.push_back(path + ".containers: Required value");
    return;
  }
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const std::string at = path + ".containers[" + std::to_string(i) + "]";
    if (!containers[i].is_object() || containers[i].value("name", "").empty()) {
      errors.push_back(at + ".name: Required value");
    }
    if (!containers[i].is_object() || containers[i].value("image", "").empty()) {
      errors.push_back(at + ".image: Required value");
    }
  }
}

void validate_claim_spec(const Json& spec, const std::string& path, FieldErrors& errors) {
  const Json& modes = at_or_null(spec, {"accessModes"});
  if (!modes.is_array() || modes.empty()) {
    errors.push_back(path + ".accessModes: Required value: at least 1 access mode is required");
  }
  const Json& storage = at_or_null(spec, {"resources", "requests", "storage"});
  if (storage.is_null()) {
    errors.push_back(path + ".resources[storage]: Required value");
  } else if (!storage_bytes(at_or_null(spec, {"resources", "requests"})).has_value()) {
    errors.push_back(path + ".resources.requests[storage]: Invalid value: " + storage.dump() +
                     ": must be a valid quantity");
  }
}

void validate_selector_matches_template(const Json& spec, FieldErrors& errors) {
  const Json& selector = at_or_null(spec, {"selector"});
  if (selector.is_null()) {
    errors.push_back("spec.selector: Required value");
    return;
  }
  auto parsed = LabelSelector::from_json(selector);
  if (!parsed) {
    errors.push_back("spec.selector: Invalid value: " + parsed.error());
    return;
  }
  if (selector.value("matchLabels", Json::object()).empty() &&
      selector.value("matchExpressions", Json::array()).empty()) {
    errors.push_back("spec.selector: Invalid value: empty selector is invalid for this kind");
    return;
  }
  if (!parsed->matches(at_or_null(spec, {"template", "metadata", "labels"}))) {
    errors.push_back(
        "spec.template.metadata.labels: Invalid value: `selector` does not match template "
        "`labels`");
  }
}

void validate_statefulset_spec(const Json& object, FieldErrors& errors) {
  const Json& spec = at_or_null(object, {"spec"});
  validate_selector_matches_template(spec, errors);
  const Json& replicas = at_or_null(spec, {"replicas"});
  if (replicas.is_number() && replicas.get<std::int64_t>() < 0) {
    errors.push_back("spec.replicas: Invalid value: must be greater than or equal to 0");
  }
  validate_pod_spec(at_or_null(spec, {"template", "spec"}), "spec.template.spec", errors);
  const std::string restart =
      at_or_null(spec, {"template", "spec"}).value("restartPolicy", "Always");
  if (restart != "Always") {
    errors.push_back("spec.template.spec.restartPolicy: Unsupported value: \"" + restart +
                     "\": supported values: \"Always\"");
  }
  const Json& templates = at_or_null(spec, {"volumeClaimTemplates"});
  for (std::size_t i = 0; templates.is_array() && i < templates.size(); ++i) {
    const std::string at = "spec.volumeClaimTemplates[" + std::to_string(i) + "]";
    if (is_zero(at_or_null(templates[i], {"metadata", "name"}))) {
      errors.push_back(at + ".metadata.name: Required value");
    }
    validate_claim_spec(at_or_null(templates[i], {"spec"}), at + ".spec", errors);
  }
}

void validate_job_spec(const Json& object, FieldErrors& errors) {
  const Json& spec = at_or_null(object, {"spec"});
  validate_selector_matches_template(spec, errors);
  validate_pod_spec(at_or_null(spec, {"template", "spec"}), "spec.template.spec", errors);
  const std::string restart = at_or_null(spec, {"template", "spec"}).value("restartPolicy", "");
  if (restart != "Never" && restart != "OnFailure") {
    errors.push_back(
        "spec.template.spec.restartPolicy: Required value: valid values: "
        "\"OnFailure\", \"Never\"");
  }
}

void immutable(const Json& now, const Json& before, const std::string& path, FieldErrors& errors) {
  if (!semantically_equal(now, before))
    errors.push_back(path + ": Invalid value: field is immutable");
}

void default_claim_spec(Json& claim) {
  Json& spec = claim["spec"];
  if (spec.is_object()) set_default(spec, "volumeMode", "Filesystem");
}

// Defaulting (SetDefaults_*): runs on every decoded body, create and update alike, so a client
// that omits a defaulted field does not change it.
void apply_defaults(Kind kind, Json& object) {
  Json& spec = object["spec"];
  switch (kind) {
    case Kind::StatefulSet: {
      set_default(spec, "replicas", 1);
      set_default(spec, "podManagementPolicy", "OrderedReady");
      set_default(spec, "updateStrategy",
                  Json{{"type", "RollingUpdate"}, {"rollingUpdate", {{"partition", 0}}}});
      set_default(spec, "revisionHistoryLimit", 10);
      set_default(spec, "persistentVolumeClaimRetentionPolicy",
                  Json{{"whenDeleted", "Retain"}, {"whenScaled", "Retain"}});
      if (spec.contains("template") && spec["template"].is_object()) {
        set_default(spec["template"]["spec"], "restartPolicy", "Always");
      }
      if (spec.contains("volumeClaimTemplates") && spec["volumeClaimTemplates"].is_array()) {
        for (Json& claim : spec["volumeClaimTemplates"]) {
          if (!claim.is_object()) continue;
          set_default(claim, "apiVersion", "v1");
          set_default(claim, "kind", "PersistentVolumeClaim");
          default_claim_spec(claim);
          set_default(claim, "status", Json{{"phase", "Pending"}});
        }
      }
      break;
    }
    case Kind::Job:
      set_default(spec, "parallelism", 1);
      set_default(spec, "completions", 1);
      set_default(spec, "backoffLimit", 6);
      set_default(spec, "completionMode", "NonIndexed");
      set_default(spec, "manualSelector", false);
      set_default(spec, "suspend", false);
      set_default(spec, "podReplacementPolicy", "TerminatingOrFailed");
      break;
    case Kind::PersistentVolumeClaim:
      default_claim_spec(object);
      break;
    case Kind::Pod:
      set_default(spec, "restartPolicy", "Always");
      break;
    case Kind::PersistentVolume:
      set_default(spec, "persistentVolumeReclaimPolicy", "Retain");
      set_default(spec, "volumeMode", "Filesystem");
      break;
    case Kind::StorageClass:
      object.erase("spec");  // StorageClass has its fields at the top level
      set_default(object, "reclaimPolicy", "Delete");
      set_default(object, "volumeBindingMode", "Immediate");
      return;
    default:
      break;
  }
  if (spec.is_null()) object.erase("spec");
}

}  // namespace

const Json& at_or_null(const Json& object, std::initializer_list<const char*> path) {
  static const Json null_json;
  const Json* node = &object;
  for (const char* key : path) {
    if (!node->is_object()) return null_json;
    auto it = node->find(key);
    if (it == node->end()) return null_json;
    node = &*it;
  }
  return *node;
}

namespace {

// "<name>.<group>", or the name alone for the core group.
std::string qualified(std::string_view name, Kind kind) {
  const std::string_view group = kind_info(kind).group;
  if (group.empty()) return std::string{name};
  return std::string{name} + "." + std::string{group};
}

}  // namespace

std::string qualified_resource(Kind kind) {
  return qualified(kind_info(kind).plural, kind);
}

std::string qualified_kind(Kind kind) {
  return qualified(kind_info(kind).name, kind);
}

bool has_status_subresource(Kind kind) {
  return kind == Kind::StatefulSet || kind == Kind::Job || kind == Kind::Pod ||
         kind == Kind::PersistentVolumeClaim || kind == Kind::PersistentVolume ||
         kind == Kind::Node;
}

bool tracks_generation(Kind kind) {
  return kind == Kind::StatefulSet || kind == Kind::Job || kind == Kind::Pod;
}

bool allows_unconditional_update(Kind kind) {
  return kind != Kind::Lease;
}

bool allows_create_on_update(Kind kind) {
  return kind == Kind::Event || kind == Kind::Lease;
}

KubeError invalid(Kind kind, const std::string& name, const FieldErrors& errors) {
  std::string message = qualified_kind(kind) + " \"" + name + "\" is invalid: ";
  if (errors.size() == 1) return KubeError{KubeErrorCode::Invalid, message + errors.front()};
  message += "[";
  for (std::size_t i = 0; i < errors.size(); ++i) message += (i ? ", " : "") + errors[i];
  return KubeError{KubeErrorCode::Invalid, message + "]"};
}

std::optional<std::int64_t> storage_bytes(const Json& resource_list) {
  const Json& storage = at_or_null(resource_list, {"storage"});
  if (!storage.is_string()) return std::nullopt;
  auto quantity = Quantity::parse(storage.get<std::string>());
  if (!quantity) return std::nullopt;
  return quantity->bytes();
}

void prepare_for_create(Kind kind, Json& object) {
  apply_defaults(kind, object);
  Json& metadata = object["metadata"];
  if (tracks_generation(kind)) metadata["generation"] = 1;
  switch (kind) {
    case Kind::StatefulSet:
      object["status"] = Json{{"replicas", 0}, {"availableReplicas", 0}};
      break;
    case Kind::Job: {
      object["status"] = Json::object();
      Json& spec = object["spec"];
      if (!spec.value("manualSelector", false)) {
        // generateSelector: the Job owns its pods by its uid, and labels them with its name.
        const std::string uid = metadata.value("uid", "");
        const std::string name = metadata.value("name", "");
        spec["selector"] = Json{{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid}}}};
        Json& labels = spec["template"]["metadata"]["labels"];
        labels["batch.kubernetes.io/controller-uid"] = uid;
        labels["batch.kubernetes.io/job-name"] = name;
        labels["controller-uid"] = uid;
        labels["job-name"] = name;
      }
      break;
    }
    case Kind::PersistentVolumeClaim:
    case Kind::Pod:
    case Kind::PersistentVolume:
      object["status"] = Json{{"phase", "Pending"}};
      break;
    default:
      object.erase("status");
      break;
  }
}

FieldErrors validate_create(Kind kind, const Json& object) {
  FieldErrors errors;
  const std::string name = name_of(object);
  const bool label_name = kind == Kind::StatefulSet || kind == Kind::Job;
  if (name.empty()) {
    errors.push_back("metadata.name: Required value: name or generateName is required");
  } else if (!is_dns_name(name, !label_name)) {
    errors.push_back("metadata.name: Invalid value: \"" + name + "\": a lowercase RFC 1123 " +
                     (label_name ? "label" : "subdomain") +
                     " must consist of lower case alphanumeric characters, '-' or '.'");
  }
  if (is_namespaced(kind) && object["metadata"].value("namespace", "").empty()) {
    errors.push_back("metadata.namespace: Required value");
  }
  const Json labels = object["metadata"].value("labels", Json::object());
  for (const auto& [key, value] : labels.items()) {
    if (!value.is_string() || value.get<std::string>().size() > 63) {
      errors.push_back("metadata.labels: Invalid value: \"" + key +
                       "\": must be no more than 63 characters");
    }
  }
  switch (kind) {
    case Kind::StatefulSet:
      validate_statefulset_spec(object, errors);
      break;
    case Kind::Job:
      validate_job_spec(object, errors);
      break;
    case Kind::PersistentVolumeClaim:
      validate_claim_spec(at_or_null(object, {"spec"}), "spec", errors);
      break;
    case Kind::Pod:
      validate_pod_spec(at_or_null(object, {"spec"}), "spec", errors);
      break;
    case Kind::StorageClass:
      if (object.value("provisioner", "").empty()) errors.push_back("provisioner: Required value");
      break;
    case Kind::PersistentVolume:
      if (at_or_null(object, {"spec", "capacity", "storage"}).is_null()) {
        errors.push_back("spec.capacity: Required value");
      }
      break;
    default:
      break;
  }
  return errors;
}

void prepare_for_update(Kind kind, Json& object, const Json& old) {
  apply_defaults(kind, object);
  if (has_status_subresource(kind)) {
    if (old.contains("status")) {
      object["status"] = old["status"];
    } else {
      object.erase("status");
    }
  }
  if (tracks_generation(kind)) {
    const std::int64_t generation = old["metadata"].value("generation", std::int64_t{0});
    const bool spec_changed = at_or_null(object, {"spec"}) != at_or_null(old, {"spec"});
    object["metadata"]["generation"] = spec_changed ? generation + 1 : generation;
  }
}

void prepare_for_status_update(Kind kind, Json& object, const Json& old) {
  if (old.contains("spec")) {
    object["spec"] = old["spec"];
  } else {
    object.erase("spec");
  }
  Json& metadata = object["metadata"];
  const Json& old_metadata = old["metadata"];
  if (tracks_generation(kind)) metadata["generation"] = old_metadata.value("generation", 0);
  if (kind == Kind::Pod) {
    for (const char* key : {"labels", "annotations", "finalizers", "ownerReferences"}) {
      if (old_metadata.contains(key)) {
        metadata[key] = old_metadata[key];
      } else {
        metadata.erase(key);
      }
    }
  }
}

FieldErrors validate_update(Kind kind, const Json& object, const Json& old, bool status_update) {
  FieldErrors errors;
  const Json& metadata = object["metadata"];
  const Json& old_metadata = old["metadata"];
  immutable(metadata.value("uid", ""), old_metadata.value("uid", ""), "metadata.uid", errors);
  if (old_metadata.contains("deletionTimestamp")) {
    const Json old_finalizers = old_metadata.value("finalizers", Json::array());
    for (const Json& finalizer : metadata.value("finalizers", Json::array())) {
      if (std::ranges::find(old_finalizers, finalizer) == old_finalizers.end()) {
        errors.push_back(
            "metadata.finalizers: Forbidden: no new finalizers can be added if "
            "the object is being deleted, found new finalizers " +
            finalizer.dump());
      }
    }
  }
  if (status_update) return errors;

  const Json& spec = at_or_null(object, {"spec"});
  const Json& old_spec = at_or_null(old, {"spec"});
  switch (kind) {
    case Kind::StatefulSet:
      validate_statefulset_spec(object, errors);
      for (const char* field :
           {"selector", "volumeClaimTemplates", "serviceName", "podManagementPolicy"}) {
        immutable(at_or_null(spec, {field}), at_or_null(old_spec, {field}),
                  std::string{"spec."} + field, errors);
      }
      break;
    case Kind::Job:
      validate_job_spec(object, errors);
      for (const char* field : {"selector", "template", "completionMode"}) {
        immutable(at_or_null(spec, {field}), at_or_null(old_spec, {field}),
                  std::string{"spec."} + field, errors);
      }
      break;
    case Kind::PersistentVolumeClaim: {
      validate_claim_spec(spec, "spec", errors);
      // ValidatePersistentVolumeClaimUpdate: the spec is frozen, except that volumeName may be
      // set once and, for bound claims only, resources.requests may change.
      Json new_clone = spec;
      Json old_clone = old_spec;
      if (old_clone.value("volumeName", "").empty() && new_clone.contains("volumeName")) {
        old_clone["volumeName"] = new_clone["volumeName"];
      }
      const bool bound = at_or_null(old, {"status", "phase"}) == "Bound";
      if (bound && new_clone.contains("resources") && new_clone["resources"].contains("requests")) {
        new_clone["resources"]["requests"]["storage"] =
            at_or_null(old_spec, {"resources", "requests", "storage"});
      }
      if (new_clone != old_clone) {
        errors.push_back(
            "spec: Forbidden: spec is immutable after creation except "
            "resources.requests and volumeAttributesClassName for bound claims");
      }
      const auto new_size = storage_bytes(at_or_null(spec, {"resources", "requests"}));
      const auto old_size = storage_bytes(at_or_null(old_spec, {"resources", "requests"}));
      const auto capacity = storage_bytes(at_or_null(old, {"status", "capacity"})).value_or(0);
      // RecoverVolumeExpansionFailure (on by default): shrinking is allowed only down to just
      // above what the volume already has, to undo a failed expansion.
      if (new_size && old_size && *new_size < *old_size && *new_size <= capacity) {
        errors.push_back(
            "spec.resources.requests.storage: Forbidden: field can not be less than "
            "status.capacity");
      }
      break;
    }
    case Kind::Pod:
      validate_pod_spec(spec, "spec", errors);
      immutable(at_or_null(spec, {"volumes"}), at_or_null(old_spec, {"volumes"}), "spec.volumes",
                errors);
      immutable(at_or_null(spec, {"restartPolicy"}), at_or_null(old_spec, {"restartPolicy"}),
                "spec.restartPolicy", errors);
      break;
    case Kind::StorageClass:
      for (const char* field :
           {"provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"}) {
        immutable(at_or_null(object, {field}), at_or_null(old, {field}), field, errors);
      }
      break;
    default:
      break;
  }
  return errors;
}

}  // namespace stsresize::fake
