// stsresize.dev/mode and stsresize.dev/advance: which transitions wait, the strict codec of an
// approval, and how a waiting transition is kept in the state annotation.
#include <gtest/gtest.h>

#include "tests/support/operation_samples.h"

#include <map>
#include <vector>

#include "engine/annotations.h"
#include "engine/operation_codec.h"
#include "engine/resize_request.h"
#include "tests/support/refusals.h"

namespace stsresize {
namespace {

using namespace testing;

Json statefulset_with_mode(const std::string& mode) {
  return Json{{"metadata", {{"annotations", {{"stsresize.dev/mode", mode}}}}}};
}

TEST(ApprovalMode, AbsentIsAutoAndAnUnknownValueIsManualWithAReason) {
  EXPECT_EQ(approval_mode_of(Json{{"metadata", Json::object()}}).mode, ApprovalMode::Auto);
  EXPECT_EQ(approval_mode_of(statefulset_with_mode("auto")).mode, ApprovalMode::Auto);
  EXPECT_EQ(approval_mode_of(statefulset_with_mode("manual")).mode, ApprovalMode::Manual);
  EXPECT_EQ(approval_mode_of(statefulset_with_mode("step")).mode, ApprovalMode::Step);
  const ModeSetting typo = approval_mode_of(statefulset_with_mode("Manual"));
  EXPECT_EQ(typo.mode, ApprovalMode::Manual);
  EXPECT_NE(typo.invalid.find("\"Manual\", not auto, manual or step"), std::string::npos)
      << typo.invalid;
}

// Step mode holds the transitions into the steps that delete claims: a resize's Recreating (the
// sources), a drain's DeletingClaims (the drained claims) and a recovery's ReplacingVolume (the
// lost claims).
TEST(ApprovalMode, ManualHoldsEveryForwardTransitionStepOnlyTheOnesThatDeleteClaims) {
  for (const Phase from : kAllPhases) {
    for (const Phase to : kAllPhases) {
      for (const Trigger event : {Trigger::StepDone, Trigger::PlannedCopy}) {
        EXPECT_FALSE(needs_approval(ApprovalMode::Auto, from, to, event));
        EXPECT_TRUE(needs_approval(ApprovalMode::Manual, from, to, event));
        EXPECT_EQ(
            needs_approval(ApprovalMode::Step, from, to, event),
            to == Phase::Recreating || to == Phase::DeletingClaims || to == Phase::ReplacingVolume);
      }
      // Error transitions protect the data: they never wait.
      for (const Trigger event :
           {Trigger::CriticalError, Trigger::ScaleBackDone, Trigger::Abort, Trigger::Skip}) {
        EXPECT_FALSE(needs_approval(ApprovalMode::Manual, from, to, event));
        EXPECT_FALSE(needs_approval(ApprovalMode::Step, from, to, event));
      }
    }
  }
}

TEST(AdvanceRequest, SurvivesEncodeAndDecode) {
  const AdvanceRequest request{Action::Approve, Phase::BackingUp,       "web-0123abcd",
                               "alice",         "2027-01-15T08:00:00Z", "0123456789abcdef"};
  auto decoded = decode_advance_request(encode_advance_request(request));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, request);
}

TEST(AdvanceRequest, RefusesWhatIsNotExactlyARequest) {
  Json good = Json::parse(encode_advance_request(
      {Action::Approve, Phase::BackingUp, "web-0123abcd", "alice", "2027-01-15T08:00:00Z", "n"}));
  auto refused = [](const Json& document, const std::string& fragment) {
    auto decoded = decode_advance_request(document.dump());
    ASSERT_FALSE(decoded) << document.dump();
    EXPECT_NE(decoded.error().find(fragment), std::string::npos) << decoded.error();
    EXPECT_NE(decoded.error().find("stsresize.dev/advance"), std::string::npos);
  };
  EXPECT_FALSE(decode_advance_request("approve"));
  Json extra = good;
  extra["force"] = true;
  refused(extra, "unknown field \"force\"");
  Json missing = good;
  missing.erase("nonce");
  refused(missing, "missing field \"nonce\"");
  Json phase = good;
  phase["phase"] = "Nowhere";
  refused(phase, "unknown phase \"Nowhere\"");
  Json nobody = good;
  nobody["by"] = "";
  refused(nobody, "must not be empty");
  Json verb = good;
  verb["action"] = "teleport";
  refused(verb, "unknown action \"teleport\"");
}

TEST(AdvanceRequest, ApprovesOnlyThePhaseAndOperationThatWait) {
  Operation op;
  op.id = "web-1";
  op.phase = Phase::BackingUp;
  AdvanceRequest request{Action::Approve, Phase::BackingUp, "web-1", "alice", "t", "n"};
  EXPECT_EQ(approval_mismatch(request, op), "");
  request.phase = Phase::Planning;
  EXPECT_NE(approval_mismatch(request, op).find("leaving phase Planning"), std::string::npos);
  request.phase = Phase::BackingUp;
  request.operation = "web-2";
  EXPECT_NE(approval_mismatch(request, op).find("approves operation web-2"), std::string::npos);
  request.operation = "web-1";
  request.action = Action::Abort;
  EXPECT_NE(approval_mismatch(request, op).find("\"abort\" does not approve"), std::string::npos);
}

Operation waiting_operation() {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid";
  op.phase = Phase::BackingUp;
  op.awaiting = AwaitedApproval{Phase::BackingUp, Phase::Recreating, Trigger::StepDone};
  return op;
}

TEST(StateAnnotation, KeepsTheTransitionThatWaitsAndShowsIt) {
  const Operation op = waiting_operation();
  auto decoded = decode_state_annotation(encode_state_annotation(op));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, op);
  Json sts{{"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", "uid"}}}};
  Json written = with_operation(sts, op);
  EXPECT_EQ(written["metadata"]["annotations"]["stsresize.dev/awaiting-approval"],
            "BackingUp -> Recreating");
  Operation moved = op;
  moved.awaiting.reset();
  EXPECT_FALSE(with_operation(written, moved)["metadata"]["annotations"].contains(
      "stsresize.dev/awaiting-approval"));
}

