#include "engine/replay.h"

#include <cstdio>

#include "engine/timestamp.h"

namespace stsresize {

Timeline replay_operation(std::span<const JournalRecord> records, const TransitionRules& rules) {
  Timeline timeline;
  if (!records.empty()) {
    timeline.operation_id = records.front().operation_id;
    timeline.ns = records.front().ns;
    timeline.statefulset = records.front().statefulset;
  }
  Folder folder{rules};
  for (const JournalRecord& record : records) {
    TimelineRow row{record.sequence, record.time, std::nullopt, record.type, {}};
    auto event = decode_event(record);
    std::expected<void, ReplayError> applied =
        event ? folder.apply(record, *event)
              : std::expected<void, ReplayError>{std::unexpect,
                                                 ReplayError{record.sequence, event.error()}};
    if (event) row.details = describe(*event);
    if (folder.state()) row.phase = folder.state()->phase;
    timeline.rows.push_back(std::move(row));
    if (!applied) {
      timeline.inconsistency = applied.error();
      return timeline;
    }
  }
  if (folder.state()) timeline.final_state = *folder.state();
  return timeline;
}

std::vector<Timeline> replay_all(std::span<const JournalRecord> records,
                                 const TransitionRules& rules) {
  std::vector<Timeline> timelines;
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= records.size(); ++i) {
    if (i == records.size() || records[i].operation_id != records[begin].operation_id) {
      timelines.push_back(replay_operation(records.subspan(begin, i - begin), rules));
      begin = i;
    }
  }
  return timelines;
}

std::string format_timeline_text(const std::vector<Timeline>& timelines) {
  std::string out;
  for (const Timeline& timeline : timelines) {
    out += "operation " + timeline.operation_id + " (StatefulSet " + timeline.ns + "/" +
           timeline.statefulset + ")\n";
    char line[160];
    std::snprintf(line, sizeof line, "  %5s  %-24s  %-12s  %-18s  %s\n", "SEQ", "TIME", "PHASE",
                  "EVENT", "DETAILS");
    out += line;
    for (const TimelineRow& row : timeline.rows) {
      const std::string phase = row.phase ? std::string{to_string(*row.phase)} : "-";
      std::snprintf(line, sizeof line, "  %5lld  %-24s  %-12s  %-18s  ",
                    static_cast<long long>(row.sequence), format_timestamp(row.time).c_str(),
                    phase.c_str(), row.event.c_str());
      out += line;
      out += row.details + "\n";
    }
    if (timeline.inconsistency) {
      out += "  INCONSISTENT at sequence " + std::to_string(timeline.inconsistency->sequence) +
             ": " + timeline.inconsistency->message + "\n";
    } else if (timeline.final_state) {
      out +=
          "  consistent; final phase " + std::string{to_string(timeline.final_state->phase)} + "\n";
    }
  }
  return out;
}

Json format_timeline_json(const std::vector<Timeline>& timelines) {
  Json out = Json::array();
  for (const Timeline& timeline : timelines) {
    Json rows = Json::array();
    for (const TimelineRow& row : timeline.rows) {
      rows.push_back({{"sequence", row.sequence},
                      {"time", format_timestamp(row.time)},
                      {"phase", row.phase ? Json(to_string(*row.phase)) : Json(nullptr)},
                      {"event", row.event},
                      {"details", row.details}});
    }
    Json entry = {{"operation", timeline.operation_id},
                  {"namespace", timeline.ns},
                  {"statefulset", timeline.statefulset},
                  {"timeline", std::move(rows)},
                  {"consistent", !timeline.inconsistency.has_value()}};
    if (timeline.inconsistency) {
      entry["inconsistency"] = {{"sequence", timeline.inconsistency->sequence},
                                {"message", timeline.inconsistency->message}};
    }
    if (timeline.final_state) entry["finalPhase"] = to_string(timeline.final_state->phase);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace stsresize
