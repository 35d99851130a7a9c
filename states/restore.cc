// Restoring: a copy Job backup -> recreated claim for every claim; RestoreVerified only when
// the Job's summary shows both trees equal AND equal to what the backup verified.
#include "engine/naming.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome restore_step(StepContext& ctx) {
  using namespace steps;
  int running = 0;
  bool all_verified = true;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (claim.restore_verified) continue;
    all_verified = false;
    auto target = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!target) return target.error();
    auto uid = target->has_value() ? k8s::uid(**target) : k8s::Result<std::string>{""};
    if (!target->has_value() || !uid || *uid != claim.recreated_uid) {
      return StepOutcome::critical("recreated claim " + claim.claim + " is gone or was replaced");
    }
    auto phase = k8s::pvc_phase(**target);
    if (!phase) return malformed(phase.error());
    if (*phase != "Bound" && phase_timed_out(ctx, ctx.settings.pending_timeout)) {
      return StepOutcome::critical("recreated claim " + claim.claim + " is still " + *phase +
                                   " after the pending timeout");
    }
    auto copy = copy_job(ctx, naming::restore_job(claim.claim), naming::backup_claim(claim.claim),
                         claim.claim, "restore", running < ctx.settings.max_parallel_copies);
    if (!copy) return copy.error();
    if (copy->created) return StepOutcome::waiting(Duration{0});
    if (copy->running) ++running;
    if (copy->summary) {
      if (!claim.backup_verified || copy->summary->source != *claim.backup_verified) {
        return StepOutcome::critical("restore of " + claim.claim +
                                     ": the backup no longer matches what was verified");
      }
      if (auto recorded =
              ctx.journal.record(events::RestoreVerified{claim.claim, copy->summary->destination});
          !recorded) {
        return StepOutcome::transient(recorded.error());
      }
      return StepOutcome::waiting(Duration{0});
    }
  }
  if (all_verified) return StepOutcome::done();
  return StepOutcome::waiting(ctx.settings.poll_interval, "copies running");
}

}  // namespace stsresize