TEST(StateAnnotation, RefusesAWaitThatDoesNotLeaveTheCurrentPhase) {
  Json document = encode_operation(waiting_operation());
  document["awaitingApproval"]["from"] = "Planning";
  auto decoded = decode_state_annotation(document.dump());
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().find("awaits a transition from Planning in phase BackingUp"),
            std::string::npos)
      << decoded.error();
}

Operation copy_operation(Phase phase, int sources_deleted) {
  if (testing::drain_phase(phase)) return testing::sample_drain(phase);
  if (testing::recovery_phase(phase)) return testing::sample_recovery(phase);
  Operation op = waiting_operation();
  op.awaiting.reset();
  op.phase = phase;
  for (int i = 0; i < 2; ++i) {
    ClaimPlan claim;
    claim.claim = "data-web-" + std::to_string(i);
    // From Restoring on, a two-copy resize has deleted every source (progress_mismatch).
    claim.source_deleted = i < sources_deleted || phase == Phase::Restoring ||
                           phase == Phase::ScalingUp || phase == Phase::CleaningUp;
    op.claims.push_back(claim);
  }
  return op;
}

// The same on the rebind path, every source deleted with its volume kept (Retain).
Operation rebind_operation(Phase phase) {
  Operation op = copy_operation(phase, 2);
  testing::on_rebind_path(op);
  return op;
}

TEST(Abort, OnTheRebindPathAPhaseBeforeScalingUpIsAbortableWithTheSourcesDeleted) {
  // ScalingBack puts each claim back on its own volume; from ScalingUp on the application
  // writes on the copies, which a scale-back would lose.
  EXPECT_EQ(abort_refusal(rebind_operation(Phase::Recreating)), "");
  EXPECT_EQ(abort_refusal(rebind_operation(Phase::Restoring)), "");
  EXPECT_NE(abort_refusal(rebind_operation(Phase::ScalingUp)), "");
  Operation released = rebind_operation(Phase::Restoring);
  released.claims[0].source_policy_restored = true;
  EXPECT_NE(abort_refusal(released), "");
  Operation not_kept = rebind_operation(Phase::Recreating);
  not_kept.claims[1].source_policy.clear();
  EXPECT_NE(abort_refusal(not_kept), "");
}

