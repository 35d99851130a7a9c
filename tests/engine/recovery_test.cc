// The lost-volume recovery on the simulated cluster: shop/web's replicas each on a node of their
// own (sim-0, sim-1, sim-2), each claim's volume pinned to its replica's node. A node that is
// gone (deleted, or tainted out-of-service) past the grace period costs its replica's claims,
// never anyone else's; a node only NotReady, or back within the grace, costs nothing; manual
// mode waits for a person; a claim bound after the loss is never taken; a crash after any side
// effect converges.
#include <gtest/gtest.h>

#include <algorithm>

#include "adapters/app/status_view.h"
#include "engine/lost_volume.h"
#include "engine/naming.h"
#include "engine/vocabulary.h"
#include "tests/support/approvals.h"
#include "tests/support/drain_world.h"
#include "tests/support/engine_harness.h"

namespace stsresize {
namespace {

using namespace testing;

constexpr auto kGrace = std::chrono::seconds{30};

std::string node_name(int ordinal) {
  return "sim-" + std::to_string(ordinal);
}

struct RecoveryWorld {
  ResizeWorld world;
  MemoryJournal journal;
  std::map<std::string, std::string> uids;     // claim -> uid before the loss
  std::map<std::string, std::string> volumes;  // claim -> its volume before the loss

  explicit RecoveryWorld(const std::string& mode = "auto") {
    world.seed(/*expandable=*/false, "1Gi");
    for (int i = 0; i < kReplicas; ++i) add_node(node_name(i));
    for (int i = 0; i < kReplicas; ++i) place(i, node_name(i));
    world.kube.mutate_raw(world.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kLostVolumeRecoveryAnnotation}] = mode;
      live["metadata"]["annotations"][std::string{kLostVolumeGraceAnnotation}] = "30s";
    });
    for (const std::string& name : world.claim_names()) {
      const Json claim = *world.kube.get_raw(world.claim(name));
      uids[name] = claim["metadata"]["uid"];
      volumes[name] = claim["spec"]["volumeName"];
    }
    // The claims exist well before any loss (timestamps have whole seconds).
    world.settle(5);
  }

  void add_node(const std::string& name) {
    auto created = world.kube.system().create(
        Kind::Node, Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}});
    ASSERT_TRUE(created) << created.error().message;
    set_ready(name, true);
  }
  void set_ready(const std::string& name, bool ready) {
    world.kube.mutate_raw({Kind::Node, "", name}, [&](Json& live) {
      live["status"]["conditions"] =
          Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "Unknown"}}});
    });
  }
  void delete_node(const std::string& name) {
    ASSERT_TRUE(world.kube.system().remove({Kind::Node, "", name}));
  }
  void taint_out_of_service(const std::string& name) {
    set_ready(name, false);
    world.kube.mutate_raw({Kind::Node, "", name}, [&](Json& live) {
      live["spec"]["taints"] = Json::array({{{"key", std::string{kOutOfServiceTaint}},
                                             {"value", "nodeshutdown"},
                                             {"effect", "NoExecute"}}});
    });
  }
  // The replica's pod on `node`, and its claims' volumes pinned there (local volumes).
  void place(int ordinal, const std::string& node) {
    world.kube.mutate_raw({Kind::Pod, kNs, "web-" + std::to_string(ordinal)},
                          [&](Json& live) { live["spec"]["nodeName"] = node; });
    for (const char* tmpl : {"data", "logs"}) {
      pin(naming::claim_name(tmpl, kSts, ordinal), node);
    }
  }
  void pin(const std::string& claim, const std::string& node) {
    const std::string volume = (*world.kube.get_raw(world.claim(claim)))["spec"]["volumeName"];
    world.kube.mutate_raw({Kind::PersistentVolume, "", volume}, [&](Json& live) {
      live["spec"]["nodeAffinity"] = {
          {"required",
           {{"nodeSelectorTerms",
             Json::array(
                 {{{"matchExpressions", Json::array({{{"key", "kubernetes.io/hostname"},
                                                      {"operator", "In"},
                                                      {"values", Json::array({node})}}})}}})}}}};
    });
  }

  // "" also while the StatefulSet is gone (a resume creates it again).
  std::string annotation(std::string_view key) const {
    auto sts = world.kube.get_raw(world.sts());
    if (!sts) return "";
    return (*sts)["metadata"].value("annotations", Json::object()).value(std::string{key}, "");
  }
  std::string phase() const { return annotation(kPhaseAnnotation); }
  std::optional<Json> claim(const std::string& name) const {
    return world.kube.get_raw(world.claim(name));
  }
  std::vector<std::string> journal_types() {
    std::vector<std::string> types;
    auto operations = journal.operations();
    if (!operations) return types;
    for (const auto& summary : *operations) {
      auto records = journal.read(summary.operation_id);
      if (!records) continue;
      for (const JournalRecord& record : *records) types.push_back(record.type);
    }
    return types;
  }
  // Reconciles (2 s of cluster time between two) until `reached`.
  ReconcileResult until(Reconciler& reconciler, const std::string& goal,
                        std::function<bool()> reached, int limit = 80) {
    return reconcile_until(
        reconciler, world, {goal, [&](const ReconcileResult&) { return reached(); }},
        {.limit = limit, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
  }
  // `rounds` reconciles, 2 s of cluster time between two: time passing with nothing asked.
  void run_for(Reconciler& reconciler, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      reconciler.reconcile(kNs, kSts);
      world.cluster.tick();
      world.clock.advance(std::chrono::seconds{2});
    }
  }
  // Until no operation runs and a recovery has ended (the last-operation annotation names one).
  ReconcileResult until_recovered(Reconciler& reconciler, int limit = 80) {
    return until(
        reconciler, "a recovery ended",
        [&] {
          return annotation(kStateAnnotation).empty() &&
                 annotation(kLastOperationAnnotation).find("\"Recovery\"") != std::string::npos;
        },
        limit);
  }
  // The replicas other than `lost` kept their claims and data.
  void expect_untouched_but(int lost) {
    for (const std::string& name : world.claim_names()) {
      if (name.ends_with("-" + std::to_string(lost))) continue;
      auto now = claim(name);
      ASSERT_TRUE(now) << name;
      EXPECT_EQ((*now)["metadata"]["uid"], uids[name]) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]) << name;
    }
  }
  // Ordinal `ordinal` runs on new claims marked recovered-from its old volumes, which are kept
  // (Retain) with their data.
  void expect_recovered(int ordinal) {
    for (const char* tmpl : {"data", "logs"}) {
      const std::string name = naming::claim_name(tmpl, kSts, ordinal);
      SCOPED_TRACE(name);
      auto now = claim(name);
      ASSERT_TRUE(now);
      EXPECT_NE((*now)["metadata"]["uid"], uids[name]);
      EXPECT_EQ((*now)["metadata"]["annotations"][std::string{kRecoveredFromAnnotation}],
                volumes[name]);
      EXPECT_NE((*now)["spec"]["volumeName"], volumes[name]);
      auto files = world.cluster.volume_files(world.claim(name));
      ASSERT_TRUE(files);
      EXPECT_TRUE(files->empty());
      auto old = world.kube.get_raw({Kind::PersistentVolume, "", volumes[name]});
      ASSERT_TRUE(old) << "the lost volume was deleted";
      EXPECT_EQ((*old)["spec"]["persistentVolumeReclaimPolicy"], "Retain");
      EXPECT_EQ(world.cluster.persistent_volume_files(volumes[name]), world.original_files[name]);
    }
    auto pod = world.kube.get_raw({Kind::Pod, kNs, "web-" + std::to_string(ordinal)});
    ASSERT_TRUE(pod);
    EXPECT_EQ((*pod)["status"]["phase"], "Running");
    EXPECT_TRUE((*pod)["metadata"]["annotations"].contains(std::string{kRecoveredFromAnnotation}));
  }
  void expect_journal_consistent() { testing::expect_journal_consistent(journal); }
};

