#pragma once
// `stsresize replay`: reads a journal file (read-only) or a journal export
// (adapters/journal/journal_export.h), replays the selected operations through the state
// machine (engine/replay.h) and prints their timeline as a table or JSON, or with --step each
// record with the operation's state before and after it.
// Exit codes (adapters/app/exit_codes.h): 0 consistent, 1 inconsistent (or an export whose
// checksum does not match), 2 usage error or unreadable input.
#include <ostream>
#include <string>

#include "engine/ports/journal.h"
#include "engine/replay.h"

namespace CLI {
class App;
}

namespace stsresize::cli {

// Empty strings mean "not given". The `{}` let callers name only the fields they set.
struct ReplayOptions {
  std::string journal{};
  std::string file{};  // a `stsresize journal export` document, instead of --journal
  bool ignore_checksum = false;
  bool step = false;
  std::string operation{};
  std::string ns{};
  std::string statefulset{};
  std::string since{};          // RFC 3339, UTC ("2027-01-15T08:00:00Z"), inclusive
  std::string until{};          // exclusive
  std::string output = "text";  // "text" or "json"
};

// Declares the subcommand, its flags and its help on `app`, filling `options` when parsed.
CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options);

// Runs it on options.journal, opened read-only: the report goes to `out`, errors to `err`;
// returns the exit code.
int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);
// The same on any Journal (tests use MemoryJournal); options.journal only names it in messages.
int run_replay(Journal& journal, const ReplayOptions& options, std::ostream& out,
               std::ostream& err);

// The renderings, exposed for tests and tools. The step renderings need a Replay made with
// ReplayStates::Kept.
std::string render_replay_text(const Replay& replay);
std::string render_replay_json(const Replay& replay);
std::string render_replay_steps_text(const Replay& replay);
std::string render_replay_steps_json(const Replay& replay);

}  // namespace stsresize::cli
