// `stsresize advance`: its help, what --dry-run prints, and every refusal's wording (golden
// files), on a FakeKubernetes holding a StatefulSet in the state each case needs.
#include "adapters/app/advance_command.h"

#include <gtest/gtest.h>

#include "tests/support/operation_samples.h"

#include <functional>
#include <sstream>

#include "adapters/app/cli.h"
#include "adapters/app/exit_codes.h"
#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "engine/actions/request.h"
#include "engine/annotations.h"
#include "engine/timestamp.h"
#include "tests/support/engine_harness.h"
#include "tests/support/golden.h"
#include "tests/support/refusals.h"

namespace stsresize::cli {
namespace {

using stsresize::testing_support::expect_matches_golden;

class AdvanceCommand : public ::testing::Test {
 protected:
  ManualClock clock{*parse_timestamp("2027-01-15T08:00:00Z")};
  FakeKubernetes kube{clock};
  const ObjectRef web{Kind::StatefulSet, "shop", "web"};

  void SetUp() override {
    Json sts{{"apiVersion", "apps/v1"},
             {"kind", "StatefulSet"},
             {"metadata", {{"name", "web"}, {"namespace", "shop"}}},
             {"spec",
              {{"replicas", 3},
               {"serviceName", "web"},
               {"selector", {{"matchLabels", {{"app", "web"}}}}},
               {"template",
                {{"metadata", {{"labels", {{"app", "web"}}}}},
                 {"spec", {{"containers", Json::array({{{"name", "app"}, {"image", "nginx"}}})}}}}},
               {"volumeClaimTemplates",
                Json::array({{{"metadata", {{"name", "data"}}},
                              {"spec",
                               {{"accessModes", {"ReadWriteOnce"}},
                                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}})}}}};
    ASSERT_TRUE(kube.system().create(Kind::StatefulSet, sts));
    // The source claims of planned(): abort reads them in Recreating.
    for (int i = 0; i < 3; ++i) {
      kube.put_raw(Kind::PersistentVolumeClaim,
                   Json{{"metadata",
                         {{"name", "data-web-" + std::to_string(i)},
                          {"namespace", "shop"},
                          {"uid", "uid-" + std::to_string(i)}}},
                        {"spec",
                         {{"accessModes", {"ReadWriteOnce"}},
                          {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}});
    }
  }

  // Puts an operation in `phase` on the StatefulSet, waiting to go to `to` unless nullopt.
  void put_operation(Phase phase, std::optional<Phase> to, const std::string& mode = "manual",
                     const std::function<void(Operation&)>& change = {}) {
    kube.mutate_raw(web, [&](Json& live) {
      Operation op;
      op.id = "web-0123abcd";
      op.ns = "shop";
      op.statefulset = "web";
      op.sts_uid = live["metadata"]["uid"].get<std::string>();
      op.phase = phase;
      op.path = Path::Copy;
      op.original_replicas = 3;
      if (testing::drain_phase(phase)) {
        op = testing::sample_drain(phase);
        op.sts_uid = live["metadata"]["uid"].get<std::string>();
      }
      if (testing::recovery_phase(phase)) {
        op = testing::sample_recovery(phase);
        op.sts_uid = live["metadata"]["uid"].get<std::string>();
      }
      if (phase == Phase::Failed) op.failure = "copy Job data-web-0-stsresize-backup failed";
      if (to) op.awaiting = AwaitedApproval{phase, *to, Trigger::StepDone};
      if (change) change(op);
      live = with_operation(live, op);
      live["metadata"]["annotations"][std::string{kModeAnnotation}] = mode;
    });
  }

  std::pair<int, std::string> advance(AdvanceOptions options) {
    const testing::CliResult run = testing::run_advance_command(
        kube, options, {"kubernetes-admin", "shop", clock.now(), "0123456789abcdef"});
    return {run.code, run.out + run.err};
  }
};

TEST_F(AdvanceCommand, HelpExplainsModesIdentityAndExitCodes) {
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"advance", "--help"}, out, err), kExitOk);
  expect_matches_golden("advance_help.txt", out.str());
}

TEST_F(AdvanceCommand, DryRunShowsTheApprovalItWouldWrite) {
  put_operation(Phase::BackingUp, Phase::Recreating, "step");
  const int before = kube.mutations();
  auto [code, output] = advance({.target = "shop/web", .approve = true, .dry_run = true});
  EXPECT_EQ(code, kExitOk);
  EXPECT_EQ(kube.mutations(), before);
  expect_matches_golden("advance_dry_run.txt", output);
}

TEST_F(AdvanceCommand, ApprovalIsWrittenWithTheCallerAndTheWaitingPhase) {
  put_operation(Phase::BackingUp, Phase::Recreating, "step");
  // NAME alone: the kubeconfig context's namespace.
  auto [code, output] = advance({.target = "web", .approve = true});
  ASSERT_EQ(code, kExitOk) << output;
  auto text = kube.get_raw(web).value()["metadata"]["annotations"]["stsresize.dev/advance"];
  auto request = decode_advance_request(text.get<std::string>());
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(*request,
            (AdvanceRequest{Action::Approve, Phase::BackingUp, "web-0123abcd", "kubernetes-admin",
                            "2027-01-15T08:00:00.000Z", "0123456789abcdef"}));
}

TEST_F(AdvanceCommand, AnUnreadablePendingRequestIsReplacedAndNamedOnce) {
  put_operation(Phase::BackingUp, Phase::Recreating, "step");
  kube.mutate_raw(web, [](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] = "{not json";
  });
  auto [code, output] = advance({.target = "shop/web", .approve = true, .as = "alice"});
  ASSERT_EQ(code, kExitOk) << output;
  EXPECT_EQ(output.substr(0, output.find('\n')),
            "approved BackingUp -> Recreating of operation web-0123abcd on shop/web as alice "
            "(replaces the pending request, which is unreadable: annotation "
            "stsresize.dev/advance: not a JSON object)");
}

TEST_F(AdvanceCommand, AnInvalidNamespaceIsAUsageErrorAndNothingIsSent) {
  for (const std::string target : {"../web", "Shop/web", "a.b/web"}) {
    auto [code, output] = advance({.target = target, .approve = true});
    EXPECT_EQ(code, kExitUsage) << target;
    const std::string ns = target.substr(0, target.find('/'));
    EXPECT_EQ(output, "stsresize advance: \"" + ns +
                          "\" is not a namespace name (at most 63 lowercase letters, digits and "
                          "'-', starting and ending with a letter or digit, e.g. shop) (example: "
                          "stsresize advance shop/web --approve)\n");
  }
  EXPECT_EQ(kube.calls(Verb::Get), 0);
  // Before connecting too: the command line alone, with no credentials needed to refuse it.
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"advance", "../web", "--approve", "--kubeconfig", "/nonexistent"}, out, err),
            kExitUsage);
  EXPECT_EQ(err.str().find("stsresize advance: \"..\" is not a namespace name"), 0u) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(run_cli({"advance", "shop/web", "--approve", "--apply-locally", "--journal", "j.db",
                     "--leader-elect-namespace", "..", "--kubeconfig", "/nonexistent"},
                    out2, err2),
            kExitUsage);
  EXPECT_EQ(err2.str().find("stsresize advance: --leader-elect-namespace: \"..\" is not a "
                            "namespace name"),
            0u)
      << err2.str();
}