// Node 1 deleted in a fresh World, and the controller killed right after its k-th write, for
// every k the whole recovery makes, with the journal kept and lost; a controller started again
// must converge, and `expect` says on what (called on the World that crashed).
template <class World>
void expect_converges_after_any_crash(const std::function<void(World&, bool)>& expect,
                                      int at_least) {
  int total = 0;
  {
    World whole;
    Reconciler reconciler{whole.world.kube, whole.journal, whole.world.clock, whole.world.events};
    whole.delete_node(node_name(1));
    const int before = whole.world.kube.mutations();
    whole.until_recovered(reconciler);
    total = whole.world.kube.mutations() - before;
  }
  ASSERT_GT(total, at_least);
  for (const bool keep_journal : {true, false}) {
    for (int k = 1; k < total; ++k) {
      SCOPED_TRACE("crash after mutation " + std::to_string(k) +
                   (keep_journal ? ", journal kept" : ", journal lost"));
      World fresh;
      fresh.delete_node(node_name(1));
      const int start = fresh.world.kube.mutations();
      fresh.world.kube.set_mutation_budget(k);
      {
        Reconciler reconciler{fresh.world.kube, fresh.journal, fresh.world.clock,
                              fresh.world.events};
        fresh.until(reconciler, "a crash",
                    [&] { return fresh.world.kube.mutations() - start >= k; });
      }
      fresh.world.kube.set_mutation_budget(std::nullopt);
      MemoryJournal lost;
      Journal& second = keep_journal ? static_cast<Journal&>(fresh.journal) : lost;
      {
        Reconciler reconciler{fresh.world.kube, second, fresh.world.clock, fresh.world.events};
        reconcile_until(
            reconciler, fresh.world,
            {"recovered",
             [&](const ReconcileResult&) {
               return fresh.annotation(kStateAnnotation).empty() &&
                      fresh.annotation(kLastOperationAnnotation).find("\"Recovery\"") !=
                          std::string::npos;
             }},
            {.limit = 120, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
      }
      expect(fresh, keep_journal);
    }
  }
}

class Recovery : public ::testing::Test, protected RecoveryWorld {};

TEST_F(Recovery, ADeletedNodesReplicaGetsNewClaimsAfterTheGraceAndNoOtherIsTouched) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  until(reconciler, "nothing to do", [&] { return true; });
  EXPECT_TRUE(journal_types().empty());

  delete_node(node_name(1));
  const auto lost_at = world.clock.now();
  until(
      reconciler, "phase AwaitingNode", [&] { return phase() == "AwaitingNode"; }, 3);
  // Within the grace nothing is deleted.
  until(reconciler, "the grace nearly over",
        [&] { return world.clock.now() - lost_at >= kGrace - std::chrono::seconds{4}; });
  EXPECT_EQ(phase(), "AwaitingNode");
  EXPECT_EQ((*claim("data-web-1"))["metadata"]["uid"], uids["data-web-1"]);

  until_recovered(reconciler);
  expect_recovered(1);
  expect_untouched_but(1);
  EXPECT_EQ(world.events.with_reason("RecoveryStarted").size(), 1u);
  ASSERT_EQ(world.events.with_reason("VolumeReplaced").size(), 1u);
  EXPECT_NE(world.events.with_reason("VolumeReplaced")[0].message.find(volumes["data-web-1"]),
            std::string::npos);
  ASSERT_EQ(world.events.with_reason("RecoveryCompleted").size(), 1u);
  EXPECT_NE(world.events.with_reason("RecoveryCompleted")[0].message.find("kubectl delete pv"),
            std::string::npos);
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "ReplicaLost"), 1);
  EXPECT_EQ(std::ranges::count(types, "VolumeRetained"), 2);
  EXPECT_EQ(std::ranges::count(types, "LostClaimDeleted"), 2);
  EXPECT_EQ(std::ranges::count(types, "LostPodDeleted"), 1);
  EXPECT_EQ(std::ranges::count(types, "MarkedRecovered"), 3);
  expect_journal_consistent();

  // Recovered once: the set is looked at again, and nothing more happens.
  run_for(reconciler, 30);
  EXPECT_EQ(std::ranges::count(journal_types(), "ReplicaLost"), 1);
}

