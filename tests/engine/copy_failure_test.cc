// A copy Job that fails for good, on the simulated cluster: before any source is replaced the
// operation scales back onto the intact sources; after, it stops where it is, keeps every backup
// and its Warning says where the data is.
#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class CopyFailure : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events, two_copies()};

  Phase phase() {
    auto op = read_operation(world.live_sts());
    EXPECT_TRUE(op && op->has_value());
    return op && op->has_value() ? (*op)->phase : Phase::Pending;
  }
  // Reconciles (the cluster working in between) until the phase is `until` or terminal.
  void run_until(Phase until) {
    reconcile_until(
        reconciler, world,
        {"phase " + std::string{to_string(until)},
         [&](const ReconcileResult&) { return phase() == until || is_terminal(phase()); }},
        {.limit = 300});
  }
  std::string failure_warning() {
    std::string messages;
    for (const auto& event : world.events.with_reason("ResizeFailed")) {
      EXPECT_EQ(event.severity, EventSeverity::Warning);
      messages += event.message + "\n";
    }
    return messages;
  }
};

TEST_F(CopyFailure, RestoreJobFailingLeavesReplicasDownKeepsEveryBackupAndSaysWhereTheDataIs) {
  world.seed(/*expandable=*/false);
  run_until(Phase::Restoring);
  ASSERT_EQ(phase(), Phase::Restoring);
  world.cluster.fail_next_job_pods(1000);
  run_until(Phase::Failed);
  ASSERT_EQ(phase(), Phase::Failed);

  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 0);
  for (const std::string& name : world.claim_names()) {
    const ObjectRef backup = world.claim(naming::backup_claim(name));
    ASSERT_TRUE(world.kube.get_raw(backup)) << name;
    EXPECT_EQ(world.cluster.volume_files(backup), world.original_files.at(name)) << name;
  }
  const std::string warning = failure_warning();
  EXPECT_NE(warning.find("Restoring -> Failed: copy Job"), std::string::npos) << warning;
  EXPECT_NE(warning.find("nothing was scaled back"), std::string::npos) << warning;
  auto op = read_operation(world.live_sts());
  ASSERT_TRUE(op && op->has_value());
  EXPECT_NE(warning.find("kubectl -n shop get pvc -l stsresize.dev/operation=" +
                         naming::label_value((*op)->id) + ",stsresize.dev/purpose=backup"),
            std::string::npos)
      << warning;
}

TEST_F(CopyFailure, BackupJobFailingScalesBackAndPointsAtNoBackup) {
  world.seed(/*expandable=*/false);
  run_until(Phase::BackingUp);
  ASSERT_EQ(phase(), Phase::BackingUp);
  world.cluster.fail_next_job_pods(1000);
  run_until(Phase::Failed);
  ASSERT_EQ(phase(), Phase::Failed);

  EXPECT_EQ(world.live_sts()["spec"]["replicas"], kReplicas);
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    EXPECT_FALSE(world.kube.get_raw(world.claim(naming::backup_claim(name)))) << name;
  }
  const std::string warning = failure_warning();
  EXPECT_NE(warning.find("BackingUp -> ScalingBack: copy Job"), std::string::npos) << warning;
  EXPECT_NE(warning.find("scaled back to 3 replicas"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("backup claim"), std::string::npos) << warning;
}

}  // namespace
}  // namespace stsresize
