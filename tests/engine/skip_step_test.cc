// `stsresize advance --skip-step`: an operation stuck in CleaningUp (a backup claim that cannot
// be deleted) is ended Completed by a person, keeping the claims and Jobs the cleanup had not
// deleted yet, labelled and named in an Event; the person's OperatorAction and the transition
// are one append. Any other step is refused by the CLI and again by the engine, journaled as
// refused, and nothing changes.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/app/advance_command.h"
#include "adapters/app/exit_codes.h"
#include "engine/actions/request.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/replay.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class SkipStep : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  std::unique_ptr<Reconciler> reconciler =
      std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events, two_copies());
  AdvanceCli advance{world};

  void run_to_idle() { reconcile_to_idle(*reconciler, world, 300); }

  CliResult skip(bool dry_run = false) {
    return advance({.target = "shop/web", .skip_step = true, .dry_run = dry_run});
  }

  std::optional<Operation> live_operation() {
    auto op = read_operation(world.live_sts());
    EXPECT_TRUE(op);
    return op ? *op : std::nullopt;
  }

  std::vector<JournalRecord> records() {
    auto operations = journal.operations();
    EXPECT_TRUE(operations && operations->size() == 1u);
    if (!operations || operations->empty()) return {};
    auto read = journal.read(operations->front().operation_id);
    EXPECT_TRUE(read);
    return read ? *read : std::vector<JournalRecord>{};
  }

  std::vector<entries::OperatorAction> skips() {
    std::vector<entries::OperatorAction> actions;
    for (const JournalRecord& record : records()) {
      auto event = decode_entry(record);
      if (!event) continue;
      if (auto* a = std::get_if<entries::OperatorAction>(&*event); a && a->action == "skip") {
        actions.push_back(*a);
      }
    }
    return actions;
  }

  // Names of the claims or Jobs labelled with `id`.
  std::vector<std::string> labelled(Kind kind, const std::string& id) {
    std::vector<std::string> names;
    for (const Json& object : world.kube.list_raw(kind, kNs)) {
      auto labels = k8s::labels(object);
      if (!labels) continue;
      auto label = labels->find("stsresize.dev/operation");
      if (label != labels->end() && label->second == naming::label_value(id)) {
        names.push_back(object["metadata"]["name"].get<std::string>());
      }
    }
    return names;
  }

  // Every delete of the backup claim of data-web-0 is denied (as the e2e test's admission
  // policy does): CleaningUp deletes the Jobs of data-web-0, then retries that delete for ever.
  // Returns the operation, in CleaningUp.
  Operation stuck_in_cleaning_up() {
    world.seed(/*expandable=*/false);
    world.kube.inject({.verb = Verb::Remove,
                       .kind = Kind::PersistentVolumeClaim,
                       .name = naming::backup_claim("data-web-0"),
                       .times = FaultRule::kForever,
                       .error = KubeError{KubeErrorCode::Forbidden, "denied by a policy"}});
    std::optional<Operation> stuck;
    reconcile_until(
        *reconciler, world,
        {"stuck in CleaningUp",
         [&](const ReconcileResult& result) {
           auto op = live_operation();
           if (op && op->phase == Phase::CleaningUp && result.is(ReconcileResult::Kind::Retry)) {
             stuck = op;
           }
           return stuck.has_value();
         }},
        {.limit = 300, .pace = {.ticks = 1}, .terminal_fails = false});
    return stuck.value_or(Operation{});
  }
};

