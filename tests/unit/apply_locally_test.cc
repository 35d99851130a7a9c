// `stsresize advance --apply-locally`: the controller's Reconciler run in the command's own
// process until the operation rests, under the controller's Lease, into a journal of its own;
// then the controller comes back with its journal (which lacks those records) and goes on.
#include "adapters/app/apply_locally.h"

#include <gtest/gtest.h>

#include <sstream>

#include "adapters/app/cli.h"
#include "adapters/app/exit_codes.h"
#include "adapters/runtime/leader_election.h"
#include "engine/actions/request.h"
#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/engine_harness.h"
#include "tests/support/golden.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;
using stsresize::testing_support::expect_matches_golden;

class ApplyLocally : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal controller_journal;  // the controller's own file
  MemoryJournal local_journal;       // --journal of the command
  const ObjectRef lease_ref{Kind::Lease, "stsresize-system", "stsresize-leader"};
  int waits = 0;
  bool stop_after_first_wait = false;

  void SetUp() override {
    world.seed(/*expandable=*/false);
    set_mode(world, "manual");
  }

  // A controller (a new process each time: nothing cached) reconciles until it is idle.
  void controller_runs_to_idle() {
    Reconciler controller{world.kube, controller_journal, world.clock, world.events};
    reconcile_to_idle(controller, world, 300);
  }

  cli::ApplyLocallySettings settings() {
    cli::ApplyLocallySettings s;
    s.lease_namespace = lease_ref.ns;
    s.lease_name = lease_ref.name;
    s.identity = "advance-local:alice@laptop";
    s.timeout = std::chrono::minutes{30};
    s.engine.poll_interval = std::chrono::seconds{2};
    return s;
  }

  CliResult apply(cli::AdvanceOptions options, cli::ApplyLocallySettings s,
                  const std::string& nonce = "nonce-local") {
    options.target = "shop/web";
    options.apply_locally = true;
    options.journal = "local.db";
    cli::ApplyLocallyHooks hooks;
    hooks.wait = [this](Duration delay) {
      ++waits;
      world.clock.advance(delay);
      world.cluster.tick();
      return !(stop_after_first_wait && waits == 1);
    };
    const cli::AdvanceCaller caller{"alice", "default", world.clock.now(), nonce};
    return capture([&](std::ostream& out, std::ostream& err) {
      return cli::apply_locally(world.kube, local_journal, world.clock, world.events, options,
                                caller, s, hooks, out, err);
    });
  }

  void put_lease(const std::string& holder, TimePoint renewed) {
    const std::string when = runtime::format_micro_time(renewed);
    world.kube.put_raw(Kind::Lease,
                       Json{{"apiVersion", "coordination.k8s.io/v1"},
                            {"kind", "Lease"},
                            {"metadata", {{"name", lease_ref.name}, {"namespace", lease_ref.ns}}},
                            {"spec",
                             {{"holderIdentity", holder},
                              {"leaseDurationSeconds", 15},
                              {"acquireTime", when},
                              {"renewTime", when},
                              {"leaseTransitions", 0}}}});
  }
  std::string lease_holder() {
    auto lease = world.kube.get_raw(lease_ref);
    return lease ? (*lease)["spec"].value("holderIdentity", std::string{"(none)"}) : "(no lease)";
  }

  std::optional<AwaitedApproval> waiting() { return awaiting(world); }
  std::string operation_id() { return (*read_operation(world.live_sts()))->id; }

  std::vector<Entry> stream(MemoryJournal& journal, const std::string& id) {
    std::vector<Entry> out;
    auto records = journal.read(id);
    EXPECT_TRUE(records);
    for (const JournalRecord& record : *records) out.push_back(*decode_entry(record));
    return out;
  }
};

