#pragma once
// Brings a journal database's schema up to date with the migrations this binary embeds
// (migrations/embedded.h), and refuses a database written by a newer stsresize.
//
// Versions applied are rows of schema_migrations(version, name, applied_at); the database's
// version is the largest. Each pending migration runs in its own IMMEDIATE transaction together
// with its schema_migrations row, so a failing migration leaves the previous version intact
// and two processes migrating the same file at once apply each migration exactly once.
#include <span>

#include <SQLiteCpp/Database.h>

#include "engine/ports/journal.h"
#include "migrations/embedded.h"

namespace stsresize {

// The database's schema version; 0 for a database stsresize has never migrated.
JournalResult<int> schema_version(SQLite::Database& db);

// SchemaTooNew when `version` is newer than the newest of `migrations`: the message names both
// versions and tells the operator to upgrade stsresize.
JournalResult<void> refuse_newer_schema(int version, std::span<const Migration> migrations);

// Applies every migration newer than the database's version, in order, and returns the version
// reached. `migrations` must be sorted and run 1, 2, 3... (InvalidRecord otherwise). Errors:
// SchemaTooNew (see above); Io or Corrupt when SQLite fails, with the database left at the
// last version that committed.
JournalResult<int> migrate(SQLite::Database& db, std::span<const Migration> migrations);

}  // namespace stsresize