TEST_F(SkipStep, InCleaningUpItCompletesAndKeepsTheBackupsAndJobsLeft) {
  const Operation op = stuck_in_cleaning_up();
  ASSERT_EQ(op.phase, Phase::CleaningUp);
  const auto claims_before = labelled(Kind::PersistentVolumeClaim, op.id);
  const auto jobs_before = labelled(Kind::Job, op.id);
  ASSERT_EQ(claims_before.size(), world.claim_names().size());  // every backup claim
  ASSERT_FALSE(jobs_before.empty());

  const int mutations = world.kube.mutations();
  const CliResult dry = skip(/*dry_run=*/true);
  ASSERT_EQ(dry.code, cli::kExitOk) << dry.err;
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(dry.out.find("dry run: would skip CleaningUp of operation " + op.id), std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find(naming::backup_claim("data-web-0")), std::string::npos) << dry.out;

  const CliResult written = skip();
  ASSERT_EQ(written.code, cli::kExitOk) << written.err;
  run_to_idle();

  // Completed: the state annotation gone, the last operation recorded.
  const Json sts = world.live_sts();
  EXPECT_FALSE(k8s::annotation(sts, kStateAnnotation)->has_value());
  EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
  const auto last = k8s::annotation(sts, kLastOperationAnnotation);
  ASSERT_TRUE(last && last->has_value());
  EXPECT_EQ(Json::parse(**last)["outcome"], "Completed");
  EXPECT_FALSE(is_marked_failed(sts));
  // Resized, with the data, and the application up.
  for (const std::string& name : world.claim_names()) {
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc) << name;
    EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
  }
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  // Kept, labelled, and named in the Event with the command that deletes them.
  EXPECT_EQ(labelled(Kind::PersistentVolumeClaim, op.id), claims_before);
  EXPECT_EQ(labelled(Kind::Job, op.id), jobs_before);
  const auto skipped = world.events.with_reason("StepSkipped");
  ASSERT_EQ(skipped.size(), 1u);
  for (const std::string& name : claims_before) {
    EXPECT_NE(skipped[0].message.find(name), std::string::npos) << skipped[0].message;
  }
  for (const std::string& name : jobs_before) {
    EXPECT_NE(skipped[0].message.find(name), std::string::npos) << skipped[0].message;
  }
  EXPECT_NE(skipped[0].message.find("CleaningUp skipped by alice"), std::string::npos)
      << skipped[0].message;
  EXPECT_NE(skipped[0].message.find("delete pvc,job -l stsresize.dev/operation=" +
                                    naming::label_value(op.id)),
            std::string::npos)
      << skipped[0].message;
  EXPECT_EQ(world.events.with_reason("ResizeCompleted").size(), 1u);
  EXPECT_FALSE(world.events.contains("ResizeFailed"));

  // The journal: the person's skip and the transition in one append, folding to Completed.
  const auto all = records();
  std::size_t at = all.size();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].type == "OperatorAction") at = i;
  }
  ASSERT_EQ(at + 3, all.size());
  EXPECT_EQ(all[at + 1].type, "PhaseChanged");
  EXPECT_EQ(all[at + 2].type, "OperationFinished");
  EXPECT_EQ(all[at].time, all[at + 2].time);
  auto changed = decode_entry(all[at + 1]);
  ASSERT_TRUE(changed);
  EXPECT_EQ(std::get<entries::PhaseChanged>(*changed),
            (entries::PhaseChanged{Phase::CleaningUp, Phase::Completed, Trigger::Skip}));
  ASSERT_EQ(skips().size(), 1u);
  EXPECT_EQ(skips()[0].by, "alice");
  EXPECT_TRUE(skips()[0].refused.empty());
  const Replay replayed = replay(all, PhaseMachine::rules());
  ASSERT_FALSE(replayed.inconsistency) << replayed.inconsistency->reason;
  ASSERT_EQ(replayed.operations.size(), 1u);
  EXPECT_EQ(replayed.operations[0].final_phase, Phase::Completed);

  // Completed stays Completed: the kept objects are not deleted later either.
  run_to_idle();
  EXPECT_EQ(labelled(Kind::PersistentVolumeClaim, op.id), claims_before);
}