TEST_F(ApplyLocally, ApprovalRunsToTheNextWaitThenTheControllerGoesOnWithItsOwnJournal) {
  controller_runs_to_idle();
  ASSERT_EQ(waiting(),
            (AwaitedApproval{Phase::Planning, Phase::PreCopying, Trigger::PlannedPreCopy}));
  const std::string id = operation_id();

  auto [code, out, err] = apply({.approve = true}, settings());
  ASSERT_EQ(code, cli::kExitOk) << out << err;
  EXPECT_EQ(waiting(), (AwaitedApproval{Phase::PreCopying, Phase::ScalingDown, Trigger::StepDone}))
      << out;
  EXPECT_NE(out.find("took the Lease stsresize-system/stsresize-leader as "
                     "advance-local:alice@laptop"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("phase Planning -> PreCopying"), std::string::npos) << out;
  EXPECT_NE(out.find("waits for approval of PreCopying -> ScalingDown"), std::string::npos) << out;
  EXPECT_EQ(lease_holder(), "") << "the Lease is released at the end";
  EXPECT_FALSE(advance_request_of(world.live_sts())) << "the request was consumed";

  // The local journal starts from the annotation and holds the approval with alice's name.
  const auto local = stream(local_journal, id);
  ASSERT_FALSE(local.empty());
  EXPECT_TRUE(std::holds_alternative<entries::Resumed>(local.front()));
  bool approved = false;
  for (const Entry& event : local) {
    if (const auto* action = std::get_if<entries::OperatorAction>(&event)) {
      approved = action->action == "approve" && action->by == "alice" &&
                 action->nonce == "nonce-local" && action->refused.empty();
    }
  }
  EXPECT_TRUE(approved);
  EXPECT_TRUE(fold(*local_journal.read(id), PhaseMachine::rules()));

  // The controller comes back with its own journal, one transition behind the annotation.
  ASSERT_TRUE(approve_waiting(world, "bob", "nonce-bob"));
  controller_runs_to_idle();
  EXPECT_EQ(waiting(), (AwaitedApproval{Phase::ScalingDown, Phase::BackingUp, Trigger::StepDone}));
  auto folded = fold(*controller_journal.read(id), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->phase, Phase::ScalingDown);

  // ...and to the end, every file intact.
  for (int approvals = 0; approvals < 10 && waiting(); ++approvals) {
    ASSERT_TRUE(approve_waiting(world, "bob", "nonce-" + std::to_string(approvals)));
    controller_runs_to_idle();
  }
  EXPECT_FALSE(read_operation(world.live_sts())->has_value()) << "completed";
  for (const auto& [claim, files] : world.original_files) {
    EXPECT_EQ(world.cluster.volume_files(world.claim(claim)), files) << claim;
  }
  EXPECT_TRUE(fold(*controller_journal.read(id), PhaseMachine::rules()));
}

TEST_F(ApplyLocally, RefusedWhileAControllerRenewsItsLeaseAndNothingIsWritten) {
  controller_runs_to_idle();
  put_lease("stsresize-7d9f_ab12", world.clock.now() - std::chrono::seconds{3});
  const Json before = world.live_sts();
  const Json lease_before = *world.kube.get_raw(lease_ref);

  auto [code, out, err] = apply({.approve = true}, settings());
  EXPECT_EQ(code, cli::kExitRefused) << out << err;
  EXPECT_EQ(world.live_sts(), before);
  EXPECT_EQ(*world.kube.get_raw(lease_ref), lease_before);
  EXPECT_TRUE(local_journal.operations()->empty());
  expect_matches_golden("advance_apply_locally_refused.txt", out + err);
}

TEST_F(ApplyLocally, ALeaseNobodyRenewsIsWaitedOutThenTaken) {
  controller_runs_to_idle();
  put_lease("stsresize-killed_cd34", world.clock.now() - std::chrono::hours{1});

  auto [code, out, err] = apply({.approve = true}, settings());
  ASSERT_EQ(code, cli::kExitOk) << out << err;
  EXPECT_NE(out.find("not renewed since: waiting up to 17s"), std::string::npos) << out;
  EXPECT_EQ(waiting(), (AwaitedApproval{Phase::PreCopying, Phase::ScalingDown, Trigger::StepDone}));
  EXPECT_EQ(lease_holder(), "");
}

TEST_F(ApplyLocally, TimeoutStopsBetweenStepsAndTheControllerResumes) {
  controller_runs_to_idle();
  auto s = settings();
  s.timeout = std::chrono::seconds{1};
  auto [code, out, err] = apply({.approve = true}, s);
  EXPECT_EQ(code, cli::kExitIncomplete) << out << err;
  EXPECT_NE(err.find("--timeout 1s reached before the operation rested. Nothing is lost"),
            std::string::npos)
      << err;
  EXPECT_EQ(lease_holder(), "");
  EXPECT_FALSE(waiting()) << "stopped mid-way, in PreCopying";

  controller_runs_to_idle();
  EXPECT_EQ(waiting(), (AwaitedApproval{Phase::PreCopying, Phase::ScalingDown, Trigger::StepDone}));
}

TEST_F(ApplyLocally, ASignalStopsBetweenStepsWithExit6) {
  controller_runs_to_idle();
  stop_after_first_wait = true;
  auto [code, out, err] = apply({.approve = true}, settings());
  EXPECT_EQ(code, cli::kExitIncomplete) << out << err;
  EXPECT_NE(err.find("stopped by a signal between two steps"), std::string::npos) << err;
  EXPECT_EQ(lease_holder(), "");
}

TEST_F(ApplyLocally, DryRunSaysWhatWouldHappenAndWritesNothing) {
  controller_runs_to_idle();
  const int before = world.kube.mutations();
  auto [code, out, err] = apply({.approve = true, .dry_run = true}, settings());
  EXPECT_EQ(code, cli::kExitOk) << err;
  EXPECT_EQ(world.kube.mutations(), before);
  EXPECT_FALSE(world.kube.get_raw(lease_ref));
  // Names and times vary with the simulated cluster: keep the golden file stable.
  std::string text = out + err;
  const std::string id = operation_id();
  for (auto at = text.find(id); at != std::string::npos; at = text.find(id))
    text.replace(at, id.size(), "OPERATION");
  expect_matches_golden("advance_apply_locally_dry_run.txt", text);
}

// `advance --approve` run while no controller was there left its request; --apply-locally takes
// that one (with its author) instead of refusing it as already given.
TEST_F(ApplyLocally, AnApprovalLeftPendingIsTheOneTakenHere) {
  controller_runs_to_idle();
  ASSERT_TRUE(approve_waiting(world, "carol", "nonce-carol"));
  auto [code, out, err] = apply({.approve = true}, settings());
  ASSERT_EQ(code, cli::kExitOk) << out << err;
  EXPECT_NE(out.find("written by carol at 2027-01-15T08:00:00Z is pending and no controller "
                     "took it"),
            std::string::npos)
      << out;
  EXPECT_EQ(waiting(), (AwaitedApproval{Phase::PreCopying, Phase::ScalingDown, Trigger::StepDone}));
  bool by_carol = false;
  for (const Entry& event : stream(local_journal, operation_id())) {
    if (const auto* action = std::get_if<entries::OperatorAction>(&event)) {
      by_carol = action->by == "carol" && action->nonce == "nonce-carol" && action->refused.empty();
    }
  }
  EXPECT_TRUE(by_carol);
}

TEST_F(ApplyLocally, AnAbortIsCarriedToFailed) {
  controller_runs_to_idle();
  auto [code, out, err] = apply({.abort = true}, settings());
  ASSERT_EQ(code, cli::kExitOk) << out << err;
  EXPECT_NE(out.find("ended in Failed: aborted by alice in Planning"), std::string::npos) << out;
  EXPECT_EQ((*read_operation(world.live_sts()))->phase, Phase::Failed);
}

TEST_F(ApplyLocally, NeedsAJournal) {
  cli::AdvanceOptions options{.target = "shop/web", .approve = true, .apply_locally = true};
  std::ostringstream out, err;
  const cli::AdvanceCaller caller{"alice", "default", world.clock.now(), "n"};
  EXPECT_EQ(cli::run_apply_locally(options, world.kube, caller, out, err), cli::kExitUsage);
  EXPECT_NE(err.str().find("--apply-locally needs --journal FILE"), std::string::npos) << err.str();
}

TEST_F(ApplyLocally, ItsFlagsAloneAreAUsageError) {
  std::ostringstream out, err;
  EXPECT_EQ(cli::run_cli({"advance", "shop/web", "--approve", "--journal", "x.db"}, out, err),
            cli::kExitUsage);
  EXPECT_NE(err.str().find("--journal requires --apply-locally"), std::string::npos) << err.str();
}

// The copy Jobs made here should be the controller's: the same flags, checked the same way.
TEST_F(ApplyLocally, CopyJobResourcesAreCheckedAsRunChecksThem) {
  cli::AdvanceOptions options{.target = "shop/web",
                              .approve = true,
                              .apply_locally = true,
                              .journal = "/nonexistent/advance.db"};
  options.copy_job.memory_request = "3Gi";  // above the default limit of 2Gi
  std::ostringstream out, err;
  const cli::AdvanceCaller caller{"alice", "default", world.clock.now(), "n"};
  const int mutations = world.kube.mutations();
  EXPECT_EQ(cli::run_apply_locally(options, world.kube, caller, out, err), cli::kExitUsage);
  EXPECT_NE(err.str().find("--copy-job-memory-request: 3Gi is more than the limit 2Gi"),
            std::string::npos)
      << err.str();
  EXPECT_EQ(world.kube.mutations(), mutations);
  std::ostringstream out2, err2;
  EXPECT_EQ(
      cli::run_cli({"advance", "shop/web", "--approve", "--copy-job-cpu-request", "1"}, out2, err2),
      cli::kExitUsage);
  EXPECT_NE(err2.str().find("--copy-job-cpu-request requires --apply-locally"), std::string::npos)
      << err2.str();
}

}  // namespace
}  // namespace stsresize
