#include "states/step_support.h"

#include <algorithm>

#include "engine/drain_candidates.h"
#include "engine/measure_job.h"
#include "engine/naming.h"
#include "engine/planner.h"
#include "states/fence.h"

namespace stsresize::steps {

namespace {
ListOptions list_by_labels(std::string selector) {
  ListOptions options;
  options.label_selector = std::move(selector);
  return options;
}
}  // namespace

Lookup get_optional(StepContext& ctx, const ObjectRef& ref) {
  auto object = ctx.kube.get(ref);
  if (object) return std::optional<Json>{std::move(*object)};
  if (object.error().code == KubeErrorCode::NotFound) return std::optional<Json>{};
  return std::unexpected(from_error(object.error(), "reading " + to_string(ref)));
}

StepOutcome from_error(const KubeError& error, std::string_view doing) {
  std::string message =
      std::string{doing} + ": " + std::string{to_string(error.code)} + ": " + error.message;
  if (error.transient() || error.code == KubeErrorCode::Forbidden ||
      error.code == KubeErrorCode::Unauthorized || error.code == KubeErrorCode::NotFound ||
      error.code == KubeErrorCode::AlreadyExists) {
    return StepOutcome::transient(std::move(message));
  }
  return StepOutcome::critical(std::move(message));
}

StepOutcome malformed(const std::string& error) {
  return StepOutcome::critical(error);
}

std::expected<std::optional<std::vector<Json>>, KubeError> list_storage_classes(Kubernetes& kube) {
  auto classes = kube.list(Kind::StorageClass, "");
  if (classes) return std::optional<std::vector<Json>>{std::move(classes->items)};
  if (classes.error().code == KubeErrorCode::Forbidden) return std::optional<std::vector<Json>>{};
  return std::unexpected(classes.error());
}

bool created_by(const Json& object, const Operation& op) {
  auto value = k8s::annotation(object, kOperationLabel);
  return value && value->has_value() && **value == op.id;
}

bool being_deleted(const Json& object) {
  auto deleting = k8s::is_being_deleted(object);
  return deleting && *deleting;
}

std::expected<std::optional<std::string>, StepOutcome> backup_claim_problem(StepContext& ctx,
                                                                            const ClaimPlan& claim,
                                                                            bool bound) {
  auto backup = get_optional(ctx, claim_ref(ctx.op, naming::backup_claim(claim.claim)));
  if (!backup) return std::unexpected(backup.error());
  if (!backup->has_value()) return "is gone (deleted by someone else)";
  if (!created_by(**backup, ctx.op)) return "was not created by operation " + ctx.op.id;
  if (being_deleted(**backup)) return "is being deleted by someone else";
  if (!bound) return std::nullopt;
  auto phase = k8s::pvc_phase(**backup);
  if (!phase) return std::unexpected(malformed(phase.error()));
  if (*phase != "Bound") return "is not Bound (" + *phase + ")";
  return std::nullopt;
}

bool phase_timed_out(const StepContext& ctx, Duration limit) {
  return ctx.clock.now() - ctx.op.phase_since > limit;
}

ObjectRef claim_ref(const Operation& op, const std::string& name) {
  return ObjectRef{Kind::PersistentVolumeClaim, op.ns, name};
}
ObjectRef job_ref(const Operation& op, const std::string& name) {
  return ObjectRef{Kind::Job, op.ns, name};
}
ObjectRef statefulset_ref(const Operation& op) {
  return ObjectRef{Kind::StatefulSet, op.ns, op.statefulset};
}

std::expected<void, StepOutcome> create_intended(StepContext& ctx, const ObjectRef& ref,
                                                 const Json& object, std::string_view detail) {
  if (auto intended = ctx.journal.intend("create", ref, detail); !intended) {
    return std::unexpected(StepOutcome::transient(intended.error()));
  }
  auto created = ctx.kube.create(ref.kind, object);
  if (!created && created.error().code != KubeErrorCode::AlreadyExists) {
    return std::unexpected(from_error(created.error(), "creating " + to_string(ref)));
  }
  return {};
}

std::expected<void, StepOutcome> delete_intended(StepContext& ctx, const ObjectRef& ref,
                                                 const std::optional<std::string>& uid,
                                                 Propagation propagation, std::string_view detail) {
  if (auto intended = ctx.journal.intend("delete", ref, detail); !intended) {
    return std::unexpected(StepOutcome::transient(intended.error()));
  }
  DeleteOptions options;
  options.propagation = propagation;
  options.uid = uid;
  auto removed = ctx.kube.remove(ref, options);
  if (!removed && removed.error().code != KubeErrorCode::NotFound) {
    return std::unexpected(from_error(removed.error(), "deleting " + to_string(ref)));
  }
  return {};
}

StepOutcome record_and_continue(StepContext& ctx, const Entry& event) {
  if (auto recorded = ctx.journal.commit(event); !recorded) {
    return StepOutcome::transient(recorded.error());
  }
  return StepOutcome::waiting(Duration{0});
}

StepOutcome warn_and_continue(StepContext& ctx, Phase phase, std::string_view reason,
                              const std::string& why) {
  StepOutcome outcome = record_and_continue(ctx, entries::StepFailed{phase, why, false});
  if (outcome.is(StepOutcome::Kind::Waiting)) {
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Warning, reason,
                      "operation " + ctx.op.id + ": " + why);
  }
  return outcome;
}

