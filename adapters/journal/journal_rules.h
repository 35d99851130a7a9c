#pragma once
// The rules every Journal implementation applies, in one place so that the SQLite and the
// in-memory journal cannot drift apart (the contract suite checks that they do not).
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ports/journal.h"

namespace stsresize::journal_rules {

// Error messages without std::format (not in g++ 12's library): streams every part in order.
template <class... Parts>
std::string text(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// Journals keep time to the millisecond (unix milliseconds, UTC), rounded towards the past, so
// a record read back compares equal to the written one after truncate_to_millis().
std::int64_t to_unix_millis(TimePoint time);
TimePoint from_unix_millis(std::int64_t millis);
TimePoint truncate_to_millis(TimePoint time);
// A query bound (since, until) as milliseconds to compare stored times with: rounded up, since
// for a whole number m, m >= t exactly when m >= ceil(t) and m < t exactly when m < ceil(t).
std::int64_t bound_to_unix_millis(TimePoint bound);

// What the journal already holds for an operation: its identity and where its stream ends.
struct StreamHead {
  std::string ns;
  std::string statefulset;
  std::int64_t last_sequence = 0;
};

// Checks a non-empty batch against the operation's current head (nullopt: no record yet).
// InvalidRecord: an empty operation id, namespace, StatefulSet or type; records of several
// operations; a namespace/StatefulSet different from the batch's first record or from the
// operation's first record. SequenceConflict: the first sequence is not last_sequence+1, or
// the batch is not consecutive.
JournalResult<void> check_append(std::span<const JournalRecord> records,
                                 const std::optional<StreamHead>& head);

// The batch's data as JSON text, one string per record. InvalidRecord when a value cannot be
// written as JSON (a string that is not UTF-8), naming the operation and sequence.
JournalResult<std::vector<std::string>> serialize_data(std::span<const JournalRecord> records);

// Corrupt, naming the operation and sequence, when `stored` is not JSON.
JournalResult<Json> parse_data(std::string_view stored, std::string_view operation_id,
                               std::int64_t sequence);

}  // namespace stsresize::journal_rules
