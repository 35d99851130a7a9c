// Crash-resume: for EVERY k, the engine is destroyed right after its k-th side effect (the
// fake's mutation budget makes every later call fail) and a new engine, built from the
// cluster and the journal (or from the cluster alone, with a fresh journal), must converge —
// without deleting data before a verified copy exists, without creating anything twice, and,
// for an explicit request, without ever losing the StatefulSet's definition. The copy path is
// the rebind path unless a scenario says two copies; both end with every volume as it began.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "adapters/journal/sqlite_journal.h"
#include "engine/k8s_objects.h"
#include "engine/resize_request.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"
#include "tests/support/scratch_dir.h"

namespace stsresize {
namespace {

using namespace testing;

enum class JournalFate { Kept, Lost };
enum class Outcome { Completed, Failed };

struct Scenario {
  bool expandable = false;
  int failing_job_pods = 0;
  bool corrupt_copy = false;
  Outcome outcome = Outcome::Completed;
  ResizeTrigger trigger = ResizeTrigger::Template;
  std::string mode{};  // stsresize.dev/mode; empty: not set (auto)
  // The copy path: the rebind path (one copy) unless the controller may not rebind.
  bool two_copies = false;
  // With mode manual: a person aborts, instead of approving, what waits to leave this phase.
  std::optional<Phase> abort_in = std::nullopt;
  // What the templates (or the request) ask for; below 1Gi a shrink, measured first (the
  // seeded claims hold about 150 bytes: "1Ki" fits, "150" does not).
  std::string to_size = "2Gi";
  // stsresize.dev/strategy: rolling: one ordinal at a time, the other replicas Ready.
  bool rolling = false;
};

void seed_for(ResizeWorld& world, const Scenario& scenario) {
  world.seed(scenario.expandable, scenario.to_size, scenario.trigger);
  if (scenario.rolling) {
    world.kube.mutate_raw(world.sts(), [](Json& live) {
      live["metadata"]["annotations"][std::string{kStrategyAnnotation}] = "rolling";
    });
  }
}

ObjectRef definition_ref() {
  return ObjectRef{Kind::ConfigMap, kNs, naming::definition_config_map(kSts)};
}

std::map<std::string, std::string> pod_uids(const ResizeWorld& world) {
  std::map<std::string, std::string> uids;
  for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
    uids[pod["metadata"]["name"].get<std::string>()] = pod["metadata"]["uid"].get<std::string>();
  }
  return uids;
}

// Both templates of a StatefulSet (or of its stored definition) ask for `size`.
void expect_templates(const Json& statefulset, const std::string& size) {
  auto templates = k8s::claim_templates(statefulset);
  ASSERT_TRUE(templates) << templates.error();
  ASSERT_EQ(templates->size(), 2u);
  for (const auto& tmpl : *templates) {
    EXPECT_EQ(tmpl.storage, *Quantity::parse(size)) << tmpl.name;
  }
}

EngineSettings settings_for(const Scenario& scenario) {
  EngineSettings settings;
  settings.poll_interval = std::chrono::seconds{2};
  settings.rebind = !scenario.two_copies;
  // One attempt per copy, so that an injected failure fails the Job.
  if (scenario.failing_job_pods > 0 || scenario.corrupt_copy) settings.copy_job.backoff_limit = 0;
  return settings;
}

// Safety properties checked at the moment each write happens.
struct Watch {
  std::vector<std::string> violations;
  bool replicas_dropped = false;
  int source_deletes = 0;
  int statefulset_deletes = 0;
  // A rolling resize's pauses: deletes of the StatefulSet that its finalizer holds.
  int pauses = 0;
  // The fewest pods of the set Ready and not being deleted, seen at any write.
  int min_ready = kReplicas;
  std::map<std::string, std::string> pods_at_start;  // name -> uid
};

void watch(ResizeWorld& world, Watch& out, const std::string& to_size) {
  std::set<std::string> sources;
  for (const auto& name : world.claim_names()) sources.insert(name);
  world.kube.on_mutation([&world, &out, sources, to_size](const Mutation& m) {
    int ready = 0;
    for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
      const std::string name = pod["metadata"]["name"];
      if (!name.starts_with(std::string{kSts} + "-") ||
          name.find("stsresize") != std::string::npos ||
          pod["metadata"].contains("deletionTimestamp")) {
        continue;
      }
      for (const Json& c : pod.value("status", Json::object()).value("conditions", Json::array())) {
        if (c.value("type", "") == "Ready" && c.value("status", "") == "True") ++ready;
      }
    }
    out.min_ready = std::min(out.min_ready, ready);
    if (m.actor != Actor::Client) return;
    if (m.verb == Verb::Remove && m.ref.kind == Kind::PersistentVolumeClaim &&
        sources.contains(m.ref.name)) {
      ++out.source_deletes;
      const auto backup = world.cluster.volume_files(world.claim(naming::backup_claim(m.ref.name)));
      // The rebind path's scale-back deletes the claim on the copy once its own volume, kept
      // Retain, holds the data: so must a volume other than the claim's.
      const auto live = world.kube.get_raw(world.claim(m.ref.name));
      const std::string own = live ? live->at("spec").value("volumeName", "") : "";
      bool kept_elsewhere = false;
      for (const Json& volume : world.kube.list_raw(Kind::PersistentVolume)) {
        const std::string name = volume["metadata"]["name"];
        kept_elsewhere =
            kept_elsewhere ||
            (name != own && volume["spec"].value("persistentVolumeReclaimPolicy", "") == "Retain" &&
             world.cluster.persistent_volume_files(name) == world.original_files.at(m.ref.name));
      }
      if ((!backup || *backup != world.original_files.at(m.ref.name)) && !kept_elsewhere) {
        out.violations.push_back("source " + m.ref.name +
                                 " deleted without a backup or a kept volume holding identical "
                                 "content");
      }
    }
    if (m.ref.kind == Kind::StatefulSet &&
        m.object["spec"].value("replicas", kReplicas) < kReplicas) {
      out.replicas_dropped = true;
    }
    const Json finalizers = m.object.is_object() && m.object.contains("metadata")
                                ? m.object["metadata"].value("finalizers", Json::array())
                                : Json::array();
    const bool held =
        std::ranges::find(finalizers, Json(std::string{kRollingFinalizer})) != finalizers.end();
    if (m.verb == Verb::Remove && m.ref.kind == Kind::StatefulSet && held) {
      ++out.pauses;  // held: its pods stay, nothing of the definition is lost
    } else if (m.verb == Verb::Remove && m.ref.kind == Kind::StatefulSet) {
      ++out.statefulset_deletes;
      const auto config_map = world.kube.get_raw(definition_ref());
      auto definition = config_map
                            ? definition_from_config_map(*config_map, kNs, kSts)
                            : std::expected<Json, std::string>{std::unexpect, "no ConfigMap"};
      if (!definition) {
        out.violations.push_back("StatefulSet deleted without its stored definition: " +
                                 definition.error());
      } else if (k8s::claim_templates(*definition)->front().storage != *Quantity::parse(to_size)) {
        out.violations.push_back("StatefulSet deleted; the stored definition has old templates");
      }
    }
    // A paused StatefulSet goes when its finalizer is removed: only while its definition, with
    // the operation's state, is in the ConfigMap, and once no pod is its dependent any more.
    if (m.verb == Verb::Update && m.ref.kind == Kind::StatefulSet && !world.kube.get_raw(m.ref)) {
      const auto config_map = world.kube.get_raw(definition_ref());
      auto definition = config_map
                            ? definition_from_config_map(*config_map, kNs, kSts)
                            : std::expected<Json, std::string>{std::unexpect, "no ConfigMap"};
      if (!definition) {
        out.violations.push_back("paused StatefulSet let go without its stored definition: " +
                                 definition.error());
      } else if (auto state = read_operation(*definition); !state || !state->has_value()) {
        out.violations.push_back("paused StatefulSet let go; its definition holds no state");
      }
      for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
        for (const Json& owner : pod["metadata"].value("ownerReferences", Json::array())) {
          if (owner.value("uid", "") == m.object["metadata"].value("uid", "")) {
            out.violations.push_back("paused StatefulSet let go while pod " +
                                     pod["metadata"].value("name", "") + " is its dependent");
          }
        }
      }
    }
  });
  out.pods_at_start = pod_uids(world);
}

