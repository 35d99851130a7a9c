#include "engine/resize_request.h"

#include <algorithm>
#include <map>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/text.h"

namespace stsresize {

namespace {

std::string template_names(const std::vector<k8s::ClaimTemplate>& templates) {
  std::string out;
  for (const k8s::ClaimTemplate& tmpl : templates) {
    if (!out.empty()) out += ", ";
    out += tmpl.name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::optional<std::string> resize_request_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kResizeRequestAnnotation);
  if (!value || !value->has_value()) return std::nullopt;
  return **value;
}

std::expected<std::vector<TemplateChange>, std::string> parse_resize_request(
    std::string_view text) {
  // The annotation is not named here: every caller says what it read ("annotation
  // stsresize.dev/resize: ...", "its stsresize.dev/resize request is invalid: ..."), as for the
  // other refusals of validate_resize_request.
  const Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return std::unexpected(std::string{"not valid JSON (expected e.g. "} +
                           R"({"data":{"storage":"20Gi"}}))");
  }
  if (!document.is_object()) {
    return std::unexpected(std::string{"must be a JSON object of volumeClaimTemplate names"});
  }
  if (document.empty()) {
    return std::unexpected(std::string{
        "an empty object asks for nothing: name a volumeClaimTemplate and its new storage or "
        "storageClassName"});
  }
  std::vector<TemplateChange> changes;
  for (const auto& [name, fields] : document.items()) {
    const std::string at = "template " + quote(name);
    if (!fields.is_object() || fields.empty()) {
      return std::unexpected(at + ": expected an object with \"storage\" and/or " +
                             "\"storageClassName\"");
    }
    TemplateChange change;
    change.template_name = name;
    for (const auto& [key, value] : fields.items()) {
      if (key != "storage" && key != "storageClassName") {
        return std::unexpected(at + ": unknown field " + quote(key) +
                               " (only \"storage\" and \"storageClassName\")");
      }
      if (!value.is_string() || value.get<std::string>().empty()) {
        return std::unexpected(at + ": " + quote(key) + " must be a non-empty string");
      }
      const std::string text_value = value.get<std::string>();
      if (key == "storage") {
        auto quantity = Quantity::parse(text_value);
        if (!quantity) return std::unexpected(at + ": storage: " + quantity.error());
        if (quantity->bytes() == 0) return std::unexpected(at + ": storage must not be zero");
        change.storage = *quantity;
      } else {
        change.storage_class = text_value;
      }
    }
    changes.push_back(std::move(change));
  }
  std::ranges::sort(changes, {}, &TemplateChange::template_name);
  return changes;
}

std::expected<Json, std::string> with_template_changes(Json statefulset,
                                                       const std::vector<TemplateChange>& changes) {
  auto templates = k8s::claim_templates(statefulset);
  if (!templates) return std::unexpected(templates.error());
  for (const TemplateChange& change : changes) {
    Json* found = nullptr;
    for (Json& tmpl : statefulset["spec"]["volumeClaimTemplates"]) {
      auto name = k8s::name(tmpl);
      if (name && *name == change.template_name) found = &tmpl;
    }
    if (!found) {
      return std::unexpected(k8s::describe(statefulset) + " has no volumeClaimTemplate " +
                             quote(change.template_name) +
                             " (it has: " + template_names(*templates) + ")");
    }
    if (change.storage) {
      (*found)["spec"]["resources"]["requests"]["storage"] = change.storage->to_string();
    }
    if (!change.storage_class.empty()) (*found)["spec"]["storageClassName"] = change.storage_class;
  }
  return statefulset;
}

namespace {

// `storage_classes` null: they could not be read (StorageClassesUnknown).
std::expected<ValidatedRequest, std::string> validate(const Json& statefulset,
                                                      std::string_view request,
                                                      const std::vector<Json>& claims,
                                                      const std::vector<Json>* storage_classes) {
  auto changes = parse_resize_request(request);
  if (!changes) return std::unexpected(changes.error());
  auto templates = k8s::claim_templates(statefulset);
  if (!templates) return std::unexpected(templates.error());
  std::map<std::string, const k8s::ClaimTemplate*> by_name;
  for (const k8s::ClaimTemplate& tmpl : *templates) by_name.emplace(tmpl.name, &tmpl);
  bool changes_something = false;
  for (const TemplateChange& change : *changes) {
    auto found = by_name.find(change.template_name);
    if (found == by_name.end()) {
      return std::unexpected("volumeClaimTemplate " + quote(change.template_name) +
                             " does not exist (templates: " + template_names(*templates) + ")");
    }
    const k8s::ClaimTemplate& tmpl = *found->second;
    if (!change.storage_class.empty() && storage_classes != nullptr &&
        std::ranges::none_of(*storage_classes, [&](const Json& storage_class) {
          auto name = k8s::name(storage_class);
          return name && *name == change.storage_class;
        })) {
      return std::unexpected("template " + quote(tmpl.name) + ": StorageClass " +
                             quote(change.storage_class) + " does not exist");
    }
    const bool new_size = change.storage && change.storage != tmpl.storage;
    const bool new_class =
        !change.storage_class.empty() && tmpl.storage_class != change.storage_class;
    changes_something = changes_something || new_size || new_class;
  }
  if (!changes_something) {
    return std::unexpected("the templates already ask for this: nothing to change");
  }
  auto changed = with_template_changes(statefulset, *changes);
  if (!changed) return std::unexpected(changed.error());
  auto plan = storage_classes != nullptr ? plan_resize(*changed, claims, *storage_classes)
                                         : plan_resize(*changed, claims, StorageClassesUnknown{});
  if (!plan) return std::unexpected(plan.error());
  if (!plan->has_value()) {
    return std::unexpected(
        "every claim already has the size and class of the requested templates, so there is "
        "nothing to resize");
  }
  return ValidatedRequest{std::move(*changes), "requested " + (*plan)->trigger,
                          std::ranges::any_of((*plan)->claims, shrinks)};
}

}  // namespace

std::expected<ValidatedRequest, std::string> validate_resize_request(
    const Json& statefulset, std::string_view request, const std::vector<Json>& claims,
    const std::vector<Json>& storage_classes) {
  return validate(statefulset, request, claims, &storage_classes);
}

std::expected<ValidatedRequest, std::string> validate_resize_request(
    const Json& statefulset, std::string_view request, const std::vector<Json>& claims,
    StorageClassesUnknown) {
  return validate(statefulset, request, claims, nullptr);
}

std::expected<Json, std::string> statefulset_definition(const Json& live, const Operation& op) {
  if (!live.is_object() || !live.contains("metadata") || !live["metadata"].is_object() ||
      !live.contains("spec") || !live["spec"].is_object()) {
    return std::unexpected(k8s::describe(live) + ": no metadata or spec to re-create it from");
  }
  Json metadata = live["metadata"];
  for (const char* server_set :
       {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
        "deletionTimestamp", "deletionGracePeriodSeconds"}) {
    metadata.erase(server_set);
  }
  Json definition{{"apiVersion", live.value("apiVersion", "apps/v1")},
                  {"kind", "StatefulSet"},
                  {"metadata", std::move(metadata)},
                  {"spec", live["spec"]}};
  auto changed = with_template_changes(std::move(definition), op.template_changes);
  if (!changed) return std::unexpected(changed.error());
  for (std::string_view key : {kResizeRequestAnnotation, kResizeStatusAnnotation}) {
    if (auto removed = k8s::remove_annotation(*changed, key); !removed) {
      return std::unexpected(removed.error());
    }
  }
  return with_operation(std::move(*changed), op);
}

Json definition_config_map(const Operation& op, const Json& definition) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata",
               {{"name", naming::definition_config_map(op.statefulset)},
                {"namespace", op.ns},
                {"labels", {{std::string{kStatefulSetLabel}, naming::label_value(op.statefulset)}}},
                {"annotations",
                 {{std::string{kOperationLabel}, op.id},
                  {std::string{kStatefulSetLabel}, op.statefulset}}}}},
              {"data", {{std::string{kDefinitionKey}, definition.dump()}}}};
}

