#include "states/reconciler.h"

#include <gtest/gtest.h>

#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class ReconcilerTest : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  ReconcileResult reconcile() {
    Reconciler engine{world.kube, journal, world.clock, world.events};
    return engine.reconcile(kNs, kSts);
  }
};

TEST_F(ReconcilerTest, MalformedStateAnnotationIsReportedAndNothingIsDone) {
  world.seed(false);
  world.kube.mutate_raw(world.sts(), [](Json& s) {
    s["metadata"]["annotations"]["stsresize.dev/state"] = R"({"v":7})";
  });
  const ReconcileResult result = reconcile();
  EXPECT_TRUE(result.is(ReconcileResult::Kind::Terminal));
  EXPECT_NE(result.message.find("unsupported format version 7"), std::string::npos);
  EXPECT_TRUE(world.events.contains("InvalidState"));
  EXPECT_EQ(world.kube.mutations(), 0);
  auto operations = journal.operations();
  EXPECT_TRUE(operations && operations->empty());
}

TEST_F(ReconcilerTest, ShrinkIsRefusedWithAClearMessageAndNoAction) {
  world.seed(false, "512Mi");
  const ReconcileResult result = reconcile();
  EXPECT_TRUE(result.is(ReconcileResult::Kind::Terminal));
  EXPECT_NE(result.message.find("shrinking is not supported yet"), std::string::npos);
  EXPECT_TRUE(world.events.contains("InvalidResize"));
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(ReconcilerTest, NothingToResizeIsIdle) {
  world.seed(false, "1Gi");
  EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Idle));
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(ReconcilerTest, AStatefulSetMarkedFailedIsNeverResizedAgainAutomatically) {
  world.seed(false);
  world.kube.mutate_raw(world.sts(),
                        [](Json& s) { s["metadata"]["labels"]["stsresize.dev/failed"] = "true"; });
  EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Idle));
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(ReconcilerTest, OneReconcileAdvancesSeveralStepsAndJournalsBeforeActing) {
  world.seed(false);
  const ReconcileResult result = reconcile();
  EXPECT_TRUE(result.is(ReconcileResult::Kind::RequeueAfter)) << result.message;
  auto op = read_operation(world.live_sts());
  ASSERT_TRUE(op && op->has_value());
  EXPECT_EQ((*op)->phase, Phase::ScalingDown);
  EXPECT_EQ(world.live_sts()["spec"]["replicas"], 0);
  // The replicas update was intended in the journal before it happened.
  auto records = journal.read((*op)->id);
  ASSERT_TRUE(records);
  bool intended = false;
  for (const JournalRecord& record : *records) {
    intended =
        intended || (record.type == "ActionIntended" && record.data["detail"] == "replicas 3 -> 0");
  }
  EXPECT_TRUE(intended);
}

}  // namespace
}  // namespace stsresize
