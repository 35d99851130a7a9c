#pragma once
// Operating a resize by hand. Two annotations on the StatefulSet:
//
//   stsresize.dev/mode     written by the user: "auto" (default, absent), "manual" (every
//                          transition after the start waits for approval) or "step" (only the
//                          transition into Recreating, which deletes the source claims, waits)
//   stsresize.dev/advance  written by `stsresize advance` (optimistic, with the StatefulSet's
//                          resourceVersion) and removed by the engine when it consumes it:
//                          {"action":"approve","phase":"BackingUp","operation":"<id>",
//                           "by":"alice","at":"2027-...Z","nonce":"<random hex>"}
//                          action "approve" lets a waiting transition happen; "abort" rolls the
//                          operation back (ScalingBack, then Failed) while every source claim
//                          is intact, whether or not anything waits; "retry" starts a Failed
//                          operation again, as a new operation, when its sources are intact,
//                          or resumes it in the phase it failed in once they were replaced;
//                          "skip" leaves the current step when skip_refusal() allows it
//                          (CleaningUp only: the operation ends Completed, keeping what the
//                          cleanup had not deleted yet).
//
// A transition that waits is recorded in the operation (Operation::awaiting, journaled as
// ApprovalAwaited) and shown in stsresize.dev/awaiting-approval ("BackingUp -> Recreating").
// Error transitions (CriticalError, ScaleBackDone) never wait: they protect the data.
// Pure: no I/O here.
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"
#include "engine/vocabulary.h"