TEST(Abort, OnlyPhasesBeforeASourceDeleteAreAbortable) {
  for (const Phase phase : kAllPhases) {
    SCOPED_TRACE(to_string(phase));
    // A drain deletes nothing before DeletingClaims: Draining is abortable too; a recovery
    // nothing before ReplacingVolume (whose sample has deleted its lost claim: not abortable).
    const bool abortable =
        phase == Phase::Measuring || phase == Phase::Planning || phase == Phase::PreCopying ||
        phase == Phase::ScalingDown || phase == Phase::BackingUp || phase == Phase::Recreating ||
        phase == Phase::Draining || phase == Phase::StoppingReplica || phase == Phase::AwaitingNode;
    const std::string why = abort_refusal(copy_operation(phase, 0));
    EXPECT_EQ(why.empty(), abortable) << why;
    if (!why.empty()) {
      EXPECT_NE(why.find("web-0123abcd"), std::string::npos) << why;
    }
  }
  const std::string deleted = abort_refusal(copy_operation(Phase::Recreating, 1));
  EXPECT_NE(deleted.find("has deleted source claim data-web-0: its backup "
                         "data-web-0-stsresize-bak is the copy the resize restores"),
            std::string::npos)
      << deleted;
  EXPECT_NE(deleted.find("Let it finish"), std::string::npos) << deleted;
  EXPECT_NE(abort_refusal(copy_operation(Phase::Expanding, 0)).find("never shrunk"),
            std::string::npos);
  EXPECT_NE(abort_refusal(copy_operation(Phase::UpdatingTemplate, 0))
                .find("Let the template update finish"),
            std::string::npos);
  EXPECT_NE(abort_refusal(copy_operation(Phase::ScalingBack, 0)).find("already in ScalingBack"),
            std::string::npos);
  // A recovery in ReplacingVolume before its first delete (only the volume kept) is abortable.
  Operation keeping = testing::sample_recovery(Phase::ReplacingVolume);
  keeping.lost->claims[0].deleted = false;
  keeping.lost->pod_deleted = false;
  EXPECT_EQ(abort_refusal(keeping), "");
}

TEST(Abort, ARequestMustNameTheOperationAndFindItAbortable) {
  const Operation op = copy_operation(Phase::ScalingDown, 0);
  AdvanceRequest request{Action::Abort, Phase::Planning, op.id, "alice", "t", "n"};
  // Written in an earlier phase that is still abortable: taken.
  EXPECT_EQ(abort_mismatch(request, op), "");
  request.operation = "web-00000000";
  EXPECT_NE(abort_mismatch(request, op).find("aborts operation web-00000000"), std::string::npos);
  request.operation = op.id;
  EXPECT_NE(abort_mismatch(request, copy_operation(Phase::Restoring, 2)).find("Restoring"),
            std::string::npos);
  EXPECT_EQ(abort_failure("alice", Phase::BackingUp), "aborted by alice in BackingUp");
  // An approval is not an abort, and the other way round.
  EXPECT_FALSE(approval_mismatch(request, op).empty());
}

// A copy operation in `phase` with every restore verified (as CleaningUp always has).
Operation restored_operation(Phase phase) {
  if (testing::drain_phase(phase)) return testing::sample_drain(phase);
  if (testing::recovery_phase(phase)) return testing::sample_recovery(phase);
  Operation op = copy_operation(phase, 2);
  for (ClaimPlan& claim : op.claims) {
    claim.backup_verified = TreeSummary{};
    claim.recreated_uid = "new-" + claim.claim;
    claim.restore_verified = TreeSummary{};
  }
  return op;
}

