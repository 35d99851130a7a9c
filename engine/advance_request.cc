#include "engine/advance_request.h"

#include <algorithm>
#include <vector>

#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "engine/resize_request.h"
#include "engine/strict_json.h"

namespace stsresize {

std::string_view to_string(ApprovalMode mode) {
  switch (mode) {
    case ApprovalMode::Auto:
      return "auto";
    case ApprovalMode::Manual:
      return "manual";
    case ApprovalMode::Step:
      return "step";
  }
  return "unknown";
}

ModeSetting approval_mode_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kModeAnnotation);
  if (!value || !value->has_value()) return {};
  const std::string& text = **value;
  if (text == "auto") return {ApprovalMode::Auto, {}};
  if (text == "manual") return {ApprovalMode::Manual, {}};
  if (text == "step") return {ApprovalMode::Step, {}};
  return {ApprovalMode::Manual, "annotation " + std::string{kModeAnnotation} + " is \"" + text +
                                    "\", not auto, manual or step: treated as manual"};
}

bool needs_approval(ApprovalMode mode, Phase from, Phase to, PhaseEvent event) {
  (void)from;
  if (event == PhaseEvent::CriticalError || event == PhaseEvent::ScaleBackDone ||
      event == PhaseEvent::Abort || event == PhaseEvent::Skip || event == PhaseEvent::BackupStale ||
      event == PhaseEvent::RecreateAgain) {
    return false;
  }
  switch (mode) {
    case ApprovalMode::Auto:
      return false;
    case ApprovalMode::Manual:
      return true;
    case ApprovalMode::Step:
      return to == Phase::Recreating;  // the step that deletes the source claims
  }
  return true;
}

std::string encode_advance_request(const AdvanceRequest& request) {
  return Json{{"action", request.action},
              {"phase", to_string(request.phase)},
              {"operation", request.operation},
              {"by", request.by},
              {"at", request.at},
              {"nonce", request.nonce}}
      .dump();
}

std::expected<AdvanceRequest, std::string> decode_advance_request(std::string_view text) {
  const std::string where = "annotation " + std::string{kAdvanceAnnotation};
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    return std::unexpected(where + ": not a JSON object");
  }
  StrictObject in{document, where};
  AdvanceRequest request;
  request.action = in.string("action");
  const std::string phase = in.string("phase");
  request.operation = in.string("operation");
  request.by = in.string("by");
  request.at = in.string("at");
  request.nonce = in.string("nonce");
  if (auto done = in.finish(); !done) return std::unexpected(done.error());
  auto parsed = parse_phase(phase);
  if (!parsed) return std::unexpected(where + ": unknown phase \"" + phase + "\"");
  request.phase = *parsed;
  for (const auto* field : {&request.action, &request.operation, &request.by, &request.nonce}) {
    if (field->empty()) {
      return std::unexpected(where + ": action, operation, by and nonce must not be empty");
    }
  }
  return request;
}

std::optional<std::string> advance_request_of(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kAdvanceAnnotation);
  if (!value || !value->has_value()) return std::nullopt;
  return **value;
}

std::string approval_mismatch(const AdvanceRequest& request, const Operation& op) {
  if (request.action != "approve") {
    return "action \"" + request.action + "\" does not approve anything (an approval says approve)";
  }
  if (request.operation != op.id) {
    return "it approves operation " + request.operation + ", but the operation in progress is " +
           op.id;
  }
  if (request.phase != op.phase) {
    return "it approves leaving phase " + std::string{to_string(request.phase)} +
           ", but the operation is in phase " + std::string{to_string(op.phase)};
  }
  return {};
}

std::string approve_command(std::string_view ns, std::string_view name) {
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " --approve";
}

std::string abort_command(std::string_view ns, std::string_view name) {
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " --abort";
}

