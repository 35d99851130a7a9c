// A seeded, reproducible simulation of copy-path resizes while people and their tools act, in
// the manner of FoundationDB's and TigerBeetle's deterministic simulations: the simulated
// cluster and the manual clock make every run a function of its seed. Between reconciles, at
// random, the application writes through its running pods, a GitOps tool puts spec.replicas
// back, someone removes the state annotation, edits its phase, deletes a copy Job, deletes the
// StatefulSet and applies it again, the controller crashes or comes back with its journal lost.
// After each run:
//   - no claim was deleted while a pod other than the operation's copy Jobs mounted it;
//   - every write the application made through a running pod is on the final claim of that
//     name, or in its retained backup claim (a write onto a recreated claim before its restore
//     was verified is not kept: the restore replaces it; README "When people and tools act");
//   - the replicas end where they started (unless the journal was lost over unfinished backups,
//     where stsresize refuses to act and leaves the set at 0);
//   - every journal stream replays.
// STSRESIZE_SIMULATION_SEEDS=N runs N seeds (default 200); STSRESIZE_SIMULATION_SEED=S runs one.
// A failing seed prints the line that replays it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/resize_request.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

struct SimulatedRun {
  std::uint64_t seed = 0;
  std::vector<std::string> failures;
  std::vector<std::string> actions;
};

class Simulation {
 public:
  explicit Simulation(std::uint64_t seed) : rng_(seed) { run_.seed = seed; }