TEST(SkipStep, OnlyCleaningUpIsSkippedAndEveryOtherPhaseSaysWhyAndWhatToRun) {
  // What each refusal must say: why skipping would hurt, and what to do instead.
  const std::map<Phase, std::vector<std::string>> says{
      {Phase::Pending, {"has not started yet"}},
      {Phase::Measuring,
       {"without knowing that their data fits", "stsresize advance shop/web --abort"}},
      {Phase::UpdatingTemplate,
       {"re-creates the StatefulSet object", "Let it finish", "--abort` once it is in Planning"}},
      {Phase::Planning, {"no plan", "stsresize advance shop/web --abort"}},
      {Phase::PreCopying,
       {"writing into the backup claims", "stsresize.dev/pre-copy=false",
        "stsresize advance shop/web --abort"}},
      {Phase::ScalingDown, {"while their pods still write", "stsresize advance shop/web --abort"}},
      {Phase::BackingUp,
       {"without a verified backup, losing their data", "stsresize advance shop/web --abort"}},
      {Phase::Recreating,
       {"not created again", "stsresize advance shop/web --abort",
        "stsresize.dev/operation=web-0123abcd,stsresize.dev/purpose=backup", "let it finish"}},
      {Phase::Restoring,
       {"the new claims would be empty", "delete the backup claims that hold it", "Let it finish",
        "stsresize.dev/purpose=backup"}},
      {Phase::ScalingUp,
       {"only after the pods are Ready on the new claims", "kubectl -n shop get pods",
        "kubectl -n shop describe pod POD", "continues by itself"}},
      {Phase::Expanding, {"did not reach the size asked for", "kubectl -n shop describe pvc"}},
      {Phase::ScalingBack, {"without its replicas", "ends in Failed by itself"}},
      {Phase::StoppingReplica,
       {"while their pods still write", "stsresize advance shop/web --abort"}},
      {Phase::StartingReplica, {"created again", "Let it finish"}},
      {Phase::Draining,
       {"cleanup pod has not Succeeded", "keeping every claim",
        "stsresize advance shop/web --abort"}},
      {Phase::DeletingClaims, {"the drain's last step", "ends by itself"}},
      {Phase::StoppingDrain, {"no pod holds a replica's name", "ends in Failed by itself"}},
      {Phase::AwaitingNode,
       {"the lost node to come back", "keeping every claim", "stsresize advance shop/web --abort"}},
      {Phase::ReplacingVolume, {"new claims", "ends by itself"}},
      {Phase::Reseeding, {"new claims", "ends by itself"}},
      {Phase::MarkingReplica, {"new claims", "ends by itself"}},
      {Phase::Completed, {"already ended in Completed"}},
      {Phase::Failed, {"already ended in Failed"}},
  };
  for (const Phase phase : kAllPhases) {
    SCOPED_TRACE(to_string(phase));
    const std::string why = skip_refusal(restored_operation(phase));
    if (phase == Phase::CleaningUp) {
      EXPECT_EQ(why, "");
      continue;
    }
    ASSERT_FALSE(why.empty());
    EXPECT_NE(why.find("web-0123abcd"), std::string::npos) << why;
    for (const std::string& part : says.at(phase)) {
      EXPECT_NE(why.find(part), std::string::npos) << "\"" << part << "\" not in: " << why;
    }
    if (!is_terminal(phase) && phase != Phase::Pending) {
      EXPECT_NE(why.find(testing::drain_phase(phase)      ? "no step of a drain can be skipped"
                         : testing::recovery_phase(phase) ? "no step of a recovery can be skipped"
                                                          : "only CleaningUp can be skipped"),
                std::string::npos)
          << why;
    }
  }
  // A Failed operation with intact sources: the way forward is a retry.
  EXPECT_NE(skip_refusal(copy_operation(Phase::Failed, 0)).find("--retry"), std::string::npos);
}

TEST(SkipStep, CleaningUpWithARestoreNeverVerifiedIsRefused) {
  Operation op = restored_operation(Phase::CleaningUp);
  op.claims[1].restore_verified.reset();
  const std::string why = skip_refusal(op);
  EXPECT_NE(why.find("restore of data-web-1 was never verified"), std::string::npos) << why;
  EXPECT_NE(why.find("data-web-1-stsresize-bak may hold the only copy"), std::string::npos) << why;
}

TEST(SkipStep, ARequestMustNameTheOperationAndThePhaseItSkips) {
  const Operation op = restored_operation(Phase::CleaningUp);
  AdvanceRequest request{Action::Skip, Phase::CleaningUp, op.id, "alice", "t", "n"};
  EXPECT_EQ(skip_mismatch(request, op), "");
  request.operation = "web-00000000";
  EXPECT_NE(skip_mismatch(request, op).find("skips a step of operation web-00000000"),
            std::string::npos);
  request.operation = op.id;
  // Written while the operation was in another phase: a skip names the step it skips.
  request.phase = Phase::ScalingUp;
  EXPECT_NE(skip_mismatch(request, op)
                .find("it skips ScalingUp, but operation web-0123abcd is "
                      "now in CleaningUp"),
            std::string::npos)
      << skip_mismatch(request, op);
  request.phase = Phase::Restoring;
  EXPECT_NE(skip_mismatch(request, restored_operation(Phase::Restoring)).find("empty"),
            std::string::npos);
  request.action = Action::Abort;
  EXPECT_NE(skip_mismatch(request, op).find("not skip"), std::string::npos);
  // A skip is neither an approval nor an abort.
  request.action = Action::Skip;
  request.phase = Phase::CleaningUp;
  EXPECT_FALSE(approval_mismatch(request, op).empty());
  EXPECT_FALSE(abort_mismatch(request, op).empty());
}

