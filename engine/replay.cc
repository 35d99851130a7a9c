#include "engine/replay.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "engine/operation_codec.h"
#include "engine/reachable.h"

namespace stsresize {

namespace {

using namespace entries;

bool in_window(const JournalRecord& record, const ReplayFilter& filter) {
  if (filter.since && record.time < *filter.since) return false;
  if (filter.until && record.time >= *filter.until) return false;
  return true;
}

bool selected(const JournalRecord& first, const ReplayFilter& filter) {
  if (filter.operation_id && first.operation_id != *filter.operation_id) return false;
  if (filter.ns && first.ns != *filter.ns) return false;
  if (filter.statefulset && first.statefulset != *filter.statefulset) return false;
  return true;
}

// Records of each operation in input order; operations in order of first appearance.
std::vector<std::vector<const JournalRecord*>> streams_of(std::span<const JournalRecord> records) {
  std::vector<std::vector<const JournalRecord*>> streams;
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (const JournalRecord& record : records) {
    auto [it, inserted] = index_of.try_emplace(record.operation_id, streams.size());
    if (inserted) streams.emplace_back();
    streams[it->second].push_back(&record);
  }
  return streams;
}

// Replays one operation's stream into `out`; false when it was inconsistent.
bool replay_stream(const std::vector<const JournalRecord*>& stream, const TransitionRules& rules,
                   const ReplayFilter& filter, ReplayStates states, const OperationSummary* head,
                   Replay& out) {
  const JournalRecord& first = *stream.front();
  OperationOutcome outcome;
  outcome.operation_id = first.operation_id;
  outcome.ns = first.ns;
  outcome.statefulset = first.statefulset;
  outcome.events = static_cast<std::int64_t>(stream.size());
  outcome.first_time = first.time;
  outcome.last_time = stream.back()->time;

  ValidatingFold folder{rules};
  std::optional<Inconsistency> inconsistency;
  for (const JournalRecord* record : stream) {
    const std::optional<Phase> before =
        folder.state() ? std::optional<Phase>{folder.state()->phase} : std::nullopt;
    const std::optional<Phase> failed_in_before =
        folder.state() ? folder.state()->failed_in : std::nullopt;
    const bool keep = states == ReplayStates::Kept;
    std::optional<Operation> state_before = keep ? folder.state() : std::nullopt;
    auto event = decode_entry(*record);
    if (!event) {
      inconsistency = Inconsistency{record->operation_id, record->sequence, *record, event.error(),
                                    std::move(state_before)};
      break;
    }
    if (auto applied = folder.apply(*record, *event); !applied) {
      inconsistency = Inconsistency{record->operation_id, record->sequence, *record,
                                    applied.error().message, std::move(state_before)};
      break;
    }
    if (in_window(*record, filter)) {
      std::string details = describe(*event);
      const Phase after = folder.state()->phase;
      if (std::holds_alternative<Resumed>(*event) && before && *before != after &&
          reachable(rules, *before, after, failed_in_before)) {
        details += " (this journal was at " + std::string{to_string(*before)} +
                   ": the transitions between were taken by another process and journaled "
                   "elsewhere, e.g. by `stsresize advance --apply-locally`)";
      }
      out.rows.push_back(TimelineRow{record->time, record->operation_id, record->sequence, before,
                                     after, record->type, std::move(details),
                                     std::move(state_before), keep ? folder.state() : std::nullopt,
                                     keep ? record->data : Json{}});
    }
  }

  // Records deleted from the end leave a stream that folds cleanly: only the journal's own
  // head, written with every append, still counts them.
  const JournalRecord& last = *stream.back();
  if (!inconsistency && head != nullptr && head->last_sequence > last.sequence) {
    JournalRecord missing{last.operation_id,
                          last.sequence + 1,
                          head->last_time,
                          last.ns,
                          last.statefulset,
                          std::string{kMissingRecordType},
                          Json()};
    inconsistency = Inconsistency{
        last.operation_id, last.sequence + 1, std::move(missing),
        "the journal's head says this operation's last record is sequence " +
            std::to_string(head->last_sequence) + ", but the stream ends at " +
            std::to_string(last.sequence) + ": records " + std::to_string(last.sequence + 1) +
            ".." + std::to_string(head->last_sequence) + " were deleted after they were written",
        states == ReplayStates::Kept ? folder.state() : std::nullopt};
  }

  if (const auto& state = folder.state()) {
    outcome.final_phase = state->phase;
    outcome.path = state->path;
    outcome.failure = state->failure;
  }
  outcome.consistent = !inconsistency;
  out.operations.push_back(std::move(outcome));
  if (inconsistency) {
    out.inconsistency = std::move(inconsistency);
    return false;
  }
  return true;
}

// A leaf value as `replay --step` shows it.
std::string shown(const Json& value) {
  if (value.is_null()) return "(none)";
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    return text.empty() ? "\"\"" : text;
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The JSON form of an operation with each claim's derived stage, keyed for diffing.
Json diffable(const Operation& operation) {
  Json view = encode_operation(operation);
  view.erase("lastSequence");
  view.erase("v");
  Json claims = Json::object();
  for (std::size_t i = 0; i < operation.claims.size(); ++i) {
    Json claim = view.at("claims").at(i);
    claim["stage"] = claim_stage(operation.claims[i]);
    claims[operation.claims[i].claim] = std::move(claim);
  }
  view["claims"] = std::move(claims);
  return view;
}

std::string added_claim(const Json& claim) {
  return "added, " + shown(claim.at("fromSize")) + " → " + shown(claim.at("toSize")) + ", " +
         shown(claim.at("stage"));
}

void diff(const std::string& field, const Json& before, const Json& after,
          std::vector<FieldChange>& out) {
  if (before == after) return;
  if (before.is_object() && after.is_object()) {
    // Keys are sorted (nlohmann::json keeps objects in a std::map); the stage of a claim is
    // listed before its raw fields.
    std::vector<std::string> keys;
    for (const auto& [key, value] : before.items()) keys.push_back(key);
    for (const auto& [key, value] : after.items()) {
      if (!before.contains(key)) keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    std::stable_partition(keys.begin(), keys.end(),
                          [](const std::string& key) { return key == "stage"; });
    static const Json kAbsent = nullptr;
    for (const std::string& key : keys) {
      const Json& b = before.contains(key) ? before.at(key) : kAbsent;
      const Json& a = after.contains(key) ? after.at(key) : kAbsent;
      diff(field.empty() ? key : field + "." + key, b, a, out);
    }
    return;
  }
  out.push_back(FieldChange{field, shown(before), shown(after)});
}

}  // namespace

std::string claim_stage(const ClaimPlan& claim) {
  if (claim.expanded) return "expanded";
  if (claim.restore_verified) return "restored";
  if (!claim.recreated_uid.empty()) return "recreated";
  if (claim.source_deleted) return "source deleted";
  if (claim.backup_verified) return "backed up";
  return "planned";
}

std::vector<FieldChange> operation_changes(const std::optional<Operation>& before,
                                           const Operation& after) {
  const Json b = before ? diffable(*before) : Json::object();
  const Json a = diffable(after);
  std::vector<FieldChange> out;
  static const Json kAbsent = nullptr;
  static const Json kNoClaims = Json::object();
  std::vector<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.push_back(key);
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    if (key != "claims") {
      diff(key, b.contains(key) ? b.at(key) : kAbsent, a.contains(key) ? a.at(key) : kAbsent, out);
      continue;
    }
    const Json& old_claims = b.contains("claims") ? b.at("claims") : kNoClaims;
    const Json& new_claims = a.at("claims");
    // Claims in plan order (the Operation's), each under its name.
    for (const ClaimPlan& claim : after.claims) {
      const Json& now = new_claims.at(claim.claim);
      const std::string field = "claims[" + claim.claim + "]";
      if (!old_claims.contains(claim.claim)) {
        out.push_back(FieldChange{field, "(none)", added_claim(now)});
      } else {
        diff(field, old_claims.at(claim.claim), now, out);
      }
    }
    for (const auto& [name, gone] : old_claims.items()) {
      if (!new_claims.contains(name)) {
        out.push_back(FieldChange{"claims[" + name + "]", "present", "(none)"});
      }
    }
  }
  std::stable_partition(out.begin(), out.end(),
                        [](const FieldChange& change) { return change.field == "phase"; });
  return out;
}

Replay replay(std::span<const JournalRecord> records, const TransitionRules& rules,
              const ReplayFilter& filter, ReplayStates states,
              std::span<const OperationSummary> heads) {
  Replay out;
  for (const auto& stream : streams_of(records)) {
    const auto head = std::find_if(heads.begin(), heads.end(), [&](const OperationSummary& h) {
      return h.operation_id == stream.front()->operation_id;
    });
    if (!selected(*stream.front(), filter)) continue;
    const bool shows_something =
        std::any_of(stream.begin(), stream.end(),
                    [&](const JournalRecord* r) { return in_window(*r, filter); });
    if (!shows_something) continue;
    if (!replay_stream(stream, rules, filter, states, head == heads.end() ? nullptr : &*head, out))
      break;
  }
  return out;
}

}  // namespace stsresize
