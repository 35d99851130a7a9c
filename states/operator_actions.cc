// A person's stsresize.dev/advance request, taken by the reconciler: decided again with the
// rules the CLI used (engine/actions/rules.h), journaled as an OperatorAction, acted on, and
// answered with an Event whose words come from engine/actions/explain.h.
#include "engine/lost_volume.h"
#include "states/reconciler_session.h"

#include "engine/actions/cluster_view.h"
#include "engine/actions/explain.h"
#include "engine/actions/rules.h"
#include "engine/naming.h"
#include "engine/resize_request.h"
#include "states/machine.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

entries::OperatorAction accepted(const AdvanceRequest& request) {
  return entries::OperatorAction{std::string{to_string(request.action)},
                                 request.phase,
                                 request.by,
                                 request.at,
                                 request.nonce,
                                 {}};
}

}  // namespace

std::optional<ReconcileResult> Reconciler::Session::hold_for_approval(
    Trigger event, std::vector<Entry>& approval) {
  const Phase from = op_.phase;
  auto next = PhaseMachine{op_.kind, from}.fire(event, op_.sources_intact());
  if (!next) return std::nullopt;  // advance() reports it
  const ModeSetting mode = approval_mode_of(sts_);
  std::string held_by = std::string{kModeAnnotation} + ": " + std::string{to_string(mode.mode)} +
                        (mode.invalid.empty() ? "" : "; " + mode.invalid);
  std::string mode_name{to_string(mode.mode)};
  if (!needs_approval(mode.mode, from, *next, event)) {
    // A lost-volume recovery in manual mode waits before it deletes, whatever the mode of
    // the other operations.
    auto recovery = recovery_setting(sts_, r_.settings_.lost_volume_grace);
    if (op_.kind != OperationKind::Recovery || *next != Phase::ReplacingVolume || !recovery ||
        recovery->mode != RecoveryMode::Manual) {
      return std::nullopt;
    }
    held_by = std::string{kLostVolumeRecoveryAnnotation} + ": manual";
    mode_name = "manual";
  }
  const AwaitedApproval awaited{from, *next, event};
  const std::string transition =
      std::string{to_string(from)} + " -> " + std::string{to_string(*next)};
  if (op_.awaiting != awaited) {
    if (auto committed = commit_all({entries::ApprovalAwaited{from, *next, event, mode_name}});
        !committed) {
      return retry(committed.error());
    }
    emit_event(EventSeverity::Normal, "AwaitingApproval",
               "operation " + op_.id + " awaits approval of " + transition + " (" + held_by +
                   "); to approve, run `" +
                   advance_command_line(Action::Approve, ref_.ns, ref_.name) + "`");
  }
  auto text = advance_request_of(sts_);
  if (!text) return idle();
  auto request = decode_advance_request(*text);
  if (!request) {
    if (auto refused = refuse_advance(*text, std::nullopt, request.error()); !refused) {
      return retry(refused.error());
    }
    return idle();
  }
  if (auto approved = check_approve(*request, op_); !approved) {
    if (auto refused = refuse_advance(*text, *request, explain(approved.error(), op_)); !refused) {
      return retry(refused.error());
    }
    return idle();
  }
  approval.push_back(accepted(*request));
  consumed_advance_ = *text;
  return std::nullopt;
}

