// A crash between journaling an operation's start and writing its first annotation (found by
// tests/cluster/e2e/crash_at_each_boundary.sh, failpoint after-journal:1 at Pending ->
// UpdatingTemplate): the journal holds a stream that nothing in the cluster knows of. The next
// process must carry on with that operation, not start a second one beside it, which would
// leave an operation forever "in progress" in the journal (or, started within the same
// millisecond, collide with it and retry for ever).
// The same gap opens when the first annotation write merely fails: each retry used to journal
// yet another operation.
// crash_resume_test.cc counts crashes from the first Kubernetes write; this is the one before.
#include <gtest/gtest.h>

#include "engine/fold.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

// The first StatefulSet write fails as if the process had died before sending it.
void crash_before_first_annotation(ResizeWorld& world, Journal& journal) {
  world.kube.inject({.verb = Verb::Update,
                     .kind = Kind::StatefulSet,
                     .error = KubeError{KubeErrorCode::Unreachable, "injected crash", {}}});
  Reconciler dying{world.kube, journal, world.clock, world.events};
  const ReconcileResult result = dying.reconcile(kNs, kSts);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Retry)) << result.message;
  ASSERT_FALSE(world.live_sts()["metadata"]["annotations"].contains(std::string{kStateAnnotation}));
  auto operations = journal.operations();
  ASSERT_TRUE(operations && operations->size() == 1u) << "the start was not journaled";
  world.kube.clear_faults();
}

// Reconciles with a new Reconciler (the restarted process) until Idle.
void restart_and_finish(ResizeWorld& world, Journal& journal) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  reconcile_until(reconciler, world, idle(),
                  {.limit = 600, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
}

void expect_one_completed_operation(Journal& journal) {
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  ASSERT_EQ(operations->size(), 1u) << "a second operation was started beside the journaled one";
  auto records = journal.read(operations->front().operation_id);
  ASSERT_TRUE(records);
  auto folded = fold(*records, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
  EXPECT_EQ(records->front().type, "OperationStarted");
}

class CrashBeforeFirstAnnotation : public ::testing::TestWithParam<ResizeTrigger> {};

TEST_P(CrashBeforeFirstAnnotation, TheRestartCarriesOnWithTheJournaledOperation) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi", GetParam());
  MemoryJournal journal;
  crash_before_first_annotation(world, journal);
  world.clock.advance(std::chrono::seconds{1});  // the restart takes a while

  restart_and_finish(world, journal);

  expect_one_completed_operation(journal);
  EXPECT_FALSE(world.live_sts()["metadata"]["annotations"].contains(std::string{kPhaseAnnotation}));
}

TEST_P(CrashBeforeFirstAnnotation, ARestartWithinTheSameMillisecondDoesNotCollide) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi", GetParam());
  MemoryJournal journal;
  crash_before_first_annotation(world, journal);

  restart_and_finish(world, journal);

  expect_one_completed_operation(journal);
}

TEST_P(CrashBeforeFirstAnnotation, AStartForAnotherRequestIsNotTakenOver) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi", GetParam());
  MemoryJournal journal;
  crash_before_first_annotation(world, journal);
  // While the controller was down, the user asked for something else: the journaled start is
  // not this operation's, and stays as it was.
  if (GetParam() == ResizeTrigger::Request) {
    world.request(Json{{"data", {{"storage", "3Gi"}}}, {"logs", {{"storage", "3Gi"}}}}.dump());
  } else {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
        tmpl["spec"]["resources"]["requests"]["storage"] = "3Gi";
      }
    });
  }
  world.clock.advance(std::chrono::seconds{1});
  const std::string abandoned = journal.operations()->front().operation_id;
  const auto abandoned_records = journal.read(abandoned)->size();

  restart_and_finish(world, journal);

  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  ASSERT_EQ(operations->size(), 2u);
  EXPECT_EQ(journal.read(abandoned)->size(), abandoned_records);
  auto records = journal.read(operations->back().operation_id);
  ASSERT_TRUE(records);
  auto folded = fold(*records, PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

// The same gap without a crash: the first annotation write fails and the same process retries.
TEST_P(CrashBeforeFirstAnnotation, RetriesOfAFailedFirstAnnotationWriteMakeOneOperation) {
  ResizeWorld world;
  world.seed(/*expandable=*/false, "2Gi", GetParam());
  MemoryJournal journal;
  world.kube.inject({.verb = Verb::Update,
                     .kind = Kind::StatefulSet,
                     .times = 3,
                     .error = KubeError{KubeErrorCode::ServerError, "etcd timeout", {}}});
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSERT_TRUE(reconciler.reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
    world.clock.advance(std::chrono::seconds{1});
  }

  restart_and_finish(world, journal);

  expect_one_completed_operation(journal);
}

INSTANTIATE_TEST_SUITE_P(Triggers, CrashBeforeFirstAnnotation,
                         ::testing::Values(ResizeTrigger::Template, ResizeTrigger::Request),
                         [](const auto& info) {
                           return info.param == ResizeTrigger::Template ? "Template" : "Request";
                         });

}  // namespace
}  // namespace stsresize
