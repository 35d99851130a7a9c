#pragma once
// The fence of a copy-path operation. From the end of ScalingDown until every restore is
// verified, nothing but the operation's own copy Jobs may use its claims: a copy is a proof only
// if nothing wrote to its source since it was taken, and a claim is deleted only under that
// proof. The fence holds when the StatefulSet asks for 0 replicas, runs none, and no pod in the
// namespace — of any owner: a claim name can collide with another StatefulSet's — mounts one of
// the claims. The steps check it at each invocation, so also while a transition awaits approval
// (the step runs again before the transition is taken).
//
// A copy also records the StatefulSet's metadata.generation it was taken at
// (ClaimPlan::backup_generation, the copy Job's stsresize.dev/fence-generation): any change of
// the spec since — a scale up and back down while the controller was away included — makes it
// stale, and it is taken again before its source may be deleted.
//
// What a step does on a breach depends on where the data is:
// - every source claim intact: a critical error, which the machine turns into ScalingBack (the
//   person or tool that scaled up gets the replicas, the resize is rolled back, nothing lost);
// - a source already deleted: scaling up would run the application on claims that are empty or
//   being restored, so the fence is set again (replicas back to 0, journaled) and the step waits
//   until no pod uses the claims; a Warning says who broke it.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "states/step.h"

namespace stsresize::steps {

struct FenceBreach {
  enum class Kind {
    Replicas,  // spec.replicas or status.replicas of the StatefulSet is not 0
    Mounted,   // a pod (not one of the operation's copy Jobs) mounts one of the claims
  };
  Kind kind = Kind::Replicas;
  std::string detail;  // "spec.replicas is 3", "pod db-0 (StatefulSet db) mounts data-web-db-0"
};
std::string describe(const FenceBreach& breach);

// nullopt: the fence holds for `claims`. An error: the outcome to return (a failed list).
std::expected<std::optional<FenceBreach>, StepOutcome> fence_breach(
    StepContext& ctx, const std::vector<std::string>& claims);

// "pod web-db-0 (StatefulSet web-db) mounts data-web-db-0" when a pod that is not the
// StatefulSet's own (nor a copy pod of the operation, nor ended) mounts one of `claims`: another
// owner uses a claim of this set's name, and no resize of it can be safe. nullopt otherwise.
std::expected<std::optional<std::string>, StepOutcome> mounted_by_another_owner(
    StepContext& ctx, const std::vector<std::string>& claims);

// The same for any pod, the StatefulSet's own too: only the operation's own pods (its copy and
// re-seed pods, labelled with its id) and ended pods are not counted.
std::expected<std::optional<std::string>, StepOutcome> mounted_by_any_pod(
    StepContext& ctx, const std::vector<std::string>& claims);

// The StatefulSet's metadata.generation as read by this step.
std::int64_t fence_generation(const StepContext& ctx);

// Every claim the operation plans, by name (a source and its successor share the name).
std::vector<std::string> planned_claims(const Operation& op);
// The planned claims whose source has not been deleted: they still hold the data.
std::vector<std::string> intact_sources(const Operation& op);

// A planned source claim whose delete was asked (it is being deleted; SourceDeleted not yet
// recorded) while a pod mounts it. Without the admission fence a pod can start in the moment
// between the last fence check and the delete; pvc-protection then keeps the claim, and the
// pod, until the pod stops. What it writes meanwhile is on that claim only (its backup was taken
// before), and goes with it.
struct HeldSource {
  std::string claim;
  std::string pod;     // "pod web-0 (StatefulSet web)"
  std::string volume;  // the claim's PersistentVolume ("" while unknown)
};
std::expected<std::optional<HeldSource>, StepOutcome> held_source(StepContext& ctx);

// Neither scaling to 0 (the pod would stop and the claim go with its newest writes) nor scaling
// back (the claim is going) is safe: a non-critical StepFailed kept as the operation's warning
// and a Warning SourceHeldByPod say what a person can keep and how, and the step waits, changing
// nothing, until the pod is gone.
StepOutcome report_held_source(StepContext& ctx, const HeldSource& held);

// After a breach once a source claim is gone: spec.replicas back to 0 (journaled intent, a
// Warning FenceRestored naming the breach, a non-critical StepFailed kept as the operation's
// warning), then Waiting until the breach is over. Always an outcome for the step to return.
StepOutcome restore_fence(StepContext& ctx, const FenceBreach& breach);

}  // namespace stsresize::steps
