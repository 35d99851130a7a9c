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
    if (!ctx.op.in_scope(claim) || claim.source_deleted) continue;
    if (claim.backup_verified && claim.backup_generation == generation) continue;
    all_verified = false;
    if (auto now = ensure_backup_claim(ctx, claim)) return *now;
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
      if (!ctx.op.in_scope(claim) || claim.source_deleted) continue;
      if (auto misfit = backup_does_not_fit(ctx.op, claim)) {
        return StepOutcome::critical("the shrink of " + claim.claim + " cannot go on: " + *misfit);
      }
    }
    return StepOutcome::done();
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "copies running");
}

}  // namespace stsresize
