// Planning: decide which claims to resize and how; the plan is recorded once and never
// recomputed, so a resumed operation keeps the claims (and their uids) it started with.
#include "engine/planner.h"
#include "states/fence.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome plan_step(StepContext& ctx) {
  using namespace steps;
  if (ctx.op.path != Path::Undecided) {
    return StepOutcome::done(ctx.op.path == Path::Expand ? Trigger::PlannedExpand
                                                         : Trigger::PlannedCopy);
  }
  auto claims = ctx.kube.list(Kind::PersistentVolumeClaim, ctx.op.ns);
  if (!claims) return from_error(claims.error(), "listing claims");
  auto classes = list_storage_classes(ctx.kube);
  if (!classes) return from_error(classes.error(), "listing storage classes");
  auto plan = classes->has_value()
                  ? plan_resize(ctx.statefulset, claims->items, **classes)
                  : plan_resize(ctx.statefulset, claims->items, StorageClassesUnknown{});
  if (!plan) return StepOutcome::critical(plan.error());
  if (!plan->has_value()) return StepOutcome::critical("nothing to resize any more");
  if (auto recorded = ctx.journal.commit(entries::Planned{(*plan)->path, (*plan)->claims});
      !recorded) {
    return StepOutcome::transient(recorded.error());
  }
  // Checked before anything is stopped: the fence would find it only after ScalingDown.
  std::vector<std::string> planned;
  for (const ClaimPlan& claim : (*plan)->claims) planned.push_back(claim.claim);
  auto foreign = mounted_by_another_owner(ctx, planned);
  if (!foreign) return foreign.error();
  if (foreign->has_value()) {
    return StepOutcome::critical(**foreign +
                                 ", a claim this StatefulSet's name and template give too: "
                                 "stsresize does not resize a claim another owner's pod uses "
                                 "(if the claim is the other's, give it that StatefulSet's "
                                 "selector labels and stsresize leaves it alone; if it is this "
                                 "StatefulSet's, stop that pod first)");
  }
  if (!(*plan)->left_alone.empty()) {
    std::string names;
    for (const std::string& claim : (*plan)->left_alone)
      names += (names.empty() ? "" : ", ") + claim;
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Warning, "ClaimsLeftAlone",
                      "operation " + ctx.op.id + " leaves alone " + names +
                          ": the claim's labels say it belongs to another StatefulSet whose name "
                          "and volumeClaimTemplate give the same claim name; the pod of this "
                          "StatefulSet with that ordinal runs on it and is not resized");
  }
  if (!classes->has_value()) {
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, kStorageClassesUnreadable,
                      std::string{kStorageClassesUnreadableWhy});
  }
  return StepOutcome::waiting(Duration{0});
}

}  // namespace stsresize
