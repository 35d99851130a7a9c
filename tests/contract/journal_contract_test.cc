// The Journal port's contract (engine/ports/journal.h), run against every implementation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "adapters/journal/memory_journal.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/ports/journal.h"
#include "tests/support/scratch_dir.h"

namespace stsresize {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// One implementation under test: how to make a fresh, empty journal and whatever it needs to
// live (the SQLite journal's directory).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Journal& journal() = 0;
};

class MemoryBackend final : public Backend {
 public:
  Journal& journal() override { return journal_; }

 private:
  MemoryJournal journal_;
};

class SqliteBackend final : public Backend {
 public:
  SqliteBackend() {
    auto opened = SqliteJournal::open(dir_.file("journal.db"));
    if (!opened)
      throw std::runtime_error("cannot open the test journal: " + opened.error().message);
    journal_ = std::move(*opened);
  }
  Journal& journal() override { return *journal_; }

 private:
  testing_support::ScratchDir dir_;
  std::unique_ptr<SqliteJournal> journal_;
};

struct Implementation {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;
};

void PrintTo(const Implementation& implementation, std::ostream* out) {
  *out << implementation.name;
}

// An instant with a sub-millisecond part of zero, well after the epoch.
const TimePoint kT0{milliseconds{1'800'000'000'000}};

JournalRecord record(const std::string& operation, std::int64_t sequence, TimePoint time = kT0,
                     Json data = Json::object(), const std::string& ns = "shop",
                     const std::string& statefulset = "db") {
  return JournalRecord{operation, sequence, time, ns, statefulset, "PhaseChanged", std::move(data)};
}

std::vector<std::int64_t> sequences(const std::vector<JournalRecord>& records) {
  std::vector<std::int64_t> result;
  for (const JournalRecord& r : records) result.push_back(r.sequence);
  return result;
}

std::vector<std::string> operation_ids(const std::vector<JournalRecord>& records) {
  std::vector<std::string> result;
  for (const JournalRecord& r : records)
    result.push_back(r.operation_id + "#" + std::to_string(r.sequence));
  return result;
}

class JournalContract : public ::testing::TestWithParam<Implementation> {
 protected:
  void append_ok(std::vector<JournalRecord> records) {
    auto appended = journal->append(records);
    ASSERT_TRUE(appended.has_value()) << appended.error().message;
  }
  JournalErrorCode append_error(std::vector<JournalRecord> records) {
    auto appended = journal->append(records);
    EXPECT_FALSE(appended.has_value()) << "append unexpectedly succeeded";
    return appended ? JournalErrorCode::Io : appended.error().code;
  }
  std::vector<JournalRecord> read_all(const std::string& operation, std::int64_t after = 0) {
    auto records = journal->read(operation, after);
    EXPECT_TRUE(records.has_value()) << records.error().message;
    return records.value_or(std::vector<JournalRecord>{});
  }
  std::vector<JournalRecord> query_all(const JournalQuery& query) {
    auto records = journal->query(query);
    EXPECT_TRUE(records.has_value()) << records.error().message;
    return records.value_or(std::vector<JournalRecord>{});
  }
  std::int64_t last(const std::string& operation) {
    auto sequence = journal->last_sequence(operation);
    EXPECT_TRUE(sequence.has_value()) << sequence.error().message;
    return sequence.value_or(-1);
  }

  // Three operations whose id order (a, b, c) differs from their age order (b, a, c).
  void append_three_operations() {
    append_ok({record("op-a", 1, kT0 + milliseconds{10}, {}, "shop", "web"),
               record("op-a", 2, kT0 + milliseconds{40}, {}, "shop", "web")});
    append_ok({record("op-b", 1, kT0 + milliseconds{0}, {}, "shop", "db"),
               record("op-b", 2, kT0 + milliseconds{30}, {}, "shop", "db"),
               record("op-b", 3, kT0 + milliseconds{50}, {}, "shop", "db")});
    append_ok({record("op-c", 1, kT0 + milliseconds{20}, {}, "blog", "web")});
  }

  std::unique_ptr<Backend> backend = GetParam().make();
  Journal* journal = &backend->journal();
};

INSTANTIATE_TEST_SUITE_P(
    Journals, JournalContract,
    ::testing::Values(Implementation{"Memory", [] { return std::make_unique<MemoryBackend>(); }},
                      Implementation{"Sqlite", [] { return std::make_unique<SqliteBackend>(); }}),
    [](const ::testing::TestParamInfo<Implementation>& info) { return info.param.name; });