std::expected<Json, std::string> definition_from_config_map(const Json& config_map,
                                                            std::string_view ns,
                                                            std::string_view name) {
  const std::string what = k8s::describe(config_map);
  auto label = k8s::label(config_map, kStatefulSetLabel);
  if (!label) return std::unexpected(label.error());
  if (!label->has_value() || **label != naming::label_value(name)) {
    return std::unexpected(what + ": label " + std::string{kStatefulSetLabel} +
                           " does not name StatefulSet " + std::string{name});
  }
  const Json* text = nullptr;
  if (auto data = config_map.find("data"); data != config_map.end() && data->is_object()) {
    if (auto found = data->find(kDefinitionKey); found != data->end() && found->is_string()) {
      text = &*found;
    }
  }
  if (!text) {
    return std::unexpected(what + ": no data." + std::string{kDefinitionKey} + " string");
  }
  Json definition = Json::parse(text->get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (definition.is_discarded() || !definition.is_object() ||
      definition.value("kind", "") != "StatefulSet") {
    return std::unexpected(what + ": data." + std::string{kDefinitionKey} +
                           " is not a StatefulSet in JSON");
  }
  auto def_name = k8s::name(definition);
  auto def_ns = k8s::namespace_of(definition);
  if (!def_name || !def_ns || *def_name != name || *def_ns != ns) {
    return std::unexpected(what + ": the definition is not that of StatefulSet " + std::string{ns} +
                           "/" + std::string{name});
  }
  return definition;
}

}  // namespace stsresize