enum class Stop { Idle, Crashed, Terminal, OutOfRounds };

Stop drive(ResizeWorld& world, Reconciler& reconciler, std::optional<int> crash_after,
           std::optional<Phase> abort_in = std::nullopt) {
  Stop stop = Stop::OutOfRounds;
  int round = 0;
  // Terminal is told from a crash here, not failed at once by reconcile_until: the crash is
  // checked first.
  reconcile_until(
      reconciler, world,
      {"a crash or rest",
       [&](const ReconcileResult& result) {
         if (crash_after && world.kube.mutations() >= *crash_after) {
           stop = Stop::Crashed;
         } else if (result.is(ReconcileResult::Kind::Terminal)) {
           ADD_FAILURE() << "terminal: " << result.message;
           stop = Stop::Terminal;
         } else if (result.is(ReconcileResult::Kind::Idle) &&
                    // A person approves what waits (stsresize.dev/mode manual or step), then it
                    // goes on; or aborts it.
                    !approve_waiting(
                        world, "operator", "nonce-" + std::to_string(round),
                        abort_in && awaiting(world) && awaiting(world)->from == *abort_in
                            ? Action::Abort
                            : Action::Approve)) {
           stop = Stop::Idle;
         }
         ++round;
         return stop != Stop::OutOfRounds;
       }},
      {.limit = 600,
       .pace = {.ticks = 1, .tick_length = std::chrono::seconds{2}},
       .terminal_fails = false});
  return stop;
}

