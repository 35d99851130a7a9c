#pragma once
// What makes a replica's volume lost (a lost-volume recovery, OperationKind::Recovery), read from
// the objects alone: the node its volume is pinned to, whether that node is gone, and whether a
// claim was bound before the loss. The reading of the cluster is states/recovery_start.cc's.
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "engine/json.h"
#include "engine/time.h"

namespace stsresize {

// Kubernetes' mark of a node shut down for good (non-graceful node shutdown): a person or a
// tool says the node will not come back with its pods.
inline constexpr std::string_view kOutOfServiceTaint = "node.kubernetes.io/out-of-service";

// The one node a volume is pinned to: its required node affinity has exactly one term, which
// names exactly one kubernetes.io/hostname (operator In), as local volumes and the local and
// hostPath provisioners make them. nullopt for any other volume: a volume reachable from more
// than one node is never lost with one of them.
std::optional<std::string> pinned_node(const Json& volume);

enum class NodeHealth {
  Ready,     // condition Ready is True
  NotReady,  // not Ready (Unknown, False, no condition): it may come back with the data
  Gone,      // the Node object is deleted, or carries kOutOfServiceTaint
};
struct NodeView {
  NodeHealth health = NodeHealth::Ready;
  std::string gone;  // Gone: "deleted" or "out-of-service"
  // Gone by taint: the taint's timeAdded, when the API has it.
  std::optional<TimePoint> since;
};
// `node` is the Node object, or nullopt when it does not exist.
NodeView view_node(const std::optional<Json>& node);

// The lost-volume recovery setting of a StatefulSet (stsresize.dev/lost-volume-recovery, and
// stsresize.dev/lost-volume-grace for its grace period).
enum class RecoveryMode { Never, Manual, Auto };
std::string_view to_string(RecoveryMode mode);
struct RecoverySetting {
  RecoveryMode mode = RecoveryMode::Never;
  Duration grace{0};
  // stsresize.dev/lost-volume-max-unavailable: how many replicas may be without their data at
  // once (recovered, not Ready yet).
  int max_unavailable = 1;
};
// Absent annotation: Never. A value other than "manual" or "auto", a grace that is not a
// duration, or a bound that is not a whole number of 1 or more: an error saying which, and
// nothing is recovered.
std::expected<RecoverySetting, std::string> recovery_setting(const Json& statefulset,
                                                             Duration default_grace);

// The claim `template_name` of `ordinal` as the StatefulSet controller creates it (the template's
// labels, annotations and spec; its name; the selector's matchLabels among its labels), marked
// kRecoveredFromAnnotation = `lost_volume`: what a recovery with a re-seed creates itself while
// the StatefulSet is paused. An error when the StatefulSet has no such template.
std::expected<Json, std::string> recovered_claim(const Json& statefulset,
                                                 std::string_view template_name, int ordinal,
                                                 std::string_view lost_volume);

// Whether `claim` is one to recover: it and its volume existed, and the volume was bound, before
// `lost_at` (the loss as this controller knows it: the taint's timeAdded, else the moment it saw
// the node gone). A claim created or bound after that is never touched: it holds nothing of the
// replica (a scale-up, a claim re-created by hand). Empty when it is; else why not.
std::string bound_after_loss(const Json& claim, const Json& volume, TimePoint lost_at);

}  // namespace stsresize