TEST_F(Recovery, AnOutOfServiceNodeIsGoneToo) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  taint_out_of_service(node_name(2));
  until_recovered(reconciler);
  expect_recovered(2);
  expect_untouched_but(2);
}

TEST_F(Recovery, ANodeOnlyNotReadyIsReportedOnceAndNothingIsDone) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  set_ready(node_name(1), false);
  run_for(reconciler, 150);
  EXPECT_TRUE(journal_types().empty());
  EXPECT_EQ(world.events.with_reason("NodeNotReady").size(), 1u);
  expect_untouched_but(-1);
}

TEST_F(Recovery, ANodeBackWithinTheGraceEndsTheRecoveryWithNothingDeleted) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(1));
  until(
      reconciler, "phase AwaitingNode", [&] { return phase() == "AwaitingNode"; }, 3);
  add_node(node_name(1));
  until_recovered(reconciler);
  expect_untouched_but(-1);
  for (const std::string& name : {std::string{"data-web-1"}, std::string{"logs-web-1"}}) {
    auto volume = world.kube.get_raw({Kind::PersistentVolume, "", volumes[name]});
    ASSERT_TRUE(volume);
    EXPECT_EQ((*volume)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  }
  EXPECT_NE(world.events.with_reason("RecoveryCompleted").at(0).message.find("is back"),
            std::string::npos);
  EXPECT_EQ(std::ranges::count(journal_types(), "RecoveryCancelled"), 1);
}

