// The Reconciler's steps reading through caches a moment behind the cluster (the controller's
// CachedReads over its informers): a resize completes as on live reads, with far fewer reads,
// and an act that can lose data is decided on live reads, not on what the cache still shows.
#include <gtest/gtest.h>

#include "adapters/journal/memory_journal.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/operation_codec.h"
#include "engine/vocabulary.h"
#include "states/reconciler.h"
#include "states/reconciler_session.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/lagging_caches.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

// Each claim's uid, by name, as the resize finds them.
std::map<std::string, std::string> claim_uids(const ResizeWorld& world) {
  std::map<std::string, std::string> uids;
  for (const std::string& name : world.claim_names()) {
    uids[name] = *k8s::uid(*world.kube.get_raw(world.claim(name)));
  }
  return uids;
}

// Reconciles until idle, the caches catching up every `lag` reconciles (the informers' events
// come before the reconcile they wake; a step's own writes are read before the cache has them).
ReconcileResult run_lagging(Reconciler& reconciler, ResizeWorld& world, LaggingCaches& caches,
                            int lag, int limit) {
  ReconcileResult result;
  for (int round = 0; round < limit; ++round) {
    result = reconciler.reconcile(kNs, kSts);
    if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
      return result;
    }
    world.settle(2);
    if (round % lag == 0) caches.refresh();
  }
  ADD_FAILURE() << "not at rest after " << limit << " reconciles: " << result.message;
  return result;
}

void expect_resized_with_every_file(const ResizeWorld& world) {
  const Json sts = world.live_sts();
  EXPECT_FALSE(k8s::annotation(sts, kStateAnnotation)->has_value());
  EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)),
              std::optional{world.original_files.at(name)})
        << name;
  }
}

class StaleCache : public ::testing::TestWithParam<bool> {};  // rebind path, or two copies

TEST_P(StaleCache, AResizeOnCachesAReconcileBehindCompletesWithEveryFileAndFewerReads) {
  EngineSettings settings;
  settings.rebind = GetParam();

  // The same resize on live reads only, for the count.
  ResizeWorld live_world;
  live_world.seed(/*expandable=*/false);
  MemoryJournal live_journal;
  Reconciler live_reconciler{live_world.kube, live_journal, live_world.clock, live_world.events,
                             settings};
  reconcile_to_idle(live_reconciler, live_world, 200);
  expect_resized_with_every_file(live_world);

  ResizeWorld world;
  world.seed(/*expandable=*/false);
  LaggingCaches caches{world.kube};
  MemoryJournal journal;
  Reconciler reconciler{caches.reads.live(), journal, world.clock, world.events, settings, nullptr,
                        &caches.reads};
  const ReconcileResult result = run_lagging(reconciler, world, caches, 1, 300);
  ASSERT_TRUE(result.is(ReconcileResult::Kind::Idle)) << result.message;
  expect_resized_with_every_file(world);
  auto last = k8s::annotation(world.live_sts(), kLastOperationAnnotation);
  ASSERT_TRUE(last && last->has_value());
  EXPECT_NE((*last)->find("Completed"), std::string::npos) << **last;

  const int live_reads = live_world.kube.calls(Verb::Get, Kind::PersistentVolumeClaim) +
                         live_world.kube.calls(Verb::Get, Kind::Job);
  const int reads = world.kube.calls(Verb::Get, Kind::PersistentVolumeClaim) +
                    world.kube.calls(Verb::Get, Kind::Job);
  EXPECT_GT(caches.reads.cache_hits(), 0u);
  // A third fewer at least (about half, here): what remains is the steps that act destructively
  // run again on live reads, and the reads of keys just written, before the cache shows them.
  EXPECT_LT(reads * 3, live_reads * 2)
      << "claims and Jobs read: " << reads << " with caches, " << live_reads << " without";
  // Volumes are not cached, but the runs on cached reads read each once a reconcile, or take
  // what a live run before them read (states/volume_memo.h): a quarter fewer at least (72
  // against 102, here), what remains the live runs before each destructive act.
  const int live_volume_reads = live_world.kube.calls(Verb::Get, Kind::PersistentVolume);
  const int volume_reads = world.kube.calls(Verb::Get, Kind::PersistentVolume);
  if (GetParam()) {
    EXPECT_LT(volume_reads * 4, live_volume_reads * 3)
        << "volumes read: " << volume_reads << " with caches, " << live_volume_reads << " without";
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, StaleCache, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Rebind" : "TwoCopies"; });

// Someone deletes a backup claim after it was verified, before Recreating deletes the sources.
// The caches still show it Bound and ours; deleting a source on that view would leave its data
// nowhere. The delete is decided on live reads: the backup is seen going, nothing is deleted,
// and the operation scales back with every source intact.
TEST(StaleCacheSafety, ASourceIsNotDeletedOnACachedViewOfABackupSomeoneDeleted) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  LaggingCaches caches{world.kube};
  MemoryJournal journal;
  Reconciler reconciler{caches.reads.live(), journal, world.clock,  world.events,
                        two_copies(),        nullptr, &caches.reads};
  const std::map<std::string, std::string> uids = claim_uids(world);

  // Until every backup is verified and Recreating is next, the caches keeping up.
  set_mode(world, "manual");
  for (int i = 0; i < 30; ++i) {
    run_lagging(reconciler, world, caches, 1, 100);
    auto waiting = awaiting(world);
    ASSERT_TRUE(waiting) << "nothing waits";
    if (waiting->from == Phase::BackingUp) break;
    ASSERT_TRUE(approve_waiting(world, "alice", "approve-" + std::to_string(i)));
    // The approval's watch event reaches the StatefulSet cache before it wakes the reconcile.
    caches.refresh_statefulsets();
  }
  ASSERT_EQ(awaiting(world)->from, Phase::BackingUp);
  caches.refresh();

  // The backup of data-web-0 goes; the caches never hear of it from here on.
  const std::string victim = naming::claim_name("data", kSts, 0);  // the first source deleted
  ASSERT_TRUE(world.kube.system().remove(world.claim(naming::backup_claim(victim))));
  world.settle(3);
  ASSERT_TRUE(approve_waiting(world, "alice", "approve-recreate"));
  caches.refresh_statefulsets();
  for (int round = 0; round < 60; ++round) {
    const ReconcileResult result = reconciler.reconcile(kNs, kSts);
    if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) break;
    world.settle(2);
    if (awaiting(world)) {
      ASSERT_TRUE(approve_waiting(world, "alice", "a-" + std::to_string(round)));
      caches.refresh_statefulsets();
    }
  }

  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name << " was deleted on a cached view";
    EXPECT_EQ(*k8s::uid(*pvc), uids.at(name)) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)),
              std::optional{world.original_files.at(name)})
        << name;
  }
}