// `claims_twice`: the rebind path's scale-back creates each claim a second time, on its own
// volume.
void expect_no_double_creation(const ResizeWorld& world, bool claims_twice, int recreations = 1) {
  std::map<std::string, int> creations;
  for (const Mutation& m : world.kube.history()) {
    if (m.actor == Actor::Client && m.verb == Verb::Create) {
      ++creations[std::string{to_string(m.ref.kind)} + " " + m.ref.name];
    }
  }
  for (const auto& [what, count] : creations) {
    const bool a_claim = std::ranges::any_of(world.claim_names(), [&](const std::string& name) {
      return what == "PersistentVolumeClaim " + name;
    });
    const bool recreated = what == "StatefulSet " + std::string{kSts} ||
                           what == "ConfigMap " + naming::definition_config_map(kSts);
    EXPECT_EQ(count, claims_twice && a_claim ? 2
                     : recreated             ? recreations
                                             : 1)
        << what << " created " << count << " times";
  }
}

// Every volume as it began: bound, with its class's reclaim policy (Delete) put back; no volume
// left over (a copy or an old volume, once the PV controller has deleted what was released:
// the operation does not wait for it; the caller lets the cluster tick).
void expect_volumes_as_they_began(const ResizeWorld& world) {
  const auto volumes = world.kube.list_raw(Kind::PersistentVolume);
  EXPECT_EQ(volumes.size(), world.claim_names().size());
  for (const Json& volume : volumes) {
    EXPECT_EQ(volume["status"].value("phase", ""), "Bound") << volume["metadata"]["name"];
    EXPECT_EQ(volume["spec"].value("persistentVolumeReclaimPolicy", ""), "Delete")
        << volume["metadata"]["name"];
  }
}

