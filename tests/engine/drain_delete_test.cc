// The deletion of a StatefulSet that opts in to the drain, on the simulated cluster: the drain's
// finalizer (statefulsets.kubernetes.io/scaledown, the StatefulSet Scale-Down Controller's, taken
// over where it is) holds a delete that removes the replicas until every ordinal's claims are
// drained and no cleanup pod is left; an orphan delete (kubectl delete --cascade=orphan, a
// resize's re-create) drains nothing and is let through as soon as it is seen; a delete that
// cannot be told from one (no pod left, no finalizer of Kubernetes) is read as one.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "engine/quantity.h"
#include "engine/statefulset_deletion.h"
#include "engine/vocabulary.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/drain_world.h"

namespace stsresize {
namespace {

using namespace testing;

const char* const kClaims[] = {"data-web-0", "logs-web-0", "data-web-1",
                               "logs-web-1", "data-web-2", "logs-web-2"};

std::size_t finalizer_count(const Json& sts) {
  const Json& finalizers = sts["metadata"].value("finalizers", Json::array());
  return static_cast<std::size_t>(std::ranges::count(finalizers, Json(kScaledownFinalizer)));
}

// The world of tests/support/drain_world.h (its cleanup pods succeed unless told otherwise), with
// the old controller's finalizer already on the StatefulSet, or a copy-path resize wanted too.
struct DeleteWorld : DrainWorld {
  explicit DeleteWorld(bool old_finalizer = false, bool resize_request = false)
      : DrainWorld(resize_request
                       ? DrainWorldOptions{.to_size = "2Gi", .trigger = ResizeTrigger::Request}
                       : DrainWorldOptions{}) {
    if (old_finalizer) {
      world.kube.mutate_raw(world.sts(), [&](Json& live) {
        live["metadata"]["finalizers"] = Json::array({std::string{kScaledownFinalizer}});
      });
    }
  }

  void remove(Propagation propagation) {
    DeleteOptions options;
    options.propagation = propagation;
    ASSERT_TRUE(world.kube.remove(world.sts(), options));
  }

  bool exists(const ObjectRef& ref) const { return world.kube.get_raw(ref).has_value(); }

  // Every claim there with the data it was seeded with.
  void expect_claims_intact() const {
    for (const char* name : kClaims) {
      ASSERT_TRUE(claim_exists(name)) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name))
          << name;
    }
  }
  // Every claim drained (by a cleanup pod that succeeded) and deleted; no pod left.
  void expect_everything_drained() const {
    for (const char* name : kClaims) EXPECT_FALSE(claim_exists(name)) << name;
    EXPECT_EQ(cleaned, (std::set<std::string>{"web-0", "web-1", "web-2"}));
    EXPECT_TRUE(world.kube.list_raw(Kind::Pod, kNs).empty())
        << "left: " << world.kube.list_raw(Kind::Pod, kNs).front()["metadata"]["name"];
  }
};

// A controller that dies after its k-th mutation: reconciles with `journal` until then (or
// until idle), the cluster moving on meanwhile.
void crash_after_mutations(DeleteWorld& w, MemoryJournal& journal, int k) {
  const int start = w.world.kube.mutations();
  w.world.kube.set_mutation_budget(k);
  {
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    reconcile_until(reconciler, w.world,
                    {"a crash",
                     [&](const ReconcileResult& r) {
                       return w.world.kube.mutations() - start >= k ||
                              r.is(ReconcileResult::Kind::Idle);
                     }},
                    {.limit = 400,
                     .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}},
                     .terminal_fails = false});
  }
  w.world.kube.set_mutation_budget(std::nullopt);
}

std::size_t operation_count(MemoryJournal& journal) {
  auto operations = journal.operations();
  return operations ? operations->size() : 0;
}

