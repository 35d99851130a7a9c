#pragma once
// `stsresize replay`: prints the timeline of the operations in a journal, replayed through the
// same state machine the controller uses. Exit codes: 0 consistent, 1 an inconsistent journal
// (a record the machine or fold refuses; the message names its sequence), 2 usage or I/O error.
#include <iosfwd>
#include <optional>
#include <string>

#include "engine/ports/journal.h"

namespace stsresize {

struct ReplayOptions {
  std::string journal_path;
  std::optional<std::string> operation_id;
  std::string output = "text";  // "text" or "json"
};

inline constexpr int kReplayConsistent = 0;
inline constexpr int kReplayInconsistent = 1;
inline constexpr int kReplayUsageError = 2;

// Against any Journal (tests use MemoryJournal).
int run_replay(Journal& journal, const ReplayOptions& options, std::ostream& out,
               std::ostream& err);
// Opens options.journal_path read-only with SqliteJournal, then run_replay.
int run_replay_file(const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace stsresize
