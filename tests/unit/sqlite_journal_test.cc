// What only the SQLite journal has: a file that outlives the process, other connections to the
// same file, a schema with versions, and bytes that can be damaged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "adapters/journal/migrator.h"
#include "adapters/journal/sqlite_journal.h"
#include "migrations/embedded.h"
#include "tests/support/scratch_dir.h"

namespace stsresize {
namespace {

using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const TimePoint kT0{milliseconds{1'800'000'000'000}};

JournalRecord record(const std::string& operation, std::int64_t sequence, Json data = {}) {
  return JournalRecord{operation,      sequence,       kT0 + milliseconds{sequence}, "shop", "db",
                       "PhaseChanged", std::move(data)};
}

std::unique_ptr<SqliteJournal> open_or_fail(const std::filesystem::path& path) {
  auto journal = SqliteJournal::open(path);
  if (!journal) ADD_FAILURE() << "open " << path << ": " << journal.error().message;
  return journal ? std::move(*journal) : nullptr;
}

std::vector<std::int64_t> sequences(const std::vector<JournalRecord>& records) {
  std::vector<std::int64_t> result;
  for (const JournalRecord& r : records) result.push_back(r.sequence);
  return result;
}

std::vector<Migration> embedded_plus(const Migration& extra) {
  auto embedded = embedded_migrations();
  std::vector<Migration> migrations(embedded.begin(), embedded.end());
  migrations.push_back(extra);
  return migrations;
}

class SqliteJournalTest : public ::testing::Test {
 protected:
  testing_support::ScratchDir dir;
  std::filesystem::path path = dir.file("journal.db");
};

TEST_F(SqliteJournalTest, SqliteJournal_KeepsRecordsAcrossReopen) {
  {
    auto journal = open_or_fail(path);
    ASSERT_TRUE(journal);
    ASSERT_TRUE(journal->append(std::vector{record("op-1", 1, {{"k", "v"}}), record("op-1", 2)}));
  }
  auto reopened = open_or_fail(path);
  ASSERT_TRUE(reopened);

  auto read = reopened->read("op-1");
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(*read, (std::vector{record("op-1", 1, {{"k", "v"}}), record("op-1", 2)}));
  EXPECT_EQ(reopened->last_sequence("op-1").value_or(-1), 2);
}

TEST_F(SqliteJournalTest, SqliteJournal_SecondConnectionOnSameFileGetsSequenceConflict) {
  auto first = open_or_fail(path);
  auto second = open_or_fail(path);
  ASSERT_TRUE(first && second);

  ASSERT_TRUE(first->append(std::vector{record("op-1", 1, {{"by", "first"}})}));
  auto stale = second->append(std::vector{record("op-1", 1, {{"by", "second"}})});
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code, JournalErrorCode::SequenceConflict);

  // The second writer catches up and continues; the first is now the stale one.
  ASSERT_EQ(second->last_sequence("op-1").value_or(-1), 1);
  ASSERT_TRUE(second->append(std::vector{record("op-1", 2, {{"by", "second"}})}));
  auto late = first->append(std::vector{record("op-1", 2, {{"by", "first"}})});
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code, JournalErrorCode::SequenceConflict);

  auto read = first->read("op-1");
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].data["by"], "first");
  EXPECT_EQ((*read)[1].data["by"], "second");
}