void expect_nothing_of_ours_left(const ResizeWorld& world) {
  for (const Json& pvc : world.kube.list_raw(Kind::PersistentVolumeClaim, kNs)) {
    EXPECT_EQ(pvc["metadata"]["name"].get<std::string>().find("-stsresize-"), std::string::npos)
        << pvc["metadata"]["name"];
  }
  EXPECT_TRUE(world.kube.list_raw(Kind::Job, kNs).empty());
}

// The journal of the one operation folds without error to `phase`.
// `may_be_empty`: the journal was lost after the operation had already finished.
void expect_journal_folds_to(Journal& journal, Phase phase, bool may_be_empty) {
  auto operations = journal.operations();
  ASSERT_TRUE(operations);
  if (may_be_empty && operations->empty()) return;
  ASSERT_EQ(operations->size(), 1u);
  auto records = journal.read(operations->front().operation_id);
  ASSERT_TRUE(records);
  auto folded = fold(*records, PhaseMachine::rules());
  ASSERT_TRUE(folded) << "sequence " << folded.error().sequence << ": " << folded.error().message;
  EXPECT_EQ(folded->phase, phase);
  EXPECT_EQ(folded->last_sequence, static_cast<std::int64_t>(records->size()));
}

void expect_outcome(ResizeWorld& world, Journal& journal, const Watch& watched,
                    const Scenario& scenario, bool journal_may_be_empty = false) {
  for (const std::string& violation : watched.violations) ADD_FAILURE() << violation;
  if (scenario.expandable) {
    EXPECT_FALSE(watched.replicas_dropped);
  }
  // A rolling resize creates the StatefulSet again after each ordinal; completed, after all 3.
  // (An explicit request's UpdatingTemplate created it once before.)
  const int request = scenario.trigger == ResizeTrigger::Request ? 1 : 0;
  expect_no_double_creation(
      world, scenario.abort_in && !scenario.two_copies,
      scenario.rolling && scenario.outcome == Outcome::Completed ? kReplicas + request : 1);
  if (scenario.rolling && scenario.outcome == Outcome::Completed) {
    EXPECT_EQ(watched.pauses, kReplicas);
    EXPECT_GE(watched.min_ready, kReplicas - 1) << "more than one replica down at once";
  }
  if (scenario.expandable) {
    // Expansion, and the Orphan re-create of an explicit request, restart no pod.
    EXPECT_EQ(pod_uids(world), watched.pods_at_start);
  }
  ASSERT_TRUE(world.kube.get_raw(world.sts())) << "the StatefulSet is gone";
  const Json sts = world.live_sts();
  EXPECT_FALSE(world.kube.get_raw(definition_ref())) << "definition ConfigMap left behind";
  if (scenario.trigger == ResizeTrigger::Request) {
    expect_templates(sts, scenario.outcome == Outcome::Completed ? scenario.to_size : "1Gi");
    EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kResizeRequestAnnotation}));
    EXPECT_FALSE(sts["metadata"]["annotations"].contains(std::string{kResizeStatusAnnotation}));
  }
  EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
  world.settle(2);  // ScalingBack does not wait for Ready
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  const Json& annotations = sts["metadata"]["annotations"];
  const Quantity target =
      *Quantity::parse(scenario.outcome == Outcome::Completed ? scenario.to_size : "1Gi");
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::requested_storage(*pvc), target) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name)) << name;
  }
  expect_nothing_of_ours_left(world);
  expect_volumes_as_they_began(world);
  if (scenario.outcome == Outcome::Completed) {
    EXPECT_FALSE(annotations.contains(std::string{kStateAnnotation}));
    EXPECT_FALSE(annotations.contains(std::string{kPhaseAnnotation}));
    EXPECT_TRUE(annotations.contains(std::string{kLastOperationAnnotation}));
    expect_journal_folds_to(journal, Phase::Completed, journal_may_be_empty);
  } else {
    auto op = read_operation(sts);
    ASSERT_TRUE(op && op->has_value());
    EXPECT_EQ((*op)->phase, Phase::Failed);
    EXPECT_FALSE((*op)->failure.empty());
    EXPECT_TRUE(is_marked_failed(sts));
    expect_journal_folds_to(journal, Phase::Failed, journal_may_be_empty);
  }
}

