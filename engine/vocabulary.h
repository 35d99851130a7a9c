#pragma once
// Every stsresize.dev/* key stsresize writes or reads, and the label values it compares, in one
// place: a rename is one edit here, and a grep for a key finds its meaning. Code outside this
// header names the constants, never the text (tests spell the text: they check the wire format).
// Only <string_view> is included, so any file of engine/, states/ or adapters/ can use it.
#include <string_view>

namespace stsresize {

// --- On the StatefulSet: the operation in flight (engine/annotations.h) ---
// Versioned JSON of the Operation (engine/operation_codec.h): authoritative "where are we".
inline constexpr std::string_view kStateAnnotation = "stsresize.dev/state";
// Phase name for humans (`kubectl get sts -L`); never read back.
inline constexpr std::string_view kPhaseAnnotation = "stsresize.dev/phase";
// Short summary left when an operation completed (its id, outcome).
inline constexpr std::string_view kLastOperationAnnotation = "stsresize.dev/last-operation";
// The replica count the operation in flight started from, kept apart from the state so that a
// state removed by hand cannot make the next operation start from the 0 this one scaled to.
inline constexpr std::string_view kOriginalReplicasAnnotation = "stsresize.dev/original-replicas";
// Label "true" once an operation failed: never resized again automatically until removed.
inline constexpr std::string_view kFailedLabel = "stsresize.dev/failed";

// --- On the StatefulSet: what people ask for (engine/resize_request.h) ---
// An explicit request, written by the user: new storage size or class per template.
inline constexpr std::string_view kResizeRequestAnnotation = "stsresize.dev/resize";
// Written by stsresize when it refuses that request: "rejected: <why>".
inline constexpr std::string_view kResizeStatusAnnotation = "stsresize.dev/resize-status";
// On the StatefulSet: "false" copies with the replicas stopped only (no PreCopying), for an
// application that must not have a concurrent reader of its volumes; "true" or absent: a warm
// pre-copy first. Any other value fails Planning before anything is changed.
inline constexpr std::string_view kPreCopyAnnotation = "stsresize.dev/pre-copy";
// On the StatefulSet: "rolling" resizes a copy path one ordinal at a time while the others
// serve; "all-at-once" or absent stops every replica for the copies. Any other value fails
// Planning before anything is changed.
inline constexpr std::string_view kStrategyAnnotation = "stsresize.dev/strategy";
// A rolling resize's hold on the StatefulSet it pauses: deleted in the background, the object
// stays while this finalizer does, and the StatefulSet controller does nothing for a set being
// deleted (it creates no pod), while its pods keep their owner.
inline constexpr std::string_view kRollingFinalizer = "stsresize.dev/rolling";

// --- On the StatefulSet: operating a resize by hand (engine/actions/request.h) ---
// Written by the user: auto (absent), manual or step: which transitions wait for approval.
inline constexpr std::string_view kModeAnnotation = "stsresize.dev/mode";
// Written by `stsresize advance`, removed when consumed: approve, abort, retry or skip.
inline constexpr std::string_view kAdvanceAnnotation = "stsresize.dev/advance";
// "BackingUp -> Recreating" while a transition waits for `stsresize advance --approve`.
inline constexpr std::string_view kAwaitingApprovalAnnotation = "stsresize.dev/awaiting-approval";

// --- On what stsresize creates: claims, copy Jobs, the definition ConfigMap ---
// Label naming::label_value(<operation id>) to select an operation's claims, Jobs and copy
// pods; also an annotation holding the full id (a label value may be cut to 63 characters).
inline constexpr std::string_view kOperationLabel = "stsresize.dev/operation";
// Label naming::label_value(<StatefulSet name>) to select and watch a StatefulSet's objects;
// also an annotation holding the full name (on Jobs and the definition ConfigMap).
inline constexpr std::string_view kStatefulSetLabel = "stsresize.dev/statefulset";
// Label on copy Jobs, backup claims and measure Jobs: what the object is for, kBackupPurpose,
// kRestorePurpose, kPreCopyPurpose or kMeasurePurpose.
inline constexpr std::string_view kPurposeLabel = "stsresize.dev/purpose";
inline constexpr std::string_view kBackupPurpose = "backup";
inline constexpr std::string_view kRestorePurpose = "restore";
inline constexpr std::string_view kMeasurePurpose = "measure";
inline constexpr std::string_view kPreCopyPurpose = "pre-copy";
// Annotations on copy Jobs (and the source one on backup claims): the claims copied from and to.
inline constexpr std::string_view kSourceClaimAnnotation = "stsresize.dev/source-claim";
inline constexpr std::string_view kDestinationClaimAnnotation = "stsresize.dev/destination-claim";
// On a copy Job: "<StatefulSet uid>/<metadata.generation>" when it was created (states/fence.h);
// a Job from before a change of the StatefulSet may have copied data that changed since.
inline constexpr std::string_view kFenceGenerationAnnotation = "stsresize.dev/fence-generation";
// On a claim stsresize re-created at its new size: the operation that re-created it, so a claim
// someone else created under that name is told apart (states/recreate.cc).
inline constexpr std::string_view kRecreatedByAnnotation = "stsresize.dev/recreated-by";

// The scale-down drain, compatible with the StatefulSet Scale-Down Controller
// (jboss-openshift/statefulset-scaledown-controller): its keys, kept as they are so that its
// users switch without editing their StatefulSets.
// On a StatefulSet: the cleanup pod (a JSON Pod, metadata + spec) run on each claim that a
// scale-down leaves without its replica. Opting in; stsresize also reads the alias.
inline constexpr std::string_view kScaledownPodTemplateAnnotation =
    "statefulsets.kubernetes.io/scaledown-pod-template";
inline constexpr std::string_view kScaledownPodTemplateAlias =
    "stsresize.dev/scaledown-pod-template";
// On a cleanup pod: the StatefulSet it drains for (how a cleanup pod is told from the replica
// of the same name); and the label scaledown-pod=<pod name>.
inline constexpr std::string_view kScaledownPodOwnerAnnotation =
    "statefulsets.kubernetes.io/scaledown-pod-owner";
inline constexpr std::string_view kScaledownPodLabel = "scaledown-pod";
// The old controller's finalizer on opted-in StatefulSets.
inline constexpr std::string_view kScaledownFinalizer = "statefulsets.kubernetes.io/scaledown";
// kPurposeLabel of a cleanup pod.
inline constexpr std::string_view kDrainPurpose = "drain";
// On a StatefulSet without a cleanup pod template, written by the user:
// "delete-after=<duration>" (engine/drain_plan.h: scaledown_claims_policy). The claims of an
// ordinal a scale-down left are deleted once it has been gone that long, with no cleanup pod.
inline constexpr std::string_view kScaledownClaimsAnnotation = "stsresize.dev/scaledown-claims";
inline constexpr std::string_view kDeleteAfterPolicy = "delete-after=";

// On a StatefulSet, written by the user: "manual" or "auto" (absent: never). A replica whose
// volume is pinned to a node that is gone is given a new, empty claim (engine/lost_volume.h);
// manual waits for `stsresize advance --approve` before anything is deleted.
inline constexpr std::string_view kLostVolumeRecoveryAnnotation =
    "stsresize.dev/lost-volume-recovery";
// How long the node must stay gone before anything is deleted ("30s", "5m"; default: the
// controller's --lost-volume-grace, 5 minutes).
inline constexpr std::string_view kLostVolumeGraceAnnotation = "stsresize.dev/lost-volume-grace";
// On the new claim and pod of a recovered replica: the lost volume (PersistentVolume) whose data
// this identity did not get back.
inline constexpr std::string_view kRecoveredFromAnnotation = "stsresize.dev/recovered-from";
// On a StatefulSet, written by the user: how many replicas may be without their data at once
// (an integer, 1 or more; default 1): a new recovery starts only while fewer replicas than that
// carry kRecoveredFromAnnotation and are not Ready. A zone outage does not give every identity
// an empty volume at once.
inline constexpr std::string_view kLostVolumeMaxUnavailableAnnotation =
    "stsresize.dev/lost-volume-max-unavailable";
// On a StatefulSet, written by the user: the re-seed pod (a JSON Pod, metadata + spec, the shape
// of the cleanup pod template), run once on a recovered replica's new claims before the replica
// starts on them (the StatefulSet paused meanwhile), so that it can copy data in from a peer or
// a backup. Optional.
inline constexpr std::string_view kRecoveryPodTemplateAnnotation =
    "stsresize.dev/recovery-pod-template";
// kPurposeLabel of a re-seed pod.
inline constexpr std::string_view kReseedPurpose = "reseed";

}  // namespace stsresize
