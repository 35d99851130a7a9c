// Starting an operation (or refusing to), and continuing one whose state the cluster lost.
#include "states/reconciler_session.h"

#include "engine/actions/explain.h"
#include "engine/cleanup_pod.h"
#include "engine/drain_candidates.h"
#include "engine/drain_plan.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "engine/timestamp.h"
#include "states/machine.h"
#include "states/step_support.h"

namespace stsresize {

ReconcileResult Reconciler::Session::start() {
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto classes = steps::list_storage_classes(r_.kube_);
  if (!classes) return retry("listing storage classes: " + classes.error().message);
  auto plan = classes->has_value() ? plan_resize(sts_, claims->items, **classes)
                                   : plan_resize(sts_, claims->items, StorageClassesUnknown{});
  if (!plan) {
    emit_event(EventSeverity::Warning, "InvalidResize", plan.error());
    return terminal(plan.error());
  }
  if (!plan->has_value()) return idle();
  if (auto waiting = wait_for_drain()) return *waiting;
  // A shrink measures the data first, while the application runs (states/measure.cc).
  const bool shrink = std::ranges::any_of((*plan)->claims, shrinks);
  const entries::PhaseChanged first =
      shrink ? entries::PhaseChanged{Phase::Pending, Phase::Measuring, Trigger::StartMeasuring}
             : entries::PhaseChanged{Phase::Pending, Phase::Planning, Trigger::StartPlanning};
  if (auto begun = begin((*plan)->trigger, {first}); !begun) {
    return retry(begun.error());
  }
  return drive();
}

std::optional<ReconcileResult> Reconciler::Session::start_drain() {
  if (auto noted = note_drain_refusal(); !noted) return retry(noted.error());
  // Nothing to drain; a resize may be asked (a bad claim policy holds no resize).
  if (drain_refusal(sts_)) return std::nullopt;
  const bool by_template = scaledown_pod_template(sts_).has_value();
  auto claims_annotation = k8s::annotation(sts_, kScaledownClaimsAnnotation);
  const bool has_policy =
      claims_annotation && claims_annotation->has_value() && !(*claims_annotation)->empty();
  if (!by_template && !has_policy) return std::nullopt;
  // At 0 replicas because a resize scaled it there (its state removed): not a scale-down, and
  // draining would take every claim. The resize that begins next scales it back.
  if (auto mark = original_replicas_mark(sts_); !mark || mark->has_value()) return std::nullopt;
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto pods = r_.kube_.list(Kind::Pod, ref_.ns);
  if (!pods) return retry("listing pods: " + pods.error().message);
  auto plan = plan_drain(sts_, claims->items, pods->items);
  if (!plan) {
    emit_event(EventSeverity::Warning, "InvalidDrain", plan.error() + "; nothing drained");
    return terminal(plan.error());
  }
  if (!plan->has_value()) return std::nullopt;
  if (auto begun =
          begin((*plan)->trigger,
                {entries::DrainPlanned{std::move((*plan)->ordinals), (*plan)->delete_after}},
                OperationKind::Drain);
      !begun) {
    return retry(begun.error());
  }
  if (by_template && has_policy) {
    emit_event(EventSeverity::Warning, "DrainPolicyIgnored",
               "annotation " + std::string{kScaledownClaimsAnnotation} +
                   " is ignored: this StatefulSet has a cleanup pod template, and its cleanup pod "
                   "drains each ordinal before its claims are deleted");
  }
  return drive();
}

std::optional<ReconcileResult> Reconciler::Session::wait_for_drain() {
  // Nothing waits for a drain that cannot be done (a refusal says why).
  if (drain_refusal(sts_)) return std::nullopt;
  auto claims_annotation = k8s::annotation(sts_, kScaledownClaimsAnnotation);
  const bool has_policy =
      claims_annotation && claims_annotation->has_value() && !(*claims_annotation)->empty();
  if (!scaledown_pod_template(sts_) && !has_policy) return std::nullopt;
  if (auto mark = original_replicas_mark(sts_); !mark || mark->has_value()) return std::nullopt;
  auto deleting = k8s::is_being_deleted(sts_);
  if (!deleting || *deleting) return std::nullopt;
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto pods = r_.kube_.list(Kind::Pod, ref_.ns);
  if (!pods) return retry("listing pods: " + pods.error().message);
  auto found = drain_candidates(sts_, claims->items, pods->items);
  if (!found) return std::nullopt;  // start_drain would have said so (InvalidDrain)
  std::string ordinals;
  int count = 0;
  for (const DrainCandidate& candidate : found->candidates) {
    if (candidate.claims.empty()) continue;
    ordinals += (ordinals.empty() ? "" : ", ") + std::to_string(candidate.ordinal);
    ++count;
  }
  if (count == 0) return std::nullopt;
  if (resize_request_of(sts_)) {
    const std::string status = "queued: the drain of ordinal" +
                               std::string{count == 1 ? " " : "s "} + ordinals +
                               ", left by a scale-down, goes first; this request is validated "
                               "and started when the drain ends";
    auto current = k8s::annotation(sts_, kResizeStatusAnnotation);
    if (!current) return retry(current.error());
    if (!current->has_value() || **current != status) {
      Json updated = sts_;
      if (auto set = k8s::set_annotation(updated, kResizeStatusAnnotation, status); !set) {
        return retry(set.error());
      }
      auto written = r_.kube_.update(Kind::StatefulSet, updated);
      if (!written) {
        return retry("writing " + std::string{kResizeStatusAnnotation} + " on " + to_string(ref_) +
                     ": " + written.error().message);
      }
      sts_ = std::move(*written);
      emit_event(EventSeverity::Normal, "ResizeRequestQueued",
                 "annotation " + std::string{kResizeRequestAnnotation} + ": " +
                     status.substr(std::string_view{"queued: "}.size()));
    }
  }
  return requeue(r_.settings_.poll_interval);
}

// Once per refusal, not on every reconcile: the refusal is written to
// stsresize.dev/resize-status (shown by `stsresize status` as Refused) with a Warning, unless it
// is there already; and removed once the StatefulSet can be drained again. A refusal of a resize
// request already there is left as it is (writing ours over it, and the request's over ours,
// would give both Warnings on every reconcile); ours comes once that one is gone.
std::expected<void, std::string> Reconciler::Session::note_drain_refusal() {
  const std::optional<DrainRefusal> refusal = drain_refusal(sts_);
  auto current = k8s::annotation(sts_, kResizeStatusAnnotation);
  if (!current) return std::unexpected(current.error());
  const std::string status = refusal ? bounded_status(drain_refusal_status(*refusal)) : "";
  const bool ours = current->has_value() && is_drain_refusal_status(**current);
  const bool other = current->has_value() && !(*current)->empty() && !ours;
  if (other || (refusal ? ours && **current == status : !ours)) return {};
  Json updated = sts_;
  auto changed = refusal ? k8s::set_annotation(updated, kResizeStatusAnnotation, status)
                         : k8s::remove_annotation(updated, kResizeStatusAnnotation);
  if (!changed) return std::unexpected(changed.error());
  auto written = r_.kube_.update(Kind::StatefulSet, updated);
  if (!written) {
    return std::unexpected("writing " + std::string{kResizeStatusAnnotation} + " on " +
                           to_string(ref_) + ": " + written.error().message);
  }
  sts_ = std::move(*written);
  if (refusal) {
    emit_event(EventSeverity::Warning, refusal->event_reason,
               refusal->reason + std::string{"; nothing drained"});
  }
  return {};
}

std::expected<void, std::string> Reconciler::Session::begin(const std::string& planned,
                                                            std::vector<Entry> events,
                                                            OperationKind kind) {
  const std::string trigger =
      retry_of_ ? retry_trigger(retry_of_->first, retry_of_->second, planned) : planned;
  auto replicas = k8s::spec_replicas(sts_);
  auto uid = k8s::uid(sts_);
  if (!replicas || !uid) return std::unexpected(!replicas ? replicas.error() : uid.error());
  if (retry_replicas_) {
    replicas = *retry_replicas_;
  } else if (*replicas == 0 && kind == OperationKind::Resize) {
    // An operation whose state was removed (and whose journal is gone, or adopt_unfinished
    // would have continued it) scaled this set to 0: start from what it started from.
    auto mark = original_replicas_mark(sts_);
    if (!mark) return std::unexpected(mark.error());
    if (mark->has_value() && **mark > 0) {
      replicas = **mark;
      emit_event(
          EventSeverity::Warning, "OriginalReplicasRecovered",
          "this StatefulSet is at 0 replicas and has no state annotation; the new operation "
          "starts from the " +
              std::to_string(**mark) + " replicas recorded in " +
              std::string{kOriginalReplicasAnnotation} +
              " by an operation whose state was removed, and scales back to them at its end");
    }
  }
  // A refusal of an earlier request is out of date once an operation starts.
  if (auto removed = k8s::remove_annotation(sts_, kResizeStatusAnnotation); !removed) {
    return std::unexpected(removed.error());
  }
  // The start's own phase change (Pending -> first phase) is announced by ResizeStarted, so
  // that every journaled transition has its Event on the StatefulSet.
  std::string first_transition;
  for (const Entry& event : events) {
    if (const auto* changed = std::get_if<entries::PhaseChanged>(&event)) {
      first_transition = "; " + std::string{to_string(changed->from)} + " -> " +
                         std::string{to_string(changed->to)};
    }
  }
  events.insert(events.begin(), entries::OperationStarted{trigger, *uid, *replicas, kind});
  const std::string started = std::string{to_string(kind)} + "Started";  // "ResizeStarted"
  auto adopted = adopt_unannotated_start(events);
  if (!adopted) return std::unexpected(adopted.error());
  if (*adopted) {
    if (auto written = write_annotation(); !written) return written;
    emit_event(EventSeverity::Normal, started,
               "operation " + op_.id + ": " + trigger + first_transition);
    return {};
  }
  const TimePoint now = to_millis(r_.clock_.now());
  op_ = Operation{};
  op_.id = make_operation_id(ref_.ns, ref_.name, *uid, now);
  op_.ns = ref_.ns;
  op_.statefulset = ref_.name;
  auto& slot = r_.folded_[op_.id];
  slot = std::make_unique<ValidatingFold>(PhaseMachine::rules());
  folder_ = slot.get();
  if (auto committed = commit_all(events); !committed) return committed;
  r_.listener_.started(kind);
  emit_event(EventSeverity::Normal, started,
             "operation " + op_.id + ": " + trigger + first_transition);
  return {};
}

// Without it, the restarted process would journal a second operation beside the first, which
// would stay "in progress" in the journal for ever (or, started in the same millisecond, collide
// with it and be refused). Only a stream holding nothing but this very start is taken over: a
// different request, or any progress, is another operation's story.
std::expected<bool, std::string> Reconciler::Session::adopt_unannotated_start(
    const std::vector<Entry>& first_events) {
  auto operations = r_.journal_.operations();
  if (!operations) return std::unexpected("journal: " + operations.error().message);
  const OperationSummary* latest = nullptr;
  for (const OperationSummary& summary : *operations) {
    if (summary.ns == ref_.ns && summary.statefulset == ref_.name) latest = &summary;
  }
  if (latest == nullptr ||
      latest->last_sequence != static_cast<std::int64_t>(first_events.size())) {
    return false;
  }
  auto records = r_.journal_.read(latest->operation_id);
  if (!records) return std::unexpected("journal: " + records.error().message);
  if (records->size() != first_events.size()) return false;
  auto folder = std::make_unique<ValidatingFold>(PhaseMachine::rules());
  for (std::size_t i = 0; i < first_events.size(); ++i) {
    const JournalRecord& record = (*records)[i];
    if (record.type != entry_type(first_events[i]) ||
        record.data != encode_entry_data(first_events[i]) || !folder->apply(record)) {
      return false;
    }
  }
  auto& slot = r_.folded_[latest->operation_id];
  slot = std::move(folder);
  folder_ = slot.get();
  op_ = *folder_->state();
  return true;
}

ReconcileResult Reconciler::Session::start_requested(const std::string& request) {
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto classes = steps::list_storage_classes(r_.kube_);
  if (!classes) return retry("listing storage classes: " + classes.error().message);
  auto validated =
      classes->has_value()
          ? validate_resize_request(sts_, request, claims->items, **classes)
          : validate_resize_request(sts_, request, claims->items, StorageClassesUnknown{});
  if (!validated) return reject_request(validated.error());
  // A shrink measures the data before the template is changed (states/measure.cc).
  const entries::PhaseChanged first =
      validated->shrinks
          ? entries::PhaseChanged{Phase::Pending, Phase::Measuring, Trigger::StartMeasuring}
          : entries::PhaseChanged{Phase::Pending, Phase::UpdatingTemplate,
                                  Trigger::StartTemplateUpdate};
  if (auto begun =
          begin(validated->trigger, {first, entries::TemplateUpdateRequested{validated->changes}});
      !begun) {
    return retry(begun.error());
  }
  return drive();
}

// Nothing but the status annotation changes, and only when the reason is new: the Warning is
// given once per distinct refusal, not on every reconcile of an unchanged StatefulSet.
ReconcileResult Reconciler::Session::reject_request(const std::string& reason,
                                                    std::string_view event_reason) {
  const std::string status = bounded_status("rejected: " + reason);
  auto current = k8s::annotation(sts_, kResizeStatusAnnotation);
  if (current && current->has_value() && **current == status) return terminal(reason);
  Json updated = sts_;
  if (auto set = k8s::set_annotation(updated, kResizeStatusAnnotation, status); !set) {
    return terminal(set.error());
  }
  if (auto written = r_.kube_.update(Kind::StatefulSet, updated); !written) {
    const std::string why = "writing " + std::string{kResizeStatusAnnotation} + " on " +
                            to_string(ref_) + ": " + written.error().message;
    // Refused for good (the annotations would pass the API server's size limit): the Event is
    // then the only word, and retrying would change nothing.
    if (written.error().code == KubeErrorCode::Invalid) {
      emit_event(EventSeverity::Warning, event_reason,
                 reason + "; nothing was changed (" + why + ")");
      return terminal(reason);
    }
    return retry(why);
  }
  if (event_reason == "InvalidResizeRequest") {
    emit_event(EventSeverity::Warning, event_reason,
               "annotation " + std::string{kResizeRequestAnnotation} + ": " + reason +
                   "; nothing was changed");
  } else {
    emit_event(EventSeverity::Warning, event_reason, reason + "; nothing was changed");
  }
  return terminal(reason);
}

std::optional<ReconcileResult> Reconciler::Session::adopt_unfinished() {
  auto operations = r_.journal_.operations();
  if (!operations) return retry("journal: " + operations.error().message);
  const OperationSummary* latest = nullptr;
  for (const OperationSummary& summary : *operations) {
    if (summary.ns == ref_.ns && summary.statefulset == ref_.name) latest = &summary;
  }
  if (latest == nullptr) return std::nullopt;
  // Completed by another process (another journal): the cluster says it ended.
  if (last_operation_id(sts_) == latest->operation_id) return std::nullopt;
  auto view = journal_view(latest->operation_id);
  if (!view) return view.error();
  const std::optional<Operation>& journaled = (*view)->state();
  if (!journaled || is_terminal(journaled->phase)) return std::nullopt;
  // Before ScalingDown nothing was touched (a measure Job left behind is deleted by the next
  // Measuring); a start whose annotation was never written is
  // adopt_unannotated_start's (it compares the request too).
  if (journaled->phase == Phase::Pending || journaled->phase == Phase::Measuring ||
      journaled->phase == Phase::UpdatingTemplate || journaled->phase == Phase::Planning) {
    return std::nullopt;
  }
  auto uid = k8s::uid(sts_);
  if (!uid) return retry(uid.error());
  folder_ = *view;
  Operation snapshot = *journaled;
  const bool recreated = snapshot.sts_uid != *uid;
  snapshot.sts_uid = *uid;
  if (recreated) {
    // A generation counts only on the object it was read from: every backup of a source still
    // intact is taken again before that source may be deleted.
    for (ClaimPlan& claim : snapshot.claims) {
      if (!claim.source_deleted) claim.backup_generation = 0;
    }
  }
  std::string message = "operation " + snapshot.id + " had no state on this StatefulSet (" +
                        (recreated ? std::string{"the StatefulSet was deleted and created again"}
                                   : std::string{"the state annotation was removed"}) +
                        "); continuing it from the journal at " +
                        std::string{to_string(snapshot.phase)} + " with the " +
                        std::to_string(snapshot.original_replicas) + " replicas it started from";
  if (!snapshot.sources_intact()) {
    message +=
        "; its data is in its backup claims until restored, and stsresize holds the "
        "StatefulSet at 0 replicas until every restore is verified";
  }
  op_ = *journaled;
  // The StepFailed (not critical) keeps the reason as the operation's warning, which `status`
  // shows until the phase changes.
  if (auto appended = append_all(
          {entries::Resumed{snapshot}, entries::StepFailed{snapshot.phase, message, false}});
      !appended) {
    return retry(appended.error());
  }
  if (auto written = write_annotation(); !written) return retry(written.error());
  emit_event(EventSeverity::Warning, "OperationRecovered", message);
  return drive();
}

std::optional<ReconcileResult> Reconciler::Session::refuse_over_unfinished_backups() {
  ListOptions ours;
  ours.label_selector = std::string{kStatefulSetLabel} + "=" + naming::label_value(ref_.name) +
                        "," + std::string{kPurposeLabel} + "=" + std::string{kBackupPurpose};
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns, ours);
  if (!claims) return retry("listing backup claims: " + claims.error().message);
  const std::vector<std::string> backups = unfinished_backups(sts_, claims->items);
  if (backups.empty()) return std::nullopt;
  std::string names;
  std::string arguments;
  for (const std::string& name : backups) {
    names += (names.empty() ? "" : ", ") + name;
    arguments += " " + name;
  }
  return reject_request(
      "backup claims " + names +
          " hold data of this StatefulSet from an operation that did not complete, and neither "
          "the StatefulSet's state annotation nor the journal says where that operation stood: "
          "stsresize starts no operation until they are gone; if a source claim was replaced, "
          "its data is in that backup claim: copy it back (or keep it), then delete the backup "
          "claims (kubectl -n " +
          ref_.ns + " delete pvc" + arguments + ")",
      "UnfinishedOperation");
}

