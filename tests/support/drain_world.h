#pragma once
// The simulated cluster of the drain's engine tests: shop/web (3 replicas, claims data-web-N and
// logs-web-N with seeded files, nothing to resize) carrying a cleanup pod template, whose cleanup
// pods run through the world's pod runner: each records what it ran on and, when it succeeds,
// moves the files of its "data" volume off the claim (to the other replicas, in real life).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/fold.h"
#include "engine/vocabulary.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize::testing {

inline const Json kCleanupTemplate = {
    {"metadata", {{"labels", {{"app", "web-cleanup"}}}}},
    {"spec",
     {{"containers",
       Json::array(
           {{{"name", "drain"},
             {"image", "busybox"},
             {"command", Json::array({"sh", "-c", "move /data to the other replicas"})},
             {"volumeMounts", Json::array({{{"name", "data"}, {"mountPath", "/data"}}})}}})}}}};

// Every operation of `journal` folds (the tables of its kind accept every transition).
inline void expect_journal_consistent(MemoryJournal& journal) {
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  for (const auto& summary : *operations) {
    auto records = journal.read(summary.operation_id);
    ASSERT_TRUE(records);
    auto folded = fold(*records, PhaseMachine::rules());
    EXPECT_TRUE(folded) << summary.operation_id << ": " << folded.error().message;
  }
}

struct DrainWorldOptions {
  bool cleanup_template = true;  // false: none (a claim policy's drain, or none at all)
  // Nothing to resize by default; "2Gi" with ResizeTrigger::Request: a copy-path resize wanted.
  std::string to_size = "1Gi";
  ResizeTrigger trigger = ResizeTrigger::Template;
};

struct DrainWorld {
  ResizeWorld world;
  MemoryJournal journal;
  std::vector<Json> cleanup_pods;            // every cleanup pod run, as it was when it ran
  std::map<std::string, VolumeFiles> moved;  // by pod name: what a succeeded cleanup moved
  std::set<std::string> cleaned;             // pod names whose cleanup succeeded
  // nullopt: a cleanup keeps running; else its exit code.
  std::optional<int> cleanup_exit = 0;

  explicit DrainWorld(const DrainWorldOptions& options = {}) {
    world.seed(/*expandable=*/false, options.to_size, options.trigger);
    if (options.cleanup_template) {
      annotate(kScaledownPodTemplateAnnotation, kCleanupTemplate.dump());
    }
    world.cluster.set_pod_runner(
        [this](const Json& pod,
               std::map<std::string, VolumeFiles*>& volumes) -> std::optional<JobRun> {
          cleanup_pods.push_back(pod);
          if (!cleanup_exit) return std::nullopt;
          if (*cleanup_exit == 0) {
            const std::string name = pod["metadata"]["name"];
            cleaned.insert(name);
            if (volumes.contains("data")) {
              moved[name] = *volumes["data"];
              volumes["data"]->clear();
            }
          }
          return JobRun{*cleanup_exit, ""};
        });
  }
  DrainWorld(const DrainWorld&) = delete;
  DrainWorld& operator=(const DrainWorld&) = delete;

  // The StatefulSet scaled, and its controller given the time to act on it.
  void scale_to(int replicas) {
    world.kube.mutate_raw(world.sts(), [&](Json& live) { live["spec"]["replicas"] = replicas; });
    world.settle(3);
  }

  void annotate(std::string_view key, const std::string& value) {
    world.kube.mutate_raw(world.sts(), [&](Json& live) {
      live["metadata"]["annotations"][std::string{key}] = value;
    });
  }
  std::string annotation(std::string_view key) const {
    const Json sts = world.live_sts();
    return sts["metadata"].value("annotations", Json::object()).value(std::string{key}, "");
  }
  std::string phase() const { return annotation(kPhaseAnnotation); }

  // Reconciles (2 s of cluster time between two) until `reached`.
  ReconcileResult until(Reconciler& reconciler, const std::string& goal,
                        std::function<bool()> reached, int limit = 60) {
    return reconcile_until(
        reconciler, world, {goal, [&](const ReconcileResult&) { return reached(); }},
        {.limit = limit, .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}}});
  }
  // Until the cleanup pod `name` runs.
  ReconcileResult until_cleanup_runs(Reconciler& reconciler, const std::string& name) {
    return until(reconciler, "cleanup pod " + name + " running", [&] {
      auto pod = world.kube.get_raw({Kind::Pod, kNs, name});
      return pod && (*pod)["status"].value("phase", "") == "Running" &&
             (*pod)["metadata"]
                 .value("annotations", Json::object())
                 .contains(std::string{kScaledownPodOwnerAnnotation});
    });
  }
  // Until the phase annotation says `phase`.
  ReconcileResult until_phase(Reconciler& reconciler, const std::string& phase, int limit = 20) {
    return until(
        reconciler, "phase " + phase, [&] { return this->phase() == phase; }, limit);
  }
  // Until idle (Terminal fails the test), then the cluster finishes what it was asked (deleted
  // claims lose their protection finalizer once no pod uses them).
  ReconcileResult run_to_idle(Reconciler& reconciler) {
    return run_until(reconciler, idle(), true);
  }
  // The same, a Terminal result (refused for good) allowed.
  ReconcileResult run_to_rest(Reconciler& reconciler) {
    return run_until(reconciler, at_rest(), false);
  }
  ReconcileResult run_until(Reconciler& reconciler, const Until& goal, bool terminal_fails) {
    ReconcileResult result =
        reconcile_until(reconciler, world, goal,
                        {.limit = 400,
                         .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}},
                         .terminal_fails = terminal_fails});
    world.settle(3);
    return result;
  }

  bool claim_exists(const std::string& name) const {
    return world.kube.get_raw(world.claim(name)).has_value();
  }
  std::string claim_uid(const std::string& name) const {
    return world.kube.get_raw(world.claim(name))->at("metadata").at("uid");
  }
  // Cleanup pods the cluster was asked to create (uids), by name.
  std::map<std::string, std::set<std::string>> cleanup_pod_uids() const {
    std::map<std::string, std::set<std::string>> uids;
    for (const Json& pod : cleanup_pods) {
      uids[pod["metadata"]["name"].get<std::string>()].insert(
          pod["metadata"].value("uid", std::string{}));
    }
    return uids;
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
  void expect_journal_consistent() { testing::expect_journal_consistent(journal); }
};

}  // namespace stsresize::testing