TEST_F(SqliteJournalTest, SqliteJournal_ConnectionsRacingOnOneStreamLeaveNoGapOrDuplicate) {
  constexpr int kConnections = 3;
  constexpr int kAppendsEach = 20;
  std::vector<std::unique_ptr<SqliteJournal>> connections;
  for (int i = 0; i < kConnections; ++i) {
    connections.push_back(open_or_fail(path));
    ASSERT_TRUE(connections.back());
  }
  std::atomic<bool> failed{false};
  std::vector<int> won(kConnections, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kConnections; ++i) {
    threads.emplace_back([&, i] {
      while (won[i] < kAppendsEach && !failed) {
        auto last = connections[i]->last_sequence("op-1");
        if (!last) {
          failed = true;
          return;
        }
        auto appended = connections[i]->append(std::vector{record("op-1", *last + 1, {{"by", i}})});
        if (appended) {
          ++won[i];
        } else if (appended.error().code != JournalErrorCode::SequenceConflict) {
          ADD_FAILURE() << appended.error().message;
          failed = true;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_FALSE(failed);

  auto read = connections[0]->read("op-1");
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), static_cast<std::size_t>(kConnections * kAppendsEach));
  std::vector<int> stored_by(kConnections, 0);
  for (std::size_t i = 0; i < read->size(); ++i) {
    EXPECT_EQ((*read)[i].sequence, static_cast<std::int64_t>(i) + 1);
    ++stored_by[(*read)[i].data["by"].get<int>()];
  }
  EXPECT_EQ(stored_by, won);
}

TEST_F(SqliteJournalTest, SqliteJournal_SchemaRefusesAGapEvenFromAnotherWriter) {
  auto journal = open_or_fail(path);
  ASSERT_TRUE(journal);
  ASSERT_TRUE(journal->append(std::vector{record("op-1", 1)}));

  SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
  EXPECT_THROW(raw.exec("INSERT INTO events (operation_id, sequence, time, type, data) "
                        "VALUES ('op-1', 3, 0, 'T', '{}')"),
               SQLite::Exception);
  EXPECT_THROW(raw.exec("INSERT INTO events (operation_id, sequence, time, type, data) "
                        "VALUES ('op-1', 1, 0, 'T', '{}')"),
               SQLite::Exception);
  EXPECT_EQ(raw.exec("INSERT INTO events (operation_id, sequence, time, type, data) "
                     "VALUES ('op-1', 2, 0, 'T', '{}')"),
            1);
}

TEST_F(SqliteJournalTest, SqliteJournal_OpensInWalModeAtTheNewestEmbeddedVersion) {
  ASSERT_TRUE(open_or_fail(path));

  SQLite::Database raw(path.string(), SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  SQLite::Statement versions(raw, "SELECT version, name FROM schema_migrations ORDER BY version");
  std::vector<int> applied;
  while (versions.executeStep()) applied.push_back(versions.getColumn(0).getInt());
  std::vector<int> embedded;
  for (const Migration& migration : embedded_migrations()) embedded.push_back(migration.version);
  EXPECT_EQ(applied, embedded);
  EXPECT_TRUE(raw.tableExists("operations"));
  EXPECT_TRUE(raw.tableExists("events"));
}

TEST_F(SqliteJournalTest, SqliteJournal_RefusesSchemaFromNewerVersion) {
  const int newer = static_cast<int>(embedded_migrations().size()) + 1;
  {
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    auto migrated =
        migrate(raw, embedded_plus(Migration{newer, "future", "CREATE TABLE future (x);"}));
    ASSERT_TRUE(migrated.has_value()) << migrated.error().message;
  }

  auto opened = SqliteJournal::open(path);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, JournalErrorCode::SchemaTooNew);
  EXPECT_THAT(opened.error().message,
              AllOf(HasSubstr(std::to_string(newer)),
                    HasSubstr(std::to_string(embedded_migrations().back().version)),
                    HasSubstr("upgrade stsresize")));

  auto read_only = SqliteJournal::open_read_only(path);
  ASSERT_FALSE(read_only.has_value());
  EXPECT_EQ(read_only.error().code, JournalErrorCode::SchemaTooNew);
}

TEST_F(SqliteJournalTest, SqliteJournal_ReadOnlyOpenOfMissingFileFailsWithoutCreatingIt) {
  auto opened = SqliteJournal::open_read_only(path);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, JournalErrorCode::Io);
  EXPECT_THAT(opened.error().message, AllOf(HasSubstr(path.string()), HasSubstr("does not exist")));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(SqliteJournalTest, SqliteJournal_ReadOnlyOpenReadsWhatAWriterWroteAndRefusesAppends) {
  auto writer = open_or_fail(path);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->append(std::vector{record("op-1", 1), record("op-1", 2)}));

  auto reader = SqliteJournal::open_read_only(path);
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  auto read = (*reader)->read("op-1");
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_THAT(sequences(*read), ElementsAre(1, 2));

  // The reader sees later appends of the writer that is still running.
  ASSERT_TRUE(writer->append(std::vector{record("op-1", 3)}));
  EXPECT_EQ((*reader)->last_sequence("op-1").value_or(-1), 3);

  auto appended = (*reader)->append(std::vector{record("op-1", 4)});
  ASSERT_FALSE(appended.has_value());
  EXPECT_EQ(appended.error().code, JournalErrorCode::Io);
  EXPECT_THAT(appended.error().message, HasSubstr("read-only"));
  EXPECT_EQ(writer->last_sequence("op-1").value_or(-1), 3);
}

TEST_F(SqliteJournalTest, SqliteJournal_ReadOnlyOpenRefusesADatabaseThatIsNotAJournal) {
  {
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    raw.exec("CREATE TABLE unrelated (x)");
  }
  auto opened = SqliteJournal::open_read_only(path);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, JournalErrorCode::Corrupt);
  EXPECT_THAT(opened.error().message, HasSubstr("not an stsresize journal"));
}

TEST_F(SqliteJournalTest, SqliteJournal_OpenRefusesAFileThatIsNotADatabase) {
  {
    std::ofstream garbage(path, std::ios::binary);
    garbage << std::string(4096, 'x');
  }
  auto opened = SqliteJournal::open(path);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, JournalErrorCode::Corrupt) << opened.error().message;
  // Callers name the journal ("journal: ...", "cannot read journal FILE: ..."); so not here.
  EXPECT_EQ(opened.error().message, "opening \"" + path.string() + "\": file is not a database");
}

