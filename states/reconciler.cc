#include "states/reconciler.h"

#include <optional>
#include <utility>
#include <vector>

#include "engine/actions/explain.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/lost_volume.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "engine/text.h"
#include "engine/timestamp.h"
#include "states/machine.h"
#include "states/reconciler_session.h"
#include "states/run_reads.h"
#include "states/step.h"
#include "states/step_support.h"
#include "states/volume_memo.h"

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

// Phases whose step deletes the StatefulSet and creates it again from the definition it saved
// in a ConfigMap (states/update_template.cc, states/rolling.h): a StatefulSet missing there is
// that step's work in progress, continued from the ConfigMap's copy of the state.
bool recreates_statefulset(const Operation& op) {
  return op.phase == Phase::UpdatingTemplate || resumes_statefulset(op);
}

// Writes of the state annotation, the first included, while each fails with Conflict.
constexpr int kAnnotationWriteAttempts = 5;

// The port as the steps see it: every call passed through, and a note of whether a step wrote
// a StatefulSet (the annotation write of journal.commit() goes around it), with the object the
// server returned when the write returns one.
class StatefulSetWrites final : public Kubernetes {
 public:
  explicit StatefulSetWrites(Kubernetes& kube) : kube_(kube) {}

  // True once since the last call if a StatefulSet was created, changed or deleted.
  bool take() { return std::exchange(wrote_, false); }
  // The StatefulSet as the last write returned it, if that write was a create or an update
  // that succeeded (a delete, a refused write or a Scale leaves nothing to read); taken once.
  std::optional<Json> take_written() { return std::exchange(written_, std::nullopt); }
  // Another port's note of a write.
  void note(bool wrote, std::optional<Json> written) {
    if (!wrote) return;
    wrote_ = true;
    written_ = std::move(written);
  }

  KubeResult<Json> get(const ObjectRef& ref) override { return kube_.get(ref); }
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options) override {
    return kube_.list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override {
    return kept(kind, kube_.create(kind, object));
  }
  KubeResult<Json> update(Kind kind, const Json& object) override {
    return kept(kind, kube_.update(kind, object));
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
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options) override {
    return kube_.evict(pod, options);
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
  void note(Kind kind) {
    if (kind != Kind::StatefulSet) return;
    wrote_ = true;
    written_.reset();
  }
  KubeResult<Json> kept(Kind kind, KubeResult<Json> result) {
    note(kind);
    if (kind == Kind::StatefulSet && result) written_ = *result;
    return result;
  }

  Kubernetes& kube_;
  bool wrote_ = false;
  std::optional<Json> written_;
};

// What a recovery did, for the Event of its end.
std::string recovery_result(const Operation& op) {
  const LostReplica& lost = *op.lost;
  if (!lost.cancelled.empty()) return lost.cancelled;
  std::string volumes;
  for (const LostClaim& c : lost.claims) volumes += " " + c.volume;
  return "replica " + op.statefulset + "-" + std::to_string(lost.ordinal) +
         " runs on new, empty claims; the lost volumes are kept (Retain): once nothing is to be "
         "salvaged from them, `kubectl delete pv" +
         volumes + "`";
}

}  // namespace