TEST_P(JournalContract, ReadReturnsEveryFieldAsAppendedIncludingNestedJson) {
  const Json nested = Json::parse(R"({
    "from": {"size": "10Gi", "claims": ["data-db-0", "data-db-1"]},
    "to": {"size": "20Gi", "ratio": 2.5, "limits": {"max": 9007199254740993, "min": -3}},
    "note": "grüße \"quoted\" \\ back\nslash", "empty": {}, "none": null, "ok": true
  })");
  const std::vector<JournalRecord> written = {
      JournalRecord{"op-1", 1, kT0 + milliseconds{123}, "shop", "db", "Detected", nested},
      JournalRecord{"op-1", 2, kT0 + milliseconds{124}, "shop", "db", "PhaseChanged",
                    Json::array({1, "two", Json::object({{"three", 3}})})},
      JournalRecord{"op-1", 3, kT0 + milliseconds{124}, "shop", "db", "Note", Json("just text")},
  };
  append_ok(written);

  EXPECT_EQ(read_all("op-1"), written);
}

TEST_P(JournalContract, KeepsTimeToTheMillisecondRoundingTowardsThePast) {
  const TimePoint after_epoch = kT0 + milliseconds{7} + microseconds{999};
  const TimePoint before_epoch = TimePoint{} - milliseconds{5} - microseconds{500};
  append_ok({record("op-1", 1, after_epoch), record("op-1", 2, before_epoch)});

  const auto read = read_all("op-1");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].time, kT0 + milliseconds{7});
  EXPECT_EQ(read[1].time, TimePoint{} - milliseconds{6});
}

TEST_P(JournalContract, RefusesAFirstSequenceOtherThanOne) {
  EXPECT_EQ(append_error({record("op-1", 2)}), JournalErrorCode::SequenceConflict);
  EXPECT_EQ(append_error({record("op-1", 0)}), JournalErrorCode::SequenceConflict);
  EXPECT_EQ(append_error({record("op-1", -1)}), JournalErrorCode::SequenceConflict);

  EXPECT_EQ(last("op-1"), 0);
  auto operations = journal->operations();
  ASSERT_TRUE(operations.has_value());
  EXPECT_THAT(*operations, IsEmpty());
}

TEST_P(JournalContract, RefusesAGapAfterTheLastSequence) {
  append_ok({record("op-1", 1)});

  EXPECT_EQ(append_error({record("op-1", 3)}), JournalErrorCode::SequenceConflict);

  EXPECT_EQ(last("op-1"), 1);
  EXPECT_THAT(sequences(read_all("op-1")), ElementsAre(1));
}

TEST_P(JournalContract, RefusesASequenceAlreadyWrittenAndKeepsTheOriginal) {
  append_ok({record("op-1", 1, kT0, {{"writer", "first"}}),
             record("op-1", 2, kT0, {{"writer", "first"}})});

  EXPECT_EQ(append_error({record("op-1", 2, kT0, {{"writer", "second"}})}),
            JournalErrorCode::SequenceConflict);
  EXPECT_EQ(append_error({record("op-1", 1, kT0, {{"writer", "second"}})}),
            JournalErrorCode::SequenceConflict);

  const auto read = read_all("op-1");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].data["writer"], "first");
}

TEST_P(JournalContract, BatchWithAGapInsideAppendsNothing) {
  EXPECT_EQ(append_error({record("op-1", 1), record("op-1", 2), record("op-1", 4)}),
            JournalErrorCode::SequenceConflict);
  EXPECT_EQ(last("op-1"), 0);
  EXPECT_THAT(read_all("op-1"), IsEmpty());
}

TEST_P(JournalContract, BatchWithOneInvalidRecordAppendsNothing) {
  append_ok({record("op-1", 1)});
  JournalRecord untyped = record("op-1", 4);
  untyped.type = "";

  EXPECT_EQ(append_error({record("op-1", 2), record("op-1", 3), untyped}),
            JournalErrorCode::InvalidRecord);

  EXPECT_EQ(last("op-1"), 1);
  EXPECT_THAT(sequences(read_all("op-1")), ElementsAre(1));
}

TEST_P(JournalContract, BatchWithDataThatIsNotWritableAsJsonAppendsNothing) {
  // nlohmann refuses to write a string that is not UTF-8.
  EXPECT_EQ(append_error({record("op-1", 1), record("op-1", 2, kT0, {{"bad", "\xff\xfe"}})}),
            JournalErrorCode::InvalidRecord);
  EXPECT_EQ(last("op-1"), 0);
}

TEST_P(JournalContract, RefusesABatchOfSeveralOperations) {
  EXPECT_EQ(append_error({record("op-1", 1), record("op-2", 1)}), JournalErrorCode::InvalidRecord);
  EXPECT_EQ(last("op-1"), 0);
  EXPECT_EQ(last("op-2"), 0);
}

