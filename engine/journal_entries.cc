#include "engine/journal_entries.h"

#include <set>
#include <utility>
#include <vector>

#include "engine/operation_codec.h"
#include "engine/strict_json.h"

namespace stsresize {

namespace {

using namespace events;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

template <class Enum>
Enum read_enum(StrictObject& in, std::string_view key,
               std::optional<Enum> (*parse)(std::string_view), Enum fallback) {
  const std::string text = in.string(key);
  if (!in.ok()) return fallback;
  if (auto value = parse(text)) return *value;
  in.fail(in.where() + ": unknown value \"" + text + "\" for \"" + std::string{key} + "\"");
  return fallback;
}

TreeSummary read_summary(StrictObject& in, std::string_view key) {
  const Json& object = in.object(key);
  if (!in.ok()) return {};
  auto summary = decode_tree_summary(object, in.where() + "." + std::string{key});
  if (!summary) {
    in.fail(summary.error());
    return {};
  }
  return *summary;
}

std::expected<Event, std::string> decode_payload(std::string_view type, StrictObject& in) {
  Event event;
  if (type == "OperationStarted") {
    OperationStarted e;
    e.trigger = in.string("trigger");
    e.sts_uid = in.string("stsUid");
    const std::int64_t replicas = in.integer("originalReplicas");
    if (in.ok() && (replicas < 0 || replicas > INT32_MAX)) {
      in.fail(in.where() + ": originalReplicas out of range");
    }
    e.original_replicas = static_cast<std::int32_t>(replicas);
    event = e;
  } else if (type == "TemplateUpdateRequested") {
    TemplateUpdateRequested e;
    const Json& changes = in.array("changes");
    if (in.ok()) {
      auto decoded = decode_template_changes(changes, in.where() + ".changes");
      if (!decoded) {
        in.fail(decoded.error());
      } else {
        e.changes = std::move(*decoded);
      }
    }
    event = e;
  } else if (type == "DefinitionSaved") {
    DefinitionSaved e;
    e.config_map = in.string("configMap");
    e.definition = in.object("definition");
    event = e;
  } else if (type == "StatefulSetRecreated") {
    event = StatefulSetRecreated{in.string("uid")};
  } else if (type == "Planned") {
    Planned e;
    e.path = read_enum(in, "path", &parse_path, Path::Undecided);
    const Json& claims = in.array("claims");
    if (in.ok()) {
      for (std::size_t i = 0; i < claims.size(); ++i) {
        auto claim =
            decode_claim_plan(claims[i], in.where() + ".claims[" + std::to_string(i) + "]");
        if (!claim) {
          in.fail(claim.error());
          break;
        }
        e.claims.push_back(std::move(*claim));
      }
    }
    event = e;
  } else if (type == "PhaseChanged") {
    PhaseChanged e;
    e.from = read_enum(in, "from", &parse_phase, Phase::Pending);
    e.to = read_enum(in, "to", &parse_phase, Phase::Pending);
    e.event = read_enum(in, "event", &parse_phase_event, PhaseEvent::StepDone);
    event = e;
  } else if (type == "ActionIntended") {
    ActionIntended e;
    e.phase = read_enum(in, "phase", &parse_phase, Phase::Pending);
    e.action = in.string("action");
    e.target = in.string("target");
    e.detail = in.string("detail");
    event = e;
  } else if (type == "BackupVerified") {
    BackupVerified e{in.string("claim"), read_summary(in, "summary")};
    // Absent in records written before the fence recorded it (0: unknown).
    if (in.ok() && in.has("generation")) {
      e.generation = in.integer("generation");
      if (in.ok() && e.generation <= 0) in.fail(in.where() + ": generation must be positive");
    }
    event = e;
  } else if (type == "SourceDeleted") {
    event = SourceDeleted{in.string("claim")};
  } else if (type == "ClaimRecreated") {
    ClaimRecreated e;
    e.claim = in.string("claim");
    e.uid = in.string("uid");
    event = e;
  } else if (type == "ClaimDiscarded") {
    ClaimDiscarded e;
    e.claim = in.string("claim");
    e.uid = in.string("uid");
    e.reason = in.string("reason");
    event = e;
  } else if (type == "RestoreVerified") {
    event = RestoreVerified{in.string("claim"), read_summary(in, "summary")};
  } else if (type == "ClaimExpanded") {
    event = ClaimExpanded{in.string("claim")};
  } else if (type == "StepFailed") {
    StepFailed e;
    e.phase = read_enum(in, "phase", &parse_phase, Phase::Pending);
    e.reason = in.string("reason");
    e.critical = in.boolean("critical");
    event = e;
  } else if (type == "Resumed") {
    const Json& snapshot = in.object("snapshot");
    Operation operation;
    if (in.ok()) {
      auto decoded = decode_operation(snapshot, in.where() + ".snapshot");
      if (decoded) {
        operation = std::move(*decoded);
      } else {
        in.fail(decoded.error());
      }
    }
    event = Resumed{std::move(operation)};
  } else if (type == "OperationFinished") {
    event = OperationFinished{read_enum(in, "outcome", &parse_phase, Phase::Completed)};
  } else if (type == "ApprovalAwaited") {
    ApprovalAwaited e;
    e.from = read_enum(in, "from", &parse_phase, Phase::Pending);
    e.to = read_enum(in, "to", &parse_phase, Phase::Pending);
    e.event = read_enum(in, "event", &parse_phase_event, PhaseEvent::StepDone);
    e.mode = in.string("mode");
    event = e;
  } else if (type == "OperatorAction") {
    OperatorAction e;
    e.action = in.string("action");
    e.phase = read_enum(in, "phase", &parse_phase, Phase::Pending);
    e.by = in.string("by");
    e.at = in.string("at");
    e.nonce = in.string("nonce");
    e.refused = in.string("refused");
    event = e;
  } else {
    return std::unexpected("unknown event type \"" + std::string{type} + "\"");
  }
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  return event;
}

}  // namespace

std::string_view event_type(const Event& event) {
  return std::visit(Overloaded{
                        [](const OperationStarted&) { return "OperationStarted"; },
                        [](const TemplateUpdateRequested&) { return "TemplateUpdateRequested"; },
                        [](const DefinitionSaved&) { return "DefinitionSaved"; },
                        [](const StatefulSetRecreated&) { return "StatefulSetRecreated"; },
                        [](const Planned&) { return "Planned"; },
                        [](const PhaseChanged&) { return "PhaseChanged"; },
                        [](const ActionIntended&) { return "ActionIntended"; },
                        [](const BackupVerified&) { return "BackupVerified"; },
                        [](const SourceDeleted&) { return "SourceDeleted"; },
                        [](const ClaimRecreated&) { return "ClaimRecreated"; },
                        [](const ClaimDiscarded&) { return "ClaimDiscarded"; },
                        [](const RestoreVerified&) { return "RestoreVerified"; },
                        [](const ClaimExpanded&) { return "ClaimExpanded"; },
                        [](const StepFailed&) { return "StepFailed"; },
                        [](const Resumed&) { return "Resumed"; },
                        [](const OperationFinished&) { return "OperationFinished"; },
                        [](const ApprovalAwaited&) { return "ApprovalAwaited"; },
                        [](const OperatorAction&) { return "OperatorAction"; },
                    },
                    event);
}

Json encode_event_data(const Event& event) {
  return std::visit(
      Overloaded{
          [](const OperationStarted& e) {
            return Json{{"trigger", e.trigger},
                        {"stsUid", e.sts_uid},
                        {"originalReplicas", e.original_replicas}};
          },
          [](const TemplateUpdateRequested& e) {
            return Json{{"changes", encode_template_changes(e.changes)}};
          },
          [](const DefinitionSaved& e) {
            return Json{{"configMap", e.config_map}, {"definition", e.definition}};
          },
          [](const StatefulSetRecreated& e) {
            return Json{{"uid", e.uid}};
          },
          [](const Planned& e) {
            Json claims = Json::array();
            for (const ClaimPlan& claim : e.claims) claims.push_back(encode_claim_plan(claim));
            return Json{{"path", to_string(e.path)}, {"claims", std::move(claims)}};
          },
          [](const PhaseChanged& e) {
            return Json{{"from", to_string(e.from)},
                        {"to", to_string(e.to)},
                        {"event", to_string(e.event)}};
          },
          [](const ActionIntended& e) {
            return Json{{"phase", to_string(e.phase)},
                        {"action", e.action},
                        {"target", e.target},
                        {"detail", e.detail}};
          },
          [](const BackupVerified& e) {
            Json data{{"claim", e.claim}, {"summary", encode_tree_summary(e.summary)}};
            if (e.generation != 0) data["generation"] = e.generation;
            return data;
          },
          [](const SourceDeleted& e) {
            return Json{{"claim", e.claim}};
          },
          [](const ClaimDiscarded& e) {
            return Json{{"claim", e.claim}, {"uid", e.uid}, {"reason", e.reason}};
          },
          [](const ClaimRecreated& e) {
            return Json{{"claim", e.claim}, {"uid", e.uid}};
          },
          [](const RestoreVerified& e) {
            return Json{{"claim", e.claim}, {"summary", encode_tree_summary(e.summary)}};
          },
          [](const ClaimExpanded& e) {
            return Json{{"claim", e.claim}};
          },
          [](const StepFailed& e) {
            return Json{
                {"phase", to_string(e.phase)}, {"reason", e.reason}, {"critical", e.critical}};
          },
          [](const Resumed& e) {
            return Json{{"snapshot", encode_operation(e.snapshot)}};
          },
          [](const OperationFinished& e) {
            return Json{{"outcome", to_string(e.outcome)}};
          },
          [](const ApprovalAwaited& e) {
            return Json{{"from", to_string(e.from)},
                        {"to", to_string(e.to)},
                        {"event", to_string(e.event)},
                        {"mode", e.mode}};
          },
          [](const OperatorAction& e) {
            return Json{{"action", e.action}, {"phase", to_string(e.phase)},
                        {"by", e.by},         {"at", e.at},
                        {"nonce", e.nonce},   {"refused", e.refused}};
          },
      },
      event);
}

std::expected<Event, std::string> decode_event(std::string_view type, const Json& data) {
  StrictObject in{data, "event " + std::string{type}};
  return decode_payload(type, in);
}

std::expected<Event, std::string> decode_event(const JournalRecord& record) {
  return decode_event(record.type, record.data);
}

JournalRecord make_record(const Operation& operation, std::int64_t sequence, TimePoint time,
                          const Event& event) {
  JournalRecord record;
  record.operation_id = operation.id;
  record.sequence = sequence;
  record.time = time;
  record.ns = operation.ns;
  record.statefulset = operation.statefulset;
  record.type = std::string{event_type(event)};
  record.data = encode_event_data(event);
  return record;
}

std::string describe(const Event& event) {
  auto summary = [](const TreeSummary& s) {
    return std::to_string(s.files) + " files, " + std::to_string(s.bytes) + " bytes, digest " +
           s.digest.substr(0, 12);
  };
  return std::visit(
      Overloaded{
          [](const OperationStarted& e) {
            return e.trigger + " (replicas " + std::to_string(e.original_replicas) + ")";
          },
          [](const TemplateUpdateRequested& e) {
            std::string out;
            for (const TemplateChange& c : e.changes) {
              if (!out.empty()) out += ", ";
              out += c.template_name + ":";
              if (c.storage) out += " storage " + c.storage->to_string();
              if (!c.storage_class.empty()) out += " class " + c.storage_class;
            }
            return out;
          },
          [](const DefinitionSaved& e) {
            return "new StatefulSet definition for ConfigMap " + e.config_map;
          },
          [](const StatefulSetRecreated& e) { return "new uid " + e.uid; },
          [](const Planned& e) {
            std::string out = std::string{to_string(e.path)} + " path:";
            for (const ClaimPlan& c : e.claims) {
              out += " " + c.claim + " " + c.from_size.to_string() + "->" + c.to_size.to_string();
            }
            return out;
          },
          [](const PhaseChanged& e) {
            return std::string{to_string(e.from)} + " -> " + std::string{to_string(e.to)} + " (" +
                   std::string{to_string(e.event)} + ")";
          },
          [](const ActionIntended& e) {
            return e.action + " " + e.target + (e.detail.empty() ? "" : ": " + e.detail);
          },
          [&](const BackupVerified& e) {
            return e.claim + ": " + summary(e.summary) +
                   (e.generation != 0 ? ", fenced at generation " + std::to_string(e.generation)
                                      : std::string{});
          },
          [](const SourceDeleted& e) { return e.claim; },
          [](const ClaimRecreated& e) { return e.claim + " uid " + e.uid; },
          [](const ClaimDiscarded& e) { return e.claim + " uid " + e.uid + ": " + e.reason; },
          [&](const RestoreVerified& e) { return e.claim + ": " + summary(e.summary); },
          [](const ClaimExpanded& e) { return e.claim; },
          [](const StepFailed& e) {
            return std::string{e.critical ? "critical" : "transient"} + " in " +
                   std::string{to_string(e.phase)} + ": " + e.reason;
          },
          [](const Resumed& e) {
            return "from annotation at phase " + std::string{to_string(e.snapshot.phase)};
          },
          [](const OperationFinished& e) { return std::string{to_string(e.outcome)}; },
          [](const ApprovalAwaited& e) { return describe_awaited(e); },
          [](const OperatorAction& e) { return describe_operator_action(e); },
      },
      event);
}

std::string describe_awaited(const events::ApprovalAwaited& e) {
  return "awaiting approval of " + std::string{to_string(e.from)} + " -> " +
         std::string{to_string(e.to)} + " (mode " + e.mode + ")";
}

std::string describe_operator_action(const events::OperatorAction& e) {
  std::string out =
      e.action + " in " + std::string{to_string(e.phase)} + " by " + e.by + " at " + e.at;
  if (!e.refused.empty()) out += ": refused: " + e.refused;
  return out;
}

}  // namespace stsresize
