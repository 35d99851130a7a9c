// Planning: decide which claims to resize and how; the plan is recorded once and never
// recomputed, so a resumed operation keeps the claims (and their uids) it started with.
#include "engine/planner.h"
#include "states/step_support.h"

namespace stsresize {

StepOutcome plan_step(StepContext& ctx) {
  using namespace steps;
  if (ctx.op.path != Path::Undecided) {
    return StepOutcome::done(ctx.op.path == Path::Expand ? PhaseEvent::PlannedExpand
                                                         : PhaseEvent::PlannedCopy);
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
  if (auto recorded = ctx.journal.record(events::Planned{(*plan)->path, (*plan)->claims});
      !recorded) {
    return StepOutcome::transient(recorded.error());
  }
  if (!classes->has_value()) {
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, kStorageClassesUnreadable,
                      std::string{kStorageClassesUnreadableWhy});
  }
  return StepOutcome::waiting(Duration{0});
}

}  // namespace stsresize
