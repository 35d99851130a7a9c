// StartingReplica (Strategy::Rolling): the StatefulSet resumed (states/rolling.h: created again
// from its definition, its pods adopted) and Done once the rolling ordinal's replica is Ready on
// its new claims. Past settings.scale_up_timeout a Warning ScaleUpTimeout is given once and the
// step keeps waiting: the roll stops there, the other ordinals untouched.
#include <algorithm>

#include "engine/duration.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome start_replica_step(StepContext& ctx) {
  using namespace steps;
  const std::optional<int> ordinal = ctx.op.rolling_ordinal();
  if (!ordinal) return StepOutcome::critical("StartingReplica with no ordinal left to roll");
  if (auto now = resume_statefulset(ctx)) return *now;
  const ObjectRef pod_ref = replica_ref(ctx.op, *ordinal);
  auto pod = get_optional(ctx, pod_ref);
  if (!pod) return pod.error();
  if (pod->has_value() && !being_deleted(**pod) && k8s::pod_ready(**pod).value_or(false)) {
    auto owners = k8s::owner_references(**pod);
    const bool own = owners && std::ranges::any_of(*owners, [&](const k8s::OwnerReference& o) {
                       return o.uid == ctx.op.sts_uid;
                     });
    if (own) return StepOutcome::done();
  }
  if (ctx.op.warning.empty() && phase_timed_out(ctx, ctx.settings.scale_up_timeout)) {
    return warn_and_continue(
        ctx, Phase::StartingReplica, "ScaleUpTimeout",
        "pod " + pod_ref.name + " is not Ready " + format_duration(ctx.settings.scale_up_timeout) +
            " after its StatefulSet was resumed; its data is restored and verified, the other "
            "ordinals are not touched, still waiting");
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "pod " + pod_ref.name + " not Ready yet");
}

}  // namespace stsresize
