// StoppingDrain (a failure or a person's abort in Draining, where nothing was deleted): every
// cleanup pod of the drain is deleted, so that no pod holds a replica's name or its claims, and
// every ordinal not drained is cancelled with its claims kept. Then Failed.
#include "engine/cleanup_pod.h"
#include "states/drain_support.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome stop_drain_step(StepContext& ctx) {
  using namespace steps;
  bool lingering = false;
  for (const OrdinalDrain& d : ctx.op.drains) {
    if (auto now = drain::delete_cleanup_pod(ctx, d.ordinal, "the drain stops", lingering)) {
      return *now;
    }
    if (!d.ended()) {
      const std::string why =
          ctx.op.aborted_by.empty() ? "the drain failed: " + ctx.op.failure : ctx.op.failure;
      return record_and_continue(ctx, entries::DrainCancelled{d.ordinal, why + "; claims kept"});
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "cleanup pods finalizing");
  return StepOutcome::done();
}

}  // namespace stsresize
