// Measuring (an operation that shrinks a claim, before anything else): what each claim to be
// shrunk holds, measured by a Job on the node of the pod that uses it while the application
// keeps running (engine/measure_job.h); ClaimMeasured is recorded from the Job's result. Once
// every such claim is measured, the Jobs are deleted, and then either every claim fits its new
// size with the headroom (on to UpdatingTemplate for an explicit request, Planning for the
// template trigger) or the operation fails, with the figures, before anything was changed.
// The claims are those the plan would have now: a claim created since (a scale-up) is measured
// too; one measured and then deleted and created again is another claim, measured again.
#include "engine/measure_job.h"

#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

constexpr std::string_view kClaimUidAnnotation = "stsresize.dev/claim-uid";

// The claims the plan would shrink now: of the StatefulSet as it is (template trigger) or as
// the request will make it (explicit request).
std::expected<std::vector<ClaimPlan>, StepOutcome> claims_to_shrink(StepContext& ctx) {
  auto claims = ctx.kube.list(Kind::PersistentVolumeClaim, ctx.op.ns);
  if (!claims) return std::unexpected(from_error(claims.error(), "listing claims"));
  auto classes = list_storage_classes(ctx.kube);
  if (!classes) return std::unexpected(from_error(classes.error(), "listing storage classes"));
  Json statefulset = ctx.statefulset;
  if (!ctx.op.template_changes.empty()) {
    auto changed = with_template_changes(std::move(statefulset), ctx.op.template_changes);
    if (!changed) return std::unexpected(StepOutcome::critical(changed.error()));
    statefulset = std::move(*changed);
  }
  auto plan = classes->has_value()
                  ? plan_resize(statefulset, claims->items, **classes)
                  : plan_resize(statefulset, claims->items, StorageClassesUnknown{});
  if (!plan) return std::unexpected(StepOutcome::critical(plan.error()));
  if (!plan->has_value()) {
    return std::unexpected(StepOutcome::critical("nothing to resize any more"));
  }
  std::vector<ClaimPlan> shrinking;
  for (ClaimPlan& claim : (*plan)->claims) {
    if (shrinks(claim)) shrinking.push_back(std::move(claim));
  }
  return shrinking;
}

const MeasuredClaim* measured(const Operation& op, const std::string& claim,
                              const std::string& uid) {
  for (const MeasuredClaim& m : op.measured) {
    if (m.claim == claim && m.uid == uid) return &m;
  }
  return nullptr;
}

std::string fit_refusal(const std::vector<std::pair<ClaimPlan, VolumeUsage>>& misfits) {
  std::string text = "shrink refused, nothing was changed: ";
  bool first = true;
  for (const auto& [claim, usage] : misfits) {
    text +=
        (first ? "" : "; ") + std::string{"claim "} + claim.claim + " holds " +
        human_bytes(data_bytes(usage)) + " (" + std::to_string(usage.files) + " files, " +
        std::to_string(usage.bytes) + " bytes, " + std::to_string(usage.used) +
        " bytes on disk) and needs at least " + std::to_string(smallest_size(usage)) + " bytes (" +
        human_bytes(smallest_size(usage)) + ") with the " + std::to_string(kShrinkHeadroomPercent) +
        "% headroom kept for the new volume's filesystem, more than " + claim.to_size.to_string();
    first = false;
  }
  return text + ": ask for a larger size, or remove data first";
}

}  // namespace

