// Journal throughput, in events per second (items_per_second), for both implementations.
// SQLite runs on a file in the temporary directory, in the production configuration
// (WAL, synchronous=NORMAL).
#include <benchmark/benchmark.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/journal/memory_journal.h"
#include "adapters/journal/sqlite_journal.h"
#include "tests/support/scratch_dir.h"

namespace stsresize {
namespace {

struct MemoryBackend {
  Journal& journal() { return memory; }
  MemoryJournal memory;
};

struct SqliteBackend {
  SqliteBackend() {
    auto opened = SqliteJournal::open(dir.file("bench.db"));
    if (!opened) throw std::runtime_error(opened.error().message);
    sqlite = std::move(*opened);
  }
  Journal& journal() { return *sqlite; }
  testing_support::ScratchDir dir;
  std::unique_ptr<SqliteJournal> sqlite;
};

// About the size of a real event: a phase change with the claim it concerns.
JournalRecord event(std::int64_t sequence) {
  return JournalRecord{"op-bench",
                       sequence,
                       TimePoint{std::chrono::milliseconds{1'800'000'000'000 + sequence}},
                       "shop",
                       "db",
                       "PhaseChanged",
                       {{"from", "ScalingDown"},
                        {"to", "BackingUp"},
                        {"claim", "data-db-0"},
                        {"detail", {{"replicas", 3}, {"size", "20Gi"}}}}};
}

void append_or_abort(Journal& journal, const std::vector<JournalRecord>& batch,
                     benchmark::State& state) {
  if (auto appended = journal.append(batch); !appended) {
    state.SkipWithError(appended.error().message.c_str());
  }
}

template <class Backend>
void BM_JournalAppendOnePerTransaction(benchmark::State& state) {
  Backend backend;
  std::int64_t sequence = 0;
  std::vector<JournalRecord> batch{event(0)};
  for (auto _ : state) {
    batch[0].sequence = ++sequence;
    append_or_abort(backend.journal(), batch, state);
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Backend>
void BM_JournalAppendBatch(benchmark::State& state) {
  const auto batch_size = static_cast<std::int64_t>(state.range(0));
  Backend backend;
  std::int64_t sequence = 0;
  std::vector<JournalRecord> batch;
  for (std::int64_t i = 0; i < batch_size; ++i) batch.push_back(event(0));
  for (auto _ : state) {
    // Renumbering is all the caller-side work per batch; the events' content is built once.
    for (JournalRecord& record : batch) record.sequence = ++sequence;
    append_or_abort(backend.journal(), batch, state);
  }
  state.SetItemsProcessed(state.iterations() * batch_size);
}

constexpr std::int64_t kLongOperation = 10'000;

template <class Backend>
void fill_long_operation(Backend& backend, benchmark::State& state) {
  std::vector<JournalRecord> batch;
  for (std::int64_t sequence = 1; sequence <= kLongOperation; ++sequence) {
    batch.push_back(event(sequence));
  }
  append_or_abort(backend.journal(), batch, state);
}

template <class Backend>
void BM_JournalReadLongOperation(benchmark::State& state) {
  Backend backend;
  fill_long_operation(backend, state);
  for (auto _ : state) {
    auto records = backend.journal().read("op-bench");
    if (!records || records->size() != kLongOperation) state.SkipWithError("short read");
    benchmark::DoNotOptimize(records);
  }
  state.SetItemsProcessed(state.iterations() * kLongOperation);
}

template <class Backend>
void BM_JournalQueryLongOperationByStatefulSetAndTime(benchmark::State& state) {
  Backend backend;
  fill_long_operation(backend, state);
  const JournalQuery query{.ns = "shop",
                           .statefulset = "db",
                           .since = TimePoint{std::chrono::milliseconds{1'800'000'000'000}}};
  for (auto _ : state) {
    auto records = backend.journal().query(query);
    if (!records || records->size() != kLongOperation) state.SkipWithError("short query");
    benchmark::DoNotOptimize(records);
  }
  state.SetItemsProcessed(state.iterations() * kLongOperation);
}

BENCHMARK_TEMPLATE(BM_JournalAppendOnePerTransaction, MemoryBackend);
BENCHMARK_TEMPLATE(BM_JournalAppendOnePerTransaction, SqliteBackend);
BENCHMARK_TEMPLATE(BM_JournalAppendBatch, MemoryBackend)->Arg(10)->Arg(100);
BENCHMARK_TEMPLATE(BM_JournalAppendBatch, SqliteBackend)->Arg(10)->Arg(100);
BENCHMARK_TEMPLATE(BM_JournalReadLongOperation, MemoryBackend)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_JournalReadLongOperation, SqliteBackend)->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_JournalQueryLongOperationByStatefulSetAndTime, MemoryBackend)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_JournalQueryLongOperationByStatefulSetAndTime, SqliteBackend)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stsresize
