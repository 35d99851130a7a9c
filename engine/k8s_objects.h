#pragma once
// Typed reads (and a few writes) over the Kubernetes objects the engine handles as Json. Not a
// model: each accessor reads only its own fields, and setters change only theirs, so a
// read-modify-write keeps everything this version does not know about.
//
// Contract of every reader: a field Kubernetes omits when empty or zero (omitempty) reads as
// Kubernetes' own default, stated per function; a field of the wrong type, or a required field
// that is missing, is an error naming the object and the field ("StatefulSet shop/web:
// spec.replicas is not an integer"), never a crash and never a silent guess.
//
// The controller's informer caches keep only the fields read (engine/cached_fields.h): the
// paths of every reader below on StatefulSets, claims and StorageClasses are listed there, each
// next to its reader's name. A reader that reads another field of those kinds, or a new caller
// of one on a cached object, adds its path there (tests/unit/cached_fields_test.cc shows it).
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/quantity.h"

namespace stsresize::k8s {

template <class T>
using Result = std::expected<T, std::string>;
using StringMap = std::map<std::string, std::string>;

// "StatefulSet shop/web" (kind and name as far as the object tells), for messages.
std::string describe(const Json& object);

// --- metadata -------------------------------------------------------------------------------
Result<std::string> name(const Json& object);              // required, non-empty
Result<std::string> namespace_of(const Json& object);      // "" when absent (cluster-scoped)
Result<std::string> uid(const Json& object);               // "" when absent (not yet created)
Result<std::string> resource_version(const Json& object);  // "" when absent
Result<std::int64_t> generation(const Json& object);       // 0 when absent
Result<StringMap> labels(const Json& object);              // empty when absent
Result<StringMap> annotations(const Json& object);         // empty when absent
Result<std::optional<std::string>> label(const Json& object, std::string_view key);
Result<std::optional<std::string>> annotation(const Json& object, std::string_view key);
// Create metadata/labels/annotations as needed; every other field is left as it was. An error
// (and no change) if one of those exists but is not an object.
Result<void> set_label(Json& object, std::string_view key, std::string_view value);
Result<void> set_annotation(Json& object, std::string_view key, std::string_view value);
Result<void> remove_annotation(Json& object, std::string_view key);  // absent is fine
// metadata.deletionTimestamp is set: the object is going away (finalizers may hold it).
Result<bool> is_being_deleted(const Json& object);

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;  // absent means false

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};
Result<std::vector<OwnerReference>> owner_references(const Json& object);  // empty when absent

// status.conditions[] of any kind (PVC, Job, Pod).
struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;

  friend bool operator==(const Condition&, const Condition&) = default;
};
Result<std::vector<Condition>> conditions(const Json& object);  // empty when absent
// The condition of that type if present.
Result<std::optional<Condition>> condition(const Json& object, std::string_view type);

// --- StatefulSet ----------------------------------------------------------------------------
Result<std::int32_t> spec_replicas(const Json& statefulset);  // 1 when absent (API default)

// status counters; each is 0 when absent (omitempty).
struct StatefulSetStatus {
  std::int64_t observed_generation = 0;
  std::int32_t replicas = 0;
  std::int32_t ready_replicas = 0;
  std::int32_t current_replicas = 0;
  std::int32_t updated_replicas = 0;
  std::int32_t available_replicas = 0;
};
Result<StatefulSetStatus> statefulset_status(const Json& statefulset);

struct ClaimTemplate {
  std::string name;
  std::optional<Quantity> storage;           // spec.resources.requests.storage
  std::optional<std::string> storage_class;  // spec.storageClassName; absent = cluster default
  std::vector<std::string> access_modes;
};
Result<std::vector<ClaimTemplate>> claim_templates(const Json& statefulset);  // empty if none
// An error when the StatefulSet has no template of that name.
Result<ClaimTemplate> claim_template(const Json& statefulset, std::string_view template_name);
// spec.selector.matchLabels (empty when absent; matchExpressions are not interpreted).
Result<StringMap> selector_match_labels(const Json& statefulset);

// --- PersistentVolumeClaim ------------------------------------------------------------------
Result<Quantity> requested_storage(const Json& pvc);        // required
Result<std::optional<Quantity>> capacity(const Json& pvc);  // status.capacity.storage if bound
Result<std::string> pvc_phase(const Json& pvc);             // "Pending" when absent (API default)
// spec.storageClassName, else the legacy annotation volume.beta.kubernetes.io/storage-class;
// nullopt when neither is set (the default class applies), "" for "no class".
Result<std::optional<std::string>> storage_class_name(const Json& pvc);
Result<std::string> volume_name(const Json& pvc);  // "" while unbound
Result<std::vector<std::string>> access_modes(const Json& pvc);

// A fresh PVC body to create in place of `pvc` (same name and namespace) with `storage` and,
// if given, `storage_class` (else the class the old claim had, as storage_class_name reads it).
// Kept: labels, annotations except the binder's and provisioner's (pv.kubernetes.io/*,
// volume.beta.kubernetes.io/*, volume.kubernetes.io/*), spec.accessModes, spec.volumeMode,
// spec.volumeAttributesClassName, spec.resources (requests.storage replaced).
// Dropped: everything server-set (uid, resourceVersion, creationTimestamp, generation,
// managedFields, finalizers, deletion fields, status), spec.volumeName (the new claim must get
// a new volume), ownerReferences (a reference to a deleted Pod would let the garbage collector
// delete the new claim; the StatefulSet controller re-adds what its retention policy wants),
// spec.selector and spec.dataSource/dataSourceRef (both would stop dynamic provisioning of an
// empty volume or pre-fill it with other data).
// An error if `pvc` is malformed or resources.limits.storage is below `storage`.
Result<Json> strip_for_recreate(const Json& pvc, const Quantity& storage,
                                std::optional<std::string> storage_class = std::nullopt);

// --- StorageClass ---------------------------------------------------------------------------
Result<bool> allows_volume_expansion(const Json& storage_class);  // false when absent
Result<std::string> provisioner(const Json& storage_class);       // required

// --- Job ------------------------------------------------------------------------------------
enum class JobOutcome { Running, Complete, Failed };
struct JobStatus {
  std::int32_t active = 0;
  std::int32_t succeeded = 0;
  std::int32_t failed = 0;
  // From the Complete / Failed conditions with status "True" (Failed wins if both claim it).
  JobOutcome outcome = JobOutcome::Running;
  std::string reason;   // of the deciding condition, e.g. "BackoffLimitExceeded"
  std::string message;  // of the deciding condition
};
Result<JobStatus> job_status(const Json& job);
Result<std::int32_t> backoff_limit(const Json& job);  // 6 when absent (API default)

// --- Pod ------------------------------------------------------------------------------------
Result<std::string> pod_phase(const Json& pod);  // "Pending" when absent
// The claims its spec.volumes[].persistentVolumeClaim.claimName name (empty when none).
Result<std::vector<std::string>> mounted_claims(const Json& pod);
struct TerminatedContainer {
  std::int32_t exit_code = 0;
  std::string reason;
  std::string message;  // the termination message (our copy summary)
};
// status.containerStatuses[name=container].state.terminated, nullopt if that container has not
// terminated (or has no status yet).
Result<std::optional<TerminatedContainer>> terminated_container(const Json& pod,
                                                                std::string_view container);
Result<bool> pod_ready(const Json& pod);  // condition Ready is "True"

}  // namespace stsresize::k8s
