#pragma once
// What the deletion of a StatefulSet that opts in to the drain asks for. A delete that cascades
// (propagation Background or Foreground) removes the replicas: every ordinal's claims are
// drained before the finalizer lets the delete finish. A delete with propagation Orphan
// (`kubectl delete sts --cascade=orphan`, stsresize's own resize re-create) keeps the pods
// running for the StatefulSet applied again: nothing is drained. The API server records the
// propagation only in finalizers the garbage collector removes within moments, so every signal
// is read, and a delete that cannot be told apart is read as an orphan delete. Pure.
#include <span>
#include <string>
#include <string_view>

#include "engine/json.h"

namespace stsresize {

// Kubernetes' finalizers of a delete in progress (set by the API server, removed by the garbage
// collector once it orphaned, or deleted, the dependents).
inline constexpr std::string_view kOrphanFinalizer = "orphan";
inline constexpr std::string_view kForegroundFinalizer = "foregroundDeletion";

enum class DeletionReading {
  NotDeleted,  // no deletionTimestamp
  Cascade,     // the replicas are deleted with the set: drain every ordinal
  Orphan,      // the pods outlive the set: drain nothing
  Unclear,     // no signal either way (no pod left, no finalizer of Kubernetes): drain nothing
};

struct Deletion {
  DeletionReading reading = DeletionReading::NotDeleted;
  std::string why;  // for people: the signal read
};

// In this order: not deleted; the `orphan` finalizer; a pod "<sts>-<ordinal>" that is not a
// cleanup pod of the set and has no ownerReference to it (its dependents were orphaned, or it
// is someone else's); the `foregroundDeletion` finalizer; a pod of the set that names it as its
// owner (a Background delete: the garbage collector leaves the dependents while the owner is
// held by a finalizer); else Unclear. The state annotation of a resize (whose re-create deletes
// with Orphan) is read by the caller, which knows the operation in flight.
Deletion read_deletion(const Json& statefulset, std::span<const Json> pods);

bool has_finalizer(const Json& object, std::string_view finalizer);
// metadata.finalizers with `finalizer` added (at the end) or removed; the rest unchanged.
void add_finalizer(Json& object, std::string_view finalizer);
void remove_finalizer(Json& object, std::string_view finalizer);

}  // namespace stsresize
