// ScalingUp: the original replica count, Done once every pod is Ready on the new claims.
#include "states/step_support.h"

namespace stsresize {

StepOutcome scale_up_step(StepContext& ctx) {
  using namespace steps;
  if (auto acted = set_replicas(ctx, ctx.op.original_replicas)) return *acted;
  auto settled = replicas_settled(ctx, ctx.op.original_replicas, /*ready=*/true);
  if (!settled) return settled.error();
  if (!*settled) return StepOutcome::waiting(ctx.settings.poll_interval, "pods not ready yet");
  return StepOutcome::done();
}

}  // namespace stsresize
