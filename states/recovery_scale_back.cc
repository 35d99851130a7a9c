// ScalingBack of a recovery (a failure or an abort from ReplacingVolume or Reseeding): a re-seed
// pod still running is deleted, so that it does not write beside the replica, and a StatefulSet
// paused for the re-seed is resumed. Nothing else is undone: a lost claim deleted is not given
// back (its node is gone).
#include "engine/naming.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

using namespace steps;

StepOutcome recovery_scale_back_step(StepContext& ctx) {
  const LostReplica& lost = *ctx.op.lost;
  if (lost.reseed) {
    const ObjectRef ref{Kind::Pod, ctx.op.ns, naming::reseed_pod(ctx.op.statefulset, lost.ordinal)};
    auto pod = get_optional(ctx, ref);
    if (!pod) return pod.error();
    if (pod->has_value() && created_by(**pod, ctx.op)) {
      const std::string phase = k8s::pod_phase(**pod).value_or("");
      if (phase != "Succeeded" && phase != "Failed") {
        if (being_deleted(**pod)) {
          return StepOutcome::waiting(ctx.settings.poll_interval,
                                      "re-seed pod " + ref.name + " going");
        }
        if (auto removed =
                delete_intended(ctx, ref, k8s::uid(**pod).value_or(""), Propagation::Background,
                                "the recovery failed while it ran");
            !removed) {
          return removed.error();
        }
        return StepOutcome::waiting(Duration{0});
      }
    }
  }
  if (auto now = steps::resume_statefulset(ctx)) return *now;
  return StepOutcome::done(Trigger::ScaleBackDone);
}

}  // namespace stsresize
