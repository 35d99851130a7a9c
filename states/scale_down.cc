// ScalingDown: replicas to 0, and Done only once the StatefulSet controller has observed it,
// no pod of the set remains and the fence holds (states/fence.h): no pod of any owner mounts a
// planned claim — no copy may start while anything still writes. A pod of another owner that
// mounts one (a claim name that collides with another StatefulSet's) is a critical error: that
// claim is not this StatefulSet's to copy or delete.
#include "states/fence.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome scale_down_step(StepContext& ctx) {
  using namespace steps;
  if (auto acted = set_replicas(ctx, 0)) return *acted;
  auto settled = replicas_settled(ctx, 0, /*ready=*/false);
  if (!settled) return settled.error();
  if (!*settled) return StepOutcome::waiting(ctx.settings.poll_interval, "pods still running");
  auto breach = fence_breach(ctx, planned_claims(ctx.op));
  if (!breach) return breach.error();
  if (*breach) {
    return StepOutcome::critical(describe(**breach) +
                                 " while the StatefulSet is at 0 replicas: the claim is in use by "
                                 "something else (a claim name shared with another StatefulSet?); "
                                 "not touching it");
  }
  return StepOutcome::done();
}

}  // namespace stsresize
