#include "states/rolling.h"

#include <algorithm>

#include "engine/naming.h"
#include "engine/resize_request.h"
#include "engine/statefulset_deletion.h"
#include "states/definition.h"
#include "states/step_support.h"

namespace stsresize::steps {

namespace {

void tell(StepContext& ctx, std::string_view reason, const std::string& message) {
  ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, reason,
                    "operation " + ctx.op.id + ": " + message);
}

// An update of the StatefulSet with its resourceVersion (a Conflict is retried on a fresh read).
StepOutcome write_statefulset(StepContext& ctx, const Json& updated, std::string_view doing) {
  if (auto written = ctx.kube.update(Kind::StatefulSet, updated); !written) {
    // The last finalizer removed from an object being deleted: the API server deleted it.
    if (written.error().code == KubeErrorCode::NotFound) return StepOutcome::waiting(Duration{0});
    return from_error(written.error(),
                      std::string{doing} + " " + to_string(statefulset_ref(ctx.op)));
  }
  return StepOutcome::waiting(Duration{0});
}

// Some pod still names the paused object as its owner: the garbage collector has not orphaned
// them all yet.
std::expected<bool, StepOutcome> owns_pods(StepContext& ctx, const std::string& uid) {
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return std::unexpected(from_error(pods.error(), "listing pods"));
  for (const Json& pod : pods->items) {
    auto owners = k8s::owner_references(pod);
    if (!owners) continue;
    if (std::ranges::any_of(*owners, [&](const k8s::OwnerReference& o) { return o.uid == uid; })) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool paused(const Json& statefulset) {
  return !statefulset.is_null() && k8s::is_being_deleted(statefulset).value_or(false) &&
         has_finalizer(statefulset, kRollingFinalizer);
}

ObjectRef replica_ref(const Operation& op, int ordinal) {
  return ObjectRef{Kind::Pod, op.ns, op.statefulset + "-" + std::to_string(ordinal)};
}

namespace {

// What a pause is for, in its journal intents and Event.
std::string pause_purpose(const Operation& op) {
  if (op.kind == OperationKind::Recovery && op.lost) {
    return "the re-seed of ordinal " + std::to_string(op.lost->ordinal);
  }
  return "ordinal " + std::to_string(op.rolling_ordinal().value_or(-1)) + " of a rolling resize";
}

}  // namespace

std::optional<StepOutcome> pause_statefulset(StepContext& ctx) {
  if (paused(ctx.statefulset)) return std::nullopt;
  const ObjectRef ref = statefulset_ref(ctx.op);
  if (k8s::is_being_deleted(ctx.statefulset).value_or(false)) {
    // Deleted by someone without the hold: its pods go with it (or are orphaned); nothing to
    // pause. The fence decides what that means for the claims.
    return StepOutcome::critical(to_string(ref) + " is being deleted by someone else");
  }
  if (!has_finalizer(ctx.statefulset, kRollingFinalizer)) {
    if (auto intended = ctx.journal.intend("update", ref,
                                           "finalizer " + std::string{kRollingFinalizer} +
                                               " added: the pause for " + pause_purpose(ctx.op));
        !intended) {
      return StepOutcome::transient(intended.error());
    }
    Json updated = ctx.statefulset;
    add_finalizer(updated, kRollingFinalizer);
    return write_statefulset(ctx, updated, "adding the finalizer to");
  }
  if (auto removed = delete_intended(
          ctx, ref, ctx.op.sts_uid, Propagation::Background,
          "propagation Background, held by finalizer " + std::string{kRollingFinalizer} +
              ": paused, its pods keep running and are not created again");
      !removed) {
    return removed.error();
  }
  tell(ctx, "StatefulSetPaused",
       "paused for " + pause_purpose(ctx.op) + " (being deleted, held by finalizer " +
           std::string{kRollingFinalizer} +
           "): its pods keep running, none is created again until it is resumed");
  return StepOutcome::waiting(Duration{0});
}

std::optional<StepOutcome> resume_statefulset(StepContext& ctx) {
  const ObjectRef cm_ref = definition_ref(ctx.op);
  auto config_map = get_optional(ctx, cm_ref);
  if (!config_map) return config_map.error();
  if (ctx.statefulset.is_null()) {
    return create_from_definition(ctx, *config_map,
                                  "created again from its definition; its pods adopted");
  }
  auto uid = k8s::uid(ctx.statefulset);
  if (!uid) return malformed(uid.error());
  const bool deleting = k8s::is_being_deleted(ctx.statefulset).value_or(false);
  if (*uid != ctx.op.sts_uid) {
    // The object created from the definition: it carries this operation's state (the session
    // read it from there).
    if (deleting)
      return StepOutcome::critical(to_string(statefulset_ref(ctx.op)) + " (uid " + *uid +
                                   ") is being deleted");
    return record_and_continue(ctx, entries::StatefulSetRecreated{*uid});
  }
  if (!deleting) {
    // Never paused, but given the hold before a failure or a crash: without it a later delete
    // of the StatefulSet would wait for ever on a finalizer nobody removes.
    if (has_finalizer(ctx.statefulset, kRollingFinalizer)) {
      if (auto intended = ctx.journal.intend("update", statefulset_ref(ctx.op),
                                             "finalizer " + std::string{kRollingFinalizer} +
                                                 " removed: the StatefulSet was never paused");
          !intended) {
        return StepOutcome::transient(intended.error());
      }
      Json updated = ctx.statefulset;
      remove_finalizer(updated, kRollingFinalizer);
      return write_statefulset(ctx, updated, "removing the finalizer from");
    }
    // Running again (or never paused): the definition is no longer needed.
    if (!config_map->has_value()) return std::nullopt;
    if (!created_by(**config_map, ctx.op)) return std::nullopt;
    bool acted = false;
    auto exists = delete_ours(ctx, cm_ref, acted);
    if (!exists) return exists.error();
    if (acted) return StepOutcome::waiting(Duration{0});
    if (*exists) return StepOutcome::waiting(ctx.settings.poll_interval, "ConfigMap finalizing");
    return std::nullopt;
  }
  if (!has_finalizer(ctx.statefulset, kRollingFinalizer)) {
    // The API server removes the object once its last finalizer is gone.
    return StepOutcome::waiting(ctx.settings.poll_interval, "StatefulSet finalizing");
  }
  // Its pods first lose their owner reference, or the garbage collector would delete them with it.
  if (has_finalizer(ctx.statefulset, "orphan")) {
    return StepOutcome::waiting(ctx.settings.poll_interval, "pods being orphaned");
  }
  auto owning = owns_pods(ctx, *uid);
  if (!owning) return owning.error();
  if (*owning) {
    if (auto removed =
            delete_intended(ctx, statefulset_ref(ctx.op), ctx.op.sts_uid, Propagation::Orphan,
                            "propagation Orphan: its pods keep running without an owner until "
                            "it is created again");
        !removed) {
      return removed.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (!config_map->has_value()) {
    Json live = ctx.statefulset;
    remove_finalizer(live, kRollingFinalizer);
    auto definition = statefulset_definition(live, ctx.op);
    if (!definition) return malformed(definition.error());
    if (auto noted = ctx.journal.append(entries::DefinitionSaved{cm_ref.name, *definition});
        !noted) {
      return StepOutcome::transient(noted.error());
    }
    if (auto created = create_intended(ctx, cm_ref, definition_config_map(ctx.op, *definition),
                                       "definition of the paused StatefulSet");
        !created) {
      return created.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (!created_by(**config_map, ctx.op)) {
    return StepOutcome::critical(to_string(cm_ref) + " exists but was not created by operation " +
                                 ctx.op.id);
  }
  const ObjectRef ref = statefulset_ref(ctx.op);
  if (auto intended = ctx.journal.intend("update", ref,
                                         "finalizer " + std::string{kRollingFinalizer} +
                                             " removed: the object goes, its definition is in "
                                             "ConfigMap " +
                                             cm_ref.name);
      !intended) {
    return StepOutcome::transient(intended.error());
  }
  Json updated = ctx.statefulset;
  remove_finalizer(updated, kRollingFinalizer);
  return write_statefulset(ctx, updated, "removing the finalizer from");
}

StepOutcome eviction_blocked(StepContext& ctx, const std::string& pod, const KubeError& refusal) {
  const std::string prefix = "the eviction of pod " + pod + " is refused";
  if (!ctx.op.warning.starts_with(prefix)) {
    return warn_and_continue(
        ctx, ctx.op.phase, "EvictionBlocked",
        prefix + " (" + refusal.message +
            "): a PodDisruptionBudget allows no disruption now; the resize waits with every "
            "replica running and tries again every poll interval");
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, "eviction of " + pod + " refused");
}

}  // namespace stsresize::steps
