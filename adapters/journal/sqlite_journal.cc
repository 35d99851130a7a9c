#include "adapters/journal/sqlite_journal.h"

#include <optional>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include "adapters/journal/journal_rules.h"
#include "adapters/journal/migrator.h"
#include "adapters/journal/sqlite_errors.h"
#include "migrations/embedded.h"

namespace stsresize {

using journal_rules::StreamHead;
using journal_rules::text;

namespace {

// How long a writer waits for another connection's write transaction (another process on the
// same file) before giving up with Io.
constexpr int kBusyTimeoutMillis = 5000;

// Resets a cached statement when leaving a scope, so that no half-stepped statement keeps a
// read transaction open between calls.
class ResetOnExit {
 public:
  explicit ResetOnExit(SQLite::Statement& statement) : statement_(statement) {
    statement_.reset();
    statement_.clearBindings();
  }
  ~ResetOnExit() { statement_.tryReset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  SQLite::Statement& statement_;
};

}  // namespace

struct SqliteJournal::Connection {
  Connection(const std::filesystem::path& path, int flags, bool read_only)
      : db(path.string(), flags, kBusyTimeoutMillis), path(path), read_only(read_only) {}

  // Prepared once the schema exists; reused by every call.
  void prepare() {
    head.emplace(db,
                 "SELECT namespace, statefulset, last_sequence FROM operations "
                 "WHERE operation_id = ?");
    events_after.emplace(db,
                         "SELECT sequence, time, type, data FROM events "
                         "WHERE operation_id = ? AND sequence > ? ORDER BY sequence");
    if (read_only) return;
    insert_operation.emplace(db,
                             "INSERT INTO operations (operation_id, namespace, statefulset, "
                             "first_time, last_time, last_sequence) VALUES (?, ?, ?, ?, ?, ?)");
    advance_operation.emplace(db,
                              "UPDATE operations SET last_time = ?, last_sequence = ? "
                              "WHERE operation_id = ? AND last_sequence = ?");
    insert_event.emplace(db,
                         "INSERT INTO events (operation_id, sequence, time, type, data) "
                         "VALUES (?, ?, ?, ?, ?)");
  }

  std::optional<StreamHead> read_head(const std::string& operation_id) {
    ResetOnExit reset(*head);
    head->bind(1, operation_id);
    if (!head->executeStep()) return std::nullopt;
    return StreamHead{head->getColumn(0).getString(), head->getColumn(1).getString(),
                      head->getColumn(2).getInt64()};
  }

