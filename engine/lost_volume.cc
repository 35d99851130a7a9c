#include "engine/lost_volume.h"

#include <charconv>

#include "engine/duration.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/timestamp.h"
#include "engine/vocabulary.h"

namespace stsresize {

namespace {

constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

std::optional<TimePoint> time_at(const Json& object, std::initializer_list<std::string_view> path) {
  const Json* at = &object;
  for (std::string_view key : path) {
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &(*at)[std::string{key}];
  }
  if (!at->is_string()) return std::nullopt;
  auto parsed = parse_timestamp(at->get<std::string>());
  if (!parsed) return std::nullopt;
  return *parsed;
}

}  // namespace

std::optional<std::string> pinned_node(const Json& volume) {
  const Json* terms = &volume;
  for (std::string_view key : {"spec", "nodeAffinity", "required", "nodeSelectorTerms"}) {
    if (!terms->is_object() || !terms->contains(key)) return std::nullopt;
    terms = &(*terms)[std::string{key}];
  }
  if (!terms->is_array() || terms->size() != 1 || !(*terms)[0].is_object()) return std::nullopt;
  const Json& term = (*terms)[0];
  if (term.contains("matchFields")) return std::nullopt;
  const Json expressions = term.value("matchExpressions", Json::array());
  if (!expressions.is_array()) return std::nullopt;
  std::optional<std::string> node;
  for (const Json& expression : expressions) {
    if (!expression.is_object()) return std::nullopt;
    if (expression.value("key", "") != kHostnameLabel) continue;
    const Json values = expression.value("values", Json::array());
    if (node || expression.value("operator", "") != "In" || !values.is_array() ||
        values.size() != 1 || !values[0].is_string() || values[0].get<std::string>().empty()) {
      return std::nullopt;
    }
    node = values[0].get<std::string>();
  }
  return node;
}

NodeView view_node(const std::optional<Json>& node) {
  if (!node) return {NodeHealth::Gone, "deleted", std::nullopt};
  const Json& spec = node->value("spec", Json::object());
  for (const Json& taint : spec.value("taints", Json::array())) {
    if (taint.is_object() && taint.value("key", "") == kOutOfServiceTaint) {
      return {NodeHealth::Gone, "out-of-service", time_at(taint, {"timeAdded"})};
    }
  }
  auto ready = k8s::condition(*node, "Ready");
  if (ready && ready->has_value() && (*ready)->status == "True") return {};
  return {NodeHealth::NotReady, "", std::nullopt};
}

std::string_view to_string(RecoveryMode mode) {
  switch (mode) {
    case RecoveryMode::Never:
      return "never";
    case RecoveryMode::Manual:
      return "manual";
    case RecoveryMode::Auto:
      return "auto";
  }
  return "never";
}

std::expected<RecoverySetting, std::string> recovery_setting(const Json& statefulset,
                                                             Duration default_grace) {
  RecoverySetting setting;
  setting.grace = default_grace;
  auto mode = k8s::annotation(statefulset, kLostVolumeRecoveryAnnotation);
  if (!mode) return std::unexpected(mode.error());
  if (!mode->has_value()) return setting;
  if (**mode == "manual") {
    setting.mode = RecoveryMode::Manual;
  } else if (**mode == "auto") {
    setting.mode = RecoveryMode::Auto;
  } else {
    return std::unexpected("annotation " + std::string{kLostVolumeRecoveryAnnotation} + ": \"" +
                           **mode + "\" is neither \"manual\" nor \"auto\"");
  }
  auto grace = k8s::annotation(statefulset, kLostVolumeGraceAnnotation);
  if (!grace) return std::unexpected(grace.error());
  if (grace->has_value()) {
    auto parsed = parse_duration(**grace);
    if (!parsed) {
      return std::unexpected("annotation " + std::string{kLostVolumeGraceAnnotation} + ": " +
                             parsed.error());
    }
    setting.grace = *parsed;
  }
  auto bound = k8s::annotation(statefulset, kLostVolumeMaxUnavailableAnnotation);
  if (!bound) return std::unexpected(bound.error());
  if (bound->has_value()) {
    const std::string& text = **bound;
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value < 1) {
      return std::unexpected("annotation " + std::string{kLostVolumeMaxUnavailableAnnotation} +
                             ": \"" + text + "\" is not a whole number of replicas, 1 or more");
    }
    setting.max_unavailable = value;
  }
  return setting;
}

std::expected<Json, std::string> recovered_claim(const Json& statefulset,
                                                 std::string_view template_name, int ordinal,
                                                 std::string_view lost_volume) {
  auto name = k8s::name(statefulset);
  if (!name) return std::unexpected(name.error());
  auto ns = k8s::namespace_of(statefulset);
  if (!ns) return std::unexpected(ns.error());
  const Json templates =
      statefulset.value("spec", Json::object()).value("volumeClaimTemplates", Json::array());
  const Json* found = nullptr;
  if (templates.is_array()) {
    for (const Json& t : templates) {
      if (t.is_object() && t.value("metadata", Json::object()).value("name", "") == template_name) {
        found = &t;
      }
    }
  }
  if (found == nullptr) {
    return std::unexpected("the StatefulSet has no volumeClaimTemplate \"" +
                           std::string{template_name} + "\"");
  }
  auto selector = k8s::selector_match_labels(statefulset);
  if (!selector) return std::unexpected(selector.error());
  Json metadata = found->value("metadata", Json::object());
  if (!metadata.is_object())
    return std::unexpected(std::string{"a template's metadata is malformed"});
  Json kept = Json::object();
  for (const char* key : {"labels", "annotations"}) {
    if (metadata.contains(key) && metadata[key].is_object()) kept[key] = metadata[key];
  }
  kept["name"] = naming::claim_name(template_name, *name, ordinal);
  kept["namespace"] = *ns;
  if (!kept.contains("labels")) kept["labels"] = Json::object();
  for (const auto& [key, value] : *selector) kept["labels"][key] = value;
  if (!kept.contains("annotations")) kept["annotations"] = Json::object();
  kept["annotations"][std::string{kRecoveredFromAnnotation}] = lost_volume;
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", std::move(kept)},
              {"spec", found->value("spec", Json::object())}};
}

std::string bound_after_loss(const Json& claim, const Json& volume, TimePoint lost_at) {
  const auto created = time_at(claim, {"metadata", "creationTimestamp"});
  const auto volume_created = time_at(volume, {"metadata", "creationTimestamp"});
  // When the volume last changed phase (to Bound, for a bound volume); absent on API servers
  // before 1.31, where the volume's creation stands in for it.
  const auto bound = time_at(volume, {"status", "lastPhaseTransitionTime"});
  // Timestamps have whole seconds: equal to the loss's second is not "before" it.
  const TimePoint loss = std::chrono::floor<std::chrono::seconds>(lost_at);
  if (!created || *created >= loss) return "the claim was created after the node was lost";
  if (!volume_created || *volume_created >= loss) {
    return "its volume was created after the node was lost";
  }
  if (bound && *bound >= loss) return "its volume was bound after the node was lost";
  return {};
}

}  // namespace stsresize