TEST_F(Recovery, ManualModeWaitsForApprovalBeforeDeletingAnything) {
  RecoveryWorld manual{"manual"};
  Reconciler reconciler{manual.world.kube, manual.journal, manual.world.clock, manual.world.events};
  manual.delete_node(node_name(0));
  manual.until(reconciler, "awaiting approval", [&] { return awaiting(manual.world).has_value(); });
  EXPECT_EQ(awaiting(manual.world)->to, Phase::ReplacingVolume);
  manual.run_for(reconciler, 60);
  manual.expect_untouched_but(-1);
  ASSERT_TRUE(approve_waiting(manual.world, "alice", "n-1"));
  manual.until_recovered(reconciler);
  manual.expect_recovered(0);
  manual.expect_untouched_but(0);
}

TEST_F(Recovery, AnAbortBeforeTheDeleteKeepsEveryClaimAndLabelsTheSet) {
  RecoveryWorld manual{"manual"};
  Reconciler reconciler{manual.world.kube, manual.journal, manual.world.clock, manual.world.events};
  manual.delete_node(node_name(0));
  manual.until(reconciler, "awaiting approval", [&] { return awaiting(manual.world).has_value(); });
  ASSERT_TRUE(approve_waiting(manual.world, "alice", "n-1", Action::Abort));
  manual.until(reconciler, "Failed", [&] { return manual.phase() == "Failed"; });
  manual.run_for(reconciler, 30);
  manual.expect_untouched_but(-1);
  EXPECT_EQ(manual.world.live_sts()["metadata"]["labels"].value(std::string{kFailedLabel}, ""),
            "true");
  EXPECT_EQ(manual.world.events.with_reason("RecoveryAborted").size(), 1u);
  manual.expect_journal_consistent();
}

// A claim created after the node was last seen Ready (a scale-up whose claim was bound to a
// volume of that node: a static local volume) holds nothing of a replica: never taken for a lost
// one, while the replica that ran there is recovered. `not_ready_first`: the node was NotReady
// (seen so) before that claim, and only then deleted; a node NotReady may already be dead.
void expect_fresh_claim_never_taken(RecoveryWorld& w, bool not_ready_first) {
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  w.until(reconciler, "the nodes seen", [&] { return true; });
  if (not_ready_first) w.set_ready(node_name(1), false);
  w.run_for(reconciler, 3);
  w.world.kube.mutate_raw(w.world.sts(), [](Json& live) { live["spec"]["replicas"] = 4; });
  w.world.settle(4);
  w.pin("data-web-3", node_name(1));
  w.pin("logs-web-3", node_name(1));
  const std::string fresh_uid = (*w.claim("data-web-3"))["metadata"]["uid"];
  if (not_ready_first) w.run_for(reconciler, 5);
  w.delete_node(node_name(1));
  w.until_recovered(reconciler);
  w.expect_recovered(1);
  // A recovery of ordinal 3 would have begun at the next check: none did.
  w.run_for(reconciler, 60);
  EXPECT_EQ((*w.claim("data-web-3"))["metadata"]["uid"], fresh_uid);
  EXPECT_EQ(std::ranges::count(w.journal_types(), "ReplicaLost"), 1);
}

TEST_F(Recovery, AClaimCreatedAfterTheNodeWasLastSeenIsNeverTaken) {
  expect_fresh_claim_never_taken(*this, false);
}

TEST_F(Recovery, AClaimCreatedWhileTheNodeWasNotReadyIsNeverTaken) {
  expect_fresh_claim_never_taken(*this, true);
}

// Two nodes lost at once: one recovery at a time, and the second only once the first recovered
// replica is Ready (its application has its data back from its peers): a zone outage does not
// give every identity an empty volume at once.
TEST_F(Recovery, TwoNodesLostAreRecoveredOneAtATimeEachAfterTheLastIsReady) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(0));
  delete_node(node_name(2));
  until_recovered(reconciler);
  EXPECT_EQ(std::ranges::count(journal_types(), "ReplicaLost"), 1);
  expect_recovered(0);
  // The recovered replica is not Ready yet: the other lost one waits.
  auto not_ready = [&](Json& live) {
    live["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "False"}}});
  };
  world.kube.mutate_raw({Kind::Pod, kNs, "web-0"}, not_ready);
  for (int i = 0; i < 30; ++i) {
    reconciler.reconcile(kNs, kSts);
    world.clock.advance(std::chrono::seconds{2});
  }
  EXPECT_EQ(std::ranges::count(journal_types(), "ReplicaLost"), 1);
  EXPECT_EQ((*claim("data-web-2"))["metadata"]["uid"], uids["data-web-2"]);
  world.kube.mutate_raw({Kind::Pod, kNs, "web-0"}, [](Json& live) {
    live["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "True"}}});
  });
  until(reconciler, "the second recovered",
        [&] { return std::ranges::count(journal_types(), "OperationFinished") == 2; });
  until(reconciler, "ended", [&] { return annotation(kStateAnnotation).empty(); });
  expect_recovered(0);
  expect_recovered(2);
  for (const char* tmpl : {"data", "logs"}) {  // ordinal 1, the only one not lost
    const std::string name = naming::claim_name(tmpl, kSts, 1);
    EXPECT_EQ((*claim(name))["metadata"]["uid"], uids[name]);
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files[name]);
  }
  expect_journal_consistent();
}

