#include "engine/advance_request.h"

#include "engine/k8s_objects.h"
#include "engine/strict_json.h"

namespace stsresize {

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

bool needs_approval(ApprovalMode mode, Phase from, Phase to, PhaseEvent event) {
  (void)from;
  if (event == PhaseEvent::CriticalError || event == PhaseEvent::ScaleBackDone) return false;
  switch (mode) {
    case ApprovalMode::Auto:
      return false;
    case ApprovalMode::Manual:
      return true;
    case ApprovalMode::Step:
      return to == Phase::Recreating;  // the step that deletes the source claims
  }
  return true;
}

std::string encode_advance_request(const AdvanceRequest& request) {
  return Json{{"action", request.action},
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
  request.action = in.string("action");
  const std::string phase = in.string("phase");
  request.operation = in.string("operation");
  request.by = in.string("by");
  request.at = in.string("at");
  request.nonce = in.string("nonce");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  auto parsed = parse_phase(phase);
  if (!parsed) return std::unexpected(where + ": unknown phase \"" + phase + "\"");
  request.phase = *parsed;
  for (const auto* field : {&request.action, &request.operation, &request.by, &request.nonce}) {
    if (field->empty()) {
      return std::unexpected(where + ": action, operation, by and nonce must not be empty");
    }
  }
  return request;
}

std::optional<std::string> advance_request_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kAdvanceAnnotation);
  if (!value || !value->has_value()) return std::nullopt;
  return **value;
}

std::string approval_mismatch(const AdvanceRequest& request, const Operation& op) {
  if (request.action != "approve") {
    return "action \"" + request.action + "\" is not one this stsresize performs (approve)";
  }
  if (request.operation != op.id) {
    return "it approves operation " + request.operation + ", but the operation in progress is " +
           op.id;
  }
  if (request.phase != op.phase) {
    return "it approves leaving phase " + std::string{to_string(request.phase)} +
           ", but the operation is in phase " + std::string{to_string(op.phase)};
  }
  return {};
}

std::string approve_command(std::string_view ns, std::string_view name) {
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " --approve";
}

}  // namespace stsresize