StepOutcome measure_step(StepContext& ctx) {
  auto shrinking = claims_to_shrink(ctx);
  if (!shrinking) return shrinking.error();
  int running = 0;
  bool all_measured = true;
  for (const ClaimPlan& claim : *shrinking) {
    if (measured(ctx.op, claim.claim, claim.source_uid) != nullptr) continue;
    all_measured = false;
    const ObjectRef ref = job_ref(ctx.op, naming::measure_job(claim.claim));
    auto existing = get_optional(ctx, ref);
    if (!existing) return existing.error();
    if (!existing->has_value()) {
      if (!ctx.settings.may_start_copy(running)) continue;
      auto node = node_using(ctx, claim.claim);
      if (!node) return node.error();
      Json job = build_measure_job(MeasureJobRequest{ctx.op.ns, ref.name, claim.claim, ctx.op.id,
                                                     ctx.op.statefulset, node->first, node->second},
                                   ctx.settings.copy_job);
      job["metadata"]["annotations"][std::string{kClaimUidAnnotation}] = claim.source_uid;
      if (auto created = create_intended(
              ctx, ref, job,
              "measure " + claim.claim +
                  (node->first.empty() ? "" : " on node " + node->first + ", beside its pod"));
          !created) {
        return created.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    const Json& found = **existing;
    auto uid_annotation = k8s::annotation(found, kClaimUidAnnotation);
    const std::string measured_uid =
        uid_annotation && uid_annotation->has_value() ? **uid_annotation : "";
    if (!created_by(found, ctx.op) || measured_uid != claim.source_uid) {
      // A measure Job only reads: one of an operation that was not continued, or of a claim
      // deleted and created again since, is deleted and the claim measured anew. Any other Job
      // of that name is someone else's.
      auto purpose = k8s::label(found, kPurposeLabel);
      if (!purpose || !purpose->has_value() || **purpose != kMeasurePurpose) {
        return StepOutcome::critical(to_string(ref) +
                                     " exists and is not a measure Job of stsresize: not "
                                     "touching it; delete it or rename the claim's owner");
      }
      auto uid = k8s::uid(found);
      if (being_deleted(found)) return StepOutcome::waiting(ctx.settings.poll_interval);
      if (auto removed =
              delete_intended(ctx, ref, uid ? std::optional<std::string>{*uid} : std::nullopt,
                              Propagation::Background, "measures an earlier claim or operation");
          !removed) {
        return removed.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    auto status = k8s::job_status(found);
    if (!status) return malformed(status.error());
    if (status->outcome == k8s::JobOutcome::Running) {
      if (phase_timed_out(ctx, ctx.settings.job_timeout)) {
        return StepOutcome::critical("measure Job " + ref.name +
                                     " is still running past the job timeout");
      }
      ++running;
      continue;
    }
    const bool succeeded = status->outcome == k8s::JobOutcome::Complete;
    auto said = job_pod_message(ctx, ref.name, k8s::uid(found).value_or(""), "measure", succeeded);
    if (!said) return said.error();
    if (!succeeded) {
      return StepOutcome::critical("measure Job " + ref.name + " failed (" + status->reason +
                                   "): " + status->message + (said->empty() ? "" : "; " + *said));
    }
    auto usage = parse_volume_usage(*said);
    if (!usage) {
      return StepOutcome::critical("measure Job " + ref.name +
                                   " reported no usable figures: " + usage.error());
    }
    return record_and_continue(
        ctx, entries::ClaimMeasured{claim.claim, claim.source_uid, usage->files, usage->bytes,
                                    usage->used});
  }
  if (!all_measured) return StepOutcome::waiting(ctx.settings.poll_interval, "measuring");

  bool lingering = false;
  for (const ClaimPlan& claim : *shrinking) {
    if (auto now = delete_ours_in_turn(ctx, {job_ref(ctx.op, naming::measure_job(claim.claim))},
                                       lingering)) {
      return *now;
    }
  }
  if (lingering) return StepOutcome::waiting(ctx.settings.poll_interval, "measure Jobs finalizing");

  std::vector<std::pair<ClaimPlan, VolumeUsage>> misfits;
  for (const ClaimPlan& claim : *shrinking) {
    const VolumeUsage& usage = measured(ctx.op, claim.claim, claim.source_uid)->usage;
    if (smallest_size(usage) > claim.to_size.bytes()) misfits.emplace_back(claim, usage);
  }
  if (!misfits.empty()) return StepOutcome::critical(fit_refusal(misfits));
  return StepOutcome::done(ctx.op.template_changes.empty() ? Trigger::StartPlanning
                                                           : Trigger::StartTemplateUpdate);
}

}  // namespace stsresize
