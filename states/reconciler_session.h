#pragma once
// Private to states/: one reconcile of one StatefulSet (Reconciler::Session), whose members are
// defined in three files:
//   reconciler.cc         the driver: read the state, resume, run the steps, fire the machine,
//                         journal and annotate each transition and give its Event
//   operation_start.cc    starting an operation (or refusing to), and continuing one whose state
//                         the cluster lost
//   operator_actions.cc   a person's stsresize.dev/advance request (approve, abort, retry, skip),
//                         decided with engine/actions/rules.h and acted on here
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/actions/request.h"
#include "engine/actions/rules.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/text.h"
#include "states/reconciler.h"
#include "states/step.h"

namespace stsresize {

namespace results {

inline ReconcileResult idle() {
  return {ReconcileResult::Kind::Idle, Duration{0}, {}};
}
inline ReconcileResult requeue(Duration after) {
  return {ReconcileResult::Kind::RequeueAfter, after, {}};
}
inline ReconcileResult retry(std::string message) {
  return {ReconcileResult::Kind::Retry, Duration{0}, std::move(message)};
}
inline ReconcileResult terminal(std::string message) {
  return {ReconcileResult::Kind::Terminal, Duration{0}, std::move(message)};
}

// A status annotation holds a refusal, which quotes what it refuses (bounded by quote(), but
// a refusal may name many things); the API server refuses annotations over 256 KiB in all.
inline std::string bounded_status(const std::string& text) {
  return bounded(text, 1024, "... (cut)");
}

inline std::string state_annotation_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kStateAnnotation);
  return value && value->has_value() ? **value : std::string{};
}

}  // namespace results
using namespace results;

// An act that can lose data when decided on a view a moment old: deleting a claim or a volume,
// changing a volume (its reclaim policy to anything but Retain, its claimRef), deleting the
// StatefulSet (UpdatingTemplate orphan-deletes it once its definition is in the ConfigMap, which
// a cache may still show after someone deleted it). Such an act is decided on live reads. Setting
// a volume's policy to Retain ("retain") is not: whatever the view, the volume only outlives
// its claim.
inline bool destroys_data(std::string_view action, Kind kind) {
  if (kind == Kind::PersistentVolume) return action != "create" && action != "retain";
  // A recovery's delete of a lost replica's pod, with no grace: decided on the claims as they are.
  if (kind == Kind::Pod && action == "force-delete") return true;
  return (kind == Kind::PersistentVolumeClaim || kind == Kind::StatefulSet) && action == "delete";
}

// One reconcile of one StatefulSet: the operation as it stands, the latest StatefulSet, and the
// journal stream, kept in step.
class Reconciler::Session final : public StepJournal {
 public:
  // `statefulset` is null when it does not exist (recover() only).
  Session(Reconciler& owner, ObjectRef ref, Json statefulset)
      : r_(owner), sts_(std::move(statefulset)), ref_(std::move(ref)) {}

  ReconcileResult run() { return written_out(run_journaled()); }
  // The StatefulSet given was read through the cached reads: a destructive step reads it live.
  void read_through_cache() { cached_version_ = k8s::resource_version(sts_).value_or(""); }
  // The StatefulSet is gone mid-way through UpdatingTemplate: continue `stored`, the operation
  // recorded in the definition kept in the ConfigMap.
  ReconcileResult recover(Operation stored) { return written_out(resume(std::move(stored))); }

  // The annotation holds every entry journaled before an act: one that lags only by entries
  // since the last act is what a crash between an act and its record leaves anyway.
  std::expected<void, std::string> intend(std::string_view action, const ObjectRef& target,
                                          std::string_view detail) override {
    if (reading_cached_ && destroys_data(action, target.kind)) {
      live_reads_wanted_ = true;
      return std::unexpected(std::string{action} + " " + to_string(target) +
                             " is decided on live reads: the step runs again on them");
    }
    if (auto written = write_pending_annotation(); !written) return written;
    return append_all({entries::ActionIntended{op_.phase, std::string{action}, to_string(target),
                                               std::string{detail}}});
  }
  std::expected<void, std::string> commit(const Entry& entry) override {
    return journal_then_annotate({entry});
  }
  std::expected<void, std::string> append(const Entry& entry) override {
    return append_all({entry});
  }

