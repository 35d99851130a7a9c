#pragma once
// The model of one operation (a resize or a scale-down drain): what the engine is doing to one
// StatefulSet, and how far it got. The authoritative copy lives in the StatefulSet's annotations
// (engine/annotations.h); the journal (engine/fold.h) can rebuild it by folding the operation's
// events.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/copy_job.h"
#include "engine/measure_job.h"
#include "engine/quantity.h"
#include "engine/time.h"

namespace stsresize {

enum class Phase {
  Pending,
  // Before a shrink: what each claim to be shrunk holds, measured while the application runs.
  Measuring,
  UpdatingTemplate,
  Planning,
  // The copy paths: each claim copied while its replica still runs (a warm pre-copy), so that
  // BackingUp, with the replicas stopped, copies only what changed since.
  PreCopying,
  ScalingDown,
  BackingUp,
  Recreating,
  Restoring,
  ScalingUp,
  CleaningUp,
  Expanding,
  ScalingBack,
  // The rolling strategy's, around the copy phases of one ordinal at a time: the StatefulSet
  // paused (held by a finalizer while being deleted, so its controller creates no pod) and the
  // ordinal's replica evicted; then the StatefulSet created again and that replica Ready.
  StoppingReplica,
  StartingReplica,
  // The scale-down drain's (states/drain_machine.cc).
  Draining,
  DeletingClaims,
  StoppingDrain,
  // The lost-volume recovery's: the grace period, in which the node may come back; the lost
  // volume kept (Retain) and its claim and stuck pod deleted; with a re-seed pod template, the
  // new claims created and the re-seed pod run on them while the StatefulSet is paused; the new
  // claim and pod marked.
  AwaitingNode,
  ReplacingVolume,
  Reseeding,
  MarkingReplica,
  Completed,
  Failed,
};
inline constexpr Phase kAllPhases[] = {
    Phase::Pending,        Phase::Measuring,       Phase::UpdatingTemplate, Phase::Planning,
    Phase::PreCopying,     Phase::ScalingDown,     Phase::BackingUp,        Phase::Recreating,
    Phase::Restoring,      Phase::ScalingUp,       Phase::CleaningUp,       Phase::Expanding,
    Phase::ScalingBack,    Phase::StoppingReplica, Phase::StartingReplica,  Phase::Draining,
    Phase::DeletingClaims, Phase::StoppingDrain,   Phase::AwaitingNode,     Phase::ReplacingVolume,
    Phase::Reseeding,      Phase::MarkingReplica,  Phase::Completed,        Phase::Failed,
};
std::string_view to_string(Phase phase);
std::optional<Phase> parse_phase(std::string_view text);
bool is_terminal(Phase phase);

// What makes the machine move from one phase to the next (states/machine.h has the table).
enum class Trigger {
  // An operation that shrinks a claim begins by measuring what the claims hold; once they fit,
  // StartTemplateUpdate (an explicit request) or StartPlanning (the template trigger) follows.
  StartMeasuring,
  StartPlanning,
  StartTemplateUpdate,
  PlannedCopy,
  // The copy path with a warm pre-copy first (Phase::PreCopying); PlannedCopy goes straight to
  // ScalingDown (the StatefulSet says stsresize.dev/pre-copy: "false").
  PlannedPreCopy,
  PlannedExpand,
  StepDone,
  CriticalError,
  ScaleBackDone,
  // A person's `stsresize advance --abort`: roll back while every source claim is intact.
  Abort,
  // A person's `stsresize advance --skip-step`: leave a step that is safe to skip
  // (the table has its rows; check_skip(), engine/actions/rules.h, adds the claims).
  Skip,
  // A person's `stsresize advance --retry` of an operation that failed after its source claims
  // were replaced: Failed back into the phase it failed in (Operation::failed_in), whose step
  // runs again. The only way out of Failed; nothing automatic fires it.
  Resume,
  // Recreating found a source claim still intact whose verified backup may miss writes: the
  // StatefulSet's spec changed since that backup was verified (someone scaled it up and down,
  // or it was re-fenced after a scale-up). Back to BackingUp, which copies those claims again.
  BackupStale,
  // Restoring gave up a recreated claim whose restore could not run (bound where the backup
  // cannot be mounted, after a pod of the application used it first) or that someone deleted:
  // back to Recreating, which creates it again. Nothing on it was verified, so nothing is lost.
  RecreateAgain,
  // A scale-down drain starts: cleanup pods for the ordinals a scale-down left behind.
  StartDrain,
  // The rolling strategy goes on with one ordinal: from Planning or PreCopying to its first
  // StoppingReplica, from Restoring to StartingReplica, from CleaningUp to the next ordinal's
  // StoppingReplica. (StepDone from StoppingReplica, StartingReplica and the last CleaningUp.)
  RollOn,
  // A lost-volume recovery starts: a replica's volume is pinned to a node that is gone.
  StartRecovery,
  // The node of a lost-volume recovery is back (registered again, or its out-of-service taint
  // removed) before any claim was deleted: nothing more is done, the data may still be there.
  NodeReturned,
  // The lost claims and pod of a recovery are deleted, and the StatefulSet is paused for a
  // re-seed (kRecoveryPodTemplateAnnotation): ReplacingVolume goes on to Reseeding rather than
  // MarkingReplica.
  Reseed,
};
inline constexpr Trigger kAllTriggers[] = {
    Trigger::StartMeasuring, Trigger::StartPlanning,  Trigger::StartTemplateUpdate,
    Trigger::PlannedCopy,    Trigger::PlannedPreCopy, Trigger::PlannedExpand,
    Trigger::StepDone,       Trigger::CriticalError,  Trigger::ScaleBackDone,
    Trigger::Abort,          Trigger::Skip,           Trigger::Resume,
    Trigger::BackupStale,    Trigger::RecreateAgain,  Trigger::StartDrain,
    Trigger::RollOn,         Trigger::StartRecovery,  Trigger::NodeReturned,
    Trigger::Reseed,
};
std::string_view to_string(Trigger event);
std::optional<Trigger> parse_trigger(std::string_view text);

// What an operation does. Each kind has its own table (states/machine.h: rules_for) over the one
// Phase vocabulary; Pending, Completed and Failed are every kind's.
//   Resize  change the volumeClaimTemplates' size or class and the claims with them
//   Drain   run a cleanup pod on the claims a scale-down left without their replica, then
//           delete them (the StatefulSet Scale-Down Controller's job)
//   Recovery  give a replica whose volume died with its node (pinned to a node that is gone) a
//           new, empty claim on a live node, keeping the lost volume (stsresize.dev/
//           lost-volume-recovery)
enum class OperationKind { Resize, Drain, Recovery };
inline constexpr OperationKind kAllKinds[] = {OperationKind::Resize, OperationKind::Drain,
                                              OperationKind::Recovery};
std::string_view to_string(OperationKind kind);
std::optional<OperationKind> parse_kind(std::string_view text);

// Expand: the StorageClass allows expansion and every change is a pure grow; no downtime.
// Copy: the two-copy path: scale down, back up, recreate, restore (copy back), scale up.
// Rebind: the same phases with one copy: BackingUp copies each claim into a claim of the target
//   size and class, Recreating gives that copy's volume the claim's name (both volumes kept
//   with reclaim policy Retain), Restoring checks each claim is bound to its copy, CleaningUp
//   puts the volumes' reclaim policies back, which releases the old volume.
enum class Path { Undecided, Expand, Copy, Rebind };
std::string_view to_string(Path path);
std::optional<Path> parse_path(std::string_view text);

// How the copy paths stop the replicas (stsresize.dev/strategy, read in Planning):
//   AllAtOnce  every replica stopped for the copies (ScalingDown ... ScalingUp)
//   Rolling    one ordinal at a time, highest first, the others serving: StoppingReplica,
//              BackingUp, Recreating, Restoring, StartingReplica, CleaningUp of its claims only
enum class Strategy { AllAtOnce, Rolling };
std::string_view to_string(Strategy strategy);  // "all-at-once", "rolling"
std::optional<Strategy> parse_strategy(std::string_view text);

// The two volumes of a claim on the rebind path: its own (Source) and the backup claim's, which
// becomes the claim's (Copy).
enum class VolumeRole { Source, Copy };
std::string_view to_string(VolumeRole role);
std::optional<VolumeRole> parse_volume_role(std::string_view text);

// One PVC of the StatefulSet that the operation resizes, with the progress made on it.
struct ClaimPlan {
  std::string claim;          // "<template>-<sts>-<ordinal>"
  std::string template_name;  // the volumeClaimTemplate it belongs to
  int ordinal = 0;
  Quantity from_size = Quantity::from_bytes(0);
  Quantity to_size = Quantity::from_bytes(0);
  std::string from_class;  // storageClassName of the live claim ("" = none set)
  std::string to_class;    // storageClassName the recreated claim gets
  std::string source_uid;  // uid of the claim when planned: deletes are preconditioned on it
  // Captured at planning because the source claim is gone when its successor is created.
  std::map<std::string, std::string> labels;
  std::vector<std::string> access_modes;
  std::string volume_mode;  // "" = not set
  // Path::Rebind only, captured at planning: the source claim's volume, and its annotations
  // less the binder's own (the rebound claim gets them; the two-copy path's does not).
  std::string source_volume;
  std::map<std::string, std::string> annotations;

