#pragma once
// The cleanup pod of the scale-down drain: the Pod run on the claims a scale-down left without
// their replica, built from the StatefulSet's cleanup pod template the way the StatefulSet
// Scale-Down Controller (jboss-openshift/statefulset-scaledown-controller) builds it, so that
// its users switch to stsresize without editing their StatefulSets (keys: engine/vocabulary.h).
// Pure: the StatefulSet is passed in as read from the API, the Pod comes out as a value.
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "engine/json.h"

namespace stsresize {

// The cleanup pod template's text: the annotation kScaledownPodTemplateAnnotation, else the
// alias kScaledownPodTemplateAlias; an empty value counts as absent (the old controller acts
// only on a non-empty one). nullopt: the StatefulSet has not opted in to the drain (also when
// its annotations are unreadable). When both keys are set the old key's text is returned;
// whether they agree is cleanup_pod()'s question (TemplatesDiffer).
std::optional<std::string> scaledown_pod_template(const Json& statefulset);

// What a pod built from one of a StatefulSet's pod template annotations is for. The two share the
// template's shape and the rules below; they differ in the annotation, the pod's name, labels
// and restart policy.
enum class PodUse {
  Cleanup,  // the scale-down drain's cleanup pod (kScaledownPodTemplateAnnotation, its alias)
  Reseed,   // a recovered replica's re-seed pod (kRecoveryPodTemplateAnnotation)
};

enum class CleanupPodProblem {
  NoTemplate,            // neither annotation is set
  TemplatesDiffer,       // both are set, to different Pods (key, other_key)
  NotJson,               // the template (from `key`) is not JSON (value: the text)
  NotAnObject,           // the template is JSON but not an object (value: the text)
  NoSpec,                // the template has no spec object
  NoContainers,          // spec.containers is absent or empty
  TemplateMalformed,     // `field` of the template has the wrong type (detail: what it should be)
  RestartPolicy,         // spec.restartPolicy is `value`: not OnFailure (cleanup), Always (re-seed)
  MatchesSelector,       // the pod's labels match the StatefulSet's selector (detail: selector)
  NegativeOrdinal,       // the ordinal asked for is below 0 (value: it)
  StatefulSetUnreadable  // the StatefulSet itself is malformed (detail: the accessor's error)
};

struct CleanupPodError {
  PodUse use = PodUse::Cleanup;
  CleanupPodProblem problem = CleanupPodProblem::NoTemplate;
  std::string statefulset;  // "shop/web"
  std::string key;          // the annotation the template was read from
  std::string other_key;    // TemplatesDiffer: the alias
  std::string field;        // TemplateMalformed: "metadata.labels", "spec.volumes[1]"...
  std::string value;        // raw; explain() quotes it bounded
  std::string detail;       // see CleanupPodProblem

  friend bool operator==(const CleanupPodError&, const CleanupPodError&) = default;
};

// The one text of a CleanupPodError, for Events, logs and `status`: it names the StatefulSet
// and the annotation, and quotes people's values bounded (engine/text.h quote()).
std::string explain(const CleanupPodError& error);

// The cleanup pod that drains `ordinal` of `statefulset` for operation `operation_id`:
//   - the template's metadata and spec. Overridden: apiVersion v1, kind Pod, name
//     "<sts>-<ordinal>" and the StatefulSet's namespace (a generateName is dropped). Dropped:
//     ownerReferences (the pod must outlive a StatefulSet being deleted), status and
//     server-set metadata (uid, resourceVersion, creationTimestamp, deletion fields...).
//   - labels: the template's, then kScaledownPodLabel = <pod name>, kOperationLabel =
//     label_value(operation_id), kStatefulSetLabel = label_value(<sts>), kPurposeLabel =
//     kDrainPurpose (ours win over the template's); annotations: the template's, then
//     kScaledownPodOwnerAnnotation = <sts> and kOperationLabel = the full operation id.
//   - spec.hostname "<sts>-<ordinal>" and spec.subdomain = spec.serviceName (when set), as the
//     replica had them, unless the template sets them; spec.restartPolicy OnFailure when unset.
//   - for each volumeClaimTemplate (in order) the volume named after it, on the claim
//     naming::claim_name(<template>, <sts>, <ordinal>); a template's volume of that name is
//     replaced in place (and any later one of that name dropped).
// Nothing of the StatefulSet's own pod template is copied (not even serviceAccountName).
// Errors (nothing is to be created): see CleanupPodProblem. MatchesSelector because the
// StatefulSet controller adopts an orphan pod that has its name pattern and matches its
// selector, and would then own (and delete) the cleanup pod.
std::expected<Json, CleanupPodError> cleanup_pod(const Json& statefulset, int ordinal,
                                                 std::string_view operation_id);

// The re-seed pod of a recovered `ordinal` of `statefulset` for operation `operation_id`, built
// from kRecoveryPodTemplateAnnotation by the rules of cleanup_pod() but for: its name
// naming::reseed_pod(<sts>, <ordinal>) (spec.hostname is still "<sts>-<ordinal>": the
// replica's identity); labels kOperationLabel, kStatefulSetLabel and kPurposeLabel =
// kReseedPurpose (no scaledown label or owner annotation: it is no cleanup pod); restartPolicy
// Never when unset, and Never or OnFailure only (it runs once; OnFailure retries its container
// until the template's activeDeadlineSeconds, if any, fails it).
std::expected<Json, CleanupPodError> reseed_pod(const Json& statefulset, int ordinal,
                                                std::string_view operation_id);
// Whether the StatefulSet has a non-empty kRecoveryPodTemplateAnnotation (false when its
// annotations are unreadable).
bool has_reseed_template(const Json& statefulset);

// Whether `pod` is a cleanup pod of the StatefulSet `sts_name`: its annotation
// kScaledownPodOwnerAnnotation says so. Our labels are not required: the old controller's
// cleanup pods carry only that annotation and the scaledown-pod label.
bool is_cleanup_pod(const Json& pod, std::string_view sts_name);

// Whether a pod carrying `labels` matches `selector` (a metav1.LabelSelector as JSON: every
// matchLabels entry and every matchExpressions requirement: In, NotIn, Exists, DoesNotExist).
// An empty selector matches everything, a null one nothing. An error text on a malformed
// selector (unknown operator, wrong types).
std::expected<bool, std::string> selector_matches(const Json& selector, const Json& labels);

}  // namespace stsresize