 private:
  ReconcileResult start();
  ReconcileResult start_requested(const std::string& request);
  ReconcileResult reject_request(const std::string& reason,
                                 std::string_view event_reason = "InvalidResizeRequest");
  // A new operation on sts_: its first events committed (journal, then annotation).
  std::expected<void, std::string> begin(const std::string& trigger, std::vector<Entry> events,
                                         OperationKind kind = OperationKind::Resize);
  // No state, and the StatefulSet opts in to the drain (engine/cleanup_pod.h) with ordinals a
  // scale-down left that can be drained now: a drain begins (OperationStarted, DrainPlanned; its
  // Pending step starts it). Before a resize, which would otherwise copy claims about to be
  // drained. nullopt: none.
  // A StatefulSet whose drain cannot be done (drain_refusal, engine/drain_plan.h: a template
  // with whenScaled Delete, or an invalid claim policy stsresize.dev/scaledown-claims) is told so
  // once (note_drain_refusal) and drained never; a resize is still served.
  std::optional<ReconcileResult> start_drain();
  // No state, and the StatefulSet opts in to lost-volume recovery
  // (stsresize.dev/lost-volume-recovery, engine/lost_volume.h) with a replica whose claims'
  // volumes are pinned to a node that is gone: a recovery begins (OperationStarted, ReplicaLost,
  // Pending -> AwaitingNode), the lowest such ordinal only, and only while no replica recovered
  // earlier is still not Ready. Before a drain or a resize, which could not finish with a
  // replica that cannot run. A node NotReady is reported (a Warning, once per node and process),
  // never acted on. nullopt: none.
  std::optional<ReconcileResult> start_recovery();
  // No drain could begin (start_drain), yet a scale-down left claims that one will take once it
  // may: the StatefulSet controller has not observed the scale-down, the replica's pod still
  // stops, a pod still uses a claim. A resize about to begin (a request, or templates larger
  // than the claims) waits for that drain rather than copy those claims and go first: requeued
  // after the poll interval, and a request says so, once, in stsresize.dev/resize-status
  // ("queued: ... the drain of ordinal 2 ...") with a Normal Event ResizeRequestQueued. Asked
  // only when a resize would begin: with none wanted, nothing polls. nullopt: no drain is coming.
  std::optional<ReconcileResult> wait_for_drain();
  // The drain's finalizer (kScaledownFinalizer, the StatefulSet Scale-Down Controller's, taken
  // over where it is) before anything else (states/drain_finalizer.cc). Not being deleted: added
  // when the set opts in, removed when it opts out (no drain running). Being deleted with it:
  // removed at once for a resize's own re-create and for an orphan delete or one that cannot be
  // told apart (engine/statefulset_deletion.h), or once nothing is left to drain; a delete that
  // removes the replicas begins a drain of every ordinal. `annotated`: the state on sts_, if
  // any. nullopt: go on.
  std::optional<ReconcileResult> settle_finalizer(const Operation* annotated);
  // sts_ with the finalizer added or removed, written with its resourceVersion.
  std::expected<void, std::string> write_finalizer(bool present);
  std::expected<void, std::string> note_drain_refusal();
  // True when the journal's latest stream for sts_ is exactly `first_events` and nothing more:
  // a start journaled by a process that died before writing its annotation. op_ is then that
  // operation, ready for its annotation.
  std::expected<bool, std::string> adopt_unannotated_start(const std::vector<Entry>& first_events);
  ReconcileResult resume(Operation annotated);
  // The journal's ValidatingFold of operation `id`, from the cache while it is current, else folded
  // again. An inconsistent stream is reported (JournalInconsistent) and is the error.
  std::expected<ValidatingFold*, ReconcileResult> journal_view(const std::string& id);
  // True when `annotated` is the state the journal folded to at its lastSequence, and every
  // record since is progress (no PhaseChanged, no OperatorAction): journaled by a process that
  // died before the annotation write carrying it.
  std::expected<bool, ReconcileResult> annotation_lags_journal(const Operation& annotated);
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
  std::optional<ReconcileResult> hold_for_approval(Trigger event, std::vector<Entry>& approval);
  // An advance request that cannot approve what waits: journaled as a refused OperatorAction,
  // removed from the StatefulSet, and a Warning saying why and what to run.
  std::expected<void, std::string> refuse_advance(const std::string& text,
                                                  const std::optional<AdvanceRequest>& request,
                                                  const std::string& why);
  std::expected<void, ReconcileResult> advance(Trigger event, const std::string& reason,
                                               std::vector<Entry> approval = {});
  // Before the step runs: a stsresize.dev/advance request that is not an approval of what
  // waits (an abort, a retry, a skip; anything once the operation has ended) is taken or
  // refused here (operator_actions.cc). nullopt: go on with the step (op_ may now be in
  // ScalingBack or Completed).
  std::optional<ReconcileResult> take_operator_request();
  // Each decides again with the rule the CLI used (engine/actions/rules.h). Accepted: journaled
  // as an OperatorAction with what it does, the request removed by the same annotation write.
  // Refused: refused(). nullopt: the reconcile goes on.
  //   abort   OperatorAction, StepFailed ("aborted by ...") and PhaseChanged on Abort in one
  //           append; ScalingBack follows.
  //   retry   sources intact: the OperatorAction ends op_'s stream and a new operation begins,
  //           whose first write also removes the label stsresize.dev/failed; sources replaced:
  //           take_resume.
  //   resume  the failed Jobs deleted first (the request waits for them to be gone); then the
  //           OperatorAction and PhaseChanged on Resume in one append, the failure cleared and
  //           the label removed; the step of the phase it failed in runs again.
  //   skip    OperatorAction, PhaseChanged on Skip and OperationFinished in one append, and an
  //           Event StepSkipped naming what is kept.
  std::optional<ReconcileResult> take_abort(const std::string& text, const AdvanceRequest& request);
  std::optional<ReconcileResult> take_retry(const std::string& text, const AdvanceRequest& request);
  std::optional<ReconcileResult> take_resume(const std::string& text,
                                             const AdvanceRequest& request);
  std::optional<ReconcileResult> take_skip(const std::string& text, const AdvanceRequest& request);
  // refuse_advance with the words of `refusal`; nullopt unless the answer could not be written.
  std::optional<ReconcileResult> refused(const std::string& text, const AdvanceRequest& request,
                                         const Refusal& refusal);