std::int64_t fit_checked_bytes(const Quantity& destination, const Quantity& source) {
  return destination < source ? destination.bytes() : 0;
}

std::string scale_down_deletes_claims() {
  return "the StatefulSet's spec.persistentVolumeClaimRetentionPolicy.whenScaled is Delete: "
         "stopping its replicas by scaling down would make Kubernetes delete their claims with "
         "the pods. Set whenScaled to Retain for the resize, or annotate the StatefulSet " +
         std::string{kStrategyAnnotation} +
         "=rolling, which stops one replica at a time without scaling; nothing was scaled";
}

std::optional<StepOutcome> set_replicas(StepContext& ctx, std::int32_t replicas) {
  auto current = k8s::spec_replicas(ctx.statefulset);
  if (!current) return malformed(current.error());
  if (*current == replicas) return std::nullopt;
  // Checked at the act itself: the policy may have been changed since the plan.
  if (replicas < *current && claims_deleted_when_scaled(ctx.statefulset)) {
    return StepOutcome::critical(scale_down_deletes_claims());
  }
  const ObjectRef ref = statefulset_ref(ctx.op);
  if (auto intended = ctx.journal.intend(
          "update", ref,
          "replicas " + std::to_string(*current) + " -> " + std::to_string(replicas));
      !intended) {
    return StepOutcome::transient(intended.error());
  }
  Json updated = ctx.statefulset;
  updated["spec"]["replicas"] = replicas;
  if (auto written = ctx.kube.update(Kind::StatefulSet, updated); !written) {
    return from_error(written.error(), "setting replicas of " + to_string(ref));
  }
  return StepOutcome::waiting(Duration{0});
}

std::expected<bool, StepOutcome> replicas_settled(StepContext& ctx, std::int32_t replicas,
                                                  bool ready) {
  auto generation = k8s::generation(ctx.statefulset);
  auto status = k8s::statefulset_status(ctx.statefulset);
  if (!generation) return std::unexpected(malformed(generation.error()));
  if (!status) return std::unexpected(malformed(status.error()));
  if (status->observed_generation < *generation || status->replicas != replicas) return false;
  if (ready && status->ready_replicas != replicas) return false;
  if (replicas != 0) return true;
  auto selector = k8s::selector_match_labels(ctx.statefulset);
  if (!selector) return std::unexpected(malformed(selector.error()));
  if (selector->empty()) return std::unexpected(malformed("StatefulSet has no selector"));
  std::string label_selector;
  for (const auto& [key, value] : *selector) {
    if (!label_selector.empty()) label_selector += ",";
    label_selector += key + "=" + value;
  }
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns, list_by_labels(label_selector));
  if (!pods) return std::unexpected(from_error(pods.error(), "listing pods"));
  return pods->items.empty();
}

std::optional<std::string> backup_does_not_fit(const Operation& op, const ClaimPlan& claim) {
  if (op.path != Path::Copy || !shrinks(claim) || !claim.backup_verified) return std::nullopt;
  const VolumeUsage backed_up{claim.backup_verified->files, claim.backup_verified->bytes,
                              claim.backup_verified->bytes};
  if (smallest_size(backed_up) <= claim.to_size.bytes()) return std::nullopt;
  return "its verified backup holds " + human_bytes(backed_up.bytes) + " and needs at least " +
         human_bytes(smallest_size(backed_up)) + " with the " +
         std::to_string(kShrinkHeadroomPercent) + "% headroom, more than its new size " +
         claim.to_size.to_string() + " (it grew since it was measured)";
}

