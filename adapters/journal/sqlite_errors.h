#pragma once
// Turns SQLite failures into JournalErrors at the adapter boundary.
#include <exception>
#include <string_view>

#include "engine/ports/journal.h"

namespace stsresize::sqlite_errors {

// Corrupt for SQLITE_CORRUPT and SQLITE_NOTADB (the file is damaged or is not a database), Io
// for every other failure. `doing` says what was being attempted, e.g. "appending to op-1";
// the message is "<doing>: <SQLite's reason>", without naming the journal (callers do).
JournalError from_exception(const std::exception& error, std::string_view doing);

// True when `error` is a SQLite constraint violation (primary key, CHECK, trigger).
bool is_constraint_violation(const std::exception& error);

}  // namespace stsresize::sqlite_errors
