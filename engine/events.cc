#include "engine/events.h"

#include <set>
#include <utility>
#include <vector>

#include "engine/advance_request.h"
#include "engine/operation_codec.h"
#include "engine/reachable.h"
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

std::expected<void, ReplayError> Folder::apply(const JournalRecord& record) {
  auto event = decode_event(record);
  if (!event) return std::unexpected(ReplayError{record.sequence, event.error()});
  return apply(record, *event);
}

std::expected<void, ReplayError> Folder::apply(const JournalRecord& record, const Event& event) {
  const std::int64_t expected_sequence = state_ ? state_->last_sequence + 1 : 1;
  if (record.sequence != expected_sequence) {
    return std::unexpected(
        ReplayError{record.sequence, "sequence " + std::to_string(record.sequence) + " where " +
                                         std::to_string(expected_sequence) +
                                         " was expected (gap or duplicate)"});
  }
  if (state_ && record.operation_id != state_->id) {
    return std::unexpected(ReplayError{
        record.sequence,
        "record of operation " + record.operation_id + " in the stream of " + state_->id});
  }
  if (auto applied = apply_event(record, event); !applied) {
    return std::unexpected(ReplayError{record.sequence, applied.error()});
  }
  const auto* action = std::get_if<OperatorAction>(&event);
  skip_taken_ = action && action->action == "skip" && action->refused.empty();
  state_->last_sequence = record.sequence;
  return {};
}