// Someone scales the StatefulSet up while Recreating goes from one claim to the next, and the
// caches have not shown it yet: the reconcile that comes next finds the StatefulSet as it last
// saw it (replicas 0). Deleting the next source on that view would let the replicas start on
// claims being re-created. The delete is decided on the StatefulSet read live: the fence is
// broken, no other source is deleted.
TEST(StaleCacheSafety, NoSourceIsDeletedOnACachedViewOfAStatefulSetSomeoneScaledUp) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  LaggingCaches caches{world.kube};
  MemoryJournal journal;
  Reconciler reconciler{caches.reads.live(), journal, world.clock,  world.events,
                        two_copies(),        nullptr, &caches.reads};
  const std::vector<std::string> names = world.claim_names();
  const std::map<std::string, std::string> uids = claim_uids(world);
  auto same = [&](const std::string& name) {  // and not being deleted
    const auto pvc = world.kube.get_raw(world.claim(name));
    return pvc && k8s::uid(*pvc).value_or("") == uids.at(name) &&
           !k8s::is_being_deleted(*pvc).value_or(true);
  };
  auto recreated = [&](const std::string& name) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    return pvc && k8s::uid(*pvc).value_or("") != uids.at(name);
  };

  // One write per reconcile, the caches keeping up, until the first claim is re-created, its
  // record written, and the next write would be the delete of the second source.
  bool there = false;
  for (int round = 0; round < 400 && !there; ++round) {
    world.kube.set_mutation_budget(1);
    (void)reconciler.reconcile(kNs, kSts);
    world.kube.set_mutation_budget(std::nullopt);
    world.settle(2);
    caches.refresh();
    const auto op = read_operation(world.live_sts());
    there = recreated(names[0]) && same(names[1]) && op && op->has_value() &&
            (*op)->phase == Phase::Recreating && !(*op)->claims[0].recreated_uid.empty();
  }
  ASSERT_TRUE(there) << "never between the first claim re-created and the second deleted";

  // The controller has the StatefulSet as it is (its last read); then it is scaled up on the
  // server, and the caches do not hear of it.
  caches.refresh();
  ASSERT_TRUE(caches.reads.live().get(world.sts()));
  Json sts = world.live_sts();
  sts["spec"]["replicas"] = kReplicas;
  ASSERT_TRUE(world.kube.system().update(Kind::StatefulSet, sts));
  for (int round = 0; round < 5; ++round) (void)reconciler.reconcile(kNs, kSts);

  for (std::size_t i = 1; i < names.size(); ++i) {
    EXPECT_TRUE(same(names[i])) << names[i] << " was deleted on a cached view of the StatefulSet";
  }
}