TEST_F(SkipStep, InAnotherStepItIsRefusedByTheCliAndTheEngineAndNothingChanges) {
  world.seed(/*expandable=*/false);
  set_mode(world, "step");
  run_to_idle();
  auto waiting = awaiting(world);
  ASSERT_TRUE(waiting);
  ASSERT_EQ(waiting->from, Phase::BackingUp);
  const Operation op = *live_operation();

  const int mutations = world.kube.mutations();
  const CliResult refused = skip();
  EXPECT_EQ(refused.code, cli::kExitRefused);
  EXPECT_EQ(world.kube.mutations(), mutations);
  EXPECT_NE(refused.err.find("without a verified backup"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("stsresize advance shop/web --abort"), std::string::npos)
      << refused.err;

  // Written anyway (by hand): the engine refuses it too, journals it, removes it, and the
  // operation still waits where it was, every claim untouched.
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Skip, Phase::BackingUp, op.id, "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Idle));
  const Json sts = world.live_sts();
  EXPECT_FALSE(k8s::annotation(sts, kAdvanceAnnotation)->has_value());
  const Operation after = *live_operation();
  EXPECT_EQ(after.phase, Phase::BackingUp);
  EXPECT_EQ(after.awaiting, op.awaiting);
  EXPECT_TRUE(after.sources_intact());
  const auto warnings = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("by bob refused"), std::string::npos) << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("without a verified backup"), std::string::npos)
      << warnings[0].message;
  EXPECT_FALSE(world.events.contains("StepSkipped"));
  ASSERT_EQ(skips().size(), 1u);
  EXPECT_FALSE(skips()[0].refused.empty());
  auto folded = fold(records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::BackingUp);

  // And the resize goes on to its end, deleting the backups as usual.
  set_mode(world, "auto");
  run_to_idle();
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kStateAnnotation)->has_value());
  EXPECT_TRUE(labelled(Kind::PersistentVolumeClaim, op.id).empty());
}

TEST_F(SkipStep, ASkipWrittenForAnEarlierPhaseIsRefusedInCleaningUp) {
  const Operation op = stuck_in_cleaning_up();
  ASSERT_EQ(op.phase, Phase::CleaningUp);
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = encode_advance_request(
        {Action::Skip, Phase::ScalingUp, op.id, "bob", "2027-01-15T08:00:00Z", "n1"});
  });
  reconciler->reconcile(kNs, kSts);
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  EXPECT_EQ(live_operation()->phase, Phase::CleaningUp);
  const auto warnings = world.events.with_reason("AdvanceRefused");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("it skips ScalingUp, but operation " + op.id +
                                     " is now in CleaningUp"),
            std::string::npos)
      << warnings[0].message;
  EXPECT_FALSE(world.events.contains("StepSkipped"));
}

TEST_F(SkipStep, ACrashBetweenTheJournalAndTheAnnotationStillEndsCompleted) {
  const Operation op = stuck_in_cleaning_up();
  ASSERT_EQ(op.phase, Phase::CleaningUp);
  const auto kept = labelled(Kind::PersistentVolumeClaim, op.id);
  ASSERT_EQ(skip().code, cli::kExitOk);
  // The annotation write after the skip's append is lost: the process dies there.
  world.kube.inject({.verb = Verb::Update,
                     .kind = Kind::StatefulSet,
                     .error = KubeError{KubeErrorCode::Unreachable, "injected crash"}});
  EXPECT_TRUE(reconciler->reconcile(kNs, kSts).is(ReconcileResult::Kind::Retry));
  ASSERT_EQ(live_operation()->phase, Phase::CleaningUp);
  ASSERT_TRUE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());

  reconciler =
      std::make_unique<Reconciler>(world.kube, journal, world.clock, world.events, two_copies());
  run_to_idle();
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kStateAnnotation)->has_value());
  EXPECT_FALSE(k8s::annotation(world.live_sts(), kAdvanceAnnotation)->has_value());
  EXPECT_EQ(labelled(Kind::PersistentVolumeClaim, op.id), kept);
  auto folded = fold(records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::Completed);
}

}  // namespace
}  // namespace stsresize