  SimulatedRun run() {
    world_.seed(/*expandable=*/false);
    watch_deletes();
    plan_disturbances();
    for (int round = 0; round < 400; ++round) {
      disturb(round);
      const ReconcileResult result = engine_->reconcile(kNs, kSts);
      if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
        if (round > 80) break;  // rested after the disturbances had their chance
      }
      world_.settle(1 + static_cast<int>(rng_() % 3));
    }
    // Calm: nobody acts any more; the operation must come to rest.
    for (int round = 0; round < 600; ++round) {
      const ReconcileResult result = engine_->reconcile(kNs, kSts);
      last_ = std::string{to_string(result.kind)} + " " + result.message;
      if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
        break;
      }
      world_.settle(2);
    }
    world_.settle(10);
    check();
    return run_;
  }

 private:
  void act(std::string what) { run_.actions.push_back(std::move(what)); }
  void failure(std::string what) { run_.failures.push_back(std::move(what)); }

  // Every delete of a claim by the engine: no pod but the copy Jobs' may mount it.
  void watch_deletes() {
    world_.kube.on_mutation([this](const Mutation& m) {
      if (m.actor != Actor::Client || m.verb != Verb::Remove ||
          m.ref.kind != Kind::PersistentVolumeClaim) {
        return;
      }
      for (const Json& pod : world_.kube.list_raw(Kind::Pod, kNs)) {
        if (k8s::label(pod, "stsresize.dev/operation").value_or(std::nullopt)) continue;
        const std::string phase = k8s::pod_phase(pod).value_or("");
        if (phase == "Succeeded" || phase == "Failed") continue;
        for (const std::string& claim :
             k8s::mounted_claims(pod).value_or(std::vector<std::string>{})) {
          if (claim == m.ref.name) {
            failure("claim " + claim + " deleted while pod " + k8s::name(pod).value_or("?") +
                    " mounted it");
          }
        }
      }
    });
  }

  std::optional<Operation> operation() const {
    auto sts = world_.kube.get_raw(world_.sts());
    if (!sts) return std::nullopt;
    auto op = read_operation(*sts);
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }

  // The application writes through every running pod of the set, on each claim it mounts.
  void write_through_pods() {
    const std::optional<Operation> op = operation();
    for (const Json& pod : world_.kube.list_raw(Kind::Pod, kNs)) {
      if (k8s::label(pod, "app").value_or(std::nullopt) != std::optional<std::string>{"web"}) {
        continue;
      }
      if (k8s::pod_phase(pod).value_or("") != "Running") continue;
      for (const std::string& claim :
           k8s::mounted_claims(pod).value_or(std::vector<std::string>{})) {
        auto live = world_.kube.get_raw(world_.claim(claim));
        if (!live) continue;
        const std::string path = "app/write-" + std::to_string(++writes_);
        const std::string bytes = "write " + std::to_string(writes_) + " on " + claim;
        if (!world_.cluster.write_file(world_.claim(claim), path, bytes)) continue;
        // A write onto a claim the operation recreated and has not restored yet is replaced by
        // the restore (what the application wrote there ran on an empty volume).
        bool kept = true;
        if (op) {
          if (const ClaimPlan* plan = op->find_claim(claim)) {
            kept = !(plan->source_deleted && !plan->restore_verified);
          }
        }
        const std::string uid = k8s::uid(*live).value_or("");
        if (recreated_uids_.contains(uid)) kept = false;
        if (kept) expected_[claim][path] = bytes;
      }
    }
  }

  enum class Action {
    ScaleUp,
    RemoveState,
    EditPhase,
    DeleteJob,
    Reapply,
    Crash,
    LoseJournal,
    Count
  };

  // Between one and six actions, at random rounds of the first 80.
  void plan_disturbances() {
    const int count = 1 + static_cast<int>(rng_() % 6);
    for (int i = 0; i < count; ++i) {
      schedule_.emplace(1 + static_cast<int>(rng_() % 80),
                        static_cast<Action>(rng_() % static_cast<int>(Action::Count)));
    }
  }

  void disturb(int round) {
    // Remember every claim the operation recreated, whatever happens to the annotation later.
    if (auto op = operation()) {
      for (const ClaimPlan& claim : op->claims) {
        if (!claim.recreated_uid.empty() && !claim.restore_verified) {
          recreated_uids_.insert(claim.recreated_uid);
        }
      }
    }
    write_through_pods();
    auto [first, last] = schedule_.equal_range(round);
    for (auto it = first; it != last; ++it) perform(it->second);
  }

  void perform(Action action) {
    const std::string phase = operation() ? std::string{to_string(operation()->phase)} : "none";
    switch (action) {
      case Action::ScaleUp: {
        act("scale to 3 (in " + phase + ")");
        Json live = world_.live_sts();
        live["spec"]["replicas"] = kReplicas;
        (void)world_.kube.system().update(Kind::StatefulSet, live);
        break;
      }
      case Action::RemoveState:
        act("remove the state annotation (in " + phase + ")");
        world_.kube.mutate_raw(world_.sts(), [](Json& live) {
          Json& annotations = live["metadata"]["annotations"];
          if (annotations.is_object()) annotations.erase(std::string{kStateAnnotation});
        });
        break;
      case Action::EditPhase:
        if (!operation()) return;
        act("edit the phase to Completed (in " + phase + ")");
        world_.kube.mutate_raw(world_.sts(), [](Json& live) {
          Json& annotations = live["metadata"]["annotations"];
          Json state = Json::parse(annotations[std::string{kStateAnnotation}].get<std::string>());
          state["phase"] = "Completed";
          state.erase("awaitingApproval");
          annotations[std::string{kStateAnnotation}] = state.dump();
        });
        break;
      case Action::DeleteJob: {
        const auto jobs = world_.kube.list_raw(Kind::Job, kNs);
        if (jobs.empty()) return;
        const std::string name = k8s::name(jobs[rng_() % jobs.size()]).value_or("");
        act("delete Job " + name + " (in " + phase + ")");
        DeleteOptions background;
        background.propagation = Propagation::Background;
        (void)world_.kube.system().remove(ObjectRef{Kind::Job, kNs, name}, background);
        break;
      }
      case Action::Reapply: {
        act("delete the StatefulSet and apply it again (in " + phase + ")");
        Json manifest = world_.live_sts();
        if (!world_.kube.system().remove(world_.sts())) return;
        world_.settle(2);
        for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generation"}) {
          manifest["metadata"].erase(field);
        }
        manifest["metadata"].erase("annotations");
        manifest.erase("status");
        manifest["spec"]["replicas"] = kReplicas;
        (void)world_.kube.system().create(Kind::StatefulSet, manifest);
        break;
      }
      case Action::Crash:
        act("controller crash (in " + phase + ")");
        engine_ = std::make_unique<Reconciler>(world_.kube, *journal_, world_.clock, world_.events);
        break;
      case Action::LoseJournal:
        if (journal_lost_) return;
        act("journal lost (in " + phase + ")");
        journal_lost_ = true;
        old_journals_.push_back(std::move(journal_));
        journal_ = std::make_unique<MemoryJournal>();
        engine_ = std::make_unique<Reconciler>(world_.kube, *journal_, world_.clock, world_.events);
        break;
      case Action::Count:
        break;
    }
  }

  void check() {
    const Json sts = world_.live_sts();
    const bool refused = k8s::annotation(sts, kResizeStatusAnnotation)
                             .value_or(std::nullopt)
                             .value_or("")
                             .starts_with("rejected: backup claims");
    // Every kept write is on the claim of that name, or in its backup claim.
    for (const auto& [claim, files] : expected_) {
      const auto final_files = world_.cluster.volume_files(world_.claim(claim));
      const auto backup = world_.cluster.volume_files(world_.claim(naming::backup_claim(claim)));
      for (const auto& [path, bytes] : files) {
        const bool on_claim =
            final_files && final_files->contains(path) && final_files->at(path) == bytes;
        const bool in_backup = backup && backup->contains(path) && backup->at(path) == bytes;
        if (!on_claim && !in_backup) failure(claim + " lost " + path);
      }
    }
    // The data the claims held before the resize.
    for (const auto& [claim, files] : world_.original_files) {
      const auto final_files = world_.cluster.volume_files(world_.claim(claim));
      const auto backup = world_.cluster.volume_files(world_.claim(naming::backup_claim(claim)));
      for (const auto& [path, bytes] : files) {
        const bool on_claim =
            final_files && final_files->contains(path) && final_files->at(path) == bytes;
        const bool in_backup = backup && backup->contains(path) && backup->at(path) == bytes;
        if (!on_claim && !in_backup) failure(claim + " lost its original " + path);
      }
    }
    const int replicas = k8s::spec_replicas(sts).value_or(-1);
    if (!refused && replicas != kReplicas) {
      failure("ended at " + std::to_string(replicas) + " replicas, not " +
              std::to_string(kReplicas));
    }
    auto op = read_operation(sts);
    if (op && op->has_value() && !is_terminal((*op)->phase)) {
      std::string objects;
      for (Kind kind : {Kind::Job, Kind::PersistentVolumeClaim, Kind::Pod}) {
        for (const Json& o : world_.kube.list_raw(kind, kNs)) {
          objects += " " + k8s::name(o).value_or("?") +
                     (k8s::is_being_deleted(o).value_or(false) ? "(deleting)" : "");
        }
      }
      failure("did not come to rest: phase " + std::string{to_string((*op)->phase)} +
              "; last reconcile: " + last_ + "; objects:" + objects);
    }
    std::vector<MemoryJournal*> journals{journal_.get()};
    for (auto& old : old_journals_) journals.push_back(old.get());
    for (MemoryJournal* journal : journals) {
      auto streams = journal->operations();
      if (!streams) continue;
      for (const OperationSummary& stream : *streams) {
        auto records = journal->read(stream.operation_id);
        if (!records) continue;
        if (auto folded = fold(*records, PhaseMachine::rules()); !folded) {
          failure("journal of " + stream.operation_id + " does not replay at sequence " +
                  std::to_string(folded.error().sequence) + ": " + folded.error().message);
        }
      }
    }
  }

  std::mt19937_64 rng_;
  SimulatedRun run_;
  ResizeWorld world_;
  std::unique_ptr<MemoryJournal> journal_ = std::make_unique<MemoryJournal>();
  std::vector<std::unique_ptr<MemoryJournal>> old_journals_;
  std::unique_ptr<Reconciler> engine_ =
      std::make_unique<Reconciler>(world_.kube, *journal_, world_.clock, world_.events);
  std::map<std::string, VolumeFiles> expected_;
  std::set<std::string> recreated_uids_;
  int writes_ = 0;
  std::string last_;
  std::multimap<int, Action> schedule_;
  bool journal_lost_ = false;
};

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::strtoull(value, nullptr, 10) : fallback;
}

TEST(Simulation, PeopleAndToolsActingMidResizeNeverCostAWrite) {
  std::vector<std::uint64_t> seeds;
  if (const char* one = std::getenv("STSRESIZE_SIMULATION_SEED"); one && *one) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
  } else {
    const std::uint64_t count = env_number("STSRESIZE_SIMULATION_SEEDS", 200);
    for (std::uint64_t seed = 1; seed <= count; ++seed) seeds.push_back(seed);
  }
  int failed = 0;
  for (std::uint64_t seed : seeds) {
    const SimulatedRun run = Simulation{seed}.run();
    if (run.failures.empty()) continue;
    ++failed;
    std::ostringstream actions;
    for (const std::string& action : run.actions) actions << "\n    " << action;
    std::ostringstream failures;
    for (const std::string& f : run.failures) failures << "\n    " << f;
    ADD_FAILURE() << "seed " << seed << " failed:" << failures.str()
                  << "\n  after:" << actions.str()
                  << "\n  replay it: STSRESIZE_SIMULATION_SEED=" << seed
                  << " build/bin/engine_tests --gtest_filter='Simulation.*'";
    if (failed >= 5) break;  // enough to go on with
  }
}

}  // namespace
}  // namespace stsresize
