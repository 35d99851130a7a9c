#pragma once
// The drain a StatefulSet asks for now: the ordinals a scale-down left whose claims may be
// drained (engine/drain_candidates.h), as the plan of a new drain operation. Pure.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"
#include "engine/time.h"

namespace stsresize {

struct DrainPlan {
  std::string trigger;  // for people: "scaled down to 2 replicas: ordinal 2 left to drain"
  std::vector<OrdinalDrain> ordinals;
  // 0: a cleanup pod drains each ordinal (the template). Else the claim policy
  // (kScaledownClaimsAnnotation): no cleanup pod, the claims are deleted once the drain has
  // waited this long (Operation::delete_after).
  Duration delete_after{0};
};

// The StatefulSet's claim policy on scale-down, kScaledownClaimsAnnotation:
// "delete-after=<duration>" (engine/duration.h: "30m", "2h", "1h30m"; more than 0). nullopt:
// not set (or empty). An error names the annotation and quotes the value (engine/text.h);
// nothing may be drained on it.
std::expected<std::optional<Duration>, std::string> scaledown_claims_policy(
    const Json& statefulset);

// Why `statefulset` cannot be drained although it asks for it: it has a cleanup pod template
// and spec.persistentVolumeClaimRetentionPolicy.whenScaled Delete, so Kubernetes deletes a
// scaled-down replica's claim with its pod, before any cleanup pod could run on it. nullopt:
// nothing in the way.
std::optional<std::string> undrainable_reason(const Json& statefulset);

// A drain the StatefulSet asks for and cannot have, known without a scale-down: it is
// undrainable (above), or it has no cleanup pod template and an invalid claim policy. The
// reconciler says it once, in stsresize.dev/resize-status with a Warning, and takes it back once
// the StatefulSet is fixed; it holds nothing else (a resize is still served).
struct DrainRefusal {
  std::string reason;
  std::string_view event_reason;  // "DrainImpossible" or "InvalidDrain"
};
std::optional<DrainRefusal> drain_refusal(const Json& statefulset);
// The stsresize.dev/resize-status value that records it ("rejected: <reason>; nothing drained"),
// short of the status's bound (the policy's value is quoted bounded).
std::string drain_refusal_status(const DrainRefusal& refusal);
// Whether `status` is one that drain_refusal_status writes (a refusal of a resize request is not).
bool is_drain_refusal_status(std::string_view status);

// nullopt: the StatefulSet has not opted in (no cleanup pod template and no claim policy), it
// cannot be drained (undrainable_reason), or nothing can be drained now (no claim left outside
// the replicas, or each waits: the scale-down not observed yet, a pod still uses the claim...).
// A StatefulSet with both a template and a claim policy is drained by its cleanup pod: the
// template wins (the policy is the way for sets without one). An error: the StatefulSet, a
// claim or a pod is malformed, or the claim policy is invalid.
// A StatefulSet being deleted is drained only when `cascade` says its delete removes the
// replicas (engine/statefulset_deletion.h: DeletionReading::Cascade): then every ordinal with a
// claim is planned, its replica's pod still there or not (the drain deletes it first). Without,
// nullopt: an orphan delete is not a scale-down.
std::expected<std::optional<DrainPlan>, std::string> plan_drain(const Json& statefulset,
                                                                const std::vector<Json>& claims,
                                                                const std::vector<Json>& pods,
                                                                bool cascade = false);

}  // namespace stsresize