// An uninterrupted run; returns the number of side effects it took.
int clean_run(const Scenario& scenario) {
  ResizeWorld world;
  seed_for(world, scenario);
  if (!scenario.mode.empty()) set_mode(world, scenario.mode);
  if (scenario.failing_job_pods) world.cluster.fail_next_job_pods(scenario.failing_job_pods);
  if (scenario.corrupt_copy) world.cluster.corrupt_next_copy();
  Watch watched;
  watch(world, watched, scenario.to_size);
  MemoryJournal journal;
  // Journal first, then act: every create and delete the engine makes has its ActionIntended
  // (same action, same target) in the journal before the call reaches the cluster.
  std::map<std::string, int> acted;
  std::vector<std::string> unjournaled;
  world.kube.on_mutation([&](const Mutation& m) {
    if (m.actor != Actor::Client || (m.verb != Verb::Create && m.verb != Verb::Remove)) return;
    const std::string act =
        std::string{m.verb == Verb::Create ? "create" : "delete"} + " " + to_string(m.ref);
    const int done = ++acted[act];
    int intended = 0;
    for (const OperationSummary& summary :
         journal.operations().value_or(std::vector<OperationSummary>{})) {
      for (const JournalRecord& record :
           journal.read(summary.operation_id).value_or(std::vector<JournalRecord>{})) {
        auto entry = decode_entry(record);
        const auto* intent = entry ? std::get_if<entries::ActionIntended>(&*entry) : nullptr;
        if (intent && intent->action + " " + intent->target == act) ++intended;
      }
    }
    if (intended < done) unjournaled.push_back(act);
  });
  {
    Reconciler reconciler{world.kube, journal, world.clock, world.events, settings_for(scenario)};
    EXPECT_EQ(drive(world, reconciler, std::nullopt, scenario.abort_in), Stop::Idle);
  }
  EXPECT_TRUE(unjournaled.empty()) << "acted before journaling the intent: " << unjournaled.front();
  if (!scenario.expandable) {
    EXPECT_FALSE(acted.empty());  // the copy path creates and deletes
  }
  expect_outcome(world, journal, watched, scenario);
  // The scenario really took the path it is named after.
  const bool copied = !scenario.expandable && scenario.outcome == Outcome::Completed;
  const bool put_back = scenario.abort_in && !scenario.two_copies;
  EXPECT_EQ(watched.source_deletes, copied ? 6 : put_back ? 12 : 0);
  // One copy per claim on the rebind path; a backup and a restore on the two-copy path.
  int copy_jobs = 0;
  int measure_jobs = 0;
  int pre_copy_jobs = 0;
  for (const Mutation& m : world.kube.history()) {
    if (m.actor != Actor::Client || m.verb != Verb::Create || m.ref.kind != Kind::Job) continue;
    ++(m.ref.name.ends_with("-stsresize-measure")   ? measure_jobs
       : m.ref.name.ends_with("-stsresize-precopy") ? pre_copy_jobs
                                                    : copy_jobs);
  }
  if (copied) {
    EXPECT_EQ(copy_jobs, scenario.two_copies ? 12 : 6);
    // And one pre-copy each, whatever crashed meanwhile.
    EXPECT_EQ(pre_copy_jobs, 6);
  }
  EXPECT_LE(pre_copy_jobs, scenario.expandable ? 0 : 6);
  // A shrink measures each claim once, before anything else.
  const bool shrink = *Quantity::parse(scenario.to_size) < *Quantity::parse("1Gi");
  EXPECT_EQ(measure_jobs, shrink ? 6 : 0);
  EXPECT_EQ(
      watched.statefulset_deletes,
      scenario.trigger == ResizeTrigger::Request && scenario.outcome == Outcome::Completed ? 1 : 0);
  // Every replica count kept: a rolling resize pauses, it never scales.
  if (scenario.rolling) {
    EXPECT_FALSE(watched.replicas_dropped);
  }
  EXPECT_EQ(world.events.contains(scenario.abort_in ? "ResizeAborted" : "ResizeFailed"),
            scenario.outcome == Outcome::Failed);
  if (scenario.outcome == Outcome::Failed) {
    bool scaled_back = false;
    for (const auto& e : world.events.events()) {
      scaled_back = scaled_back || e.message.find("-> ScalingBack") != std::string::npos;
    }
    EXPECT_TRUE(scaled_back);
  }
  if (!scenario.mode.empty()) {
    EXPECT_TRUE(world.events.contains("AwaitingApproval"));
    EXPECT_FALSE(world.events.contains("AdvanceRefused"));
  }
  std::cout << "uninterrupted run: " << world.kube.mutations() << " side effects\n";
  return world.kube.mutations();
}

