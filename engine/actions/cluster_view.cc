#include "engine/actions/cluster_view.h"

#include "engine/drain_plan.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "engine/vocabulary.h"

namespace stsresize {

std::vector<std::string> sources_going(const Operation& op, const std::vector<Json>& live_claims) {
  std::vector<std::string> going;
  for (const ClaimPlan& claim : op.claims) {
    if (claim.source_deleted) continue;
    bool intact = false;
    for (const Json& live : live_claims) {
      if (k8s::name(live).value_or("") != claim.claim) continue;
      intact = k8s::uid(live).value_or("") == claim.source_uid &&
               !k8s::is_being_deleted(live).value_or(true);
    }
    if (!intact) going.push_back(claim.claim);
  }
  return going;
}

bool labelled_by(const Json& object, const Operation& op) {
  auto labels = k8s::labels(object);
  if (!labels) return false;
  auto label = labels->find(std::string{kOperationLabel});
  return label != labels->end() && label->second == naming::label_value(op.id);
}

std::vector<std::string> labelled_with(const Operation& op, const std::vector<Json>& objects) {
  std::vector<std::string> names;
  for (const Json& object : objects) {
    if (labelled_by(object, op)) names.push_back(k8s::name(object).value_or("?"));
  }
  return names;
}

std::vector<Json> failed_jobs(const Operation& op, const std::vector<Json>& jobs) {
  std::vector<Json> failed;
  for (const Json& job : jobs) {
    auto owner = k8s::annotation(job, kOperationLabel);
    if (!labelled_by(job, op) || !owner || !owner->has_value() || **owner != op.id) {
      continue;  // not created by this operation: never touched
    }
    auto status = k8s::job_status(job);
    if (status && status->outcome == k8s::JobOutcome::Failed) failed.push_back(job);
  }
  return failed;
}

std::expected<std::string, std::string> wanted_resize(
    const Json& statefulset, const std::vector<Json>& claims,
    const std::optional<std::vector<Json>>& storage_classes) {
  if (auto request = resize_request_of(statefulset)) {
    auto validated =
        storage_classes
            ? validate_resize_request(statefulset, *request, claims, *storage_classes)
            : validate_resize_request(statefulset, *request, claims, StorageClassesUnknown{});
    if (!validated) {
      return std::unexpected("its " + std::string{kResizeRequestAnnotation} +
                             " request is invalid: " + validated.error());
    }
    return validated->trigger;
  }
  auto plan = storage_classes ? plan_resize(statefulset, claims, *storage_classes)
                              : plan_resize(statefulset, claims, StorageClassesUnknown{});
  if (!plan) return std::unexpected("its templates cannot be planned: " + plan.error());
  if (!plan->has_value()) {
    return std::unexpected(
        "no resize is asked for now: every claim already has what its template asks for, and "
        "there is no " +
        std::string{kResizeRequestAnnotation} + " annotation");
  }
  return (*plan)->trigger;
}

std::expected<std::string, std::string> wanted_drain(const Json& statefulset,
                                                     const std::vector<Json>& claims,
                                                     const std::vector<Json>& pods) {
  auto plan = plan_drain(statefulset, claims, pods);
  if (!plan) return std::unexpected("its drain cannot be planned: " + plan.error());
  if (!plan->has_value()) {
    return std::unexpected(
        "nothing is left to drain now: no claim outside the replicas can be drained (none is "
        "left, the scale-down is not over, or a pod still uses it)");
  }
  return (*plan)->trigger;
}

}  // namespace stsresize
