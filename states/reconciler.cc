#include "states/reconciler.h"

#include <optional>
#include <utility>
#include <vector>

#include "engine/advance_request.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "engine/text.h"
#include "engine/timestamp.h"
#include "states/machine.h"
#include "states/step.h"
#include "states/step_support.h"

namespace stsresize {

std::string_view to_string(ReconcileResult::Kind kind) {
  switch (kind) {
    case ReconcileResult::Kind::Idle:
      return "Idle";
    case ReconcileResult::Kind::RequeueAfter:
      return "RequeueAfter";
    case ReconcileResult::Kind::Retry:
      return "Retry";
    case ReconcileResult::Kind::Terminal:
      return "Terminal";
  }
  return "Unknown";
}

namespace {

ReconcileResult idle() {
  return {ReconcileResult::Kind::Idle, Duration{0}, {}};
}
ReconcileResult requeue(Duration after) {
  return {ReconcileResult::Kind::RequeueAfter, after, {}};
}
ReconcileResult retry(std::string message) {
  return {ReconcileResult::Kind::Retry, Duration{0}, std::move(message)};
}
ReconcileResult terminal(std::string message) {
  return {ReconcileResult::Kind::Terminal, Duration{0}, std::move(message)};
}

// A status annotation holds a refusal, which quotes what it refuses (bounded by quote(), but
// a refusal may name many things); the API server refuses annotations over 256 KiB in all.
std::string bounded_status(const std::string& text) {
  return bounded(text, 1024, "... (cut)");
}

std::string state_annotation_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kStateAnnotation);
  return value && value->has_value() ? **value : std::string{};
}

// The port as the steps see it: every call passed through, and a note of whether a step wrote
// a StatefulSet (the annotation write of journal.record() goes around it).
class StatefulSetWrites final : public Kubernetes {
 public:
  explicit StatefulSetWrites(Kubernetes& kube) : kube_(kube) {}

  // True once since the last call if a StatefulSet was created, changed or deleted.
  bool take() { return std::exchange(wrote_, false); }

  KubeResult<Json> get(const ObjectRef& ref) override { return kube_.get(ref); }
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options) override {
    return kube_.list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override {
    note(kind);
    return kube_.create(kind, object);
  }
  KubeResult<Json> update(Kind kind, const Json& object) override {
    note(kind);
    return kube_.update(kind, object);
  }
  KubeResult<Json> update_status(Kind kind, const Json& object) override {
    note(kind);
    return kube_.update_status(kind, object);
  }
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override {
    note(ref.kind);
    return kube_.patch(ref, type, patch);
  }
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options) override {
    note(ref.kind);
    return kube_.remove(ref, options);
  }
  KubeResult<Json> get_scale(const ObjectRef& ref) override { return kube_.get_scale(ref); }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override {
    note(ref.kind);
    return kube_.update_scale(ref, replicas, resource_version);
  }
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return kube_.watch(kind, ns, options, std::move(stop), handler);
  }

 private:
  void note(Kind kind) { wrote_ = wrote_ || kind == Kind::StatefulSet; }

  Kubernetes& kube_;
  bool wrote_ = false;
};

}  // namespace

// One reconcile of one StatefulSet: the operation as it stands, the latest StatefulSet, and the
// journal stream, kept in step.
class Reconciler::Session final : public StepJournal {
 public:
  // `statefulset` is null when it does not exist (recover() only).
  Session(Reconciler& owner, ObjectRef ref, Json statefulset)
      : r_(owner), sts_(std::move(statefulset)), ref_(std::move(ref)) {}

  ReconcileResult run();
  // The StatefulSet is gone mid-way through UpdatingTemplate: continue `stored`, the operation
  // recorded in the definition kept in the ConfigMap.
  ReconcileResult recover(Operation stored) { return resume(std::move(stored)); }

  std::expected<void, std::string> intend(std::string_view action, const ObjectRef& target,
                                          std::string_view detail) override {
    return append({events::ActionIntended{op_.phase, std::string{action}, to_string(target),
                                          std::string{detail}}});
  }
  std::expected<void, std::string> record(const Event& event) override { return commit({event}); }
  std::expected<void, std::string> note(const Event& event) override { return append({event}); }

