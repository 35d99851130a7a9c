#pragma once
// A Journal held in memory: for tests and for `stsresize` runs that must not touch disk.
// Same rules as SqliteJournal (adapters/journal/journal_rules.h): time kept to the millisecond,
// data kept as JSON text. Thread-safe: every call takes one mutex.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/ports/journal.h"

namespace stsresize {

class MemoryJournal final : public Journal {
 public:
  JournalResult<void> append(std::span<const JournalRecord> records) override;
  JournalResult<std::int64_t> last_sequence(const std::string& operation_id) override;
  JournalResult<std::vector<JournalRecord>> read(const std::string& operation_id,
                                                 std::int64_t after = 0) override;
  JournalResult<std::vector<JournalRecord>> query(const JournalQuery& query) override;
  JournalResult<std::vector<OperationSummary>> operations() override;

 private:
  struct StoredEvent {
    std::int64_t sequence;
    std::int64_t time_millis;
    std::string type;
    std::string data;  // JSON text, as SQLite stores it
  };
  struct Stream {
    std::string ns;
    std::string statefulset;
    std::vector<StoredEvent> events;  // events[i].sequence == i + 1
  };
  using Streams = std::map<std::string, Stream>;  // by operation id

  // Streams oldest first: by (first event time, operation id).
  std::vector<Streams::const_iterator> streams_oldest_first() const;
  static JournalResult<JournalRecord> to_record(const std::string& operation_id,
                                                const Stream& stream, const StoredEvent& event);

  std::mutex mutex_;
  Streams streams_;
};

}  // namespace stsresize
