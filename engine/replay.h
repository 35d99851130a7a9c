#pragma once
// Replay: the journal read back as a timeline that people and tools can check. Pure (no I/O):
// the caller reads the records (stsresize replay uses the Journal port's query) and renders
// the result.
//
// Every record is validated by the same Folder that rebuilds operations (engine/events.h),
// which checks transitions against the one Boost.MSM table it is given (states/machine.h,
// PhaseMachine::rules()): replay holds no rules of its own.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/events.h"
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
  // Short, for people: "ScalingDown → BackingUp (StepDone)",
  // "data-web-0: 1,204 files, 1.2 GiB, sha256 3f2a1b2c…".
  std::string details;

  friend bool operator==(const TimelineRow&, const TimelineRow&) = default;
};

// Where an operation's stream stops making sense, and why (the Folder's, i.e. the machine's,
// message).
struct Inconsistency {
  std::string operation_id;
  std::int64_t sequence = 0;
  JournalRecord record;
  std::string reason;

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

// Replays the records of one or several operations. Records of one operation must come in
// sequence order (as the Journal returns them); several operations may be interleaved. Stops
// at the first inconsistent record: the rows before it are kept, that record gets no row, and
// the operations after it are not replayed.
Replay replay(std::span<const JournalRecord> records, const TransitionRules& rules,
              const ReplayFilter& filter = {});

// The details text of one event (the DETAILS column).
std::string timeline_details(const Event& event);

}  // namespace stsresize