TEST(DrainFinalizer, AnOptedInStatefulSetGetsTheFinalizerOnceAndLosesItWhenItOptsOut) {
  DeleteWorld w;
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  EXPECT_EQ(finalizer_count(w.world.live_sts()), 1u);
  EXPECT_TRUE(w.world.events.contains("FinalizerAdded"));
  EXPECT_EQ(operation_count(journal), 0u);

  w.world.kube.mutate_raw(w.world.sts(), [](Json& live) {
    live["metadata"]["annotations"].erase(std::string{kScaledownPodTemplateAnnotation});
  });
  w.run_to_idle(reconciler);
  EXPECT_EQ(finalizer_count(w.world.live_sts()), 0u);
  EXPECT_TRUE(w.world.events.contains("FinalizerRemoved"));
  w.expect_claims_intact();
}

TEST(DrainFinalizer, TheOldControllersFinalizerIsTakenOverNotDoubled) {
  DeleteWorld w{/*old_finalizer=*/true};
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  EXPECT_EQ(finalizer_count(w.world.live_sts()), 1u);
  EXPECT_FALSE(w.world.events.contains("FinalizerAdded"));
  w.remove(Propagation::Background);
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts()));
  w.expect_everything_drained();
  expect_journal_consistent(journal);
}

// kubectl delete sts web (Background): the garbage collector leaves the pods while the finalizer
// holds the set, so the drain deletes each replica's pod, runs its cleanup pod, deletes its
// claims; then the finalizer goes and the delete completes.
TEST(DrainDelete, ABackgroundDeleteWhileIdleDrainsEveryOrdinalAndCompletes) {
  DeleteWorld w;
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  w.remove(Propagation::Background);
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts()));
  w.expect_everything_drained();
  EXPECT_TRUE(w.world.events.contains("DrainCompleted"));
  EXPECT_TRUE(w.world.events.contains("DeletionDrained"));
  EXPECT_EQ(operation_count(journal), 1u);
  expect_journal_consistent(journal);
}

TEST(DrainDelete, AForegroundDeleteDrainsEveryOrdinalAndCompletes) {
  DeleteWorld w;
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  w.remove(Propagation::Foreground);
  ASSERT_TRUE(has_finalizer(w.world.live_sts(), kForegroundFinalizer));
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts()));
  w.expect_everything_drained();
  expect_journal_consistent(journal);
}

// Deleted while the drain of a scale-down runs: that drain ends, then every other ordinal is
// drained as well before the delete completes.
TEST(DrainDelete, ADeleteWhileADrainRunsExtendsItToEveryOrdinal) {
  DeleteWorld w;
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  w.cleanup_exit = std::nullopt;  // the cleanup of web-2 keeps running
  w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 2; });
  w.world.settle(3);
  reconcile_until(reconciler, w.world,
                  {"the cleanup pod running",
                   [&](const ReconcileResult&) {
                     auto pod = w.world.kube.get_raw({Kind::Pod, kNs, "web-2"});
                     return pod && (*pod)["status"].value("phase", "") == "Running";
                   }},
                  {.limit = 50});
  w.remove(Propagation::Background);
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts()));
  w.expect_everything_drained();
  EXPECT_EQ(operation_count(journal), 2u);
  expect_journal_consistent(journal);
}

// kubectl delete sts web --cascade=orphan: not a scale-down. The pods keep running with their
// claims and data; the finalizer is removed at the first reconcile, the delete completes.
TEST(DrainDelete, AnOrphanDeleteDrainsNothingAndIsLetThrough) {
  for (const bool collector_first : {false, true}) {
    SCOPED_TRACE(collector_first ? "the garbage collector orphaned the pods first"
                                 : "the orphan finalizer still there");
    DeleteWorld w;
    MemoryJournal journal;
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    w.run_to_idle(reconciler);
    w.remove(Propagation::Orphan);
    ASSERT_TRUE(has_finalizer(w.world.live_sts(), kOrphanFinalizer));
    if (collector_first) {
      w.world.cluster.tick();  // ownerReferences removed, then the orphan finalizer
      ASSERT_FALSE(has_finalizer(w.world.live_sts(), kOrphanFinalizer));
    }
    EXPECT_EQ(reconciler.reconcile(kNs, kSts).kind, ReconcileResult::Kind::Idle);
    if (auto live = w.world.kube.get_raw(w.world.sts())) {
      EXPECT_EQ(finalizer_count(*live), 0u);
    }
    w.run_to_idle(reconciler);
    EXPECT_FALSE(w.exists(w.world.sts()));
    EXPECT_TRUE(w.cleaned.empty());
    w.expect_claims_intact();
    for (const char* pod : {"web-0", "web-1", "web-2"}) {
      EXPECT_TRUE(w.exists({Kind::Pod, kNs, pod})) << pod << " (orphaned, still running)";
    }
    EXPECT_TRUE(w.world.events.contains("OrphanDeleteNotDrained"));
    EXPECT_EQ(operation_count(journal), 0u);
  }
}

