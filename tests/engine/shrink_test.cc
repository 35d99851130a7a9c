// A shrink on the simulated cluster (states/measure.cc): the data of every claim to be shrunk
// is measured while the application runs, before anything is changed; a shrink whose data does
// not fit is refused with the figures and changes nothing; data that grew after the measure is
// caught at the copy (rebind path: the copy Job's own check; two-copy path: the verified backup,
// before any source is deleted) and the operation scales back onto the intact sources.
// The seeded claims hold 145 to 147 bytes each: "1Ki" fits, "150" does not (with the
// headroom they need at least 162).
#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

class Shrink : public ::testing::TestWithParam<ResizeTrigger> {
 protected:
  std::optional<Operation> operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }

  std::vector<JournalRecord> records() {
    auto operations = journal.operations();
    EXPECT_TRUE(operations && operations->size() == 1u);
    if (!operations || operations->empty()) return {};
    auto read = journal.read(operations->front().operation_id);
    return read ? *read : std::vector<JournalRecord>{};
  }

  std::vector<Phase> phases() {
    std::vector<Phase> out;
    for (const JournalRecord& record : records()) {
      auto event = decode_entry(record);
      if (!event) continue;
      if (auto* changed = std::get_if<entries::PhaseChanged>(&*event)) out.push_back(changed->to);
    }
    return out;
  }

  int created(Kind kind, std::string_view purpose = {}) {
    int count = 0;
    for (const Mutation& m : world.kube.history()) {
      if (m.actor != Actor::Client || m.verb != Verb::Create || m.ref.kind != kind) continue;
      if (!purpose.empty() &&
          m.ref.name.find("-stsresize-" + std::string{purpose}) == std::string::npos) {
        continue;
      }
      ++count;
    }
    return count;
  }

  std::map<std::string, std::string> claim_uids() {
    std::map<std::string, std::string> uids;
    for (const std::string& name : world.claim_names()) {
      uids[name] = *k8s::uid(*world.kube.get_raw(world.claim(name)));
    }
    return uids;
  }

  // Nothing of the operation left, every claim the same object at 1Gi with its files.
  void expect_untouched(const std::map<std::string, std::string>& uids) {
    for (const std::string& name : world.claim_names()) {
      const Json claim = *world.kube.get_raw(world.claim(name));
      EXPECT_EQ(*k8s::uid(claim), uids.at(name)) << name;
      EXPECT_EQ(*k8s::requested_storage(claim), *Quantity::parse("1Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name))
          << name;
    }
    EXPECT_TRUE(world.kube.list_raw(Kind::Job).empty());
    EXPECT_EQ(world.kube.list_raw(Kind::PersistentVolumeClaim).size(), world.claim_names().size());
    EXPECT_EQ(*k8s::spec_replicas(world.live_sts()), kReplicas);
  }

  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};
};

TEST_P(Shrink, ThatFitsIsMeasuredWhileTheApplicationRunsThenCopiedOnce) {
  world.seed(/*expandable=*/false, "1Ki", GetParam());
  // The measure Jobs run while every replica does: nothing is scaled down before they end.
  reconcile_until(
      reconciler, world,
      {"three measure Jobs",
       [&](const ReconcileResult&) { return world.kube.list_raw(Kind::Job).size() >= 2; }},
      {.limit = 50});
  EXPECT_EQ(operation()->phase, Phase::Measuring);
  EXPECT_EQ(*k8s::spec_replicas(world.live_sts()), kReplicas);
  EXPECT_EQ(world.ready_replicas(), kReplicas);
  for (const Json& job : world.kube.list_raw(Kind::Job)) {
    EXPECT_NE(job["metadata"]["name"].get<std::string>().find("-stsresize-measure"),
              std::string::npos);
    // Read-only (the simulated pods have no node: the e2e checks the Job runs beside its pod).
    const Json& pod_spec = job["spec"]["template"]["spec"];
    EXPECT_EQ(pod_spec["volumes"][0]["persistentVolumeClaim"]["readOnly"], true);
  }
  reconcile_to_idle(reconciler, world, 400);
  world.settle(2);

  const std::vector<Phase> seen = phases();
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0], Phase::Measuring);
  EXPECT_EQ(seen[1],
            GetParam() == ResizeTrigger::Request ? Phase::UpdatingTemplate : Phase::Planning);
  EXPECT_EQ(seen.back(), Phase::Completed);
  int measured = 0;
  for (const JournalRecord& record : records()) measured += record.type == "ClaimMeasured";
  EXPECT_EQ(measured, 6);
  EXPECT_EQ(created(Kind::Job, "measure"), 6);
  EXPECT_EQ(created(Kind::Job, "backup"), 6);
  EXPECT_EQ(created(Kind::Job, "restore"), 0);
  for (const std::string& name : world.claim_names()) {
    const Json claim = *world.kube.get_raw(world.claim(name));
    EXPECT_EQ(*k8s::requested_storage(claim), *Quantity::parse("1Ki")) << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name)) << name;
  }
  EXPECT_TRUE(world.kube.list_raw(Kind::Job).empty());
  EXPECT_EQ(world.ready_replicas(), kReplicas);
}

