#include "engine/annotations.h"

#include <algorithm>
#include <charconv>

#include "engine/actions/request.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/operation_codec.h"
#include "engine/text.h"
#include "engine/timestamp.h"

namespace stsresize {

namespace {

const Json* metadata_map(const Json& object, std::string_view key) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return nullptr;
  auto map = metadata->find(key);
  if (map == metadata->end() || !map->is_object()) return nullptr;
  return &*map;
}

std::string metadata_string(const Json& object, std::string_view key) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  auto value = metadata->find(key);
  return value != metadata->end() && value->is_string() ? value->get<std::string>() : "";
}

}  // namespace

std::string encode_state_annotation(const Operation& operation) {
  return encode_operation(operation).dump();
}

std::expected<Operation, std::string> decode_state_annotation(std::string_view text) {
  const std::string where = "annotation " + std::string{kStateAnnotation};
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return std::unexpected(where + ": not valid JSON");
  return decode_operation(document, where);
}

std::expected<std::optional<Operation>, std::string> read_operation(const Json& statefulset) {
  const Json* annotations = metadata_map(statefulset, "annotations");
  if (!annotations) return std::nullopt;
  auto state = annotations->find(kStateAnnotation);
  if (state == annotations->end()) return std::nullopt;
  if (!state->is_string()) {
    return std::unexpected("annotation " + std::string{kStateAnnotation} + " is not a string");
  }
  auto operation = decode_state_annotation(state->get<std::string>());
  if (!operation) return std::unexpected(operation.error());
  const std::string ns = metadata_string(statefulset, "namespace");
  const std::string name = metadata_string(statefulset, "name");
  const std::string uid = metadata_string(statefulset, "uid");
  // While an explicit request re-creates the StatefulSet, the new object carries the state
  // written into its definition, which still names the old uid until StatefulSetRecreated.
  // So does the object a paused StatefulSet's resume creates (states/rolling.h: a rolling
  // resize after each ordinal, a recovery after its re-seed).
  const bool recreated_object =
      (operation->phase == Phase::UpdatingTemplate && !operation->template_changes.empty() &&
       !operation->statefulset_recreated) ||
      resumes_statefulset(*operation);
  if (operation->ns != ns || operation->statefulset != name ||
      (operation->sts_uid != uid && !recreated_object)) {
    return std::unexpected("annotation " + std::string{kStateAnnotation} + " describes " +
                           operation->ns + "/" + operation->statefulset + " (uid " +
                           operation->sts_uid + "), not this StatefulSet " + ns + "/" + name +
                           " (uid " + uid + ")");
  }
  return std::optional<Operation>{std::move(*operation)};
}

Json with_operation(Json statefulset, const Operation& operation) {
  Json& metadata = statefulset["metadata"];
  Json& annotations = metadata["annotations"];
  if (!annotations.is_object()) annotations = Json::object();
  const std::string state_key{kStateAnnotation};
  const std::string phase_key{kPhaseAnnotation};
  const std::string awaiting_key{kAwaitingApprovalAnnotation};
  if (operation.awaiting) {
    annotations[awaiting_key] = std::string{to_string(operation.awaiting->from)} + " -> " +
                                std::string{to_string(operation.awaiting->to)};
  } else {
    annotations.erase(awaiting_key);
  }
  const std::string original_key{kOriginalReplicasAnnotation};
  if (operation.phase == Phase::Completed) {
    annotations.erase(state_key);
    annotations.erase(phase_key);
    annotations.erase(original_key);
    Json last{{"id", operation.id},
              {"outcome", to_string(operation.phase)},
              {"finished", format_timestamp(operation.phase_since)}};
    if (operation.kind != OperationKind::Resize) last["kind"] = to_string(operation.kind);
    if (operation.kind == OperationKind::Drain) {
      // Completed says the drain ended, not that it drained: a scale back up cancels ordinals.
      const DrainResult result = drain_result(operation);
      last["drained"] = result.drained;
      last["cancelled"] = result.cancelled;
    }
    annotations[std::string{kLastOperationAnnotation}] = last.dump();
    return statefulset;
  }
  annotations[state_key] = encode_state_annotation(operation);
  annotations[phase_key] = std::string{to_string(operation.phase)};
  // What a resize scales back to; a drain changes no replica count.
  if (operation.kind == OperationKind::Resize) {
    annotations[original_key] = std::to_string(operation.original_replicas);
  }
  if (operation.phase == Phase::Failed) {
    Json& labels = metadata["labels"];
    if (!labels.is_object()) labels = Json::object();
    labels[std::string{kFailedLabel}] = "true";
  }
  return statefulset;
}

bool is_marked_failed(const Json& statefulset) {
  const Json* labels = metadata_map(statefulset, "labels");
  if (!labels) return false;
  auto label = labels->find(kFailedLabel);
  return label != labels->end() && *label == "true";
}

std::expected<std::optional<std::int32_t>, std::string> original_replicas_mark(
    const Json& statefulset) {
  auto text = k8s::annotation(statefulset, kOriginalReplicasAnnotation);
  if (!text) return std::unexpected(text.error());
  if (!text->has_value()) return std::nullopt;
  const std::string& value = **text;
  std::int32_t replicas = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), replicas);
  if (error != std::errc{} || end != value.data() + value.size() || replicas < 0) {
    return std::unexpected("annotation " + std::string{kOriginalReplicasAnnotation} + " is " +
                           quote(value) + ", not a replica count");
  }
  return replicas;
}

std::string last_operation_id(const Json& statefulset) {
  auto text = k8s::annotation(statefulset, kLastOperationAnnotation);
  if (!text || !text->has_value()) return {};
  const Json document = Json::parse(**text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object() || !document.contains("id") || !document.at("id").is_string()) {
    return {};
  }
  return document.at("id").get<std::string>();
}

std::vector<std::string> unfinished_backups(const Json& statefulset,
                                            const std::vector<Json>& claims) {
  std::vector<std::string> names;
  auto name = k8s::name(statefulset);
  if (!name) return names;
  const std::string owner = naming::label_value(*name);
  const std::string completed = last_operation_id(statefulset);
  for (const Json& claim : claims) {
    auto purpose = k8s::label(claim, kPurposeLabel);
    auto of = k8s::label(claim, kStatefulSetLabel);
    if (!purpose || !of || *purpose != kBackupPurpose || *of != owner) continue;
    auto operation = k8s::annotation(claim, kOperationLabel);
    if (operation && operation->has_value() && !completed.empty() && **operation == completed) {
      continue;
    }
    if (auto claim_name = k8s::name(claim)) names.push_back(*claim_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace stsresize