namespace stsresize {

enum class ApprovalMode { Auto, Manual, Step };
std::string_view to_string(ApprovalMode mode);

struct ModeSetting {
  ApprovalMode mode = ApprovalMode::Auto;
  // Set when the annotation holds something else than auto|manual|step: the mode is then
  // Manual (waiting is the safe reading of a typo), and this says why.
  std::string invalid;
};
ModeSetting approval_mode_of(const Json& statefulset);

// Whether `mode` holds the transition from -> to on `event` for approval.
bool needs_approval(ApprovalMode mode, Phase from, Phase to, PhaseEvent event);

struct AdvanceRequest {
  std::string action;  // "approve", "abort", "retry" or "skip"
  Phase phase = Phase::Pending;
  std::string operation;
  std::string by;
  std::string at;
  std::string nonce;
  friend bool operator==(const AdvanceRequest&, const AdvanceRequest&) = default;
};
std::string encode_advance_request(const AdvanceRequest& request);
// Strict: every field present, a string, non-empty; a known phase; no other key.
std::expected<AdvanceRequest, std::string> decode_advance_request(std::string_view text);
// The annotation's text; nullopt when the StatefulSet has none.
std::optional<std::string> advance_request_of(const Json& statefulset);

// Why `request` cannot approve what `op` awaits (empty: it can). A request whose phase or
// operation is not the waiting one is refused rather than applied to something else.
std::string approval_mismatch(const AdvanceRequest& request, const Operation& op);

// The command a person runs to approve: "stsresize advance <ns>/<name> --approve".
std::string approve_command(std::string_view ns, std::string_view name);
// "stsresize advance <ns>/<name> --abort".
std::string abort_command(std::string_view ns, std::string_view name);

// Why `op` cannot be aborted now, and what to do instead (empty: it can). The CLI decides with
// it before writing an abort request and the engine again before acting on one: an abort is
// a scale back onto the source claims, so only a phase before any source claim is deleted
// (Planning, ScalingDown, BackingUp, Recreating while op.sources_intact()) can be aborted.
// `sources_going`: planned source claims that the cluster shows gone or being deleted
// (sources_going() below) — a delete requested in Recreating that has not finished yet is no
// more undoable than a finished one.
std::string abort_refusal(const Operation& op, const std::vector<std::string>& sources_going = {});
// The planned source claims (op.claims, not yet recorded deleted) that are missing from
// `live_claims` (the namespace's PVCs), carry another uid, or have a deletionTimestamp.
std::vector<std::string> sources_going(const Operation& op, const std::vector<Json>& live_claims);
// Why `request` (action "abort") cannot abort `op` (empty: it can): another operation, or
// abort_refusal(op). A request written in an earlier phase that is still abortable is taken:
// the person wanted this operation stopped.
std::string abort_mismatch(const AdvanceRequest& request, const Operation& op,
                           const std::vector<std::string>& sources_going = {});
// The failure an abort leaves in the operation: "aborted by alice in BackingUp".
std::string abort_failure(std::string_view by, Phase phase);
bool is_abort_failure(std::string_view failure);

// --retry: a Failed operation whose source claims are intact (it failed before any delete and
// scaled back, or was aborted) is started again as a NEW operation.
//
// What the StatefulSet asks for now: the trigger of the resize a new operation would start
// (its stsresize.dev/resize request if one is there, else its templates against its claims),
// or why none would start. `storage_classes` nullopt: they could not be read.
std::expected<std::string, std::string> wanted_resize(
    const Json& statefulset, const std::vector<Json>& claims,
    const std::optional<std::vector<Json>>& storage_classes);
// Why `op` cannot be retried (empty: it can), from the namespace's claims and Jobs and
// wanted_resize(): it must be Failed with every planned source claim recorded intact and
// still there with its uid, Bound and not being deleted; no Job or claim of the operation
// left (label stsresize.dev/operation); and a resize wanted. The CLI and the engine both
// decide with it.
std::string retry_refusal(const Operation& op, const std::vector<Json>& claims,
                          const std::vector<Json>& jobs,
                          const std::expected<std::string, std::string>& wanted);
// retry_refusal, and the request must name `op`.
std::string retry_mismatch(const AdvanceRequest& request, const Operation& op,
                           const std::vector<Json>& claims, const std::vector<Json>& jobs,
                           const std::expected<std::string, std::string>& wanted);
// --retry of a Failed operation whose source claims were replaced (their data is in the
// backup claims or already in the new claims): the SAME operation is resumed in place, back in
// the phase it failed in (Operation::failed_in), whose step runs again. Only these phases,
// whose steps are idempotent and never delete a backup before its data is proven restored
// (states/machine.cc has the matching Resume rows):
inline constexpr Phase kResumablePhases[] = {Phase::Restoring, Phase::ScalingUp, Phase::CleaningUp};
// True when --retry of `op` resumes it in place (Failed with a source claim replaced) rather
// than starting a new operation (retry_refusal).
bool resumes_in_place(const Operation& op);
// Why `op` cannot be resumed now, and what to do instead (empty: it can), from the namespace's
// claims and Jobs: Failed after a source claim was replaced, in a phase of kResumablePhases
// recorded in failed_in; every recreated claim there with the uid recorded and not being
// deleted; when it failed in Restoring, the backup claim of every claim not yet restored there,
// created by this operation, Bound and not being deleted; and no Job of the operation still
// running. The CLI and the engine both decide with it.
std::string resume_refusal(const Operation& op, const std::vector<Json>& claims,
                           const std::vector<Json>& jobs);
// resume_refusal, and the request must be a retry naming `op`.
std::string resume_mismatch(const AdvanceRequest& request, const Operation& op,
                            const std::vector<Json>& claims, const std::vector<Json>& jobs);
// The operation's Jobs (label and annotation stsresize.dev/operation) that failed: what made
// the step fail.
// A resume deletes them first, so that the step creates them again instead of reading the
// same failure.
std::vector<Json> failed_jobs(const Operation& op, const std::vector<Json>& jobs);

// The new operation's trigger: "retry of web-1a2b3c4d by alice: data 1Gi -> 2Gi (3 claims)".
std::string retry_trigger(std::string_view old_operation, std::string_view by,
                          std::string_view trigger);
std::string retry_command(std::string_view ns, std::string_view name);

// --skip-step: leave the current step without doing the rest of it. The allow-list: only
// CleaningUp, whose remaining work (deleting this operation's copy Jobs and backup claims) can
// be left undone without losing anything: every claim's restore was verified (Restoring) and
// every pod is Ready on the new claims (ScalingUp), so the backup claims are extra copies, and
// keeping them is the safe direction. The operation then ends Completed, and the objects keep
// their stsresize.dev/operation label. Every other phase is refused, saying why skipping it
// would lose data or leave the resize half done, and what to run instead. Empty: allowed.
// The CLI decides with it before writing a skip request and the engine again before acting.
std::string skip_refusal(const Operation& op);
// Why `request` (action "skip") cannot skip `op`'s current step (empty: it can): another
// operation, another phase than the one the person saw (a skip names the step it skips), or
// skip_refusal(op).
std::string skip_mismatch(const AdvanceRequest& request, const Operation& op);
// The names of `objects` (claims, Jobs) labelled stsresize.dev/operation=<op>.
std::vector<std::string> labelled_with(const Operation& op, const std::vector<Json>& objects);
// What skipping CleaningUp leaves, for the CLI and the StepSkipped Event: "backup claims A, B
// and Jobs C (label stsresize.dev/operation=ID); delete them once no longer needed ...".
std::string skip_keeps(const Operation& op, const std::vector<std::string>& claims,
                       const std::vector<std::string>& jobs);
std::string skip_command(std::string_view ns, std::string_view name);

}  // namespace stsresize
