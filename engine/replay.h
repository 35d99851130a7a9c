#pragma once
// Replaying a journal: the timeline of each operation (time, phase after the event, event,
// details) and the first record the state machine or fold would refuse. Pure; the CLI
// (`stsresize replay`, adapters/app/replay_command.h) prints it.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/events.h"

namespace stsresize {

struct TimelineRow {
  std::int64_t sequence = 0;
  TimePoint time;
  std::optional<Phase> phase;  // after the event; nullopt when the first record is refused
  std::string event;           // the record's type
  std::string details;
};

struct Timeline {
  std::string operation_id;
  std::string ns;
  std::string statefulset;
  std::vector<TimelineRow> rows;  // up to and including the first refused record
  std::optional<ReplayError> inconsistency;
  std::optional<Operation> final_state;  // when consistent
};

// `records`: one operation's stream, in sequence order.
Timeline replay_operation(std::span<const JournalRecord> records, const TransitionRules& rules);
// Splits a journal query result (ordered by operation, then sequence) into operations.
std::vector<Timeline> replay_all(std::span<const JournalRecord> records,
                                 const TransitionRules& rules);

std::string format_timeline_text(const std::vector<Timeline>& timelines);
Json format_timeline_json(const std::vector<Timeline>& timelines);

}  // namespace stsresize