TEST(SkipStep, WhatIsKeptIsNamedWithTheCommandThatDeletesIt) {
  const Operation op = restored_operation(Phase::CleaningUp);
  auto object = [](const std::string& name, const std::string& operation) {
    return Json{
        {"metadata", {{"name", name}, {"labels", {{"stsresize.dev/operation", operation}}}}}};
  };
  const std::vector<Json> claims{object("data-web-0-stsresize-bak", op.id),
                                 object("data-web-1-stsresize-bak", op.id),
                                 object("data-web-1-stsresize-bak-old", "web-00000000"),
                                 Json{{"metadata", {{"name", "data-web-0"}}}}};
  const auto names = labelled_with(op, claims);
  EXPECT_EQ(names,
            (std::vector<std::string>{"data-web-0-stsresize-bak", "data-web-1-stsresize-bak"}));
  EXPECT_EQ(skip_keeps(op, names, {"data-web-1-stsresize-restore"}),
            "claims data-web-0-stsresize-bak, data-web-1-stsresize-bak and Job "
            "data-web-1-stsresize-restore (label stsresize.dev/operation=web-0123abcd); they are "
            "extra copies, delete them once no longer needed and before the next resize of this "
            "StatefulSet, whose backups take the same names: kubectl -n shop delete pvc,job -l "
            "stsresize.dev/operation=web-0123abcd");
  EXPECT_EQ(skip_keeps(op, {}, {}),
            "nothing (no claim or Job labelled stsresize.dev/operation=web-0123abcd)");
}

// The live objects of a copy operation failed after both sources were replaced: recreated
// claims with the recorded uids, Bound backup claims made by the operation.
struct Resumable {
  Operation op = copy_operation(Phase::Failed, 2);
  std::vector<Json> claims;
  std::vector<Json> jobs;

  Resumable() {
    op.failure = "copy Job data-web-1-stsresize-restore failed";
    for (ClaimPlan& claim : op.claims) claim.recreated_uid = "new-" + claim.claim;
    for (const ClaimPlan& claim : op.claims) {
      claims.push_back(Json{{"metadata", {{"name", claim.claim}, {"uid", claim.recreated_uid}}},
                            {"status", {{"phase", "Bound"}}}});
      claims.push_back(Json{{"metadata",
                             {{"name", claim.claim + "-stsresize-bak"},
                              {"uid", "bak"},
                              {"annotations", {{"stsresize.dev/operation", op.id}}}}},
                            {"status", {{"phase", "Bound"}}}});
    }
  }
  Json& live(const std::string& name) {
    for (Json& claim : claims) {
      if (claim["metadata"]["name"] == name) return claim;
    }
    throw std::runtime_error("no claim " + name);
  }
  std::string why() const { return resume_refusal(op, claims, jobs); }
};

Json job(const std::string& operation, const std::string& condition) {
  Json out{{"metadata",
            {{"name", "data-web-1-stsresize-restore"},
             {"labels", {{"stsresize.dev/operation", operation}}},
             {"annotations", {{"stsresize.dev/operation", operation}}}}},
           {"status", Json::object()}};
  if (!condition.empty()) {
    out["status"]["conditions"] = Json::array({{{"type", condition}, {"status", "True"}}});
  }
  return out;
}

TEST(Resume, OnlyAFailureAfterASourceDeleteInRestoringScalingUpOrCleaningUpIsResumed) {
  for (const Phase phase : kAllPhases) {
    SCOPED_TRACE(to_string(phase));
    Resumable world;
    world.op.failed_in = phase;
    const bool resumable =
        phase == Phase::Restoring || phase == Phase::ScalingUp || phase == Phase::CleaningUp;
    EXPECT_EQ(world.why().empty(), resumable) << world.why();
    if (!resumable) {
      EXPECT_NE(world.why().find("only a failure in Restoring, ScalingUp or CleaningUp"),
                std::string::npos)
          << world.why();
      EXPECT_NE(world.why().find("stsresize.dev/purpose=backup"), std::string::npos);
    }
  }
  Resumable old;
  EXPECT_NE(old.why().find("does not record the phase it failed in"), std::string::npos)
      << old.why();
  Resumable running;
  running.op.phase = Phase::Restoring;
  EXPECT_NE(running.why().find("not Failed"), std::string::npos) << running.why();
  Resumable intact;
  intact.op = copy_operation(Phase::Failed, 0);
  intact.op.failed_in = Phase::BackingUp;
  EXPECT_FALSE(resumes_in_place(intact.op));
  EXPECT_NE(intact.why().find("starts it again as a new operation"), std::string::npos);
  Resumable resumable;
  resumable.op.failed_in = Phase::Restoring;
  EXPECT_TRUE(resumes_in_place(resumable.op));
}