std::expected<std::string, StepOutcome> job_pod_message(StepContext& ctx, const std::string& job,
                                                        const std::string& job_uid,
                                                        std::string_view container,
                                                        bool succeeded) {
  const std::string selector = std::string{kOperationLabel} + "=" + naming::label_value(ctx.op.id);
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns, list_by_labels(selector));
  if (!pods) return std::unexpected(from_error(pods.error(), "listing the pods of Job " + job));
  std::string message;
  for (const Json& pod : pods->items) {
    auto owners = k8s::owner_references(pod);
    if (!owners) continue;
    bool of_job = false;
    for (const auto& owner : *owners) {
      of_job = of_job || (owner.kind == "Job" && owner.name == job &&
                          (job_uid.empty() || owner.uid.empty() || owner.uid == job_uid));
    }
    if (!of_job) continue;
    auto terminated = k8s::terminated_container(pod, container);
    if (!terminated || !terminated->has_value()) continue;
    if (((*terminated)->exit_code == 0) != succeeded) continue;
    if (succeeded) return (*terminated)->message;
    if (!(*terminated)->message.empty()) message = (*terminated)->message;
  }
  return message;
}

namespace {

// The termination message of the Job's (last) successful copy pod.
// Matched by the Job's uid too: a Job deleted as stale leaves pods of the same Job name for a
// while, and their summary is of a copy that no longer counts.
std::expected<CopySummary, StepOutcome> job_summary(StepContext& ctx, const std::string& job,
                                                    const std::string& job_uid) {
  // Only a pod that exited 0 wrote a summary of two equal trees.
  auto message = job_pod_message(ctx, job, job_uid, "copy", /*succeeded=*/true);
  if (!message) return std::unexpected(message.error());
  if (message->empty()) {
    return std::unexpected(StepOutcome::critical("copy Job " + job +
                                                 " completed but no pod with its summary remains"));
  }
  auto summary = parse_copy_summary(*message);
  if (!summary) {
    return std::unexpected(StepOutcome::critical(
        "copy Job " + job + " reported no usable summary: " + summary.error()));
  }
  return *summary;
}

}  // namespace

namespace {
// A generation counts only on the object it was read from: a StatefulSet deleted and applied
// again starts counting anew.
std::string fence_token(const StepContext& ctx, std::int64_t generation) {
  return k8s::uid(ctx.statefulset).value_or("") + "/" + std::to_string(generation);
}
}  // namespace

std::expected<CopyProgress, StepOutcome> copy_job(StepContext& ctx, const std::string& job_name,
                                                  const std::string& source_claim,
                                                  const std::string& destination_claim,
                                                  const std::string& purpose, bool may_start,
                                                  std::int64_t generation,
                                                  std::int64_t destination_bytes) {
  const ObjectRef ref = job_ref(ctx.op, job_name);
  auto existing = get_optional(ctx, ref);
  if (!existing) return std::unexpected(existing.error());
  CopyProgress progress;
  if (!existing->has_value()) {
    if (!may_start) return progress;
    // Built before the intent is journaled: a Job that cannot be built is never intended.
    Json job = build_copy_job(CopyJobRequest{.ns = ctx.op.ns,
                                             .job_name = job_name,
                                             .source_claim = source_claim,
                                             .destination_claim = destination_claim,
                                             .operation_id = ctx.op.id,
                                             .statefulset = ctx.op.statefulset,
                                             .purpose = purpose,
                                             .destination_bytes = destination_bytes},
                              ctx.settings.copy_job);
    if (auto set =
            k8s::set_annotation(job, kFenceGenerationAnnotation, fence_token(ctx, generation));
        !set) {
      return std::unexpected(malformed(set.error()));
    }
    if (auto created = create_intended(ctx, ref, job,
                                       purpose + " " + source_claim + " -> " + destination_claim);
        !created) {
      return std::unexpected(created.error());
    }
    progress.created = true;
    return progress;
  }
  const Json& job = **existing;
  if (!created_by(job, ctx.op)) {
    return std::unexpected(StepOutcome::critical(
        to_string(ref) + " exists but was not created by operation " + ctx.op.id));
  }
  auto fenced_at = k8s::annotation(job, kFenceGenerationAnnotation);
  if (!fenced_at) return std::unexpected(malformed(fenced_at.error()));
  if (*fenced_at != fence_token(ctx, generation)) {
    // Its copy may miss what was written since: never read its result, take the copy again.
    bool acted = false;
    auto exists = delete_ours(ctx, ref, acted);
    if (!exists) return std::unexpected(exists.error());
    progress.created = acted;
    progress.running = !acted && *exists;
    if (!acted && !*exists && may_start) progress.created = true;  // gone: create it next call
    return progress;
  }
  auto status = k8s::job_status(job);
  if (!status) return std::unexpected(malformed(status.error()));
  switch (status->outcome) {
    case k8s::JobOutcome::Failed: {
      // What the copy said (a destination too small, rsync's status) says more than the Job.
      auto said = job_pod_message(ctx, job_name, k8s::uid(job).value_or(""), "copy",
                                  /*succeeded=*/false);
      if (!said) return std::unexpected(said.error());
      return std::unexpected(StepOutcome::critical(
          "copy Job " + job_name + " failed (" + status->reason + "): " + status->message +
          (said->empty() || said->starts_with("{") ? "" : "; " + *said)));
    }
    case k8s::JobOutcome::Running:
      if (phase_timed_out(ctx, ctx.settings.job_timeout)) {
        return std::unexpected(StepOutcome::critical("copy Job " + job_name +
                                                     " is still running past the job timeout"));
      }
      progress.running = true;
      return progress;
    case k8s::JobOutcome::Complete:
      break;
  }
  auto summary = job_summary(ctx, job_name, k8s::uid(job).value_or(""));
  if (!summary) return std::unexpected(summary.error());
  if (!summary->matches()) {
    return std::unexpected(StepOutcome::critical(
        "copy Job " + job_name + ": destination differs from source (source " +
        std::to_string(summary->source.files) + " files " + summary->source.digest.substr(0, 12) +
        ", destination " + std::to_string(summary->destination.files) + " files " +
        summary->destination.digest.substr(0, 12) + ")"));
  }
  progress.summary = *summary;
  return progress;
}

