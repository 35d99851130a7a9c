#pragma once
// The rules of a person's actions on an operation (engine/actions/request.h): one check per
// action, each returning a typed Refusal (engine/actions/explain.h turns it into text). The
// CLI decides with them before it writes a request, the engine again before it acts on one,
// and fold() accepts a journaled action only where they allow it.
//
// Which phases allow which action is read from the state machine (TransitionRules: the table
// in states/machine.cc), never restated here: an abort needs an Abort row out of the phase
// with the sources intact, a skip a Skip row, a resume a Resume row back into the phase the
// operation failed in. What the rules add is what the table cannot see: the claims and Jobs
// in the cluster. Pure: the cluster's objects are passed in.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/actions/request.h"
#include "engine/json.h"
#include "engine/operation.h"
#include "engine/transition_rules.h"

namespace stsresize {

enum class RefusalReason {
  Unreadable,           // the annotation is not a request (detail: why)
  WrongAction,          // the request's action is not the one being decided (request_action)
  OtherOperation,       // the request names another operation (detail: the one it names)
  OtherPhase,           // the request names another phase than the operation's (request_phase)
  Ended,                // the operation has ended: nothing but a retry applies
  PhaseNotAllowed,      // the table has no row for the action out of the operation's phase
  SourcesDeleted,       // abort: source claims deleted (claims) or being deleted (going)
  RestoreUnverified,    // skip: the restore of `subject` was never verified
  NotFailed,            // retry: the operation is not Failed
  SourcesReplaced,      // retry: sources were replaced; it resumes in place (cause: why not)
  SourceGoing,          // retry: `subject` is gone, replaced or being deleted
  SourceNotBound,       // retry: `subject` is in phase `detail`
  LeftOver,             // retry: `subject` (a `kind`) of the failed operation is still there
  NothingWanted,        // retry: no resize is asked for (detail: why)
  SourcesIntact,        // resume: nothing to resume in place
  FailedInUnknown,      // resume: the phase it failed in is not recorded
  NotResumable,         // resume: the table has no Resume row back into failed_in
  RecreatedClaimLost,   // resume: recreated claim `subject`: never made, gone, replaced, deleting
  BackupClaimLost,      // resume: backup claim `subject` of `claim` gone or not this operation's
  BackupClaimDeleting,  // resume: backup claim `subject` of `claim` is being deleted
  BackupClaimNotBound,  // resume: backup claim `subject` in phase `detail`
  JobRunning,           // resume: copy Job `subject` still runs
};

// What a recreated claim lacks, for RecreatedClaimLost.
enum class ClaimLoss { NeverRecreated, Gone, Replaced, Deleting };

struct Refusal {
  Action action = Action::Approve;
  RefusalReason reason = RefusalReason::Unreadable;
  std::string subject;  // the claim, Job or object the reason is about
  std::string claim;    // the claim a backup belongs to
  std::string kind;     // "job", "pvc" (LeftOver)
  std::string detail;   // see RefusalReason
  std::optional<Phase> request_phase;
  std::optional<Action> request_action;
  std::vector<std::string> deleted;  // SourcesDeleted: recorded deleted
  std::vector<std::string> going;    // SourcesDeleted: the cluster shows them going
  ClaimLoss loss = ClaimLoss::Gone;  // RecreatedClaimLost
  std::string uid;                   // RecreatedClaimLost (Replaced): the live uid
  bool restore_verified = false;     // RecreatedClaimLost: its data is no longer in the backup
  std::vector<Refusal> cause;        // SourcesReplaced: why the resume is refused, if it is
  Phase phase = Phase::Pending;      // the operation's phase when decided
  std::vector<Phase> phases;         // PhaseNotAllowed, NotResumable: the phases that allow it
  friend bool operator==(const Refusal&, const Refusal&) = default;
};

using Verdict = std::expected<void, Refusal>;

// The phases out of which the table has a row on `event` (any guard outcome).
std::vector<Phase> phases_allowing(const TransitionRules& rules, Trigger event);
// The phases a Failed operation can be resumed in (Resume rows out of Failed).
std::vector<Phase> resumable_phases(const TransitionRules& rules);

// Approve: the request names the operation and the phase whose transition waits.
Verdict check_approve(const AdvanceRequest& request, const Operation& op);

// Abort: an abort is a scale back onto the source claims, so it needs the table's Abort row out
// of op's phase with the sources intact. `sources_going`: planned source claims the cluster
// shows gone or being deleted (sources_going(), engine/actions/cluster_view.h): a delete
// requested that has not finished yet is no more undoable than a finished one.
Verdict check_abort(const Operation& op, const TransitionRules& rules,
                    const std::vector<std::string>& sources_going = {});
// check_abort, for a request: it must name op (one written in an earlier phase that is still
// abortable is taken: the person wanted this operation stopped).
Verdict check_abort(const AdvanceRequest& request, const Operation& op,
                    const TransitionRules& rules,
                    const std::vector<std::string>& sources_going = {});

// Retry of an operation whose sources are intact: starts a new operation. From the namespace's
// claims and Jobs and wanted_resize(): Failed with every planned source claim recorded intact
// and still there with its uid, Bound and not being deleted; no Job or claim of the operation
// left (label stsresize.dev/operation); and a resize wanted.
Verdict check_retry(const Operation& op, const TransitionRules& rules,
                    const std::vector<Json>& claims, const std::vector<Json>& jobs,
                    const std::expected<std::string, std::string>& wanted);
Verdict check_retry(const AdvanceRequest& request, const Operation& op,
                    const TransitionRules& rules, const std::vector<Json>& claims,
                    const std::vector<Json>& jobs,
                    const std::expected<std::string, std::string>& wanted);

// True when a retry of `op` resumes it in place (Failed with a source claim replaced) rather
// than starting a new operation.
bool resumes_in_place(const Operation& op);
// Resume (a retry once sources were replaced): the same operation goes back to the phase it
// failed in, whose step runs again. Needs the table's Resume row into op.failed_in; every
// recreated claim there with the uid recorded and not being deleted; when it failed in
// Restoring, the backup claim of every claim not yet restored there, created by this
// operation, Bound and not being deleted; and no Job of the operation still running.
Verdict check_resume(const Operation& op, const TransitionRules& rules,
                     const std::vector<Json>& claims, const std::vector<Json>& jobs);
Verdict check_resume(const AdvanceRequest& request, const Operation& op,
                     const TransitionRules& rules, const std::vector<Json>& claims,
                     const std::vector<Json>& jobs);

// Skip: the table's Skip row out of op's phase (CleaningUp: what is left, deleting this
// operation's Jobs and backup claims, can be left undone without losing anything), and every
// claim's restore verified (a claim without one would make its backup the only copy).
Verdict check_skip(const Operation& op, const TransitionRules& rules);
// check_skip, for a request: it must name op and the phase it skips.
Verdict check_skip(const AdvanceRequest& request, const Operation& op,
                   const TransitionRules& rules);

}  // namespace stsresize
