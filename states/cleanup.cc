// CleaningUp (the application is already back): delete the copy Jobs and the backup claims.
// A rolling resize cleans up after each ordinal (its claims only), then rolls on to the next.
// A backup claim is deleted only once its restore was verified: it is never deleted while it
// may be the only copy of the data.
// On the rebind path the volumes' own reclaim policies are put back last (states/rebind.h):
// the old volume is released once its claim runs on the verified copy.
#include <algorithm>

#include "engine/naming.h"
#include "states/rebind.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome cleanup_step(StepContext& ctx) {
  using namespace steps;
  bool lingering = false;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim)) continue;
    if (auto now = delete_ours_in_turn(ctx,
                                       {job_ref(ctx.op, naming::backup_job(claim.claim)),
                                        job_ref(ctx.op, naming::restore_job(claim.claim))},
                                       lingering)) {
      return *now;
    }
    // Both policies put back: that came after its backup claim was gone (below). Not read
    // again, live, at each volume's policy put back after it.
    if (claim.copy_policy_restored && claim.source_policy_restored) continue;
    const ObjectRef backup = claim_ref(ctx.op, naming::backup_claim(claim.claim));
    if (!claim.restore_verified) {
      auto present = get_optional(ctx, backup);
      if (!present) return present.error();
      if (present->has_value()) {
        return StepOutcome::critical("refusing to delete " + backup.name + ": the restore of " +
                                     claim.claim + " was never verified");
      }
      continue;
    }
    if (auto now = delete_ours_in_turn(ctx, {backup}, lingering)) return *now;
    if (ctx.op.path == Path::Rebind) {
      if (auto now = put_policies_back(ctx, claim)) return *now;
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "objects finalizing");
  if (ctx.op.strategy == Strategy::Rolling) {
    const std::optional<int> ordinal = ctx.op.rolling_ordinal();
    const bool more = std::ranges::any_of(ctx.op.claims, [&](const ClaimPlan& claim) {
      return !claim.rolled && ordinal && claim.ordinal != *ordinal;
    });
    return StepOutcome::done(more ? Trigger::RollOn : Trigger::StepDone);
  }
  return StepOutcome::done();
}

}  // namespace stsresize
