// CleaningUp (the application is already back): delete the copy Jobs and the backup claims.
// A backup claim is deleted only once its restore was verified: it is never deleted while it
// may be the only copy of the data.
#include "engine/naming.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome cleanup_step(StepContext& ctx) {
  using namespace steps;
  bool lingering = false;
  for (const ClaimPlan& claim : ctx.op.claims) {
    for (const std::string& job :
         {naming::backup_job(claim.claim), naming::restore_job(claim.claim)}) {
      bool acted = false;
      auto exists = delete_ours(ctx, job_ref(ctx.op, job), acted);
      if (!exists) return exists.error();
      if (acted) return StepOutcome::waiting(Duration{0});
      lingering = lingering || *exists;
    }
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
    bool acted = false;
    auto exists = delete_ours(ctx, backup, acted);
    if (!exists) return exists.error();
    if (acted) return StepOutcome::waiting(Duration{0});
    lingering = lingering || *exists;
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "objects finalizing");
  return StepOutcome::done();
}

}  // namespace stsresize
