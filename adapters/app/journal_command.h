#pragma once
// `stsresize journal export|import|list`: move one operation's journal stream between journal
// files as a self-contained JSON document (adapters/journal/journal_export.h), and list the
// operations a journal holds. Exit codes (adapters/app/exit_codes.h): 0 done, 2 a usage error,
// an unreadable input or a refused import (each message says why and what to run instead).
#include <ostream>
#include <string>

#include "engine/ports/journal.h"

namespace CLI {
class App;
}

namespace stsresize::cli {

enum class JournalAction { None, Export, Import, List };

// Empty strings mean "not given". The `{}` let callers name only the fields they set.
struct JournalOptions {
  JournalAction action = JournalAction::None;
  std::string journal{};
  std::string operation{};      // export
  std::string to{};             // export: the file written; empty or "-" is standard output
  std::string file{};           // import: the export read
  std::string output = "text";  // list: text or json
};

// Declares `journal` and its three subcommands on `app`, filling `options` when parsed.
CLI::App* add_journal_command(CLI::App& app, JournalOptions& options);

// Runs the parsed subcommand on options.journal (export and list open it read-only; import
// creates it if missing).
int run_journal(const JournalOptions& options, std::ostream& out, std::ostream& err);

// The same on any Journal (tests use MemoryJournal); options.journal only names it in messages.
int run_journal_export(Journal& journal, const JournalOptions& options, std::ostream& out,
                       std::ostream& err);
int run_journal_import(Journal& journal, const JournalOptions& options, std::ostream& out,
                       std::ostream& err);
int run_journal_list(Journal& journal, const JournalOptions& options, std::ostream& out,
                     std::ostream& err);

}  // namespace stsresize::cli
