// ReplacingVolume: the lost replica gets new claims. Each lost claim's volume is kept first
// (reclaim policy Retain: if the node comes back, a person can salvage the data), then the claim
// is deleted (uid precondition: only the claim found lost, never a new one of that name), and
// then the replica's pod, with no grace: its node will never finalise it, and the StatefulSet
// controller creates a pod only once the claim is gone, so in this order it creates both afresh
// and the scheduler places them on a live node. The node is read again before each act: back
// before the first delete, nothing more is done.
// With a re-seed pod template (kRecoveryPodTemplateAnnotation) the StatefulSet is paused
// (states/rolling.h) before the first delete, so that its controller creates neither the claims
// nor the pod: Reseeding creates the claims, runs the re-seed pod on them and resumes it. A node
// back before that delete undoes the pause first.
#include "engine/cleanup_pod.h"
#include "states/recovery_support.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

// Sets the lost volume's reclaim policy to Retain, or records the policy it has.
StepOutcome keep_volume(StepContext& ctx, const LostClaim& c) {
  const ObjectRef ref{Kind::PersistentVolume, "", c.volume};
  auto volume = steps::get_optional(ctx, ref);
  if (!volume) return volume.error();
  if (!volume->has_value()) {
    return StepOutcome::critical("the lost volume " + c.volume + " of claim " + c.claim +
                                 " is gone (deleted by someone else): nothing is deleted");
  }
  const std::string policy =
      (**volume)["spec"].value("persistentVolumeReclaimPolicy", std::string{"Delete"});
  if (policy == "Retain") {
    return steps::record_and_continue(
        ctx, entries::VolumeRetained{c.claim, VolumeRole::Source, c.volume, policy});
  }
  if (auto intended = ctx.journal.intend("retain", ref, "lost with node " + ctx.op.lost->node);
      !intended) {
    return StepOutcome::transient(intended.error());
  }
  auto patched = ctx.kube.patch(ref, PatchType::Merge,
                                Json{{"spec", {{"persistentVolumeReclaimPolicy", "Retain"}}}});
  if (!patched) return steps::from_error(patched.error(), "keeping " + to_string(ref));
  return steps::record_and_continue(
      ctx, entries::VolumeRetained{c.claim, VolumeRole::Source, c.volume, policy});
}

}  // namespace

StepOutcome replace_volume_step(StepContext& ctx) {
  using namespace steps;
  const LostReplica& lost = *ctx.op.lost;
  if (!lost.cancelled.empty()) return StepOutcome::done(Trigger::NodeReturned);
  auto node = recovery::node_now(ctx);
  if (!node) return node.error();
  if (node->health != NodeHealth::Gone && !lost.any_deleted()) {
    if (lost.reseed) {
      if (auto now = resume_statefulset(ctx)) return *now;
    }
    return record_and_continue(ctx, entries::RecoveryCancelled{recovery::back_reason(lost)});
  }
  for (const LostClaim& c : lost.claims) {
    if (c.policy.empty()) return keep_volume(ctx, c);
  }
  if (!lost.any_deleted() && !lost.reseed && has_reseed_template(ctx.statefulset)) {
    // A template that cannot make a pod is refused here, before anything is deleted (it was
    // checked when the recovery started; it may have been edited since).
    if (auto pod = reseed_pod(ctx.statefulset, lost.ordinal, ctx.op.id); !pod) {
      return StepOutcome::critical(explain(pod.error()));
    }
    return record_and_continue(ctx, entries::ReseedHeld{});
  }
  if (lost.reseed && !lost.any_deleted()) {
    if (auto now = pause_statefulset(ctx)) return *now;
  }
  for (const LostClaim& c : lost.claims) {
    if (c.deleted) continue;
    const ObjectRef ref = claim_ref(ctx.op, c.claim);
    auto claim = get_optional(ctx, ref);
    if (!claim) return claim.error();
    // Gone, another claim of that name, or being deleted: the lost one is going.
    if (!claim->has_value() || k8s::uid(**claim).value_or("") != c.uid || being_deleted(**claim)) {
      return record_and_continue(ctx, entries::LostClaimDeleted{c.claim});
    }
    if (k8s::volume_name(**claim).value_or("") != c.volume) {
      return StepOutcome::critical("claim " + c.claim + " is no longer bound to the lost volume " +
                                   c.volume + ": nothing is deleted");
    }
    if (auto deleted =
            delete_intended(ctx, ref, c.uid, Propagation::Background,
                            "its volume " + c.volume + " was lost with node " + lost.node);
        !deleted) {
      return deleted.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (!lost.pod_deleted) {
    const ObjectRef ref{Kind::Pod, ctx.op.ns, recovery::pod_name(ctx.op)};
    auto pod = get_optional(ctx, ref);
    if (!pod) return pod.error();
    if (!pod->has_value()) return record_and_continue(ctx, entries::LostPodDeleted{});
    // The pod is the lost replica's while a lost claim still exists (the StatefulSet controller
    // creates no pod while a claim of it is being deleted) or while it is placed on the lost
    // node; otherwise it is the new replica, which is left alone. Paused for a re-seed, a pod
    // placed nowhere is not left either: the StatefulSet controller made it before the pause,
    // and it would start on the new claims before the re-seed.
    const std::string placed = (**pod)["spec"].value("nodeName", std::string{});
    bool stuck = placed == lost.node || (lost.reseed && placed.empty());
    for (const LostClaim& c : lost.claims) {
      if (stuck) break;
      auto claim = get_optional(ctx, claim_ref(ctx.op, c.claim));
      if (!claim) return claim.error();
      stuck = claim->has_value() && k8s::uid(**claim).value_or("") == c.uid;
    }
    if (!stuck) return record_and_continue(ctx, entries::LostPodDeleted{});
    const std::string uid = k8s::uid(**pod).value_or("");
    if (auto intended =
            ctx.journal.intend("force-delete", ref, "its claims were lost with node " + lost.node);
        !intended) {
      return StepOutcome::transient(intended.error());
    }
    DeleteOptions options;
    options.uid = uid;
    options.grace_period_seconds = 0;
    auto removed = ctx.kube.remove(ref, options);
    if (!removed && removed.error().code != KubeErrorCode::NotFound) {
      return from_error(removed.error(), "deleting " + to_string(ref));
    }
    return record_and_continue(ctx, entries::LostPodDeleted{uid});
  }
  return StepOutcome::done(lost.reseed ? Trigger::Reseed : Trigger::StepDone);
}

}  // namespace stsresize
