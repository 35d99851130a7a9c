#pragma once
// The explicit trigger: a user asks for new volumeClaimTemplates with an annotation on the
// StatefulSet, and stsresize re-creates the StatefulSet with them (templates are immutable)
// before resizing the claims as usual.
//
//   stsresize.dev/resize         '{"data":{"storage":"20Gi","storageClassName":"fast"}}'
//                                per template name: "storage" and/or "storageClassName"
//   stsresize.dev/resize-status  written by stsresize when it refuses a request: "rejected: <why>"
//
// The re-created object's definition is kept in a ConfigMap while the StatefulSet does not
// exist, so that no crash can lose it (states/update_template.cc). Pure: no I/O here.
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"
#include "engine/planner.h"
#include "engine/vocabulary.h"

namespace stsresize {

// Key of the definition (StatefulSet JSON) in the ConfigMap's data.
inline constexpr std::string_view kDefinitionKey = "statefulset";

// The request annotation's text; nullopt when the StatefulSet has none.
std::optional<std::string> resize_request_of(const Json& statefulset);

// Strict: a non-empty JSON object of template name -> a non-empty object with only "storage"
// (a quantity string) and/or "storageClassName" (a non-empty string). Anything else — not JSON,
// an unknown key, a wrong type, a bad quantity, nothing asked — is an error saying what (not
// naming the annotation: callers say what they read). Changes come out sorted by template name.
std::expected<std::vector<TemplateChange>, std::string> parse_resize_request(std::string_view text);

// `statefulset` with the changes applied to spec.volumeClaimTemplates; an error naming the
// template when the StatefulSet has none of that name.
std::expected<Json, std::string> with_template_changes(Json statefulset,
                                                       const std::vector<TemplateChange>& changes);

struct ValidatedRequest {
  std::vector<TemplateChange> changes;
  std::string trigger;   // for people: "requested data 1Gi -> 2Gi (3 claims)"
  bool shrinks = false;  // a claim would be shrunk: Measuring comes first
};
// Everything checked before anything is touched: the request parses, every template exists,
// every StorageClass named exists, the request changes the templates, and the changed
// StatefulSet plans a resize of at least one claim (engine/planner.h). A shrink passes: whether
// its data fits is measured next (Phase::Measuring), before the template is changed.
std::expected<ValidatedRequest, std::string> validate_resize_request(
    const Json& statefulset, std::string_view request, const std::vector<Json>& claims,
    const std::vector<Json>& storage_classes);
// As above when the StorageClasses could not be read: the classes named are not checked, and
// the plan is the Copy path's (engine/planner.h).
std::expected<ValidatedRequest, std::string> validate_resize_request(
    const Json& statefulset, std::string_view request, const std::vector<Json>& claims,
    StorageClassesUnknown);

// The StatefulSet to create in place of `live`: its apiVersion, kind, metadata (labels,
// annotations, ownerReferences...) and spec, with `op.template_changes` applied, the request
// and status annotations removed and the state annotations describing `op`. Server-set fields
// (uid, resourceVersion, generation, creationTimestamp, managedFields, deletion fields) and
// status are dropped.
std::expected<Json, std::string> statefulset_definition(const Json& live, const Operation& op);

// The ConfigMap holding `definition`: name naming::definition_config_map, label
// stsresize.dev/statefulset = naming::label_value(<sts>) (to select and watch them), annotation
// of the same key = the full StatefulSet name (a label value is cut at 63 characters), and
// annotation stsresize.dev/operation = op.id.
Json definition_config_map(const Operation& op, const Json& definition);
// The definition kept in `config_map`, checked: the label names `name`, the data holds a
// StatefulSet JSON whose namespace and name are `ns` and `name`.
std::expected<Json, std::string> definition_from_config_map(const Json& config_map,
                                                            std::string_view ns,
                                                            std::string_view name);

}  // namespace stsresize
