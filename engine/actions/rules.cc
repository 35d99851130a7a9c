#include "engine/actions/rules.h"

#include <algorithm>

#include "engine/actions/cluster_view.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"

namespace stsresize {

namespace {

Refusal refusal(Action action, RefusalReason reason, const Operation& op) {
  Refusal r;
  r.action = action;
  r.reason = reason;
  r.phase = op.phase;
  return r;
}

std::unexpected<Refusal> refuse(Action action, RefusalReason reason, const Operation& op) {
  return std::unexpected(refusal(action, reason, op));
}

// Whether the table has a row on `event` out of `from`, whatever the guard decides.
bool has_row(const TransitionRules& rules, Phase from, Trigger event) {
  for (Phase to : kAllPhases) {
    for (bool intact : {true, false}) {
      if (rules.allowed(from, event, intact, to, to)) return true;
    }
  }
  return false;
}

// The request must be `action` on op; `phase_matters`: and name op's phase.
Verdict names(const AdvanceRequest& request, Action action, const Operation& op,
              bool phase_matters) {
  if (request.action != action) {
    Refusal r = refusal(action, RefusalReason::WrongAction, op);
    r.request_action = request.action;
    return std::unexpected(r);
  }
  if (request.operation != op.id) {
    Refusal r = refusal(action, RefusalReason::OtherOperation, op);
    r.detail = request.operation;
    return std::unexpected(r);
  }
  if (phase_matters && request.phase != op.phase) {
    Refusal r = refusal(action, RefusalReason::OtherPhase, op);
    r.request_phase = request.phase;
    return std::unexpected(r);
  }
  return {};
}

const Json* live_named(const std::vector<Json>& objects, const std::string& name) {
  for (const Json& object : objects) {
    if (k8s::name(object).value_or("") == name) return &object;
  }
  return nullptr;
}

bool deleting(const Json& object) {
  return k8s::is_being_deleted(object).value_or(false);
}

}  // namespace

std::vector<Phase> phases_allowing(const TransitionRules& rules, Trigger event) {
  std::vector<Phase> phases;
  for (Phase from : kAllPhases) {
    if (has_row(rules, from, event)) phases.push_back(from);
  }
  return phases;
}

std::vector<Phase> resumable_phases(const TransitionRules& rules) {
  std::vector<Phase> phases;
  for (Phase to : kAllPhases) {
    if (rules.allowed(Phase::Failed, Trigger::Resume, false, to, to)) phases.push_back(to);
  }
  return phases;
}

Verdict check_approve(const AdvanceRequest& request, const Operation& op) {
  return names(request, Action::Approve, op, /*phase_matters=*/true);
}

Verdict check_abort(const Operation& op, const TransitionRules& rules,
                    const std::vector<std::string>& sources_going) {
  if (!has_row(rules, op.phase, Trigger::Abort)) {
    Refusal r = refusal(Action::Abort, RefusalReason::PhaseNotAllowed, op);
    r.phases = phases_allowing(rules, Trigger::Abort);
    return std::unexpected(r);
  }
  Refusal r = refusal(Action::Abort, RefusalReason::SourcesDeleted, op);
  for (const ClaimPlan& claim : op.claims) {
    // A rolling resize's ordinals rolled before are finished: an abort scales back its rolling
    // ordinal only.
    if (!op.in_scope(claim)) continue;
    const bool asked = std::ranges::find(sources_going, claim.claim) != sources_going.end();
    if (claim.source_deleted) {
      r.deleted.push_back(claim.claim);
    } else if (asked) {
      r.going.push_back(claim.claim);
    }
  }
  // The Abort row's guard: a scale back onto the sources needs every one of them (a drain's
  // stop, every drained claim).
  // On the rebind path a deleted source's volume is kept (Operation::sources_intact says
  // until when): ScalingBack puts the claim back on it.
  const bool intact =
      (r.deleted.empty() || op.path == Path::Rebind) && r.going.empty() && op.sources_intact();
  const bool allowed = std::ranges::any_of(
      kAllPhases, [&](Phase to) { return rules.allowed(op.phase, Trigger::Abort, intact, to); });
  if (!allowed) return std::unexpected(r);
  return {};
}

Verdict check_abort(const AdvanceRequest& request, const Operation& op,
                    const TransitionRules& rules, const std::vector<std::string>& sources_going) {
  if (auto named = names(request, Action::Abort, op, /*phase_matters=*/false); !named) {
    return named;
  }
  return check_abort(op, rules, sources_going);
}

Verdict check_retry(const Operation& op, const TransitionRules& rules,
                    const std::vector<Json>& claims, const std::vector<Json>& jobs,
                    const std::expected<std::string, std::string>& wanted) {
  if (op.phase != Phase::Failed) return refuse(Action::Retry, RefusalReason::NotFailed, op);
  if (op.kind == OperationKind::Recovery) {
    // The label removed, the controller looks for a lost volume again: a replica still lost is
    // a new recovery, from the cluster as it is (a lost claim already deleted is not lost).
    return {};
  }
  if (op.kind == OperationKind::Drain) {
    // A new drain plans from the cluster what is left to drain: claims already deleted are not
    // in it, cleanup pods left are taken over.
    if (!wanted) {
      Refusal r = refusal(Action::Retry, RefusalReason::NothingWanted, op);
      r.detail = wanted.error();
      return std::unexpected(r);
    }
    return {};
  }
  if (!op.sources_intact()) {
    Refusal r = refusal(Action::Retry, RefusalReason::SourcesReplaced, op);
    if (auto resume = check_resume(op, rules, claims, jobs); !resume) {
      r.cause.push_back(resume.error());
    }
    return std::unexpected(r);
  }
  if (const auto going = sources_going(op, claims); !going.empty()) {
    Refusal r = refusal(Action::Retry, RefusalReason::SourceGoing, op);
    r.subject = going.front();
    return std::unexpected(r);
  }
  for (const Json& live : claims) {
    const std::string name = k8s::name(live).value_or("");
    if (!op.find_claim(name)) continue;
    const std::string phase = k8s::pvc_phase(live).value_or("unknown");
    if (phase != "Bound") {
      Refusal r = refusal(Action::Retry, RefusalReason::SourceNotBound, op);
      r.subject = name;
      r.detail = phase;
      return std::unexpected(r);
    }
  }
  for (const auto& [objects, kind] : {std::pair{&jobs, "job"}, std::pair{&claims, "pvc"}}) {
    for (const Json& object : *objects) {
      if (!labelled_by(object, op)) continue;
      Refusal r = refusal(Action::Retry, RefusalReason::LeftOver, op);
      r.subject = k8s::name(object).value_or("?");
      r.kind = kind;
      return std::unexpected(r);
    }
  }
  if (!wanted) {
    Refusal r = refusal(Action::Retry, RefusalReason::NothingWanted, op);
    r.detail = wanted.error();
    return std::unexpected(r);
  }
  return {};
}

Verdict check_retry(const AdvanceRequest& request, const Operation& op,
                    const TransitionRules& rules, const std::vector<Json>& claims,
                    const std::vector<Json>& jobs,
                    const std::expected<std::string, std::string>& wanted) {
  if (auto named = names(request, Action::Retry, op, /*phase_matters=*/false); !named) {
    return named;
  }
  return check_retry(op, rules, claims, jobs, wanted);
}

bool resumes_in_place(const Operation& op) {
  // A drain has no Resume: a retry plans a new drain of what is left.
  return op.kind == OperationKind::Resize && op.phase == Phase::Failed && !op.sources_intact();
}

Verdict check_resume(const Operation& op, const TransitionRules& rules,
                     const std::vector<Json>& claims, const std::vector<Json>& jobs) {
  if (op.phase != Phase::Failed) return refuse(Action::Retry, RefusalReason::NotFailed, op);
  if (op.sources_intact()) return refuse(Action::Retry, RefusalReason::SourcesIntact, op);
  if (!op.failed_in) return refuse(Action::Retry, RefusalReason::FailedInUnknown, op);
  const Phase failed_in = *op.failed_in;
  if (!rules.allowed(Phase::Failed, Trigger::Resume, false, failed_in, failed_in)) {
    Refusal r = refusal(Action::Retry, RefusalReason::NotResumable, op);
    r.phases = resumable_phases(rules);
    return std::unexpected(r);
  }
  for (const ClaimPlan& claim : op.claims) {
    if (!claim.source_deleted) continue;
    const Json* recreated = live_named(claims, claim.claim);
    const std::string uid = recreated ? k8s::uid(*recreated).value_or("") : "";
    if (claim.recreated_uid.empty() || recreated == nullptr || uid != claim.recreated_uid ||
        deleting(*recreated)) {
      Refusal r = refusal(Action::Retry, RefusalReason::RecreatedClaimLost, op);
      r.subject = claim.claim;
      r.loss = claim.recreated_uid.empty()  ? ClaimLoss::NeverRecreated
               : recreated == nullptr       ? ClaimLoss::Gone
               : uid != claim.recreated_uid ? ClaimLoss::Replaced
                                            : ClaimLoss::Deleting;
      r.uid = uid;
      r.restore_verified = claim.restore_verified.has_value();
      return std::unexpected(r);
    }
    if (failed_in != Phase::Restoring || claim.restore_verified) continue;
    const std::string backup = naming::backup_claim(claim.claim);
    const Json* live = live_named(claims, backup);
    auto owner = live ? k8s::annotation(*live, kOperationLabel)
                      : k8s::Result<std::optional<std::string>>{std::nullopt};
    auto about_backup = [&](RefusalReason reason) {
      Refusal r = refusal(Action::Retry, reason, op);
      r.subject = backup;
      r.claim = claim.claim;
      return r;
    };
    if (live == nullptr || !owner || !owner->has_value() || **owner != op.id) {
      Refusal r = about_backup(RefusalReason::BackupClaimLost);
      r.detail = live == nullptr ? "gone" : "not ours";
      return std::unexpected(r);
    }
    if (deleting(*live)) return std::unexpected(about_backup(RefusalReason::BackupClaimDeleting));
    const std::string phase = k8s::pvc_phase(*live).value_or("unknown");
    if (phase != "Bound") {
      Refusal r = about_backup(RefusalReason::BackupClaimNotBound);
      r.detail = phase;
      return std::unexpected(r);
    }
  }
  for (const Json& job : jobs) {
    if (!labelled_by(job, op)) continue;
    auto status = k8s::job_status(job);
    if (status && status->outcome != k8s::JobOutcome::Running) continue;
    Refusal r = refusal(Action::Retry, RefusalReason::JobRunning, op);
    r.subject = k8s::name(job).value_or("?");
    return std::unexpected(r);
  }
  return {};
}

Verdict check_resume(const AdvanceRequest& request, const Operation& op,
                     const TransitionRules& rules, const std::vector<Json>& claims,
                     const std::vector<Json>& jobs) {
  if (auto named = names(request, Action::Retry, op, /*phase_matters=*/false); !named) {
    return named;
  }
  return check_resume(op, rules, claims, jobs);
}

Verdict check_skip(const Operation& op, const TransitionRules& rules) {
  if (!has_row(rules, op.phase, Trigger::Skip)) {
    Refusal r = refusal(Action::Skip, RefusalReason::PhaseNotAllowed, op);
    r.phases = phases_allowing(rules, Trigger::Skip);
    return std::unexpected(r);
  }
  // The step before verified every restore; a claim without one (an edited annotation: fold()
  // cannot produce it) would make its backup claim the only copy of its data.
  for (const ClaimPlan& claim : op.claims) {
    if (!claim.restore_verified) {
      Refusal r = refusal(Action::Skip, RefusalReason::RestoreUnverified, op);
      r.subject = claim.claim;
      return std::unexpected(r);
    }
  }
  return {};
}

Verdict check_skip(const AdvanceRequest& request, const Operation& op,
                   const TransitionRules& rules) {
  if (auto named = names(request, Action::Skip, op, /*phase_matters=*/true); !named) return named;
  return check_skip(op, rules);
}

}  // namespace stsresize