std::unique_ptr<Journal> open_journal(bool sqlite, const std::filesystem::path& path) {
  if (!sqlite) return std::make_unique<MemoryJournal>();
  std::filesystem::remove(path);
  auto journal = SqliteJournal::open(path);
  EXPECT_TRUE(journal) << journal.error().message;
  return std::move(*journal);
}

void crash_after(int k, const Scenario& scenario, JournalFate fate, bool sqlite) {
  // A directory of its own (not a pid-named file in /tmp): a -wal left beside a same-named
  // database by a killed process would be replayed into the new one.
  const testing_support::ScratchDir scratch;
  const auto path = scratch.file("journal.db");
  ResizeWorld world;
  seed_for(world, scenario);
  if (!scenario.mode.empty()) set_mode(world, scenario.mode);
  if (scenario.failing_job_pods) world.cluster.fail_next_job_pods(scenario.failing_job_pods);
  if (scenario.corrupt_copy) world.cluster.corrupt_next_copy();
  Watch watched;
  watch(world, watched, scenario.to_size);
  std::unique_ptr<Journal> journal = open_journal(sqlite, path);
  world.kube.set_mutation_budget(k);
  {
    Reconciler reconciler{world.kube, *journal, world.clock, world.events, settings_for(scenario)};
    ASSERT_EQ(drive(world, reconciler, k, scenario.abort_in), Stop::Crashed);
  }
  world.kube.set_mutation_budget(std::nullopt);
  // The definition survives every crash: the StatefulSet, or else the ConfigMap, holds it.
  std::optional<Json> holder = world.kube.get_raw(world.sts());
  if (!holder) {
    auto config_map = world.kube.get_raw(definition_ref());
    ASSERT_TRUE(config_map) << "StatefulSet gone and no stored definition";
    auto definition = definition_from_config_map(*config_map, kNs, kSts);
    ASSERT_TRUE(definition) << definition.error();
    expect_templates(*definition, scenario.to_size);
    holder = std::move(*definition);
  }
  auto at_crash = read_operation(*holder);
  ASSERT_TRUE(at_crash) << at_crash.error();
  const bool finished_before_crash = !at_crash->has_value() || (*at_crash)->phase == Phase::Failed;
  if (fate == JournalFate::Lost) {
    journal.reset();
    journal = open_journal(sqlite, path);
  } else if (sqlite) {
    journal.reset();  // closed by the dying process, reopened by the new one
    auto reopened = SqliteJournal::open(path);
    ASSERT_TRUE(reopened);
    journal = std::move(*reopened);
  }
  {
    Reconciler reconciler{world.kube, *journal, world.clock, world.events, settings_for(scenario)};
    ASSERT_EQ(drive(world, reconciler, std::nullopt, scenario.abort_in), Stop::Idle);
  }
  expect_outcome(world, *journal, watched, scenario,
                 fate == JournalFate::Lost && finished_before_crash);
  if (fate == JournalFate::Lost && !finished_before_crash) {
    // The new engine had only the annotation to go on, and said so in the journal.
    auto operations = journal->operations();
    ASSERT_TRUE(operations && operations->size() == 1u);
    auto first = journal->read(operations->front().operation_id, 0);
    ASSERT_TRUE(first && !first->empty());
    EXPECT_EQ(first->front().type, "Resumed");
  }
  journal.reset();
  std::filesystem::remove(path);
}

