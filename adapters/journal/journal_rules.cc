#include "adapters/journal/journal_rules.h"

namespace stsresize::journal_rules {
namespace {

std::unexpected<JournalError> invalid(std::string message) {
  return std::unexpected(JournalError{JournalErrorCode::InvalidRecord, std::move(message)});
}

std::unexpected<JournalError> conflict(std::string message) {
  return std::unexpected(JournalError{JournalErrorCode::SequenceConflict, std::move(message)});
}

}  // namespace

std::int64_t to_unix_millis(TimePoint time) {
  return std::chrono::floor<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

TimePoint from_unix_millis(std::int64_t millis) {
  return TimePoint{std::chrono::milliseconds{millis}};
}

std::int64_t bound_to_unix_millis(TimePoint bound) {
  return std::chrono::ceil<std::chrono::milliseconds>(bound.time_since_epoch()).count();
}

TimePoint truncate_to_millis(TimePoint time) {
  return from_unix_millis(to_unix_millis(time));
}

JournalResult<void> check_append(std::span<const JournalRecord> records,
                                 const std::optional<StreamHead>& head) {
  const JournalRecord& first = records.front();
  for (const JournalRecord& record : records) {
    if (record.operation_id.empty() || record.ns.empty() || record.statefulset.empty() ||
        record.type.empty()) {
      return invalid(text("journal record '", record.operation_id, "'#", record.sequence,
                          " needs a non-empty operation id, namespace, StatefulSet and type"));
    }
    if (record.operation_id != first.operation_id) {
      return invalid(text("one append may hold records of one operation only, got ",
                          first.operation_id, " and ", record.operation_id));
    }
    if (record.ns != first.ns || record.statefulset != first.statefulset) {
      return invalid(text("operation ", first.operation_id, " names both ", first.ns, "/",
                          first.statefulset, " and ", record.ns, "/", record.statefulset));
    }
  }
  if (head && (head->ns != first.ns || head->statefulset != first.statefulset)) {
    return invalid(text("operation ", first.operation_id, " belongs to ", head->ns, "/",
                        head->statefulset, ", not ", first.ns, "/", first.statefulset));
  }

  const std::int64_t last = head ? head->last_sequence : 0;
  if (first.sequence != last + 1) {
    return conflict(text("operation ", first.operation_id, ": expected sequence ", last + 1,
                         ", got ", first.sequence, " (another writer, or a stale view)"));
  }
  for (std::size_t i = 1; i < records.size(); ++i) {
    if (records[i].sequence != records[i - 1].sequence + 1) {
      return conflict(text("operation ", first.operation_id, ": sequence ", records[i].sequence,
                           " follows ", records[i - 1].sequence, " in one append"));
    }
  }
  return {};
}

JournalResult<std::vector<std::string>> serialize_data(std::span<const JournalRecord> records) {
  std::vector<std::string> texts;
  texts.reserve(records.size());
  for (const JournalRecord& record : records) {
    try {
      texts.push_back(record.data.dump());
    } catch (const Json::exception& error) {
      return invalid(text("journal record ", record.operation_id, "#", record.sequence,
                          ": data is not writable as JSON: ", error.what()));
    }
  }
  return texts;
}

JournalResult<Json> parse_data(std::string_view stored, std::string_view operation_id,
                               std::int64_t sequence) {
  try {
    return Json::parse(stored);
  } catch (const Json::exception& error) {
    return std::unexpected(JournalError{JournalErrorCode::Corrupt,
                                        text("journal record ", operation_id, "#", sequence,
                                             ": stored data is not valid JSON: ", error.what())});
  }
}

}  // namespace stsresize::journal_rules