// At 0 replicas no pod is left to show how the set was deleted, and the orphan finalizer (held
// only while there are dependents to orphan) is gone: the safe reading, nothing drained.
TEST(DrainDelete, ADeleteAtZeroReplicasThatCannotBeToldFromAnOrphanDeleteDrainsNothing) {
  for (const Propagation propagation : {Propagation::Orphan, Propagation::Background}) {
    DeleteWorld w;
    MemoryJournal journal;
    {
      Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
      w.run_to_idle(reconciler);  // the finalizer added
    }
    // Scaled to 0 while stsresize was away, then deleted.
    w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 0; });
    w.world.settle(6);
    ASSERT_TRUE(w.world.kube.list_raw(Kind::Pod, kNs).empty());
    w.remove(propagation);
    w.world.settle(2);
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    w.run_to_idle(reconciler);
    EXPECT_FALSE(w.exists(w.world.sts()));
    EXPECT_TRUE(w.cleaned.empty());
    w.expect_claims_intact();
    EXPECT_TRUE(w.world.events.contains("DeletionNotDrained"));
  }
}

// A scale-down drain runs when the set is orphan-deleted (kubectl delete --cascade=orphan, a
// GitOps tool re-creating it): the finalizer does not hold the delete for as long as the cleanup
// may run (here: for ever). The drain is cancelled as on a scale back up (its cleanup pod
// deleted, every claim kept with its data), the delete goes through, the replicas keep running.
// The StatefulSet applied again (2 replicas) drains ordinal 2 anew: its claims are deleted only
// after that new cleanup Succeeded.
TEST(DrainDelete, AnOrphanDeleteWhileADrainRunsIsNotHeldByTheCleanupAndDrainsNoReplica) {
  DeleteWorld w;
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  w.cleanup_exit = std::nullopt;  // the cleanup of web-2 never ends by itself
  w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 2; });
  w.world.settle(3);
  reconcile_until(reconciler, w.world,
                  {"the cleanup pod running",
                   [&](const ReconcileResult&) {
                     auto pod = w.world.kube.get_raw({Kind::Pod, kNs, "web-2"});
                     return pod && (*pod)["status"].value("phase", "") == "Running";
                   }},
                  {.limit = 50});
  Json applied = w.world.live_sts();  // what a GitOps tool applies again
  w.remove(Propagation::Orphan);
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts())) << "the orphan delete is held by the running cleanup";
  EXPECT_TRUE(w.cleaned.empty());
  w.expect_claims_intact();  // data-web-2 and logs-web-2 too: their cleanup never Succeeded
  EXPECT_FALSE(w.exists({Kind::Pod, kNs, "web-2"})) << "the cleanup pod is left";
  for (const char* pod : {"web-0", "web-1"}) EXPECT_TRUE(w.exists({Kind::Pod, kNs, pod})) << pod;
  EXPECT_TRUE(w.world.events.contains("DrainCancelled"));
  EXPECT_TRUE(w.world.events.contains("OrphanDeleteNotDrained"));
  EXPECT_EQ(operation_count(journal), 1u);

  // Applied again as it was, 2 replicas: ordinal 2 is drained by a new cleanup pod.
  Json& meta = applied["metadata"];
  for (const char* field : {"uid", "resourceVersion", "generation", "creationTimestamp",
                            "deletionTimestamp", "finalizers", "managedFields"}) {
    meta.erase(field);
  }
  for (const char* key : {"stsresize.dev/phase", "stsresize.dev/state"}) {
    meta["annotations"].erase(key);
  }
  applied.erase("status");
  ASSERT_TRUE(w.world.kube.system().create(Kind::StatefulSet, applied));
  w.world.settle(3);
  w.cleanup_exit = 0;
  w.run_to_idle(reconciler);
  EXPECT_EQ(w.cleaned, (std::set<std::string>{"web-2"}));
  for (const char* name : {"data-web-2", "logs-web-2"}) EXPECT_FALSE(w.claim_exists(name)) << name;
  for (const char* name : {"data-web-0", "logs-web-0", "data-web-1", "logs-web-1"}) {
    ASSERT_TRUE(w.claim_exists(name)) << name;
    EXPECT_EQ(w.world.cluster.volume_files(w.world.claim(name)), w.world.original_files.at(name));
  }
  EXPECT_FALSE(w.exists({Kind::Pod, kNs, "web-2"}));
  EXPECT_EQ(operation_count(journal), 2u);
  expect_journal_consistent(journal);
}