void every_k(const Scenario& scenario, JournalFate fate, bool sqlite = false, int stride = 1) {
  const int total = clean_run(scenario);
  ASSERT_GT(total, 5);
  for (int k = 1; k <= total; k += stride) {
    SCOPED_TRACE("crash after side effect " + std::to_string(k) + " of " + std::to_string(total));
    crash_after(k, scenario, fate, sqlite);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

const Scenario kCopy{};
const Scenario kExpand{.expandable = true};
const Scenario kCopyJobFails{.failing_job_pods = 1, .outcome = Outcome::Failed};
const Scenario kCopyCorrupted{.corrupt_copy = true, .outcome = Outcome::Failed};
const Scenario kCopyRequested{.trigger = ResizeTrigger::Request};
const Scenario kShrink{.to_size = "1Ki"};
const Scenario kShrinkRequested{.trigger = ResizeTrigger::Request, .to_size = "1Ki"};
// Refused after Measuring: nothing but the measure Jobs was ever created, and they are gone.
const Scenario kShrinkRefused{.outcome = Outcome::Failed, .to_size = "150"};
const Scenario kExpandRequested{.expandable = true, .trigger = ResizeTrigger::Request};
const Scenario kCopyManual{.mode = "manual"};
const Scenario kCopyStep{.mode = "step"};
const Scenario kTwoCopies{.two_copies = true};
const Scenario kTwoCopiesRequested{.trigger = ResizeTrigger::Request, .two_copies = true};
const Scenario kRolling{.rolling = true};
const Scenario kRollingTwoCopies{.two_copies = true, .rolling = true};
const Scenario kRollingRequested{.trigger = ResizeTrigger::Request, .rolling = true};
const Scenario kRollingStep{.mode = "step", .rolling = true};
// An abort once every claim is on its copy, before the application ran on it: the rebind path
// puts each claim back on its own volume.
const Scenario kRebindAbortedInRestoring{
    .outcome = Outcome::Failed, .mode = "manual", .abort_in = Phase::Restoring};

TEST(CrashResume, ShrinkConvergesAfterACrashAtEverySideEffect) {
  every_k(kShrink, JournalFate::Kept);
  every_k(kShrink, JournalFate::Lost);
}

TEST(CrashResume, ShrinkRequestedConvergesAfterACrashAtEverySideEffect) {
  every_k(kShrinkRequested, JournalFate::Kept);
  every_k(kShrinkRequested, JournalFate::Lost);
}

TEST(CrashResume, ShrinkThatDoesNotFitEndsRefusedAfterACrashAtEverySideEffect) {
  every_k(kShrinkRefused, JournalFate::Kept);
  every_k(kShrinkRefused, JournalFate::Lost);
}

TEST(CrashResume, TwoCopyPathConvergesAfterACrashAtEverySideEffect) {
  every_k(kTwoCopies, JournalFate::Kept);
  every_k(kTwoCopies, JournalFate::Lost);
}

TEST(CrashResume, TwoCopyPathExplicitRequestNeverLosesTheDefinitionAtAnyCrash) {
  every_k(kTwoCopiesRequested, JournalFate::Kept, /*sqlite=*/false, /*stride=*/3);
}

TEST(CrashResume, RebindAbortPutsEveryClaimBackOnItsOwnVolumeAfterEveryCrash) {
  every_k(kRebindAbortedInRestoring, JournalFate::Kept);
  every_k(kRebindAbortedInRestoring, JournalFate::Lost);
}

TEST(CrashResume, CopyPathConvergesAfterACrashAtEverySideEffect) {
  every_k(kCopy, JournalFate::Kept);
}

TEST(CrashResume, CopyPathConvergesFromAnnotationsAloneWhenTheJournalIsLost) {
  every_k(kCopy, JournalFate::Lost);
}

TEST(CrashResume, CopyPathWithSqliteJournalConvergesForASampleOfCrashPoints) {
  every_k(kCopy, JournalFate::Kept, /*sqlite=*/true, /*stride=*/7);
}

TEST(CrashResume, ExpandPathNeverScalesDownAndConvergesAfterEveryCrash) {
  every_k(kExpand, JournalFate::Kept);
  every_k(kExpand, JournalFate::Lost);
}

TEST(CrashResume, FailedCopyJobScalesBackAndFailsAfterEveryCrash) {
  every_k(kCopyJobFails, JournalFate::Kept);
  every_k(kCopyJobFails, JournalFate::Lost);
}

TEST(CrashResume, CorruptedCopyScalesBackAndFailsAfterEveryCrash) {
  every_k(kCopyCorrupted, JournalFate::Kept);
}

TEST(CrashResume, ExplicitRequestOnCopyPathNeverLosesTheDefinitionAtAnyCrash) {
  every_k(kCopyRequested, JournalFate::Kept);
  every_k(kCopyRequested, JournalFate::Lost);
}

TEST(CrashResume, ExplicitRequestOnExpandPathRestartsNoPodAndConvergesAfterEveryCrash) {
  every_k(kExpandRequested, JournalFate::Kept);
  every_k(kExpandRequested, JournalFate::Lost);
}

TEST(CrashResume, ExplicitRequestWithSqliteJournalConvergesForASampleOfCrashPoints) {
  every_k(kCopyRequested, JournalFate::Kept, /*sqlite=*/true, /*stride=*/5);
}

// Every transition waits for an approval (an annotation the engine consumes, journaled with the
// transition it allows): a crash on either side of waiting or of taking an approval converges.
TEST(CrashResume, ManualModeCopyPathConvergesAfterACrashAtEverySideEffect) {
  every_k(kCopyManual, JournalFate::Kept);
  every_k(kCopyManual, JournalFate::Lost);
}

TEST(CrashResume, StepModeCopyPathConvergesAfterACrashAtEverySideEffect) {
  every_k(kCopyStep, JournalFate::Kept);
}

// The rolling strategy: each ordinal's pause, eviction, copies and resume converge from a crash
// after any write, with the journal or from the annotations (and the definition ConfigMap while
// the StatefulSet is away) alone; never more than one replica down.
TEST(CrashResume, RollingConvergesAfterACrashAtEverySideEffect) {
  every_k(kRolling, JournalFate::Kept);
  every_k(kRolling, JournalFate::Lost);
}

TEST(CrashResume, RollingTwoCopyPathConvergesAfterACrashAtEverySideEffect) {
  every_k(kRollingTwoCopies, JournalFate::Kept, /*sqlite=*/false, /*stride=*/2);
  every_k(kRollingTwoCopies, JournalFate::Lost, /*sqlite=*/false, /*stride=*/3);
}

TEST(CrashResume, RollingExplicitRequestNeverLosesTheDefinitionAtAnyCrash) {
  every_k(kRollingRequested, JournalFate::Kept, /*sqlite=*/false, /*stride=*/3);
}

TEST(CrashResume, RollingStepModeConvergesAfterACrashAtEverySideEffect) {
  every_k(kRollingStep, JournalFate::Kept, /*sqlite=*/false, /*stride=*/2);
}

}  // namespace
}  // namespace stsresize