// What is decided on live reads (destroys_data): every delete of a claim, a volume or the
// StatefulSet, and every change of a volume but one: its reclaim policy set to Retain, which
// loses nothing whatever the view (the volume only outlives its claim). The rebind path journals
// that one as "retain" and its other volume changes as "patch".
TEST(StaleCacheSafety, EveryVolumeChangeButRetainIsDecidedOnLiveReads) {
  EXPECT_TRUE(destroys_data("delete", Kind::PersistentVolumeClaim));
  EXPECT_TRUE(destroys_data("delete", Kind::StatefulSet));
  EXPECT_TRUE(destroys_data("delete", Kind::PersistentVolume));
  EXPECT_TRUE(destroys_data("patch", Kind::PersistentVolume));
  EXPECT_FALSE(destroys_data("retain", Kind::PersistentVolume));
  EXPECT_FALSE(destroys_data("create", Kind::PersistentVolumeClaim));
  EXPECT_FALSE(destroys_data("delete", Kind::Job));

  ResizeWorld world;
  world.seed(/*expandable=*/false);
  LaggingCaches caches{world.kube};
  MemoryJournal journal;
  Reconciler reconciler{caches.reads.live(), journal, world.clock, world.events, {}, nullptr,
                        &caches.reads};
  ASSERT_TRUE(run_lagging(reconciler, world, caches, 1, 300).is(ReconcileResult::Kind::Idle));
  expect_resized_with_every_file(world);
  std::map<std::string, int> volume_actions;  // "retain Retain", "patch Delete", "patch pre-bound"
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  for (const OperationSummary& summary : *operations) {
    auto records = journal.read(summary.operation_id);
    ASSERT_TRUE(records);
    for (const JournalRecord& record : *records) {
      auto entry = decode_entry(record);
      ASSERT_TRUE(entry);
      const auto* intended = std::get_if<entries::ActionIntended>(&*entry);
      if (!intended || !intended->target.starts_with("PersistentVolume ")) continue;
      const bool retain = intended->detail.starts_with("reclaim policy Retain");
      EXPECT_EQ(intended->action, retain ? "retain" : "patch") << intended->detail;
      ++volume_actions[intended->action];
    }
  }
  EXPECT_EQ(volume_actions["retain"], 2 * static_cast<int>(world.claim_names().size()))
      << "each claim's volume and its copy's";
  EXPECT_GT(volume_actions["patch"], 0);
}

// An explicit request re-creates the StatefulSet: its definition is saved in a ConfigMap, then
// the object is orphan-deleted. Someone deletes that ConfigMap while the caches still show it:
// deleting the StatefulSet on that view, and dying right after, would leave nothing to re-create
// it from (Reconciler::recover reads the ConfigMap). The delete is decided on live reads: the
// definition is saved again first.
TEST(StaleCacheSafety, TheStatefulSetIsNotDeletedOnACachedViewOfADefinitionSomeoneDeleted) {
  const ObjectRef definition{Kind::ConfigMap, kNs, naming::definition_config_map(kSts)};
  for (int budget = 1; budget < 30; ++budget) {
    ResizeWorld world;
    world.seed(/*expandable=*/false, "2Gi", ResizeTrigger::Request);
    LaggingCaches caches{world.kube};
    MemoryJournal journal;
    Reconciler reconciler{caches.reads.live(), journal, world.clock, world.events, {}, nullptr,
                          &caches.reads};
    // A crash after `budget` writes: the first one after which the definition is saved and the
    // StatefulSet not yet deleted.
    world.kube.set_mutation_budget(budget);
    (void)reconciler.reconcile(kNs, kSts);
    world.kube.set_mutation_budget(std::nullopt);
    if (!world.kube.get_raw(definition) || !world.kube.get_raw(world.sts())) continue;

    caches.refresh();
    ASSERT_TRUE(world.kube.system().remove(definition));
    // One write, then a crash: whichever the engine makes first.
    world.kube.set_mutation_budget(1);
    (void)reconciler.reconcile(kNs, kSts);
    world.kube.set_mutation_budget(std::nullopt);
    EXPECT_TRUE(world.kube.get_raw(world.sts()) || world.kube.get_raw(definition))
        << "the StatefulSet was deleted with no definition left to re-create it from";
    // And the resize still completes from there, on caches that keep up.
    const ReconcileResult result = run_lagging(reconciler, world, caches, 1, 300);
    ASSERT_TRUE(result.is(ReconcileResult::Kind::Idle)) << result.message;
    expect_resized_with_every_file(world);
    return;
  }
  FAIL() << "no crash point between the definition saved and the StatefulSet deleted";
}

}  // namespace
}  // namespace stsresize
