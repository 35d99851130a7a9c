// Recreating: for every claim, delete the source (uid precondition) — only once its backup is
// verified and the backup claim still exists, is ours and is Bound, and after deleting the
// backup Job whose pod would otherwise keep the source claim — then create the claim again,
// empty, with the target size and class and the original labels. Before every act the fence
// (states/fence.h) must hold: a breach while every source is intact is a critical error
// (ScalingBack), after a source was deleted the fence is set again. A source still intact whose
// backup was verified at another fence generation goes back to BackingUp (BackupStale) before
// any further source is deleted.
// On the rebind path (states/rebind.h) both volumes are kept (Retain) before the source is
// deleted, and the claim is created again on its copy's volume instead of empty.
#include "engine/naming.h"
#include "engine/planner.h"
#include "states/fence.h"
#include "states/rebind.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// Built from what planning captured: the source claim no longer exists at this point.
// (Deliberately not k8s::strip_for_recreate of the live claim: there is none.)
Json recreated_claim_body(const Operation& op, const ClaimPlan& claim) {
  Json spec = {{"accessModes", claim.access_modes},
               {"resources", {{"requests", {{"storage", claim.to_size.to_string()}}}}}};
  if (!claim.to_class.empty()) spec["storageClassName"] = claim.to_class;
  if (!claim.volume_mode.empty()) spec["volumeMode"] = claim.volume_mode;
  Json metadata = {{"name", claim.claim},
                   {"namespace", op.ns},
                   {"annotations", {{std::string{kRecreatedByAnnotation}, op.id}}}};
  if (!claim.labels.empty()) metadata["labels"] = claim.labels;
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

// Every condition for deleting a source claim; the reason it may not be deleted otherwise.
std::optional<StepOutcome> refuse_delete(StepContext& ctx, const ClaimPlan& claim) {
  if (!claim.backup_verified) {
    return StepOutcome::critical("refusing to delete " + claim.claim +
                                 ": its backup has not been verified");
  }
  if (claim.backup_generation != fence_generation(ctx)) {
    return StepOutcome::critical("refusing to delete " + claim.claim +
                                 ": its backup was verified at StatefulSet generation " +
                                 std::to_string(claim.backup_generation) + ", it is now " +
                                 std::to_string(fence_generation(ctx)));
  }
  if (auto misfit = backup_does_not_fit(ctx.op, claim)) {
    return StepOutcome::critical("refusing to delete " + claim.claim + ": " + *misfit);
  }
  auto problem = backup_claim_problem(ctx, claim, /*bound=*/true);
  if (!problem) return problem.error();
  if (*problem) {
    return StepOutcome::critical("refusing to delete " + claim.claim + ": backup claim " +
                                 naming::backup_claim(claim.claim) + " " + **problem);
  }
  return std::nullopt;
}

StepOutcome delete_source(StepContext& ctx, const ClaimPlan& claim) {
  const ObjectRef ref = claim_ref(ctx.op, claim.claim);
  auto source = get_optional(ctx, ref);
  if (!source) return source.error();
  if (!source->has_value()) return record_and_continue(ctx, entries::SourceDeleted{claim.claim});
  auto uid = k8s::uid(**source);
  if (!uid) return malformed(uid.error());
  if (*uid != claim.source_uid) {
    return StepOutcome::critical(claim.claim + " was replaced by someone else (uid " + *uid +
                                 ", planned " + claim.source_uid + ")");
  }
  // The finished backup Job's pod still references the source claim, and pvc-protection keeps
  // a claim any existing pod references (Succeeded or not): delete the Job first (Background,
  // so its pod goes too), or the source would stay Terminating for good. Its result is already
  // journaled (backup_verified).
  // Also when the source is already being deleted: that is how a claim gets stuck.
  if (claim.backup_verified) {
    bool acted = false;
    auto job = delete_ours(ctx, job_ref(ctx.op, naming::backup_job(claim.claim)), acted);
    if (!job) return job.error();
    if (acted) return StepOutcome::waiting(Duration{0});
  }
  if (being_deleted(**source)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, "source claim finalizing");
  }
  if (auto refused = refuse_delete(ctx, claim)) return *refused;
  // Not delete_ours: the source is the application's claim, not an object this operation
  // created; the uid precondition is the planned source's.
  if (auto removed =
          delete_intended(ctx, ref, claim.source_uid, Propagation::Default,
                          "backup verified: " + std::to_string(claim.backup_verified->files) +
                              " files, digest " + claim.backup_verified->digest.substr(0, 12));
      !removed) {
    return removed.error();
  }
  return StepOutcome::waiting(Duration{0});
}

StepOutcome recreate_claim(StepContext& ctx, const ClaimPlan& claim) {
  const ObjectRef ref = claim_ref(ctx.op, claim.claim);
  auto existing = get_optional(ctx, ref);
  if (!existing) return existing.error();
  if (!existing->has_value()) {
    if (auto created =
            create_intended(ctx, ref, recreated_claim_body(ctx.op, claim),
                            claim.to_size.to_string() + ", class \"" + claim.to_class + "\"");
        !created) {
      return created.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (being_deleted(**existing)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, claim.claim + " finalizing");
  }
  auto recreated_by = k8s::annotation(**existing, kRecreatedByAnnotation);
  if (!recreated_by) return malformed(recreated_by.error());
  if (*recreated_by != ctx.op.id) {
    return StepOutcome::critical(claim.claim +
                                 " was created again by someone else before stsresize could");
  }
  auto uid = k8s::uid(**existing);
  if (!uid) return malformed(uid.error());
  return record_and_continue(ctx, entries::ClaimRecreated{claim.claim, *uid});
}

}  // namespace

StepOutcome recreate_step(StepContext& ctx) {
  // Before the fence: setting it again would stop the pod, and the claim would go with what it
  // wrote since the backup.
  auto held = held_source(ctx);
  if (!held) return held.error();
  if (*held) return report_held_source(ctx, **held);
  auto breach = fence_breach(ctx, planned_claims(ctx.op));
  if (!breach) return breach.error();
  if (*breach) {
    if (ctx.op.source_claim_deleted()) return restore_fence(ctx, **breach);
    return StepOutcome::critical(
        "the fence was broken during Recreating before any source claim "
        "was deleted (" +
        describe(**breach) + "): scaling back onto the intact source claims");
  }
  // A source delete already asked for (the claim gone or going, SourceDeleted not yet recorded)
  // is finished first: it was made under a fresh backup, and BackingUp could not copy it again.
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim) || !claim.recreated_uid.empty() || claim.source_deleted) continue;
    auto source = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!source) return source.error();
    if (!source->has_value() || being_deleted(**source)) return delete_source(ctx, claim);
  }
  const std::int64_t generation = fence_generation(ctx);
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim)) continue;
    if (!claim.source_deleted && claim.backup_verified && claim.backup_generation != generation) {
      return StepOutcome::done(Trigger::BackupStale);
    }
  }
  const bool rebind = ctx.op.path == Path::Rebind;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim) || !claim.recreated_uid.empty()) continue;
    if (rebind && !claim.source_deleted) {
      if (auto now = keep_volumes(ctx, claim)) return *now;
    }
    if (!claim.source_deleted) return delete_source(ctx, claim);
    return rebind ? rebind_claim(ctx, claim) : recreate_claim(ctx, claim);
  }
  return StepOutcome::done();
}

}  // namespace stsresize
