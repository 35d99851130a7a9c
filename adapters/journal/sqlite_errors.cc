#include "adapters/journal/sqlite_errors.h"

#include <sqlite3.h>

#include <SQLiteCpp/Exception.h>

#include "adapters/journal/journal_rules.h"

namespace stsresize::sqlite_errors {

JournalError from_exception(const std::exception& error, std::string_view doing) {
  JournalErrorCode code = JournalErrorCode::Io;
  if (const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&error)) {
    // The primary result code is the low byte of the extended one.
    const int primary = sqlite->getErrorCode() & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) code = JournalErrorCode::Corrupt;
  }
  // No "journal: " prefix: every caller names the journal already ("journal: " in the
  // reconciler, "cannot read journal FILE: " in the commands), so it would be said twice.
  return JournalError{code, journal_rules::text(doing, ": ", error.what())};
}

bool is_constraint_violation(const std::exception& error) {
  const auto* sqlite = dynamic_cast<const SQLite::Exception*>(&error);
  return sqlite != nullptr && (sqlite->getErrorCode() & 0xff) == SQLITE_CONSTRAINT;
}

}  // namespace stsresize::sqlite_errors
