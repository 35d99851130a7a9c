// StoppingReplica (Strategy::Rolling): the rolling ordinal's replica stopped while the others
// keep serving (states/rolling.h). One act per call, in this order:
//   1. while the StatefulSet is not paused: a dry-run eviction of the replica's pod, so that a
//      PodDisruptionBudget that allows no disruption holds the resize before anything changes
//      (a Warning EvictionBlocked, once); then the pause (finalizer, Background delete);
//   2. the eviction of the pod through the Eviction API (uid precondition): the budget is
//      honoured, never bypassed; refused, the step waits as in 1;
//   3. Done once the pod is gone and the fence holds for the ordinal's claims: the StatefulSet
//      paused and no pod mounting one of them.
#include "states/fence.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome stop_replica_step(StepContext& ctx) {
  using namespace steps;
  const std::optional<int> ordinal = ctx.op.rolling_ordinal();
  if (!ordinal) return StepOutcome::critical("StoppingReplica with no ordinal left to roll");
  const ObjectRef pod_ref = replica_ref(ctx.op, *ordinal);
  auto pod = get_optional(ctx, pod_ref);
  if (!pod) return pod.error();
  // The replica's own pod (owned by this StatefulSet): any other of that name is the fence's.
  std::string pod_uid;
  if (pod->has_value() && !being_deleted(**pod)) {
    auto owners = k8s::owner_references(**pod);
    if (owners && std::ranges::any_of(*owners, [&](const k8s::OwnerReference& owner) {
          return owner.uid == ctx.op.sts_uid;
        })) {
      pod_uid = k8s::uid(**pod).value_or("");
    }
  }
  if (!paused(ctx.statefulset)) {
    if (!pod_uid.empty()) {
      EvictOptions dry_run;
      dry_run.uid = pod_uid;
      dry_run.dry_run = true;
      if (auto asked = ctx.kube.evict(pod_ref, dry_run); !asked) {
        if (asked.error().code == KubeErrorCode::TooManyRequests) {
          return eviction_blocked(ctx, pod_ref.name, asked.error());
        }
        if (asked.error().code != KubeErrorCode::NotFound &&
            asked.error().code != KubeErrorCode::Conflict) {
          return from_error(asked.error(),
                            "asking whether pod " + pod_ref.name + " may be evicted");
        }
      }
    }
    if (auto now = pause_statefulset(ctx)) return *now;
  }
  if (pod->has_value() && being_deleted(**pod)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, "pod " + pod_ref.name + " stopping");
  }
  if (!pod_uid.empty()) {
    if (auto intended = ctx.journal.intend(
            "evict", pod_ref,
            "ordinal " + std::to_string(*ordinal) + " of a rolling resize; uid " + pod_uid);
        !intended) {
      return StepOutcome::transient(intended.error());
    }
    EvictOptions exact;
    exact.uid = pod_uid;
    if (auto evicted = ctx.kube.evict(pod_ref, exact); !evicted) {
      if (evicted.error().code == KubeErrorCode::TooManyRequests) {
        return eviction_blocked(ctx, pod_ref.name, evicted.error());
      }
      if (evicted.error().code != KubeErrorCode::NotFound &&
          evicted.error().code != KubeErrorCode::Conflict) {
        return from_error(evicted.error(), "evicting pod " + pod_ref.name);
      }
    }
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, "ReplicaEvicted",
                      "operation " + ctx.op.id + ": pod " + pod_ref.name + " evicted (ordinal " +
                          std::to_string(*ordinal) + "); the other replicas keep serving");
    return StepOutcome::waiting(Duration{0});
  }
  auto breach = fence_breach(ctx, planned_claims(ctx.op));
  if (!breach) return breach.error();
  if (*breach) {
    if (pod->has_value() && (*breach)->kind == FenceBreach::Kind::Mounted) {
      return StepOutcome::critical(describe(**breach) +
                                   " while its replica is stopped: the claim is in use by "
                                   "something else; not touching it");
    }
    return StepOutcome::waiting(ctx.settings.poll_interval, "fence: " + describe(**breach));
  }
  return StepOutcome::done();
}

}  // namespace stsresize