TEST(Resume, RestoringNeedsEveryRecreatedClaimAndEveryBackupNotYetRestoredAndNoJobRunning) {
  auto restoring = [] {
    Resumable world;
    world.op.failed_in = Phase::Restoring;
    return world;
  };
  auto refused = [](const Resumable& world, const std::string& fragment) {
    const std::string why = world.why();
    EXPECT_NE(why.find(fragment), std::string::npos) << why;
  };
  Resumable replaced = restoring();
  replaced.live("data-web-0")["metadata"]["uid"] = "someone-elses";
  refused(replaced, "recreated claim data-web-0 was replaced");
  Resumable deleting = restoring();
  deleting.live("data-web-1")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  refused(deleting, "recreated claim data-web-1 is being deleted");
  Resumable no_backup = restoring();
  no_backup.live("data-web-1-stsresize-bak")["metadata"]["name"] = "elsewhere";
  refused(no_backup, "backup claim data-web-1-stsresize-bak of data-web-1 is gone");
  Resumable foreign = restoring();
  foreign.live("data-web-1-stsresize-bak")["metadata"]["annotations"].clear();
  refused(foreign, "was not created by this operation");
  Resumable pending = restoring();
  pending.live("data-web-1-stsresize-bak")["status"]["phase"] = "Pending";
  refused(pending, "is Pending, not Bound");
  Resumable backup_deleting = restoring();
  backup_deleting.live("data-web-0-stsresize-bak")["metadata"]["deletionTimestamp"] = "x";
  refused(backup_deleting, "is being deleted by someone else");
  // Restored already: its backup is no longer needed to resume.
  Resumable restored = restoring();
  restored.op.claims[1].restore_verified = TreeSummary{};
  restored.live("data-web-1-stsresize-bak")["metadata"]["name"] = "elsewhere";
  EXPECT_EQ(restored.why(), "");
  // ScalingUp: every restore was verified, the backups are not needed.
  Resumable scaling_up = restoring();
  scaling_up.op.failed_in = Phase::ScalingUp;
  scaling_up.live("data-web-1-stsresize-bak")["metadata"]["name"] = "elsewhere";
  EXPECT_EQ(scaling_up.why(), "");

  Resumable running = restoring();
  running.jobs.push_back(job(running.op.id, ""));
  refused(running, "copy Job data-web-1-stsresize-restore of the operation is still running");
  EXPECT_TRUE(failed_jobs(running.op, running.jobs).empty());
  Resumable failed = restoring();
  failed.jobs.push_back(job(failed.op.id, "Failed"));
  failed.jobs.push_back(job("web-99999999", "Failed"));  // another operation's
  EXPECT_EQ(failed.why(), "");
  ASSERT_EQ(failed_jobs(failed.op, failed.jobs).size(), 1u);
  Resumable complete = restoring();
  complete.jobs.push_back(job(complete.op.id, "Complete"));
  EXPECT_EQ(complete.why(), "");
  EXPECT_TRUE(failed_jobs(complete.op, complete.jobs).empty());

  const AdvanceRequest request{Action::Retry, Phase::Failed, "web-00000000", "alice", "t", "n"};
  EXPECT_NE(resume_mismatch(request, failed.op, failed.claims, failed.jobs)
                .find("retries operation web-00000000"),
            std::string::npos);
  AdvanceRequest approve = request;
  approve.action = Action::Approve;
  approve.operation = failed.op.id;
  EXPECT_NE(resume_mismatch(approve, failed.op, failed.claims, failed.jobs).find("is not retry"),
            std::string::npos);
}

TEST(Retry, AnInvalidRequestIsNamedOnceInWhyNothingWouldStart) {
  Json sts{{"metadata",
            {{"name", "web"},
             {"namespace", "shop"},
             {"annotations", {{std::string{kResizeRequestAnnotation}, "data: 2Gi"}}}}},
           {"spec",
            {{"replicas", 3},
             {"volumeClaimTemplates",
              Json::array({{{"metadata", {{"name", "data"}}},
                            {"spec", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}})}}}};
  auto wanted = wanted_resize(sts, {}, std::nullopt);
  ASSERT_FALSE(wanted);
  EXPECT_EQ(wanted.error(),
            "its stsresize.dev/resize request is invalid: not valid JSON (expected e.g. "
            R"({"data":{"storage":"20Gi"}}))");
}

}  // namespace
}  // namespace stsresize