std::expected<void, std::string> Reconciler::Session::refuse_advance(
    const std::string& text, const std::optional<AdvanceRequest>& request, const std::string& why) {
  const std::string unreadable = "(unreadable)";
  entries::OperatorAction action{request ? std::string{to_string(request->action)} : unreadable,
                                 request ? request->phase : op_.phase,
                                 request ? request->by : unreadable,
                                 request ? request->at : unreadable,
                                 request ? request->nonce : unreadable,
                                 why};
  if (auto appended = append_all({action}); !appended) return appended;
  consumed_advance_ = text;
  if (auto written = write_annotation(); !written) return written;
  std::string message = "stsresize advance by " + action.by + " refused: " + why + ". ";
  const std::string approve = advance_command_line(Action::Approve, ref_.ns, ref_.name);
  if (request && request->action != Action::Approve) {
    message += "Nothing was changed";
    if (!is_terminal(op_.phase) && check_abort(op_, PhaseMachine::rules(op_.kind))) {
      message += "; to abort operation " + op_.id + ", run `" +
                 advance_command_line(Action::Abort, ref_.ns, ref_.name) + "`";
    }
  } else if (is_terminal(op_.phase)) {
    message += "The operation " + op_.id + " has ended; nothing waits for approval";
  } else if (op_.awaiting) {
    message += "The operation " + op_.id + " awaits approval of " +
               std::string{to_string(op_.awaiting->from)} + " -> " +
               std::string{to_string(op_.awaiting->to)} + "; to approve it, run `" + approve + "`";
  } else {
    message += "Nothing waits for approval now; run `" + approve + "` when the StatefulSet shows " +
               std::string{kAwaitingApprovalAnnotation};
  }
  emit_event(EventSeverity::Warning, "AdvanceRefused", message);
  return {};
}

