#include "engine/actions/request.h"

#include "engine/k8s_objects.h"
#include "engine/strict_json.h"

namespace stsresize {

std::string_view to_string(Action action) {
  switch (action) {
    case Action::Approve:
      return "approve";
    case Action::Abort:
      return "abort";
    case Action::Retry:
      return "retry";
    case Action::Skip:
      return "skip";
  }
  return "unknown";
}

std::optional<Action> parse_action(std::string_view text) {
  for (Action action : kAllActions) {
    if (to_string(action) == text) return action;
  }
  return std::nullopt;
}

std::string_view to_string(ApprovalMode mode) {
  switch (mode) {
    case ApprovalMode::Auto:
      return "auto";
    case ApprovalMode::Manual:
      return "manual";
    case ApprovalMode::Step:
      return "step";
  }
  return "unknown";
}

ModeSetting approval_mode_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kModeAnnotation);
  if (!value || !value->has_value()) return {};
  const std::string& text = **value;
  if (text == "auto") return {ApprovalMode::Auto, {}};
  if (text == "manual") return {ApprovalMode::Manual, {}};
  if (text == "step") return {ApprovalMode::Step, {}};
  return {ApprovalMode::Manual, "annotation " + std::string{kModeAnnotation} + " is \"" + text +
                                    "\", not auto, manual or step: treated as manual"};
}

bool needs_approval(ApprovalMode mode, Phase from, Phase to, Trigger event) {
  (void)from;
  if (event == Trigger::CriticalError || event == Trigger::ScaleBackDone ||
      event == Trigger::Abort || event == Trigger::Skip || event == Trigger::BackupStale ||
      event == Trigger::RecreateAgain || event == Trigger::NodeReturned) {
    return false;
  }
  switch (mode) {
    case ApprovalMode::Auto:
      return false;
    case ApprovalMode::Manual:
      return true;
    case ApprovalMode::Step:
      // the steps that delete claims: a resize's sources, a drain's drained claims, a
      // recovery's lost claims
      return to == Phase::Recreating || to == Phase::DeletingClaims || to == Phase::ReplacingVolume;
  }
  return true;
}

std::string encode_advance_request(const AdvanceRequest& request) {
  return Json{{"action", to_string(request.action)},
              {"phase", to_string(request.phase)},
              {"operation", request.operation},
              {"by", request.by},
              {"at", request.at},
              {"nonce", request.nonce}}
      .dump();
}

std::expected<AdvanceRequest, std::string> decode_advance_request(std::string_view text) {
  const std::string where = "annotation " + std::string{kAdvanceAnnotation};
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return std::unexpected(where + ": not a JSON object");
  }
  StrictObject in{document, where};
  AdvanceRequest request;
  const std::string action = in.string("action");
  const std::string phase = in.string("phase");
  request.operation = in.string("operation");
  request.by = in.string("by");
  request.at = in.string("at");
  request.nonce = in.string("nonce");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  for (const std::string* field : std::initializer_list<const std::string*>{
           &action, &request.operation, &request.by, &request.nonce}) {
    if (field->empty()) {
      return std::unexpected(where + ": action, operation, by and nonce must not be empty");
    }
  }
  auto parsed_action = parse_action(action);
  if (!parsed_action) {
    return std::unexpected(where + ": unknown action \"" + action +
                           "\" (approve, abort, retry or skip)");
  }
  request.action = *parsed_action;
  auto parsed = parse_phase(phase);
  if (!parsed) return std::unexpected(where + ": unknown phase \"" + phase + "\"");
  request.phase = *parsed;
  return request;
}

std::optional<std::string> advance_request_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kAdvanceAnnotation);
  if (!value || !value->has_value()) return std::nullopt;
  return **value;
}

}  // namespace stsresize