std::optional<ReconcileResult> Reconciler::Session::settle_original_replicas_mark() {
  auto mark = original_replicas_mark(sts_);
  if (!mark) {
    return reject_request(mark.error() +
                              ": stsresize starts no operation from a guess; set it to the "
                              "replica count the StatefulSet should return to, or remove it",
                          "InvalidOriginalReplicas");
  }
  if (!mark->has_value()) return std::nullopt;
  auto replicas = k8s::spec_replicas(sts_);
  if (!replicas) return retry(replicas.error());
  if (*replicas == 0) return std::nullopt;
  Json updated = sts_;
  if (auto removed = k8s::remove_annotation(updated, kOriginalReplicasAnnotation); !removed) {
    return retry(removed.error());
  }
  auto written = r_.kube_.update(Kind::StatefulSet, updated);
  if (!written) {
    return retry("removing the out-of-date " + std::string{kOriginalReplicasAnnotation} + ": " +
                 written.error().message);
  }
  sts_ = std::move(*written);
  return std::nullopt;
}

std::expected<void, std::string> Reconciler::Session::report_queued_request() {
  if (sts_.is_null() || is_terminal(op_.phase) || op_.phase == Phase::UpdatingTemplate) return {};
  if (!resize_request_of(sts_)) return {};
  // Without the phase: the status is written (and the Event given) once per operation, not
  // again at each of its phase changes.
  // A drain says it is one: people see a resize wait for a drain they may not know of.
  const std::string status =
      op_.kind == OperationKind::Drain
          ? "queued: drain " + op_.id +
                " of the claims a scale-down left is running, and goes first; this request is "
                "validated and started when it ends"
          : "queued: operation " + op_.id +
                " is running; this request is validated and started when it ends";
  auto current = k8s::annotation(sts_, kResizeStatusAnnotation);
  if (current && current->has_value() && **current == status) return {};
  Json updated = sts_;
  if (auto set = k8s::set_annotation(updated, kResizeStatusAnnotation, status); !set) {
    return std::unexpected(set.error());
  }
  auto written = r_.kube_.update(Kind::StatefulSet, updated);
  if (!written) {
    return std::unexpected("writing " + std::string{kResizeStatusAnnotation} + " on " +
                           to_string(ref_) + ": " + written.error().message);
  }
  sts_ = std::move(*written);
  emit_event(EventSeverity::Normal, "ResizeRequestQueued",
             "annotation " + std::string{kResizeRequestAnnotation} + ": " +
                 (op_.kind == OperationKind::Drain ? "drain " : "operation ") + op_.id +
                 " is running (" + std::string{to_string(op_.phase)} +
                 "); this request is validated and started when it ends");
  return {};
}

}  // namespace stsresize