std::optional<ReconcileResult> Reconciler::Session::refused(const std::string& text,
                                                            const AdvanceRequest& request,
                                                            const Refusal& refusal) {
  if (auto answered = refuse_advance(text, request, explain(refusal, op_)); !answered) {
    return retry(answered.error());
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::Session::take_operator_request() {
  auto text = advance_request_of(sts_);
  if (!text || text == consumed_advance_) return std::nullopt;
  auto request = decode_advance_request(*text);
  if (!request) {
    // Unreadable: hold_for_approval answers it while the operation runs.
    if (!is_terminal(op_.phase)) return std::nullopt;
    if (auto answered = refuse_advance(*text, std::nullopt, request.error()); !answered) {
      return retry(answered.error());
    }
    return std::nullopt;
  }
  switch (request->action) {
    case Action::Approve:
      // An approval of a running operation: hold_for_approval's, when its step is done.
      if (!is_terminal(op_.phase)) return std::nullopt;
      {
        Refusal ended;
        ended.action = Action::Approve;
        ended.reason = RefusalReason::Ended;
        ended.phase = op_.phase;
        return refused(*text, *request, ended);
      }
    case Action::Abort:
      return take_abort(*text, *request);
    case Action::Retry:
      return take_retry(*text, *request);
    case Action::Skip:
      return take_skip(*text, *request);
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::Session::take_abort(const std::string& text,
                                                               const AdvanceRequest& request) {
  // A source delete asked for but not finished (pvc-protection) is not in op_ yet.
  std::vector<std::string> going;
  if (op_.phase == Phase::Recreating) {
    auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
    if (!claims) return retry("listing claims: " + claims.error().message);
    going = sources_going(op_, claims->items);
  }
  if (auto allowed = check_abort(request, op_, PhaseMachine::rules(op_.kind), going); !allowed) {
    return refused(text, request, allowed.error());
  }
  consumed_advance_ = text;
  if (auto advanced =
          advance(Trigger::Abort, abort_failure(request.by, op_.phase), {accepted(request)});
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
  // A drain or a recovery is retried as a new one, planned from the cluster as it is now.
  if (op_.kind == OperationKind::Drain || op_.kind == OperationKind::Recovery) {
    std::expected<std::string, std::string> wanted = std::string{};
    if (op_.kind == OperationKind::Drain) {
      auto pods = r_.kube_.list(Kind::Pod, ref_.ns);
      if (!pods) return retry("listing pods: " + pods.error().message);
      wanted = wanted_drain(sts_, claims->items, pods->items);
    }
    if (auto allowed =
            check_retry(request, op_, PhaseMachine::rules(op_.kind), claims->items, {}, wanted);
        !allowed) {
      return refused(text, request, allowed.error());
    }
    if (auto appended = append_all({accepted(request)}); !appended) return retry(appended.error());
    consumed_advance_ = text;
    clear_failed_label_ = true;
    retry_of_ = std::pair{op_.id, request.by};
    auto started = op_.kind == OperationKind::Drain ? start_drain() : start_recovery();
    if (started) return *started;
    return idle();
  }
  auto jobs = r_.kube_.list(Kind::Job, ref_.ns);
  if (!jobs) return retry("listing jobs: " + jobs.error().message);
  auto classes = steps::list_storage_classes(r_.kube_);
  if (!classes) return retry("listing storage classes: " + classes.error().message);
  const auto wanted = wanted_resize(sts_, claims->items, *classes);
  if (auto allowed = check_retry(request, op_, PhaseMachine::rules(op_.kind), claims->items,
                                 jobs->items, wanted);
      !allowed) {
    return refused(text, request, allowed.error());
  }
  // The old operation's stream ends with who retried it; a crash before the new operation's
  // first write leaves the request, and the next reconcile takes it again (the start, if it
  // was journaled, is adopted by begin()).
  if (auto appended = append_all({accepted(request)}); !appended) return retry(appended.error());
  consumed_advance_ = text;
  clear_failed_label_ = true;
  retry_of_ = std::pair{op_.id, request.by};
  retry_replicas_ = op_.original_replicas;
  if (auto requested = resize_request_of(sts_)) return start_requested(*requested);
  return start();
}

std::optional<ReconcileResult> Reconciler::Session::take_skip(const std::string& text,
                                                              const AdvanceRequest& request) {
  if (auto allowed = check_skip(request, op_, PhaseMachine::rules(op_.kind)); !allowed) {
    return refused(text, request, allowed.error());
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
  if (auto advanced = advance(Trigger::Skip, kept, {accepted(request)}); !advanced) {
    return advanced.error();
  }
  return std::nullopt;
}

std::optional<ReconcileResult> Reconciler::Session::take_resume(const std::string& text,
                                                                const AdvanceRequest& request) {
  auto claims = r_.kube_.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto jobs = r_.kube_.list(Kind::Job, ref_.ns);
  if (!jobs) return retry("listing jobs: " + jobs.error().message);
  if (auto allowed =
          check_resume(request, op_, PhaseMachine::rules(op_.kind), claims->items, jobs->items);
      !allowed) {
    return refused(text, request, allowed.error());
  }
  // A failed Job is what made the step fail: it goes first (journaled, uid-preconditioned), so
  // that the step creates it again rather than read the same failure. The request stays on the
  // StatefulSet meanwhile and is decided again once they are gone.
  const std::vector<Json> failed = failed_jobs(op_, jobs->items);
  // The steps' own idiom (journal the intent, delete with the uid read, NotFound is done), run
  // in this Session as a step would be.
  StepContext ctx{r_.kube_, r_.clock_, r_.events_, *this, r_.settings_, op_, sts_};
  for (const Json& job : failed) {
    if (k8s::is_being_deleted(job).value_or(false)) continue;
    auto uid = k8s::uid(job);
    if (auto removed = steps::delete_intended(
            ctx, ObjectRef{Kind::Job, ref_.ns, k8s::name(job).value_or("")},
            uid ? std::optional<std::string>{*uid} : std::nullopt, Propagation::Background,
            "failed Job of the operation, before resuming " +
                std::string{to_string(*op_.failed_in)});
        !removed) {
      return retry(removed.error().message);
    }
  }
  if (!failed.empty()) return requeue(r_.settings_.poll_interval);
  consumed_advance_ = text;
  clear_failed_label_ = true;
  if (auto advanced = advance(Trigger::Resume, op_.failure, {accepted(request)}); !advanced) {
    return advanced.error();
  }
  return std::nullopt;
}

}  // namespace stsresize