 private:
  ReconcileResult start();
  ReconcileResult start_requested(const std::string& request);
  ReconcileResult reject_request(const std::string& reason,
                                 std::string_view event_reason = "InvalidResizeRequest");
  // A new operation on sts_: its first events committed (journal, then annotation).
  std::expected<void, std::string> begin(const std::string& trigger, std::vector<Event> events);
  // True when the journal's latest stream for sts_ is exactly `first_events` and nothing more:
  // a start journaled by a process that died before writing its annotation. op_ is then that
  // operation, ready for its annotation.
  std::expected<bool, std::string> adopt_unannotated_start(const std::vector<Event>& first_events);
  ReconcileResult resume(Operation annotated);
  // The journal's Folder of operation `id`, from the cache while it is current, else folded
  // again. An inconsistent stream is reported (JournalInconsistent) and is the error.
  std::expected<Folder*, ReconcileResult> journal_view(const std::string& id);
  // No state on the StatefulSet, yet the journal's latest stream for it is an operation that got
  // past Planning and did not end (the state annotation removed by hand; the StatefulSet deleted
  // and applied again): forgetting it would leave the data in its backup claims and the set at
  // 0 replicas, or running on empty claims. It is continued from the journal (Resumed with the
  // current object's uid, the state written again, a Warning OperationRecovered); the steps set
  // the fence again. nullopt: there is none.
  std::optional<ReconcileResult> adopt_unfinished();
  // No state and nothing to continue in the journal, but backup claims of an operation that did
  // not complete (unfinished_backups): where that operation stood is lost with its journal, so
  // no operation starts over them; a Warning and stsresize.dev/resize-status say why and what to
  // do. nullopt: there are none.
  std::optional<ReconcileResult> refuse_over_unfinished_backups();
  // No state: an original-replicas mark left by an operation whose state was removed. Unreadable:
  // the request is refused (nothing starts from a guess). Next to a StatefulSet that runs
  // replicas again, it is out of date and removed, so that a later scale to 0 by a person is
  // not undone. Otherwise nullopt and begin() takes it.
  std::optional<ReconcileResult> settle_original_replicas_mark();
  ReconcileResult drive();
  // A stsresize.dev/resize request on the StatefulSet while op_ runs (not the one op_ applies,
  // which UpdatingTemplate removes) starts a new operation only once op_ ends: say so, once, in
  // stsresize.dev/resize-status and with a Normal Event ResizeRequestQueued, instead of silently.
  std::expected<void, std::string> report_queued_request();
  // The step is Done with `event`. nullopt: go on — no approval needed (stsresize.dev/mode), or
  // a person's stsresize.dev/advance approves it, and `approval` then holds the OperatorAction
  // to journal with the transition. Otherwise the transition waits (ApprovalAwaited journaled
  // and annotated once, with an AwaitingApproval Event) and this is the reconcile's result.
  std::optional<ReconcileResult> hold_for_approval(PhaseEvent event, std::vector<Event>& approval);
  // An advance request that cannot approve what waits: journaled as a refused OperatorAction,
  // removed from the StatefulSet, and a Warning saying why and what to run.
  std::expected<void, std::string> refuse_advance(const std::string& text,
                                                  const std::optional<AdvanceRequest>& request,
                                                  const std::string& why);
  std::expected<void, ReconcileResult> advance(PhaseEvent event, const std::string& reason,
                                               std::vector<Event> approval = {});
  // Before the step runs: a stsresize.dev/advance request that is not an approval of what
  // waits (an abort, a retry, a skip; anything once the operation has ended) is taken or
  // refused here. nullopt: go on with the step (op_ may now be in ScalingBack or Completed).
  std::optional<ReconcileResult> take_operator_request();
  // `stsresize advance --retry` of the Failed op_: decided again here (retry_mismatch), then
  // journaled on op_'s stream and a new operation begun, whose first write also removes the
  // request and the label stsresize.dev/failed.
  // nullopt: refused (journaled, removed, a Warning); the reconcile goes on.
  std::optional<ReconcileResult> take_retry(const std::string& text, const AdvanceRequest& request);
  // `stsresize advance --skip-step`: decided again here (skip_mismatch); accepted, the
  // OperatorAction, the PhaseChanged on Skip and OperationFinished in one append, the state
  // and the request's removal in one write, and an Event StepSkipped naming what is kept.
  // nullopt: taken or refused (journaled, removed, a Warning); the reconcile goes on.
  std::optional<ReconcileResult> take_skip(const std::string& text, const AdvanceRequest& request);
  // take_retry of a Failed op_ whose source claims were replaced: decided again here
  // (resume_mismatch); the operation's failed Jobs deleted first (the request waits for them to
  // be gone); then the OperatorAction and the PhaseChanged on Resume in one append, the failure
  // cleared, the request and the label stsresize.dev/failed removed by the same annotation
  // write, and the step of the phase it failed in runs again. nullopt: go on (refused, or
  // resumed).
  std::optional<ReconcileResult> take_resume(const std::string& text,
                                             const AdvanceRequest& request);

  // Journal first; then the in-memory state. Refuses what fold would refuse.
  std::expected<void, std::string> append(const std::vector<Event>& events);
  // append + the annotation that makes the new state authoritative.
  std::expected<void, std::string> commit(const std::vector<Event>& events);
  std::expected<void, std::string> write_annotation();

  void note(EventSeverity severity, std::string_view reason, const std::string& message) {
    r_.events_.record(ref_, severity, reason, message);
  }

  Reconciler& r_;
  Json sts_;
  ObjectRef ref_;
  Operation op_;
  Folder* folder_ = nullptr;  // owned by r_.folded_
  // The stsresize.dev/advance annotation consumed (accepted or refused): the next annotation
  // write removes it, if it still holds exactly this text.
  std::optional<std::string> consumed_advance_;
  // Set by take_retry: the next annotation write removes the label stsresize.dev/failed, and
  // begin() names the operation retried and who asked.
  bool clear_failed_label_ = false;
  std::optional<std::pair<std::string, std::string>> retry_of_;  // operation, by
  // Set by take_retry: the replica count the retried operation started from, which the new one
  // keeps (the StatefulSet may still be at 0 if the failed operation could not scale back).
  std::optional<std::int32_t> retry_replicas_;
};

