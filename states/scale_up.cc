// ScalingUp: the original replica count, Done once every pod is Ready on the new claims. Past
// settings.scale_up_timeout a Warning is given once (journaled as a non-critical StepFailed,
// kept in the state until the phase changes) and the step keeps waiting.
#include "engine/duration.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome scale_up_step(StepContext& ctx) {
  using namespace steps;
  if (auto acted = set_replicas(ctx, ctx.op.original_replicas)) return *acted;
  auto settled = replicas_settled(ctx, ctx.op.original_replicas, /*ready=*/true);
  if (!settled) return settled.error();
  if (*settled) return StepOutcome::done();
  if (ctx.op.warning.empty() && phase_timed_out(ctx, ctx.settings.scale_up_timeout)) {
    auto status = k8s::statefulset_status(ctx.statefulset);
    const std::string reason =
        "only " + std::to_string(status ? status->ready_replicas : 0) + " of " +
        std::to_string(ctx.op.original_replicas) + " pods Ready " +
        format_duration(ctx.settings.scale_up_timeout) +
        " after scaling up; the data is restored and verified, still waiting";
    return warn_and_continue(ctx, Phase::ScalingUp, "ScaleUpTimeout", reason);
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "pods not ready yet");
}

}  // namespace stsresize