TEST_F(Recovery, ACrashAfterAnySideEffectConverges) {
  expect_converges_after_any_crash<RecoveryWorld>(
      [](RecoveryWorld& fresh, bool keep_journal) {
        fresh.expect_recovered(1);
        fresh.expect_untouched_but(1);
        if (keep_journal) fresh.expect_journal_consistent();
      },
      6);
}

// ---- The re-seed (stsresize.dev/recovery-pod-template) ---------------------------------------

// A re-seed pod that writes a file into the new data claim, as one copying from a peer would.
const Json kReseedTemplate = {
    {"metadata", {{"labels", {{"app", "web-reseed"}}}}},
    {"spec",
     {{"containers", Json::array({{{"name", "reseed"}, {"image", "busybox"}}})},
      {"volumes", Json::array()}}}};

struct ReseedWorld : RecoveryWorld {
  std::vector<Json> runs;  // every re-seed pod run, as it was when it ran
  // Whether the replica's pod existed while a re-seed ran: it must not.
  bool replica_beside = false;
  int exit_code = 0;
  bool hold = false;  // the re-seed keeps running while set

  void until_running(Reconciler& reconciler, const ObjectRef& pod) {
    until(reconciler, "pod " + pod.name + " running", [&] {
      auto now = world.kube.get_raw(pod);
      return now && (*now)["status"].value("phase", "") == "Running";
    });
  }

  explicit ReseedWorld(const Json& tmpl = kReseedTemplate) {
    world.kube.mutate_raw(world.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kRecoveryPodTemplateAnnotation}] = tmpl.dump();
    });
    world.cluster.set_pod_runner(
        [this](const Json& pod,
               std::map<std::string, VolumeFiles*>& volumes) -> std::optional<JobRun> {
          if (hold) return std::nullopt;
          runs.push_back(pod);
          const std::string ordinal = pod["spec"].value("hostname", std::string{"?"});
          if (world.kube.get_raw({Kind::Pod, kNs, ordinal})) replica_beside = true;
          if (exit_code == 0 && volumes.contains("data")) {
            (*volumes["data"])["seeded"] = "from a peer of " + ordinal;
          }
          return JobRun{exit_code, exit_code == 0 ? "" : "peer unreachable"};
        });
  }
  // The StatefulSet runs again: not being deleted, without the pause's finalizer, its definition
  // ConfigMap gone.
  void expect_resumed() {
    const Json sts = world.live_sts();
    EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
    const Json finalizers = sts["metadata"].value("finalizers", Json::array());
    EXPECT_EQ(std::ranges::count(finalizers, Json(std::string{kRollingFinalizer})), 0);
    EXPECT_FALSE(world.kube.get_raw(
        {Kind::ConfigMap, kNs, naming::definition_config_map(std::string{kSts})}));
  }
  // Ordinal `ordinal` runs on new claims marked recovered-from its old volumes; its data claim
  // holds what the re-seed wrote (`seeded`) or nothing.
  void expect_reseeded(int ordinal, bool seeded) {
    for (const char* tmpl : {"data", "logs"}) {
      const std::string name = naming::claim_name(tmpl, kSts, ordinal);
      SCOPED_TRACE(name);
      auto now = claim(name);
      ASSERT_TRUE(now);
      EXPECT_NE((*now)["metadata"]["uid"], uids[name]);
      EXPECT_EQ((*now)["metadata"]["annotations"][std::string{kRecoveredFromAnnotation}],
                volumes[name]);
      EXPECT_EQ((*now)["metadata"]["labels"].value("app", ""), "web");  // the selector's
      auto files = world.cluster.volume_files(world.claim(name));
      ASSERT_TRUE(files);
      VolumeFiles expected;
      if (seeded && std::string{tmpl} == "data") {
        expected["seeded"] = "from a peer of web-" + std::to_string(ordinal);
      }
      EXPECT_EQ(*files, expected);
      auto old = world.kube.get_raw({Kind::PersistentVolume, "", volumes[name]});
      ASSERT_TRUE(old);
      EXPECT_EQ((*old)["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    }
    auto pod = world.kube.get_raw({Kind::Pod, kNs, "web-" + std::to_string(ordinal)});
    ASSERT_TRUE(pod);
    EXPECT_EQ((*pod)["status"]["phase"], "Running");
    EXPECT_TRUE((*pod)["metadata"]["annotations"].contains(std::string{kRecoveredFromAnnotation}));
  }
};

class Reseed : public ::testing::Test, protected ReseedWorld {};

TEST_F(Reseed, TheReseedPodFillsTheNewClaimsBeforeTheReplicaStartsOnThem) {
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(1));
  until_recovered(reconciler);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(replica_beside) << "the replica's pod existed while the re-seed ran";
  EXPECT_EQ(runs[0]["metadata"]["name"], naming::reseed_pod(std::string{kSts}, 1));
  EXPECT_EQ(runs[0]["spec"]["restartPolicy"], "Never");
  expect_reseeded(1, /*seeded=*/true);
  expect_untouched_but(1);
  expect_resumed();
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, naming::reseed_pod(std::string{kSts}, 1)}))
      << "a re-seed pod that Succeeded is deleted";
  EXPECT_EQ(world.events.with_reason("ReseedSucceeded").size(), 1u);
  EXPECT_EQ(world.events.with_reason("StatefulSetPaused").size(), 1u);
  EXPECT_TRUE(world.events.with_reason("ReseedFailed").empty());
  const auto types = journal_types();
  EXPECT_EQ(std::ranges::count(types, "ReseedHeld"), 1);
  EXPECT_EQ(std::ranges::count(types, "ReseedPodCreated"), 1);
  EXPECT_EQ(std::ranges::count(types, "ReseedEnded"), 1);
  EXPECT_EQ(std::ranges::count(types, "StatefulSetRecreated"), 1);
  expect_journal_consistent();
  // The other replicas were never restarted by the pause: their pods are the same.
  run_for(reconciler, 20);
  EXPECT_EQ(std::ranges::count(journal_types(), "ReplicaLost"), 1);
}