  // Journal first; then the in-memory state. Refuses what fold would refuse.
  std::expected<void, std::string> append_all(const std::vector<Entry>& events);
  // append + the annotation that makes the new state authoritative.
  std::expected<void, std::string> commit_all(const std::vector<Entry>& events);
  // append; the annotation is written before the next act (intend()), at the next transition
  // (advance()) or at the end of the reconcile (written_out()), so progress recorded between
  // two acts costs one write. At once when the write also answers a person (a consumed advance
  // request, the failed label).
  std::expected<void, std::string> journal_then_annotate(const std::vector<Entry>& events);
  std::expected<void, std::string> write_annotation();
  std::expected<void, std::string> write_pending_annotation() {
    return annotation_pending_ ? write_annotation() : std::expected<void, std::string>{};
  }
  // `result` once the pending annotation is written; a retry if it could not be.
  ReconcileResult written_out(ReconcileResult result);
  ReconcileResult run_journaled();
  // Tells the listener how many replicas of the operation's are Ready now.
  void tell_seen(const Operation& op);

  // A Kubernetes Event on the StatefulSet (best effort), not a journal entry.
  void emit_event(EventSeverity severity, std::string_view reason, const std::string& message) {
    r_.events_.record(ref_, severity, reason, message);
  }

  Reconciler& r_;
  Json sts_;
  ObjectRef ref_;
  Operation op_;
  ValidatingFold* folder_ = nullptr;  // owned by r_.folded_
  // The stsresize.dev/advance annotation consumed (accepted or refused): the next annotation
  // write removes it, if it still holds exactly this text.
  std::optional<std::string> consumed_advance_;
  // Set by take_retry: the next annotation write removes the label stsresize.dev/failed, and
  // begin() names the operation retried and who asked.
  bool clear_failed_label_ = false;
  // Journaled entries the state annotation does not hold yet (journal_then_annotate).
  bool annotation_pending_ = false;
  // The resourceVersion of the StatefulSet as read through the cache at the start ("" when read
  // live); sts_ still at it has not been replaced by a write's answer or a live read.
  std::string cached_version_;
  // The step running now reads through the caches (Reconciler's cached_reads); it asked to act
  // destructively on them, so it runs again on live reads before anything else.
  bool reading_cached_ = false;
  bool live_reads_wanted_ = false;
  std::optional<std::pair<std::string, std::string>> retry_of_;  // operation, by
  // Set by take_retry: the replica count the retried operation started from, which the new one
  // keeps (the StatefulSet may still be at 0 if the failed operation could not scale back).
  std::optional<std::int32_t> retry_replicas_;
};

}  // namespace stsresize
