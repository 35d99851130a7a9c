#include "engine/cleanup_pod.h"

#include <algorithm>
#include <array>
#include <utility>

#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/text.h"
#include "engine/vocabulary.h"

namespace stsresize {

namespace {

// Metadata the API server sets, and what must not reach a cleanup pod: ownerReferences would
// let the garbage collector delete it with the StatefulSet it drains for.
constexpr std::array kDroppedMetadata = {"name",
                                         "namespace",
                                         "generateName",
                                         "uid",
                                         "resourceVersion",
                                         "generation",
                                         "creationTimestamp",
                                         "deletionTimestamp",
                                         "deletionGracePeriodSeconds",
                                         "managedFields",
                                         "selfLink",
                                         "ownerReferences"};

bool is_unset(const Json* value) {
  // Json::empty() is false for every string: compare the text.
  return value == nullptr || value->is_null() ||
         (value->is_string() && value->get_ref<const std::string&>().empty());
}

const Json* find(const Json& object, std::string_view key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool is_string_map(const Json& value) {
  return value.is_object() && std::ranges::all_of(value.items(), [](const auto& item) {
           return item.value().is_string();
         });
}

// "app=web, tier in (a, b), !canary" for messages.
std::string describe_selector(const Json& selector) {
  std::string out;
  const auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (const Json* labels = find(selector, "matchLabels"); labels && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      add(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
    }
  }
  if (const Json* expressions = find(selector, "matchExpressions");
      expressions && expressions->is_array()) {
    for (const Json& requirement : *expressions) add(requirement.dump());
  }
  return out.empty() ? std::string{"(everything)"} : out;
}

}  // namespace

std::optional<std::string> scaledown_pod_template(const Json& statefulset) {
  for (std::string_view key : {kScaledownPodTemplateAnnotation, kScaledownPodTemplateAlias}) {
    auto text = k8s::annotation(statefulset, key);
    if (!text) return std::nullopt;
    if (*text && !(*text)->empty()) return **text;
  }
  return std::nullopt;
}

std::expected<bool, std::string> selector_matches(const Json& selector, const Json& labels) {
  if (selector.is_null()) return false;
  if (!selector.is_object()) return std::unexpected(std::string{"the selector is not an object"});
  if (!is_string_map(labels)) return std::unexpected(std::string{"labels are not strings"});
  bool matches = true;
  if (const Json* wanted = find(selector, "matchLabels"); !is_unset(wanted)) {
    if (!is_string_map(*wanted)) {
      return std::unexpected(std::string{"selector.matchLabels is not an object of strings"});
    }
    for (const auto& [key, value] : wanted->items()) {
      const Json* have = find(labels, key);
      matches = matches && have != nullptr && *have == value;
    }
  }
  const Json* expressions = find(selector, "matchExpressions");
  if (is_unset(expressions)) return matches;
  if (!expressions->is_array()) {
    return std::unexpected(std::string{"selector.matchExpressions is not an array"});
  }
  for (const Json& requirement : *expressions) {
    const Json* key = requirement.is_object() ? find(requirement, "key") : nullptr;
    const Json* op = requirement.is_object() ? find(requirement, "operator") : nullptr;
    if (key == nullptr || !key->is_string() || op == nullptr || !op->is_string()) {
      return std::unexpected("selector requirement " + requirement.dump() +
                             " needs a key and an operator");
    }
    const Json* values = find(requirement, "values");
    const bool has_values = !is_unset(values);
    if (has_values && !(values->is_array() && std::ranges::all_of(*values, [](const Json& v) {
                          return v.is_string();
                        }))) {
      return std::unexpected("selector requirement " + requirement.dump() +
                             ": values is not an array of strings");
    }
    const Json* have = find(labels, key->get<std::string>());
    const bool in_values =
        have != nullptr && has_values && std::ranges::find(*values, *have) != values->end();
    const std::string operation = op->get<std::string>();
    if (operation == "In") {
      matches = matches && in_values;
    } else if (operation == "NotIn") {
      matches = matches && !in_values;
    } else if (operation == "Exists") {
      matches = matches && have != nullptr;
    } else if (operation == "DoesNotExist") {
      matches = matches && have == nullptr;
    } else {
      return std::unexpected("selector requirement " + requirement.dump() + ": unknown operator " +
                             quote(operation));
    }
  }
  return matches;
}

namespace {

std::expected<Json, CleanupPodError> template_pod(PodUse use, const Json& statefulset, int ordinal,
                                                  std::string_view operation_id) {
  const bool cleanup = use == PodUse::Cleanup;
  CleanupPodError error;
  error.use = use;
  auto sts_name = k8s::name(statefulset);
  auto ns = k8s::namespace_of(statefulset);
  error.statefulset = (ns ? *ns : std::string{}) + "/" + (sts_name ? *sts_name : std::string{});
  const auto fail = [&error](CleanupPodProblem problem, std::string field = {},
                             std::string value = {}, std::string detail = {}) {
    error.problem = problem;
    error.field = std::move(field);
    error.value = std::move(value);
    error.detail = std::move(detail);
    return std::unexpected(error);
  };
  const auto unreadable = [&fail](const std::string& why) {
    return fail(CleanupPodProblem::StatefulSetUnreadable, {}, {}, why);
  };
  if (!sts_name) return unreadable(sts_name.error());
  if (!ns) return unreadable(ns.error());
  if (ordinal < 0) return fail(CleanupPodProblem::NegativeOrdinal, {}, std::to_string(ordinal));

  // --- the template, from either key (a re-seed has one) ---
  auto primary = k8s::annotation(
      statefulset, cleanup ? kScaledownPodTemplateAnnotation : kRecoveryPodTemplateAnnotation);
  if (!primary) return unreadable(primary.error());
  auto alias = cleanup ? k8s::annotation(statefulset, kScaledownPodTemplateAlias)
                       : k8s::Result<std::optional<std::string>>{std::nullopt};
  if (!alias) return unreadable(alias.error());
  const bool has_primary = *primary && !(*primary)->empty();
  const bool has_alias = *alias && !(*alias)->empty();
  if (!has_primary && !has_alias) return fail(CleanupPodProblem::NoTemplate);
  error.key = std::string{!cleanup      ? kRecoveryPodTemplateAnnotation
                          : has_primary ? kScaledownPodTemplateAnnotation
                                        : kScaledownPodTemplateAlias};
  const std::string text = has_primary ? **primary : **alias;
  if (has_primary && has_alias && **primary != **alias) {
    // The same Pod written differently (spacing, key order) is the same template.
    const Json a = Json::parse(**primary, nullptr, /*allow_exceptions=*/false);
    const Json b = Json::parse(**alias, nullptr, /*allow_exceptions=*/false);
    if (a.is_discarded() || b.is_discarded() || a != b) {
      error.other_key = std::string{kScaledownPodTemplateAlias};
      return fail(CleanupPodProblem::TemplatesDiffer);
    }
  }
  const Json tmpl = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (tmpl.is_discarded()) return fail(CleanupPodProblem::NotJson, {}, text);
  if (!tmpl.is_object()) return fail(CleanupPodProblem::NotAnObject, {}, text);

  // --- metadata ---
  Json metadata = Json::object();
  if (const Json* given = find(tmpl, "metadata"); given != nullptr && !given->is_null()) {
    if (!given->is_object()) {
      return fail(CleanupPodProblem::TemplateMalformed, "metadata", {}, "an object");
    }
    metadata = *given;
  }
  for (const char* key : kDroppedMetadata) metadata.erase(key);
  for (const char* key : {"labels", "annotations"}) {
    const Json* map = find(metadata, key);
    if (map == nullptr || map->is_null()) {
      metadata[key] = Json::object();
    } else if (!is_string_map(*map)) {
      return fail(CleanupPodProblem::TemplateMalformed, std::string{"metadata."} + key, {},
                  "an object of strings");
    }
  }
  // The replica's name, its identity: a cleanup pod takes its place; a re-seed pod runs beside
  // the name the replica gets back.
  const std::string replica_name = *sts_name + "-" + std::to_string(ordinal);
  const std::string pod_name = cleanup ? replica_name : naming::reseed_pod(*sts_name, ordinal);
  metadata["name"] = pod_name;
  metadata["namespace"] = *ns;
  Json& labels = metadata["labels"];
  if (cleanup) labels[std::string{kScaledownPodLabel}] = naming::label_value(pod_name);
  labels[std::string{kOperationLabel}] = naming::label_value(operation_id);
  labels[std::string{kStatefulSetLabel}] = naming::label_value(*sts_name);
  labels[std::string{kPurposeLabel}] = cleanup ? kDrainPurpose : kReseedPurpose;
  Json& annotations = metadata["annotations"];
  if (cleanup) annotations[std::string{kScaledownPodOwnerAnnotation}] = *sts_name;
  annotations[std::string{kOperationLabel}] = operation_id;

  // --- spec ---
  const Json* given_spec = find(tmpl, "spec");
  if (given_spec == nullptr || given_spec->is_null()) return fail(CleanupPodProblem::NoSpec);
  if (!given_spec->is_object()) {
    return fail(CleanupPodProblem::TemplateMalformed, "spec", {}, "an object");
  }
  Json spec = *given_spec;
  const Json* containers = find(spec, "containers");
  if (containers == nullptr || containers->is_null()) return fail(CleanupPodProblem::NoContainers);
  if (!containers->is_array()) {
    return fail(CleanupPodProblem::TemplateMalformed, "spec.containers", {}, "an array");
  }
  if (containers->empty()) return fail(CleanupPodProblem::NoContainers);

  for (const char* key : {"restartPolicy", "hostname", "subdomain"}) {
    const Json* value = find(spec, key);
    if (value != nullptr && !value->is_null() && !value->is_string()) {
      return fail(CleanupPodProblem::TemplateMalformed, std::string{"spec."} + key, {}, "a string");
    }
  }
  if (const Json* policy = find(spec, "restartPolicy"); is_unset(policy)) {
    spec["restartPolicy"] = cleanup ? "OnFailure" : "Never";
  } else if (const std::string& given = policy->get_ref<const std::string&>();
             cleanup ? given != "OnFailure" : given != "Never" && given != "OnFailure") {
    return fail(CleanupPodProblem::RestartPolicy, {}, given);
  }
  // The replica's identity: apps key transaction logs and membership on the hostname.
  if (is_unset(find(spec, "hostname"))) spec["hostname"] = replica_name;
  if (is_unset(find(spec, "subdomain"))) {
    const Json* sts_spec = find(statefulset, "spec");
    const Json* service =
        sts_spec && sts_spec->is_object() ? find(*sts_spec, "serviceName") : nullptr;
    if (service != nullptr && !service->is_null() && !service->is_string()) {
      return unreadable("StatefulSet " + error.statefulset + ": spec.serviceName is not a string");
    }
    if (!is_unset(service)) {
      spec["subdomain"] = *service;
    } else {
      spec.erase("subdomain");
    }
  }

  // --- volumes: one per volumeClaimTemplate, on this ordinal's claim ---
  auto claim_templates = k8s::claim_templates(statefulset);
  if (!claim_templates) return unreadable(claim_templates.error());
  Json volumes = Json::array();
  if (const Json* given = find(spec, "volumes"); given != nullptr && !given->is_null()) {
    if (!given->is_array()) {
      return fail(CleanupPodProblem::TemplateMalformed, "spec.volumes", {}, "an array");
    }
    for (std::size_t i = 0; i < given->size(); ++i) {
      const Json& volume = (*given)[i];
      const Json* name = volume.is_object() ? find(volume, "name") : nullptr;
      if (name == nullptr || !name->is_string()) {
        return fail(CleanupPodProblem::TemplateMalformed,
                    "spec.volumes[" + std::to_string(i) + "].name", {}, "a string");
      }
    }
    volumes = *given;
  }
  for (const k8s::ClaimTemplate& claim_template : *claim_templates) {
    Json volume = {{"name", claim_template.name},
                   {"persistentVolumeClaim",
                    {{"claimName", naming::claim_name(claim_template.name, *sts_name, ordinal)}}}};
    const auto named = [&](const Json& v) { return v["name"] == claim_template.name; };
    auto first = std::ranges::find_if(volumes, named);
    if (first == volumes.end()) {
      volumes.push_back(std::move(volume));
      continue;
    }
    *first = std::move(volume);
    Json kept = Json::array();
    bool seen = false;
    for (Json& v : volumes) {
      if (named(v)) {
        if (seen) continue;
        seen = true;
      }
      kept.push_back(std::move(v));
    }
    volumes = std::move(kept);
  }
  if (!volumes.empty()) spec["volumes"] = std::move(volumes);

  // --- not the StatefulSet's to adopt ---
  const Json* sts_spec = find(statefulset, "spec");
  const Json* selector = sts_spec && sts_spec->is_object() ? find(*sts_spec, "selector") : nullptr;
  auto matches = selector_matches(selector ? *selector : Json{}, labels);
  if (!matches) return unreadable("StatefulSet " + error.statefulset + ": " + matches.error());
  if (*matches) {
    return fail(CleanupPodProblem::MatchesSelector, {}, {}, describe_selector(*selector));
  }

  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

}  // namespace

std::expected<Json, CleanupPodError> cleanup_pod(const Json& statefulset, int ordinal,
                                                 std::string_view operation_id) {
  return template_pod(PodUse::Cleanup, statefulset, ordinal, operation_id);
}

std::expected<Json, CleanupPodError> reseed_pod(const Json& statefulset, int ordinal,
                                                std::string_view operation_id) {
  return template_pod(PodUse::Reseed, statefulset, ordinal, operation_id);
}

bool has_reseed_template(const Json& statefulset) {
  auto text = k8s::annotation(statefulset, kRecoveryPodTemplateAnnotation);
  return text && *text && !(*text)->empty();
}

bool is_cleanup_pod(const Json& pod, std::string_view sts_name) {
  auto owner = k8s::annotation(pod, kScaledownPodOwnerAnnotation);
  return owner && *owner && **owner == sts_name;
}

std::string explain(const CleanupPodError& error) {
  const std::string sts = "StatefulSet " + error.statefulset + ": ";
  const bool cleanup = error.use == PodUse::Cleanup;
  const std::string pod = cleanup ? "cleanup pod" : "re-seed pod";
  const std::string the_template = "the " + pod + " template (annotation " + error.key + ")";
  switch (error.problem) {
    case CleanupPodProblem::NoTemplate:
      if (!cleanup) {
        return sts + "no re-seed pod template: annotation " +
               std::string{kRecoveryPodTemplateAnnotation} + " is not set";
      }
      return sts + "no cleanup pod template: neither annotation " +
             std::string{kScaledownPodTemplateAnnotation} + " nor " +
             std::string{kScaledownPodTemplateAlias} + " is set";
    case CleanupPodProblem::TemplatesDiffer:
      return sts + "annotations " + error.key + " and " + error.other_key +
             " both give a cleanup pod template, and they differ: keep one of them";
    case CleanupPodProblem::NotJson:
      return sts + the_template + " is not valid JSON: " + quote(error.value);
    case CleanupPodProblem::NotAnObject:
      return sts + the_template + " must be a JSON Pod object (metadata and spec), not " +
             quote(error.value);
    case CleanupPodProblem::NoSpec:
      return sts + the_template + " has no spec";
    case CleanupPodProblem::NoContainers:
      return sts + the_template + " has no containers (spec.containers)";
    case CleanupPodProblem::TemplateMalformed:
      return sts + the_template + ": " + error.field + " must be " + error.detail;
    case CleanupPodProblem::RestartPolicy:
      if (!cleanup) {
        return sts + the_template + " has spec.restartPolicy " + quote(error.value) +
               ": a re-seed pod runs once (leave restartPolicy unset, or set Never or OnFailure)";
      }
      return sts + the_template + " has spec.restartPolicy " + quote(error.value) +
             ": a cleanup pod must restart OnFailure (leave restartPolicy unset or set OnFailure)";
    case CleanupPodProblem::MatchesSelector:
      return sts + "the " + pod + "'s labels match the StatefulSet's selector (" + error.detail +
             "), so the StatefulSet controller would adopt the pod: give " + the_template +
             " labels the selector does not match";
    case CleanupPodProblem::NegativeOrdinal:
      return sts + "no " + pod + " for ordinal " + error.value + ": ordinals are 0 or more";
    case CleanupPodProblem::StatefulSetUnreadable:
      return "cannot build a " + pod + ": " + error.detail;
  }
  return sts + "cannot build a " + pod;
}

}  // namespace stsresize