  // Progress, changed only by recorded events.
  // PreCopying is over for this claim: its pre-copy ran, failed or was not possible (the
  // journal's PreCopied record says which). It proves nothing: BackingUp copies and verifies.
  bool pre_copied = false;
  std::optional<TreeSummary> backup_verified;
  // The StatefulSet's metadata.generation while the verified backup was taken (the fence,
  // states/fence.h): the backup holds every write only while the generation is still this.
  // 0: not recorded (a backup verified by an stsresize that did not record it): never fresh.
  std::int64_t backup_generation = 0;
  bool source_deleted = false;
  std::string recreated_uid;
  std::optional<TreeSummary> restore_verified;
  bool expanded = false;
  // Path::Rebind: each volume's own reclaim policy, written down when it was set to Retain
  // ("" = not yet), and whether it was put back. The copy's volume is the backup claim's.
  std::string source_policy;
  std::string copy_volume;
  std::string copy_policy;
  bool source_policy_restored = false;
  bool copy_policy_restored = false;
  // Strategy::Rolling: its ordinal is done (the replica ran Ready on it, its cleanup finished);
  // set by the fold at CleaningUp's RollOn. The steps no longer look at it.
  bool rolled = false;

  friend bool operator==(const ClaimPlan&, const ClaimPlan&) = default;
};

// What a claim to be shrunk held when Measuring measured it (engine/measure_job.h).
struct MeasuredClaim {
  std::string claim;
  std::string uid;  // the claim measured: a claim of that name created since is another one
  VolumeUsage usage;
  friend bool operator==(const MeasuredClaim&, const MeasuredClaim&) = default;
};

// A claim of an ordinal being drained, by name (as the StatefulSet controller finds it).
struct OrdinalClaim {
  std::string claim;  // "<template>-<sts>-<ordinal>"
  std::string uid;    // when planned: the delete is preconditioned on it
  bool deleted = false;
  friend bool operator==(const OrdinalClaim&, const OrdinalClaim&) = default;
};

// One ordinal a scale-down left without its replica, and how far its drain got.
struct OrdinalDrain {
  int ordinal = 0;
  std::vector<OrdinalClaim> claims;
  // Progress, changed only by recorded events.
  std::string pod_uid;     // the cleanup pod created (or taken over); empty: none yet
  bool succeeded = false;  // the cleanup pod ran to Succeeded
  // The ordinal is a replica's again (scaled back up) or the drain was stopped before its
  // cleanup succeeded: its claims are kept. Why, for people.
  std::string cancelled;
  bool ended() const { return succeeded || !cancelled.empty(); }
  friend bool operator==(const OrdinalDrain&, const OrdinalDrain&) = default;
};

// A claim of a replica whose volume is pinned to a node that is gone (a lost-volume recovery).
struct LostClaim {
  std::string claim;   // "<template>-<sts>-<ordinal>"
  std::string uid;     // when detected: the delete is preconditioned on it
  std::string volume;  // the lost volume (PersistentVolume), kept
  // Progress, changed only by recorded events.
  std::string policy;  // the volume's own reclaim policy, written down when set to Retain
  bool deleted = false;
  std::string new_uid;  // the claim the StatefulSet controller created afresh, once marked
  friend bool operator==(const LostClaim&, const LostClaim&) = default;
};

// The replica a lost-volume recovery gives a new volume: one ordinal, whose claims' volumes are
// pinned to one node that is gone.
struct LostReplica {
  int ordinal = 0;
  std::string node;
  // Why the node counts as gone: "deleted" (no Node object) or "out-of-service" (the taint
  // node.kubernetes.io/out-of-service, Kubernetes' mark of a node shut down for good).
  std::string gone;
  std::string pod_uid;  // the replica's pod when detected ("" none)
  std::vector<LostClaim> claims;
  // How long the node must stay gone, from the start, before anything is deleted.
  Duration grace{0};
  // Progress, changed only by recorded events.
  bool pod_deleted = false;  // the pod of the lost replica deleted (or gone)
  std::string new_pod_uid;   // the replica's new pod, once marked
  std::string cancelled;     // the node came back before anything was deleted: why
  // The re-seed (kRecoveryPodTemplateAnnotation): the StatefulSet paused for it before the first
  // delete; its pod, once created; how it ended ("" succeeded, else why it failed).
  bool reseed = false;
  std::string reseed_pod_uid;
  bool reseed_ended = false;
  std::string reseed_failure;
  bool any_deleted() const;
  friend bool operator==(const LostReplica&, const LostReplica&) = default;
};

// One volumeClaimTemplate change asked for by the stsresize.dev/resize annotation
// (engine/resize_request.h). nullopt/empty: that field is left as it is.
struct TemplateChange {
  std::string template_name;
  std::optional<Quantity> storage;
  std::string storage_class;

