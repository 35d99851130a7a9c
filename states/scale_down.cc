// ScalingDown: replicas to 0, and Done only once the StatefulSet controller has observed it
// and no pod of the set remains — no copy may start while the application still writes.
#include "states/step_support.h"

namespace stsresize {

StepOutcome scale_down_step(StepContext& ctx) {
  using namespace steps;
  if (auto acted = set_replicas(ctx, 0)) return *acted;
  auto settled = replicas_settled(ctx, 0, /*ready=*/false);
  if (!settled) return settled.error();
  if (!*settled) return StepOutcome::waiting(ctx.settings.poll_interval, "pods still running");
  return StepOutcome::done();
}

}  // namespace stsresize
