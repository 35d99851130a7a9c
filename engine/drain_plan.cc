#include "engine/drain_plan.h"

#include "engine/cleanup_pod.h"
#include "engine/drain_candidates.h"
#include "engine/duration.h"
#include "engine/k8s_objects.h"
#include "engine/text.h"
#include "engine/vocabulary.h"

namespace stsresize {

std::expected<std::optional<Duration>, std::string> scaledown_claims_policy(
    const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kScaledownClaimsAnnotation);
  if (!value) return std::unexpected(value.error());
  if (!value->has_value() || (*value)->empty()) return std::nullopt;
  const std::string& text = **value;
  auto refuse = [&](const std::string& why) {
    return std::unexpected("annotation " + std::string{kScaledownClaimsAnnotation} + " is " +
                           quote(text) + ": " + why +
                           " (example: " + std::string{kDeleteAfterPolicy} + "30m)");
  };
  if (!text.starts_with(kDeleteAfterPolicy)) {
    return refuse("expected " + std::string{kDeleteAfterPolicy} + "<duration>");
  }
  const std::string_view spelled = std::string_view{text}.substr(kDeleteAfterPolicy.size());
  auto delay = parse_duration(spelled);
  if (!delay)
    return refuse("the duration " + quote(spelled) + " is not one (500ms, 15s, 1m30s, 2h)");
  if (delay->count() <= 0) return refuse("the duration must be more than 0");
  return *delay;
}

namespace {
std::string undrainable_text() {
  return "this StatefulSet has a cleanup pod template (" +
         std::string{kScaledownPodTemplateAnnotation} +
         ") and spec.persistentVolumeClaimRetentionPolicy.whenScaled Delete: Kubernetes deletes "
         "a scaled-down replica's claim with its pod, so no cleanup pod can drain it and "
         "stsresize drains nothing; set whenScaled to Retain to drain, or remove the template";
}
}  // namespace

std::optional<std::string> undrainable_reason(const Json& statefulset) {
  if (!scaledown_pod_template(statefulset) || !claims_deleted_when_scaled(statefulset)) {
    return std::nullopt;
  }
  return undrainable_text();
}

std::optional<DrainRefusal> drain_refusal(const Json& statefulset) {
  if (auto reason = undrainable_reason(statefulset))
    return DrainRefusal{*reason, "DrainImpossible"};
  if (scaledown_pod_template(statefulset)) return std::nullopt;  // the policy is not read
  auto policy = scaledown_claims_policy(statefulset);
  if (!policy) return DrainRefusal{policy.error(), "InvalidDrain"};
  return std::nullopt;
}

namespace {
constexpr std::string_view kRefused = "rejected: ";
constexpr std::string_view kNothingDrained = "; nothing drained";
}  // namespace

std::string drain_refusal_status(const DrainRefusal& refusal) {
  return std::string{kRefused} + refusal.reason + std::string{kNothingDrained};
}

bool is_drain_refusal_status(std::string_view status) {
  if (!status.starts_with(kRefused) || !status.ends_with(kNothingDrained)) return false;
  const std::string_view reason =
      status.substr(kRefused.size(), status.size() - kRefused.size() - kNothingDrained.size());
  return reason == undrainable_text() ||
         reason.starts_with("annotation " + std::string{kScaledownClaimsAnnotation} + " is ");
}

std::expected<std::optional<DrainPlan>, std::string> plan_drain(const Json& statefulset,
                                                                const std::vector<Json>& claims,
                                                                const std::vector<Json>& pods,
                                                                bool cascade) {
  Duration delete_after{0};
  if (!scaledown_pod_template(statefulset)) {
    auto policy = scaledown_claims_policy(statefulset);
    if (!policy) return std::unexpected(policy.error());
    if (!policy->has_value()) return std::nullopt;
    delete_after = **policy;
  } else if (undrainable_reason(statefulset)) {
    return std::nullopt;
  }
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return std::unexpected(deleting.error());
  if (*deleting && !cascade) return std::nullopt;
  auto found = drain_candidates(statefulset, claims, pods);
  if (!found) return std::unexpected(explain(found.error()));
  DrainPlan plan;
  plan.delete_after = delete_after;
  std::string names;
  for (const DrainCandidate& candidate : found->candidates) {
    // Only a cleanup pod left (its claims already gone): nothing to drain.
    if (candidate.claims.empty()) continue;
    // Deleted: the replicas' own pods wait on the name and the claims until the drain deletes
    // them; a pod of anyone else makes the step wait.
    if (!candidate.ready() && !*deleting) continue;
    OrdinalDrain drain;
    drain.ordinal = candidate.ordinal;
    for (const DrainClaim& claim : candidate.claims) {
      drain.claims.push_back({claim.name, claim.uid, false});
    }
    names += (names.empty() ? "" : ", ") + std::to_string(candidate.ordinal);
    plan.ordinals.push_back(std::move(drain));
  }
  if (plan.ordinals.empty()) return std::nullopt;
  auto replicas = k8s::spec_replicas(statefulset);
  if (!replicas) return std::unexpected(replicas.error());
  const std::string ordinals =
      "ordinal" + std::string{plan.ordinals.size() == 1 ? " " : "s "} + names;
  plan.trigger = *deleting ? "StatefulSet deleted: " + ordinals + " to drain"
                 : delete_after.count() > 0
                     ? "scaled down to " + std::to_string(*replicas) + " replicas: " + ordinals +
                           " left: claims deleted after " + format_duration(delete_after) + " (" +
                           std::string{kScaledownClaimsAnnotation} + ")"
                     : "scaled down to " + std::to_string(*replicas) + " replicas: " + ordinals +
                           " left to drain";
  return plan;
}

}  // namespace stsresize