std::expected<std::optional<std::string>, StepOutcome> copy_pod_unplaceable(
    StepContext& ctx, const std::string& job) {
  auto unscheduled = copy_pod_unscheduled(ctx, job);
  if (!unscheduled || !*unscheduled) return unscheduled;
  if ((*unscheduled)->find("node affinity") == std::string::npos) {
    return std::optional<std::string>{};
  }
  return unscheduled;
}

std::expected<std::optional<std::string>, StepOutcome> copy_pod_unscheduled(
    StepContext& ctx, const std::string& job) {
  // Asked at every reconcile while a restore runs: the namespace's pods, unselected, which the
  // controller's cache answers (a selected list is read live); a stale answer only delays this,
  // and the delete it leads to is decided on live reads.
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return std::unexpected(from_error(pods.error(), "listing copy pods"));
  const std::string operation = naming::label_value(ctx.op.id);
  for (const Json& pod : pods->items) {
    auto label = k8s::label(pod, kOperationLabel);
    if (!label || !label->has_value() || **label != operation) continue;
    auto owners = k8s::owner_references(pod);
    if (!owners || std::none_of(owners->begin(), owners->end(), [&](const auto& owner) {
          return owner.kind == "Job" && owner.name == job;
        })) {
      continue;
    }
    auto scheduled = k8s::condition(pod, "PodScheduled");
    if (!scheduled || !scheduled->has_value()) continue;
    const k8s::Condition& c = **scheduled;
    if (c.status == "False" && c.reason == "Unschedulable") {
      return std::optional<std::string>{c.message};
    }
  }
  return std::optional<std::string>{};
}

std::expected<bool, StepOutcome> delete_ours(StepContext& ctx, const ObjectRef& ref, bool& acted,
                                             Propagation propagation) {
  auto existing = get_optional(ctx, ref);
  if (!existing) return std::unexpected(existing.error());
  if (!existing->has_value()) return false;
  if (!created_by(**existing, ctx.op)) return false;  // not ours: never touched
  if (being_deleted(**existing)) return true;
  // Background by default: a Job's pods go with it (they would keep the claims they mount).
  auto uid = k8s::uid(**existing);
  if (auto removed = delete_intended(
          ctx, ref, uid ? std::optional<std::string>{*uid} : std::nullopt, propagation, "");
      !removed) {
    return std::unexpected(removed.error());
  }
  acted = true;
  return true;
}

std::optional<StepOutcome> delete_ours_in_turn(StepContext& ctx,
                                               std::initializer_list<ObjectRef> refs,
                                               bool& lingering, Propagation propagation) {
  for (const ObjectRef& ref : refs) {
    bool acted = false;
    auto exists = delete_ours(ctx, ref, acted, propagation);
    if (!exists) return exists.error();
    if (acted) return StepOutcome::waiting(Duration{0});
    lingering = lingering || *exists;
  }
  return std::nullopt;
}