TEST_F(Reseed, AFailedReseedIsReportedAndTheReplicaStartsOnItsNewClaimsAsTheyAre) {
  exit_code = 3;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(2));
  until_recovered(reconciler);
  ASSERT_EQ(runs.size(), 1u);
  expect_reseeded(2, /*seeded=*/false);
  expect_untouched_but(2);
  expect_resumed();
  auto kept = world.kube.get_raw({Kind::Pod, kNs, naming::reseed_pod(std::string{kSts}, 2)});
  ASSERT_TRUE(kept) << "a failed re-seed pod is kept for its logs";
  EXPECT_EQ((*kept)["status"]["phase"], "Failed");
  ASSERT_EQ(world.events.with_reason("ReseedFailed").size(), 1u);
  EXPECT_NE(world.events.with_reason("ReseedFailed")[0].message.find("exited with code 3"),
            std::string::npos);
  EXPECT_NE(world.events.with_reason("ReseedFailed")[0].message.find("peer unreachable"),
            std::string::npos);
  EXPECT_EQ(world.events.with_reason("VolumeReplaced").size(), 1u);
  expect_journal_consistent();
}

TEST_F(Reseed, AReseedPodDeletedBySomeoneGivesTheReseedUp) {
  world.cluster.set_pod_runner(
      [](const Json&, std::map<std::string, VolumeFiles*>&) -> std::optional<JobRun> {
        return std::nullopt;  // keeps running
      });
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(0));
  const ObjectRef pod{Kind::Pod, kNs, naming::reseed_pod(std::string{kSts}, 0)};
  until_running(reconciler, pod);
  run_for(reconciler, 10);
  EXPECT_EQ(phase(), "Reseeding");
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, "web-0"}));
  ASSERT_TRUE(world.kube.system().remove(pod));
  until_recovered(reconciler);
  expect_reseeded(0, /*seeded=*/false);
  expect_resumed();
  ASSERT_EQ(world.events.with_reason("ReseedFailed").size(), 1u);
  EXPECT_NE(world.events.with_reason("ReseedFailed")[0].message.find("deleted before it ended"),
            std::string::npos);
}