namespace {

constexpr std::string_view kAbortedBy = "aborted by ";

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::vector<std::string> sources_going(const Operation& op, const std::vector<Json>& live_claims) {
  std::vector<std::string> going;
  for (const ClaimPlan& claim : op.claims) {
    if (claim.source_deleted) continue;
    bool intact = false;
    for (const Json& live : live_claims) {
      if (k8s::name(live).value_or("") != claim.claim) continue;
      const Json& metadata = live.at("metadata");
      intact =
          k8s::uid(live).value_or("") == claim.source_uid &&
          !(metadata.contains("deletionTimestamp") && !metadata["deletionTimestamp"].is_null());
    }
    if (!intact) going.push_back(claim.claim);
  }
  return going;
}

std::string abort_refusal(const Operation& op, const std::vector<std::string>& sources_going) {
  const std::string which = "operation " + op.id;
  const std::string phase{to_string(op.phase)};
  const std::string watch = "kubectl -n " + op.ns + " get sts " + op.statefulset +
                            " -L stsresize.dev/phase -L " +
                            std::string{kAwaitingApprovalAnnotation} + " -w";
  const std::string approve = approve_command(op.ns, op.statefulset);
  switch (op.phase) {
    case Phase::Planning:
    case Phase::ScalingDown:
    case Phase::BackingUp:
      return {};
    case Phase::Recreating: {
      std::vector<std::string> deleted, going, backups;
      for (const ClaimPlan& claim : op.claims) {
        const bool asked = std::ranges::find(sources_going, claim.claim) != sources_going.end();
        if (!claim.source_deleted && !asked) continue;
        (claim.source_deleted || !asked ? deleted : going).push_back(claim.claim);
        backups.push_back(naming::backup_claim(claim.claim));
      }
      if (deleted.empty() && going.empty()) return {};
      auto plural = [](const std::vector<std::string>& names) {
        return names.size() == 1 ? " " : "s ";
      };
      std::string what = which + " is in Recreating and";
      if (!deleted.empty()) {
        what += std::string{" has deleted source claim"} + plural(deleted) + joined(deleted);
      }
      if (!going.empty()) {
        what += std::string{deleted.empty() ? "" : " and"} + " is deleting source claim" +
                plural(going) + joined(going) + " (a claim being deleted cannot be kept)";
      }
      // A claim being deleted may still be mounted by a pod that started after the last fence
      // check (the operation's warning then names it): its newest writes are not in the backup.
      const std::string held =
          going.empty()
              ? ""
              : "; if a pod still mounts " + joined(going) +
                    ", what it wrote since the backup is only there and goes with the claim "
                    "when the pod stops: keep it first, as the operation's warning says "
                    "(`stsresize status`)";
      const bool one = backups.size() == 1;
      return what + (one ? ": its backup " : ": their backups ") + joined(backups) +
             (one ? " is the copy" : " are the copies") +
             " the resize restores, so scaling back is no longer possible and an abort would "
             "have to restore " +
             (one ? "it" : "them") + ", which is what the resize itself does next" + held +
             ". Let it finish (if it waits, `" + approve + "`; watch it: " + watch + ")";
    }
    case Phase::Restoring:
    case Phase::ScalingUp:
    case Phase::CleaningUp:
      return which + " is in " + phase +
             ": the source claims were replaced and the data is already in the new claims, so "
             "there is nothing to roll back to. Let it finish (if it waits, `" +
             approve + "`; watch it: " + watch + ")" +
             (op.phase == Phase::CleaningUp
                  ? "; if it cannot delete its copy Jobs or backup claims, `" +
                        skip_command(op.ns, op.statefulset) + "` ends it keeping them"
                  : "");
    case Phase::Expanding:
      return which +
             " is in Expanding: a claim is never shrunk, so an expansion cannot be undone; it "
             "finishes by itself (watch it: " +
             watch + ")";
    case Phase::UpdatingTemplate:
      return which +
             " is in UpdatingTemplate, which re-creates the StatefulSet object from its saved "
             "definition; stopping in the middle could leave it half re-created. Let the "
             "template update finish (if it waits, `" +
             approve + "`), then run `" + abort_command(op.ns, op.statefulset) +
             "` while it is in Planning, ScalingDown or BackingUp";
    case Phase::Pending:
      return which + " has not started yet; nothing to abort";
    case Phase::ScalingBack:
      return which +
             " is already in ScalingBack: it is rolling back onto the source claims and ends in "
             "Failed by itself (watch it: " +
             watch + ")";
    case Phase::Completed:
    case Phase::Failed:
      return which + " already ended in " + phase +
             (op.failure.empty() ? "" : " (" + op.failure + ")") + "; there is nothing to abort";
  }
  return which + " is in an unknown phase";
}

std::string abort_mismatch(const AdvanceRequest& request, const Operation& op,
                           const std::vector<std::string>& sources_going) {
  if (request.action != "abort") {
    return "action \"" + request.action + "\" is not abort";
  }
  if (request.operation != op.id) {
    return "it aborts operation " + request.operation + ", but the operation in progress is " +
           op.id;
  }
  return abort_refusal(op, sources_going);
}

std::string abort_failure(std::string_view by, Phase phase) {
  return std::string{kAbortedBy} + std::string{by} + " in " + std::string{to_string(phase)};
}

bool is_abort_failure(std::string_view failure) {
  return failure.starts_with(kAbortedBy);
}

std::expected<std::string, std::string> wanted_resize(
    const Json& statefulset, const std::vector<Json>& claims,
    const std::optional<std::vector<Json>>& storage_classes) {
  if (auto request = resize_request_of(statefulset)) {
    auto validated =
        storage_classes
            ? validate_resize_request(statefulset, *request, claims, *storage_classes)
            : validate_resize_request(statefulset, *request, claims, StorageClassesUnknown{});
    if (!validated) {
      return std::unexpected("its " + std::string{kResizeRequestAnnotation} +
                             " request is invalid: " + validated.error());
    }
    return validated->trigger;
  }
  auto plan = storage_classes ? plan_resize(statefulset, claims, *storage_classes)
                              : plan_resize(statefulset, claims, StorageClassesUnknown{});
  if (!plan) return std::unexpected("its templates cannot be planned: " + plan.error());
  if (!plan->has_value()) {
    return std::unexpected(
        "no resize is asked for now: every claim already has what its template asks for, and "
        "there is no " +
        std::string{kResizeRequestAnnotation} + " annotation");
  }
  return (*plan)->trigger;
}

namespace {

bool has_operation_label(const Json& object, const Operation& op) {
  auto labels = k8s::labels(object);
  if (!labels) return false;
  auto label = labels->find(std::string{kOperationLabel});
  return label != labels->end() && label->second == naming::label_value(op.id);
}

}  // namespace

std::string retry_refusal(const Operation& op, const std::vector<Json>& claims,
                          const std::vector<Json>& jobs,
                          const std::expected<std::string, std::string>& wanted) {
  const std::string which = "operation " + op.id;
  const std::string sts = op.ns + "/" + op.statefulset;
  if (op.phase != Phase::Failed) {
    return which + " is in phase " + std::string{to_string(op.phase)} +
           ", not Failed: there is nothing to retry (to stop it: `" +
           abort_command(op.ns, op.statefulset) + "`)";
  }
  if (!op.sources_intact()) {
    return which + " failed (" + op.failure +
           ") after source claims were replaced: a retry resumes it in place instead of "
           "starting a new operation (" +
           resume_refusal(op, claims, jobs) + ")";
  }
  if (const auto going = sources_going(op, claims); !going.empty()) {
    return which + ": source claim " + going.front() +
           " is gone, replaced or being deleted since the operation was planned; a retry "
           "would not start from the data it protected. Check the claims (kubectl -n " +
           op.ns + " get pvc), then start a resize afresh";
  }
  for (const Json& live : claims) {
    const std::string name = k8s::name(live).value_or("");
    if (!op.find_claim(name)) continue;
    const std::string phase = k8s::pvc_phase(live).value_or("unknown");
    if (phase != "Bound") {
      return which + ": source claim " + name + " is " + phase +
             ", not Bound; run the retry again once it is (kubectl -n " + op.ns + " get pvc " +
             name + " -w)";
    }
  }
  auto leftover = [&](const std::vector<Json>& objects, std::string_view kind) -> std::string {
    for (const Json& object : objects) {
      if (!has_operation_label(object, op)) continue;
      const std::string name = k8s::name(object).value_or("?");
      return which + ": " + std::string{kind} + " " + name +
             " of the failed operation is still there (the scale-back leaves none once it is "
             "done); with the source claims intact it holds no only copy: delete it (kubectl -n " +
             op.ns + " delete " + std::string{kind} + " " + name + "), then run `" +
             retry_command(op.ns, op.statefulset) + "` again";
    }
    return {};
  };
  if (auto why = leftover(jobs, "job"); !why.empty()) return why;
  if (auto why = leftover(claims, "pvc"); !why.empty()) return why;
  if (!wanted) {
    return which + ": on StatefulSet " + sts + ", " + wanted.error() +
           "; a retry would start nothing. Change the templates or annotate " +
           std::string{kResizeRequestAnnotation} + ", then retry";
  }
  return {};
}

std::string retry_mismatch(const AdvanceRequest& request, const Operation& op,
                           const std::vector<Json>& claims, const std::vector<Json>& jobs,
                           const std::expected<std::string, std::string>& wanted) {
  if (request.action != "retry") return "action \"" + request.action + "\" is not retry";
  if (request.operation != op.id) {
    return "it retries operation " + request.operation + ", but the StatefulSet's operation is " +
           op.id;
  }
  return retry_refusal(op, claims, jobs, wanted);
}

bool resumes_in_place(const Operation& op) {
  return op.phase == Phase::Failed && !op.sources_intact();
}

namespace {

const Json* live_named(const std::vector<Json>& objects, const std::string& name) {
  for (const Json& object : objects) {
    if (k8s::name(object).value_or("") == name) return &object;
  }
  return nullptr;
}

bool deleting(const Json& object) {
  return k8s::is_being_deleted(object).value_or(false);
}

}  // namespace

std::string resume_refusal(const Operation& op, const std::vector<Json>& claims,
                           const std::vector<Json>& jobs) {
  const std::string which = "operation " + op.id;
  const std::string retry = retry_command(op.ns, op.statefulset);
  const std::string backups = "kubectl -n " + op.ns +
                              " get pvc -l stsresize.dev/operation=" + naming::label_value(op.id) +
                              ",stsresize.dev/purpose=backup";
  const std::string by_hand =
      "; the data of every claim not yet restored is in its backup claim (" + backups +
      "): copy it back from there by hand";
  if (op.phase != Phase::Failed) {
    return which + " is in phase " + std::string{to_string(op.phase)} +
           ", not Failed: there is nothing to retry (to stop it: `" +
           abort_command(op.ns, op.statefulset) + "`)";
  }
  if (op.sources_intact()) {
    return which +
           " failed with every source claim intact: a retry starts it again as a new "
           "operation, there is nothing to resume in place";
  }
  if (!op.failed_in) {
    return which + " failed (" + op.failure +
           ") after source claims were replaced, but its state does not record the phase it "
           "failed in (written by an older stsresize), so it cannot be resumed in place" +
           by_hand;
  }
  const Phase failed_in = *op.failed_in;
  if (std::ranges::find(kResumablePhases, failed_in) == std::end(kResumablePhases)) {
    return which + " failed in " + std::string{to_string(failed_in)} + " (" + op.failure +
           ") after source claims were replaced; only a failure in Restoring, ScalingUp or "
           "CleaningUp is resumed in place" +
           by_hand;
  }
  const std::string resume = "resuming " + std::string{to_string(failed_in)};
  for (const ClaimPlan& claim : op.claims) {
    if (!claim.source_deleted) continue;
    const std::string backup = naming::backup_claim(claim.claim);
    const Json* recreated = live_named(claims, claim.claim);
    const std::string uid = recreated ? k8s::uid(*recreated).value_or("") : "";
    if (claim.recreated_uid.empty() || recreated == nullptr || uid != claim.recreated_uid ||
        deleting(*recreated)) {
      const std::string what =
          claim.recreated_uid.empty() ? "was never recreated"
          : recreated == nullptr      ? "is gone"
          : uid != claim.recreated_uid
              ? "was replaced (uid " + uid + ", recorded " + claim.recreated_uid + ")"
              : "is being deleted";
      return which + ": recreated claim " + claim.claim + " " + what + "; " + resume +
             " would not restore into the claim the operation made. Nothing was changed" +
             (claim.restore_verified ? ""
                                     : "; the data of " + claim.claim + " is in backup claim " +
                                           backup + " (" + backups + ")");
    }
    if (failed_in != Phase::Restoring || claim.restore_verified) continue;
    const Json* live = live_named(claims, backup);
    auto owner = live ? k8s::annotation(*live, kOperationLabel)
                      : k8s::Result<std::optional<std::string>>{std::nullopt};
    if (live == nullptr || !owner || !owner->has_value() || **owner != op.id) {
      return which + ": backup claim " + backup + " of " + claim.claim +
             (live == nullptr ? " is gone" : " was not created by this operation") + "; " + resume +
             " would have nothing verified to restore from. Nothing was changed: find the data "
             "of " +
             claim.claim + " (kubectl get pv) before anything else";
    }
    if (deleting(*live)) {
      return which + ": backup claim " + backup + " of " + claim.claim +
             " is being deleted by someone else; it holds the only copy of that data. Remove "
             "what deletes it (kubectl -n " +
             op.ns + " get pvc " + backup + " -o yaml), then run `" + retry + "` again";
    }
    const std::string phase = k8s::pvc_phase(*live).value_or("unknown");
    if (phase != "Bound") {
      return which + ": backup claim " + backup + " is " + phase + ", not Bound; run `" + retry +
             "` again once it is (kubectl -n " + op.ns + " get pvc " + backup + " -w)";
    }
  }
  for (const Json& job : jobs) {
    if (!has_operation_label(job, op)) continue;
    auto status = k8s::job_status(job);
    if (status && status->outcome != k8s::JobOutcome::Running) continue;
    const std::string name = k8s::name(job).value_or("?");
    return which + ": copy Job " + name + " of the operation is still running; " + resume +
           " would start a second copy into the same claim. Wait for it to end (kubectl -n " +
           op.ns + " get job " + name + " -w) or delete it (kubectl -n " + op.ns + " delete job " +
           name + "), then run `" + retry + "` again";
  }
  return {};
}

std::string resume_mismatch(const AdvanceRequest& request, const Operation& op,
                            const std::vector<Json>& claims, const std::vector<Json>& jobs) {
  if (request.action != "retry") return "action \"" + request.action + "\" is not retry";
  if (request.operation != op.id) {
    return "it retries operation " + request.operation + ", but the StatefulSet's operation is " +
           op.id;
  }
  return resume_refusal(op, claims, jobs);
}

std::vector<Json> failed_jobs(const Operation& op, const std::vector<Json>& jobs) {
  std::vector<Json> failed;
  for (const Json& job : jobs) {
    auto owner = k8s::annotation(job, kOperationLabel);
    if (!has_operation_label(job, op) || !owner || !owner->has_value() || **owner != op.id) {
      continue;  // not created by this operation: never touched
    }
    auto status = k8s::job_status(job);
    if (status && status->outcome == k8s::JobOutcome::Failed) failed.push_back(job);
  }
  return failed;
}

std::string retry_trigger(std::string_view old_operation, std::string_view by,
                          std::string_view trigger) {
  return "retry of " + std::string{old_operation} + " by " + std::string{by} + ": " +
         std::string{trigger};
}

std::string retry_command(std::string_view ns, std::string_view name) {
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " --retry";
}

std::string skip_command(std::string_view ns, std::string_view name) {
  return "stsresize advance " + std::string{ns} + "/" + std::string{name} + " --skip-step";
}

std::string skip_refusal(const Operation& op) {
  const std::string which = "operation " + op.id + " is in " + std::string{to_string(op.phase)};
  const std::string ns = "kubectl -n " + op.ns;
  const std::string abort = "`" + abort_command(op.ns, op.statefulset) + "`";
  const std::string approve = "`" + approve_command(op.ns, op.statefulset) + "`";
  const std::string watch = ns + " get sts " + op.statefulset + " -L stsresize.dev/phase -L " +
                            std::string{kAwaitingApprovalAnnotation} + " -w";
  const std::string backups = ns +
                              " get pvc -l stsresize.dev/operation=" + naming::label_value(op.id) +
                              ",stsresize.dev/purpose=backup";
  const std::string only = " (only CleaningUp can be skipped)";
  switch (op.phase) {
    case Phase::CleaningUp:
      // Restoring verified every restore before CleaningUp; a claim without one would make its
      // backup claim the only copy of its data: never skip past that (fold() cannot produce
      // it, an edited annotation could).
      for (const ClaimPlan& claim : op.claims) {
        if (!claim.restore_verified) {
          return which + " but the restore of " + claim.claim +
                 " was never verified, so its backup claim " + naming::backup_claim(claim.claim) +
                 " may hold the only copy of its data: not skipping. Compare the claims' data "
                 "before anything else (" +
                 backups + ")";
        }
      }
      return {};
    case Phase::Pending:
      return "operation " + op.id + " has not started yet; there is no step to skip";
    case Phase::UpdatingTemplate:
      return which +
             ", which re-creates the StatefulSet object from its saved definition with the new "
             "templates: skipping it would leave the old templates (nothing to resize) or the "
             "StatefulSet deleted and not created again" +
             only + ". Let it finish (if it waits, " + approve + "); to stop the resize, run " +
             abort + " once it is in Planning";
    case Phase::Planning:
      return which +
             ", which only reads the cluster and decides which claims to resize and how: "
             "skipping it would leave no plan to carry out" +
             only + ". To stop the resize instead, run " + abort;
    case Phase::ScalingDown:
      return which +
             ": skipping it would back up the volumes while their pods still write to them, so "
             "whatever they write after the copy would be lost with the source claims" +
             only + ". To stop the resize instead, run " + abort;
    case Phase::BackingUp:
      return which +
             ": skipping it would delete the source claims without a verified backup, losing "
             "their data" +
             only + ". To stop the resize instead, run " + abort +
             " (it deletes the backups made so far and scales back onto the untouched source "
             "claims)";
    case Phase::Recreating:
      return which +
             ": skipping it would leave source claims deleted (or about to be) and not created "
             "again, with nothing for Restoring to copy into" +
             only + ". While no source claim is deleted yet, " + abort +
             " rolls back; after that the data is only in the backup claims (" + backups +
             ") and the resize itself restores it: let it finish (watch it: " + watch + ")";
    case Phase::Restoring:
      return which +
             ": the new claims would be empty or half copied, the pods would start without "
             "their data, and CleaningUp would then delete the backup claims that hold it" +
             only +
             ". Let it finish; a restore Job that fails ends the operation in Failed "
             "with the backup claims kept (" +
             backups + "; watch it: " + watch + ")";
    case Phase::ScalingUp:
      return which +
             ": the backups are removed only after the pods are Ready on the new claims, the "
             "proof that the application works with its restored data; skipping would remove "
             "them without that proof" +
             only + ". Look at the pods (" + ns + " get pods; " + ns +
             " describe pod POD): once every one is Ready the resize continues by itself";
    case Phase::Expanding:
      return which +
             ": skipping it would end the operation Completed with claims that did not reach "
             "the size asked for, and an expansion cannot be undone" +
             only + ". It waits for the storage driver: look at the claims (" + ns +
             " describe pvc CLAIM: conditions and events)";
    case Phase::ScalingBack:
      return which +
             ": it is scaling back onto the intact source claims and removing this operation's "
             "Jobs and backup claims; skipping it could leave the StatefulSet without its "
             "replicas" +
             only + ". It ends in Failed by itself (watch it: " + watch + ")";
    case Phase::Completed:
      return "operation " + op.id + " already ended in Completed; there is no step to skip";
    case Phase::Failed:
      return "operation " + op.id + " already ended in Failed" +
             (op.failure.empty() ? "" : " (" + op.failure + ")") + "; there is no step to skip" +
             (op.sources_intact() ? " (once the cause is fixed, `" +
                                        retry_command(op.ns, op.statefulset) + "` starts it again)"
                                  : "");
  }
  return "operation " + op.id + " is in an unknown phase";
}

std::string skip_mismatch(const AdvanceRequest& request, const Operation& op) {
  if (request.action != "skip") return "action \"" + request.action + "\" is not skip";
  if (request.operation != op.id) {
    return "it skips a step of operation " + request.operation +
           ", but the StatefulSet's operation is " + op.id;
  }
  if (request.phase != op.phase) {
    return "it skips " + std::string{to_string(request.phase)} + ", but operation " + op.id +
           " is now in " + std::string{to_string(op.phase)} + " (a skip names the step it skips)";
  }
  return skip_refusal(op);
}

std::vector<std::string> labelled_with(const Operation& op, const std::vector<Json>& objects) {
  std::vector<std::string> names;
  for (const Json& object : objects) {
    if (has_operation_label(object, op)) names.push_back(k8s::name(object).value_or("?"));
  }
  return names;
}

std::string skip_keeps(const Operation& op, const std::vector<std::string>& claims,
                       const std::vector<std::string>& jobs) {
  const std::string label = std::string{kOperationLabel} + "=" + naming::label_value(op.id);
  if (claims.empty() && jobs.empty()) return "nothing (no claim or Job labelled " + label + ")";
  std::string kept;
  if (!claims.empty()) kept += (claims.size() == 1 ? "claim " : "claims ") + joined(claims);
  if (!jobs.empty()) {
    kept += (kept.empty() ? "" : " and ") + std::string{jobs.size() == 1 ? "Job " : "Jobs "} +
            joined(jobs);
  }
  return kept + " (label " + label +
         "); they are extra copies, delete them once no longer needed and before the next "
         "resize of this StatefulSet, whose backups take the same names: kubectl -n " +
         op.ns + " delete pvc,job -l " + label;
}

}  // namespace stsresize