std::expected<void, std::string> Reconciler::Session::append(const std::vector<Event>& events) {
  const TimePoint now = to_millis(r_.clock_.now());
  std::vector<JournalRecord> records;
  Folder trial = *folder_;
  std::int64_t sequence = op_.last_sequence;
  for (const Event& event : events) {
    records.push_back(make_record(op_, ++sequence, now, event));
    if (auto applied = trial.apply(records.back(), event); !applied) {
      return std::unexpected("refusing to journal " + std::string{event_type(event)} + ": " +
                             applied.error().message);
    }
  }
  if (auto appended = r_.journal_.append(records); !appended) {
    return std::unexpected("journal: " + appended.error().message);
  }
  *folder_ = trial;
  op_ = *folder_->state();
  return {};
}

std::expected<void, std::string> Reconciler::Session::commit(const std::vector<Event>& events) {
  if (auto appended = append(events); !appended) return appended;
  return write_annotation();
}

std::expected<void, std::string> Reconciler::Session::write_annotation() {
  auto desired = [&] {
    Json object = with_operation(sts_, op_);
    if (consumed_advance_ && advance_request_of(object) == consumed_advance_) {
      (void)k8s::remove_annotation(object, kAdvanceAnnotation);
    }
    if (clear_failed_label_ && object["metadata"].contains("labels") &&
        object["metadata"]["labels"].is_object()) {
      object["metadata"]["labels"].erase(std::string{kFailedLabel});
    }
    return object;
  };
  auto written = r_.kube_.update(Kind::StatefulSet, desired());
  if (!written && written.error().code == KubeErrorCode::Conflict) {
    // Someone else wrote the StatefulSet (its controller updates status all the time). Retry
    // on the fresh object only if our state annotation there is still the one we based on.
    auto fresh = r_.kube_.get(ref_);
    if (!fresh)
      return std::unexpected("re-reading " + to_string(ref_) + ": " + fresh.error().message);
    if (state_annotation_of(*fresh) != state_annotation_of(sts_)) {
      return std::unexpected(to_string(ref_) + ": state annotation changed by someone else");
    }
    sts_ = std::move(*fresh);
    written = r_.kube_.update(Kind::StatefulSet, desired());
  }
  if (!written) {
    return std::unexpected("writing state of " + to_string(ref_) + ": " +
                           std::string{to_string(written.error().code)} + ": " +
                           written.error().message);
  }
  sts_ = std::move(*written);
  consumed_advance_.reset();
  clear_failed_label_ = false;
  return {};
}

ReconcileResult Reconciler::Session::run() {
  auto parsed = read_operation(sts_);
  if (!parsed) {
    note(EventSeverity::Warning, "InvalidState", parsed.error() + "; no action taken");
    return terminal(parsed.error());
  }
  if (!parsed->has_value()) {
    if (auto adopted = adopt_unfinished()) return *adopted;
    if (is_marked_failed(sts_)) return idle();
    if (auto refused = refuse_over_unfinished_backups()) return *refused;
    if (auto refused = settle_original_replicas_mark()) return *refused;
    if (auto request = resize_request_of(sts_)) return start_requested(*request);
    return start();
  }
  // An ended operation does nothing more; a request of `stsresize advance` that reaches it
  // anyway is answered (journaled as refused, removed, a Warning) rather than left lying.
  // Completion removes the state: a state that says Completed was written by someone else, and
  // resume() compares it with the journal (which may know the operation is still running).
  if (is_terminal((*parsed)->phase) && (*parsed)->phase != Phase::Completed &&
      !advance_request_of(sts_)) {
    return idle();
  }
  return resume(std::move(**parsed));
}

ReconcileResult Reconciler::Session::start() {
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto classes = steps::list_storage_classes(r_.kube_);
  if (!classes) return retry("listing storage classes: " + classes.error().message);
  auto plan = classes->has_value() ? plan_resize(sts_, claims->items, **classes)
                                   : plan_resize(sts_, claims->items, StorageClassesUnknown{});
  if (!plan) {
    note(EventSeverity::Warning, "InvalidResize", plan.error());
    return terminal(plan.error());
  }
  if (!plan->has_value()) return idle();
  if (auto begun = begin((*plan)->trigger, {events::PhaseChanged{Phase::Pending, Phase::Planning,
                                                                 PhaseEvent::StartPlanning}});
      !begun) {
    return retry(begun.error());
  }
  return drive();
}

