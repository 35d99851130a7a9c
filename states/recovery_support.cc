#include "states/recovery_support.h"

#include "states/step_support.h"

namespace stsresize::recovery {

std::expected<NodeView, StepOutcome> node_now(StepContext& ctx) {
  auto node = steps::get_optional(ctx, ObjectRef{Kind::Node, "", ctx.op.lost->node});
  if (!node) return std::unexpected(node.error());
  return view_node(*node);
}

std::string back_reason(const LostReplica& lost) {
  return "node " + lost.node + " is back (" +
         (lost.gone == "deleted" ? std::string{"registered again"}
                                 : "taint " + std::string{kOutOfServiceTaint} + " removed") +
         "): nothing was deleted, the volumes may still hold the data";
}

std::string pod_name(const Operation& op) {
  return op.statefulset + "-" + std::to_string(op.lost->ordinal);
}

std::string volumes(const LostReplica& lost) {
  std::string out;
  for (const LostClaim& c : lost.claims) out += (out.empty() ? "" : ", ") + c.volume;
  return out;
}

}  // namespace stsresize::recovery