// While paused for the re-seed, people act on the StatefulSet: a scale-up (as a GitOps tool or an
// HPA would) and an annotation edit. Neither is lost, nothing is started beside the re-seed, and
// the resume keeps both.
TEST_F(Reseed, AScaleUpAndAnAnnotationEditWhilePausedAreKeptAndNothingStartsBesideTheReseed) {
  hold = true;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(1));
  const ObjectRef pod{Kind::Pod, kNs, naming::reseed_pod(std::string{kSts}, 1)};
  until_running(reconciler, pod);
  world.kube.mutate_raw(world.sts(), [](Json& live) {
    live["spec"]["replicas"] = 4;
    live["metadata"]["annotations"]["team"] = "storage";
  });
  run_for(reconciler, 10);
  EXPECT_EQ(phase(), "Reseeding");
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, "web-1"}));
  EXPECT_FALSE(world.kube.get_raw({Kind::Pod, kNs, "web-3"})) << "a paused set starts nothing";
  hold = false;
  until_recovered(reconciler);
  EXPECT_FALSE(replica_beside);
  expect_reseeded(1, /*seeded=*/true);
  expect_untouched_but(1);
  expect_resumed();
  const Json sts = world.live_sts();
  EXPECT_EQ(sts["spec"]["replicas"], 4);
  EXPECT_EQ(sts["metadata"]["annotations"].value("team", ""), "storage");
  until(reconciler, "web-3 runs", [&] {
    auto now = world.kube.get_raw({Kind::Pod, kNs, "web-3"});
    return now && (*now)["status"].value("phase", "") == "Running";
  });
  expect_journal_consistent();
}

// A pod of someone else's on a new claim (made by hand once the recovery created it): the
// re-seed is not run beside it, and says why.
TEST(ReseedTemplate, NotRunBesideAPodOfSomeoneElsesOnTheNewClaims) {
  ReseedWorld w;
  w.delete_node(node_name(1));
  // One write per controller run, until the new claim data-web-1 exists (before the re-seed pod).
  const auto new_claim = [&] {
    auto claim = w.claim("data-web-1");
    return claim && (*claim)["metadata"]["uid"] != w.uids["data-web-1"];
  };
  for (int i = 0; i < 60 && !new_claim(); ++i) {
    w.world.kube.set_mutation_budget(1);
    {
      Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
      reconciler.reconcile(kNs, kSts);
    }
    w.world.kube.set_mutation_budget(std::nullopt);
    w.world.cluster.tick();
    w.world.clock.advance(std::chrono::seconds{2});
  }
  ASSERT_TRUE(new_claim());
  ASSERT_TRUE(w.runs.empty());
  auto made = w.world.kube.system().create(
      Kind::Pod,
      Json{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", "debug"}, {"namespace", kNs}}},
           {"spec",
            {{"containers", Json::array({{{"name", "sh"}, {"image", "busybox"}}})},
             {"volumes",
              Json::array({{{"name", "data"},
                            {"persistentVolumeClaim", {{"claimName", "data-web-1"}}}}})}}}});
  ASSERT_TRUE(made) << made.error().message;
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  w.until_recovered(reconciler);
  EXPECT_TRUE(w.runs.empty());
  EXPECT_FALSE(w.world.kube.get_raw({Kind::Pod, kNs, naming::reseed_pod(std::string{kSts}, 1)}));
  ASSERT_EQ(w.world.events.with_reason("ReseedFailed").size(), 1u);
  EXPECT_NE(w.world.events.with_reason("ReseedFailed")[0].message.find(
                "pod debug (no owner) mounts data-web-1: the re-seed is not run beside it"),
            std::string::npos);
  EXPECT_TRUE(w.world.kube.get_raw({Kind::Pod, kNs, "debug"}));
  w.expect_resumed();
  w.expect_untouched_but(1);
}

TEST(ReseedTemplate, OneThatCannotMakeAPodIsReportedAndNothingIsRecovered) {
  Json always = kReseedTemplate;
  always["spec"]["restartPolicy"] = "Always";
  ReseedWorld w{always};
  Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
  w.delete_node(node_name(1));
  w.run_for(reconciler, 60);
  EXPECT_TRUE(w.journal_types().empty());
  w.expect_untouched_but(-1);
  EXPECT_EQ((*w.claim("data-web-1"))["metadata"]["uid"], w.uids["data-web-1"]);
  ASSERT_FALSE(w.world.events.with_reason("InvalidRecoveryPodTemplate").empty());
  EXPECT_NE(w.world.events.with_reason("InvalidRecoveryPodTemplate")[0].message.find("Always"),
            std::string::npos);
}

