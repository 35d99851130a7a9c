#include "engine/actions/explain.h"

#include <algorithm>
#include <cctype>

#include "engine/naming.h"
#include "engine/resize_request.h"
#include "engine/vocabulary.h"

namespace stsresize {

namespace {

std::string lowercase(std::string_view text) {
  std::string out{text};
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// "Restoring, ScalingUp or CleaningUp"
std::string one_of(const std::vector<Phase>& phases) {
  std::string out;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    if (i > 0) out += i + 1 == phases.size() ? " or " : ", ";
    out += to_string(phases[i]);
  }
  return out;
}

std::string quoted_command(Action action, const Operation& op) {
  return "`" + advance_command_line(action, op.ns, op.statefulset) + "`";
}

std::string phase_name(Phase phase) {
  return std::string{to_string(phase)};
}

// A request that is not for this decision: another verb, operation or phase.
std::string explain_request(const Refusal& r, const Operation& op) {
  const std::string asked{r.request_action ? to_string(*r.request_action) : ""};
  switch (r.reason) {
    case RefusalReason::WrongAction:
      return r.action == Action::Approve
                 ? "action \"" + asked + "\" does not approve anything (an approval says approve)"
                 : "action \"" + asked + "\" is not " + std::string{to_string(r.action)};
    case RefusalReason::OtherOperation:
      switch (r.action) {
        case Action::Approve:
          return "it approves operation " + r.detail + ", but the operation in progress is " +
                 op.id;
        case Action::Abort:
          return "it aborts operation " + r.detail + ", but the operation in progress is " + op.id;
        case Action::Retry:
          return "it retries operation " + r.detail + ", but the StatefulSet's operation is " +
                 op.id;
        case Action::Skip:
          return "it skips a step of operation " + r.detail +
                 ", but the StatefulSet's operation is " + op.id;
      }
      break;
    case RefusalReason::OtherPhase:
      if (r.action == Action::Approve) {
        return "it approves leaving phase " + phase_name(r.request_phase.value_or(Phase::Pending)) +
               ", but the operation is in phase " + phase_name(r.phase);
      }
      return "it skips " + phase_name(r.request_phase.value_or(Phase::Pending)) +
             ", but operation " + op.id + " is now in " + phase_name(r.phase) +
             " (a skip names the step it skips)";
    default:
      break;
  }
  return {};
}

std::string explain_abort(const Refusal& r, const Operation& op) {
  const std::string which = "operation " + op.id;
  const std::string phase = phase_name(r.phase);
  const std::string watch = watch_hint(op.ns, op.statefulset);
  const std::string approve = advance_command_line(Action::Approve, op.ns, op.statefulset);
  // A resize's sources have backups to name; a drain's or a recovery's deleted claims are said
  // by its phase below.
  if (r.reason == RefusalReason::SourcesDeleted && op.kind == OperationKind::Resize) {
    std::vector<std::string> backups;
    for (const ClaimPlan& claim : op.claims) {
      const bool listed = std::ranges::find(r.deleted, claim.claim) != r.deleted.end() ||
                          std::ranges::find(r.going, claim.claim) != r.going.end();
      if (listed) backups.push_back(naming::backup_claim(claim.claim));
    }
    auto plural = [](const std::vector<std::string>& names) {
      return names.size() == 1 ? " " : "s ";
    };
    std::string what = which + " is in " + phase + " and";
    if (!r.deleted.empty()) {
      what += std::string{" has deleted source claim"} + plural(r.deleted) + joined(r.deleted);
    }
    if (!r.going.empty()) {
      what += std::string{r.deleted.empty() ? "" : " and"} + " is deleting source claim" +
              plural(r.going) + joined(r.going) + " (a claim being deleted cannot be kept)";
    }
    // A claim being deleted may still be mounted by a pod that started after the last fence
    // check (the operation's warning then names it): its newest writes are not in the backup.
    const std::string held =
        r.going.empty()
            ? ""
            : "; if a pod still mounts " + joined(r.going) +
                  ", what it wrote since the backup is only there and goes with the claim "
                  "when the pod stops: keep it first, as the operation's warning says "
                  "(`stsresize status`)";
    const bool one = backups.size() == 1;
    return what + (one ? ": its backup " : ": their backups ") + joined(backups) +
           (one ? " is the copy" : " are the copies") +
           " the resize restores, so scaling back is no longer possible and an abort would "
           "have to restore " +
           (one ? "it" : "them") + ", which is what the resize itself does next" + held +
           ". Let it finish (if it waits, `" + approve + "`; watch it: " + watch + ")";
  }
  switch (r.phase) {
    case Phase::Restoring:
    case Phase::ScalingUp:
    case Phase::CleaningUp:
    case Phase::StartingReplica:
      return which + " is in " + phase +
             ": the source claims were replaced and the data is already in the new claims, so "
             "there is nothing to roll back to. Let it finish (if it waits, `" +
             approve + "`; watch it: " + watch + ")" +
             (r.phase == Phase::CleaningUp
                  ? "; if it cannot delete its copy Jobs or backup claims, " +
                        quoted_command(Action::Skip, op) + " ends it keeping them"
                  : "");
    case Phase::Expanding:
      return which +
             " is in Expanding: a claim is never shrunk, so an expansion cannot be undone; it "
             "finishes by itself (watch it: " +
             watch + ")";
    case Phase::UpdatingTemplate:
      return which +
             " is in UpdatingTemplate, which re-creates the StatefulSet object from its saved "
             "definition; stopping in the middle could leave it half re-created. Let the "
             "template update finish (if it waits, `" +
             approve + "`), then run " + quoted_command(Action::Abort, op) +
             " while it is in Planning, ScalingDown or BackingUp";
    case Phase::Pending:
      return which + " has not started yet; nothing to abort";
    case Phase::Measuring:
      break;  // its Abort row exists
    case Phase::Draining:
      return which + " is in Draining but a drained claim was deleted, which cannot be undone";
    case Phase::DeletingClaims:
      return which +
             " is in DeletingClaims: every cleanup pod it waited for Succeeded, so the data was "
             "moved off those claims and they are being deleted; it finishes by itself (watch "
             "it: " +
             watch + ")";
    case Phase::StoppingDrain:
      return which +
             " is already in StoppingDrain: it is deleting its cleanup pods, keeps every claim "
             "and ends in Failed by itself (watch it: " +
             watch + ")";
    case Phase::AwaitingNode:
      break;  // its Abort row exists
    case Phase::ReplacingVolume:
      return which +
             " is in ReplacingVolume and has deleted a claim whose volume was lost with its "
             "node, which cannot be undone (the volume is kept, Retain); it finishes by itself "
             "(watch it: " +
             watch + ")";
    case Phase::Reseeding:
      return which +
             " is in Reseeding: the lost claims and pod were deleted, which cannot be undone; "
             "the re-seed pod runs on the new claims while the StatefulSet is paused, which is "
             "then resumed. To give up the re-seed, delete its pod (the replica then starts on "
             "its new claims as they are); it finishes by itself (watch it: " +
             watch + ")";
    case Phase::MarkingReplica:
      return which +
             " is in MarkingReplica: the lost claims and pod were deleted and the StatefulSet "
             "controller creates them afresh; it finishes by itself (watch it: " +
             watch + ")";
    case Phase::ScalingBack:
      if (op.kind == OperationKind::Recovery) {
        return which +
               " is already in ScalingBack: it resumes the StatefulSet it paused for a re-seed "
               "and ends in Failed by itself (watch it: " +
               watch + ")";
      }
      return which +
             " is already in ScalingBack: it is rolling back onto the source claims and ends in "
             "Failed by itself (watch it: " +
             watch + ")";
    case Phase::Completed:
    case Phase::Failed:
      return which + " already ended in " + phase +
             (op.failure.empty() ? "" : " (" + op.failure + ")") + "; there is nothing to abort";
    case Phase::Planning:
    case Phase::PreCopying:
    case Phase::ScalingDown:
    case Phase::StoppingReplica:
    case Phase::BackingUp:
    case Phase::Recreating:
      // Their Abort rows exist (check_abort refuses them only with SourcesDeleted); a table
      // changed without this text says so rather than a wrong reason. No default: a new phase
      // must say here why it cannot be aborted.
      break;
  }
  return which + " is in " + phase + ", out of which the state machine has no abort";
}

std::string explain_skip(const Refusal& r, const Operation& op) {
  const std::string which = "operation " + op.id + " is in " + phase_name(r.phase);
  const std::string ns = "kubectl -n " + op.ns;
  const std::string abort = quoted_command(Action::Abort, op);
  const std::string approve = quoted_command(Action::Approve, op);
  const std::string watch = watch_hint(op.ns, op.statefulset);
  const std::string backups = backups_hint(op);
  if (r.reason == RefusalReason::RestoreUnverified) {
    return which + " but the restore of " + r.subject +
           " was never verified, so its backup claim " + naming::backup_claim(r.subject) +
           " may hold the only copy of its data: not skipping. Compare the claims' data "
           "before anything else (" +
           backups + ")";
  }
  const std::string only =
      r.phases.empty() ? " (no step of a " + lowercase(to_string(op.kind)) + " can be skipped)"
                       : " (only " + one_of(r.phases) + " can be skipped)";
  switch (r.phase) {
    case Phase::Pending:
      return "operation " + op.id + " has not started yet; there is no step to skip";
    case Phase::UpdatingTemplate:
      return which +
             ", which re-creates the StatefulSet object from its saved definition with the new "
             "templates: skipping it would leave the old templates (nothing to resize) or the "
             "StatefulSet deleted and not created again" +
             only + ". Let it finish (if it waits, " + approve + "); to stop the resize, run " +
             abort + " once it is in Planning";
    case Phase::Measuring:
      return which +
             ", which measures what each claim to be shrunk holds while the application runs: "
             "skipping it would shrink claims without knowing that their data fits" +
             only + ". To stop the resize instead, run " + abort;
    case Phase::Planning:
      return which +
             ", which only reads the cluster and decides which claims to resize and how: "
             "skipping it would leave no plan to carry out" +
             only + ". To stop the resize instead, run " + abort;
    case Phase::PreCopying:
      return which +
             ", which copies each claim while its replica still runs so that the copy with the "
             "replicas stopped has only the changes left to do: skipping it would leave its Jobs "
             "writing into the backup claims while that copy runs" +
             only +
             ". It ends by itself once each claim's pre-copy ended, however it ended; to copy "
             "only with the replicas stopped from the next resize on, annotate the StatefulSet " +
             std::string{kPreCopyAnnotation} + "=false. To stop the resize instead, run " + abort;
    case Phase::ScalingDown:
    case Phase::StoppingReplica:
      return which +
             ": skipping it would back up the volumes while their pods still write to them, so "
             "whatever they write after the copy would be lost with the source claims" +
             only + ". To stop the resize instead, run " + abort;
    case Phase::StartingReplica:
      return which +
             ": the StatefulSet is being created again and the replica started on its restored "
             "claims; the rolling resize goes on to the next ordinal only once it is Ready" +
             only + ". Let it finish (watch it: " + watch + ")";
    case Phase::BackingUp:
      return which +
             ": skipping it would delete the source claims without a verified backup, losing "
             "their data" +
             only + ". To stop the resize instead, run " + abort +
             " (it deletes the backups made so far and scales back onto the untouched source "
             "claims)";
    case Phase::Recreating:
      return which +
             ": skipping it would leave source claims deleted (or about to be) and not created "
             "again, with nothing for Restoring to copy into" +
             only + ". While no source claim is deleted yet, " + abort +
             " rolls back; after that the data is only in the backup claims (" + backups +
             ") and the resize itself restores it: let it finish (watch it: " + watch + ")";
    case Phase::Restoring:
      return which +
             ": the new claims would be empty or half copied, the pods would start without "
             "their data, and CleaningUp would then delete the backup claims that hold it" +
             only +
             ". Let it finish; a restore Job that fails ends the operation in Failed "
             "with the backup claims kept (" +
             backups + "; watch it: " + watch + ")";
    case Phase::ScalingUp:
      return which +
             ": the backups are removed only after the pods are Ready on the new claims, the "
             "proof that the application works with its restored data; skipping would remove "
             "them without that proof" +
             only + ". Look at the pods (" + ns + " get pods; " + ns +
             " describe pod POD): once every one is Ready the resize continues by itself";
    case Phase::Expanding:
      return which +
             ": skipping it would end the operation Completed with claims that did not reach "
             "the size asked for, and an expansion cannot be undone" +
             only + ". It waits for the storage driver: look at the claims (" + ns +
             " describe pvc CLAIM: conditions and events)";
    case Phase::Draining:
      return which +
             ": skipping it would delete claims whose cleanup pod has not Succeeded, losing "
             "whatever was not moved off them" +
             only + ". To stop the drain instead, keeping every claim, run " + abort;
    case Phase::DeletingClaims:
      return which + ": it deletes the claims whose cleanup pod Succeeded, the drain's last step" +
             only + ". It ends by itself (watch it: " + watch + ")";
    case Phase::StoppingDrain:
      return which +
             ": it is deleting the drain's cleanup pods so that no pod holds a replica's name or "
             "its claims" +
             only + ". It ends in Failed by itself (watch it: " + watch + ")";
    case Phase::AwaitingNode:
      return which +
             ": it waits for the lost node to come back during the grace period "
             "(stsresize.dev/lost-volume-grace)" +
             only + ". To stop the recovery, keeping every claim, run " + abort;
    case Phase::ReplacingVolume:
    case Phase::Reseeding:
    case Phase::MarkingReplica:
      return which + ": it gives the lost replica new claims" + only +
             ". It ends by itself (watch it: " + watch + ")";
    case Phase::ScalingBack:
      if (op.kind == OperationKind::Recovery) {
        return which + ": it resumes the StatefulSet it paused for a re-seed" + only +
               ". It ends in Failed by itself (watch it: " + watch + ")";
      }
      return which +
             ": it is scaling back onto the intact source claims and removing this operation's "
             "Jobs and backup claims; skipping it could leave the StatefulSet without its "
             "replicas" +
             only + ". It ends in Failed by itself (watch it: " + watch + ")";
    case Phase::Completed:
      return "operation " + op.id + " already ended in Completed; there is no step to skip";
    case Phase::Failed:
      return "operation " + op.id + " already ended in Failed" +
             (op.failure.empty() ? "" : " (" + op.failure + ")") + "; there is no step to skip" +
             (op.sources_intact() ? " (once the cause is fixed, " +
                                        quoted_command(Action::Retry, op) + " starts it again)"
                                  : "");
    case Phase::CleaningUp:
      // Its Skip row exists; see explain_abort. No default: a new phase says why here.
      break;
  }
  return which + only;
}

std::string explain_retry(const Refusal& r, const Operation& op) {
  const std::string which = "operation " + op.id;
  const std::string retry = quoted_command(Action::Retry, op);
  const std::string backups = backups_hint(op);
  const std::string by_hand =
      "; the data of every claim not yet restored is in its backup claim (" + backups +
      "): copy it back from there by hand";
  const std::string resume =
      "resuming " + (op.failed_in ? phase_name(*op.failed_in) : std::string{"?"});
  switch (r.reason) {
    case RefusalReason::NotFailed:
      return which + " is in phase " + phase_name(r.phase) +
             ", not Failed: there is nothing to retry (to stop it: " +
             quoted_command(Action::Abort, op) + ")";
    case RefusalReason::SourcesReplaced:
      return which + " failed (" + op.failure +
             ") after source claims were replaced: a retry resumes it in place instead of "
             "starting a new operation (" +
             (r.cause.empty() ? std::string{} : explain(r.cause.front(), op)) + ")";
    case RefusalReason::SourceGoing:
      return which + ": source claim " + r.subject +
             " is gone, replaced or being deleted since the operation was planned; a retry "
             "would not start from the data it protected. Check the claims (kubectl -n " +
             op.ns + " get pvc), then start a resize afresh";
    case RefusalReason::SourceNotBound:
      return which + ": source claim " + r.subject + " is " + r.detail +
             ", not Bound; run the retry again once it is (kubectl -n " + op.ns + " get pvc " +
             r.subject + " -w)";
    case RefusalReason::LeftOver:
      return which + ": " + r.kind + " " + r.subject +
             " of the failed operation is still there (the scale-back leaves none once it is "
             "done); with the source claims intact it holds no only copy: delete it (kubectl -n " +
             op.ns + " delete " + r.kind + " " + r.subject + "), then run " + retry + " again";
    case RefusalReason::NothingWanted:
      return which + ": on StatefulSet " + op.ns + "/" + op.statefulset + ", " + r.detail +
             "; a retry would start nothing. Change the templates or annotate " +
             std::string{kResizeRequestAnnotation} + ", then retry";
    case RefusalReason::SourcesIntact:
      return which +
             " failed with every source claim intact: a retry starts it again as a new "
             "operation, there is nothing to resume in place";
    case RefusalReason::FailedInUnknown:
      return which + " failed (" + op.failure +
             ") after source claims were replaced, but its state does not record the phase it "
             "failed in (written by an older stsresize), so it cannot be resumed in place" +
             by_hand;
    case RefusalReason::NotResumable:
      return which + " failed in " + phase_name(op.failed_in.value_or(Phase::Pending)) + " (" +
             op.failure + ") after source claims were replaced; only a failure in " +
             one_of(r.phases) + " is resumed in place" + by_hand;
    case RefusalReason::RecreatedClaimLost: {
      const ClaimPlan* claim = op.find_claim(r.subject);
      const std::string recorded = claim ? claim->recreated_uid : "";
      const std::string what = r.loss == ClaimLoss::NeverRecreated ? "was never recreated"
                               : r.loss == ClaimLoss::Gone         ? "is gone"
                               : r.loss == ClaimLoss::Replaced
                                   ? "was replaced (uid " + r.uid + ", recorded " + recorded + ")"
                                   : "is being deleted";
      return which + ": recreated claim " + r.subject + " " + what + "; " + resume +
             " would not restore into the claim the operation made. Nothing was changed" +
             (r.restore_verified ? ""
                                 : "; the data of " + r.subject + " is in backup claim " +
                                       naming::backup_claim(r.subject) + " (" + backups + ")");
    }
    case RefusalReason::BackupClaimLost:
      return which + ": backup claim " + r.subject + " of " + r.claim +
             (r.detail == "gone" ? " is gone" : " was not created by this operation") + "; " +
             resume +
             " would have nothing verified to restore from. Nothing was changed: find the data "
             "of " +
             r.claim + " (kubectl get pv) before anything else";
    case RefusalReason::BackupClaimDeleting:
      return which + ": backup claim " + r.subject + " of " + r.claim +
             " is being deleted by someone else; it holds the only copy of that data. Remove "
             "what deletes it (kubectl -n " +
             op.ns + " get pvc " + r.subject + " -o yaml), then run " + retry + " again";
    case RefusalReason::BackupClaimNotBound:
      return which + ": backup claim " + r.subject + " is " + r.detail + ", not Bound; run " +
             retry + " again once it is (kubectl -n " + op.ns + " get pvc " + r.subject + " -w)";
    case RefusalReason::JobRunning:
      return which + ": copy Job " + r.subject + " of the operation is still running; " + resume +
             " would start a second copy into the same claim. Wait for it to end (kubectl -n " +
             op.ns + " get job " + r.subject + " -w) or delete it (kubectl -n " + op.ns +
             " delete job " + r.subject + "), then run " + retry + " again";
    default:
      return {};
  }
}

}  // namespace

std::string explain(const Refusal& r, const Operation& op) {
  switch (r.reason) {
    case RefusalReason::Unreadable:
      return r.detail;
    case RefusalReason::WrongAction:
    case RefusalReason::OtherOperation:
    case RefusalReason::OtherPhase:
      return explain_request(r, op);
    case RefusalReason::Ended:
      return "operation " + op.id + " already ended in " + phase_name(r.phase);
    default:
      break;
  }
  switch (r.action) {
    case Action::Approve:
      return "operation " + op.id + " awaits no approval in " + phase_name(r.phase);
    case Action::Abort:
      return explain_abort(r, op);
    case Action::Skip:
      return explain_skip(r, op);
    case Action::Retry:
      return explain_retry(r, op);
  }
  return "refused";
}

std::string advance_command_line(Action action, std::string_view ns, std::string_view name) {
  std::string_view flag = "--approve";
  switch (action) {
    case Action::Approve:
      flag = "--approve";
      break;
    case Action::Abort:
      flag = "--abort";
      break;
    case Action::Retry:
      flag = "--retry";
      break;
    case Action::Skip:
      flag = "--skip-step";
      break;
  }
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " " + std::string{flag};
}

std::string watch_hint(std::string_view ns, std::string_view name) {
  return "kubectl -n " + std::string{ns} + " get sts " + std::string{name} + " -L " +
         std::string{kPhaseAnnotation} + " -L " + std::string{kAwaitingApprovalAnnotation} + " -w";
}

std::string backups_hint(const Operation& op) {
  return "kubectl -n " + op.ns + " get pvc -l " + std::string{kOperationLabel} + "=" +
         naming::label_value(op.id) + "," + std::string{kPurposeLabel} + "=" +
         std::string{kBackupPurpose};
}

std::string kept_volumes_hint(const Operation& op) {
  std::string hint;
  for (const ClaimPlan& claim : op.claims) {
    if (!claim.source_deleted || claim.restore_verified) continue;
    hint += (hint.empty() ? "" : "; ") + claim.claim + ": its own volume " + claim.source_volume;
    if (!claim.copy_volume.empty()) hint += ", its verified copy " + claim.copy_volume;
  }
  return hint;
}

std::string abort_failure(std::string_view by, Phase phase) {
  return "aborted by " + std::string{by} + " in " + std::string{to_string(phase)};
}

std::string retry_trigger(std::string_view old_operation, std::string_view by,
                          std::string_view trigger) {
  return "retry of " + std::string{old_operation} + " by " + std::string{by} + ": " +
         std::string{trigger};
}

std::string skip_keeps(const Operation& op, const std::vector<std::string>& claims,
                       const std::vector<std::string>& jobs) {
  const std::string label = std::string{kOperationLabel} + "=" + naming::label_value(op.id);
  if (claims.empty() && jobs.empty()) return "nothing (no claim or Job labelled " + label + ")";
  std::string kept;
  if (!claims.empty()) kept += (claims.size() == 1 ? "claim " : "claims ") + joined(claims);
  if (!jobs.empty()) {
    kept += (kept.empty() ? "" : " and ") + std::string{jobs.size() == 1 ? "Job " : "Jobs "} +
            joined(jobs);
  }
  return kept + " (label " + label +
         "); they are extra copies, delete them once no longer needed and before the next "
         "resize of this StatefulSet, whose backups take the same names: kubectl -n " +
         op.ns + " delete pvc,job -l " + label;
}

}  // namespace stsresize
