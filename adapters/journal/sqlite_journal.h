#pragma once
// The Journal on a SQLite file (schema: migrations/0001_journal.sql). One object per process is
// the norm; several objects or processes on one file are safe: appends take SQLite's write lock
// and a second writer of a stream gets SequenceConflict, never a forked stream.
// Thread-safe: calls on one object are serialised by a mutex.
#include <filesystem>
#include <memory>
#include <mutex>

#include "engine/ports/journal.h"

namespace stsresize {

class SqliteJournal final : public Journal {
 public:
  // Opens the file read-write, creating it if missing, and migrates its schema to this binary's
  // version. SchemaTooNew when a newer stsresize wrote it; Corrupt when it is not a database;
  // Io otherwise.
  static JournalResult<std::unique_ptr<SqliteJournal>> open(const std::filesystem::path& path);
  // Opens an existing journal for reading only (stsresize replay): never creates or migrates.
  // Io when the file does not exist; Corrupt when it is not a journal; SchemaTooNew as above.
  // append() then fails with Io.
  static JournalResult<std::unique_ptr<SqliteJournal>> open_read_only(
      const std::filesystem::path& path);

  ~SqliteJournal() override;

  JournalResult<void> append(std::span<const JournalRecord> records) override;
  JournalResult<std::int64_t> last_sequence(const std::string& operation_id) override;
  JournalResult<std::vector<JournalRecord>> read(const std::string& operation_id,
                                                 std::int64_t after = 0) override;
  JournalResult<std::vector<JournalRecord>> query(const JournalQuery& query) override;
  JournalResult<std::vector<OperationSummary>> operations() override;

 private:
  struct Connection;  // SQLite stays out of this header
  explicit SqliteJournal(std::unique_ptr<Connection> connection);

  std::mutex mutex_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace stsresize