TEST_P(Shrink, ThatDoesNotFitIsRefusedWithTheFiguresBeforeAnythingChanges) {
  world.seed(/*expandable=*/false, "150", GetParam());
  const auto uids = claim_uids();
  const std::string sts_uid = *k8s::uid(world.live_sts());
  reconcile_until(reconciler, world, at_rest(), {.limit = 200, .terminal_fails = false});
  world.settle(2);

  const auto found = operation();
  ASSERT_TRUE(found) << "no operation state left: it completed";
  const Operation op = *found;
  EXPECT_EQ(op.phase, Phase::Failed);
  EXPECT_EQ(op.failed_in, Phase::ScalingBack);
  EXPECT_NE(op.failure.find("shrink refused, nothing was changed"), std::string::npos)
      << op.failure;
  EXPECT_NE(op.failure.find("claim data-web-0 holds 145 bytes"), std::string::npos) << op.failure;
  EXPECT_NE(op.failure.find("needs at least 162 bytes (162 bytes)"), std::string::npos)
      << op.failure;
  const std::vector<Phase> seen = phases();
  EXPECT_EQ(seen, (std::vector<Phase>{Phase::Measuring, Phase::ScalingBack, Phase::Failed}));
  expect_untouched(uids);
  // The StatefulSet was never written but for the operation's own annotations: not scaled, not
  // re-created, its templates as they were.
  EXPECT_EQ(*k8s::uid(world.live_sts()), sts_uid);
  const std::string asked = GetParam() == ResizeTrigger::Request ? "1Gi" : "150";
  for (const Json& tmpl : world.live_sts()["spec"]["volumeClaimTemplates"]) {
    EXPECT_EQ(tmpl["spec"]["resources"]["requests"]["storage"], asked);
  }
  for (const Mutation& m : world.kube.history()) {
    if (m.actor != Actor::Client) continue;
    EXPECT_FALSE(m.ref.kind == Kind::PersistentVolumeClaim || m.ref.kind == Kind::PersistentVolume)
        << "touched " << to_string(m.ref);
  }
  const auto warnings = world.events.with_reason("ResizeFailed");
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.back().message.find("needs at least"), std::string::npos)
      << warnings.back().message;
  EXPECT_TRUE(
      warnings.back().message.starts_with("nothing was scaled, the 3 replicas kept running"))
      << warnings.back().message;
}

