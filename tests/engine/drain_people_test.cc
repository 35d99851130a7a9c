// What people do to a StatefulSet while a drain runs — remove or edit its state annotation, lose
// the journal too — and what the drain owes them: one cleanup pod per ordinal, no claim deleted
// before its cleanup pod Succeeded, and an operation that ends as it would have.
#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "engine/operation_codec.h"
#include "tests/support/drain_world.h"

namespace stsresize {
namespace {

using namespace testing;

class DrainPeople : public ::testing::Test {
 protected:
  DrainWorld w;

  // A drain of ordinal 2 under way: its cleanup pod web-2 runs (and keeps running).
  void drain_running(Reconciler& reconciler) {
    w.cleanup_exit = std::nullopt;
    w.scale_to(2);
    w.until_cleanup_runs(reconciler, "web-2");
    ASSERT_EQ(w.phase(), "Draining");
  }
  void remove_state() {
    w.world.kube.mutate_raw(w.world.sts(), [](Json& live) {
      live["metadata"]["annotations"].erase(std::string{kStateAnnotation});
      live["metadata"]["annotations"].erase(std::string{kPhaseAnnotation});
    });
  }
  // Edits the phase inside the state annotation, as someone with `kubectl edit` would.
  void edit_phase(Phase phase) {
    w.world.kube.mutate_raw(w.world.sts(), [&](Json& live) {
      Json& annotations = live["metadata"]["annotations"];
      Json state = Json::parse(annotations[std::string{kStateAnnotation}].get<std::string>());
      state["phase"] = to_string(phase);
      annotations[std::string{kStateAnnotation}] = state.dump();
      annotations[std::string{kPhaseAnnotation}] = to_string(phase);
    });
  }
  // Reconciles a few times while the cleanup still runs: nothing may be deleted meanwhile.
  void reconcile_while_running(Reconciler& reconciler) {
    for (int i = 0; i < 5; ++i) {
      (void)reconciler.reconcile(kNs, kSts);
      w.world.settle(1);
      ASSERT_TRUE(w.claim_exists("data-web-2"));
      ASSERT_TRUE(w.claim_exists("logs-web-2"));
    }
  }
  // Ordinal 2 drained by one cleanup pod that Succeeded, then its claims deleted; ordinals 0
  // and 1 untouched; the drain Completed.
  void expect_drained_once() {
    EXPECT_EQ(w.cleanup_pod_uids()["web-2"].size(), 1u) << "web-2 created more than once";
    EXPECT_EQ(w.moved["web-2"], w.world.original_files["data-web-2"]);
    EXPECT_FALSE(w.claim_exists("data-web-2"));
    EXPECT_FALSE(w.claim_exists("logs-web-2"));
    for (const char* name : {"data-web-0", "logs-web-0", "data-web-1", "logs-web-1"}) {
      EXPECT_EQ(w.world.cluster.volume_files(w.world.claim(name)), w.world.original_files[name])
          << name;
    }
    EXPECT_EQ(w.phase(), "");
    EXPECT_NE(w.annotation(kLastOperationAnnotation).find("\"outcome\":\"Completed\""),
              std::string::npos)
        << w.annotation(kLastOperationAnnotation);
  }
};

// The journal knows the drain: it is continued (adopted) with its cleanup pod, not planned anew.
TEST_F(DrainPeople, TheStateRemovedWhileTheCleanupRunsIsContinuedFromTheJournal) {
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  drain_running(reconciler);
  const std::string id = read_operation(w.world.live_sts()).value()->id;
  remove_state();
  reconcile_while_running(reconciler);
  EXPECT_EQ(w.phase(), "Draining");
  EXPECT_EQ(read_operation(w.world.live_sts()).value()->id, id) << "not the same operation";
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  expect_drained_once();
  auto operations = w.journal.operations();
  ASSERT_TRUE(operations);
  EXPECT_EQ(operations->size(), 1u);
  w.expect_journal_consistent();
}

// Journal lost too: nothing says a drain was under way but the cleanup pod itself (its owner
// annotation). A new drain takes it over: still one cleanup pod, the claims kept until it
// Succeeded.
TEST_F(DrainPeople, TheStateAndTheJournalLostWhileTheCleanupRunsTakeOverItsPod) {
  {
    Reconciler first{w.world.kube, w.journal, w.world.clock, w.world.events};
    drain_running(first);
  }
  remove_state();
  MemoryJournal fresh;
  Reconciler reconciler{w.world.kube, fresh, w.world.clock, w.world.events};
  reconcile_while_running(reconciler);
  EXPECT_EQ(w.phase(), "Draining");
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  expect_drained_once();
}

// Completed written over a running drain: the journal knows better.
TEST_F(DrainPeople, AStateEditedToCompletedIsRestoredFromTheJournal) {
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  drain_running(reconciler);
  edit_phase(Phase::Completed);
  reconcile_while_running(reconciler);
  EXPECT_EQ(w.phase(), "Draining");
  const auto restored = w.world.events.with_reason("StateRestored");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_NE(restored[0].message.find("continuing from the journal at Draining"), std::string::npos)
      << restored[0].message;
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  expect_drained_once();
  w.expect_journal_consistent();
}

// DeletingClaims written while the cleanup runs would delete the claims it still reads: the
// journal puts the drain back in Draining, and the claims go only after it Succeeded.
TEST_F(DrainPeople, AStateEditedToDeletingClaimsWhileTheCleanupRunsIsRestoredFromTheJournal) {
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  drain_running(reconciler);
  edit_phase(Phase::DeletingClaims);
  reconcile_while_running(reconciler);
  EXPECT_EQ(w.phase(), "Draining");
  EXPECT_EQ(w.world.events.with_reason("StateRestored").size(), 1u);
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  expect_drained_once();
  w.expect_journal_consistent();
}

// The same edit with the journal lost: nothing can say where the drain stands, so nothing is
// done — every claim kept, the cleanup pod left to a person, a Warning saying why.
TEST_F(DrainPeople, AStateEditedToDeletingClaimsWithTheJournalLostChangesNothing) {
  {
    Reconciler first{w.world.kube, w.journal, w.world.clock, w.world.events};
    drain_running(first);
  }
  edit_phase(Phase::DeletingClaims);
  MemoryJournal fresh;
  Reconciler reconciler{w.world.kube, fresh, w.world.clock, w.world.events};
  w.cleanup_exit = 0;  // even once the cleanup Succeeded: the state was not written by stsresize
  const ReconcileResult result = w.run_to_rest(reconciler);
  EXPECT_TRUE(result.is(ReconcileResult::Kind::Terminal)) << result.message;
  EXPECT_TRUE(w.claim_exists("data-web-2"));
  EXPECT_TRUE(w.claim_exists("logs-web-2"));
  const auto mismatch = w.world.events.with_reason("JournalMismatch");
  ASSERT_FALSE(mismatch.empty());
  EXPECT_NE(mismatch[0].message.find("neither drained nor cancelled"), std::string::npos)
      << mismatch[0].message;
}

}  // namespace
}  // namespace stsresize
