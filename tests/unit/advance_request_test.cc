// stsresize.dev/mode and stsresize.dev/advance: which transitions wait, the strict codec of an
// approval, and how a waiting transition is kept in the state annotation.
#include "engine/advance_request.h"

#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/operation_codec.h"

namespace stsresize {
namespace {

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

TEST(ApprovalMode, ManualHoldsEveryForwardTransitionStepOnlyTheOneIntoRecreating) {
  for (const Phase from : kAllPhases) {
    for (const Phase to : kAllPhases) {
      for (const PhaseEvent event : {PhaseEvent::StepDone, PhaseEvent::PlannedCopy}) {
        EXPECT_FALSE(needs_approval(ApprovalMode::Auto, from, to, event));
        EXPECT_TRUE(needs_approval(ApprovalMode::Manual, from, to, event));
        EXPECT_EQ(needs_approval(ApprovalMode::Step, from, to, event), to == Phase::Recreating);
      }
      // Error transitions protect the data: they never wait.
      for (const PhaseEvent event :
           {PhaseEvent::CriticalError, PhaseEvent::ScaleBackDone, PhaseEvent::Abort}) {
        EXPECT_FALSE(needs_approval(ApprovalMode::Manual, from, to, event));
        EXPECT_FALSE(needs_approval(ApprovalMode::Step, from, to, event));
      }
    }
  }
}

TEST(AdvanceRequest, SurvivesEncodeAndDecode) {
  const AdvanceRequest request{"approve", Phase::BackingUp,       "web-0123abcd",
                               "alice",   "2027-01-15T08:00:00Z", "0123456789abcdef"};
  auto decoded = decode_advance_request(encode_advance_request(request));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, request);
}

TEST(AdvanceRequest, RefusesWhatIsNotExactlyARequest) {
  Json good = Json::parse(encode_advance_request(
      {"approve", Phase::BackingUp, "web-0123abcd", "alice", "2027-01-15T08:00:00Z", "n"}));
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
}

TEST(AdvanceRequest, ApprovesOnlyThePhaseAndOperationThatWait) {
  Operation op;
  op.id = "web-1";
  op.phase = Phase::BackingUp;
  AdvanceRequest request{"approve", Phase::BackingUp, "web-1", "alice", "t", "n"};
  EXPECT_EQ(approval_mismatch(request, op), "");
  request.phase = Phase::Planning;
  EXPECT_NE(approval_mismatch(request, op).find("leaving phase Planning"), std::string::npos);
  request.phase = Phase::BackingUp;
  request.operation = "web-2";
  EXPECT_NE(approval_mismatch(request, op).find("approves operation web-2"), std::string::npos);
  request.operation = "web-1";
  request.action = "teleport";
  EXPECT_NE(approval_mismatch(request, op).find("\"teleport\""), std::string::npos);
}

Operation waiting_operation() {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid";
  op.phase = Phase::BackingUp;
  op.awaiting = AwaitedApproval{Phase::BackingUp, Phase::Recreating, PhaseEvent::StepDone};
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
  Operation op = waiting_operation();
  op.awaiting.reset();
  op.phase = phase;
  for (int i = 0; i < 2; ++i) {
    ClaimPlan claim;
    claim.claim = "data-web-" + std::to_string(i);
    claim.source_deleted = i < sources_deleted;
    op.claims.push_back(claim);
  }
  return op;
}

TEST(Abort, OnlyPhasesBeforeASourceDeleteAreAbortable) {
  for (const Phase phase : kAllPhases) {
    SCOPED_TRACE(to_string(phase));
    const bool abortable = phase == Phase::Planning || phase == Phase::ScalingDown ||
                           phase == Phase::BackingUp || phase == Phase::Recreating;
    const std::string why = abort_refusal(copy_operation(phase, 0));
    EXPECT_EQ(why.empty(), abortable) << why;
    if (!why.empty()) {
      EXPECT_NE(why.find("web-0123abcd"), std::string::npos) << why;
    }
  }
  const std::string deleted = abort_refusal(copy_operation(Phase::Recreating, 1));
  EXPECT_NE(deleted.find("already deleted source claim data-web-0: its data is now only in "
                         "backup claim data-web-0-stsresize-bak"),
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
}

TEST(Abort, ARequestMustNameTheOperationAndFindItAbortable) {
  const Operation op = copy_operation(Phase::ScalingDown, 0);
  AdvanceRequest request{"abort", Phase::Planning, op.id, "alice", "t", "n"};
  // Written in an earlier phase that is still abortable: taken.
  EXPECT_EQ(abort_mismatch(request, op), "");
  request.operation = "web-00000000";
  EXPECT_NE(abort_mismatch(request, op).find("aborts operation web-00000000"), std::string::npos);
  request.operation = op.id;
  EXPECT_NE(abort_mismatch(request, copy_operation(Phase::Restoring, 2)).find("Restoring"),
            std::string::npos);
  EXPECT_EQ(abort_failure("alice", Phase::BackingUp), "aborted by alice in BackingUp");
  EXPECT_TRUE(is_abort_failure(abort_failure("alice", Phase::BackingUp)));
  EXPECT_FALSE(is_abort_failure("copy Job failed"));
  // An approval is not an abort, and the other way round.
  EXPECT_FALSE(approval_mismatch(request, op).empty());
}

}  // namespace
}  // namespace stsresize