TEST_F(SqliteJournalTest, SqliteJournal_ReportsARowWithBrokenJsonAsCorruptNamingIt) {
  auto journal = open_or_fail(path);
  ASSERT_TRUE(journal);
  ASSERT_TRUE(journal->append(std::vector{record("op-7", 1), record("op-7", 2)}));
  {
    SQLite::Database raw(path.string(), SQLite::OPEN_READWRITE);
    raw.exec(
        "UPDATE events SET data = '{\"truncated\": ' WHERE operation_id = 'op-7' AND "
        "sequence = 2");
  }

  auto read = journal->read("op-7");
  ASSERT_FALSE(read.has_value());
  EXPECT_EQ(read.error().code, JournalErrorCode::Corrupt);
  EXPECT_THAT(read.error().message, AllOf(HasSubstr("op-7"), HasSubstr("#2")));

  auto queried = journal->query({.ns = "shop"});
  ASSERT_FALSE(queried.has_value());
  EXPECT_EQ(queried.error().code, JournalErrorCode::Corrupt);

  // Records before the damaged one stay readable.
  auto first_only = journal->query({.until = kT0 + milliseconds{2}});
  ASSERT_TRUE(first_only.has_value()) << first_only.error().message;
  EXPECT_THAT(sequences(*first_only), ElementsAre(1));
}

// --- Migrator, with synthetic migration lists -------------------------------------------------

class MigratorTest : public ::testing::Test {
 protected:
  int count(const std::string& sql) {
    SQLite::Database raw(path.string(), SQLite::OPEN_READONLY);
    return raw.execAndGet(sql).getInt();
  }

  testing_support::ScratchDir dir;
  std::filesystem::path path = dir.file("migrated.db");
  SQLite::Database db{path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE};
  const Migration v1{1, "things", "CREATE TABLE things (name TEXT NOT NULL);"};
  const Migration v2{2, "colour", "ALTER TABLE things ADD COLUMN colour TEXT DEFAULT 'red';"};
};