// stsresize's own resize re-creates the StatefulSet with an orphan delete: on an opted-in set
// (here with the old controller's finalizer already on it) the finalizer does not hold it, and
// nothing is drained.
TEST(DrainDelete, TheResizesOwnReCreateIsNotHeldAndDrainsNothing) {
  DeleteWorld w{/*old_finalizer=*/true, /*resize_request=*/true};
  MemoryJournal journal;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
  w.run_to_idle(reconciler);
  const Json sts = w.world.live_sts();
  auto templates = k8s::claim_templates(sts);
  ASSERT_TRUE(templates) << templates.error();
  for (const auto& tmpl : *templates) EXPECT_EQ(tmpl.storage, *Quantity::parse("2Gi"));
  EXPECT_EQ(w.world.ready_replicas(), kReplicas);
  EXPECT_TRUE(w.cleaned.empty());
  for (const std::string& name : w.world.claim_names()) {
    ASSERT_TRUE(w.claim_exists(name)) << name;
    EXPECT_EQ(w.world.cluster.volume_files(w.world.claim(name)), w.world.original_files.at(name));
  }
  EXPECT_EQ(finalizer_count(sts), 1u) << "the re-created set opts in: the finalizer is back";
  EXPECT_TRUE(w.world.events.contains("OrphanDeleteNotDrained"));
  expect_journal_consistent(journal);
}

// A drain that failed labels the set stsresize.dev/failed (not drained again automatically):
// deleting it then drains nothing, keeps every claim and lets the delete through.
TEST(DrainDelete, ADeleteOfASetLabelledFailedDrainsNothing) {
  DeleteWorld w;
  w.cleanup_exit = 1;
  MemoryJournal journal;
  EngineSettings settings;
  settings.drain_restart_limit = 2;
  Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events, settings};
  w.run_to_idle(reconciler);
  w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 2; });
  w.world.settle(3);
  w.run_to_idle(reconciler);
  ASSERT_EQ(w.world.live_sts()["metadata"]["labels"][std::string{kFailedLabel}], "true");
  w.cleanup_exit = 0;  // a cleanup would now succeed: none may run
  w.remove(Propagation::Background);
  w.run_to_idle(reconciler);
  EXPECT_FALSE(w.exists(w.world.sts()));
  EXPECT_TRUE(w.cleaned.empty());
  w.expect_claims_intact();
  EXPECT_TRUE(w.world.events.contains("DeletionNotDrained"));
}

