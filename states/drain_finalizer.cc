// The drain's finalizer on a StatefulSet that opts in to it, and what its deletion asks for
// (engine/statefulset_deletion.h): a delete that removes the replicas drains every ordinal before
// the finalizer lets it finish; an orphan delete, or one that cannot be told apart, drains
// nothing and is let through at once.
#include "engine/cleanup_pod.h"
#include "engine/drain_plan.h"
#include "engine/statefulset_deletion.h"
#include "states/reconciler_session.h"

namespace stsresize {

using namespace results;

namespace {

const std::string kFinalizer{kScaledownFinalizer};

}  // namespace

std::expected<void, std::string> Reconciler::Session::write_finalizer(bool present) {
  Json updated = sts_;
  if (present) {
    add_finalizer(updated, kScaledownFinalizer);
  } else {
    remove_finalizer(updated, kScaledownFinalizer);
  }
  // With the resourceVersion read: a Conflict re-reads (retry), never overwrites.
  auto written = r_.kube_.update(Kind::StatefulSet, updated);
  if (!written) {
    // The last finalizer removed from an object being deleted: the API server deletes it.
    if (!present && written.error().code == KubeErrorCode::NotFound) return {};
    return std::unexpected((present ? "adding" : "removing") + std::string{" finalizer "} +
                           kFinalizer + " on " + to_string(ref_) + ": " + written.error().message);
  }
  sts_ = std::move(*written);
  return {};
}

std::optional<ReconcileResult> Reconciler::Session::settle_finalizer(const Operation* annotated) {
  auto deleting = k8s::is_being_deleted(sts_);
  if (!deleting) return terminal(deleting.error());
  const bool held = has_finalizer(sts_, kScaledownFinalizer);
  const bool opted_in = scaledown_pod_template(sts_).has_value();
  const bool draining = annotated != nullptr && annotated->kind == OperationKind::Drain &&
                        !is_terminal(annotated->phase);
  if (!*deleting) {
    if (opted_in && !held) {
      if (auto written = write_finalizer(true); !written) return retry(written.error());
      emit_event(EventSeverity::Normal, "FinalizerAdded",
                 "finalizer " + kFinalizer +
                     " added: a delete of this StatefulSet that removes its pods drains every "
                     "ordinal's claims first (an orphan delete drains nothing)");
    } else if (!opted_in && held && !draining) {
      if (auto written = write_finalizer(false); !written) return retry(written.error());
      emit_event(EventSeverity::Normal, "FinalizerRemoved",
                 "finalizer " + kFinalizer +
                     " removed: the StatefulSet no longer has a cleanup "
                     "pod template (annotation " +
                     std::string{kScaledownPodTemplateAnnotation} + ")");
    }
    return std::nullopt;
  }
  if (!held || draining) return std::nullopt;
  const auto let_go = [&](EventSeverity severity, std::string_view reason,
                          const std::string& why) -> ReconcileResult {
    if (auto written = write_finalizer(false); !written) return retry(written.error());
    emit_event(severity, reason, why + "; finalizer " + kFinalizer + " removed");
    return idle();
  };
  if (annotated != nullptr && annotated->kind == OperationKind::Resize &&
      !is_terminal(annotated->phase)) {
    // UpdatingTemplate deletes the set with propagation Orphan and creates it again: at once.
    const ReconcileResult result =
        let_go(EventSeverity::Normal, "OrphanDeleteNotDrained",
               "deleted while resize operation " + annotated->id +
                   " runs (its re-create deletes with propagation Orphan): nothing drained");
    return result.is(ReconcileResult::Kind::Idle) ? requeue(Duration{0}) : result;
  }
  if (is_marked_failed(sts_)) {
    return let_go(EventSeverity::Warning, "DeletionNotDrained",
                  "deleted while labelled " + std::string{kFailedLabel} +
                      ": nothing drained, every claim kept");
  }
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto pods = r_.kube_.list(Kind::Pod, ref_.ns);
  if (!pods) return retry("listing pods: " + pods.error().message);
  const Deletion deletion = read_deletion(sts_, pods->items);
  if (deletion.reading == DeletionReading::Orphan) {
    return let_go(EventSeverity::Normal, "OrphanDeleteNotDrained",
                  deletion.why + ": not a scale-down, nothing drained");
  }
  // Cascade or Unclear: is anything left to drain? (Unclear plans as Cascade would, only to
  // tell "nothing left" from "claims kept".)
  auto plan = opted_in ? plan_drain(sts_, claims->items, pods->items, true)
                       : std::expected<std::optional<DrainPlan>, std::string>{std::nullopt};
  if (!plan) {
    emit_event(EventSeverity::Warning, "InvalidDrain", plan.error() + "; nothing drained");
    return terminal(plan.error());
  }
  if (!plan->has_value()) {
    return let_go(EventSeverity::Normal, "DeletionDrained",
                  "deleted, and no claim of it is left to drain");
  }
  if (deletion.reading == DeletionReading::Unclear) {
    return let_go(EventSeverity::Warning, "DeletionNotDrained",
                  "deleted, but " + deletion.why +
                      ": read as an orphan delete, nothing drained, every claim kept");
  }
  if (auto begun =
          begin((*plan)->trigger + " (" + deletion.why + ")",
                {entries::DrainPlanned{std::move((*plan)->ordinals)}}, OperationKind::Drain);
      !begun) {
    return retry(begun.error());
  }
  return drive();
}

}  // namespace stsresize
