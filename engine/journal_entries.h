#pragma once
// Event sourcing: everything an operation does is one of these journal entries, appended to
// the journal BEFORE it is acted on (ActionIntended before a side effect, the fact before the
// annotation that records it). Folding an operation's entries reproduces its state
// (engine/fold.h).
//
// Adding an entry type: its struct here and in the Event variant, its row in the entry table
// (journal_entries.cc: name, fields, text) and its fold rule (ValidatingFold::apply_event in
// engine/fold.cc). The compiler asks for the last two once the first is done.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/operation.h"
#include "engine/ports/journal.h"

namespace stsresize {

namespace entries {

struct OperationStarted {
  std::string trigger;  // why, for people: "template data grew to 2Gi"
  std::string sts_uid;
  std::int32_t original_replicas = 0;
  OperationKind kind = OperationKind::Resize;  // not written for a resize
  friend bool operator==(const OperationStarted&, const OperationStarted&) = default;
};
// Explicit request (engine/resize_request.h): the validated template changes, journaled with
// the start of the operation.
struct TemplateUpdateRequested {
  std::vector<TemplateChange> changes;
  friend bool operator==(const TemplateUpdateRequested&, const TemplateUpdateRequested&) = default;
};
// The complete new StatefulSet (what will be created after the delete), journaled before it is
// written to the ConfigMap `config_map` and before the old object is deleted. Changes nothing
// in the operation: it is the journal's copy of the definition.
struct DefinitionSaved {
  std::string config_map;
  Json definition;
  friend bool operator==(const DefinitionSaved&, const DefinitionSaved&) = default;
};
// The StatefulSet was re-created from the definition: the operation follows the new object.
struct StatefulSetRecreated {
  std::string uid;
  friend bool operator==(const StatefulSetRecreated&, const StatefulSetRecreated&) = default;
};
struct Planned {
  Path path = Path::Undecided;
  std::vector<ClaimPlan> claims;
  // A copy path that could not be the rebind path: why (Operation::rebind_unavailable); not
  // written while empty.
  std::string rebind_unavailable;
  // How the replicas are stopped (stsresize.dev/strategy); not written while AllAtOnce.
  Strategy strategy = Strategy::AllAtOnce;
  friend bool operator==(const Planned&, const Planned&) = default;
};
struct PhaseChanged {
  Phase from = Phase::Pending;
  Phase to = Phase::Pending;
  Trigger event = Trigger::StepDone;
  friend bool operator==(const PhaseChanged&, const PhaseChanged&) = default;
};
// Appended before every mutating Kubernetes call: "I am about to do this".
struct ActionIntended {
  Phase phase = Phase::Pending;
  std::string action;  // "create", "delete", "update", "patch", "retain" (a volume's policy)
  std::string target;  // to_string(ObjectRef)
  std::string detail;
  friend bool operator==(const ActionIntended&, const ActionIntended&) = default;
};
// PreCopying: a claim's warm pre-copy is over (engine/copy_job.h, pre_copy_script). `skipped`
// says why nothing useful was copied (the claim is ReadWriteOncePod, the Job failed or ran past
// the job timeout); empty when it ran: `passes` rsync passes moving `bytes` bytes in all.
struct PreCopied {
  std::string claim;
  std::int64_t passes = 0;
  std::int64_t bytes = 0;
  std::string skipped;
  friend bool operator==(const PreCopied&, const PreCopied&) = default;
};
struct BackupVerified {
  std::string claim;
  TreeSummary summary;
  // The StatefulSet's metadata.generation the copy was fenced at (ClaimPlan::backup_generation);
  // 0 in records written before it was recorded, and then not encoded.
  std::int64_t generation = 0;
  friend bool operator==(const BackupVerified&, const BackupVerified&) = default;
};
struct SourceDeleted {
  std::string claim;
  friend bool operator==(const SourceDeleted&, const SourceDeleted&) = default;
};
struct ClaimRecreated {
  std::string claim;
  std::string uid;
  friend bool operator==(const ClaimRecreated&, const ClaimRecreated&) = default;
};
// The rebind path (Recreating): the claim's volume of that role was set to reclaim policy Retain;
// `policy` is its own, put back by ReclaimPolicyRestored. Journaled before the patch.
struct VolumeRetained {
  std::string claim;
  VolumeRole role = VolumeRole::Source;
  std::string volume;
  std::string policy;
  friend bool operator==(const VolumeRetained&, const VolumeRetained&) = default;
};
// The rebind path: the volume's own reclaim policy is back (CleaningUp: the old volume is
// released by it; ScalingBack: both volumes end as they began).
struct ReclaimPolicyRestored {
  std::string claim;
  VolumeRole role = VolumeRole::Source;
  friend bool operator==(const ReclaimPolicyRestored&, const ReclaimPolicyRestored&) = default;
};
// The rebind path's scale-back: the claim was created again on its own volume (a new object,
// this uid): it is the source again, as intact as before the operation.
struct SourceRebound {
  std::string claim;
  std::string uid;
  friend bool operator==(const SourceRebound&, const SourceRebound&) = default;
};
// A recreated claim given up before its restore was verified (Restoring): its restore could not
// run, or it was deleted. It is recreated again (RecreateAgain); it held nothing verified.
struct ClaimDiscarded {
  std::string claim;
  std::string uid;
  std::string reason;
  friend bool operator==(const ClaimDiscarded&, const ClaimDiscarded&) = default;
};
struct RestoreVerified {
  std::string claim;
  TreeSummary summary;
  friend bool operator==(const RestoreVerified&, const RestoreVerified&) = default;
};
// Measuring: what a claim to be shrunk holds (engine/measure_job.h), from its measure Job.
struct ClaimMeasured {
  std::string claim;
  std::string uid;
  std::int64_t files = 0;
  std::int64_t bytes = 0;
  std::int64_t used = 0;
  friend bool operator==(const ClaimMeasured&, const ClaimMeasured&) = default;
};
struct ClaimExpanded {
  std::string claim;
  friend bool operator==(const ClaimExpanded&, const ClaimExpanded&) = default;
};
struct StepFailed {
  Phase phase = Phase::Pending;
  std::string reason;
  bool critical = false;
  friend bool operator==(const StepFailed&, const StepFailed&) = default;
};
// The annotation state the engine continues from, when the journal had no records for the
// operation or disagreed with the annotation (which is authoritative).
struct Resumed {
  Operation snapshot;
  friend bool operator==(const Resumed&, const Resumed&) = default;
};
// The engine holds the transition from -> to until a person approves it (the StatefulSet's
// stsresize.dev/mode, engine/actions/request.h, says which transitions wait). The transition
// must be one the rules allow from the current phase.
struct ApprovalAwaited {
  Phase from = Phase::Pending;
  Phase to = Phase::Pending;
  Trigger event = Trigger::StepDone;
  std::string mode;  // "manual", "step"
  friend bool operator==(const ApprovalAwaited&, const ApprovalAwaited&) = default;
};
// A person's `stsresize advance`, read from the stsresize.dev/advance annotation: who, when,
// for which phase, and whether the engine accepted it. An accepted approval is journaled in
// the same append as the PhaseChanged it allows; an accepted abort in the same append as the
// StepFailed ("aborted by ...") and the PhaseChanged on Abort; an accepted skip in the same
// append as the PhaseChanged on Skip (and OperationFinished); an accepted retry of an
// operation whose sources are intact ends the stream of the Failed operation, whose successor
// names it in its trigger; an accepted retry of one whose sources were replaced is in the same
// append as the PhaseChanged on Resume back to the phase it failed in. It changes nothing
// else.
struct OperatorAction {
  std::string action;            // "approve", "abort", "retry", "skip"
  Phase phase = Phase::Pending;  // the phase the person saw (waiting, for an approval)
  std::string by;                // kubeconfig user or --as
  std::string at;                // RFC 3339, from the request
  std::string nonce;             // the request's, to tell two requests apart
  std::string refused;           // why it was refused; empty: accepted
  friend bool operator==(const OperatorAction&, const OperatorAction&) = default;
};
// A drain's ordinals and their claims (uids as found), journaled before its first cleanup pod.
// With a claim policy (delete_after > 0: Operation::delete_after) no cleanup pod runs; not
// written while 0, so a drain by cleanup pod is recorded as before.
struct DrainPlanned {
  std::vector<OrdinalDrain> ordinals;
  Duration delete_after{0};
  friend bool operator==(const DrainPlanned&, const DrainPlanned&) = default;
};
// The cleanup pod of an ordinal exists: created by this drain, or found (left by an earlier
// drain or by the StatefulSet Scale-Down Controller) and taken over.
struct CleanupPodCreated {
  std::int32_t ordinal = 0;
  std::string uid;
  friend bool operator==(const CleanupPodCreated&, const CleanupPodCreated&) = default;
};
// The cleanup pod of an ordinal ran to Succeeded: its claims may be deleted. In a drain by claim
// policy (no cleanup pod): the ordinal has been gone for delete_after and no pod uses its claims.
struct CleanupSucceeded {
  std::int32_t ordinal = 0;
  friend bool operator==(const CleanupSucceeded&, const CleanupSucceeded&) = default;
};
// An ordinal's drain ended without deleting its claims: the StatefulSet was scaled back up over
// it, or the drain was stopped (failure, abort). Its cleanup pod is deleted.
struct DrainCancelled {
  std::int32_t ordinal = 0;
  std::string reason;
  friend bool operator==(const DrainCancelled&, const DrainCancelled&) = default;
};
// A drained claim was deleted (its cleanup pod Succeeded and is gone).
struct DrainedClaimDeleted {
  std::string claim;
  friend bool operator==(const DrainedClaimDeleted&, const DrainedClaimDeleted&) = default;
};
// A lost-volume recovery's replica: the ordinal, the node that is gone and why, the claims
// pinned to it (uids and volumes as found) and the pod; journaled with the start.
struct ReplicaLost {
  LostReplica lost;
  friend bool operator==(const ReplicaLost&, const ReplicaLost&) = default;
};
// The node of a lost-volume recovery came back before anything was deleted: nothing more is
// done.
struct RecoveryCancelled {
  std::string reason;
  friend bool operator==(const RecoveryCancelled&, const RecoveryCancelled&) = default;
};
// A lost claim was deleted (uid precondition), its volume kept (Retain).
struct LostClaimDeleted {
  std::string claim;
  friend bool operator==(const LostClaimDeleted&, const LostClaimDeleted&) = default;
};
// The lost replica's pod was deleted (or was gone): the StatefulSet controller creates it again
// with new claims, on a live node.
struct LostPodDeleted {
  std::string uid;  // the pod deleted; empty when it was already gone
  friend bool operator==(const LostPodDeleted&, const LostPodDeleted&) = default;
};
// A new claim of the recovered replica, or its new pod, carries stsresize.dev/recovered-from.
struct MarkedRecovered {
  std::string name;  // a lost claim's name, or the replica's pod name
  std::string uid;   // the new object's
  friend bool operator==(const MarkedRecovered&, const MarkedRecovered&) = default;
};
// A recovery's StatefulSet is to be paused for a re-seed (kRecoveryPodTemplateAnnotation),
// journaled before the pause: from here the lost replica's new claims are created by the
// recovery, and the StatefulSet is resumed (created again from its definition) before it ends.
struct ReseedHeld {
  friend bool operator==(const ReseedHeld&, const ReseedHeld&) = default;
};
// The re-seed pod was created on the new claims.
struct ReseedPodCreated {
  std::string pod;
  std::string uid;
  friend bool operator==(const ReseedPodCreated&, const ReseedPodCreated&) = default;
};
// The re-seed ended: succeeded (failure empty), or why not. Either way the replica starts on its
// new claims; a failure is reported (Event ReseedFailed, `status`), its pod kept for its logs.
struct ReseedEnded {
  std::string failure;
  friend bool operator==(const ReseedEnded&, const ReseedEnded&) = default;
};
struct OperationFinished {
  Phase outcome = Phase::Completed;
  friend bool operator==(const OperationFinished&, const OperationFinished&) = default;
};

}  // namespace entries

using Entry = std::variant<
    entries::OperationStarted, entries::TemplateUpdateRequested, entries::DefinitionSaved,
    entries::StatefulSetRecreated, entries::Planned, entries::PhaseChanged, entries::ActionIntended,
    entries::BackupVerified, entries::SourceDeleted, entries::ClaimRecreated,
    entries::RestoreVerified, entries::ClaimExpanded, entries::StepFailed, entries::Resumed,
    entries::OperationFinished, entries::ApprovalAwaited, entries::OperatorAction,
    entries::ClaimDiscarded, entries::DrainPlanned, entries::CleanupPodCreated,
    entries::CleanupSucceeded, entries::DrainCancelled, entries::DrainedClaimDeleted,
    entries::VolumeRetained, entries::ReclaimPolicyRestored, entries::SourceRebound,
    entries::ClaimMeasured, entries::PreCopied, entries::ReplicaLost, entries::RecoveryCancelled,
    entries::LostClaimDeleted, entries::LostPodDeleted, entries::MarkedRecovered,
    entries::ReseedHeld, entries::ReseedPodCreated, entries::ReseedEnded>;

// The journal's vocabulary is the entry table in journal_entries.cc: each type's name, the
// JSON fields of its payload and its one line of text are declared there once, and these
// functions are all derived from it.

// "PhaseChanged", ... — the JournalRecord type.
std::string_view entry_type(const Entry& event);
// The payload. A field that a later version added is left out while it holds its default (as
// BackupVerified.generation while 0), so such a record is the bytes the older version wrote.
Json encode_entry_data(const Entry& event);
// Strict: an unknown type or a payload with missing, mistyped or extra fields is an error.
std::expected<Entry, std::string> decode_entry(std::string_view type, const Json& data);
std::expected<Entry, std::string> decode_entry(const JournalRecord& record);

JournalRecord make_record(const Operation& operation, std::int64_t sequence, TimePoint time,
                          const Entry& event);

// The one line of text people read for an entry: the DETAILS column of `stsresize replay`'s
// timeline (engine/replay.h) and wherever else one entry is shown.
// "ScalingDown → BackingUp (StepDone)", "data-web-0: 1,204 files, 1.2 GiB, sha256 3f2a1b2c…".
std::string describe(const Entry& event);

}  // namespace stsresize