TEST_P(JournalContract, RefusesRecordsWithEmptyIdentifiers) {
  JournalRecord no_operation = record("", 1);
  JournalRecord no_namespace = record("op-1", 1, kT0, {}, "", "db");
  JournalRecord no_statefulset = record("op-1", 1, kT0, {}, "shop", "");

  EXPECT_EQ(append_error({no_operation}), JournalErrorCode::InvalidRecord);
  EXPECT_EQ(append_error({no_namespace}), JournalErrorCode::InvalidRecord);
  EXPECT_EQ(append_error({no_statefulset}), JournalErrorCode::InvalidRecord);
  EXPECT_EQ(last("op-1"), 0);
}

TEST_P(JournalContract, RefusesRecordsNamingAnotherStatefulSetThanTheOperationsFirst) {
  append_ok({record("op-1", 1, kT0, {}, "shop", "db")});

  EXPECT_EQ(append_error({record("op-1", 2, kT0, {}, "shop", "cache")}),
            JournalErrorCode::InvalidRecord);
  EXPECT_EQ(append_error({record("op-1", 2, kT0, {}, "other", "db")}),
            JournalErrorCode::InvalidRecord);
  EXPECT_EQ(append_error({record("op-2", 1, kT0, {}, "shop", "db"),
                          record("op-2", 2, kT0, {}, "shop", "cache")}),
            JournalErrorCode::InvalidRecord);
  EXPECT_EQ(last("op-1"), 1);
  EXPECT_EQ(last("op-2"), 0);
}

TEST_P(JournalContract, AppendOfNothingSucceedsAndChangesNothing) {
  append_ok({});
  auto operations = journal->operations();
  ASSERT_TRUE(operations.has_value());
  EXPECT_THAT(*operations, IsEmpty());
}