  SQLite::Database db;  // declared first: statements must be finalised before it closes
  std::filesystem::path path;
  bool read_only;
  std::optional<SQLite::Statement> head;
  std::optional<SQLite::Statement> events_after;
  std::optional<SQLite::Statement> insert_operation;
  std::optional<SQLite::Statement> advance_operation;
  std::optional<SQLite::Statement> insert_event;
};

SqliteJournal::SqliteJournal(std::unique_ptr<Connection> connection)
    : connection_(std::move(connection)) {}

SqliteJournal::~SqliteJournal() = default;

JournalResult<std::unique_ptr<SqliteJournal>> SqliteJournal::open(
    const std::filesystem::path& path) {
  try {
    auto connection = std::make_unique<Connection>(
        path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE, /*read_only=*/false);
    SQLite::Database& db = connection->db;

    // WAL: readers (stsresize replay, status) never block the controller's appends, and a
    // commit is one sequential write.
    SQLite::Statement journal_mode(db, "PRAGMA journal_mode = WAL");
    journal_mode.executeStep();
    const bool wal = journal_mode.getColumn(0).getString() == "wal";
    journal_mode.reset();
    // In WAL mode synchronous=NORMAL cannot corrupt the file and loses nothing when the
    // process dies (the committed WAL frames are in the OS page cache); only a power loss or
    // kernel crash can drop the last commits, and the cluster's annotations, not the journal,
    // are what the controller resumes from. It saves an fsync per append. Without WAL (a
    // filesystem without shared memory), NORMAL could corrupt on power loss: keep FULL.
    db.exec(wal ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");

    auto migrated = migrate(db, embedded_migrations());
    if (!migrated) return std::unexpected(migrated.error());

    connection->prepare();
    return std::unique_ptr<SqliteJournal>(new SqliteJournal(std::move(connection)));
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(error, text("opening ", path)));
  }
}

JournalResult<std::unique_ptr<SqliteJournal>> SqliteJournal::open_read_only(
    const std::filesystem::path& path) {
  std::error_code ignored;
  if (!std::filesystem::exists(path, ignored)) {
    return std::unexpected(JournalError{
        JournalErrorCode::Io,
        text("journal ", path, " does not exist (read-only open never creates a journal)")});
  }
  try {
    auto connection = std::make_unique<Connection>(path, SQLite::OPEN_READONLY, /*read_only=*/true);
    auto version = schema_version(connection->db);
    if (!version) return std::unexpected(version.error());
    if (*version == 0) {
      return std::unexpected(
          JournalError{JournalErrorCode::Corrupt,
                       text(path, " is not an stsresize journal (no schema version)")});
    }
    if (auto allowed = refuse_newer_schema(*version, embedded_migrations()); !allowed) {
      return std::unexpected(allowed.error());
    }
    // An older schema is read as it is: reading relies only on version 1's tables and columns,
    // which later migrations must keep.
    connection->prepare();
    return std::unique_ptr<SqliteJournal>(new SqliteJournal(std::move(connection)));
  } catch (const std::exception& error) {
    return std::unexpected(
        sqlite_errors::from_exception(error, text("opening ", path, " read-only")));
  }
}

JournalResult<void> SqliteJournal::append(std::span<const JournalRecord> records) {
  if (records.empty()) return {};
  std::lock_guard lock(mutex_);
  const std::string& operation_id = records.front().operation_id;
  if (connection_->read_only) {
    return std::unexpected(JournalError{
        JournalErrorCode::Io, text("journal ", connection_->path,
                                   " is open read-only; cannot append to ", operation_id)});
  }
  auto data = journal_rules::serialize_data(records);
  if (!data) return std::unexpected(data.error());

  try {
    Connection& c = *connection_;
    // IMMEDIATE: the write lock is taken before the head is read, so the check below and the
    // inserts see the same stream even with another process writing the file.
    SQLite::Transaction transaction(c.db, SQLite::TransactionBehavior::IMMEDIATE);
    const std::optional<StreamHead> head = c.read_head(operation_id);
    if (auto checked = journal_rules::check_append(records, head); !checked) return checked;

    const JournalRecord& last = records.back();
    const std::int64_t last_time = journal_rules::to_unix_millis(last.time);
    if (head) {
      ResetOnExit reset(*c.advance_operation);
      c.advance_operation->bind(1, last_time);
      c.advance_operation->bind(2, last.sequence);
      c.advance_operation->bind(3, operation_id);
      c.advance_operation->bind(4, head->last_sequence);
      if (c.advance_operation->exec() != 1) {
        return std::unexpected(
            JournalError{JournalErrorCode::SequenceConflict,
                         text("operation ", operation_id, " moved past sequence ",
                              head->last_sequence, " while appending")});
      }
    } else {
      const JournalRecord& first = records.front();
      ResetOnExit reset(*c.insert_operation);
      c.insert_operation->bind(1, operation_id);
      c.insert_operation->bind(2, first.ns);
      c.insert_operation->bind(3, first.statefulset);
      c.insert_operation->bind(4, journal_rules::to_unix_millis(first.time));
      c.insert_operation->bind(5, last_time);
      c.insert_operation->bind(6, last.sequence);
      c.insert_operation->exec();
    }
    for (std::size_t i = 0; i < records.size(); ++i) {
      ResetOnExit reset(*c.insert_event);
      c.insert_event->bind(1, operation_id);
      c.insert_event->bind(2, records[i].sequence);
      c.insert_event->bind(3, journal_rules::to_unix_millis(records[i].time));
      c.insert_event->bind(4, records[i].type);
      c.insert_event->bind(5, (*data)[i]);
      c.insert_event->exec();
    }
    transaction.commit();
    return {};
  } catch (const std::exception& error) {
    // The checks above make this unreachable for one writer; the primary key, the trigger and
    // the guarded UPDATE are what stop a writer that raced past them.
    if (sqlite_errors::is_constraint_violation(error)) {
      return std::unexpected(JournalError{JournalErrorCode::SequenceConflict,
                                          text("operation ", operation_id, ": ", error.what())});
    }
    return std::unexpected(
        sqlite_errors::from_exception(error, text("appending to operation ", operation_id)));
  }
}

JournalResult<std::int64_t> SqliteJournal::last_sequence(const std::string& operation_id) {
  std::lock_guard lock(mutex_);
  try {
    const std::optional<StreamHead> head = connection_->read_head(operation_id);
    return head ? head->last_sequence : 0;
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(
        error, text("reading the last sequence of operation ", operation_id)));
  }
}

JournalResult<std::vector<JournalRecord>> SqliteJournal::read(const std::string& operation_id,
                                                              std::int64_t after) {
  std::lock_guard lock(mutex_);
  try {
    Connection& c = *connection_;
    std::vector<JournalRecord> records;
    // The head names the StatefulSet; it never changes once written, so reading it apart from
    // the events cannot mix two versions of it.
    const std::optional<StreamHead> head = c.read_head(operation_id);
    if (!head) return records;

    ResetOnExit reset(*c.events_after);
    c.events_after->bind(1, operation_id);
    c.events_after->bind(2, after);
    while (c.events_after->executeStep()) {
      const std::int64_t sequence = c.events_after->getColumn(0).getInt64();
      auto data = journal_rules::parse_data(c.events_after->getColumn(3).getString(), operation_id,
                                            sequence);
      if (!data) return std::unexpected(data.error());
      records.push_back(JournalRecord{
          operation_id, sequence,
          journal_rules::from_unix_millis(c.events_after->getColumn(1).getInt64()), head->ns,
          head->statefulset, c.events_after->getColumn(2).getString(), std::move(*data)});
    }
    return records;
  } catch (const std::exception& error) {
    return std::unexpected(
        sqlite_errors::from_exception(error, text("reading operation ", operation_id)));
  }
}

JournalResult<std::vector<JournalRecord>> SqliteJournal::query(const JournalQuery& query) {
  std::string sql =
      "SELECT e.operation_id, e.sequence, e.time, o.namespace, o.statefulset, e.type, e.data "
      "FROM events AS e JOIN operations AS o ON o.operation_id = e.operation_id WHERE 1";
  if (query.operation_id) sql += " AND e.operation_id = :operation_id";
  if (query.ns) sql += " AND o.namespace = :namespace";
  if (query.statefulset) sql += " AND o.statefulset = :statefulset";
  if (query.since) sql += " AND e.time >= :since";
  if (query.until) sql += " AND e.time < :until";
  sql += " ORDER BY o.first_time, o.operation_id, e.sequence";

  std::lock_guard lock(mutex_);
  try {
    SQLite::Statement select(connection_->db, sql);
    if (query.operation_id) select.bind(":operation_id", *query.operation_id);
    if (query.ns) select.bind(":namespace", *query.ns);
    if (query.statefulset) select.bind(":statefulset", *query.statefulset);
    if (query.since) select.bind(":since", journal_rules::bound_to_unix_millis(*query.since));
    if (query.until) select.bind(":until", journal_rules::bound_to_unix_millis(*query.until));

    std::vector<JournalRecord> records;
    while (select.executeStep()) {
      std::string operation_id = select.getColumn(0).getString();
      const std::int64_t sequence = select.getColumn(1).getInt64();
      auto data =
          journal_rules::parse_data(select.getColumn(6).getString(), operation_id, sequence);
      if (!data) return std::unexpected(data.error());
      records.push_back(
          JournalRecord{std::move(operation_id), sequence,
                        journal_rules::from_unix_millis(select.getColumn(2).getInt64()),
                        select.getColumn(3).getString(), select.getColumn(4).getString(),
                        select.getColumn(5).getString(), std::move(*data)});
    }
    return records;
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(error, "querying events"));
  }
}

JournalResult<std::vector<OperationSummary>> SqliteJournal::operations() {
  std::lock_guard lock(mutex_);
  try {
    SQLite::Statement select(connection_->db,
                             "SELECT operation_id, namespace, statefulset, last_sequence, "
                             "first_time, last_time FROM operations "
                             "ORDER BY first_time, operation_id");
    std::vector<OperationSummary> summaries;
    while (select.executeStep()) {
      summaries.push_back(
          OperationSummary{select.getColumn(0).getString(), select.getColumn(1).getString(),
                           select.getColumn(2).getString(), select.getColumn(3).getInt64(),
                           journal_rules::from_unix_millis(select.getColumn(4).getInt64()),
                           journal_rules::from_unix_millis(select.getColumn(5).getInt64())});
    }
    return summaries;
  } catch (const std::exception& error) {
    return std::unexpected(sqlite_errors::from_exception(error, "listing operations"));
  }
}

}  // namespace stsresize
