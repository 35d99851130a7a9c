#pragma once
// Which ordinals a scale-down left to drain: the claims of ordinals outside the StatefulSet's
// replica range, and whether each may be drained now. Claims are matched by name, as the
// StatefulSet controller (and the StatefulSet Scale-Down Controller) look them up. Pure: the
// caller lists the namespace's claims and pods.
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/json.h"

namespace stsresize {

// One existing claim of a candidate ordinal (one per volumeClaimTemplate that has a claim).
struct DrainClaim {
  std::string template_name;
  std::string name;  // naming::claim_name(template_name, <sts>, ordinal)
  std::string uid;   // the precondition of its delete

  friend bool operator==(const DrainClaim&, const DrainClaim&) = default;
};

// Why an ordinal may not be drained yet. The first two hold for the whole StatefulSet.
enum class DrainWaitReason {
  NotObserved,      // status.observedGeneration (observed; 0: missing) < metadata.generation
  PodsTerminating,  // status.replicas (status_replicas) > spec.replicas (spec_replicas)
  ClaimInUse,       // pod `pod`, not a cleanup pod of this set, mounts claim `claim`
  NameTaken,        // pod `pod` ("<sts>-<ordinal>") exists and is not a cleanup pod
};

struct DrainWait {
  DrainWaitReason reason = DrainWaitReason::NotObserved;
  std::string pod;    // ClaimInUse, NameTaken
  std::string claim;  // ClaimInUse
  std::int64_t generation = 0;
  std::int64_t observed_generation = 0;  // NotObserved
  std::int32_t spec_replicas = 0;
  std::int32_t status_replicas = 0;  // PodsTerminating

  friend bool operator==(const DrainWait&, const DrainWait&) = default;
};

// A cleanup pod of this StatefulSet (is_cleanup_pod) named "<sts>-<ordinal>": ours, or one the
// StatefulSet Scale-Down Controller left, for the caller to take over or delete.
struct ExistingCleanupPod {
  std::string name;
  std::string uid;
  std::string phase;  // status.phase, "Pending" when absent
  bool being_deleted = false;

  friend bool operator==(const ExistingCleanupPod&, const ExistingCleanupPod&) = default;
};

struct DrainCandidate {
  int ordinal = 0;
  std::vector<DrainClaim> claims;  // in volumeClaimTemplate order; empty: only a cleanup pod left
  std::vector<DrainWait> waits;    // empty: may be drained now; else every reason, set-wide first
  std::optional<ExistingCleanupPod> cleanup_pod;

  bool ready() const { return waits.empty(); }
  friend bool operator==(const DrainCandidate&, const DrainCandidate&) = default;
};

// A claim of this set's name pattern whose labels give one of the selector's keys another
// value: another StatefulSet's claim whose name and template combine to the same name
// (StatefulSet web-db/template data and db/data-web both name data-web-db-0). Never drained.
struct ForeignClaim {
  std::string name;
  std::string label;           // the selector key
  std::string value;           // the claim's value of it
  std::string selector_value;  // the selector's

  friend bool operator==(const ForeignClaim&, const ForeignClaim&) = default;
};

struct DrainCandidates {
  // Ordinals outside [start, start + replicas) with a claim or a cleanup pod, highest first.
  std::vector<DrainCandidate> candidates;
  // Cleanup pods at ordinals inside the replica range: a scale-up wants that name back (the
  // drain must stop: delete the pod, keep the claim). Highest ordinal first.
  std::vector<ExistingCleanupPod> in_range_cleanup_pods;
  std::vector<ForeignClaim> left_alone;

  friend bool operator==(const DrainCandidates&, const DrainCandidates&) = default;
};

// What could not be read. Nothing may be drained on a guess.
enum class DrainUnreadable { StatefulSet, Claim, Pod };
struct DrainCandidatesError {
  DrainUnreadable what = DrainUnreadable::StatefulSet;
  std::string detail;  // the object and the field: "Pod shop/x: spec.volumes[0] is not an object"
  friend bool operator==(const DrainCandidatesError&, const DrainCandidatesError&) = default;
};

// For every volumeClaimTemplate, the claims named "<template>-<sts>-<ordinal>" (ordinal a
// canonical non-negative integer: not "01", "-1", "1a"), not being deleted, not foreign, whose
// ordinal lies outside [spec.ordinals.start (0 when absent), start + spec.replicas). Each
// candidate waits (DrainWaitReason) while the StatefulSet controller has not observed the
// current spec or still has more pods than wanted; while a pod that is not a cleanup pod of
// this set (is_cleanup_pod) mounts one of its claims (terminating and finished pods too); and
// while a pod of its name exists that is not such a cleanup pod. A StatefulSet being deleted
// (deletionTimestamp) has no replica range: every ordinal with a claim is a candidate, without
// the set-wide waits (its controller no longer acts on it). Whether a deletion may be drained at
// all is the caller's to decide (engine/statefulset_deletion.h).
std::expected<DrainCandidates, DrainCandidatesError> drain_candidates(const Json& statefulset,
                                                                      std::span<const Json> claims,
                                                                      std::span<const Json> pods);

// spec.persistentVolumeClaimRetentionPolicy.whenScaled is "Delete": Kubernetes deletes a
// scaled-down replica's claim with its pod, so nothing is left to drain (a StatefulSet with a
// cleanup pod template and this policy cannot be drained: say so as soon as both are present).
bool claims_deleted_when_scaled(const Json& statefulset);

// Text for people: "pod web-2 (not a cleanup pod) still uses claim data-web-2".
std::string explain(const DrainWait& wait);
std::string explain(const ForeignClaim& claim);
std::string explain(const DrainCandidatesError& error);

}  // namespace stsresize
