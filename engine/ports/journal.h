#pragma once
// The Journal port: an append-only log of events, one stream per operation.
// Implementations: adapters/journal (SQLite, and in memory). One contract suite
// (tests/contract) runs against both.
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/time.h"

namespace stsresize {

// One event of one operation. (operation_id, sequence) is unique and a stream's sequence
// numbers are 1, 2, 3... with no gap: an append whose first sequence is not last+1 is refused,
// which is what makes two writers of one stream detectable (optimistic concurrency).
struct JournalRecord {
  std::string operation_id;
  std::int64_t sequence = 0;
  TimePoint time;
  std::string ns;           // the StatefulSet's namespace
  std::string statefulset;  // the StatefulSet's name
  std::string type;         // event type, e.g. "PhaseChanged"
  Json data = Json::object();

  friend bool operator==(const JournalRecord&, const JournalRecord&) = default;
};

enum class JournalErrorCode {
  SequenceConflict,  // duplicate or out-of-order sequence
  InvalidRecord,     // empty ids, records of several operations in one append, ...
  SchemaTooNew,      // written by a newer stsresize: refuse rather than guess
  Corrupt,           // unreadable content
  Io,                // the storage failed
};

struct JournalError {
  JournalErrorCode code;
  std::string message;
};

template <class T>
using JournalResult = std::expected<T, JournalError>;

struct OperationSummary {
  std::string operation_id;
  std::string ns;
  std::string statefulset;
  std::int64_t last_sequence = 0;
  TimePoint first_time;
  TimePoint last_time;
};

// The `{}` initialisers let callers name only the fields they filter on ({.ns = "shop"})
// without g++'s -Wmissing-field-initializers.
struct JournalQuery {
  std::optional<std::string> operation_id{};
  std::optional<std::string> ns{};
  std::optional<std::string> statefulset{};
  std::optional<TimePoint> since{};  // inclusive
  std::optional<TimePoint> until{};  // exclusive
};

class Journal {
 public:
  virtual ~Journal() = default;

  // Appends records of ONE operation atomically: all or none. The first record's sequence must
  // be last_sequence(operation)+1 and the rest must follow without gaps.
  virtual JournalResult<void> append(std::span<const JournalRecord> records) = 0;
  // 0 when the operation has no records.
  virtual JournalResult<std::int64_t> last_sequence(const std::string& operation_id) = 0;
  // The operation's records with sequence > after, in sequence order.
  virtual JournalResult<std::vector<JournalRecord>> read(const std::string& operation_id,
                                                         std::int64_t after = 0) = 0;
  // Records matching every set field of the query, ordered by (first time of operation,
  // operation id, sequence).
  virtual JournalResult<std::vector<JournalRecord>> query(const JournalQuery& query) = 0;
  // Every operation, oldest first.
  virtual JournalResult<std::vector<OperationSummary>> operations() = 0;
};

}  // namespace stsresize
