#pragma once
// Journals for the replay tests (tests/unit/replay_test.cc, replay_command_test.cc), written
// through the real event codec.
#include <string>
#include <vector>

#include "engine/fold.h"
#include "tests/support/operation_samples.h"

namespace stsresize::testing {

// 1.2 GiB in 1,204 files, as the DETAILS column abbreviates it.
inline TreeSummary realistic_summary() {
  return TreeSummary{1204, 1'288'490'189, "3f2a1b2c" + std::string(56, '0')};
}

// A complete copy-path operation on one claim, data-<sts>-0; 16 records, record n stamped
// 1,800,000,000 s + n s (2027-01-15T08:00:0nZ) plus `offset`.
inline std::vector<JournalRecord> one_claim_copy(const std::string& id = "web-0123abcd",
                                                 const std::string& statefulset = "web",
                                                 std::chrono::seconds offset = {}) {
  JournalBuilder b{id};
  ClaimPlan claim = sample_claim("data", 0);
  claim.claim = "data-" + statefulset + "-0";
  b.add(entries::OperationStarted{"template grew", "sts-uid", 3});  // 1
  b.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);    // 2
  b.add(entries::Planned{Path::Copy, {claim}, {}});                 // 3
  b.to(Phase::Planning, Phase::ScalingDown, Trigger::PlannedCopy);  // 4
  b.to(Phase::ScalingDown, Phase::BackingUp);                       // 5
  b.add(entries::ActionIntended{Phase::BackingUp, "create",         // 6
                                "Job shop/" + claim.claim + "-stsresize-backup", ""});
  b.add(entries::BackupVerified{claim.claim, realistic_summary()});   // 7
  b.to(Phase::BackingUp, Phase::Recreating);                          // 8
  b.add(entries::SourceDeleted{claim.claim});                         // 9
  b.add(entries::ClaimRecreated{claim.claim, "uid-new"});             // 10
  b.to(Phase::Recreating, Phase::Restoring);                          // 11
  b.add(entries::RestoreVerified{claim.claim, realistic_summary()});  // 12
  b.to(Phase::Restoring, Phase::ScalingUp);                           // 13
  b.to(Phase::ScalingUp, Phase::CleaningUp);                          // 14
  b.to(Phase::CleaningUp, Phase::Completed);                          // 15
  b.add(entries::OperationFinished{Phase::Completed});                // 16
  std::vector<JournalRecord> records = std::move(b.records());
  for (JournalRecord& record : records) {
    record.statefulset = statefulset;
    record.time += offset;
  }
  return records;
}

}  // namespace stsresize::testing
