#include "states/reconciler.h"

#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class ReconcilerTest : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  ReconcileResult reconcile() {
    Reconciler reconciler{world.kube, journal, world.clock, world.events};
    return reconciler.reconcile(kNs, kSts);
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

TEST_F(ReconcilerTest, AShrinkBeginsByMeasuringWithTheApplicationRunning) {
  world.seed(false, "512Mi");
  const ReconcileResult result = reconcile();
  EXPECT_FALSE(result.is(ReconcileResult::Kind::Terminal)) << result.message;
  auto op = read_operation(world.live_sts());
  ASSERT_TRUE(op && op->has_value());
  EXPECT_EQ((*op)->phase, Phase::Measuring);
  EXPECT_EQ(*k8s::spec_replicas(world.live_sts()), kReplicas);
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
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["metadata"]["annotations"][std::string{kPreCopyAnnotation}] = "false";  // to ScalingDown
  });
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

// Every journaled phase change, the start's included, has an Event on the StatefulSet naming it:
// an operator watching `kubectl describe` sees each step, in order.
TEST_F(ReconcilerTest, EveryJournaledPhaseChangeHasAnEventOnTheStatefulSet) {
  for (const bool expandable : {false, true}) {
    SCOPED_TRACE(expandable ? "expansion" : "copy");
    ResizeWorld fresh;
    MemoryJournal fresh_journal;
    fresh.seed(expandable);
    Reconciler reconciler{fresh.kube, fresh_journal, fresh.clock, fresh.events};
    ASSERT_TRUE(reconcile_until(reconciler, fresh, idle(),
                                {.limit = 600,
                                 .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}},
                                 .terminal_fails = false})
                    .is(ReconcileResult::Kind::Idle));
    auto operations = fresh_journal.operations();
    ASSERT_TRUE(operations && operations->size() == 1u);
    auto records = fresh_journal.read(operations->front().operation_id);
    ASSERT_TRUE(records);
    std::vector<std::string> messages;
    for (const RecordedEvent& event : fresh.events.events()) {
      if (event.about == fresh.sts()) messages.push_back(event.message);
    }
    int changes = 0;
    for (const JournalRecord& record : *records) {
      if (record.type != "PhaseChanged") continue;
      ++changes;
      const std::string transition =
          record.data["from"].get<std::string>() + " -> " + record.data["to"].get<std::string>();
      EXPECT_TRUE(std::ranges::any_of(messages,
                                      [&](const std::string& message) {
                                        return message.find(transition) != std::string::npos;
                                      }))
          << "no event for " << transition;
    }
    EXPECT_GE(changes, expandable ? 3 : 6);
  }
}

// The StatefulSet controller writes the status with every pod that starts or stops, so the
// annotation write that makes a transition authoritative meets Conflict, sometimes several times
// in a row. It writes again on the fresh object: each transition is journaled once, with no
// Resumed (which a write that gave up would leave: the step run again from the annotation).
TEST_F(ReconcilerTest, ATransitionSurvivesConflictsOnItsAnnotationWriteAndIsJournaledOnce) {
  world.seed(false);
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  ASSERT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::RequeueAfter));
  // The next StatefulSet writes are the annotation's (ScalingDown waits on the pods to go): each
  // of the four next is overtaken by a status write.
  world.kube.inject({.verb = Verb::Update, .kind = Kind::StatefulSet, .times = 4, .action = [&] {
                       world.kube.mutate_raw(world.sts(), [](Json& live) {
                         live["status"]["observedGeneration"] =
                             live["status"].value("observedGeneration", 0) + 1;
                       });
                     }});
  reconcile_until(reconciler, world, idle(),
                  {.limit = 600, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
  auto operations = journal.operations();
  ASSERT_TRUE(operations && operations->size() == 1u);
  auto records = journal.read(operations->front().operation_id);
  ASSERT_TRUE(records);
  std::vector<std::string> transitions;
  for (const JournalRecord& record : *records) {
    EXPECT_NE(record.type, "Resumed") << record.data.dump();
    if (record.type != "PhaseChanged") continue;
    const std::string transition =
        record.data["from"].get<std::string>() + " -> " + record.data["to"].get<std::string>();
    EXPECT_EQ(std::ranges::count(transitions, transition), 0) << transition << " twice";
    transitions.push_back(transition);
  }
  EXPECT_EQ(transitions.back(), "CleaningUp -> Completed");
}

}  // namespace
}  // namespace stsresize
