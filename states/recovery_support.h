#pragma once
// What the lost-volume recovery's steps share (states/await_node.cc, replace_volume.cc,
// mark_recovered.cc).
#include <expected>
#include <string>

#include "engine/lost_volume.h"
#include "states/step.h"

namespace stsresize::recovery {

// The lost node as it is now (NotFound: deleted).
std::expected<NodeView, StepOutcome> node_now(StepContext& ctx);
// "node sim-node-1 is back (registered again)": why a recovery ends with nothing more done.
std::string back_reason(const LostReplica& lost);
// "<sts>-<ordinal>".
std::string pod_name(const Operation& op);
// "pvc-a, pvc-b": the lost volumes.
std::string volumes(const LostReplica& lost);

}  // namespace stsresize::recovery
