// DeletingClaims: each ordinal whose cleanup pod Succeeded loses its cleanup pod, then its
// claims (uid precondition: only the claim that was drained, never a new one of that name). An
// ordinal the StatefulSet was scaled back up over meanwhile keeps its claims (cancelled): the
// replica's pod mounts them as soon as the name is free, and a claim is never deleted under a pod.
#include "engine/cleanup_pod.h"
#include "engine/duration.h"
#include "engine/vocabulary.h"
#include "states/drain_support.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome delete_drained_step(StepContext& ctx) {
  using namespace steps;
  if (ctx.statefulset.is_null()) return StepOutcome::transient("the StatefulSet is gone");
  std::optional<std::vector<Json>> pods;
  bool lingering = false;
  for (const OrdinalDrain& d : ctx.op.drains) {
    if (!d.succeeded || !d.cancelled.empty()) continue;
    if (std::ranges::all_of(d.claims, [](const OrdinalClaim& c) { return c.deleted; })) continue;
    bool pod_lingering = false;
    if (auto now =
            drain::delete_cleanup_pod(ctx, d.ordinal, "its cleanup Succeeded", pod_lingering)) {
      return *now;
    }
    if (pod_lingering) {
      lingering = true;
      continue;
    }
    auto replica = drain::is_replica(ctx.statefulset, d.ordinal);
    if (!replica) return malformed(replica.error());
    if (*replica) {
      const std::string why =
          "scaled back up after its cleanup Succeeded: the replica returns with the drained "
          "claims, which are kept";
      return drain::record_and_tell(ctx, entries::DrainCancelled{d.ordinal, why}, "DrainCancelled",
                                    "ordinal " + std::to_string(d.ordinal) + ": " + why);
    }
    if (!pods) {
      auto listed = ctx.kube.list(Kind::Pod, ctx.op.ns);
      if (!listed) return from_error(listed.error(), "listing pods");
      pods = std::move(listed->items);
    }
    if (!drain::claim_users(*pods, d, ctx.op.statefulset).empty()) {
      lingering = true;
      continue;
    }
    for (const OrdinalClaim& c : d.claims) {
      if (c.deleted) continue;
      auto claim = get_optional(ctx, claim_ref(ctx.op, c.claim));
      if (!claim) return claim.error();
      // Gone, or being deleted: the delete of the last call (or someone else's) was accepted.
      const bool same = claim->has_value() && k8s::uid(**claim).value_or("") == c.uid;
      if (!same || being_deleted(**claim)) {
        return record_and_continue(ctx, entries::DrainedClaimDeleted{c.claim});
      }
      // A drain by claim policy ran no cleanup pod: the Event says why the claim went.
      const bool by_policy = ctx.op.delete_after > Duration{0};
      if (auto deleted = delete_intended(
              ctx, claim_ref(ctx.op, c.claim), c.uid, Propagation::Background,
              by_policy ? "ordinal " + std::to_string(d.ordinal) + " gone for " +
                              format_duration(ctx.op.delete_after) + " (" +
                              std::string{kScaledownClaimsAnnotation} + ")"
                        : "drained by cleanup pod of ordinal " + std::to_string(d.ordinal));
          !deleted) {
        return deleted.error();
      }
      drain::tell_deleted(
          ctx, "claim " + c.claim + " deleted: " +
                   (by_policy ? "ordinal " + std::to_string(d.ordinal) + " gone for " +
                                    format_duration(ctx.op.delete_after) + " (" +
                                    std::string{kScaledownClaimsAnnotation} + "), no cleanup pod"
                              : "drained by cleanup pod " + drain::pod_name(ctx.op, d.ordinal)));
      return StepOutcome::waiting(Duration{0});
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "cleanup pods finalizing");
  return StepOutcome::done();
}

}  // namespace stsresize
