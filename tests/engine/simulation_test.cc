// A seeded, reproducible simulation of copy-path resizes (the two-copy path and the rebind path,
// each with every seed) while people and their tools act, in
// the manner of FoundationDB's and TigerBeetle's deterministic simulations: the simulated
// cluster and the manual clock make every run a function of its seed. Between reconciles, at
// random, the application writes through its running pods, a GitOps tool puts spec.replicas
// back, someone scales the set down (to 1 or 0), removes the state annotation, edits its phase,
// removes or edits another stsresize.dev/* annotation (original-replicas, awaiting-approval,
// mode, phase, ...), sets stsresize.dev/mode (the run may also start in manual or step mode: a
// person then approves what waits), deletes a copy Job or a backup claim, deletes the
// StatefulSet and applies it again, the controller crashes or comes back with its journal lost,
// or a second controller with its own empty journal reconciles the same StatefulSet for a
// while (a leader-election handover whose old leader has not stopped: in the same rounds, and
// inside the first's API calls, between its reads and its writes), after which one of the two
// goes on alone.
// After each run:
//   - no claim was deleted while a pod other than the operation's copy Jobs mounted it;
//   - every write the application made through a running pod is on the final claim of that
//     name, or in its retained backup claim, or on a volume kept for a person (Retain, bound to
//     no claim: the rebind path's) (a write onto a recreated claim before its restore
//     was verified is not kept: the restore replaces it; README "When people and tools act");
//     a claim whose backup a person deleted while it was the only copy of its data is not
//     checked (that data is gone by the person's hand);
//   - the replicas end where they started: where the operation that last set them found the
//     set (or, found at 0, the stsresize.dev/original-replicas mark of an operation whose state
//     was removed), or a person's scale made after the operation stopped setting them (unless
//     the journal was lost over unfinished backups or an unreadable mark, where stsresize refuses
//     to act and leaves the set at 0, or a person deleted a backup claim and the operation
//     failed after a source delete, where the set is held at 0 for a person to decide);
//   - every journal stream (of each controller) replays.
// Each path runs twice: on live reads, and with every controller's steps reading through caches
// of its own (tests/support/lagging_caches.h) that catch up at random between its reconciles,
// as the controller's informers do (and always before a reconcile once nobody acts any more).
// STSRESIZE_SIMULATION_SEEDS=N runs N seeds (default 200; 100 on caches) from
// STSRESIZE_SIMULATION_FIRST_SEED (default 1); STSRESIZE_SIMULATION_SEED=S runs one;
// STSRESIZE_SIMULATION_TRACE=1 prints every run's actions and where it ended. A failing seed prints
// the line that replays it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include "engine/actions/request.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/resize_request.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/lagging_caches.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

struct SimulatedRun {
  std::uint64_t seed = 0;
  std::vector<std::string> failures;
  std::vector<std::string> actions;
  std::string outcome;  // where the StatefulSet ended: phase of its state, replicas
};

class Simulation {
 public:
  Simulation(std::uint64_t seed, Path path, bool cached) : rng_(seed), cached_(cached) {
    run_.seed = seed;
    settings_.rebind = path == Path::Rebind;
    reconciler_ = make_reconciler(*journal_);
  }

  // A controller process: with `cached_`, its steps read through caches of its own (a process
  // that starts lists everything afresh), which catch up at random between its reconciles.
  std::unique_ptr<Reconciler> make_reconciler(MemoryJournal& journal) {
    if (!cached_) {
      return std::make_unique<Reconciler>(world_.kube, journal, world_.clock, world_.events,
                                          settings_);
    }
    auto caches = std::make_unique<LaggingCaches>(world_.kube);
    auto reconciler =
        std::make_unique<Reconciler>(caches->reads.live(), journal, world_.clock, world_.events,
                                     settings_, nullptr, &caches->reads);
    caches_[reconciler.get()] = std::move(caches);
    return reconciler;
  }
  // The informers of `reconciler`'s process deliver what they have before it reconciles: the
  // StatefulSet's always (a change to it is what wakes its reconcile, and reaches the cache
  // first: a person's scale, a re-applied object), the others always when `certainly`, else
  // one time in two (a copy Job's event wakes the reconcile while the claims' informer lags).
  void catch_up(const Reconciler& reconciler, bool certainly) {
    auto found = caches_.find(&reconciler);
    if (found == caches_.end()) return;
    if (certainly || rng_() % 2 == 0) {
      found->second->refresh();
    } else {
      found->second->refresh_statefulsets();
    }
  }

