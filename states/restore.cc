// Restoring: a copy Job backup -> recreated claim for every claim; RestoreVerified only when
// the Job's summary shows both trees equal AND equal to what the backup verified. The fence
// (states/fence.h) holds until every restore is verified: a scale-up here would run the
// application on claims still empty or half restored, so the replicas go back to 0, and a copy
// Job that ran while the fence was broken is taken again.
// On the rebind path nothing is copied back: each claim is checked to be Bound to its copy's
// volume (states/rebind.h).
#include "engine/naming.h"
#include "states/fence.h"
#include "states/rebind.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// The backup claim must still be the one the operation verified: without it there is nothing
// to restore from, which is not the same as a recreated claim that is still Pending.
std::optional<StepOutcome> refuse_restore(StepContext& ctx, const ClaimPlan& claim) {
  auto problem = backup_claim_problem(ctx, claim, /*bound=*/false);
  if (!problem) return problem.error();
  if (!*problem) return std::nullopt;
  return StepOutcome::critical("backup claim " + naming::backup_claim(claim.claim) + " of " +
                               claim.claim + " " + **problem + ": not restoring from it" +
                               ((*problem)->starts_with("is gone")
                                    ? "; the data of " + claim.claim + " cannot be restored"
                                    : std::string{}));
}

}  // namespace

StepOutcome restore_step(StepContext& ctx) {
  auto breach = fence_breach(ctx, planned_claims(ctx.op));
  if (!breach) return breach.error();
  if (*breach) return restore_fence(ctx, **breach);
  const std::int64_t generation = fence_generation(ctx);
  int running = 0;
  bool all_verified = true;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim) || claim.restore_verified) continue;
    all_verified = false;
    if (ctx.op.path == Path::Rebind) {
      if (auto now = check_rebound(ctx, claim)) return *now;
      continue;
    }
    // Given up (below): Recreating creates it again.
    if (claim.recreated_uid.empty()) return StepOutcome::done(Trigger::RecreateAgain);
    auto target = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!target) return target.error();
    auto uid = target->has_value() ? k8s::uid(**target) : k8s::Result<std::string>{""};
    if (target->has_value() && uid && *uid != claim.recreated_uid) {
      return StepOutcome::critical("recreated claim " + claim.claim +
                                   " was replaced by someone else");
    }
    // Gone or going (deleted below, or by someone else): it held nothing verified, so it is given
    // up and created again — once its restore Job, whose pod would keep it, is gone.
    if (!target->has_value() || being_deleted(**target)) {
      bool acted = false;
      auto job = delete_ours(ctx, job_ref(ctx.op, naming::restore_job(claim.claim)), acted);
      if (!job) return job.error();
      if (acted) return StepOutcome::waiting(Duration{0});
      return record_and_continue(
          ctx, entries::ClaimDiscarded{claim.claim, claim.recreated_uid,
                                       target->has_value()
                                           ? "being deleted before its restore was verified"
                                           : "deleted before its restore was verified"});
    }
    // A claim a pod of the application used first (the fence was broken) is bound where that pod
    // ran; with node- or zone-bound volumes its restore, which also mounts the backup, can then
    // never be placed. Nothing on it is verified: delete it and create it again. The claim goes
    // first, so that the next call finds it being deleted (above) and then removes the Job whose
    // pod holds it; removing the Job first would hide why the claim must go.
    auto unplaceable = copy_pod_unplaceable(ctx, naming::restore_job(claim.claim));
    if (!unplaceable) return unplaceable.error();
    if (unplaceable->has_value()) {
      // Not delete_ours: a recreated claim is the application's (it carries recreated-by, not
      // the operation annotation that marks what cleanup removes), and the uid precondition is
      // the one recorded in ClaimRecreated, not whatever has that name now.
      if (auto removed = delete_intended(ctx, claim_ref(ctx.op, claim.claim), claim.recreated_uid,
                                         Propagation::Default,
                                         "its restore cannot be scheduled: " + **unplaceable);
          !removed) {
        return removed.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    auto phase = k8s::pvc_phase(**target);
    if (!phase) return malformed(phase.error());
    if (*phase != "Bound" && phase_timed_out(ctx, ctx.settings.pending_timeout)) {
      return StepOutcome::critical("recreated claim " + claim.claim + " is still " + *phase +
                                   " after the pending timeout");
    }
    if (auto refused = refuse_restore(ctx, claim)) return *refused;
    auto copy =
        copy_job(ctx, naming::restore_job(claim.claim), naming::backup_claim(claim.claim),
                 claim.claim, std::string{kRestorePurpose}, ctx.settings.may_start_copy(running),
                 generation, fit_checked_bytes(claim.to_size, claim.from_size));
    if (!copy) return copy.error();
    if (copy->created) return StepOutcome::waiting(Duration{0});
    if (copy->running) ++running;
    if (copy->summary) {
      if (!claim.backup_verified || copy->summary->source != *claim.backup_verified) {
        return StepOutcome::critical("restore of " + claim.claim +
                                     ": the backup no longer matches what was verified");
      }
      return record_and_continue(ctx,
                                 entries::RestoreVerified{claim.claim, copy->summary->destination});
    }
  }
  if (all_verified) {
    return StepOutcome::done(ctx.op.strategy == Strategy::Rolling ? Trigger::RollOn
                                                                  : Trigger::StepDone);
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "copies running");
}

}  // namespace stsresize
