#include "adapters/journal/migrator.h"

#include <string>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include "adapters/journal/journal_rules.h"
#include "adapters/journal/sqlite_errors.h"

namespace stsresize {
namespace {

using journal_rules::text;

// Created by the migrator rather than by migration 1: the first migration's own row must have
// somewhere to go.
constexpr const char* kCreateVersionsTable = R"sql(
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER NOT NULL PRIMARY KEY CHECK (version > 0),
  name       TEXT    NOT NULL,
  applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
))sql";

int read_version(SQLite::Database& db) {
  if (!db.tableExists("schema_migrations")) return 0;
  SQLite::Statement newest(db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  newest.executeStep();
  return newest.getColumn(0).getInt();
}

JournalResult<void> check_sorted_without_gaps(std::span<const Migration> migrations) {
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1) {
      return std::unexpected(
          JournalError{JournalErrorCode::InvalidRecord,
                       text("migration list: expected version ", i + 1, " at position ", i,
                            ", found ", migrations[i].version, " (", migrations[i].name, ")")});
    }
  }
  return {};
}

std::string label(const Migration& migration) {
  std::string number = std::to_string(migration.version);
  if (number.size() < 4) number.insert(0, 4 - number.size(), '0');
  return number + "_" + std::string(migration.name);
}

}  // namespace

JournalResult<int> schema_version(SQLite::Database& db) {
  try {
    return read_version(db);
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(error, "reading the schema version"));
  }
}

JournalResult<void> refuse_newer_schema(int version, std::span<const Migration> migrations) {
  const int newest_known = migrations.empty() ? 0 : migrations.back().version;
  if (version <= newest_known) return {};
  return std::unexpected(JournalError{
      JournalErrorCode::SchemaTooNew,
      text("the journal has schema version ", version, " but this stsresize knows versions up to ",
           newest_known, ": it was written by a newer stsresize; upgrade stsresize to read it")});
}

JournalResult<int> migrate(SQLite::Database& db, std::span<const Migration> migrations) {
  if (auto valid = check_sorted_without_gaps(migrations); !valid) {
    return std::unexpected(valid.error());
  }
  try {
    int version = read_version(db);
    if (auto allowed = refuse_newer_schema(version, migrations); !allowed) {
      return std::unexpected(allowed.error());
    }
    for (const Migration& migration : migrations) {
      if (migration.version <= version) continue;

      // IMMEDIATE takes the write lock before reading the version, so a second process that
      // migrates the same file waits here and then sees our version instead of re-applying.
      SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
      db.exec(kCreateVersionsTable);
      version = read_version(db);
      if (auto allowed = refuse_newer_schema(version, migrations); !allowed) {
        return std::unexpected(allowed.error());
      }
      if (migration.version <= version) continue;

      try {
        // A migration must not contain BEGIN/COMMIT: it runs inside this transaction.
        db.exec(std::string(migration.sql));
      } catch (const std::exception& error) {
        JournalError failure = sqlite_errors::from_exception(
            error,
            text("migration ", label(migration), " failed; the schema stays at version ", version));
        return std::unexpected(std::move(failure));
      }
      SQLite::Statement record(db, "INSERT INTO schema_migrations (version, name) VALUES (?, ?)");
      record.bind(1, migration.version);
      record.bind(2, std::string(migration.name));
      record.exec();
      transaction.commit();
      version = migration.version;
    }
    return version;
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(error, "migrating the schema"));
  }
}

}  // namespace stsresize
