#pragma once
// What the drain's steps read about the StatefulSet and its pods (states/drain*.cc).
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"
#include "states/step.h"

namespace stsresize::drain {

// Whether `ordinal` is one of the StatefulSet's replicas again: within
// [spec.ordinals.start, start + spec.replicas). A StatefulSet being deleted has none.
std::expected<bool, std::string> is_replica(const Json& statefulset, int ordinal);
// The StatefulSet controller has observed the current spec and runs no more pods than it asks
// for: a scale-down is over, nothing of it still terminating. True for a StatefulSet being
// deleted, which its controller no longer syncs.
std::expected<bool, std::string> scale_down_observed(const Json& statefulset);
// The pod named `name` among `pods`; nullopt when there is none.
const Json* find_pod(std::span<const Json> pods, const std::string& name);
// The pods other than `sts`'s cleanup pods that mount one of `drain`'s claims ("<pod>").
std::vector<std::string> claim_users(std::span<const Json> pods, const OrdinalDrain& drain,
                                     const std::string& sts);
// "<sts>-<ordinal>": the replica's pod name, which its cleanup pod takes.
std::string pod_name(const Operation& op, int ordinal);
// record_and_continue (states/step_support.h), then a Normal Event `reason` on the StatefulSet:
// each step of a drain is seen in `kubectl describe sts`, as the old controller's were.
StepOutcome record_and_tell(StepContext& ctx, const Entry& entry, std::string_view reason,
                            const std::string& message);
// The Event of a delete the step just made (the old controller's reason, SuccessfulDelete).
void tell_deleted(StepContext& ctx, const std::string& message);
// Whether `pod` Succeeded or Failed and was created before `started` (to the second, the
// precision of creationTimestamp): a result from before an operation began.
bool ended_before(const Json& pod, TimePoint started);
// The cleanup pod of `ordinal`, if there is one of this StatefulSet: deleted (intend + delete,
// uid precondition, a SuccessfulDelete Event saying `why`), and the outcome to return now
// (Waiting(0), or an error). nullopt when there is none, or when it is already being deleted
// (then `lingering` becomes true).
std::optional<StepOutcome> delete_cleanup_pod(StepContext& ctx, int ordinal, const std::string& why,
                                              bool& lingering);
// The cleanup pod's restart count (the highest of its containers').
std::int32_t restarts(const Json& pod);

}  // namespace stsresize::drain
