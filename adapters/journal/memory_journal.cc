#include "adapters/journal/memory_journal.h"

#include <algorithm>
#include <limits>

#include "adapters/journal/journal_rules.h"

namespace stsresize {

using journal_rules::StreamHead;

JournalResult<void> MemoryJournal::append(std::span<const JournalRecord> records) {
  if (records.empty()) return {};
  std::lock_guard lock(mutex_);

  const auto found = streams_.find(records.front().operation_id);
  std::optional<StreamHead> head;
  if (found != streams_.end()) {
    const Stream& stream = found->second;
    head =
        StreamHead{stream.ns, stream.statefulset, static_cast<std::int64_t>(stream.events.size())};
  }
  if (auto checked = journal_rules::check_append(records, head); !checked) {
    return checked;
  }
  auto data = journal_rules::serialize_data(records);
  if (!data) return std::unexpected(data.error());

  // Every check is done; from here on nothing fails but allocation, which leaves the stream as
  // it was because the new events are built aside first.
  std::vector<StoredEvent> added;
  added.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    added.push_back(StoredEvent{records[i].sequence, journal_rules::to_unix_millis(records[i].time),
                                records[i].type, std::move((*data)[i])});
  }
  Stream& stream = found != streams_.end() ? found->second : streams_[records.front().operation_id];
  if (stream.events.empty()) {
    stream.ns = records.front().ns;
    stream.statefulset = records.front().statefulset;
  }
  std::move(added.begin(), added.end(), std::back_inserter(stream.events));
  return {};
}

JournalResult<std::int64_t> MemoryJournal::last_sequence(const std::string& operation_id) {
  std::lock_guard lock(mutex_);
  const auto found = streams_.find(operation_id);
  if (found == streams_.end()) return 0;
  return static_cast<std::int64_t>(found->second.events.size());
}

JournalResult<JournalRecord> MemoryJournal::to_record(const std::string& operation_id,
                                                      const Stream& stream,
                                                      const StoredEvent& event) {
  auto data = journal_rules::parse_data(event.data, operation_id, event.sequence);
  if (!data) return std::unexpected(data.error());
  return JournalRecord{
      operation_id,    event.sequence,     journal_rules::from_unix_millis(event.time_millis),
      stream.ns,       stream.statefulset, event.type,
      std::move(*data)};
}

JournalResult<std::vector<JournalRecord>> MemoryJournal::read(const std::string& operation_id,
                                                              std::int64_t after) {
  std::lock_guard lock(mutex_);
  std::vector<JournalRecord> records;
  const auto found = streams_.find(operation_id);
  if (found == streams_.end()) return records;
  for (const StoredEvent& event : found->second.events) {
    if (event.sequence <= after) continue;
    auto record = to_record(operation_id, found->second, event);
    if (!record) return std::unexpected(record.error());
    records.push_back(std::move(*record));
  }
  return records;
}

std::vector<MemoryJournal::Streams::const_iterator> MemoryJournal::streams_oldest_first() const {
  std::vector<Streams::const_iterator> ordered;
  ordered.reserve(streams_.size());
  for (auto it = streams_.cbegin(); it != streams_.cend(); ++it) ordered.push_back(it);
  // streams_ is ordered by id already; a stable sort by first time keeps that as tie-break.
  std::ranges::stable_sort(ordered, {}, [](Streams::const_iterator it) {
    return it->second.events.front().time_millis;
  });
  return ordered;
}

JournalResult<std::vector<JournalRecord>> MemoryJournal::query(const JournalQuery& query) {
  std::lock_guard lock(mutex_);
  // Stored times are whole milliseconds; TimePoint cannot reach the int64 ends in milliseconds,
  // so they stand for "no bound".
  const std::int64_t since = query.since ? journal_rules::bound_to_unix_millis(*query.since)
                                         : std::numeric_limits<std::int64_t>::min();
  const std::int64_t until = query.until ? journal_rules::bound_to_unix_millis(*query.until)
                                         : std::numeric_limits<std::int64_t>::max();

  std::vector<JournalRecord> records;
  for (const auto& it : streams_oldest_first()) {
    const auto& [operation_id, stream] = *it;
    if (query.operation_id && *query.operation_id != operation_id) continue;
    if (query.ns && *query.ns != stream.ns) continue;
    if (query.statefulset && *query.statefulset != stream.statefulset) continue;
    for (const StoredEvent& event : stream.events) {
      if (event.time_millis < since || event.time_millis >= until) continue;
      auto record = to_record(operation_id, stream, event);
      if (!record) return std::unexpected(record.error());
      records.push_back(std::move(*record));
    }
  }
  return records;
}

JournalResult<std::vector<OperationSummary>> MemoryJournal::operations() {
  std::lock_guard lock(mutex_);
  std::vector<OperationSummary> summaries;
  for (const auto& it : streams_oldest_first()) {
    const auto& [operation_id, stream] = *it;
    summaries.push_back(
        OperationSummary{operation_id, stream.ns, stream.statefulset,
                         static_cast<std::int64_t>(stream.events.size()),
                         journal_rules::from_unix_millis(stream.events.front().time_millis),
                         journal_rules::from_unix_millis(stream.events.back().time_millis)});
  }
  return summaries;
}

}  // namespace stsresize