std::expected<void, std::string> Reconciler::Session::append_all(const std::vector<Entry>& events) {
  const TimePoint now = to_millis(r_.clock_.now());
  std::vector<JournalRecord> records;
  ValidatingFold trial = *folder_;
  std::int64_t sequence = op_.last_sequence;
  for (const Entry& event : events) {
    records.push_back(make_record(op_, ++sequence, now, event));
    if (auto applied = trial.apply(records.back(), event); !applied) {
      return std::unexpected("refusing to journal " + std::string{entry_type(event)} + ": " +
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

std::expected<void, std::string> Reconciler::Session::commit_all(const std::vector<Entry>& events) {
  if (auto appended = append_all(events); !appended) return appended;
  return write_annotation();
}

std::expected<void, std::string> Reconciler::Session::journal_then_annotate(
    const std::vector<Entry>& events) {
  if (consumed_advance_ || clear_failed_label_) return commit_all(events);
  if (auto appended = append_all(events); !appended) return appended;
  annotation_pending_ = true;
  return {};
}

ReconcileResult Reconciler::Session::written_out(ReconcileResult result) {
  if (auto written = write_pending_annotation(); !written) return retry(written.error());
  return result;
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
  // Someone else wrote the StatefulSet: its controller updates the status with every pod that
  // starts or stops, several times a second while a scale-back brings the replicas up. Write
  // again on the fresh object, a few times, as long as our state annotation there is still the
  // one we based on. A write that still fails leaves the journal a transition ahead of the
  // annotation: the next reconcile resumes from the annotation (Resumed) and runs the step
  // again, which is safe but journals that transition twice.
  for (int attempt = 1; attempt < kAnnotationWriteAttempts && !written &&
                        written.error().code == KubeErrorCode::Conflict;
       ++attempt) {
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
  annotation_pending_ = false;
  return {};
}

void Reconciler::Session::tell_seen(const Operation& op) {
  // A resize stops replicas on purpose; it is measured against those it started with. A drain
  // (a scale-down) and a recovery against what the StatefulSet asks for.
  const std::int32_t wanted = op.kind == OperationKind::Resize && op.original_replicas > 0
                                  ? op.original_replicas
                                  : k8s::spec_replicas(sts_).value_or(1);
  const std::int32_t ready =
      k8s::statefulset_status(sts_).value_or(k8s::StatefulSetStatus{}).ready_replicas;
  r_.listener_.seen({op.kind, op.id, ready, wanted, r_.clock_.now()});
}

ReconcileResult Reconciler::Session::run_journaled() {
  auto parsed = read_operation(sts_);
  if (!parsed) {
    emit_event(EventSeverity::Warning, "InvalidState", parsed.error() + "; no action taken");
    return terminal(parsed.error());
  }
  if (auto settled = settle_finalizer(parsed->has_value() ? &**parsed : nullptr)) return *settled;
  if (!parsed->has_value()) {
    if (auto adopted = adopt_unfinished()) return *adopted;
    if (is_marked_failed(sts_)) return idle();
    if (auto refused = refuse_over_unfinished_backups()) return *refused;
    if (auto refused = settle_original_replicas_mark()) return *refused;
    if (auto recovering = start_recovery()) return *recovering;
    ReconcileResult result = [&] {
      if (auto drained = start_drain()) return *drained;
      if (auto request = resize_request_of(sts_)) {
        if (auto waiting = wait_for_drain()) return *waiting;
        return start_requested(*request);
      }
      return start();
    }();
    // Nodes wake no reconcile: a StatefulSet that opts in to lost-volume recovery is looked at
    // again while nothing else runs on it.
    if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
      auto setting = recovery_setting(sts_, r_.settings_.lost_volume_grace);
      if (setting && setting->mode != RecoveryMode::Never) {
        ReconcileResult again = requeue(r_.settings_.lost_volume_check_interval);
        again.message = result.message;
        return again;
      }
    }
    return result;
  }
  // An ended operation does nothing more; a request of `stsresize advance` that reaches it
  // anyway is answered (journaled as refused, removed, a Warning) rather than left lying.
  // Completion removes the state: a state that says Completed was written by someone else, and
  // resume() compares it with the journal (which may know the operation is still running).
  if (is_terminal((*parsed)->phase) && (*parsed)->phase != Phase::Completed &&
      !advance_request_of(sts_)) {
    return idle();
  }
  if (!is_terminal((*parsed)->phase)) tell_seen(**parsed);
  return resume(std::move(**parsed));
}

std::expected<ValidatingFold*, ReconcileResult> Reconciler::Session::journal_view(
    const std::string& id) {
  auto last = r_.journal_.last_sequence(id);
  if (!last) return std::unexpected(retry("journal: " + last.error().message));
  auto& slot = r_.folded_[id];
  const bool cached = slot && slot->state() && slot->state()->last_sequence == *last;
  if (cached) return slot.get();
  slot = std::make_unique<ValidatingFold>(PhaseMachine::rules());
  if (*last == 0) return slot.get();
  auto records = r_.journal_.read(id);
  if (!records) return std::unexpected(retry("journal: " + records.error().message));
  for (const JournalRecord& record : *records) {
    if (auto applied = slot->apply(record); !applied) {
      const std::string message = "journal of operation " + id + " is inconsistent at sequence " +
                                  std::to_string(applied.error().sequence) + ": " +
                                  applied.error().message;
      r_.folded_.erase(id);
      emit_event(EventSeverity::Warning, "JournalInconsistent", message + "; no action taken");
      return std::unexpected(terminal(message));
    }
  }
  return slot.get();
}

std::expected<bool, ReconcileResult> Reconciler::Session::annotation_lags_journal(
    const Operation& annotated) {
  auto records = r_.journal_.read(annotated.id);
  if (!records) return std::unexpected(retry("journal: " + records.error().message));
  ValidatingFold fold{PhaseMachine::rules()};
  for (const JournalRecord& record : *records) {
    if (record.sequence <= annotated.last_sequence) {
      if (!fold.apply(record)) return false;  // journal_view() would have refused it
    } else if (record.type == entry_type(entries::OperatorAction{}) ||
               record.type == entry_type(entries::PhaseChanged{})) {
      // An OperatorAction's write would also have answered a person (the request removed, the
      // failed label): from the annotation, the request is taken again. A transition's write
      // failed (it is written at once): from the annotation, it is taken again with its Events
      // and, for an end, its metrics.
      return false;
    }
  }
  return fold.state() && fold.state()->last_sequence == annotated.last_sequence &&
         same_state(*fold.state(), annotated);
}

ReconcileResult Reconciler::Session::resume(Operation annotated) {
  auto view = journal_view(annotated.id);
  if (!view) return view.error();
  folder_ = *view;
  if (folder_->state() && same_state(*folder_->state(), annotated)) {
    op_ = *folder_->state();
    return drive();
  }
  const std::optional<Operation> journaled = folder_->state();
  // The annotation is exactly what this journal held at an earlier sequence, and only progress
  // was journaled since: the process died before the write that would have carried it (made
  // before the next act, or at the end of the reconcile). Nobody else wrote since; the journal
  // knows more.
  if (journaled && annotated.last_sequence < journaled->last_sequence) {
    auto lags = annotation_lags_journal(annotated);
    if (!lags) return lags.error();
    if (*lags) {
      op_ = *journaled;
      if (auto written = write_annotation(); !written) return retry(written.error());
      return drive();
    }
  }
  // The journal is missing (new volume, lost file) or lags/leads the annotation by a step the
  // process did not live to write: continue from the annotation, and say so in the journal.
  op_ = annotated;
  op_.last_sequence = journaled ? journaled->last_sequence : 0;
  // The annotation is authoritative only as the engine writes it: no step leaves a phase before
  // its claims show the progress the next one needs, and completion removes the state. One that
  // says otherwise was edited, and continuing from it would skip the steps that protect data.
  std::expected<void, std::string> appended = std::unexpected(unwritten_state(annotated));
  if (appended.error().empty()) appended = append_all({entries::Resumed{annotated}});
  if (!appended) {
    // The annotation is not a state this engine writes from where the journal stands (edited by
    // hand: a phase moved on, Completed written over a running operation). The journal still
    // knows where the operation is: continue from it and write its state back.
    if (journaled && !is_terminal(journaled->phase)) {
      op_ = *journaled;
      if (auto written = write_annotation(); !written) return retry(written.error());
      emit_event(EventSeverity::Warning, "StateRestored",
                 "operation " + op_.id + ": the state annotation was changed by someone else (" +
                     appended.error() + "); continuing from the journal at " +
                     std::string{to_string(op_.phase)});
      return drive();
    }
    const std::string message = "operation " + annotated.id + ": " + appended.error();
    emit_event(EventSeverity::Warning, "JournalMismatch", message + "; no action taken");
    return terminal(message);
  }
  return drive();
}

std::expected<void, ReconcileResult> Reconciler::Session::advance(Trigger event,
                                                                  const std::string& reason,
                                                                  std::vector<Entry> approval) {
  PhaseMachine machine{op_.kind, op_.phase};
  const Phase from = op_.phase;
  // "ResizeCompleted", "DrainCompleted": the Events of a transition name the kind.
  const auto kind_reason = [kind = std::string{to_string(op_.kind)}](std::string_view what) {
    return kind + std::string{what};
  };
  auto next = machine.fire(event, op_.sources_intact(), op_.failed_in);
  if (!next) {
    emit_event(EventSeverity::Warning, "InternalError", next.error());
    return std::unexpected(terminal(next.error()));
  }
  std::string approved_by;
  for (const Entry& e : approval) {
    if (const auto* action = std::get_if<entries::OperatorAction>(&e)) approved_by = action->by;
  }
  std::vector<Entry> events = std::move(approval);
  if (event == Trigger::CriticalError || event == Trigger::Abort) {
    events.push_back(entries::StepFailed{from, reason, true});
  }
  events.push_back(entries::PhaseChanged{from, *next, event});
  if (is_terminal(*next)) events.push_back(entries::OperationFinished{*next});
  const TimePoint from_since = op_.phase_since;
  // Written at once, with any progress journaled before it: the phase annotation names every
  // phase the operation enters (the admission fence, `kubectl get -L`, the crash tests'
  // boundaries), and an end is reported as done by the listener and the Events below.
  if (auto committed = commit_all(events); !committed) {
    return std::unexpected(retry(committed.error()));
  }
  r_.listener_.left(
      {op_.kind, from, std::chrono::duration_cast<Duration>(op_.phase_since - from_since)});
  if (is_terminal(*next)) {
    OperationEnded ended;
    ended.kind = op_.kind;
    ended.outcome = *next;
    ended.aborted = !op_.aborted_by.empty();
    ended.took = std::chrono::duration_cast<Duration>(op_.phase_since - op_.started);
    for (const OrdinalDrain& d : op_.drains) {
      ++(d.cancelled.empty() && d.succeeded ? ended.ordinals_drained : ended.ordinals_cancelled);
    }
    ended.id = op_.id;
    ended.path = op_.path;
    // The rebind path's restore is the copy bound under the claim's name: nothing copied again.
    for (const ClaimPlan& claim : op_.claims) {
      if (claim.backup_verified) ended.bytes_copied += claim.backup_verified->bytes;
      if (claim.restore_verified && op_.path == Path::Copy) {
        ended.bytes_copied += claim.restore_verified->bytes;
      }
    }
    r_.listener_.ended(ended);
  }
  const std::string transition =
      std::string{to_string(from)} + " -> " + std::string{to_string(*next)};
  if (event == Trigger::CriticalError) {
    std::string message = transition + ": " + reason;
    // Once a source claim was replaced, whoever answers this Warning must know that stsresize
    // did not scale back, and where the data now is.
    if (*next == Phase::Failed && op_.path == Path::Rebind && !kept_volumes_hint(op_).empty()) {
      message += "; the claims not on their copy keep their data on volumes kept Retain (" +
                 kept_volumes_hint(op_) + ")";
    } else if (*next == Phase::Failed && !op_.sources_intact() &&
               op_.kind == OperationKind::Resize) {
      message +=
          "; source claims were replaced, so nothing was scaled back: the data of every "
          "claim not yet restored is in its backup claim (" +
          backups_hint(op_) + ")";
    }
    emit_event(EventSeverity::Warning, kind_reason("Failed"), message);
  } else if (event == Trigger::Skip) {
    emit_event(EventSeverity::Normal, "StepSkipped",
               "operation " + op_.id + ": " + std::string{to_string(from)} + " skipped by " +
                   approved_by + ", kept: " + reason);
    emit_event(EventSeverity::Normal, kind_reason("Completed"),
               "operation " + op_.id + ": " + transition + " (" + std::string{to_string(from)} +
                   " skipped by " + approved_by + ")");
  } else if (event == Trigger::Resume) {
    emit_event(EventSeverity::Normal, kind_reason("Resumed"),
               "operation " + op_.id + ": " + transition + " (resumed by " + approved_by +
                   "; it had failed: " + reason + "): running the " +
                   std::string{to_string(*next)} + " step again");
  } else if (event == Trigger::Abort && op_.kind == OperationKind::Recovery) {
    emit_event(EventSeverity::Warning, kind_reason("Aborted"),
               "operation " + op_.id + ": " + transition + ": " + reason +
                   "; no lost claim was deleted; stsresize will not recover a replica of this "
                   "StatefulSet again while it is labelled " +
                   std::string{kFailedLabel});
  } else if (event == Trigger::Abort && op_.kind == OperationKind::Drain) {
    emit_event(EventSeverity::Normal, kind_reason("Aborting"),
               "operation " + op_.id + ": " + transition + ": " + reason +
                   "; deleting the cleanup pods, keeping every claim");
  } else if (event == Trigger::Abort) {
    emit_event(EventSeverity::Normal, kind_reason("Aborting"),
               "operation " + op_.id + ": " + transition + ": " + reason + "; " +
                   (op_.source_claim_deleted()
                        ? "putting each claim whose source was deleted back on its own volume, "
                        : "") +
                   "scaling back to " + std::to_string(op_.original_replicas) +
                   " replicas and removing this operation's Jobs and backup claims");
  } else if (*next == Phase::Failed && op_.kind == OperationKind::Drain) {
    emit_event(EventSeverity::Warning, kind_reason(op_.aborted_by.empty() ? "Failed" : "Aborted"),
               "operation " + op_.id + ": " + transition +
                   ": cleanup pods deleted, every claim not drained kept: " + op_.failure +
                   "; stsresize will not drain it again while it is labelled " +
                   std::string{kFailedLabel});
  } else if (*next == Phase::Failed) {
    // Before a plan (a shrink refused while Measuring) nothing was scaled: ScalingBack only
    // removed the measure Jobs.
    const std::string replicas =
        op_.path == Path::Undecided
            ? std::string{"nothing was scaled, the "} + std::to_string(op_.original_replicas) +
                  " replicas kept running: "
            : "scaled back to " + std::to_string(op_.original_replicas) + " replicas: ";
    if (!op_.aborted_by.empty()) {
      emit_event(EventSeverity::Warning, kind_reason("Aborted"),
                 replicas + op_.failure +
                     "; stsresize will not resize it again while it is labelled " +
                     std::string{kFailedLabel});
    } else {
      emit_event(EventSeverity::Warning, kind_reason("Failed"), replicas + op_.failure);
    }
  } else {
    emit_event(EventSeverity::Normal,
               *next == Phase::Completed ? kind_reason("Completed") : std::string{"PhaseChanged"},
               "operation " + op_.id + ": " + transition +
                   (approved_by.empty() ? "" : " (approved by " + approved_by + ")") +
                   (*next == Phase::Completed && op_.kind == OperationKind::Drain
                        ? "; " + to_string(drain_result(op_))
                        : "") +
                   (*next == Phase::Completed && op_.lost ? "; " + recovery_result(op_) : ""));
  }
  return {};
}

ReconcileResult Reconciler::Session::drive() {
  if (auto reported = report_queued_request(); !reported) return retry(reported.error());
  StatefulSetWrites kube{r_.kube_};
  StatefulSetWrites cached_kube{r_.tracked_cached_ ? *r_.tracked_cached_ : r_.kube_};
  VolumeMemo::Volumes volumes;
  VolumeMemo cached_volumes{cached_kube, volumes, VolumeMemo::Mode::Answer};
  VolumeMemo live_volumes{kube, volumes, VolumeMemo::Mode::Record};
  for (int i = 0; i < r_.settings_.max_steps_per_reconcile; ++i) {
    if (!sts_.is_null()) {
      if (auto answered = take_operator_request()) return *answered;
    }
    if (is_terminal(op_.phase)) {
      // A drain that ended on a StatefulSet being deleted: the finalizer is settled at once (a
      // drain of what is left, or let go), rather than at a next reconcile nothing may trigger.
      if (op_.kind == OperationKind::Drain && !sts_.is_null() &&
          k8s::is_being_deleted(sts_).value_or(false)) {
        if (auto settled = settle_finalizer(nullptr)) return *settled;
      }
      return idle();
    }
    const Step step = step_for(op_.kind, op_.phase);
    if (!step) return terminal("no step for phase " + std::string{to_string(op_.phase)});
    // sts_ is as read at the start or as returned by our last write of it (the annotation, or
    // the step's own create or update: replicas, the re-created object); read it again only
    // when the step before changed it without returning it (deleted it, scaled it through
    // /scale, a refused write). Its status may be a few milliseconds old, which no step depends
    // on: the steps that wait on the status return and are woken by its watch event; writes
    // carry resourceVersion or uid.
    const bool wrote = kube.take();
    if (auto written = kube.take_written(); wrote && written) {
      sts_ = std::move(*written);
    } else if (wrote) {
      auto fresh = r_.kube_.get(ref_);
      if (!fresh && fresh.error().code == KubeErrorCode::NotFound && recreates_statefulset(op_)) {
        sts_ = Json{};  // deleted on purpose: the step creates it again from its definition
      } else if (!fresh) {
        return retry("reading " + to_string(ref_) + ": " + fresh.error().message);
      } else {
        sts_ = std::move(*fresh);
      }
    }
    StepOutcome outcome;
    if (r_.tracked_cached_) {
      reading_cached_ = true;
      live_reads_wanted_ = false;
      StepContext ctx{cached_volumes, r_.clock_, r_.events_, *this, r_.settings_, op_, sts_};
      outcome = step(ctx);
      reading_cached_ = false;
    }
    if (!r_.tracked_cached_ || live_reads_wanted_) {
      // The StatefulSet as the cache gave it at the start, not replaced since by a write's
      // answer: read live, for the decision is destructive (the fence reads its replicas).
      if (!cached_version_.empty() && !sts_.is_null() &&
          k8s::resource_version(sts_).value_or("") == cached_version_) {
        auto fresh = r_.kube_.get(ref_);
        if (!fresh) return retry("reading " + to_string(ref_) + ": " + fresh.error().message);
        sts_ = std::move(*fresh);
        cached_version_.clear();
      }
      // Each object read once in this run (states/run_reads.h); the next run reads again.
      RunReads once{live_volumes};
      StepContext ctx{once, r_.clock_, r_.events_, *this, r_.settings_, op_, sts_};
      outcome = step(ctx);
    }
    const bool wrote_on_cached = cached_kube.take();
    kube.note(wrote_on_cached, cached_kube.take_written());
    switch (outcome.kind) {
      case StepOutcome::Kind::Done: {
        std::vector<Entry> approval;
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
        if (auto advanced = advance(Trigger::CriticalError, outcome.message); !advanced) {
          return advanced.error();
        }
        break;
    }
  }
  return requeue(Duration{0});
}

Reconciler::Reconciler(Kubernetes& kube, Journal& journal, const Clock& clock,
                       EventRecorder& events, EngineSettings settings, OperationListener* listener,
                       Kubernetes* cached_reads)
    : tracked_kube_(kube),
      kube_(tracked_kube_),
      tracked_cached_(cached_reads != nullptr
                          ? std::make_unique<DenialTrackingKubernetes>(*cached_reads)
                          : nullptr),
      journal_(journal),
      clock_(clock),
      events_(events),
      settings_(std::move(settings)),
      listener_(listener != nullptr ? *listener : nobody_) {}

Reconciler::~Reconciler() = default;

ReconcileResult Reconciler::reconcile(const std::string& ns, const std::string& name) {
  const ObjectRef ref{Kind::StatefulSet, ns, name};
  tracked_kube_.forget();
  if (tracked_cached_) tracked_cached_->forget();
  ReconcileResult result = reconcile_tracked(ref);
  report_denial(ref, result);
  return result;
}

void Reconciler::report_denial(const ObjectRef& ref, ReconcileResult& result) {
  const std::string key = ref.ns + "/" + ref.name;
  // The steps' calls go through either port: the denial is the one the retry's message quotes.
  const auto& live_denial = tracked_kube_.last_denial();
  const auto& denial = tracked_cached_ && tracked_cached_->last_denial() &&
                               (!live_denial || result.message.find(live_denial->server_message) ==
                                                    std::string::npos)
                           ? tracked_cached_->last_denial()
                           : live_denial;
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
  // Through the cached reads when given: a reconcile that finds the StatefulSet as it last saw
  // it (a copy still running) reads nothing. Before a step acts destructively it is read live
  // (drive()).
  auto statefulset = tracked_cached_ ? tracked_cached_->get(ref) : kube_.get(ref);
  if (!statefulset) {
    if (statefulset.error().code == KubeErrorCode::NotFound) return recover(ref);
    return retry("reading " + to_string(ref) + ": " + statefulset.error().message);
  }
  Session session{*this, ref, std::move(*statefulset)};
  if (tracked_cached_) session.read_through_cache();
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
  if (!stored->has_value() || !recreates_statefulset(**stored) ||
      ((*stored)->phase == Phase::UpdatingTemplate && (*stored)->statefulset_recreated)) {
    return refuse(
        "the definition records no template update, rolling resize or re-seed in progress");
  }
  Session session{*this, ref, Json{}};
  return session.recover(std::move(**stored));
}

}  // namespace stsresize
