#pragma once
// Sample operations and journals for tests of the engine's pure parts.
#include <string>
#include <vector>

#include "engine/fold.h"
#include "engine/operation.h"

namespace stsresize::testing {

inline ClaimPlan sample_claim(const std::string& tmpl, int ordinal) {
  ClaimPlan claim;
  claim.template_name = tmpl;
  claim.ordinal = ordinal;
  claim.claim = tmpl + "-web-" + std::to_string(ordinal);
  claim.from_size = *Quantity::parse("1Gi");
  claim.to_size = *Quantity::parse("2Gi");
  claim.from_class = "standard";
  claim.to_class = "standard";
  claim.source_uid = "uid-" + claim.claim;
  claim.labels = {{"app", "web"}};
  claim.access_modes = {"ReadWriteOnce"};
  return claim;
}

// Whether `phase` is one of the drain's own (not shared with the resize): a sample operation in it
// is a drain.
// `op` on the rebind path, each planned claim's volume and copy recorded kept (Retain), their
// own policy Delete: a deleted source can still be put back on its volume.
inline void on_rebind_path(Operation& op) {
  op.path = Path::Rebind;
  for (ClaimPlan& claim : op.claims) {
    claim.source_volume = "pv-" + claim.claim;
    claim.source_policy = "Delete";
    claim.copy_volume = "pv-copy-" + claim.claim;
    claim.copy_policy = "Delete";
  }
}

inline bool drain_phase(Phase phase) {
  return phase == Phase::Draining || phase == Phase::DeletingClaims ||
         phase == Phase::StoppingDrain;
}

// A drain of shop/web in `phase` after a scale-down from 3 to 2: ordinal 2 and its claim
// data-web-2, its cleanup pod running (Draining), Succeeded (DeletingClaims).
inline Operation sample_drain(Phase phase) {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid-web";
  op.kind = OperationKind::Drain;
  op.phase = phase;
  op.original_replicas = 2;
  OrdinalDrain drain;
  drain.ordinal = 2;
  drain.claims.push_back({"data-web-2", "uid-data-web-2", false});
  drain.pod_uid = phase == Phase::Pending ? "" : "uid-web-2";
  drain.succeeded = phase == Phase::DeletingClaims;
  op.drains.push_back(drain);
  return op;
}

// Whether `phase` is one of the lost-volume recovery's own: a sample operation in it is a
// recovery.
inline bool recovery_phase(Phase phase) {
  return phase == Phase::AwaitingNode || phase == Phase::ReplacingVolume ||
         phase == Phase::Reseeding || phase == Phase::MarkingReplica;
}

// A recovery of shop/web's ordinal 1 in `phase`, its node sim-1 deleted: waiting out the grace
// (AwaitingNode), its claim data-web-1 kept and deleted (ReplacingVolume), the StatefulSet paused
// and the re-seed pod running (Reseeding), the new claim marked (MarkingReplica).
inline Operation sample_recovery(Phase phase) {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid-web";
  op.kind = OperationKind::Recovery;
  op.phase = phase;
  op.original_replicas = 3;
  LostReplica lost;
  lost.ordinal = 1;
  lost.node = "sim-1";
  lost.gone = "deleted";
  lost.pod_uid = "uid-web-1";
  lost.grace = std::chrono::minutes{5};
  LostClaim claim;
  claim.claim = "data-web-1";
  claim.uid = "uid-data-web-1";
  claim.volume = "pv-data-web-1";
  if (phase != Phase::AwaitingNode) {
    claim.policy = "Delete";
    claim.deleted = true;
    lost.pod_deleted = true;
  }
  if (phase == Phase::MarkingReplica) claim.new_uid = "uid-new-data-web-1";
  if (phase == Phase::Reseeding) {
    lost.reseed = true;
    lost.reseed_pod_uid = "uid-web-1-stsresize-reseed";
  }
  lost.claims.push_back(claim);
  op.lost = lost;
  return op;
}

inline TreeSummary sample_summary(int seed) {
  return TreeSummary{3 + seed, 1000 + seed, std::string(64, static_cast<char>('a' + seed % 6))};
}

// Builds a journal one event at a time, like the reconciler does.
class JournalBuilder {
 public:
  explicit JournalBuilder(std::string id = "web-0123abcd") {
    op_.id = std::move(id);
    op_.ns = "shop";
    op_.statefulset = "web";
  }
  JournalBuilder& add(const Entry& event) {
    time_ += std::chrono::seconds{1};
    records_.push_back(
        make_record(op_, static_cast<std::int64_t>(records_.size()) + 1, time_, event));
    return *this;
  }
  JournalBuilder& to(Phase from, Phase to, Trigger event = Trigger::StepDone) {
    return add(entries::PhaseChanged{from, to, event});
  }
  std::vector<JournalRecord>& records() { return records_; }
  TimePoint time() const { return time_; }

 private:
  Operation op_;
  TimePoint time_{std::chrono::seconds{1'800'000'000}};
  std::vector<JournalRecord> records_;
};

// The first records of a copy-path journal of `plan`: started, planned, scaled down, in
// BackingUp.
inline void start_copy_path(JournalBuilder& b, const std::vector<ClaimPlan>& plan) {
  b.add(entries::OperationStarted{"template grew", "sts-uid", 3});
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  b.add(entries::Planned{Path::Copy, plan, {}});
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);
  b.add(
      entries::ActionIntended{Phase::ScalingDown, "update", "StatefulSet shop/web", "replicas 0"});
  b.to(Phase::ScalingDown, Phase::BackingUp);
}

// A complete, uninterrupted copy-path journal with `claims` claims.
inline std::vector<JournalRecord> copy_path_journal(int claims) {
  JournalBuilder b;
  std::vector<ClaimPlan> plan;
  for (int i = 0; i < claims; ++i) plan.push_back(sample_claim(i % 2 ? "logs" : "data", i / 2));
  start_copy_path(b, plan);
  for (const ClaimPlan& c : plan) {
    b.add(entries::ActionIntended{Phase::BackingUp, "create", "PVC " + c.claim, ""});
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

}  // namespace stsresize::testing
