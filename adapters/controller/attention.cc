#include "adapters/controller/attention.h"

#include <functional>

#include "engine/actions/request.h"
#include "engine/annotations.h"
#include "engine/cleanup_pod.h"
#include "engine/drain_candidates.h"
#include "engine/drain_plan.h"
#include "engine/k8s_objects.h"
#include "engine/planner.h"
#include "engine/statefulset_deletion.h"
#include "engine/vocabulary.h"

namespace stsresize {

std::string_view to_string(Attention attention) {
  switch (attention) {
    case Attention::None:
      return "none";
    case Attention::Operation:
      return "operation";
    case Attention::Request:
      return "request";
    case Attention::Detected:
      return "detected";
    case Attention::Invalid:
      return "invalid";
  }
  return "unknown";
}

Attention needs_attention(const Json& statefulset, const std::vector<Json>& claims_in_namespace,
                          const std::vector<Json>& storage_classes) {
  auto operation = read_operation(statefulset);
  if (!operation) return Attention::Invalid;
  // The drain's finalizer to add (opted in), to remove (opted out), or holding a delete: the
  // reconciler settles it before anything else (states/drain_finalizer.cc).
  const bool opted_in = scaledown_pod_template(statefulset).has_value();
  const bool held = has_finalizer(statefulset, kScaledownFinalizer);
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return Attention::Invalid;
  if (held && *deleting) return Attention::Detected;
  if (!*deleting && opted_in != held) return Attention::Detected;
  if (operation->has_value()) {
    // An ended operation needs nothing, except an answer to a `stsresize advance` request
    // (a retry of a Failed one, or anything else, refused).
    // (A state in Completed is never written by stsresize — completion removes it — so it was
    // edited by hand: the reconciler compares it with the journal.)
    const bool ended = (*operation)->phase == Phase::Failed && !advance_request_of(statefulset);
    return ended ? Attention::None : Attention::Operation;
  }
  // No state, but backups of an operation that did not complete: the reconciler continues it
  // from the journal, or refuses to start another on top of it.
  if (!unfinished_backups(statefulset, claims_in_namespace).empty()) return Attention::Operation;
  // The rebind path keeps no backup claim past Recreating: a claim an operation created again
  // (stsresize.dev/recreated-by) that is not the last one completed says the same.
  const std::string completed = last_operation_id(statefulset);
  for (const Json& claim : claims_in_namespace) {
    auto recreated_by = k8s::annotation(claim, kRecreatedByAnnotation);
    if (recreated_by && recreated_by->has_value() && **recreated_by != completed) {
      return Attention::Operation;
    }
  }
  if (is_marked_failed(statefulset)) return Attention::None;
  // Opted in to lost-volume recovery: nodes wake no reconcile, so the reconciler looks at the
  // set again every --lost-volume-check-interval (its RequeueAfter) for a volume whose node is
  // gone, and says why an invalid setting does nothing.
  auto recovery = k8s::annotation(statefulset, kLostVolumeRecoveryAnnotation);
  if (recovery && recovery->has_value()) return Attention::Detected;
  auto request = k8s::annotation(statefulset, kResizeRequestAnnotation);
  if (request && request->has_value()) return Attention::Request;
  // A drain asked for that cannot be done (a cleanup pod template with whenScaled Delete, an
  // invalid claim policy): the reconciler says so once (stsresize.dev/resize-status), without
  // waiting for a scale-down, and takes its word back once the set is fixed.
  auto status = k8s::annotation(statefulset, kResizeStatusAnnotation);
  const std::optional<DrainRefusal> refusal = drain_refusal(statefulset);
  const bool unset = status && (!status->has_value() || (*status)->empty());
  const bool ours = status && status->has_value() && is_drain_refusal_status(**status);
  if (refusal ? unset || (ours && **status != drain_refusal_status(*refusal)) : ours) {
    return Attention::Detected;
  }
  // Opted in to the drain (a cleanup pod template, or a valid claim policy), with claims left
  // outside the replicas: the reconciler decides with the pods whether they can be drained now
  // (this filter is given no pods).
  auto policy = scaledown_claims_policy(statefulset);
  if (!refusal && (scaledown_pod_template(statefulset) || (policy && policy->has_value()))) {
    auto drains = drain_candidates(statefulset, claims_in_namespace, {});
    if (!drains) return Attention::Detected;
    for (const DrainCandidate& candidate : drains->candidates) {
      if (!candidate.claims.empty()) return Attention::Detected;
    }
  }
  auto plan = plan_resize(statefulset, claims_in_namespace, storage_classes);
  if (!plan || plan->has_value()) return Attention::Detected;
  return Attention::None;
}

std::size_t refusal_fingerprint(const Json& statefulset) {
  const Json& metadata = statefulset.value("metadata", Json::object());
  // The cache keeps only the spec's fields the controller reads (engine/cached_fields.h), but
  // the reconciler decides on the live object: the generation, which every change of the spec
  // raises, stands for the fields the cache dropped.
  Json relevant = {{"spec", statefulset.value("spec", Json::object())},
                   {"generation", metadata.value("generation", Json{})},
                   {"labels", metadata.value("labels", Json::object())},
                   {"annotations", metadata.value("annotations", Json::object())}};
  return std::hash<std::string>{}(relevant.dump());
}

}  // namespace stsresize
