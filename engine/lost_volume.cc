#include "engine/lost_volume.h"

#include "engine/duration.h"
#include "engine/k8s_objects.h"
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
  return setting;
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
