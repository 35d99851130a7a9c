#pragma once
// Replay: the journal read back as a timeline that people and tools can check. Pure (no I/O):
// the caller reads the records (stsresize replay uses the Journal port's query) and renders
// the result.
//
// Every record is validated by the same ValidatingFold that rebuilds operations (engine/fold.h),
// which checks transitions against the one Boost.MSM table it is given (states/machine.h,
// PhaseMachine::rules()): replay holds no rules of its own.
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "engine/fold.h"
#include "engine/journal_entries.h"
#include "engine/operation.h"
#include "engine/ports/journal.h"
#include "engine/time.h"
#include "engine/transition_rules.h"

namespace stsresize {

// One journal record as a line of the timeline.
struct TimelineRow {
  TimePoint time;
  std::string operation_id;
  std::int64_t sequence = 0;
  // nullopt before the operation's first record (nothing was known yet).
  std::optional<Phase> phase_before;
  Phase phase_after = Phase::Pending;
  std::string event_type;  // "PhaseChanged", ...
  // describe(entry) (engine/journal_entries.h): "ScalingDown → BackingUp (StepDone)"; a
  // Resumed that leads the journal also says so.
  std::string details;
  // The whole state before and after the record; only when replay() was asked to keep them
  // (ReplayStates::Kept, for `stsresize replay --step`). state_before is nullopt before the
  // operation's first record.
  std::optional<Operation> state_before{};
  std::optional<Operation> state_after{};
  Json data{};  // the record's payload, also only with ReplayStates::Kept

  friend bool operator==(const TimelineRow&, const TimelineRow&) = default;
};

// Where an operation's stream stops making sense, and why (the ValidatingFold's, i.e. the
// machine's, message).
struct Inconsistency {
  std::string operation_id;
  std::int64_t sequence = 0;
  JournalRecord record;
  std::string reason;
  // The state the refused record was applied to (nullopt before the first record); only with
  // ReplayStates::Kept.
  std::optional<Operation> state_before{};

  friend bool operator==(const Inconsistency&, const Inconsistency&) = default;
};

// The end state of one replayed operation. Counts and times cover the whole stream, also the
// records a time window hid.
struct OperationOutcome {
  std::string operation_id;
  std::string ns;
  std::string statefulset;
  Phase final_phase = Phase::Pending;  // as far as the stream was consistent
  Path path = Path::Undecided;
  std::int64_t events = 0;  // records in the stream
  TimePoint first_time;
  TimePoint last_time;
  std::string failure;  // the operation's recorded failure, if any
  bool consistent = true;

  Duration duration() const { return std::chrono::duration_cast<Duration>(last_time - first_time); }
  friend bool operator==(const OperationOutcome&, const OperationOutcome&) = default;
};

// Which operations to replay (operation_id, ns, statefulset: all that are set must match) and
// which of their records to show (since inclusive, until exclusive). An operation with no
// record in the window is left out entirely; one with a record in it is validated from its
// first record to its last, because a state can only be rebuilt from the start.
using ReplayFilter = JournalQuery;

struct Replay {
  std::vector<TimelineRow> rows;               // in input order, grouped by operation
  std::vector<OperationOutcome> operations;    // in order of first appearance
  std::optional<Inconsistency> inconsistency;  // the first one found; replay stopped there

  bool consistent() const { return !inconsistency.has_value(); }
};

// Whether every row keeps the whole Operation before and after its record (costs a copy of
// the operation per record, so only when asked).
enum class ReplayStates { Omitted, Kept };

// The type of the record an Inconsistency names when the record is missing: the stream ends
// before the sequence its head (OperationSummary::last_sequence) says it reached.
inline constexpr std::string_view kMissingRecordType = "(missing)";

// Replays the records of one or several operations. Records of one operation must come in
// sequence order (as the Journal returns them); several operations may be interleaved. Stops
// at the first inconsistent record: the rows before it are kept, that record gets no row, and
// the operations after it are not replayed. `heads` (Journal::operations(); empty for an
// export, which has none) are where the journal says each stream ends: a stream that stops
// short lost its last records, which nothing in the records themselves can show.
Replay replay(std::span<const JournalRecord> records, const TransitionRules& rules,
              const ReplayFilter& filter = {}, ReplayStates states = ReplayStates::Omitted,
              std::span<const OperationSummary> heads = {});

// How far one claim got, derived from its progress fields: on the Copy path "planned",
// "backed up", "source deleted", "recreated", "restored"; on the Expand path "planned",
// "expanded".
std::string claim_stage(const ClaimPlan& claim);

// One field that a record changed, for `replay --step`: `field` is a path into the
// Operation's JSON form (engine/operation_codec.h), claims named by claim
// ("claims[data-web-0].sourceDeleted"), plus the derived "claims[<claim>].stage"; values are
// shown bare for strings, as compact JSON otherwise, "(none)" when absent.
struct FieldChange {
  std::string field;
  std::string before;
  std::string after;

  friend bool operator==(const FieldChange&, const FieldChange&) = default;
};
// For test failure messages: "phase: Planning -> ScalingDown".
inline std::ostream& operator<<(std::ostream& out, const FieldChange& change) {
  return out << change.field << ": " << change.before << " -> " << change.after;
}

// What differs between two states of one operation, "phase" first, then in field order.
// `before` nullopt (the first record) lists every field the operation got. lastSequence,
// which every record advances, is left out; a claim that appears is one line, not one per
// field.
std::vector<FieldChange> operation_changes(const std::optional<Operation>& before,
                                           const Operation& after);

}  // namespace stsresize