// People during Measuring: the state annotation removed (a new operation measures again; the
// old one's measure Jobs are deleted, never read), then a scale-up (the new replica's claims are
// created at the template's size and need no shrink). Nothing is lost.
TEST_P(Shrink, AStateRemovedAndAScaleUpDuringMeasuringLoseNothing) {
  world.seed(/*expandable=*/false, "1Ki", GetParam());
  reconcile_until(reconciler, world,
                  {"measure Jobs",
                   [&](const ReconcileResult&) { return !world.kube.list_raw(Kind::Job).empty(); }},
                  {.limit = 50});
  ASSERT_EQ(operation()->phase, Phase::Measuring);
  world.kube.mutate_raw(world.sts(), [](Json& sts) {
    sts["metadata"]["annotations"].erase(std::string{kStateAnnotation});
    sts["spec"]["replicas"] = kReplicas + 1;
  });
  world.settle(3);
  reconcile_to_idle(reconciler, world, 400);
  world.settle(2);
  for (const std::string& name : world.claim_names()) {
    EXPECT_EQ(*k8s::requested_storage(*world.kube.get_raw(world.claim(name))),
              *Quantity::parse("1Ki"))
        << name;
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name)) << name;
  }
  EXPECT_TRUE(world.kube.list_raw(Kind::Job).empty());
  for (const Json& pvc : world.kube.list_raw(Kind::PersistentVolumeClaim, kNs)) {
    EXPECT_EQ(pvc["metadata"]["name"].get<std::string>().find("-stsresize-"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Triggers, Shrink,
                         ::testing::Values(ResizeTrigger::Template, ResizeTrigger::Request),
                         [](const auto& info) {
                           return info.param == ResizeTrigger::Template ? "Template" : "Request";
                         });

// Data written after the measure (the application runs until ScalingDown) that no longer fits:
// found at the copy, before any source claim is deleted, on either path; the operation scales
// back onto the intact sources, which keep every byte.
class ShrinkGrown : public ::testing::TestWithParam<bool> {
 protected:
  std::optional<Operation> operation() {
    auto op = read_operation(world.live_sts());
    if (!op || !op->has_value()) return std::nullopt;
    return **op;
  }
  ResizeWorld world;
  MemoryJournal journal;
  EngineSettings settings = GetParam() ? EngineSettings{} : two_copies();
  Reconciler reconciler{world.kube, journal, world.clock, world.events, settings};
};

TEST_P(ShrinkGrown, DataThatGrewAfterTheMeasureFailsAtTheCopyAndScalesBack) {
  world.seed(/*expandable=*/false, "1Ki");
  reconcile_until(reconciler, world,
                  {"ScalingDown",
                   [&](const ReconcileResult&) {
                     auto op = operation();
                     return op && op->phase == Phase::ScalingDown;
                   }},
                  {.limit = 200});
  const std::string grown = naming::claim_name("data", kSts, 1);
  world.cluster.write_file(world.claim(grown), "late.bin", std::string(2000, 'z'));
  reconcile_until(reconciler, world, at_rest(), {.limit = 400, .terminal_fails = false});
  world.settle(2);

  const auto found = operation();
  ASSERT_TRUE(found) << "no operation state left: it completed";
  const Operation op = *found;
  EXPECT_EQ(op.path, GetParam() ? Path::Rebind : Path::Copy);
  EXPECT_EQ(op.phase, Phase::Failed);
  EXPECT_EQ(op.failed_in, Phase::ScalingBack);
  EXPECT_NE(op.failure.find(GetParam() ? "does not fit" : "it grew since it was measured"),
            std::string::npos)
      << op.failure;
  for (const std::string& name : world.claim_names()) {
    VolumeFiles expected = world.original_files.at(name);
    if (name == grown) expected["late.bin"] = std::string(2000, 'z');
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), expected) << name;
    EXPECT_EQ(*k8s::requested_storage(*world.kube.get_raw(world.claim(name))),
              *Quantity::parse("1Gi"))
        << name;
    EXPECT_FALSE(op.find_claim(name) && op.find_claim(name)->source_deleted) << name;
  }
  EXPECT_TRUE(world.kube.list_raw(Kind::Job).empty());
  EXPECT_EQ(world.kube.list_raw(Kind::PersistentVolumeClaim).size(), world.claim_names().size());
  EXPECT_EQ(*k8s::spec_replicas(world.live_sts()), kReplicas);
}

INSTANTIATE_TEST_SUITE_P(Paths, ShrinkGrown, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Rebind" : "TwoCopies"; });

// Which copies check, before rsync, that the data fits the destination claim
// (STSRESIZE_DESTINATION_BYTES): only those into a claim smaller than the source's. A copy into
// a claim at least as large is not checked: the script's estimate of the data (its disk usage,
// directories included) may exceed the source claim's nominal size, and a grow's two-copy backup
// at the old size was refused that way with 1 GiB of data in a 1Gi claim.
class CopyFitCheck : public ::testing::TestWithParam<bool> {};

TEST_P(CopyFitCheck, OnlyACopyIntoASmallerClaimChecksThatTheDataFits) {
  for (const std::string to_size : {"2Gi", "1Ki"}) {
    SCOPED_TRACE("1Gi -> " + to_size);
    ResizeWorld world;
    world.seed(/*expandable=*/false, to_size);
    MemoryJournal journal;
    Reconciler reconciler{world.kube, journal, world.clock, world.events,
                          GetParam() ? EngineSettings{} : two_copies()};
    std::map<std::string, std::string> checked;  // Job purpose -> the variable's values seen
    for (int round = 0; round < 300; ++round) {
      const ReconcileResult result = reconciler.reconcile(kNs, kSts);
      for (const Json& job : world.kube.list_raw(Kind::Job)) {
        const std::string purpose =
            k8s::label(job, kPurposeLabel).value_or(std::nullopt).value_or("?");
        if (purpose == "measure") continue;
        std::string value = "-";
        for (const Json& env :
             job["spec"]["template"]["spec"]["containers"][0].value("env", Json::array())) {
          if (env.value("name", "") == "STSRESIZE_DESTINATION_BYTES")
            value = env.value("value", "");
        }
        checked[purpose] = value;
      }
      if (result.is(ReconcileResult::Kind::Idle)) break;
      world.settle(2);
    }
    // The pre-copy never checks: the copy after it, with the replicas stopped, does.
    std::map<std::string, std::string> expected;
    if (GetParam()) {
      // into the claim's new size
      expected = {{"pre-copy", "-"}, {"backup", to_size == "1Ki" ? "1024" : "-"}};
    } else {
      // The backup at the source's size, the restore into the new one.
      expected = {{"pre-copy", "-"}, {"backup", "-"}, {"restore", to_size == "1Ki" ? "1024" : "-"}};
    }
    EXPECT_EQ(checked, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, CopyFitCheck, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Rebind" : "TwoCopies"; });

}  // namespace
}  // namespace stsresize
