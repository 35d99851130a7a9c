#include "engine/drain_plan.h"

#include "engine/cleanup_pod.h"
#include "engine/drain_candidates.h"
#include "engine/k8s_objects.h"

namespace stsresize {

std::expected<std::optional<DrainPlan>, std::string> plan_drain(const Json& statefulset,
                                                                const std::vector<Json>& claims,
                                                                const std::vector<Json>& pods,
                                                                bool cascade) {
  if (!scaledown_pod_template(statefulset)) return std::nullopt;
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return std::unexpected(deleting.error());
  if (*deleting && !cascade) return std::nullopt;
  auto found = drain_candidates(statefulset, claims, pods);
  if (!found) return std::unexpected(explain(found.error()));
  DrainPlan plan;
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
                           : "scaled down to " + std::to_string(*replicas) +
                                 " replicas: " + ordinals + " left to drain";
  return plan;
}

}  // namespace stsresize
