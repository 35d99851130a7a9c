#include "engine/replay.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <unordered_map>
#include <utility>

namespace stsresize {

namespace {

using namespace events;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

// Planned events of large StatefulSets would otherwise fill a screen line several times.
constexpr std::size_t kClaimsShownInPlan = 3;
constexpr std::size_t kDigestCharsShown = 8;

std::string with_thousands(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string human_bytes(std::int64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f %s", value, kUnits[unit]);
  return text.data();
}

std::string tree(const TreeSummary& summary) {
  std::string digest = summary.digest.substr(0, kDigestCharsShown);
  if (summary.digest.size() > kDigestCharsShown) digest += "…";
  return with_thousands(summary.files) + " files, " + human_bytes(summary.bytes) + ", sha256 " +
         digest;
}

std::string claim_change(const ClaimPlan& claim) {
  std::string from = claim.from_size.to_string();
  std::string to = claim.to_size.to_string();
  if (claim.from_class != claim.to_class) {
    from += " " + (claim.from_class.empty() ? std::string{"(no class)"} : claim.from_class);
    to += " " + (claim.to_class.empty() ? std::string{"(no class)"} : claim.to_class);
  }
  return claim.claim + " " + from + " → " + to;
}

std::string plan(const Planned& planned) {
  const std::size_t count = planned.claims.size();
  std::string out = std::string{to_string(planned.path)} + " path, " + std::to_string(count) +
                    (count == 1 ? " claim" : " claims");
  for (std::size_t i = 0; i < count && i < kClaimsShownInPlan; ++i) {
    out += (i == 0 ? ": " : ", ") + claim_change(planned.claims[i]);
  }
  if (count > kClaimsShownInPlan) {
    out += ", … and " + std::to_string(count - kClaimsShownInPlan) + " more";
  }
  return out;
}

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
                   const ReplayFilter& filter, Replay& out) {
  const JournalRecord& first = *stream.front();
  OperationOutcome outcome;
  outcome.operation_id = first.operation_id;
  outcome.ns = first.ns;
  outcome.statefulset = first.statefulset;
  outcome.events = static_cast<std::int64_t>(stream.size());
  outcome.first_time = first.time;
  outcome.last_time = stream.back()->time;

  Folder folder{rules};
  std::optional<Inconsistency> inconsistency;
  for (const JournalRecord* record : stream) {
    const std::optional<Phase> before =
        folder.state() ? std::optional<Phase>{folder.state()->phase} : std::nullopt;
    auto event = decode_event(*record);
    if (!event) {
      inconsistency = Inconsistency{record->operation_id, record->sequence, *record, event.error()};
      break;
    }
    if (auto applied = folder.apply(*record, *event); !applied) {
      inconsistency =
          Inconsistency{record->operation_id, record->sequence, *record, applied.error().message};
      break;
    }
    if (in_window(*record, filter)) {
      out.rows.push_back(TimelineRow{record->time, record->operation_id, record->sequence, before,
                                     folder.state()->phase, record->type,
                                     timeline_details(*event)});
    }
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

}  // namespace

std::string timeline_details(const Event& event) {
  return std::visit(
      Overloaded{
          [](const OperationStarted& e) {
            std::string replicas = std::to_string(e.original_replicas) +
                                   (e.original_replicas == 1 ? " replica" : " replicas");
            return e.trigger.empty() ? replicas : e.trigger + " (" + replicas + ")";
          },
          [](const TemplateUpdateRequested& e) { return describe(Event{e}); },
          [](const DefinitionSaved& e) {
            return "StatefulSet definition kept in ConfigMap " + e.config_map;
          },
          [](const StatefulSetRecreated& e) { return "new uid " + e.uid; },
          [](const Planned& e) { return plan(e); },
          [](const PhaseChanged& e) {
            return std::string{to_string(e.from)} + " → " + std::string{to_string(e.to)} + " (" +
                   std::string{to_string(e.event)} + ")";
          },
          [](const ActionIntended& e) {
            return e.action + " " + e.target + (e.detail.empty() ? "" : " (" + e.detail + ")");
          },
          [](const BackupVerified& e) { return e.claim + ": " + tree(e.summary); },
          [](const SourceDeleted& e) { return e.claim; },
          [](const ClaimRecreated& e) { return e.claim + ", uid " + e.uid; },
          [](const RestoreVerified& e) { return e.claim + ": " + tree(e.summary); },
          [](const ClaimExpanded& e) { return e.claim; },
          [](const StepFailed& e) {
            return std::string{e.critical ? "critical: " : "transient: "} + e.reason;
          },
          [](const Resumed& e) {
            return "from the annotation, at phase " + std::string{to_string(e.snapshot.phase)};
          },
          [](const OperationFinished& e) { return std::string{to_string(e.outcome)}; },
      },
      event);
}

Replay replay(std::span<const JournalRecord> records, const TransitionRules& rules,
              const ReplayFilter& filter) {
  Replay out;
  for (const auto& stream : streams_of(records)) {
    if (!selected(*stream.front(), filter)) continue;
    const bool shows_something =
        std::any_of(stream.begin(), stream.end(),
                    [&](const JournalRecord* r) { return in_window(*r, filter); });
    if (!shows_something) continue;
    if (!replay_stream(stream, rules, filter, out)) break;
  }
  return out;
}

}  // namespace stsresize