// Edited into one that cannot make a pod after the recovery started: refused before the pause
// and before any delete; the recovery fails keeping every claim.
TEST(ReseedTemplate, OneBrokenAfterTheStartFailsTheRecoveryBeforeAnyDelete) {
  RecoveryWorld manual{"manual"};
  manual.world.kube.mutate_raw(manual.world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kRecoveryPodTemplateAnnotation}] =
        kReseedTemplate.dump();
  });
  Reconciler reconciler{manual.world.kube, manual.journal, manual.world.clock, manual.world.events};
  manual.delete_node(node_name(1));
  manual.until(reconciler, "awaiting approval", [&] { return awaiting(manual.world).has_value(); });
  manual.world.kube.mutate_raw(manual.world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kRecoveryPodTemplateAnnotation}] = "{not json";
  });
  ASSERT_TRUE(approve_waiting(manual.world, "alice", "n-1"));
  manual.until(reconciler, "Failed", [&] { return manual.phase() == "Failed"; });
  manual.expect_untouched_but(-1);
  const Json sts = manual.world.live_sts();
  EXPECT_FALSE(sts["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(std::ranges::count(manual.journal_types(), "ReseedHeld"), 0);
  manual.expect_journal_consistent();
}

// The node back once the StatefulSet is paused but before the first delete: the pause is undone
// and nothing is deleted.
TEST_F(Reseed, ANodeBackAfterThePauseResumesTheStatefulSetAndDeletesNothing) {
  delete_node(node_name(1));
  bool paused_seen = false;
  for (int budget = 1; budget < 40 && !paused_seen; ++budget) {
    const int start = world.kube.mutations();
    world.kube.set_mutation_budget(1);
    {
      Reconciler reconciler{world.kube, journal, world.clock, world.events};
      reconciler.reconcile(kNs, kSts);
    }
    world.kube.set_mutation_budget(std::nullopt);
    world.cluster.tick();
    world.clock.advance(std::chrono::seconds{2});
    (void)start;
    paused_seen = world.live_sts()["metadata"].contains("deletionTimestamp");
  }
  ASSERT_TRUE(paused_seen);
  EXPECT_EQ(phase(), "ReplacingVolume");
  EXPECT_EQ((*claim("data-web-1"))["metadata"]["uid"], uids["data-web-1"]);
  add_node(node_name(1));
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  until_recovered(reconciler);
  expect_untouched_but(-1);
  expect_resumed();
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(std::ranges::count(journal_types(), "RecoveryCancelled"), 1);
  EXPECT_TRUE(world.kube.get_raw({Kind::Pod, kNs, "web-1"}));
  expect_journal_consistent();
}

TEST_F(Reseed, ACrashAfterAnySideEffectConverges) {
  expect_converges_after_any_crash<ReseedWorld>(
      [](ReseedWorld& fresh, bool keep_journal) {
        EXPECT_FALSE(fresh.replica_beside);
        fresh.expect_reseeded(1, /*seeded=*/true);
        fresh.expect_untouched_but(1);
        fresh.expect_resumed();
        if (keep_journal) fresh.expect_journal_consistent();
      },
      12);
}

// ---- The bound (stsresize.dev/lost-volume-max-unavailable) ------------------------------------

TEST_F(Recovery, ABoundOfTwoRecoversASecondReplicaWhileTheFirstIsNotReadyButNotAThird) {
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kLostVolumeMaxUnavailableAnnotation}] = "2";
  });
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
  delete_node(node_name(0));
  until_recovered(reconciler);
  expect_recovered(0);
  auto not_ready = [](Json& live) {
    live["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "False"}}});
  };
  world.kube.mutate_raw({Kind::Pod, kNs, "web-0"}, not_ready);
  delete_node(node_name(2));
  until(reconciler, "the second recovered",
        [&] { return std::ranges::count(journal_types(), "OperationFinished") == 2; });
  until(reconciler, "ended", [&] { return annotation(kStateAnnotation).empty(); });
  expect_recovered(2);
  // Two replicas without their data: the third lost one waits.
  world.kube.mutate_raw({Kind::Pod, kNs, "web-2"}, not_ready);
  delete_node(node_name(1));
  run_for(reconciler, 60);
  EXPECT_EQ(std::ranges::count(journal_types(), "ReplicaLost"), 2);
  EXPECT_EQ((*claim("data-web-1"))["metadata"]["uid"], uids["data-web-1"]);
  expect_journal_consistent();
}

TEST_F(Recovery, ABoundThatIsNotAWholeNumberOfOneOrMoreIsReportedAndNothingIsRecovered) {
  for (const char* bad : {"0", "-1", "two", "1.5", ""}) {
    SCOPED_TRACE(bad);
    RecoveryWorld w;
    w.world.kube.mutate_raw(w.world.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kLostVolumeMaxUnavailableAnnotation}] = bad;
    });
    Reconciler reconciler{w.world.kube, w.journal, w.world.clock, w.world.events};
    w.delete_node(node_name(1));
    w.run_for(reconciler, 40);
    EXPECT_TRUE(w.journal_types().empty());
    ASSERT_FALSE(w.world.events.with_reason("InvalidRecoverySetting").empty());
    EXPECT_NE(w.world.events.with_reason("InvalidRecoverySetting")[0].message.find(
                  std::string{kLostVolumeMaxUnavailableAnnotation}),
              std::string::npos);
  }
}

}  // namespace
}  // namespace stsresize
