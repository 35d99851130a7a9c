#pragma once
// Small helpers shared by the steps: reading objects that may not exist, recognising the
// objects this operation created, turning API errors into outcomes.
#include <expected>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "engine/k8s_objects.h"
#include "engine/vocabulary.h"
#include "states/step.h"

namespace stsresize::steps {

using Lookup = std::expected<std::optional<Json>, StepOutcome>;
// nullopt when NotFound; any other error becomes the outcome to return.
Lookup get_optional(StepContext& ctx, const ObjectRef& ref);

// API errors: the transient ones (and Forbidden, fixable by an administrator) are retried;
// an invalid request is critical.
StepOutcome from_error(const KubeError& error, std::string_view doing);
// A malformed object read from the cluster.
StepOutcome malformed(const std::string& error);

// The cluster's StorageClasses; nullopt when listing them is Forbidden (they are cluster-scoped,
// and a namespace-scoped installation has no cluster-level rights): the caller plans without
// them (engine/planner.h, StorageClassesUnknown). Any other error is returned.
std::expected<std::optional<std::vector<Json>>, KubeError> list_storage_classes(Kubernetes& kube);
// The Normal event a plan made without StorageClasses gives, and why.
inline constexpr std::string_view kStorageClassesUnreadable = "StorageClassesUnreadable";
inline constexpr std::string_view kStorageClassesUnreadableWhy =
    "listing storageclasses is forbidden (a namespace-scoped installation has no cluster-level "
    "rights): taking the copy path, which needs no StorageClass; expansion in place was not "
    "considered and the classes named were not checked";

bool created_by(const Json& object, const Operation& op);
bool being_deleted(const Json& object);

// What is wrong with the operation's backup claim of `claim` for a step that relies on it (the
// source is deleted under it; the restore reads it): "is gone (deleted by someone else)", "was
// not created by operation <id>", "is being deleted by someone else", and with `bound`
// "is not Bound (<phase>)". nullopt: nothing. An error outcome when it cannot be read.
std::expected<std::optional<std::string>, StepOutcome> backup_claim_problem(StepContext& ctx,
                                                                            const ClaimPlan& claim,
                                                                            bool bound);
bool phase_timed_out(const StepContext& ctx, Duration limit);

ObjectRef claim_ref(const Operation& op, const std::string& name);
ObjectRef job_ref(const Operation& op, const std::string& name);
ObjectRef statefulset_ref(const Operation& op);

// The step idioms around a side effect (states/step.h): journal the intent, act, and take the
// trace of the same act done before a crash for success; or record progress and call again.

// Journals ActionIntended{"create", ref, detail}, then creates `object` (of ref's Kind).
// AlreadyExists counts as created: the same create ran before a crash, and the caller checks the
// object it finds on its next call. An error: the outcome to return (nothing was created).
std::expected<void, StepOutcome> create_intended(StepContext& ctx, const ObjectRef& ref,
                                                 const Json& object, std::string_view detail);
// Journals ActionIntended{"delete", ref, detail}, then deletes it with `propagation` and, when
// given, the uid precondition (only the object the step read or planned, never a new one of the
// same name). NotFound counts as deleted: the same delete ran before a crash, or someone else's.
std::expected<void, StepOutcome> delete_intended(StepContext& ctx, const ObjectRef& ref,
                                                 const std::optional<std::string>& uid,
                                                 Propagation propagation, std::string_view detail);
// Records progress (journal + annotation: the invocation's one mutating call), then Waiting(0)
// so that the reconciler calls again with the operation changed; Transient when not recorded.
StepOutcome record_and_continue(StepContext& ctx, const Entry& event);
// A warning that does not stop the operation: a non-critical StepFailed{phase, why} (kept in
// the state until the phase changes, so the caller gives it once) and a Warning Event `reason`
// on the StatefulSet, then Waiting(0).
StepOutcome warn_and_continue(StepContext& ctx, Phase phase, std::string_view reason,
                              const std::string& why);

// Why the replicas of a StatefulSet whose persistentVolumeClaimRetentionPolicy.whenScaled is
// Delete are not lowered: Kubernetes deletes the claims of every replica a scale-down removes.
std::string scale_down_deletes_claims();

// The StatefulSet with spec.replicas changed to `replicas`: intend + update (with its
// resourceVersion) when it differs. nullopt when already there. Lowering them is Critical, and
// nothing is written, while whenScaled is Delete (scale_down_deletes_claims).
std::optional<StepOutcome> set_replicas(StepContext& ctx, std::int32_t replicas);
// The StatefulSet controller has observed the spec and runs `replicas` pods (ready ones too
// when `ready`); no pod of the set remains when `replicas` is 0.
std::expected<bool, StepOutcome> replicas_settled(StepContext& ctx, std::int32_t replicas,
                                                  bool ready);

// The destination_bytes of a copy into a claim of `destination` size from one of `source` size:
// the destination's bytes when it is smaller (a shrink: the data measured may have grown since),
// else 0. A destination at least the source's size holds whatever the source holds (and the
// script's estimate of the source's data, its disk usage, may exceed the claim's nominal size
// a little: directories, a provisioner's rounding up), so it is not checked.
std::int64_t fit_checked_bytes(const Quantity& destination, const Quantity& source);

// Creates the copy Job `job_name` (intend + create) unless it exists, annotated with the fence
// `generation` (states/fence.h). Reports on the existing one: nullopt while running; the
// verified summary when done; critical when failed, not ours or mismatched. A Job of ours
// created at another generation may have copied a tree that changed since: it is deleted
// (`created`: a side effect) and, once gone, created again.
struct CopyProgress {
  bool created = false;  // a side effect happened: return Waiting(0)
  bool running = false;
  std::optional<CopySummary> summary;  // the Job completed and its summary matches
};
std::expected<CopyProgress, StepOutcome> copy_job(StepContext& ctx, const std::string& job_name,
                                                  const std::string& source_claim,
                                                  const std::string& destination_claim,
                                                  const std::string& purpose, bool may_start,
                                                  std::int64_t generation,
                                                  std::int64_t destination_bytes);

// On the two-copy path, whose backup claim has the old size, a shrink is copied into the smaller
// claim only in Restoring, after the source is gone: why the verified backup of `claim` does
// not fit its new size with Measuring's headroom (it grew since it was measured); nullopt when
// it fits, or on another path or a claim not shrunk.
std::optional<std::string> backup_does_not_fit(const Operation& op, const ClaimPlan& claim);

// The termination message of container `container` in a pod of Job `job` (of uid `job_uid` when
// given) that exited 0 (`succeeded`), or else of the last one that failed with a message; ""
// when there is none.
std::expected<std::string, StepOutcome> job_pod_message(StepContext& ctx, const std::string& job,
                                                        const std::string& job_uid,
                                                        std::string_view container, bool succeeded);

// The scheduler's message when a pod of copy Job `job` cannot be placed because of its volumes'
// node affinity (the two claims it mounts are bound to volumes no one node reaches); nullopt
// otherwise. Such a copy can never run where it is.
std::expected<std::optional<std::string>, StepOutcome> copy_pod_unplaceable(StepContext& ctx,
                                                                            const std::string& job);
// The scheduler's message when a pod of Job `job` of this operation is Unschedulable, for any
// reason (a full node may free up later); nullopt when none is.
std::expected<std::optional<std::string>, StepOutcome> copy_pod_unscheduled(StepContext& ctx,
                                                                            const std::string& job);

// Deletes an object this operation created (intend + delete). Returns true while it exists.
std::expected<bool, StepOutcome> delete_ours(StepContext& ctx, const ObjectRef& ref, bool& acted,
                                             Propagation propagation = Propagation::Background);
// delete_ours for `refs` in order, at most one delete per call: the outcome to return now
// (Waiting(0) after a delete, or an error); nullopt when none was deleted. `lingering` becomes
// true when one of them still exists (being deleted).
std::optional<StepOutcome> delete_ours_in_turn(StepContext& ctx,
                                               std::initializer_list<ObjectRef> refs,
                                               bool& lingering,
                                               Propagation propagation = Propagation::Background);

// The node of a running pod that mounts `claim`, and that pod's tolerations; empty when none
// runs (the scheduler then places a Job that mounts the claim where its volume can be mounted).
std::expected<std::pair<std::string, Json>, StepOutcome> node_using(StepContext& ctx,
                                                                    const std::string& claim);

// The size of the backup claim of `claim` (naming::backup_claim): the source's on the two-copy
// path, the target's on the rebind path, where its volume becomes the claim's.
const Quantity& backup_size(const Operation& op, const ClaimPlan& claim);
// The backup claim of `claim`, as BackingUp and PreCopying need it: the outcome to return now
// (Waiting(0) after creating it; Critical unless it is the one this operation asked for: created
// by it, that size and class, not being deleted, bound before the pending timeout; an error), or
// nullopt when it is there and right.
std::optional<StepOutcome> ensure_backup_claim(StepContext& ctx, const ClaimPlan& claim);

}  // namespace stsresize::steps
