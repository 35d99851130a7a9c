// ScalingBack (after a critical error, entered only while every source claim was intact):
// check the sources once more, restore the original replica count (once one was planned), then
// remove this operation's Jobs (pre-copy Jobs too) and backup claims — with the sources intact a
// backup is never the only copy of the data. On the rebind path a deleted source is put back first:
// the claim created again on its own volume, kept Retain (states/rebind.h); after the deletes, the
// volumes' own policies.
#include "engine/naming.h"
#include "states/fence.h"
#include "states/rebind.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome scale_back_step(StepContext& ctx) {
  using namespace steps;
  // A rolling resize scales back its rolling ordinal only; the ordinals rolled before are
  // finished and run on their new claims. Its StatefulSet was paused, not scaled: it is resumed.
  const bool rolling = ctx.op.strategy == Strategy::Rolling;
  auto unrolled = [](const ClaimPlan& claim) { return !claim.rolled; };
  if (ctx.op.path == Path::Rebind && ctx.op.source_claim_deleted() &&
      !(rolling && ctx.statefulset.is_null())) {
    // A claim is deleted and created again only while nothing but the operation uses the
    // claims: a pod started by someone's scale-up would hold the claim on the copy (and write
    // on it) or be given an empty claim of that name by the StatefulSet controller.
    auto breach = fence_breach(ctx, planned_claims(ctx.op));
    if (!breach) return breach.error();
    if (*breach) return restore_fence(ctx, **breach);
    for (const ClaimPlan& claim : ctx.op.claims) {
      if (!ctx.op.in_scope(claim) || !claim.source_deleted) continue;
      if (auto now = put_back(ctx, claim)) return *now;
    }
  }
  if (rolling) {
    if (auto now = resume_statefulset(ctx)) return *now;
  }
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!unrolled(claim)) continue;
    auto source = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!source) return source.error();
    auto uid = source->has_value() ? k8s::uid(**source) : k8s::Result<std::string>{""};
    if (!source->has_value() || !uid || *uid != claim.source_uid || being_deleted(**source)) {
      return StepOutcome::critical("not scaling back: source claim " + claim.claim +
                                   " is no longer intact");
    }
  }
  // Before a plan (Measuring, Planning) nothing was scaled: a replica count someone set since
  // is theirs.
  if (ctx.op.path != Path::Undecided && !rolling) {
    if (auto acted = set_replicas(ctx, ctx.op.original_replicas)) return *acted;
    auto settled = replicas_settled(ctx, ctx.op.original_replicas, /*ready=*/false);
    if (!settled) return settled.error();
    if (!*settled) return StepOutcome::waiting(ctx.settings.poll_interval, "scaling back");
  }
  // Measuring's Jobs, of whichever claims it measured.
  ListOptions measuring;
  measuring.label_selector = std::string{kOperationLabel} + "=" + naming::label_value(ctx.op.id) +
                             "," + std::string{kPurposeLabel} + "=" + std::string{kMeasurePurpose};
  auto measure_jobs = ctx.kube.list(Kind::Job, ctx.op.ns, measuring);
  if (!measure_jobs) return from_error(measure_jobs.error(), "listing measure Jobs");
  bool measuring_left = false;
  for (const Json& job : measure_jobs->items) {
    auto name = k8s::name(job);
    if (!name) continue;
    if (auto now = delete_ours_in_turn(ctx, {job_ref(ctx.op, *name)}, measuring_left)) return *now;
  }
  if (measuring_left) return StepOutcome::waiting(ctx.settings.poll_interval, "objects finalizing");

  bool lingering = false;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!unrolled(claim)) continue;
    if (auto now = delete_ours_in_turn(ctx,
                                       {job_ref(ctx.op, naming::pre_copy_job(claim.claim)),
                                        job_ref(ctx.op, naming::backup_job(claim.claim)),
                                        job_ref(ctx.op, naming::restore_job(claim.claim)),
                                        claim_ref(ctx.op, naming::backup_claim(claim.claim))},
                                       lingering)) {
      return *now;
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "objects finalizing");
  if (ctx.op.path == Path::Rebind) {
    for (const ClaimPlan& claim : ctx.op.claims) {
      if (!unrolled(claim)) continue;
      if (auto now = put_policies_back(ctx, claim)) return *now;
    }
  }
  return StepOutcome::done(Trigger::ScaleBackDone);
}

}  // namespace stsresize
