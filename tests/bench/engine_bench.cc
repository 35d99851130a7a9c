// The engine's pure work per reconcile and per `stsresize replay`: folding an operation's
// journal, building its timeline, and the state annotation's encode and decode.
// items_per_second is events per second for Fold and Replay, annotations per second otherwise.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine/annotations.h"
#include "engine/fold.h"
#include "engine/replay.h"
#include "states/machine.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

using testing::JournalBuilder;
using testing::sample_claim;
using testing::sample_summary;

constexpr int kClaims = 12;
constexpr std::size_t kLongOperation = 1000;

std::vector<ClaimPlan> twelve_claims() {
  std::vector<ClaimPlan> plan;
  for (int i = 0; i < kClaims; ++i) plan.push_back(sample_claim(i % 2 ? "logs" : "data", i / 2));
  return plan;
}

// A copy-path operation on 12 claims whose backups were retried often enough (a transient
// failure and a new intent each time) for the whole stream to be exactly 1,000 events.
std::vector<JournalRecord> long_operation() {
  const std::vector<ClaimPlan> plan = twelve_claims();
  // Events outside the retry loop: 6 before it, 2 per claim backing up, then 1 + 2 per claim
  // recreating, 1 + 1 per claim restoring, 4 to finish.
  const std::size_t fixed = 6 + 2 * plan.size() + 1 + 2 * plan.size() + 1 + plan.size() + 4;
  const std::size_t retries = (kLongOperation - fixed) / 2;
  JournalBuilder b;
  start_copy_path(b, plan);
  for (std::size_t i = 0; i < retries; ++i) {
    b.add(entries::ActionIntended{Phase::BackingUp, "create",
                                  "Job shop/data-web-0-stsresize-backup",
                                  "attempt " + std::to_string(i + 1)});
    b.add(entries::StepFailed{Phase::BackingUp, "copy Job still running", false});
  }
  if ((kLongOperation - fixed) % 2 == 1) {
    b.add(entries::StepFailed{Phase::BackingUp, "copy Job still running", false});
  }
  for (const ClaimPlan& c : plan) {
    b.add(entries::ActionIntended{Phase::BackingUp, "create", "Job shop/" + c.claim, "backup"});
    b.add(entries::BackupVerified{c.claim, sample_summary(c.ordinal)});
  }
  b.to(Phase::BackingUp, Phase::Recreating);
  for (const ClaimPlan& c : plan) {
    b.add(entries::SourceDeleted{c.claim});
    b.add(entries::ClaimRecreated{c.claim, "new-" + c.claim});
  }
  b.to(Phase::Recreating, Phase::Restoring);
  for (const ClaimPlan& c : plan)
    b.add(entries::RestoreVerified{c.claim, sample_summary(c.ordinal)});
  b.to(Phase::Restoring, Phase::ScalingUp);
  b.to(Phase::ScalingUp, Phase::CleaningUp);
  b.to(Phase::CleaningUp, Phase::Completed);
  b.add(entries::OperationFinished{Phase::Completed});
  return std::move(b.records());
}

void BM_FoldOperationOf1000Events(benchmark::State& state) {
  const std::vector<JournalRecord> records = long_operation();
  if (records.size() != kLongOperation) state.SkipWithError("journal is not 1,000 events long");
  for (auto _ : state) {
    auto folded = fold(records, PhaseMachine::rules());
    if (!folded) state.SkipWithError(folded.error().message.c_str());
    benchmark::DoNotOptimize(folded);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records.size()));
}

void BM_ReplayTimelineOf1000Events(benchmark::State& state) {
  const std::vector<JournalRecord> records = long_operation();
  if (records.size() != kLongOperation) state.SkipWithError("journal is not 1,000 events long");
  for (auto _ : state) {
    Replay timeline = replay(records, PhaseMachine::rules());
    if (!timeline.consistent()) state.SkipWithError(timeline.inconsistency->reason.c_str());
    benchmark::DoNotOptimize(timeline);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records.size()));
}

// The operation mid-way, when its annotation is largest: every claim backed up and recreated.
Operation operation_of_12_claims() {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "sts-uid";
  op.phase = Phase::Restoring;
  op.path = Path::Copy;
  op.original_replicas = 6;
  op.claims = twelve_claims();
  for (ClaimPlan& claim : op.claims) {
    claim.backup_verified = sample_summary(claim.ordinal);
    claim.source_deleted = true;
    claim.recreated_uid = "new-" + claim.claim;
  }
  op.last_sequence = 61;
  return op;
}

void BM_AnnotationEncode12Claims(benchmark::State& state) {
  const Operation op = operation_of_12_claims();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = encode_state_annotation(op);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["annotation_bytes"] = static_cast<double>(bytes);
}

void BM_AnnotationDecode12Claims(benchmark::State& state) {
  const Operation op = operation_of_12_claims();
  const std::string text = encode_state_annotation(op);
  for (auto _ : state) {
    auto decoded = decode_state_annotation(text);
    if (!decoded || !same_state(*decoded, op)) state.SkipWithError("round trip changed the state");
    benchmark::DoNotOptimize(decoded);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["annotation_bytes"] = static_cast<double>(text.size());
}

BENCHMARK(BM_FoldOperationOf1000Events)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReplayTimelineOf1000Events)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnnotationEncode12Claims)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnnotationDecode12Claims)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stsresize
