// BackingUp: for every planned claim, a backup claim of the same size and class and a copy Job
// source -> backup; BackupVerified is recorded only when the Job's summary shows both trees
// equal, with the fence generation it was taken at. At most settings.max_parallel_copies Jobs
// run at once (0: every claim's at once). The fence (states/fence.h) is checked at every
// invocation: a scale-up with every source intact is a critical error (ScalingBack); once a source
// is gone (BackingUp entered again on BackupStale) the fence is set again. A backup verified at
// another generation is taken again; a claim whose source was deleted is never copied over: its
// backup is the data.
#include "engine/naming.h"
#include "states/fence.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// The size and class of the backup claim: the source's on the two-copy path, the target's on the
// rebind path, where the backup claim's volume becomes the claim's.
const Quantity& backup_size(const Operation& op, const ClaimPlan& claim) {
  return op.path == Path::Rebind ? claim.to_size : claim.from_size;
}
const std::string& backup_class(const Operation& op, const ClaimPlan& claim) {
  return op.path == Path::Rebind ? claim.to_class : claim.from_class;
}

Json backup_claim_body(const Operation& op, const ClaimPlan& claim) {
  Json spec = {{"accessModes", claim.access_modes},
               {"resources", {{"requests", {{"storage", backup_size(op, claim).to_string()}}}}}};
  if (!backup_class(op, claim).empty()) spec["storageClassName"] = backup_class(op, claim);
  if (!claim.volume_mode.empty()) spec["volumeMode"] = claim.volume_mode;
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata",
               {{"name", naming::backup_claim(claim.claim)},
                {"namespace", op.ns},
                {"labels",
                 {{"app.kubernetes.io/managed-by", "stsresize"},
                  {std::string{kOperationLabel}, naming::label_value(op.id)},
                  {std::string{kStatefulSetLabel}, naming::label_value(op.statefulset)},
                  {std::string{kPurposeLabel}, kBackupPurpose}}},
                {"annotations",
                 {{std::string{kOperationLabel}, op.id},
                  {std::string{kSourceClaimAnnotation}, claim.claim}}}}},
              {"spec", std::move(spec)}};
}

// Critical unless the existing backup claim is the one this operation asked for.
std::optional<StepOutcome> check_backup_claim(StepContext& ctx, const ClaimPlan& claim,
                                              const Json& backup) {
  const std::string name = naming::backup_claim(claim.claim);
  if (!created_by(backup, ctx.op)) {
    return StepOutcome::critical("backup claim " + name +
                                 " exists but was not created by operation " + ctx.op.id +
                                 " (a backup of an earlier operation?): not touching it");
  }
  auto size = k8s::requested_storage(backup);
  auto storage_class = k8s::storage_class_name(backup);
  if (!size) return malformed(size.error());
  if (!storage_class) return malformed(storage_class.error());
  const Quantity& wanted_size = backup_size(ctx.op, claim);
  const std::string& wanted_class = backup_class(ctx.op, claim);
  if (*size != wanted_size || storage_class->value_or("") != wanted_class) {
    return StepOutcome::critical("backup claim " + name + " has size " + size->to_string() +
                                 " and class \"" + storage_class->value_or("") +
                                 "\" where this operation asked for " + wanted_size.to_string() +
                                 " and \"" + wanted_class + "\"");
  }
  if (being_deleted(backup)) {
    return StepOutcome::critical("backup claim " + name + " is being deleted by someone else");
  }
  auto phase = k8s::pvc_phase(backup);
  if (!phase) return malformed(phase.error());
  if (*phase != "Bound" && phase_timed_out(ctx, ctx.settings.pending_timeout)) {
    return StepOutcome::critical("backup claim " + name + " is still " + *phase +
                                 " after the pending timeout");
  }
  return std::nullopt;
}

// A copy writes over its backup claim: only from the planned source itself. A claim of that name
// that is another object (deleted and created again by a process whose record the operation
// does not have: another replica with its own journal, say) holds none of the data, and its
// backup may be the only copy left.
std::optional<StepOutcome> check_source(StepContext& ctx, const ClaimPlan& claim) {
  auto source = get_optional(ctx, claim_ref(ctx.op, claim.claim));
  if (!source) return source.error();
  const std::string uid = source->has_value() ? k8s::uid(**source).value_or("") : "";
  if (source->has_value() && uid == claim.source_uid && !being_deleted(**source)) {
    return std::nullopt;
  }
  const std::string what = !source->has_value() ? "is gone"
                           : uid != claim.source_uid
                               ? "is another object than the one planned (uid " + uid +
                                     ", planned " + claim.source_uid + ")"
                               : "is being deleted";
  return StepOutcome::critical(
      "source claim " + claim.claim + " " + what + ": not copying it over backup claim " +
      naming::backup_claim(claim.claim) + ", which may hold the only copy of its data");
}

}  // namespace

StepOutcome backup_step(StepContext& ctx) {
  auto breach = fence_breach(ctx, intact_sources(ctx.op));
  if (!breach) return breach.error();
  if (*breach) {
    if (ctx.op.source_claim_deleted()) return restore_fence(ctx, **breach);
    return StepOutcome::critical(
        "the fence was broken during BackingUp (" + describe(**breach) +
        "): a backup may miss what is written to its source, so it proves nothing; scaling back "
        "onto the intact source claims");
  }
  const std::int64_t generation = fence_generation(ctx);
  int running = 0;
  bool all_verified = true;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (claim.source_deleted) continue;
    if (claim.backup_verified && claim.backup_generation == generation) continue;
    all_verified = false;
    const ObjectRef backup_ref = claim_ref(ctx.op, naming::backup_claim(claim.claim));
    auto backup = get_optional(ctx, backup_ref);
    if (!backup) return backup.error();
    if (!backup->has_value()) {
      if (auto created = create_intended(
              ctx, backup_ref, backup_claim_body(ctx.op, claim),
              "backup of " + claim.claim + ", " + backup_size(ctx.op, claim).to_string());
          !created) {
        return created.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    if (auto refused = check_backup_claim(ctx, claim, **backup)) return *refused;
    if (auto refused = check_source(ctx, claim)) return *refused;

    auto copy = copy_job(ctx, naming::backup_job(claim.claim), claim.claim,
                         naming::backup_claim(claim.claim), std::string{kBackupPurpose},
                         ctx.settings.may_start_copy(running), generation,
                         fit_checked_bytes(backup_size(ctx.op, claim), claim.from_size));
    if (!copy) return copy.error();
    if (copy->created) return StepOutcome::waiting(Duration{0});
    if (copy->running) ++running;
    if (copy->summary) {
      return record_and_continue(
          ctx, entries::BackupVerified{claim.claim, copy->summary->source, generation});
    }
  }
  if (all_verified) {
    // Checked for every claim before Recreating deletes the first source: then a misfit still
    // scales back onto intact sources.
    for (const ClaimPlan& claim : ctx.op.claims) {
      if (claim.source_deleted) continue;
      if (auto misfit = backup_does_not_fit(ctx.op, claim)) {
        return StepOutcome::critical("the shrink of " + claim.claim + " cannot go on: " + *misfit);
      }
    }
    return StepOutcome::done();
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "copies running");
}

}  // namespace stsresize
