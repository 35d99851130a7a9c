// Engine benchmarks (not tests): fold/replay rate and state annotation encode/decode.
#include <benchmark/benchmark.h>

#include "engine/annotations.h"
#include "engine/replay.h"
#include "states/machine.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

// A 1,000-event copy-path operation: the long tail is progress and intent events.
std::vector<JournalRecord> thousand_event_journal() {
  std::vector<JournalRecord> records = testing::copy_path_journal(12);
  // Stretch the BackingUp phase with ActionIntended events until there are 1,000 records.
  std::vector<JournalRecord> out;
  Operation op;
  op.id = records.front().operation_id;
  op.ns = records.front().ns;
  op.statefulset = records.front().statefulset;
  std::int64_t sequence = 0;
  for (const JournalRecord& record : records) {
    JournalRecord copy = record;
    copy.sequence = ++sequence;
    out.push_back(copy);
    if (record.type == "PhaseChanged" && record.data["to"] == "BackingUp") {
      while (out.size() < 1000 - (records.size() - 6)) {
        out.push_back(
            make_record(op, ++sequence, record.time,
                        events::ActionIntended{Phase::BackingUp, "create", "Job shop/x", "poll"}));
      }
    }
  }
  return out;
}

void BM_Fold1000Events(benchmark::State& state) {
  const auto records = thousand_event_journal();
  for (auto _ : state) {
    auto op = fold(records, PhaseMachine::rules());
    if (!op) state.SkipWithError(op.error().message.c_str());
    benchmark::DoNotOptimize(op);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records.size()));
  state.counters["events"] = static_cast<double>(records.size());
}
BENCHMARK(BM_Fold1000Events);

void BM_Replay1000Events(benchmark::State& state) {
  const auto records = thousand_event_journal();
  for (auto _ : state) {
    auto timeline = replay_operation(records, PhaseMachine::rules());
    benchmark::DoNotOptimize(timeline);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records.size()));
}
BENCHMARK(BM_Replay1000Events);

Operation twelve_claim_operation() {
  auto op = fold(testing::copy_path_journal(12), PhaseMachine::rules());
  op->phase = Phase::Restoring;  // a state that is still annotated
  return *op;
}

void BM_EncodeStateAnnotation12Claims(benchmark::State& state) {
  const Operation op = twelve_claim_operation();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = encode_state_annotation(op);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeStateAnnotation12Claims);

void BM_DecodeStateAnnotation12Claims(benchmark::State& state) {
  const std::string text = encode_state_annotation(twelve_claim_operation());
  for (auto _ : state) {
    auto op = decode_state_annotation(text);
    if (!op) state.SkipWithError(op.error().c_str());
    benchmark::DoNotOptimize(op);
  }
}
BENCHMARK(BM_DecodeStateAnnotation12Claims);

}  // namespace
}  // namespace stsresize