  friend bool operator==(const TemplateChange&, const TemplateChange&) = default;
};

// A transition the engine holds until a person approves it with `stsresize advance --approve`
// (annotation stsresize.dev/mode: manual or step, engine/actions/request.h).
struct AwaitedApproval {
  Phase from = Phase::Pending;
  Phase to = Phase::Pending;
  Trigger event = Trigger::StepDone;
  friend bool operator==(const AwaitedApproval&, const AwaitedApproval&) = default;
};

struct Operation {
  std::string id;
  std::string ns;
  std::string statefulset;
  // uid of the StatefulSet object the operation works on. An explicit request re-creates the
  // object (UpdatingTemplate): StatefulSetRecreated switches this to the new object's uid.
  std::string sts_uid;
  OperationKind kind = OperationKind::Resize;
  Phase phase = Phase::Pending;
  Path path = Path::Undecided;
  Strategy strategy = Strategy::AllAtOnce;
  std::int32_t original_replicas = 0;
  std::vector<ClaimPlan> claims;
  // Measuring's figures, one per claim to be shrunk (empty unless the operation shrinks).
  std::vector<MeasuredClaim> measured;
  // A drain's ordinals (empty for a resize).
  std::vector<OrdinalDrain> drains;
  // A lost-volume recovery's replica (nullopt for the other kinds).
  std::optional<LostReplica> lost;
  // A drain by claim policy (stsresize.dev/scaledown-claims: delete-after=<duration>): no
  // cleanup pod; an ordinal's claims are deleted once Draining has lasted this long (from
  // phase_since) and no pod uses them. 0: a drain by cleanup pod, and every resize.
  Duration delete_after{0};
  // Explicit request only (empty for the template trigger): the template changes applied by
  // re-creating the StatefulSet, and whether the re-created object's uid has been recorded.
  std::vector<TemplateChange> template_changes;
  bool statefulset_recreated = false;
  // Path::Copy only: why the rebind path was not taken ("" when it was not considered).
  std::string rebind_unavailable;
  std::string failure;  // why it failed; empty unless a critical error happened
  // The phase the operation was in when it moved to Failed; nullopt in any other phase, and in
  // an annotation written by an stsresize that did not record it.
  std::optional<Phase> failed_in;
  // Who aborted it (`stsresize advance --abort`), from the accepted request; empty when nobody
  // did. Kept to the end, so that the ScalingBack it started ends as an abort, not a failure.
  std::string aborted_by;
  // The warning given in the current phase (a non-critical StepFailed), so that it is given
  // once; cleared by every phase change.
  std::string warning;
  // The transition waiting for approval; cleared by every phase change.
  std::optional<AwaitedApproval> awaiting;
  TimePoint started;
  TimePoint phase_since;
  // Sequence of the last journal record this state reflects.
  std::int64_t last_sequence = 0;