std::expected<void, std::string> Folder::apply_event(const JournalRecord& record,
                                                     const Event& event) {
  using Result = std::expected<void, std::string>;
  const std::string type{event_type(event)};
  if (!state_) {
    if (const auto* started = std::get_if<OperationStarted>(&event)) {
      Operation op;
      op.id = record.operation_id;
      op.ns = record.ns;
      op.statefulset = record.statefulset;
      op.sts_uid = started->sts_uid;
      op.original_replicas = started->original_replicas;
      op.started = record.time;
      op.phase_since = record.time;
      state_ = std::move(op);
      return {};
    }
    if (const auto* resumed = std::get_if<Resumed>(&event)) {
      if (resumed->snapshot.id != record.operation_id) {
        return std::unexpected("Resumed snapshot of " + resumed->snapshot.id +
                               " in the stream of " + record.operation_id);
      }
      state_ = resumed->snapshot;
      return {};
    }
    return std::unexpected(type + " before OperationStarted or Resumed");
  }

  Operation& op = *state_;
  // Only the record right after an accepted resume may be its PhaseChanged on Resume.
  const bool resume_pending = std::exchange(resume_taken_, false);
  if (const auto* changed = std::get_if<PhaseChanged>(&event);
      resume_pending && (changed == nullptr || changed->event != PhaseEvent::Resume)) {
    return std::unexpected(type +
                           " right after an accepted retry of an operation whose sources "
                           "were replaced (its PhaseChanged on Resume belongs there)");
  }
  auto in_phase = [&](Phase phase) -> Result {
    if (op.phase == phase) return {};
    return std::unexpected(type + " in phase " + std::string{to_string(op.phase)} +
                           " (belongs to " + std::string{to_string(phase)} + ")");
  };
  auto claim_of = [&](const std::string& name) -> std::expected<ClaimPlan*, std::string> {
    if (ClaimPlan* claim = op.find_claim(name)) return claim;
    return std::unexpected(type + " names claim \"" + name + "\", which is not in the plan");
  };

  return std::visit(
      Overloaded{
          [&](const OperationStarted&) -> Result {
            return std::unexpected("OperationStarted in the middle of an operation");
          },
          [&](const TemplateUpdateRequested& e) -> Result {
            if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            if (!op.template_changes.empty()) {
              return std::unexpected("TemplateUpdateRequested twice");
            }
            if (e.changes.empty())
              return std::unexpected("TemplateUpdateRequested without changes");
            op.template_changes = e.changes;
            return {};
          },
          [&](const DefinitionSaved& e) -> Result {
            if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            if (op.template_changes.empty() || op.statefulset_recreated) {
              return std::unexpected("DefinitionSaved without a pending template update");
            }
            if (e.config_map.empty() || !e.definition.is_object()) {
              return std::unexpected("DefinitionSaved without a ConfigMap or a definition");
            }
            return {};
          },
          [&](const StatefulSetRecreated& e) -> Result {
            if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            if (op.template_changes.empty() || op.statefulset_recreated) {
              return std::unexpected("StatefulSetRecreated without a pending template update");
            }
            if (e.uid.empty() || e.uid == op.sts_uid) {
              return std::unexpected("StatefulSetRecreated needs the new object's uid");
            }
            op.sts_uid = e.uid;
            op.statefulset_recreated = true;
            return {};
          },
          [&](const Planned& e) -> Result {
            if (auto ok = in_phase(Phase::Planning); !ok) return ok;
            if (op.path != Path::Undecided) return std::unexpected("Planned twice");
            if (e.path == Path::Undecided || e.claims.empty()) {
              return std::unexpected("Planned without a path or claims");
            }
            op.path = e.path;
            op.claims = e.claims;
            return {};
          },
          [&](const PhaseChanged& e) -> Result {
            if (e.from != op.phase) {
              return std::unexpected("PhaseChanged from " + std::string{to_string(e.from)} +
                                     " but the operation is in " +
                                     std::string{to_string(op.phase)});
            }
            if (!rules_->allowed(e.from, e.event, op.sources_intact(), e.to, op.failed_in)) {
              return std::unexpected("transition " + std::string{to_string(e.from)} + " -> " +
                                     std::string{to_string(e.to)} + " on " +
                                     std::string{to_string(e.event)} +
                                     " is refused by the state machine");
            }
            if (e.event == PhaseEvent::Skip && !skip_taken_) {
              return std::unexpected("transition " + std::string{to_string(e.from)} + " -> " +
                                     std::string{to_string(e.to)} +
                                     " on Skip without a person's accepted skip just before it");
            }
            if (e.event == PhaseEvent::Resume && !resume_pending) {
              return std::unexpected(
                  "PhaseChanged on Resume without an accepted OperatorAction retry right before "
                  "it");
            }
            previous_phase_ = op.phase;
            op.phase = e.to;
            // Failed remembers where it came from (what a resume goes back to); leaving it
            // (Resume) forgets that and the failure, which the StepFailed records keep.
            if (e.to == Phase::Failed) {
              op.failed_in = e.from;
            } else {
              op.failed_in.reset();
            }
            if (e.event == PhaseEvent::Resume) op.failure.clear();
            op.warning.clear();
            op.awaiting.reset();
            op.phase_since = record.time;
            return {};
          },
          [&](const ActionIntended& e) -> Result { return in_phase(e.phase); },
          [&](const BackupVerified& e) -> Result {
            if (auto ok = in_phase(Phase::BackingUp); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            (*claim)->backup_verified = e.summary;
            (*claim)->backup_generation = e.generation;
            return {};
          },
          [&](const SourceDeleted& e) -> Result {
            if (auto ok = in_phase(Phase::Recreating); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (!(*claim)->backup_verified) {
              return std::unexpected("source " + e.claim +
                                     " deleted before its backup was verified");
            }
            (*claim)->source_deleted = true;
            return {};
          },
          [&](const ClaimRecreated& e) -> Result {
            if (auto ok = in_phase(Phase::Recreating); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (!(*claim)->source_deleted) {
              return std::unexpected(e.claim + " recreated before its source was deleted");
            }
            (*claim)->recreated_uid = e.uid;
            return {};
          },
          [&](const ClaimDiscarded& e) -> Result {
            if (auto ok = in_phase(Phase::Restoring); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if ((*claim)->recreated_uid.empty() || (*claim)->recreated_uid != e.uid) {
              return std::unexpected(e.claim + " discarded with uid " + e.uid +
                                     ", which is not the recreated claim's");
            }
            if ((*claim)->restore_verified) {
              return std::unexpected(e.claim + " discarded after its restore was verified");
            }
            (*claim)->recreated_uid.clear();
            return {};
          },
          [&](const RestoreVerified& e) -> Result {
            if (auto ok = in_phase(Phase::Restoring); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if ((*claim)->recreated_uid.empty()) {
              return std::unexpected(e.claim + " restored before it was recreated");
            }
            (*claim)->restore_verified = e.summary;
            return {};
          },
          [&](const ClaimExpanded& e) -> Result {
            if (auto ok = in_phase(Phase::Expanding); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            (*claim)->expanded = true;
            return {};
          },
          [&](const StepFailed& e) -> Result {
            if (auto ok = in_phase(e.phase); !ok) return ok;
            if (e.critical) {
              op.failure = op.failure.empty() ? e.reason : op.failure + "; then " + e.reason;
            } else {
              op.warning = e.reason;
            }
            return {};
          },
          [&](const Resumed& e) -> Result {
            if (e.snapshot.id != op.id) {
              return std::unexpected("Resumed snapshot of " + e.snapshot.id + " in the stream of " +
                                     op.id);
            }
            // The annotation may lag the journal by the one transition a crash between the
            // two leaves, or lead it by any number of transitions the machine allows: those were
            // taken by another process with a journal of its own (`stsresize advance
            // --apply-locally`, a controller on another volume). Going back further is refused.
            const bool lags_by_at_most_one =
                e.snapshot.phase == op.phase || e.snapshot.phase == previous_phase_;
            if (!lags_by_at_most_one &&
                !reachable(*rules_, op.phase, e.snapshot.phase, op.failed_in)) {
              return std::unexpected(
                  "Resumed at phase " + std::string{to_string(e.snapshot.phase)} +
                  " but the journal is at " + std::string{to_string(op.phase)} +
                  ": the annotation may lag the journal by one transition at most, or lead it "
                  "by transitions the state machine allows");
            }
            if (e.snapshot.phase != op.phase) previous_phase_.reset();
            op = e.snapshot;
            return {};
          },
          [&](const ApprovalAwaited& e) -> Result {
            if (auto ok = in_phase(e.from); !ok) return ok;
            if (e.event == PhaseEvent::CriticalError ||
                !rules_->allowed(e.from, e.event, op.sources_intact(), e.to)) {
              return std::unexpected("ApprovalAwaited for " + std::string{to_string(e.from)} +
                                     " -> " + std::string{to_string(e.to)} + " on " +
                                     std::string{to_string(e.event)} +
                                     ", which the state machine does not allow or never holds");
            }
            op.awaiting = AwaitedApproval{e.from, e.to, e.event};
            return {};
          },
          [&](const OperatorAction& e) -> Result {
            if (e.action.empty() || e.by.empty() || e.nonce.empty()) {
              return std::unexpected("OperatorAction without an action, a person or a nonce");
            }
            if (e.refused.empty() && e.action == "retry") {
              // Sources intact: the old operation's last word, a new operation starts from them.
              // Sources replaced: the PhaseChanged on Resume follows in the same append.
              const bool resumable =
                  op.failed_in && rules_->allowed(Phase::Failed, PhaseEvent::Resume, false,
                                                  *op.failed_in, op.failed_in);
              if (op.phase != Phase::Failed || (!op.sources_intact() && !resumable)) {
                return std::unexpected(
                    "OperatorAction retry accepted in phase " + std::string{to_string(op.phase)} +
                    (op.sources_intact() ? "" : " after a source delete, not resumable"));
              }
              resume_taken_ = !op.sources_intact();
              return {};
            }
            if (e.refused.empty() && e.action == "skip") {
              // Taken only in the phase the person saw and where the allow-list lets a step be
              // skipped; the PhaseChanged on Skip follows in the same append.
              if (e.phase != op.phase) {
                return std::unexpected("OperatorAction skip of " + std::string{to_string(e.phase)} +
                                       " accepted in phase " + std::string{to_string(op.phase)});
              }
              if (const std::string why = skip_refusal(op); !why.empty()) {
                return std::unexpected("OperatorAction skip accepted in phase " +
                                       std::string{to_string(op.phase)} + ": " + why);
              }
              return {};
            }
            if (e.refused.empty() && e.action == "abort") {
              // Taken only where the rules let a person abort (sources intact); the
              // PhaseChanged on Abort follows in the same append.
              if (const std::string why = abort_refusal(op); !why.empty()) {
                return std::unexpected("OperatorAction abort accepted in phase " +
                                       std::string{to_string(op.phase)} + ": " + why);
              }
              return {};
            }
            if (e.refused.empty() && (!op.awaiting || op.awaiting->from != e.phase)) {
              return std::unexpected("OperatorAction " + e.action + " accepted in phase " +
                                     std::string{to_string(e.phase)} +
                                     " while no transition from it awaited approval");
            }
            return {};
          },
          [&](const OperationFinished& e) -> Result {
            if (!is_terminal(e.outcome) || e.outcome != op.phase) {
              return std::unexpected("OperationFinished with outcome " +
                                     std::string{to_string(e.outcome)} + " in phase " +
                                     std::string{to_string(op.phase)});
            }
            return {};
          },
      },
      event);
}

std::expected<Operation, ReplayError> fold(std::span<const JournalRecord> records,
                                           const TransitionRules& rules) {
  Folder folder{rules};
  for (const JournalRecord& record : records) {
    if (auto applied = folder.apply(record); !applied) return std::unexpected(applied.error());
  }
  if (!folder.state()) return std::unexpected(ReplayError{0, "no records"});
  return *folder.state();
}

}  // namespace stsresize
