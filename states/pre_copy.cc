// PreCopying (the copy paths, unless the StatefulSet says stsresize.dev/pre-copy: "false"): for
// each planned claim, its backup claim (the one BackingUp copies into) and a pre-copy Job
// (engine/copy_job.h) on the node of the replica that mounts the claim, copying while the
// replica still writes. PreCopied is recorded when the Job ends, however it ended: nothing a
// pre-copy does is trusted. BackingUp, with the replicas stopped, copies again (rsync moves only
// what changed) and proves the copy, so a pre-copy that failed costs time, never data: a Warning
// Event, and BackingUp copies the whole claim. Once every claim is recorded its pre-copy Job is
// deleted in the foreground; Done only once every one is gone with its pod, so that no pre-copy
// still writes to a backup claim when BackingUp's copy starts.
#include "engine/copy_job.h"
#include "engine/naming.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// Why `claim` gets no pre-copy at all; empty when it does.
std::string no_pre_copy(const ClaimPlan& claim) {
  if (std::ranges::find(claim.access_modes, "ReadWriteOncePod") != claim.access_modes.end()) {
    return "it is ReadWriteOncePod: no second pod may mount it while its replica runs";
  }
  return {};
}

// PreCopied from a pre-copy Job that ended: its figures, or why it copied nothing useful.
std::expected<entries::PreCopied, StepOutcome> result_of(StepContext& ctx, const ClaimPlan& claim,
                                                         const std::string& job_name,
                                                         const Json& job,
                                                         const k8s::JobStatus& status) {
  const bool succeeded = status.outcome == k8s::JobOutcome::Complete;
  auto said = job_pod_message(ctx, job_name, k8s::uid(job).value_or(""), "copy", succeeded);
  if (!said) return std::unexpected(said.error());
  if (succeeded) {
    auto result = parse_pre_copy_result(*said);
    if (result) return entries::PreCopied{claim.claim, result->passes, result->bytes, ""};
    return entries::PreCopied{claim.claim, 0, 0,
                              "its Job reported no usable figures: " + result.error()};
  }
  return entries::PreCopied{claim.claim, 0, 0,
                            "its Job failed (" + status.reason + "): " + status.message +
                                (said->empty() || said->starts_with("{") ? "" : "; " + *said)};
}

// PreCopied for a pre-copy given up (it failed, or could not run or end in time), and a
// Warning saying so.
StepOutcome given_up(StepContext& ctx, const ClaimPlan& claim, const std::string& why) {
  ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Warning, "PreCopyFailed",
                    "operation " + ctx.op.id + ": the pre-copy of " + claim.claim +
                        " was given up (" + why +
                        "); the copy with the replicas stopped copies what it did not");
  return record_and_continue(ctx, entries::PreCopied{claim.claim, 0, 0, why});
}

}  // namespace

StepOutcome pre_copy_step(StepContext& ctx) {
  int running = 0;
  bool all_recorded = true;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (claim.pre_copied) continue;
    all_recorded = false;
    if (const std::string why = no_pre_copy(claim); !why.empty()) {
      return record_and_continue(ctx, entries::PreCopied{claim.claim, 0, 0, why});
    }
    const ObjectRef ref = job_ref(ctx.op, naming::pre_copy_job(claim.claim));
    // A pod that cannot be placed beside its replica (its node full, or tainted against it)
    // would hold the resize until the job timeout, and a backup claim of a WaitForFirstConsumer
    // class, which only that pod consumes, would fail it once Pending past the pending timeout:
    // past that timeout, such a pre-copy is given up (BackingUp's copy, placed by the scheduler
    // alone, binds the claim). Asked before the claim's own check for that reason.
    if (phase_timed_out(ctx, ctx.settings.pending_timeout)) {
      auto unscheduled = copy_pod_unscheduled(ctx, ref.name);
      if (!unscheduled) return unscheduled.error();
      if (*unscheduled) {
        return given_up(ctx, claim,
                        "its pod could not be scheduled beside its replica within the pending "
                        "timeout: " +
                            **unscheduled);
      }
    }
    if (auto now = ensure_backup_claim(ctx, claim)) return *now;
    const std::string backup_name = naming::backup_claim(claim.claim);

    auto existing = get_optional(ctx, ref);
    if (!existing) return existing.error();
    if (!existing->has_value()) {
      if (!ctx.settings.may_start_copy(running)) continue;
      auto node = node_using(ctx, claim.claim);
      if (!node) return node.error();
      const CopyJobRequest request{.ns = ctx.op.ns,
                                   .job_name = ref.name,
                                   .source_claim = claim.claim,
                                   .destination_claim = backup_name,
                                   .operation_id = ctx.op.id,
                                   .statefulset = ctx.op.statefulset,
                                   .purpose = std::string{kPreCopyPurpose},
                                   .destination_bytes = 0};
      if (auto created = create_intended(
              ctx, ref,
              build_pre_copy_job(request, Placement{node->first, node->second},
                                 ctx.settings.copy_job),
              "pre-copy " + claim.claim + " -> " + backup_name +
                  (node->first.empty() ? "" : " on node " + node->first + ", beside its replica"));
          !created) {
        return created.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    const Json& job = **existing;
    if (!created_by(job, ctx.op)) {
      return StepOutcome::critical(to_string(ref) + " exists but was not created by operation " +
                                   ctx.op.id);
    }
    auto status = k8s::job_status(job);
    if (!status) return malformed(status.error());
    if (status->outcome == k8s::JobOutcome::Running) {
      // Stopped below with the others; BackingUp copies what it did not.
      if (phase_timed_out(ctx, ctx.settings.job_timeout)) {
        return given_up(ctx, claim, "its Job ran past the job timeout");
      }
      ++running;
      continue;
    }
    auto result = result_of(ctx, claim, ref.name, job, *status);
    if (!result) return result.error();
    if (!result->skipped.empty()) return given_up(ctx, claim, result->skipped);
    return record_and_continue(ctx, *result);
  }
  if (!all_recorded) return StepOutcome::waiting(ctx.settings.poll_interval, "pre-copying");

  // In the foreground: the Job is gone only once its pod is, and with it any write to the
  // backup claim.
  bool lingering = false;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (auto now = delete_ours_in_turn(ctx, {job_ref(ctx.op, naming::pre_copy_job(claim.claim))},
                                       lingering, Propagation::Foreground)) {
      return *now;
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "pre-copy Jobs ending");
  return StepOutcome::done(ctx.op.strategy == Strategy::Rolling ? Trigger::RollOn
                                                                : Trigger::StepDone);
}

}  // namespace stsresize
