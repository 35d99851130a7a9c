// The rebind path (states/rebind.h) on the simulated cluster, where people touch the volumes
// and claims it works on: the old volume given to someone else before it is released, a claim
// of that name created by someone else before the operation could rebind it. The crash-resume
// suite covers every crash point; the seeded simulation, people acting on the StatefulSet.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class Rebind : public ::testing::Test {
 protected:
  void SetUp() override { world.seed(/*expandable=*/false); }

  std::optional<Operation> operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }

  Until phase(Phase wanted) {
    return {"phase " + std::string{to_string(wanted)}, [this, wanted](const ReconcileResult&) {
              auto op = operation();
              return op && op->phase == wanted;
            }};
  }

  Json volume(const std::string& name) {
    return *world.kube.get_raw({Kind::PersistentVolume, "", name});
  }

  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
};

TEST_F(Rebind, EachClaimEndsOnItsVerifiedCopyWithEveryPolicyBackAndNoVolumeLeft) {
  std::map<std::string, std::string> old_volumes;
  for (const std::string& name : world.claim_names()) {
    old_volumes[name] = (*world.kube.get_raw(world.claim(name)))["spec"]["volumeName"];
  }
  reconcile_until(reconciler, world, phase(Phase::ScalingUp), {.limit = 300});
  const Operation op = *operation();
  EXPECT_EQ(op.path, Path::Rebind);
  reconcile_to_idle(reconciler, world, 200);
  world.settle(2);
  for (const ClaimPlan& claim : op.claims) {
    const Json live = *world.kube.get_raw(world.claim(claim.claim));
    EXPECT_EQ(live["spec"]["volumeName"], claim.copy_volume) << claim.claim;
    EXPECT_EQ(*k8s::requested_storage(live), *Quantity::parse("2Gi")) << claim.claim;
    EXPECT_EQ(world.cluster.volume_files(world.claim(claim.claim)),
              world.original_files.at(claim.claim))
        << claim.claim;
    EXPECT_FALSE(world.kube.get_raw({Kind::PersistentVolume, "", old_volumes[claim.claim]}))
        << "old volume of " << claim.claim << " left";
    EXPECT_EQ(volume(claim.copy_volume)["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  }
  EXPECT_EQ(world.kube.list_raw(Kind::PersistentVolume).size(), world.claim_names().size());
  // One copy per claim, no restore Job; before it, one pre-copy per claim.
  int jobs = 0;
  int pre_copies = 0;
  for (const Mutation& m : world.kube.history()) {
    if (m.actor != Actor::Client || m.verb != Verb::Create || m.ref.kind != Kind::Job) continue;
    ++(m.ref.name.ends_with("-stsresize-precopy") ? pre_copies : jobs);
  }
  EXPECT_EQ(jobs, 6);
  EXPECT_EQ(pre_copies, 6);
}

// The reconciler tells its OperationListener (/metrics) of every phase the resize leaves and how
// long it spent there, of the replicas Ready each time it looks, and at the end of the path and
// the bytes of every verified copy.
TEST_F(Rebind, TheListenerHearsEachPhaseLeftTheReplicasReadyAndTheBytesCopied) {
  struct Heard final : OperationListener {
    std::vector<PhaseLeft> lefts;
    std::vector<OperationSeen> seens;
    std::vector<OperationEnded> ends;
    void started(OperationKind) override {}
    void left(const PhaseLeft& l) override { lefts.push_back(l); }
    void seen(const OperationSeen& s) override { seens.push_back(s); }
    void ended(const OperationEnded& e) override { ends.push_back(e); }
  } heard;
  Reconciler told{world.kube, journal, world.clock, world.events, {}, &heard};
  reconcile_until(told, world, phase(Phase::ScalingUp), {.limit = 300});
  const Operation op = *operation();
  reconcile_to_idle(told, world, 200);
  ASSERT_EQ(heard.ends.size(), 1u);
  const OperationEnded& end = heard.ends[0];
  EXPECT_EQ(end.id, op.id);
  EXPECT_EQ(end.path, Path::Rebind);
  std::int64_t verified = 0;
  for (const ClaimPlan& claim : op.claims) verified += claim.backup_verified->bytes;
  EXPECT_GT(verified, 0);
  EXPECT_EQ(end.bytes_copied, verified);
  // Every phase left, in order, adding up to the whole operation.
  std::vector<Phase> phases;
  Duration total{0};
  for (const PhaseLeft& l : heard.lefts) {
    phases.push_back(l.phase);
    total += l.took;
    EXPECT_GE(l.took.count(), 0) << to_string(l.phase);
  }
  // (The template trigger starts in Planning.)
  EXPECT_EQ(phases, (std::vector<Phase>{Phase::Planning, Phase::PreCopying, Phase::ScalingDown,
                                        Phase::BackingUp, Phase::Recreating, Phase::Restoring,
                                        Phase::ScalingUp, Phase::CleaningUp}));
  EXPECT_EQ(total, end.took);
  // Measured against the 3 replicas it started with, also while scaled to 0.
  ASSERT_FALSE(heard.seens.empty());
  EXPECT_TRUE(std::ranges::all_of(
      heard.seens, [&](const OperationSeen& s) { return s.wanted == 3 && s.id == op.id; }));
  EXPECT_TRUE(
      std::ranges::any_of(heard.seens, [](const OperationSeen& s) { return s.ready == 0; }));
}

// Someone gave the old volume to another claim (its claimRef edited) while it was kept: it is
// theirs now. CleaningUp does not put its Delete policy back (which would delete it with their
// claim) and fails, saying so; the resize itself is done.
TEST_F(Rebind, AnOldVolumeSomeoneGaveToAnotherClaimIsLeftRetainAndSaidSo) {
  reconcile_until(reconciler, world, phase(Phase::ScalingUp), {.limit = 300});
  const ClaimPlan taken = operation()->claims.front();
  world.kube.mutate_raw({Kind::PersistentVolume, "", taken.source_volume}, [](Json& pv) {
    pv["spec"]["claimRef"] = Json{{"namespace", "other"}, {"name", "theirs"}, {"uid", "their-uid"}};
    pv["status"]["phase"] = "Bound";
  });
  reconcile_until(reconciler, world, at_rest(), {.limit = 200, .terminal_fails = false});
  ASSERT_TRUE(operation()) << "it completed";
  const Operation op = *operation();
  EXPECT_EQ(op.phase, Phase::Failed);
  EXPECT_EQ(op.failed_in, Phase::CleaningUp);
  EXPECT_NE(op.failure.find(taken.source_volume), std::string::npos) << op.failure;
  EXPECT_EQ(volume(taken.source_volume)["spec"]["persistentVolumeReclaimPolicy"], "Retain");
  // Every claim runs on its verified copy all the same.
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
  }
}

// A claim of that name created by someone else between the source delete and the rebind (the
// fence broken by hand, say) is not the operation's to delete: it fails, keeping both volumes
// of that claim Retain, and the Warning names them.
TEST_F(Rebind, AClaimSomeoneElseCreatedIsNotDeletedAndTheKeptVolumesAreNamed) {
  bool created = false;
  world.kube.on_mutation([&](const Mutation& m) {
    // The source is gone once its copy's claim is deleted (rebind_claim's first act).
    if (created || m.actor != Actor::Client || m.verb != Verb::Remove ||
        m.ref.kind != Kind::PersistentVolumeClaim ||
        m.ref.name != naming::backup_claim("data-web-0")) {
      return;
    }
    created = true;
    world.kube.system().create(Kind::PersistentVolumeClaim,
                               Json{{"apiVersion", "v1"},
                                    {"kind", "PersistentVolumeClaim"},
                                    {"metadata", {{"name", "data-web-0"}, {"namespace", kNs}}},
                                    {"spec",
                                     {{"accessModes", {"ReadWriteOnce"}},
                                      {"storageClassName", "standard"},
                                      {"resources", {{"requests", {{"storage", "2Gi"}}}}}}}});
  });
  reconcile_until(reconciler, world, at_rest(), {.limit = 300, .terminal_fails = false});
  ASSERT_TRUE(created);
  ASSERT_TRUE(operation()) << "it completed";
  const Operation op = *operation();
  EXPECT_EQ(op.phase, Phase::Failed);
  const ClaimPlan& claim = *op.find_claim("data-web-0");
  for (const std::string& kept : {claim.source_volume, claim.copy_volume}) {
    EXPECT_EQ(volume(kept)["spec"]["persistentVolumeReclaimPolicy"], "Retain") << kept;
  }
  // Someone else's claim is still there.
  EXPECT_TRUE(world.kube.get_raw(world.claim("data-web-0")));
  bool named = false;
  for (const auto& event : world.events.with_reason("ResizeFailed")) {
    named = named || (event.message.find(claim.source_volume) != std::string::npos &&
                      event.message.find(claim.copy_volume) != std::string::npos);
  }
  EXPECT_TRUE(named) << "no ResizeFailed Event names both kept volumes";
  EXPECT_EQ(world.cluster.persistent_volume_files(claim.source_volume),
            world.original_files.at("data-web-0"));
}

}  // namespace
}  // namespace stsresize
