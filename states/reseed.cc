// Reseeding: the lost replica's claims and pod are deleted and its StatefulSet is paused, so its
// controller creates nothing. The recovery creates the new claims itself (as that controller
// would, marked recovered-from), runs the re-seed pod (kRecoveryPodTemplateAnnotation) on them
// once, and resumes the StatefulSet, whose controller then creates the replica's pod on claims
// the re-seed has filled: the replica never runs on them before the re-seed ended. A re-seed
// that fails (or cannot be built, or whose pod someone deletes) is reported and the replica
// starts on its new claims as they are: a recovery without a re-seed gives it the same.
#include "engine/cleanup_pod.h"
#include "engine/lost_volume.h"
#include "engine/naming.h"
#include "states/fence.h"
#include "states/recovery_support.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// Creates the first of the new claims that does not exist yet; nullopt once they all exist.
std::optional<StepOutcome> create_claims(StepContext& ctx) {
  const LostReplica& lost = *ctx.op.lost;
  for (const LostClaim& c : lost.claims) {
    const ObjectRef ref = claim_ref(ctx.op, c.claim);
    auto claim = get_optional(ctx, ref);
    if (!claim) return claim.error();
    if (claim->has_value()) {
      if (k8s::uid(**claim).value_or("") == c.uid || being_deleted(**claim)) {
        return StepOutcome::waiting(ctx.settings.poll_interval,
                                    "the lost claim " + c.claim + " finalizing");
      }
      continue;  // ours, or one a person made: either way the replica's now
    }
    auto templates = k8s::claim_templates(ctx.statefulset);
    if (!templates) return malformed(templates.error());
    std::string template_name;
    for (const k8s::ClaimTemplate& t : *templates) {
      if (naming::claim_name(t.name, ctx.op.statefulset, lost.ordinal) == c.claim) {
        template_name = t.name;
      }
    }
    if (template_name.empty()) {
      return StepOutcome::critical("the StatefulSet has no volumeClaimTemplate for claim " +
                                   c.claim + " any more");
    }
    auto body = recovered_claim(ctx.statefulset, template_name, lost.ordinal, c.volume);
    if (!body) return malformed(body.error());
    if (auto created = create_intended(
            ctx, ref, *body, "a new, empty claim for the re-seed of " + recovery::pod_name(ctx.op));
        !created) {
      return created.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  return std::nullopt;
}

// How a re-seed pod that ended without success ended, from its first terminated container.
std::string failure_of(const Json& pod) {
  std::string out = "pod " + k8s::name(pod).value_or("?") + " Failed";
  const Json statuses = pod.value("status", Json::object()).value("containerStatuses", Json{});
  if (!statuses.is_array()) return out;
  for (const Json& status : statuses) {
    const Json terminated = status.value("state", Json::object()).value("terminated", Json{});
    if (!terminated.is_object()) continue;
    out += ": container " + status.value("name", std::string{"?"}) + " exited with code " +
           std::to_string(terminated.value("exitCode", 0));
    const std::string reason = terminated.value("reason", std::string{});
    const std::string message = terminated.value("message", std::string{});
    if (!reason.empty()) out += " (" + reason + ")";
    if (!message.empty()) out += ": " + message;
    break;
  }
  return out;
}

StepOutcome ended(StepContext& ctx, const std::string& failure) {
  const std::string pod = naming::reseed_pod(ctx.op.statefulset, ctx.op.lost->ordinal);
  StepOutcome outcome = record_and_continue(ctx, entries::ReseedEnded{failure});
  if (failure.empty() && outcome.is(StepOutcome::Kind::Waiting)) {
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, "ReseedSucceeded",
                      "operation " + ctx.op.id + ": re-seed pod " + pod + " Succeeded on the new " +
                          "claims of " + recovery::pod_name(ctx.op) +
                          "; the StatefulSet is resumed and starts the replica on them");
  }
  return outcome;
}

// Runs the re-seed pod once; nullopt once it has ended (and, succeeded, is deleted).
std::optional<StepOutcome> run_reseed(StepContext& ctx) {
  const LostReplica& lost = *ctx.op.lost;
  const ObjectRef ref{Kind::Pod, ctx.op.ns, naming::reseed_pod(ctx.op.statefulset, lost.ordinal)};
  auto pod = get_optional(ctx, ref);
  if (!pod) return pod.error();
  if (lost.reseed_ended) {
    // Kept after a failure, for its logs (describe gives the commands); deleted after success,
    // so that nothing but the replica uses its claims.
    if (!lost.reseed_failure.empty() || !pod->has_value()) return std::nullopt;
    if (k8s::uid(**pod).value_or("") != lost.reseed_pod_uid) return std::nullopt;
    if (being_deleted(**pod)) {
      return StepOutcome::waiting(ctx.settings.poll_interval, "re-seed pod " + ref.name + " going");
    }
    if (auto removed = delete_intended(ctx, ref, lost.reseed_pod_uid, Propagation::Background,
                                       "the re-seed Succeeded");
        !removed) {
      return removed.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (lost.reseed_pod_uid.empty()) {
    if (pod->has_value()) {
      if (created_by(**pod, ctx.op)) {
        return record_and_continue(
            ctx, entries::ReseedPodCreated{ref.name, k8s::uid(**pod).value_or("")});
      }
      return ended(ctx, "a pod named " + ref.name + " exists that this recovery did not create");
    }
    auto body = reseed_pod(ctx.statefulset, lost.ordinal, ctx.op.id);
    if (!body) return ended(ctx, explain(body.error()));
    // Right before the create: no pod but this recovery's on the new claims (a replica
    // someone's own recovery by hand started before the pause, a pod made by hand): they are no
    // longer empty, or being written.
    std::vector<std::string> claims;
    for (const LostClaim& c : lost.claims) claims.push_back(c.claim);
    auto user = mounted_by_any_pod(ctx, claims);
    if (!user) return user.error();
    if (*user) return ended(ctx, **user + ": the re-seed is not run beside it");
    if (auto created =
            create_intended(ctx, ref, *body, "the re-seed of " + recovery::pod_name(ctx.op));
        !created) {
      return created.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (!pod->has_value() || k8s::uid(**pod).value_or("") != lost.reseed_pod_uid) {
    return ended(ctx, "pod " + ref.name + " was deleted before it ended");
  }
  const std::string phase = k8s::pod_phase(**pod).value_or("");
  if (phase == "Succeeded") return ended(ctx, "");
  if (phase == "Failed") return ended(ctx, failure_of(**pod));
  return StepOutcome::waiting(ctx.settings.poll_interval,
                              "re-seed pod " + ref.name + " " +
                                  (phase.empty() ? "Pending" : phase) +
                                  " (delete it to give the re-seed up)");
}

}  // namespace

StepOutcome reseed_step(StepContext& ctx) {
  const LostReplica& lost = *ctx.op.lost;
  // Gone on purpose, mid-resume: the claims and the re-seed are behind it.
  if (ctx.statefulset.is_null()) {
    if (auto now = steps::resume_statefulset(ctx)) return *now;
    return StepOutcome::done();
  }
  if (auto now = create_claims(ctx)) return *now;
  if (auto now = run_reseed(ctx)) return *now;
  if (!lost.reseed_failure.empty() && !ctx.op.warning.starts_with("re-seed pod")) {
    return warn_and_continue(ctx, Phase::Reseeding, "ReseedFailed",
                             "re-seed pod " + naming::reseed_pod(ctx.op.statefulset, lost.ordinal) +
                                 " did not succeed (" + lost.reseed_failure +
                                 "); the replica starts on its new claims " +
                                 "as they are, and the pod is kept for its logs");
  }
  if (auto now = steps::resume_statefulset(ctx)) return *now;
  return StepOutcome::done();
}

}  // namespace stsresize