  friend bool operator==(const Operation&, const Operation&) = default;

  // True while scaling back up, or stopping the drain, keeps every byte: no drained claim was
  // deleted (a drain); no source claim was deleted (a resize), or, on the rebind path, before
  // ScalingUp every deleted source's volume is kept (Retain, its policy not put back), so
  // ScalingBack can give the claim its own volume again. From ScalingUp on the application
  // writes on the copies, and scaling back would lose those writes.
  bool sources_intact() const;
  // A source claim was deleted (on any path): the StatefulSet controller would create an empty
  // claim of that name for a replica started now, so a broken fence is restored (states/fence.h)
  // rather than the set scaled back up, and a scale-back first puts the claim back.
  bool source_claim_deleted() const;
  // Strategy::Rolling: the ordinal being resized, the highest with a claim not rolled; nullopt
  // once every one is (and always for AllAtOnce).
  std::optional<int> rolling_ordinal() const;
  // The claims the copy steps work on now: all of them, or the rolling ordinal's. Progress
  // checks, the fence and a scale-back look at these only: a rolled ordinal is finished.
  bool in_scope(const ClaimPlan& claim) const;
  const OrdinalDrain* find_drain(int ordinal) const;
  OrdinalDrain* find_drain(int ordinal);
  const ClaimPlan* find_claim(std::string_view claim) const;
  ClaimPlan* find_claim(std::string_view claim);
};

// Why `op` cannot be a state the engine wrote: its phase needs progress its claims do not show
// (Recreating before every backup was verified, Restoring before every claim was recreated,
// ScalingUp or CleaningUp before every restore was verified), or the progress contradicts
// itself (a source deleted without a verified backup). Empty when consistent. A state annotation
// edited by hand (a phase moved on) is refused by this.
std::string progress_mismatch(const Operation& op);
// Whether `op` is in a phase whose step resumes a paused StatefulSet (states/rolling.h): deletes
// it (the pause's hold removed) and creates it again from the definition it saved in a ConfigMap.
// A rolling resize's StartingReplica and ScalingBack; a recovery's with a re-seed, from
// ReplacingVolume (the node back before the first delete) to ScalingBack.
bool resumes_statefulset(const Operation& op);
// Why a state annotation cannot be continued from: progress_mismatch, or a state in Completed
// (stsresize removes the state when an operation completes). Empty when it can.
std::string unwritten_state(const Operation& op);

// Same state, whatever journal sequence each copy was last written at.
bool same_state(const Operation& a, const Operation& b);

// What a drain did with its ordinals, in plan order: drained (its cleanup Succeeded, or its
// delay passed, and its claims deleted or being deleted) or cancelled (a replica again, or the
// drain stopped: its claims kept). A drain that Completed may have drained none.
struct DrainResult {
  std::vector<int> drained;
  std::vector<int> cancelled;
  friend bool operator==(const DrainResult&, const DrainResult&) = default;
};
DrainResult drain_result(const Operation& op);
// "drained: ordinals 2, 1; cancelled: ordinal 3 (its claims kept)"; empty when neither.
std::string to_string(const DrainResult& result);

// "<sts>-<short hash of ns/sts/uid/start time>", a valid bounded name.
std::string make_operation_id(std::string_view ns, std::string_view sts, std::string_view sts_uid,
                              TimePoint started);

}  // namespace stsresize