TEST_F(AdvanceCommand, AnInvalidStatefulSetNameIsAUsageErrorAndNothingIsSent) {
  for (const std::string target : {"shop/Web_1", "shop/..", "web-", "a..b"}) {
    auto [code, output] = advance({.target = target, .approve = true});
    EXPECT_EQ(code, kExitUsage) << target;
    const std::string name = target.substr(target.find('/') + 1);
    EXPECT_EQ(output.find("stsresize advance: \"" + name + "\" is not a StatefulSet name"), 0u)
        << output;
  }
  EXPECT_EQ(kube.calls(Verb::Get), 0);
}

TEST_F(AdvanceCommand, EveryRefusalSaysWhyAndWhatToRun) {
  std::string transcript;
  auto record = [&](const std::string& title, AdvanceOptions options, int expected_code) {
    auto [code, output] = advance(options);
    EXPECT_EQ(code, expected_code) << title << ": " << output;
    transcript += "## " + title + " (exit " + std::to_string(code) + ")\n" + output;
  };
  record("no action", {.target = "shop/web"}, kExitUsage);
  record("not NAMESPACE/NAME", {.target = "shop/web/x", .approve = true}, kExitUsage);
  record("no such StatefulSet", {.target = "shop/nope", .approve = true}, kExitRefused);
  record("no operation", {.target = "shop/web", .approve = true}, kExitRefused);
  put_operation(Phase::ScalingDown, std::nullopt, "auto");
  record("nothing waits", {.target = "shop/web", .approve = true}, kExitRefused);
  put_operation(Phase::Failed, std::nullopt);
  record("failed", {.target = "shop/web", .approve = true}, kExitRefused);
  put_operation(Phase::BackingUp, Phase::Recreating);
  record("first approval", {.target = "shop/web", .approve = true, .as = "alice"}, kExitOk);
  record("already approved", {.target = "shop/web", .approve = true}, kExitRefused);
  kube.mutate_raw(web, [](Json& live) {
    live["metadata"]["annotations"]["stsresize.dev/state"] = "{not json";
  });
  record("unreadable state", {.target = "shop/web", .approve = true}, kExitRefused);
  expect_matches_golden("advance_refusals.txt", transcript);
}

