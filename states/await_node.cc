// AwaitingNode: the grace period of a lost-volume recovery. The node may come back with the data
// (a reboot, a network partition healed, a node object deleted by mistake and registered again):
// then nothing is done. Done once the node has been gone for the grace period since the start;
// in manual mode the next transition, which deletes, waits for a person's approval.
#include "engine/duration.h"
#include "states/recovery_support.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome await_node_step(StepContext& ctx) {
  const LostReplica& lost = *ctx.op.lost;
  if (!lost.cancelled.empty()) return StepOutcome::done(Trigger::NodeReturned);
  auto node = recovery::node_now(ctx);
  if (!node) return node.error();
  if (node->health != NodeHealth::Gone) {
    return steps::record_and_continue(ctx, entries::RecoveryCancelled{recovery::back_reason(lost)});
  }
  const auto waited = std::chrono::duration_cast<Duration>(ctx.clock.now() - ctx.op.started);
  if (waited < lost.grace) {
    return StepOutcome::waiting(lost.grace - waited,
                                "node " + lost.node + " gone for " + format_duration(waited) +
                                    " of a grace of " + format_duration(lost.grace));
  }
  return StepOutcome::done();
}

}  // namespace stsresize