std::expected<std::pair<std::string, Json>, StepOutcome> node_using(StepContext& ctx,
                                                                    const std::string& claim) {
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return std::unexpected(from_error(pods.error(), "listing pods"));
  for (const Json& pod : pods->items) {
    auto mounted = k8s::mounted_claims(pod);
    if (!mounted || std::ranges::find(*mounted, claim) == mounted->end()) continue;
    auto phase = k8s::pod_phase(pod);
    if (!phase || *phase == "Succeeded" || *phase == "Failed" || being_deleted(pod)) continue;
    const Json& spec = pod.value("spec", Json::object());
    const std::string node = spec.value("nodeName", "");
    if (node.empty()) continue;
    Json tolerations = spec.value("tolerations", Json::array());
    if (!tolerations.is_array()) tolerations = Json::array();
    return std::pair{node, std::move(tolerations)};
  }
  return std::pair{std::string{}, Json::array()};
}

const Quantity& backup_size(const Operation& op, const ClaimPlan& claim) {
  return op.path == Path::Rebind ? claim.to_size : claim.from_size;
}
static const std::string& backup_class(const Operation& op, const ClaimPlan& claim) {
  return op.path == Path::Rebind ? claim.to_class : claim.from_class;
}

static Json backup_claim_body(const Operation& op, const ClaimPlan& claim) {
  Json spec = {{"accessModes", claim.access_modes},
               {"resources", {{"requests", {{"storage", backup_size(op, claim).to_string()}}}}}};
  if (!backup_class(op, claim).empty()) spec["storageClassName"] = backup_class(op, claim);
  if (!claim.volume_mode.empty()) spec["volumeMode"] = claim.volume_mode;
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata",
               {{"name", naming::backup_claim(claim.claim)},
                {"namespace", op.ns},
                {"labels",
                 {{"app.kubernetes.io/managed-by", "stsresize"},
                  {std::string{kOperationLabel}, naming::label_value(op.id)},
                  {std::string{kStatefulSetLabel}, naming::label_value(op.statefulset)},
                  {std::string{kPurposeLabel}, kBackupPurpose}}},
                {"annotations",
                 {{std::string{kOperationLabel}, op.id},
                  {std::string{kSourceClaimAnnotation}, claim.claim}}}}},
              {"spec", std::move(spec)}};
}

static std::optional<StepOutcome> check_backup_claim(StepContext& ctx, const ClaimPlan& claim,
                                                     const Json& backup) {
  const std::string name = naming::backup_claim(claim.claim);
  if (!created_by(backup, ctx.op)) {
    return StepOutcome::critical("backup claim " + name +
                                 " exists but was not created by operation " + ctx.op.id +
                                 " (a backup of an earlier operation?): not touching it");
  }
  auto size = k8s::requested_storage(backup);
  auto storage_class = k8s::storage_class_name(backup);
  if (!size) return malformed(size.error());
  if (!storage_class) return malformed(storage_class.error());
  const Quantity& wanted_size = backup_size(ctx.op, claim);
  const std::string& wanted_class = backup_class(ctx.op, claim);
  if (*size != wanted_size || storage_class->value_or("") != wanted_class) {
    return StepOutcome::critical("backup claim " + name + " has size " + size->to_string() +
                                 " and class \"" + storage_class->value_or("") +
                                 "\" where this operation asked for " + wanted_size.to_string() +
                                 " and \"" + wanted_class + "\"");
  }
  if (being_deleted(backup)) {
    return StepOutcome::critical("backup claim " + name + " is being deleted by someone else");
  }
  auto phase = k8s::pvc_phase(backup);
  if (!phase) return malformed(phase.error());
  if (*phase != "Bound" && phase_timed_out(ctx, ctx.settings.pending_timeout)) {
    return StepOutcome::critical("backup claim " + name + " is still " + *phase +
                                 " after the pending timeout");
  }
  return std::nullopt;
}

std::optional<StepOutcome> ensure_backup_claim(StepContext& ctx, const ClaimPlan& claim) {
  const ObjectRef ref = claim_ref(ctx.op, naming::backup_claim(claim.claim));
  auto backup = get_optional(ctx, ref);
  if (!backup) return backup.error();
  if (backup->has_value()) return check_backup_claim(ctx, claim, **backup);
  if (auto created = create_intended(
          ctx, ref, backup_claim_body(ctx.op, claim),
          "backup of " + claim.claim + ", " + backup_size(ctx.op, claim).to_string());
      !created) {
    return created.error();
  }
  return StepOutcome::waiting(Duration{0});
}

}  // namespace stsresize::steps