// kill -9 after every mutating call of a drain on delete (the pod deletes, cleanup pods, claim
// deletes, annotation writes, the finalizer's removal), with the journal kept and lost: the
// next process finishes it; a claim is never gone before its ordinal's cleanup succeeded; in
// the end every claim is drained, no pod is left and the delete completed.
TEST(DrainDelete, ACrashAfterAnySideEffectConverges) {
  int total = 0;
  {
    DeleteWorld w;
    MemoryJournal journal;
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    w.run_to_idle(reconciler);
    w.remove(Propagation::Background);
    const int before = w.world.kube.mutations();
    w.run_to_idle(reconciler);
    total = w.world.kube.mutations() - before;
    ASSERT_FALSE(w.exists(w.world.sts()));
  }
  ASSERT_GT(total, 10);
  for (const bool keep_journal : {true, false}) {
    for (int k = 1; k < total; ++k) {
      SCOPED_TRACE("crash after mutation " + std::to_string(k) +
                   (keep_journal ? ", journal kept" : ", journal lost"));
      DeleteWorld w;
      MemoryJournal first_journal;
      {
        Reconciler reconciler{w.world.kube, first_journal, w.world.clock, w.world.events};
        w.run_to_idle(reconciler);
      }
      w.remove(Propagation::Background);
      crash_after_mutations(w, first_journal, k);
      for (int ordinal = 0; ordinal < 3; ++ordinal) {
        const std::string claim = "data-web-" + std::to_string(ordinal);
        if (!w.claim_exists(claim)) {
          EXPECT_TRUE(w.cleaned.contains("web-" + std::to_string(ordinal)))
              << claim << " deleted before its cleanup succeeded";
        }
      }
      MemoryJournal lost;
      MemoryJournal& second = keep_journal ? first_journal : lost;
      {
        Reconciler reconciler{w.world.kube, second, w.world.clock, w.world.events};
        w.run_to_idle(reconciler);
      }
      EXPECT_FALSE(w.exists(w.world.sts()));
      w.expect_everything_drained();
      if (keep_journal) expect_journal_consistent(first_journal);
    }
  }
}

// kill -9 after every mutating call from an orphan delete that comes while the cleanup of web-2
// runs (the cleanup pod's delete, the annotation writes, the finalizer's removal), with the
// journal kept and lost: the next process lets the delete through too; no claim is ever deleted
// (no cleanup Succeeded), the cleanup pod is gone and the replicas keep running.
TEST(DrainDelete, ACrashAfterAnySideEffectOfAnOrphanDeleteWhileADrainRunsConverges) {
  // The world with the cleanup of web-2 running (and never ending by itself), orphan-deleted.
  const auto orphan_deleted_while_draining = [](DeleteWorld& w, MemoryJournal& journal) {
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    w.run_to_idle(reconciler);
    w.cleanup_exit = std::nullopt;
    w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 2; });
    w.world.settle(3);
    reconcile_until(reconciler, w.world,
                    {"the cleanup pod running",
                     [&](const ReconcileResult&) {
                       auto pod = w.world.kube.get_raw({Kind::Pod, kNs, "web-2"});
                       return pod && (*pod)["status"].value("phase", "") == "Running";
                     }},
                    {.limit = 50});
    w.remove(Propagation::Orphan);
  };
  int total = 0;
  {
    DeleteWorld w;
    MemoryJournal journal;
    orphan_deleted_while_draining(w, journal);
    const int before = w.world.kube.mutations();
    Reconciler reconciler{w.world.kube, journal, w.world.clock, w.world.events};
    w.run_to_idle(reconciler);
    total = w.world.kube.mutations() - before;
    ASSERT_FALSE(w.exists(w.world.sts()));
  }
  ASSERT_GT(total, 3);
  for (const bool keep_journal : {true, false}) {
    for (int k = 1; k < total; ++k) {
      SCOPED_TRACE("crash after mutation " + std::to_string(k) +
                   (keep_journal ? ", journal kept" : ", journal lost"));
      DeleteWorld w;
      MemoryJournal first_journal;
      orphan_deleted_while_draining(w, first_journal);
      crash_after_mutations(w, first_journal, k);
      MemoryJournal lost;
      MemoryJournal& second = keep_journal ? first_journal : lost;
      {
        Reconciler reconciler{w.world.kube, second, w.world.clock, w.world.events};
        w.run_to_idle(reconciler);
      }
      EXPECT_FALSE(w.exists(w.world.sts()));
      EXPECT_TRUE(w.cleaned.empty());
      w.expect_claims_intact();
      EXPECT_FALSE(w.exists({Kind::Pod, kNs, "web-2"}));
      for (const char* pod : {"web-0", "web-1"}) {
        EXPECT_TRUE(w.exists({Kind::Pod, kNs, pod})) << pod;
      }
      if (keep_journal) expect_journal_consistent(first_journal);
    }
  }
}

}  // namespace
}  // namespace stsresize