TEST_F(MigratorTest, Migrator_AppliesEveryMigrationToAFreshDatabase) {
  EXPECT_EQ(schema_version(db).value_or(-1), 0);

  auto migrated = migrate(db, std::vector{v1, v2});

  ASSERT_TRUE(migrated.has_value()) << migrated.error().message;
  EXPECT_EQ(*migrated, 2);
  EXPECT_EQ(schema_version(db).value_or(-1), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM schema_migrations"), 2);
  EXPECT_NO_THROW(db.exec("INSERT INTO things (name, colour) VALUES ('a', 'blue')"));
}

TEST_F(MigratorTest, Migrator_UpgradesAnExistingDatabaseKeepingItsData) {
  ASSERT_EQ(migrate(db, std::vector{v1}).value_or(-1), 1);
  db.exec("INSERT INTO things (name) VALUES ('kept')");

  auto upgraded = migrate(db, std::vector{v1, v2});

  ASSERT_TRUE(upgraded.has_value()) << upgraded.error().message;
  EXPECT_EQ(*upgraded, 2);
  EXPECT_EQ(db.execAndGet("SELECT name || '/' || colour FROM things").getString(), "kept/red");
  // Running it again applies nothing.
  EXPECT_EQ(migrate(db, std::vector{v1, v2}).value_or(-1), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM schema_migrations"), 2);
}

TEST_F(MigratorTest, Migrator_FailingMigrationLeavesTheDatabaseAtThePreviousVersion) {
  ASSERT_EQ(migrate(db, std::vector{v1}).value_or(-1), 1);
  db.exec("INSERT INTO things (name) VALUES ('kept')");
  // The first statement succeeds and must be rolled back with the failing second one.
  const Migration broken{2, "broken",
                         "CREATE TABLE half_done (x); INSERT INTO no_such_table VALUES (1);"};

  auto migrated = migrate(db, std::vector{v1, broken});

  ASSERT_FALSE(migrated.has_value());
  EXPECT_THAT(migrated.error().message, AllOf(HasSubstr("0002_broken"), HasSubstr("version 1")));
  EXPECT_EQ(schema_version(db).value_or(-1), 1);
  EXPECT_FALSE(db.tableExists("half_done"));
  EXPECT_EQ(count("SELECT COUNT(*) FROM things WHERE name = 'kept'"), 1);
}

TEST_F(MigratorTest, Migrator_RefusesADatabaseNewerThanItsNewestMigration) {
  ASSERT_EQ(migrate(db, std::vector{v1, v2}).value_or(-1), 2);

  auto migrated = migrate(db, std::vector{v1});

  ASSERT_FALSE(migrated.has_value());
  EXPECT_EQ(migrated.error().code, JournalErrorCode::SchemaTooNew);
  EXPECT_THAT(migrated.error().message,
              AllOf(HasSubstr("version 2"), HasSubstr("up to 1"), HasSubstr("upgrade stsresize")));
  EXPECT_EQ(schema_version(db).value_or(-1), 2);
}

TEST_F(MigratorTest, Migrator_RefusesAListWithAGapOrADuplicate) {
  const Migration v3{3, "later", "CREATE TABLE later (x);"};
  const Migration another_v1{1, "again", "CREATE TABLE again (x);"};

  auto with_gap = migrate(db, std::vector{v1, v3});
  auto with_duplicate = migrate(db, std::vector{v1, another_v1});

  ASSERT_FALSE(with_gap.has_value());
  EXPECT_EQ(with_gap.error().code, JournalErrorCode::InvalidRecord);
  ASSERT_FALSE(with_duplicate.has_value());
  EXPECT_EQ(with_duplicate.error().code, JournalErrorCode::InvalidRecord);
  EXPECT_EQ(schema_version(db).value_or(-1), 0);
}

TEST(EmbeddedMigrations, EmbeddedMigrations_RunOneTwoThreeWithoutGapAndAreNotEmpty) {
  const auto migrations = embedded_migrations();
  ASSERT_FALSE(migrations.empty());
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].version, static_cast<int>(i) + 1);
    EXPECT_FALSE(migrations[i].name.empty());
    EXPECT_FALSE(migrations[i].sql.empty());
  }
  EXPECT_EQ(migrations[0].name, "journal");
  EXPECT_THAT(std::string(migrations[0].sql), HasSubstr("CREATE TABLE events"));
}

}  // namespace
}  // namespace stsresize