  SimulatedRun run() {
    world_.seed(/*expandable=*/false);
    for (const std::string& name : world_.claim_names()) {
      source_uids_[name] = k8s::uid(*world_.kube.get_raw(world_.claim(name))).value_or("");
    }
    watch_writes();
    interleave_second_controller();
    choose_mode();
    plan_disturbances();
    for (int round = 0; round < 400; ++round) {
      disturb(round);
      const ReconcileResult result = reconcile_round();
      if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
        if (round > 80) break;  // rested after the disturbances had their chance
      }
      world_.settle(1 + static_cast<int>(rng_() % 3));
    }
    if (second_) stop_second_controller();
    // Calm: nobody acts any more, but for a person who approves what waits for approval; the
    // operation must come to rest.
    for (int round = 0; round < 600; ++round) {
      catch_up(*reconciler_, /*certainly=*/true);
      const ReconcileResult result = reconciler_->reconcile(kNs, kSts);
      last_ = std::string{to_string(result.kind)} + " " + result.message;
      if (result.is(ReconcileResult::Kind::Idle) || result.is(ReconcileResult::Kind::Terminal)) {
        if (!approve_waiting()) break;
      }
      world_.settle(2);
    }
    world_.settle(10);
    check();
    const Json sts = world_.live_sts();
    const std::optional<Operation> op = operation();
    const std::string last =
        k8s::annotation(sts, kLastOperationAnnotation).value_or(std::nullopt).value_or("");
    const Json summary = Json::parse(last, nullptr, /*allow_exceptions=*/false);
    run_.outcome = op ? std::string{to_string(op->phase)}
                   : summary.is_object()
                       ? "no state, last operation " + summary.value("outcome", std::string{"?"})
                       : "no state";
    run_.outcome += ", " + std::to_string(k8s::spec_replicas(sts).value_or(-1)) + " replicas";
    return run_;
  }

 private:
  void act(std::string what) { run_.actions.push_back(std::move(what)); }
  void failure(std::string what) { run_.failures.push_back(std::move(what)); }

  // Every delete of a claim by the engine: no pod but the copy Jobs' may mount it. Every write
  // of the StatefulSet: who last changed spec.replicas, and what each operation found at its
  // start.
  void watch_writes() {
    sts_replicas_ = kReplicas;
    world_.kube.on_mutation([this](const Mutation& m) {
      if (m.ref == world_.sts()) track_statefulset(m);
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

  // The replica count an operation returns to: what it found, or, found at 0, the
  // original-replicas mark an operation whose state was removed left (states/reconciler.cc
  // begin()). A mark a person removed leaves nothing to go on: 0.
  struct Start {
    int found = 0;
    std::optional<std::string> mark;
    int replicas() const {
      if (found != 0) return found;
      if (!mark) return 0;
      const int value = std::atoi(mark->c_str());
      return value > 0 ? value : 0;
    }
  };
  struct ReplicasWrite {
    bool by_engine = false;
    int replicas = 0;
    std::string operation;  // by_engine: the operation in the state it wrote
    std::string phase;
  };

  void track_statefulset(const Mutation& m) {
    if (m.deleted) {
      sts_replicas_.reset();
      sts_mark_.reset();
      return;
    }
    const int replicas = k8s::spec_replicas(m.object).value_or(-1);
    std::optional<Operation> op;
    if (auto text = k8s::annotation(m.object, kStateAnnotation); text && text->has_value()) {
      if (auto decoded = decode_state_annotation(**text)) op = *decoded;
    }
    if (m.actor == Actor::Client && op) {
      if (!starts_.contains(op->id)) {
        starts_[op->id] = Start{sts_replicas_.value_or(replicas), sts_mark_};
      }
      engine_state_ = op;
    }
    if (!sts_replicas_ || replicas != *sts_replicas_) {
      last_replicas_ = ReplicasWrite{m.actor == Actor::Client, replicas,
                                     m.actor == Actor::Client && op ? op->id : "",
                                     op ? std::string{to_string(op->phase)} : "none"};
    }
    sts_replicas_ = replicas;
    sts_mark_ = k8s::annotation(m.object, kOriginalReplicasAnnotation).value_or(std::nullopt);
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

  // A person runs `stsresize advance --approve` for the transition that waits (mode manual or
  // step). False when nothing waits, or the same approval is already there.
  bool approve_waiting() {
    const std::optional<Operation> op = operation();
    if (!op || !op->awaiting) return false;
    const AdvanceRequest request{
        stsresize::Action::Approve,        op->phase, op->id, "sim", "2027-01-01T00:00:00Z",
        "n" + std::to_string(++approvals_)};
    std::string text = encode_advance_request(request);
    if (auto current = advance_request_of(world_.live_sts())) {
      auto pending = decode_advance_request(*current);
      if (pending && pending->action == stsresize::Action::Approve &&
          pending->operation == op->id && pending->phase == op->phase) {
        return false;  // not taken yet
      }
    }
    act("approve " + std::string{to_string(op->awaiting->from)} + " -> " +
        std::string{to_string(op->awaiting->to)});
    world_.kube.mutate_raw(world_.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = text;
    });
    return true;
  }

  // A quarter of the runs start in manual or step mode (stsresize.dev/mode).
  void choose_mode() {
    if (rng_() % 4 != 0) return;
    const std::string mode = rng_() % 2 == 0 ? "manual" : "step";
    act("mode " + mode + " (before the start)");
    world_.kube.mutate_raw(world_.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{kModeAnnotation}] = mode;
    });
  }

  enum class Action {
    ScaleUp,
    RemoveState,
    EditPhase,
    DeleteJob,
    Reapply,
    Crash,
    LoseJournal,
    ScaleDown,
    SecondController,
    DeleteBackupClaim,
    RemoveAnnotation,
    EditMode,
    Count
  };

  // Between one and six actions, at random rounds: half of them in the first 24, while the
  // operation runs (it completes in about 20 rounds undisturbed), the others in the first 80.
  void plan_disturbances() {
    const int count = 1 + static_cast<int>(rng_() % 6);
    for (int i = 0; i < count; ++i) {
      const int rounds = rng_() % 2 == 0 ? 24 : 80;
      schedule_.emplace(1 + static_cast<int>(rng_() % rounds),
                        static_cast<Action>(rng_() % static_cast<int>(Action::Count)));
    }
  }

  void disturb(int round) {
    // Remember every claim the operation recreated, whatever happens to the annotation later,
    // and every recreated claim whose restore was verified (it holds the data again).
    if (auto op = operation()) {
      for (const ClaimPlan& claim : op->claims) {
        if (!claim.recreated_uid.empty() && !claim.restore_verified) {
          recreated_uids_.insert(claim.recreated_uid);
        }
        if (!claim.recreated_uid.empty() && claim.restore_verified) {
          restored_uids_.insert(claim.recreated_uid);
        }
      }
    }
    write_through_pods();
    if (second_ && round >= second_until_) stop_second_controller();
    if (rng_() % 2 == 0) approve_waiting();
    auto [first, last] = schedule_.equal_range(round);
    for (auto it = first; it != last; ++it) perform(it->second, round);
  }

  // ---- A second controller ----
  enum class Acting { First, Second };

  ReconcileResult reconcile_as(Acting who) {
    const Acting outer = std::exchange(acting_, who);
    Reconciler& reconciler = who == Acting::First ? *reconciler_ : *second_;
    catch_up(reconciler, /*certainly=*/false);
    ReconcileResult result = reconciler.reconcile(kNs, kSts);
    acting_ = outer;
    return result;
  }

  // One round: the first controller's reconcile, and while a second runs, its own before or
  // after it. The first's result drives the loop.
  ReconcileResult reconcile_round() {
    if (!second_) return reconcile_as(Acting::First);
    const bool second_first = rng_() % 2 == 0;
    if (second_first) (void)reconcile_as(Acting::Second);
    ReconcileResult result = reconcile_as(Acting::First);
    if (!second_first) (void)reconcile_as(Acting::Second);
    return result;
  }

  // While two controllers run, before one in four of either's creates, updates and deletes
  // the other reconciles: between the reads the call was decided on and the call itself, as
  // two processes do. Its own calls do not nest further.
  void interleave_second_controller() {
    for (Verb verb : {Verb::Create, Verb::Update, Verb::Remove}) {
      world_.kube.inject(FaultRule{
          .verb = verb, .times = FaultRule::kForever, .action = [this] { interleave(); }});
    }
  }
  void interleave() {
    if (!second_ || nested_ || rng_() % 4 != 0) return;
    nested_ = true;
    ++interleaved_;
    (void)reconcile_as(acting_ == Acting::First ? Acting::Second : Acting::First);
    nested_ = false;
  }

  void stop_second_controller() {
    const std::string phase = operation() ? std::string{to_string(operation()->phase)} : "none";
    const std::string inside =
        " (" + std::to_string(interleaved_) + " reconciles ran inside the other's API calls)";
    if (rng_() % 2 == 0) {
      act("the second controller stops (in " + phase + ")" + inside);
      old_journals_.push_back(std::move(second_journal_));
    } else {
      act("the first controller stops, the second goes on alone (in " + phase + ")" + inside);
      old_journals_.push_back(std::move(journal_));
      journal_ = std::move(second_journal_);
      reconciler_ = std::move(second_);
    }
    second_.reset();
    second_journal_.reset();
    interleaved_ = 0;
  }

  void perform(Action action, int round) {
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
        reconciler_ = make_reconciler(*journal_);
        break;
      case Action::LoseJournal:
        if (journal_lost_) return;
        act("journal lost (in " + phase + ")");
        journal_lost_ = true;
        old_journals_.push_back(std::move(journal_));
        journal_ = std::make_unique<MemoryJournal>();
        reconciler_ = make_reconciler(*journal_);
        break;
      case Action::ScaleDown: {
        // kubectl scale --replicas=1 (or 0): through the API, so the generation moves.
        const int to = static_cast<int>(rng_() % 2);
        Json live = world_.live_sts();
        if (k8s::spec_replicas(live).value_or(-1) == to) return;
        act("scale to " + std::to_string(to) + " (in " + phase + ")");
        scaled_down_ = true;
        live["spec"]["replicas"] = to;
        (void)world_.kube.system().update(Kind::StatefulSet, live);
        break;
      }
      case Action::SecondController: {
        if (second_) return;
        const int rounds = 5 + static_cast<int>(rng_() % 30);
        act("a second controller with an empty journal reconciles too, for " +
            std::to_string(rounds) + " rounds (in " + phase + ")");
        second_journal_ = std::make_unique<MemoryJournal>();
        second_ = make_reconciler(*second_journal_);
        second_until_ = round + rounds;
        break;
      }
      case Action::DeleteBackupClaim: {
        std::vector<std::string> backups;
        for (const std::string& name : world_.claim_names()) {
          auto backup = world_.kube.get_raw(world_.claim(naming::backup_claim(name)));
          if (backup && !k8s::is_being_deleted(*backup).value_or(false)) backups.push_back(name);
        }
        if (backups.empty()) return;
        const std::string claim = backups[rng_() % backups.size()];
        // The data is still on the claim if it is the source, intact, or a recreated claim
        // whose restore was verified; otherwise the backup is its only copy.
        auto live = world_.kube.get_raw(world_.claim(claim));
        const std::string uid = live ? k8s::uid(*live).value_or("") : "";
        const bool on_claim = live && !k8s::is_being_deleted(*live).value_or(false) &&
                              (uid == source_uids_[claim] || restored_uids_.contains(uid));
        act("delete backup claim " + naming::backup_claim(claim) + " (in " + phase + "; " +
            (on_claim ? "the data is on " + claim : "the only copy of " + claim) + ")");
        backup_deleted_ = true;
        if (!on_claim) destroyed_.insert(claim);
        (void)world_.kube.system().remove(world_.claim(naming::backup_claim(claim)));
        break;
      }
      case Action::RemoveAnnotation: {
        // Any stsresize.dev/* annotation but the state (RemoveState, EditPhase).
        std::vector<std::string> keys;
        const Json live = world_.live_sts();
        if (live["metadata"].contains("annotations")) {
          for (const auto& [key, value] : live["metadata"]["annotations"].items()) {
            if (key.starts_with("stsresize.dev/") && key != kStateAnnotation) keys.push_back(key);
          }
        }
        if (keys.empty()) return;
        const std::string key = keys[rng_() % keys.size()];
        const bool edit = key == kOriginalReplicasAnnotation && rng_() % 3 == 0;
        act((edit ? "edit " + key + " to \"three\"" : "remove " + key) + " (in " + phase + ")");
        if (key == kOriginalReplicasAnnotation) mark_edited_ = true;
        world_.kube.mutate_raw(world_.sts(), [&](Json& object) {
          Json& annotations = object["metadata"]["annotations"];
          if (edit) {
            annotations[key] = "three";
          } else {
            annotations.erase(key);
          }
        });
        break;
      }
      case Action::EditMode: {
        static constexpr const char* kModes[] = {"manual", "step", "auto", "manaul"};
        const std::string mode = kModes[rng_() % 4];
        act("set " + std::string{kModeAnnotation} + " to " + mode + " (in " + phase + ")");
        world_.kube.mutate_raw(world_.sts(), [&](Json& live) {
          live["metadata"]["annotations"][std::string{kModeAnnotation}] = mode;
        });
        break;
      }
      case Action::Count:
        break;
    }
  }

  void check() {
    const Json sts = world_.live_sts();
    auto final_op = read_operation(sts);
    const bool has_state = final_op && final_op->has_value();
    const std::string status =
        k8s::annotation(sts, kResizeStatusAnnotation).value_or(std::nullopt).value_or("");
    bool backups_left = false;
    for (const std::string& name : world_.claim_names()) {
      backups_left =
          backups_left || world_.kube.get_raw(world_.claim(naming::backup_claim(name))).has_value();
    }
    // stsresize refuses to act (and leaves the set where it is) over backups no record
    // explains, over an original-replicas mark it cannot read, and over a state it cannot have
    // written when no journal knows the operation (JournalMismatch; README "An edited state is
    // not followed").
    const bool refused =
        (!has_state && ((status.starts_with("rejected: backup claims") && backups_left) ||
                        status.starts_with("rejected: annotation " +
                                           std::string{kOriginalReplicasAnnotation}))) ||
        (has_state && !unwritten_state(**final_op).empty());
    // Every kept write is on the claim of that name, or in its backup claim, or (the rebind
    // path) on a volume kept for a person: Retain and bound to no claim.
    std::vector<VolumeFiles> kept;
    for (const Json& volume : world_.kube.list_raw(Kind::PersistentVolume)) {
      if (volume["spec"].value("persistentVolumeReclaimPolicy", "") != "Retain" ||
          volume["status"].value("phase", "") == "Bound") {
        continue;
      }
      if (auto files = world_.cluster.persistent_volume_files(k8s::name(volume).value_or(""))) {
        kept.push_back(*files);
      }
    }
    const auto has = [](const std::optional<VolumeFiles>& files, const std::string& path,
                        const std::string& bytes) {
      return files && files->contains(path) && files->at(path) == bytes;
    };
    const auto check_kept = [&](const std::map<std::string, VolumeFiles>& wanted,
                                std::string_view what) {
      for (const auto& [claim, files] : wanted) {
        if (destroyed_.contains(claim)) continue;
        const auto final_files = world_.cluster.volume_files(world_.claim(claim));
        const auto backup = world_.cluster.volume_files(world_.claim(naming::backup_claim(claim)));
        for (const auto& [path, bytes] : files) {
          const bool on_kept_volume = std::ranges::any_of(
              kept, [&](const VolumeFiles& volume) { return has(volume, path, bytes); });
          if (!has(final_files, path, bytes) && !has(backup, path, bytes) && !on_kept_volume) {
            failure(claim + " lost " + std::string{what} + path);
          }
        }
      }
    };
    check_kept(expected_, "");
    // The data the claims held before the resize.
    check_kept(world_.original_files, "its original ");
    check_replicas(sts, refused);
    if (has_state && !is_terminal((*final_op)->phase)) {
      std::string objects;
      for (Kind kind : {Kind::Job, Kind::PersistentVolumeClaim, Kind::Pod}) {
        for (const Json& o : world_.kube.list_raw(kind, kNs)) {
          objects += " " + k8s::name(o).value_or("?") +
                     (k8s::is_being_deleted(o).value_or(false) ? "(deleting)" : "");
        }
      }
      failure("did not come to rest: phase " + std::string{to_string((*final_op)->phase)} +
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

  // The replicas end where they started: a person's scale made after the last operation stopped
  // setting them is kept; otherwise the last operation that set them returned the set to what
  // it found when it started (ScalingUp and ScalingBack set Operation::original_replicas). An
  // operation that failed after a source claim was deleted holds the set at 0 for a person
  // (README: held at 0 until every restore is verified): only a person deleting a backup claim
  // may have caused that here.
  void check_replicas(const Json& sts, bool refused) {
    const int replicas = k8s::spec_replicas(sts).value_or(-1);
    if (refused) return;
    // Without a person scaling down, editing the mark or deleting a backup claim: the check as
    // it always was.
    if (!scaled_down_ && !mark_edited_ && !backup_deleted_ && replicas != kReplicas) {
      failure("ended at " + std::to_string(replicas) + " replicas, not " +
              std::to_string(kReplicas));
    }
    if (!last_replicas_ || !last_replicas_->by_engine) {
      const int word = last_replicas_ ? last_replicas_->replicas : kReplicas;
      if (replicas != word) {
        failure("ended at " + std::to_string(replicas) + " replicas, not the " +
                std::to_string(word) + " a person set last");
      }
      return;
    }
    if (engine_state_ && engine_state_->phase == Phase::Failed &&
        !engine_state_->sources_intact()) {
      if (!backup_deleted_) {
        failure("operation " + engine_state_->id + " failed after a source claim was deleted (" +
                engine_state_->failure + ")");
      } else if (replicas != 0) {
        failure("ended at " + std::to_string(replicas) +
                " replicas, though its operation failed with data outside the claims");
      }
      return;
    }
    auto start = starts_.find(last_replicas_->operation);
    if (start == starts_.end()) {
      failure("replicas last set to " + std::to_string(last_replicas_->replicas) + " in " +
              last_replicas_->phase + " by an operation whose start was not seen");
      return;
    }
    if (replicas != start->second.replicas()) {
      failure("ended at " + std::to_string(replicas) + " replicas (set by operation " +
              start->first + " in " + last_replicas_->phase + "), not the " +
              std::to_string(start->second.replicas()) + " it found when it started");
    }
  }

  std::mt19937_64 rng_;
  bool cached_ = false;
  // Each controller process's caches (cached_ only), kept as long as the test runs.
  std::map<const Reconciler*, std::unique_ptr<LaggingCaches>> caches_;
  SimulatedRun run_;
  EngineSettings settings_;
  ResizeWorld world_;
  std::unique_ptr<MemoryJournal> journal_ = std::make_unique<MemoryJournal>();
  std::vector<std::unique_ptr<MemoryJournal>> old_journals_;
  std::unique_ptr<Reconciler> reconciler_;
  std::map<std::string, VolumeFiles> expected_;
  std::set<std::string> recreated_uids_;
  std::set<std::string> restored_uids_;
  std::map<std::string, std::string> source_uids_;  // the claims' uids before the resize
  int writes_ = 0;
  int approvals_ = 0;
  std::string last_;
  std::multimap<int, Action> schedule_;
  bool journal_lost_ = false;
  // The second controller, while it runs.
  std::unique_ptr<MemoryJournal> second_journal_;
  std::unique_ptr<Reconciler> second_;
  int second_until_ = 0;
  Acting acting_ = Acting::First;
  bool nested_ = false;
  int interleaved_ = 0;
  // Backup claims a person deleted: any, and the claims whose only copy went with them.
  bool backup_deleted_ = false;
  std::set<std::string> destroyed_;
  bool scaled_down_ = false;
  bool mark_edited_ = false;
  // The StatefulSet as last written, who last changed its replicas, each operation's start.
  std::optional<int> sts_replicas_;
  std::optional<std::string> sts_mark_;
  std::optional<ReplicasWrite> last_replicas_;
  std::map<std::string, Start> starts_;
  std::optional<Operation> engine_state_;  // the state the engine last wrote
};

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::strtoull(value, nullptr, 10) : fallback;
}

struct SimulationParam {
  Path path = Path::Copy;
  bool cached = false;  // the steps read through caches a moment behind, as in the controller
};
class SimulationOnEachPath : public ::testing::TestWithParam<SimulationParam> {};

TEST_P(SimulationOnEachPath, PeopleAndToolsActingMidResizeNeverCostAWrite) {
  std::vector<std::uint64_t> seeds;
  if (const char* one = std::getenv("STSRESIZE_SIMULATION_SEED"); one && *one) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
  } else {
    // Half as many seeds on caches: each run is longer, and the people and tools are the same.
    const std::uint64_t count =
        env_number("STSRESIZE_SIMULATION_SEEDS", GetParam().cached ? 100 : 200);
    const std::uint64_t first = env_number("STSRESIZE_SIMULATION_FIRST_SEED", 1);
    for (std::uint64_t seed = first; seed < first + count; ++seed) seeds.push_back(seed);
  }
  const bool trace = env_number("STSRESIZE_SIMULATION_TRACE", 0) != 0;
  int failed = 0;
  for (std::uint64_t seed : seeds) {
    const SimulatedRun run = Simulation{seed, GetParam().path, GetParam().cached}.run();
    if (trace) {
      std::cout << "seed " << seed << (run.failures.empty() ? " passed" : " FAILED") << " ("
                << run.outcome << "):";
      for (const std::string& action : run.actions) std::cout << "\n    " << action;
      std::cout << "\n";
    }
    if (run.failures.empty()) continue;
    ++failed;
    std::ostringstream actions;
    for (const std::string& action : run.actions) actions << "\n    " << action;
    std::ostringstream failures;
    for (const std::string& f : run.failures) failures << "\n    " << f;
    ADD_FAILURE() << "seed " << seed << " failed:" << failures.str()
                  << "\n  after:" << actions.str()
                  << "\n  replay it: STSRESIZE_SIMULATION_SEED=" << seed
                  << " build/bin/engine_tests --gtest_filter='*/SimulationOnEachPath.*/"
                  << to_string(GetParam().path) << (GetParam().cached ? "OnCaches" : "") << "'";
    if (failed >= 5) break;  // enough to go on with
  }
}

INSTANTIATE_TEST_SUITE_P(
    Paths, SimulationOnEachPath,
    ::testing::Values(SimulationParam{Path::Copy, false}, SimulationParam{Path::Rebind, false},
                      SimulationParam{Path::Copy, true}, SimulationParam{Path::Rebind, true}),
    [](const auto& info) {
      return std::string{to_string(info.param.path)} + (info.param.cached ? "OnCaches" : "");
    });

}  // namespace
}  // namespace stsresize