std::expected<void, std::string> Reconciler::Session::begin(const std::string& planned,
                                                            std::vector<Event> events) {
  const std::string trigger =
      retry_of_ ? retry_trigger(retry_of_->first, retry_of_->second, planned) : planned;
  auto replicas = k8s::spec_replicas(sts_);
  auto uid = k8s::uid(sts_);
  if (!replicas || !uid) return std::unexpected(!replicas ? replicas.error() : uid.error());
  if (retry_replicas_) {
    replicas = *retry_replicas_;
  } else if (*replicas == 0) {
    // An operation whose state was removed (and whose journal is gone, or adopt_unfinished
    // would have continued it) scaled this set to 0: start from what it started from.
    auto mark = original_replicas_mark(sts_);
    if (!mark) return std::unexpected(mark.error());
    if (mark->has_value() && **mark > 0) {
      replicas = **mark;
      note(EventSeverity::Warning, "OriginalReplicasRecovered",
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
  for (const Event& event : events) {
    if (const auto* changed = std::get_if<events::PhaseChanged>(&event)) {
      first_transition = "; " + std::string{to_string(changed->from)} + " -> " +
                         std::string{to_string(changed->to)};
    }
  }
  events.insert(events.begin(), events::OperationStarted{trigger, *uid, *replicas});
  auto adopted = adopt_unannotated_start(events);
  if (!adopted) return std::unexpected(adopted.error());
  if (*adopted) {
    if (auto written = write_annotation(); !written) return written;
    note(EventSeverity::Normal, "ResizeStarted",
         "operation " + op_.id + ": " + trigger + first_transition);
    return {};
  }
  const TimePoint now = to_millis(r_.clock_.now());
  op_ = Operation{};
  op_.id = make_operation_id(ref_.ns, ref_.name, *uid, now);
  op_.ns = ref_.ns;
  op_.statefulset = ref_.name;
  auto& slot = r_.folded_[op_.id];
  slot = std::make_unique<Folder>(PhaseMachine::rules());
  folder_ = slot.get();
  if (auto committed = commit(events); !committed) return committed;
  note(EventSeverity::Normal, "ResizeStarted",
       "operation " + op_.id + ": " + trigger + first_transition);
  return {};
}

// Without it, the restarted process would journal a second operation beside the first, which
// would stay "in progress" in the journal for ever (or, started in the same millisecond, collide
// with it and be refused). Only a stream holding nothing but this very start is taken over: a
// different request, or any progress, is another operation's story.
std::expected<bool, std::string> Reconciler::Session::adopt_unannotated_start(
    const std::vector<Event>& first_events) {
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
  auto folder = std::make_unique<Folder>(PhaseMachine::rules());
  for (std::size_t i = 0; i < first_events.size(); ++i) {
    const JournalRecord& record = (*records)[i];
    if (record.type != event_type(first_events[i]) ||
        record.data != encode_event_data(first_events[i]) || !folder->apply(record)) {
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
  if (auto begun =
          begin(validated->trigger, {events::PhaseChanged{Phase::Pending, Phase::UpdatingTemplate,
                                                          PhaseEvent::StartTemplateUpdate},
                                     events::TemplateUpdateRequested{validated->changes}});
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
      note(EventSeverity::Warning, event_reason, reason + "; nothing was changed (" + why + ")");
      return terminal(reason);
    }
    return retry(why);
  }
  if (event_reason == "InvalidResizeRequest") {
    note(EventSeverity::Warning, event_reason,
         "annotation " + std::string{kResizeRequestAnnotation} + ": " + reason +
             "; nothing was changed");
  } else {
    note(EventSeverity::Warning, event_reason, reason + "; nothing was changed");
  }
  return terminal(reason);
}

std::expected<Folder*, ReconcileResult> Reconciler::Session::journal_view(const std::string& id) {
  auto last = r_.journal_.last_sequence(id);
  if (!last) return std::unexpected(retry("journal: " + last.error().message));
  auto& slot = r_.folded_[id];
  const bool cached = slot && slot->state() && slot->state()->last_sequence == *last;
  if (cached) return slot.get();
  slot = std::make_unique<Folder>(PhaseMachine::rules());
  if (*last == 0) return slot.get();
  auto records = r_.journal_.read(id);
  if (!records) return std::unexpected(retry("journal: " + records.error().message));
  for (const JournalRecord& record : *records) {
    if (auto applied = slot->apply(record); !applied) {
      const std::string message = "journal of operation " + id + " is inconsistent at sequence " +
                                  std::to_string(applied.error().sequence) + ": " +
                                  applied.error().message;
      r_.folded_.erase(id);
      note(EventSeverity::Warning, "JournalInconsistent", message + "; no action taken");
      return std::unexpected(terminal(message));
    }
  }
  return slot.get();
}

ReconcileResult Reconciler::Session::resume(Operation annotated) {
  auto view = journal_view(annotated.id);
  if (!view) return view.error();
  folder_ = *view;
  if (folder_->state() && same_state(*folder_->state(), annotated)) {
    op_ = *folder_->state();
    return drive();
  }
  // The journal is missing (new volume, lost file) or lags/leads the annotation by a step the
  // process did not live to write: continue from the annotation, and say so in the journal.
  const std::optional<Operation> journaled = folder_->state();
  op_ = annotated;
  op_.last_sequence = journaled ? journaled->last_sequence : 0;
  // The annotation is authoritative only as the engine writes it: no step leaves a phase before
  // its claims show the progress the next one needs, and completion removes the state. One that
  // says otherwise was edited, and continuing from it would skip the steps that protect data.
  std::expected<void, std::string> appended = std::unexpected(unwritten_state(annotated));
  if (appended.error().empty()) appended = append({events::Resumed{annotated}});
  if (!appended) {
    // The annotation is not a state this engine writes from where the journal stands (edited by
    // hand: a phase moved on, Completed written over a running operation). The journal still
    // knows where the operation is: continue from it and write its state back.
    if (journaled && !is_terminal(journaled->phase)) {
      op_ = *journaled;
      if (auto written = write_annotation(); !written) return retry(written.error());
      note(EventSeverity::Warning, "StateRestored",
           "operation " + op_.id + ": the state annotation was changed by someone else (" +
               appended.error() + "); continuing from the journal at " +
               std::string{to_string(op_.phase)});
      return drive();
    }
    const std::string message = "operation " + annotated.id + ": " + appended.error();
    note(EventSeverity::Warning, "JournalMismatch", message + "; no action taken");
    return terminal(message);
  }
  return drive();
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
  // Before ScalingDown nothing was touched; a start whose annotation was never written is
  // adopt_unannotated_start's (it compares the request too).
  if (journaled->phase == Phase::Pending || journaled->phase == Phase::UpdatingTemplate ||
      journaled->phase == Phase::Planning) {
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
  if (auto appended =
          append({events::Resumed{snapshot}, events::StepFailed{snapshot.phase, message, false}});
      !appended) {
    return retry(appended.error());
  }
  if (auto written = write_annotation(); !written) return retry(written.error());
  note(EventSeverity::Warning, "OperationRecovered", message);
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

std::optional<ReconcileResult> Reconciler::Session::hold_for_approval(
    PhaseEvent event, std::vector<Event>& approval) {
  const Phase from = op_.phase;
  auto next = PhaseMachine{from}.fire(event, op_.sources_intact());
  if (!next) return std::nullopt;  // advance() reports it
  const ModeSetting mode = approval_mode_of(sts_);
  if (!needs_approval(mode.mode, from, *next, event)) return std::nullopt;
  const AwaitedApproval awaited{from, *next, event};
  const std::string transition =
      std::string{to_string(from)} + " -> " + std::string{to_string(*next)};
  if (op_.awaiting != awaited) {
    if (auto committed = commit(
            {events::ApprovalAwaited{from, *next, event, std::string{to_string(mode.mode)}}});
        !committed) {
      return retry(committed.error());
    }
    note(EventSeverity::Normal, "AwaitingApproval",
         "operation " + op_.id + " awaits approval of " + transition + " (" +
             std::string{kModeAnnotation} + ": " + std::string{to_string(mode.mode)} +
             (mode.invalid.empty() ? "" : "; " + mode.invalid) + "); to approve, run `" +
             approve_command(ref_.ns, ref_.name) + "`");
  }
  auto text = advance_request_of(sts_);
  if (!text) return idle();
  auto request = decode_advance_request(*text);
  const std::string why = request ? approval_mismatch(*request, op_) : request.error();
  if (why.empty()) {
    approval.push_back(events::OperatorAction{
        request->action, request->phase, request->by, request->at, request->nonce, {}});
    consumed_advance_ = *text;
    return std::nullopt;
  }
  std::optional<AdvanceRequest> readable;
  if (request) readable = *request;
  if (auto refused = refuse_advance(*text, readable, why); !refused) return retry(refused.error());
  return idle();
}

std::expected<void, std::string> Reconciler::Session::refuse_advance(
    const std::string& text, const std::optional<AdvanceRequest>& request, const std::string& why) {
  const std::string unreadable = "(unreadable)";
  events::OperatorAction action{
      request ? request->action : unreadable, request ? request->phase : op_.phase,
      request ? request->by : unreadable,     request ? request->at : unreadable,
      request ? request->nonce : unreadable,  why};
  if (auto appended = append({action}); !appended) return appended;
  consumed_advance_ = text;
  if (auto written = write_annotation(); !written) return written;
  std::string message = "stsresize advance by " + action.by + " refused: " + why + ". ";
  if (request &&
      (request->action == "abort" || request->action == "retry" || request->action == "skip")) {
    message += "Nothing was changed";
    if (!is_terminal(op_.phase) && abort_refusal(op_).empty()) {
      message +=
          "; to abort operation " + op_.id + ", run `" + abort_command(ref_.ns, ref_.name) + "`";
    }
  } else if (is_terminal(op_.phase)) {
    message += "The operation " + op_.id + " has ended; nothing waits for approval";
  } else if (op_.awaiting) {
    message += "The operation " + op_.id + " awaits approval of " +
               std::string{to_string(op_.awaiting->from)} + " -> " +
               std::string{to_string(op_.awaiting->to)} + "; to approve it, run `" +
               approve_command(ref_.ns, ref_.name) + "`";
  } else {
    message += "Nothing waits for approval now; run `" + approve_command(ref_.ns, ref_.name) +
               "` when the StatefulSet shows " + std::string{kAwaitingApprovalAnnotation};
  }
  note(EventSeverity::Warning, "AdvanceRefused", message);
  return {};
}

std::expected<void, ReconcileResult> Reconciler::Session::advance(PhaseEvent event,
                                                                  const std::string& reason,
                                                                  std::vector<Event> approval) {
  PhaseMachine machine{op_.phase};
  const Phase from = op_.phase;
  auto next = machine.fire(event, op_.sources_intact(), op_.failed_in);
  if (!next) {
    note(EventSeverity::Warning, "InternalError", next.error());
    return std::unexpected(terminal(next.error()));
  }
  std::string approved_by;
  for (const Event& e : approval) {
    if (const auto* action = std::get_if<events::OperatorAction>(&e)) approved_by = action->by;
  }
  std::vector<Event> events = std::move(approval);
  if (event == PhaseEvent::CriticalError || event == PhaseEvent::Abort) {
    events.push_back(events::StepFailed{from, reason, true});
  }
  events.push_back(events::PhaseChanged{from, *next, event});
  if (is_terminal(*next)) events.push_back(events::OperationFinished{*next});
  if (auto committed = commit(events); !committed) {
    return std::unexpected(retry(committed.error()));
  }
  const std::string transition =
      std::string{to_string(from)} + " -> " + std::string{to_string(*next)};
  if (event == PhaseEvent::CriticalError) {
    std::string message = transition + ": " + reason;
    // Once a source claim was replaced, whoever answers this Warning must know that stsresize
    // did not scale back, and where the data now is.
    if (*next == Phase::Failed && !op_.sources_intact()) {
      message +=
          "; source claims were replaced, so nothing was scaled back: the data of every "
          "claim not yet restored is in its backup claim (kubectl -n " +
          op_.ns + " get pvc -l stsresize.dev/operation=" + naming::label_value(op_.id) +
          ",stsresize.dev/purpose=backup)";
    }
    note(EventSeverity::Warning, "ResizeFailed", message);
  } else if (event == PhaseEvent::Skip) {
    note(EventSeverity::Normal, "StepSkipped",
         "operation " + op_.id + ": " + std::string{to_string(from)} + " skipped by " +
             approved_by + ", kept: " + reason);
    note(EventSeverity::Normal, "ResizeCompleted",
         "operation " + op_.id + ": " + transition + " (" + std::string{to_string(from)} +
             " skipped by " + approved_by + ")");
  } else if (event == PhaseEvent::Resume) {
    note(EventSeverity::Normal, "ResizeResumed",
         "operation " + op_.id + ": " + transition + " (resumed by " + approved_by +
             "; it had failed: " + reason + "): running the " + std::string{to_string(*next)} +
             " step again");
  } else if (event == PhaseEvent::Abort) {
    note(EventSeverity::Normal, "ResizeAborting",
         "operation " + op_.id + ": " + transition + ": " + reason + "; scaling back to " +
             std::to_string(op_.original_replicas) +
             " replicas and removing this operation's Jobs and backup claims");
  } else if (*next == Phase::Failed && is_abort_failure(op_.failure)) {
    note(EventSeverity::Warning, "ResizeAborted",
         "scaled back to " + std::to_string(op_.original_replicas) + " replicas: " + op_.failure +
             "; stsresize will not resize it again while it is labelled " +
             std::string{kFailedLabel});
  } else if (*next == Phase::Failed) {
    note(EventSeverity::Warning, "ResizeFailed",
         "scaled back to " + std::to_string(op_.original_replicas) + " replicas: " + op_.failure);
  } else {
    note(EventSeverity::Normal, *next == Phase::Completed ? "ResizeCompleted" : "PhaseChanged",
         "operation " + op_.id + ": " + transition +
             (approved_by.empty() ? "" : " (approved by " + approved_by + ")"));
  }
  return {};
}

std::optional<ReconcileResult> Reconciler::Session::take_operator_request() {
  auto text = advance_request_of(sts_);
  if (!text || text == consumed_advance_) return std::nullopt;
  auto request = decode_advance_request(*text);
  const bool abort = request && request->action == "abort";
  const bool retry_request = request && request->action == "retry";
  const bool skip = request && request->action == "skip";
  // An approval (or an unreadable request) of a running operation: hold_for_approval's.
  if (!abort && !retry_request && !skip && !is_terminal(op_.phase)) return std::nullopt;
  if (retry_request) return take_retry(*text, *request);
  if (skip) return take_skip(*text, *request);
  std::optional<AdvanceRequest> readable;
  if (request) readable = *request;
  // A source delete asked for but not finished (pvc-protection) is not in op_ yet.
  std::vector<std::string> going;
  if (abort && op_.phase == Phase::Recreating) {
    auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
    if (!claims) return retry("listing claims: " + claims.error().message);
    going = sources_going(op_, claims->items);
  }
  std::string why =
      !request ? request.error()
      : abort  ? abort_mismatch(*request, op_, going)
               : "operation " + op_.id + " already ended in " + std::string{to_string(op_.phase)};
  if (!why.empty()) {
    if (auto refused = refuse_advance(*text, readable, why); !refused) {
      return retry(refused.error());
    }
    return std::nullopt;
  }
  consumed_advance_ = *text;
  const std::vector<Event> action{events::OperatorAction{
      request->action, request->phase, request->by, request->at, request->nonce, {}}};
  if (auto advanced = advance(PhaseEvent::Abort, abort_failure(request->by, op_.phase), action);
      !advanced) {
    return advanced.error();
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::Session::take_retry(const std::string& text,
                                                               const AdvanceRequest& request) {
  if (resumes_in_place(op_)) return take_resume(text, request);
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto jobs = r_.kube_.list(Kind::Job, ref_.ns);
  if (!jobs) return retry("listing jobs: " + jobs.error().message);
  auto classes = steps::list_storage_classes(r_.kube_);
  if (!classes) return retry("listing storage classes: " + classes.error().message);
  const auto wanted = wanted_resize(sts_, claims->items, *classes);
  if (const std::string why = retry_mismatch(request, op_, claims->items, jobs->items, wanted);
      !why.empty()) {
    if (auto refused = refuse_advance(text, request, why); !refused) {
      return retry(refused.error());
    }
    return std::nullopt;
  }
  // The old operation's stream ends with who retried it; a crash before the new operation's
  // first write leaves the request, and the next reconcile takes it again (the start, if it
  // was journaled, is adopted by begin()).
  if (auto appended = append({events::OperatorAction{
          request.action, request.phase, request.by, request.at, request.nonce, {}}});
      !appended) {
    return retry(appended.error());
  }
  consumed_advance_ = text;
  clear_failed_label_ = true;
  retry_of_ = std::pair{op_.id, request.by};
  retry_replicas_ = op_.original_replicas;
  if (auto requested = resize_request_of(sts_)) return start_requested(*requested);
  return start();
}

std::optional<ReconcileResult> Reconciler::Session::take_skip(const std::string& text,
                                                              const AdvanceRequest& request) {
  if (const std::string why = skip_mismatch(request, op_); !why.empty()) {
    if (auto refused = refuse_advance(text, request, why); !refused) {
      return retry(refused.error());
    }
    return std::nullopt;
  }
  // What the skipped cleanup leaves, for the Event: listed before anything is journaled, so
  // that a failed list changes nothing.
  ListOptions ours;
  ours.label_selector = std::string{kOperationLabel} + "=" + naming::label_value(op_.id);
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns, ours);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto jobs = r_.kube_.list(Kind::Job, ref_.ns, ours);
  if (!jobs) return retry("listing jobs: " + jobs.error().message);
  const std::string kept =
      skip_keeps(op_, labelled_with(op_, claims->items), labelled_with(op_, jobs->items));
  consumed_advance_ = text;
  const std::vector<Event> action{events::OperatorAction{
      request.action, request.phase, request.by, request.at, request.nonce, {}}};
  if (auto advanced = advance(PhaseEvent::Skip, kept, action); !advanced) return advanced.error();
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::Session::take_resume(const std::string& text,
                                                                const AdvanceRequest& request) {
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto jobs = r_.kube_.list(Kind::Job, ref_.ns);
  if (!jobs) return retry("listing jobs: " + jobs.error().message);
  if (const std::string why = resume_mismatch(request, op_, claims->items, jobs->items);
      !why.empty()) {
    if (auto refused = refuse_advance(text, request, why); !refused) {
      return retry(refused.error());
    }
    return std::nullopt;
  }
  // A failed Job is what made the step fail: it goes first (journaled, uid-preconditioned), so
  // that the step creates it again rather than read the same failure. The request stays on the
  // StatefulSet meanwhile and is decided again once they are gone.
  const std::vector<Json> failed = failed_jobs(op_, jobs->items);
  for (const Json& job : failed) {
    if (k8s::is_being_deleted(job).value_or(false)) continue;
    const ObjectRef ref{Kind::Job, ref_.ns, k8s::name(job).value_or("")};
    if (auto intended = intend("delete", ref,
                               "failed Job of the operation, before resuming " +
                                   std::string{to_string(*op_.failed_in)});
        !intended) {
      return retry(intended.error());
    }
    DeleteOptions options;
    options.propagation = Propagation::Background;
    if (auto uid = k8s::uid(job)) options.uid = *uid;
    if (auto removed = r_.kube_.remove(ref, options);
        !removed && removed.error().code != KubeErrorCode::NotFound) {
      return retry("deleting " + to_string(ref) + ": " + removed.error().message);
    }
  }
  if (!failed.empty()) return requeue(r_.settings_.poll_interval);
  consumed_advance_ = text;
  clear_failed_label_ = true;
  const std::vector<Event> action{events::OperatorAction{
      request.action, request.phase, request.by, request.at, request.nonce, {}}};
  if (auto advanced = advance(PhaseEvent::Resume, op_.failure, action); !advanced) {
    return advanced.error();
  }
  return std::nullopt;
}

std::expected<void, std::string> Reconciler::Session::report_queued_request() {
  if (sts_.is_null() || is_terminal(op_.phase) || op_.phase == Phase::UpdatingTemplate) return {};
  if (!resize_request_of(sts_)) return {};
  // Without the phase: the status is written (and the Event given) once per operation, not
  // again at each of its phase changes.
  const std::string status = "queued: operation " + op_.id +
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
  note(EventSeverity::Normal, "ResizeRequestQueued",
       "annotation " + std::string{kResizeRequestAnnotation} + ": operation " + op_.id +
           " is running (" + std::string{to_string(op_.phase)} +
           "); this request is validated and started when it ends");
  return {};
}

ReconcileResult Reconciler::Session::drive() {
  if (auto reported = report_queued_request(); !reported) return retry(reported.error());
  StatefulSetWrites kube{r_.kube_};
  for (int i = 0; i < r_.settings_.max_steps_per_reconcile; ++i) {
    if (!sts_.is_null()) {
      if (auto answered = take_operator_request()) return *answered;
    }
    if (is_terminal(op_.phase)) return idle();
    const Step step = step_for(op_.phase);
    if (!step) return terminal("no step for phase " + std::string{to_string(op_.phase)});
    // sts_ is as read at the start or as returned by our last annotation write: read it again
    // only when the step before wrote it (replicas, the template update). Its status may be a
    // few milliseconds old otherwise, which no step depends on: the steps that wait on the
    // status return and are woken by its watch event; writes carry resourceVersion or uid.
    if (kube.take()) {
      auto fresh = r_.kube_.get(ref_);
      if (!fresh && fresh.error().code == KubeErrorCode::NotFound &&
          op_.phase == Phase::UpdatingTemplate) {
        sts_ = Json{};  // deleted on purpose: the step creates it again from its definition
      } else if (!fresh) {
        return retry("reading " + to_string(ref_) + ": " + fresh.error().message);
      } else {
        sts_ = std::move(*fresh);
      }
    }
    StepContext ctx{kube, r_.clock_, r_.events_, *this, r_.settings_, op_, sts_};
    const StepOutcome outcome = step(ctx);
    switch (outcome.kind) {
      case StepOutcome::Kind::Done: {
        std::vector<Event> approval;
        if (auto held = hold_for_approval(outcome.event, approval)) return *held;
        if (auto advanced = advance(outcome.event, {}, std::move(approval)); !advanced) {
          return advanced.error();
        }
        break;
      }
      case StepOutcome::Kind::Waiting:
        if (outcome.requeue_after > Duration{0}) return requeue(outcome.requeue_after);
        break;
      case StepOutcome::Kind::Transient:
        return retry(outcome.message);
      case StepOutcome::Kind::Critical:
        if (auto advanced = advance(PhaseEvent::CriticalError, outcome.message); !advanced) {
          return advanced.error();
        }
        break;
    }
  }
  return requeue(Duration{0});
}

Reconciler::Reconciler(Kubernetes& kube, Journal& journal, const Clock& clock,
                       EventRecorder& events, EngineSettings settings)
    : tracked_kube_(kube),
      kube_(tracked_kube_),
      journal_(journal),
      clock_(clock),
      events_(events),
      settings_(std::move(settings)) {}

Reconciler::~Reconciler() = default;

ReconcileResult Reconciler::reconcile(const std::string& ns, const std::string& name) {
  const ObjectRef ref{Kind::StatefulSet, ns, name};
  tracked_kube_.forget();
  ReconcileResult result = reconcile_tracked(ref);
  report_denial(ref, result);
  return result;
}

void Reconciler::report_denial(const ObjectRef& ref, ReconcileResult& result) {
  const std::string key = ref.ns + "/" + ref.name;
  const auto& denial = tracked_kube_.last_denial();
  // Only a denial that is the cause of the retry: a tolerated one (StorageClasses in a
  // namespace-scoped installation) is followed by other work, whose own error this would be.
  const bool caused_retry = result.is(ReconcileResult::Kind::Retry) && denial &&
                            result.message.find(denial->server_message) != std::string::npos;
  if (!caused_retry) {
    reported_denials_.erase(key);
    return;
  }
  const std::string what = describe(*denial);
  result.message = "Forbidden: " + what + ": " + result.message;
  if (auto reported = reported_denials_.find(key);
      reported != reported_denials_.end() && reported->second == *denial) {
    return;
  }
  reported_denials_.insert_or_assign(key, *denial);
  events_.record(ref, EventSeverity::Warning, "Forbidden",
                 "Forbidden: " + what + "; retrying with backoff until it is granted");
}

ReconcileResult Reconciler::reconcile_tracked(const ObjectRef& ref) {
  auto statefulset = kube_.get(ref);
  if (!statefulset) {
    if (statefulset.error().code == KubeErrorCode::NotFound) return recover(ref);
    return retry("reading " + to_string(ref) + ": " + statefulset.error().message);
  }
  Session session{*this, ref, std::move(*statefulset)};
  return session.run();
}

ReconcileResult Reconciler::recover(const ObjectRef& ref) {
  const ObjectRef cm_ref{Kind::ConfigMap, ref.ns, naming::definition_config_map(ref.name)};
  auto config_map = kube_.get(cm_ref);
  if (!config_map) {
    if (config_map.error().code == KubeErrorCode::NotFound) return idle();
    return retry("reading " + to_string(cm_ref) + ": " + config_map.error().message);
  }
  auto refuse = [&](const std::string& why) {
    const std::string message = to_string(cm_ref) + ": " + why + "; no action taken";
    events_.record(ref, EventSeverity::Warning, "InvalidDefinition", message);
    return terminal(message);
  };
  auto definition = definition_from_config_map(*config_map, ref.ns, ref.name);
  if (!definition) return refuse(definition.error());
  auto stored = read_operation(*definition);
  if (!stored) return refuse(stored.error());
  if (!stored->has_value() || (*stored)->phase != Phase::UpdatingTemplate ||
      (*stored)->statefulset_recreated) {
    return refuse("the definition records no template update in progress");
  }
  Session session{*this, ref, Json{}};
  return session.recover(std::move(**stored));
}

}  // namespace stsresize