// Claims data-web-0..2 in the plan; the first `deleted` of them already deleted.
std::function<void(Operation&)> planned(int deleted) {
  return [deleted](Operation& op) {
    for (int i = 0; i < 3; ++i) {
      ClaimPlan claim;
      claim.claim = "data-web-" + std::to_string(i);
      claim.template_name = "data";
      claim.ordinal = i;
      claim.source_uid = "uid-" + std::to_string(i);
      claim.backup_verified = TreeSummary{};
      claim.source_deleted = i < deleted;
      op.claims.push_back(claim);
    }
  };
}

TEST_F(AdvanceCommand, AbortInEveryPhaseSaysWhatItWouldDoOrWhyNot) {
  std::string transcript;
  auto record = [&](const std::string& title, AdvanceOptions options, int expected_code) {
    const int before = kube.mutations();
    auto [code, output] = advance(options);
    EXPECT_EQ(code, expected_code) << title << ": " << output;
    if (options.dry_run || code != kExitOk) {
      EXPECT_EQ(kube.mutations(), before) << title;
    }
    transcript += "## " + title + " (exit " + std::to_string(code) + ")\n" + output;
  };
  const AdvanceOptions abort{.target = "shop/web", .abort = true};
  const AdvanceOptions dry_run{.target = "shop/web", .abort = true, .dry_run = true};
  record("both actions", {.target = "shop/web", .approve = true, .abort = true}, kExitUsage);
  record("no operation", abort, kExitRefused);
  for (const Phase phase : kAllPhases) {
    if (phase == Phase::Pending) continue;
    // From Restoring on, a two-copy resize has deleted every source (progress_mismatch).
    const bool replaced =
        phase == Phase::Restoring || phase == Phase::ScalingUp || phase == Phase::CleaningUp;
    put_operation(phase, std::nullopt, "auto", planned(replaced ? 3 : 0));
    record(std::string{to_string(phase)} + ", dry run", dry_run,
           testing::abort_refusal(**read_operation(*kube.get_raw(web))).empty() ? kExitOk
                                                                                : kExitRefused);
  }
  put_operation(Phase::Recreating, std::nullopt, "auto", planned(2));
  record("Recreating, two sources deleted", abort, kExitRefused);
  // Deleted but not gone yet (pvc-protection): no more undoable, though not recorded yet.
  kube.mutate_raw({Kind::PersistentVolumeClaim, "shop", "data-web-0"}, [](Json& live) {
    live["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  });
  put_operation(Phase::Recreating, std::nullopt, "auto", planned(0));
  record("Recreating, a source being deleted", abort, kExitRefused);
  // The rebind path: each deleted source's volume is kept, so Restoring can still scale back.
  put_operation(Phase::Restoring, std::nullopt, "auto", [&](Operation& op) {
    planned(3)(op);
    testing::on_rebind_path(op);
  });
  record("Restoring on the rebind path, dry run", dry_run, kExitOk);
  put_operation(Phase::ScalingUp, std::nullopt, "auto", [&](Operation& op) {
    planned(3)(op);
    testing::on_rebind_path(op);
  });
  record("ScalingUp on the rebind path, dry run", dry_run, kExitRefused);
  put_operation(Phase::BackingUp, Phase::Recreating, "step", planned(0));
  record("BackingUp awaiting approval, dry run", dry_run, kExitOk);
  record("BackingUp awaiting approval", {.target = "shop/web", .abort = true, .as = "carol"},
         kExitOk);
  record("abort already pending", abort, kExitRefused);
  expect_matches_golden("advance_abort.txt", transcript);
}

TEST_F(AdvanceCommand, RetryChecksEveryPreconditionAndSaysWhatItWouldStart) {
  std::string transcript;
  auto record = [&](const std::string& title, AdvanceOptions options, int expected_code) {
    const int before = kube.mutations();
    auto [code, output] = advance(options);
    EXPECT_EQ(code, expected_code) << title << ": " << output;
    if (options.dry_run || code != kExitOk) {
      EXPECT_EQ(kube.mutations(), before) << title;
    }
    transcript += "## " + title + " (exit " + std::to_string(code) + ")\n" + output;
  };
  const AdvanceOptions retry{.target = "shop/web", .retry = true};
  const AdvanceOptions dry_run{.target = "shop/web", .retry = true, .dry_run = true};
  record("both actions", {.target = "shop/web", .abort = true, .retry = true}, kExitUsage);
  record("no operation", retry, kExitRefused);
  put_operation(Phase::ScalingDown, std::nullopt, "auto", planned(0));
  record("in progress", retry, kExitRefused);
  put_operation(Phase::Failed, std::nullopt, "auto", planned(2));
  record("failed after two sources were replaced", retry, kExitRefused);
  put_operation(Phase::Failed, std::nullopt, "auto", planned(0));
  record("a source claim not Bound", retry, kExitRefused);
  for (int i = 0; i < 3; ++i) {
    kube.mutate_raw({Kind::PersistentVolumeClaim, "shop", "data-web-" + std::to_string(i)},
                    [](Json& live) { live["status"]["phase"] = "Bound"; });
  }
  kube.put_raw(Kind::Job, Json{{"metadata",
                                {{"name", "data-web-0-stsresize-backup"},
                                 {"namespace", "shop"},
                                 {"labels", {{"stsresize.dev/operation", "web-0123abcd"}}}}}});
  record("a Job of the failed operation left", retry, kExitRefused);
  ASSERT_TRUE(kube.system().remove({Kind::Job, "shop", "data-web-0-stsresize-backup"}, {}));
  record("nothing asked for", retry, kExitRefused);
  kube.mutate_raw(web, [](Json& live) {
    live["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "2Gi";
  });
  record("dry run", dry_run, kExitOk);
  record("written", {.target = "shop/web", .retry = true, .as = "carol"}, kExitOk);
  record("already requested", retry, kExitRefused);
  expect_matches_golden("advance_retry.txt", transcript);
}

TEST_F(AdvanceCommand, SkipStepInEveryPhaseSaysWhatItWouldKeepOrWhyNot) {
  std::string transcript;
  auto record = [&](const std::string& title, AdvanceOptions options, int expected_code) {
    const int before = kube.mutations();
    auto [code, output] = advance(options);
    EXPECT_EQ(code, expected_code) << title << ": " << output;
    if (options.dry_run || code != kExitOk) {
      EXPECT_EQ(kube.mutations(), before) << title;
    }
    transcript += "## " + title + " (exit " + std::to_string(code) + ")\n" + output;
  };
  const AdvanceOptions skip{.target = "shop/web", .skip_step = true};
  const AdvanceOptions dry_run{.target = "shop/web", .skip_step = true, .dry_run = true};
  record("with another action", {.target = "shop/web", .abort = true, .skip_step = true},
         kExitUsage);
  record("no operation", skip, kExitRefused);
  // What CleaningUp had not deleted yet: one backup claim and one Job of the operation, and a
  // claim of another operation that is not named.
  auto labelled = [](const std::string& name, const std::string& operation) {
    return Json{
        {"metadata",
         {{"name", name},
          {"namespace", "shop"},
          {"labels",
           {{"stsresize.dev/operation", operation}, {"stsresize.dev/statefulset", "web"}}}}}};
  };
  kube.put_raw(Kind::PersistentVolumeClaim, labelled("data-web-2-stsresize-bak", "web-0123abcd"));
  kube.put_raw(Kind::PersistentVolumeClaim, labelled("data-web-9-stsresize-bak", "web-00000000"));
  kube.put_raw(Kind::Job, labelled("data-web-2-stsresize-restore", "web-0123abcd"));
  auto restored = [](Operation& op) {
    planned(3)(op);
    for (ClaimPlan& claim : op.claims) {
      claim.recreated_uid = "new-" + claim.claim;
      claim.restore_verified = TreeSummary{};
    }
  };
  for (const Phase phase : kAllPhases) {
    if (phase == Phase::Pending) continue;
    put_operation(phase, std::nullopt, "auto", restored);
    record(std::string{to_string(phase)} + ", dry run", dry_run,
           phase == Phase::CleaningUp ? kExitOk : kExitRefused);
  }
  put_operation(Phase::CleaningUp, Phase::Completed, "manual", restored);
  record("CleaningUp awaiting approval, an approval pending",
         {.target = "shop/web", .approve = true, .as = "bob"}, kExitOk);
  record("written over the approval", {.target = "shop/web", .skip_step = true, .as = "carol"},
         kExitOk);
  record("already requested", skip, kExitRefused);
  record("an approval while the skip is pending", {.target = "shop/web", .approve = true},
         kExitRefused);
  expect_matches_golden("advance_skip.txt", transcript);
}

TEST_F(AdvanceCommand, SkipIsWrittenWithTheCallerAndThePhaseItSkips) {
  put_operation(Phase::CleaningUp, std::nullopt, "auto");
  auto [code, output] = advance({.target = "web", .skip_step = true});
  ASSERT_EQ(code, kExitOk) << output;
  auto text = kube.get_raw(web).value()["metadata"]["annotations"]["stsresize.dev/advance"];
  auto request = decode_advance_request(text.get<std::string>());
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(*request,
            (AdvanceRequest{Action::Skip, Phase::CleaningUp, "web-0123abcd", "kubernetes-admin",
                            "2027-01-15T08:00:00.000Z", "0123456789abcdef"}));
}

// Failed after the source claims were replaced: --retry resumes the operation in the phase it
// failed in, once every recreated claim, every backup still needed and the Jobs allow it.
TEST_F(AdvanceCommand, ResumeChecksEveryPreconditionAndSaysWhatItWouldDo) {
  std::string transcript;
  auto record = [&](const std::string& title, AdvanceOptions options, int expected_code) {
    const int before = kube.mutations();
    auto [code, output] = advance(options);
    EXPECT_EQ(code, expected_code) << title << ": " << output;
    if (options.dry_run || code != kExitOk) {
      EXPECT_EQ(kube.mutations(), before) << title;
    }
    transcript += "## " + title + " (exit " + std::to_string(code) + ")\n" + output;
  };
  const AdvanceOptions retry{.target = "shop/web", .retry = true};
  const AdvanceOptions dry_run{.target = "shop/web", .retry = true, .dry_run = true};
  // Every source replaced, data-web-0 already restored; it failed in `failed_in`.
  auto failed_in = [&](std::optional<Phase> phase) {
    put_operation(Phase::Failed, std::nullopt, "auto", [&](Operation& op) {
      planned(3)(op);
      for (ClaimPlan& claim : op.claims) claim.recreated_uid = "new-" + claim.source_uid;
      op.claims[0].restore_verified = TreeSummary{};
      op.failure = "copy Job data-web-1-stsresize-restore failed (BackoffLimitExceeded)";
      op.failed_in = phase;
    });
  };
  auto backup = [&](int i, const std::string& phase) {
    kube.put_raw(Kind::PersistentVolumeClaim,
                 Json{{"metadata",
                       {{"name", "data-web-" + std::to_string(i) + "-stsresize-bak"},
                        {"namespace", "shop"},
                        {"uid", "bak-" + std::to_string(i)},
                        {"labels", {{"stsresize.dev/operation", "web-0123abcd"}}},
                        {"annotations", {{"stsresize.dev/operation", "web-0123abcd"}}}}},
                      {"status", {{"phase", phase}}}});
  };
  auto job = [&](const std::string& name, bool failed) {
    Json status = Json::object();
    if (failed) {
      status["conditions"] = Json::array(
          {{{"type", "Failed"}, {"status", "True"}, {"reason", "BackoffLimitExceeded"}}});
    }
    kube.put_raw(Kind::Job, Json{{"metadata",
                                  {{"name", name},
                                   {"namespace", "shop"},
                                   {"uid", "job-uid"},
                                   {"labels", {{"stsresize.dev/operation", "web-0123abcd"}}},
                                   {"annotations", {{"stsresize.dev/operation", "web-0123abcd"}}}}},
                                 {"status", status}});
  };
  failed_in(std::nullopt);
  record("failed phase not recorded (older annotation)", retry, kExitRefused);
  failed_in(Phase::Recreating);
  record("failed in Recreating", retry, kExitRefused);
  failed_in(Phase::Restoring);
  record("a recreated claim replaced", retry, kExitRefused);
  for (int i = 0; i < 3; ++i) {
    kube.mutate_raw({Kind::PersistentVolumeClaim, "shop", "data-web-" + std::to_string(i)},
                    [i](Json& live) { live["metadata"]["uid"] = "new-uid-" + std::to_string(i); });
  }
  backup(1, "Bound");
  record("a backup claim gone", retry, kExitRefused);
  backup(2, "Pending");
  record("a backup claim not Bound", retry, kExitRefused);
  backup(2, "Bound");
  job("data-web-2-stsresize-restore", false);
  record("a Job of the operation running", retry, kExitRefused);
  job("data-web-2-stsresize-restore", true);
  job("data-web-1-stsresize-restore", true);
  record("dry run", dry_run, kExitOk);
  record("written", {.target = "shop/web", .retry = true, .as = "carol"}, kExitOk);
  record("already requested", retry, kExitRefused);
  expect_matches_golden("advance_resume.txt", transcript);
}

TEST_F(AdvanceCommand, AbortIsWrittenWithTheCallerAndThePhaseSeen) {
  put_operation(Phase::ScalingDown, std::nullopt, "auto", planned(0));
  auto [code, output] = advance({.target = "web", .abort = true});
  ASSERT_EQ(code, kExitOk) << output;
  auto text = kube.get_raw(web).value()["metadata"]["annotations"]["stsresize.dev/advance"];
  auto request = decode_advance_request(text.get<std::string>());
  ASSERT_TRUE(request) << request.error();
  EXPECT_EQ(*request,
            (AdvanceRequest{Action::Abort, Phase::ScalingDown, "web-0123abcd", "kubernetes-admin",
                            "2027-01-15T08:00:00.000Z", "0123456789abcdef"}));
}

TEST_F(AdvanceCommand, A409ReadsAgainAndDecidesOnWhatTheStatefulSetSaysNow) {
  // Someone else's write (the StatefulSet controller's status) in between: written on a re-read.
  put_operation(Phase::BackingUp, Phase::Recreating, "step");
  kube.inject({.verb = Verb::Update,
               .kind = Kind::StatefulSet,
               .error = KubeError{KubeErrorCode::Conflict, "the object has been modified"}});
  auto [approved, approval] = advance({.target = "shop/web", .approve = true});
  ASSERT_EQ(approved, kExitOk) << approval;
  EXPECT_TRUE(
      kube.get_raw(web).value()["metadata"]["annotations"].contains("stsresize.dev/advance"));

  // The operation moved on meanwhile: the refusal says that the StatefulSet changed.
  kube.mutate_raw(
      web, [](Json& live) { live["metadata"]["annotations"].erase("stsresize.dev/advance"); });
  kube.inject({.verb = Verb::Update,
               .kind = Kind::StatefulSet,
               .error = KubeError{KubeErrorCode::Conflict, "the object has been modified"},
               .action = [this] { put_operation(Phase::ScalingUp, std::nullopt); }});
  auto [aborted, abort] = advance({.target = "shop/web", .abort = true});
  EXPECT_EQ(aborted, kExitRefused) << abort;
  EXPECT_NE(abort.find("refused: the StatefulSet changed while the abort was being written (409 "
                       "Conflict), and now: "),
            std::string::npos)
      << abort;
  EXPECT_FALSE(
      kube.get_raw(web).value()["metadata"]["annotations"].contains("stsresize.dev/advance"));
}

TEST_F(AdvanceCommand, WithoutAUserOrAsItCannotSign) {
  put_operation(Phase::BackingUp, Phase::Recreating);
  std::ostringstream out, err;
  const AdvanceCaller anonymous{"", "shop", clock.now(), "n"};
  EXPECT_EQ(run_advance(kube, {.target = "shop/web", .approve = true}, anonymous, out, err),
            kExitUsage);
  EXPECT_NE(err.str().find("pass --as NAME"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace stsresize::cli
