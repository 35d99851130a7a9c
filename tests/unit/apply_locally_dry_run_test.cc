// `stsresize advance --apply-locally --dry-run` through run_apply_locally, the command's entry:
// the dry run journals nothing, into SQLite in memory (MemoryJournal, a test double, is not in
// the product any more), and writes nothing to the cluster.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/app/apply_locally.h"
#include "adapters/app/exit_codes.h"
#include "adapters/journal/memory_journal.h"
#include "states/reconciler.h"
#include "tests/support/approvals.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

TEST(ApplyLocallyCommand, DryRunNeedsNoJournalFileAndWritesNothing) {
  ResizeWorld world;
  world.seed(/*expandable=*/false);
  set_mode(world, "manual");
  MemoryJournal controller_journal;
  Reconciler controller{world.kube, controller_journal, world.clock, world.events};
  for (int round = 0; round < 300 && !awaiting(world); ++round) {
    ASSERT_FALSE(controller.reconcile(kNs, kSts).is(ReconcileResult::Kind::Terminal));
    world.settle(2);
  }
  ASSERT_TRUE(awaiting(world)) << "the operation never waited for an approval";

  const cli::AdvanceOptions options{
      .target = "shop/web", .approve = true, .dry_run = true, .apply_locally = true};
  const cli::AdvanceCaller caller{"alice", "default", world.clock.now(), "nonce-local"};
  const int mutations = world.kube.mutations();
  std::ostringstream out, err;
  EXPECT_EQ(cli::run_apply_locally(options, world.kube, caller, out, err), cli::kExitOk)
      << out.str() << err.str();
  EXPECT_NE(out.str().find("dry run: would approve Planning -> PreCopying"), std::string::npos)
      << out.str() << err.str();
  EXPECT_EQ(world.kube.mutations(), mutations);
}

}  // namespace
}  // namespace stsresize
