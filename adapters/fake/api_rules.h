#pragma once
// What the API server's registry strategies do to an object of each kind, for the in-memory
// API server: defaulting on create, the status-subresource split, generation bumps, and the
// validation rules stsresize can run into (k8s.io/kubernetes v1.37 pkg/registry and
// pkg/apis/*/validation). Only a subset of validation is modelled: required fields, names,
// and every immutability rule that matters for resizing volumes. Rules that need other
// objects (admission: PVC resize against its StorageClass) live in FakeKubernetes.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::fake {

// The value at a path of object keys, or null when any step is missing or not an object.
const Json& at_or_null(const Json& object, std::initializer_list<const char*> path);
// "StatefulSet.apps", "PersistentVolumeClaim": how the API server names the kind in errors.
std::string qualified_kind(Kind kind);
// "statefulsets.apps", "persistentvolumeclaims": how it names the resource in other errors.
std::string qualified_resource(Kind kind);

bool has_status_subresource(Kind kind);
// The server keeps metadata.generation (bumped on spec changes) only for these kinds.
bool tracks_generation(Kind kind);
// An update without metadata.resourceVersion is applied unconditionally for most kinds;
// Lease refuses it (422).
bool allows_unconditional_update(Kind kind);
// Event and Lease: PUT of a missing object creates it.
bool allows_create_on_update(Kind kind);

// Every function below expects metadata to be an object (FakeKubernetes checks that first).

// Field errors, each "path: Reason: detail" as in a 422 Status message.
using FieldErrors = std::vector<std::string>;
KubeError invalid(Kind kind, const std::string& name, const FieldErrors& errors);

// Defaulting and PrepareForCreate: status reset, generation 1, Job selector and labels
// (from the uid the server just assigned), StatefulSet and PVC defaults.
void prepare_for_create(Kind kind, Json& object);
FieldErrors validate_create(Kind kind, const Json& object);

// PrepareForUpdate of the main resource: status kept from `old` for kinds with a status
// subresource, generation bumped when spec changed.
void prepare_for_update(Kind kind, Json& object, const Json& old);
// PrepareForUpdate of the /status subresource: spec kept from `old`; for Pods the metadata
// too (metav1.ResetObjectMetaForStatus). Other kinds really do keep metadata changes made
// through /status.
void prepare_for_status_update(Kind kind, Json& object, const Json& old);
// ValidateUpdate: metadata immutables and kind-specific immutable fields. `status_update`
// selects the /status rules (which do not check spec).
FieldErrors validate_update(Kind kind, const Json& object, const Json& old, bool status_update);

// spec.resources.requests.storage / status.capacity.storage as bytes; nullopt when absent or
// unparseable.
std::optional<std::int64_t> storage_bytes(const Json& resource_list);

}  // namespace stsresize::fake