TEST_P(JournalContract, ReadAfterReturnsOnlyLaterRecordsInSequenceOrder) {
  append_ok({record("op-1", 1), record("op-1", 2), record("op-1", 3)});
  append_ok({record("op-1", 4), record("op-1", 5)});
  append_ok({record("op-2", 1)});

  EXPECT_THAT(sequences(read_all("op-1", 2)), ElementsAre(3, 4, 5));
  EXPECT_THAT(sequences(read_all("op-1", 0)), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(read_all("op-1", 5), IsEmpty());
  EXPECT_THAT(read_all("unknown"), IsEmpty());
}

TEST_P(JournalContract, LastSequenceFollowsAppendsPerOperation) {
  EXPECT_EQ(last("op-1"), 0);
  append_ok({record("op-1", 1), record("op-1", 2)});
  append_ok({record("op-2", 1)});
  append_ok({record("op-1", 3)});

  EXPECT_EQ(last("op-1"), 3);
  EXPECT_EQ(last("op-2"), 1);
  EXPECT_EQ(last("op-3"), 0);
}

TEST_P(JournalContract, QueryWithoutFilterOrdersByOperationAgeThenSequence) {
  append_three_operations();
  EXPECT_THAT(operation_ids(query_all({})),
              ElementsAre("op-b#1", "op-b#2", "op-b#3", "op-a#1", "op-a#2", "op-c#1"));
}

TEST_P(JournalContract, QueryFiltersByOperationNamespaceAndStatefulSet) {
  append_three_operations();

  EXPECT_THAT(operation_ids(query_all({.operation_id = "op-a"})), ElementsAre("op-a#1", "op-a#2"));
  EXPECT_THAT(operation_ids(query_all({.ns = "shop"})),
              ElementsAre("op-b#1", "op-b#2", "op-b#3", "op-a#1", "op-a#2"));
  EXPECT_THAT(operation_ids(query_all({.statefulset = "web"})),
              ElementsAre("op-a#1", "op-a#2", "op-c#1"));
  EXPECT_THAT(operation_ids(query_all({.ns = "blog", .statefulset = "web"})),
              ElementsAre("op-c#1"));
  EXPECT_THAT(query_all({.operation_id = "op-a", .ns = "blog"}), IsEmpty());
  EXPECT_THAT(query_all({.ns = "nowhere"}), IsEmpty());
}

TEST_P(JournalContract, QueryTimeWindowIncludesSinceAndExcludesUntil) {
  append_three_operations();

  EXPECT_THAT(
      operation_ids(query_all({.since = kT0 + milliseconds{20}, .until = kT0 + milliseconds{40}})),
      ElementsAre("op-b#2", "op-c#1"));
  EXPECT_THAT(operation_ids(query_all({.since = kT0 + milliseconds{40}})),
              ElementsAre("op-b#3", "op-a#2"));
  EXPECT_THAT(operation_ids(query_all({.until = kT0 + milliseconds{10}})), ElementsAre("op-b#1"));
  EXPECT_THAT(
      operation_ids(query_all(
          {.ns = "shop", .since = kT0 + milliseconds{10}, .until = kT0 + milliseconds{31}})),
      ElementsAre("op-b#2", "op-a#1"));
}

TEST_P(JournalContract, QueryBoundsFinerThanAMillisecondKeepTheirMeaning) {
  append_three_operations();

  // op-c#1 is at 20 ms: after a `since` of 20.5 ms, and before an `until` of 20.001 ms.
  EXPECT_THAT(
      operation_ids(query_all({.operation_id = "op-c", .since = kT0 + microseconds{20'500}})),
      IsEmpty());
  EXPECT_THAT(
      operation_ids(query_all({.operation_id = "op-c", .until = kT0 + microseconds{20'001}})),
      ElementsAre("op-c#1"));
}

TEST_P(JournalContract, OperationsSummariseEachStreamOldestFirst) {
  append_three_operations();
  // Same first time as op-b: the id breaks the tie.
  append_ok({record("op-0", 1, kT0, {}, "shop", "db")});

  auto operations = journal->operations();
  ASSERT_TRUE(operations.has_value()) << operations.error().message;
  ASSERT_EQ(operations->size(), 4u);
  const OperationSummary& zero = (*operations)[0];
  const OperationSummary& b = (*operations)[1];
  const OperationSummary& a = (*operations)[2];
  const OperationSummary& c = (*operations)[3];
  EXPECT_EQ(zero.operation_id, "op-0");
  EXPECT_EQ(b.operation_id, "op-b");
  EXPECT_EQ(a.operation_id, "op-a");
  EXPECT_EQ(c.operation_id, "op-c");

  EXPECT_EQ(b.ns, "shop");
  EXPECT_EQ(b.statefulset, "db");
  EXPECT_EQ(b.last_sequence, 3);
  EXPECT_EQ(b.first_time, kT0);
  EXPECT_EQ(b.last_time, kT0 + milliseconds{50});
  EXPECT_EQ(a.statefulset, "web");
  EXPECT_EQ(a.last_sequence, 2);
  EXPECT_EQ(a.first_time, kT0 + milliseconds{10});
  EXPECT_EQ(a.last_time, kT0 + milliseconds{40});
  EXPECT_EQ(c.ns, "blog");
  EXPECT_EQ(c.first_time, c.last_time);
}

TEST_P(JournalContract, SummaryLastTimeIsTheLastRecordsTimeEvenIfEarlier) {
  // A clock that stepped back between two records must not reorder the stream.
  append_ok({record("op-1", 1, kT0 + milliseconds{100})});
  append_ok({record("op-1", 2, kT0 + milliseconds{60})});

  auto operations = journal->operations();
  ASSERT_TRUE(operations.has_value());
  ASSERT_EQ(operations->size(), 1u);
  EXPECT_EQ((*operations)[0].first_time, kT0 + milliseconds{100});
  EXPECT_EQ((*operations)[0].last_time, kT0 + milliseconds{60});
  EXPECT_THAT(sequences(read_all("op-1")), ElementsAre(1, 2));
}

TEST_P(JournalContract, ConcurrentAppendersOnOneStreamEachSequenceHasExactlyOneWinner) {
  constexpr int kWriters = 4;
  constexpr int kAppendsPerWriter = 25;
  std::vector<std::vector<std::int64_t>> won(kWriters);
  std::atomic<bool> failed{false};
  std::atomic<int> conflicts{0};

  std::vector<std::thread> writers;
  for (int writer = 0; writer < kWriters; ++writer) {
    writers.emplace_back([&, writer] {
      while (static_cast<int>(won[writer].size()) < kAppendsPerWriter && !failed) {
        auto last = journal->last_sequence("op-1");
        if (!last) {
          failed = true;
          return;
        }
        const std::int64_t next = *last + 1;
        auto appended =
            journal->append(std::vector{record("op-1", next, kT0, {{"writer", writer}})});
        if (appended) {
          won[writer].push_back(next);
        } else if (appended.error().code == JournalErrorCode::SequenceConflict) {
          ++conflicts;  // another writer took `next`: re-read and retry
        } else {
          failed = true;
        }
      }
    });
  }
  for (std::thread& thread : writers) thread.join();
  ASSERT_FALSE(failed);

  const auto stored = read_all("op-1");
  ASSERT_EQ(stored.size(), static_cast<std::size_t>(kWriters * kAppendsPerWriter));
  std::set<std::int64_t> claimed;
  for (int writer = 0; writer < kWriters; ++writer) {
    for (std::int64_t sequence : won[writer]) {
      EXPECT_TRUE(claimed.insert(sequence).second) << "sequence " << sequence << " won twice";
      EXPECT_EQ(stored[sequence - 1].data["writer"], writer) << "sequence " << sequence;
    }
  }
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].sequence, static_cast<std::int64_t>(i) + 1);
  }
  EXPECT_EQ(last("op-1"), kWriters * kAppendsPerWriter);
}

}  // namespace
}  // namespace stsresize
