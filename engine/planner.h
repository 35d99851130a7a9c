#pragma once
// Detection and planning: which claims of a StatefulSet are smaller than their template asks,
// and whether they can be expanded in place or must be copied. Pure: the caller lists the
// objects.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"

namespace stsresize {

struct ResizePlan {
  Path path = Path::Undecided;
  std::vector<ClaimPlan> claims;
  // For people: "data 1Gi -> 2Gi (3 claims)", "data class fixed -> fast (3 claims)".
  std::string trigger;
  // Claims of this set's names left out because their labels name another StatefulSet, each
  // with why: "data-web-db-0 (label app=web-db; the selector says app=db)".
  std::vector<std::string> left_alone;
};

// For each volumeClaimTemplate and each existing claim "<template>-<sts>-<ordinal>" (ordinals
// at or above the current replica count included): a claim whose request is below the
// template's, or whose storageClassName is not the one the template names (a template that
// names none leaves each claim its own), is planned. A claim being deleted
// (metadata.deletionTimestamp) is skipped: the StatefulSet controller recreates it from the
// template. So is a claim whose labels give one of the selector's keys another value: it belongs to
// another StatefulSet whose name and template give the same claim name (the fence, states/fence.h,
// also refuses a claim another owner's pod mounts). Expand iff every planned claim's StorageClass
// exists, allows volume expansion and the claim keeps its class; else Copy. nullopt: nothing to do.
// A claim larger than its template asks is a shrink, always on the copy path (Measuring first
// checks that its data fits: shrinks(), states/measure.cc).
// Errors (no action is taken): a template without a storage request, an unparsable quantity, a
// shrink of a ReadWriteOncePod claim (it cannot be measured while its replica runs), a
// StorageClass that does not exist.
std::expected<std::optional<ResizePlan>, std::string> plan_resize(
    const Json& statefulset, const std::vector<Json>& claims_in_namespace,
    const std::vector<Json>& storage_classes);

// Passed instead of the StorageClasses when they could not be read: a namespace-scoped
// installation may not list them (they are cluster-scoped).
struct StorageClassesUnknown {};
// As above, except that no class is checked for existence and none is known to allow
// expansion: every plan takes the Copy path, which needs no class (the new claim names it and
// the provisioner checks it; a missing class leaves the claim Pending until its timeout).
std::expected<std::optional<ResizePlan>, std::string> plan_resize(
    const Json& statefulset, const std::vector<Json>& claims_in_namespace, StorageClassesUnknown);

// The claim is planned smaller than it is: its data must fit (Phase::Measuring).
inline bool shrinks(const ClaimPlan& claim) {
  return claim.to_size < claim.from_size;
}

}  // namespace stsresize
