// UpdatingTemplate (explicit request only): volumeClaimTemplates are immutable, so the
// StatefulSet is re-created with the new ones. Pods are orphaned, not deleted, and the new
// object adopts them (same selector, same pod template: no restart). One call does at most one
// of these, each idempotent, in this order:
//   1. journal the complete new definition (DefinitionSaved), then create the ConfigMap
//      naming::definition_config_map(<sts>) holding it;
//   2. delete the StatefulSet: propagation Orphan, uid precondition;
//   3. wait until it is gone;
//   4. create it from the ConfigMap (never from memory: the ConfigMap is what survives a crash);
//   5. record the new object's uid (StatefulSetRecreated): the operation follows it;
//   6. delete the ConfigMap; then Done -> Planning.
// The definition exists in the cluster at every instant: the StatefulSet is deleted only while
// the ConfigMap exists, and the ConfigMap only once the new object's uid is recorded.
#include "engine/naming.h"
#include "engine/resize_request.h"
#include "states/definition.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

void tell(StepContext& ctx, std::string_view reason, const std::string& message) {
  ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, reason,
                    "operation " + ctx.op.id + ": " + message);
}

// Step 1.
StepOutcome save_definition(StepContext& ctx) {
  const ObjectRef ref = definition_ref(ctx.op);
  auto definition = statefulset_definition(ctx.statefulset, ctx.op);
  if (!definition) return malformed(definition.error());
  if (auto noted = ctx.journal.append(entries::DefinitionSaved{ref.name, *definition}); !noted) {
    return StepOutcome::transient(noted.error());
  }
  if (auto created = create_intended(ctx, ref, definition_config_map(ctx.op, *definition),
                                     "definition of the re-created StatefulSet");
      !created) {
    return created.error();
  }
  tell(ctx, "DefinitionSaved",
       "StatefulSet definition with the new templates saved in " + ref.name);
  return StepOutcome::waiting(Duration{0});
}

// Step 2 (and 3 while the API server finishes the delete).
StepOutcome delete_statefulset(StepContext& ctx) {
  const ObjectRef ref = statefulset_ref(ctx.op);
  if (being_deleted(ctx.statefulset)) {
    return StepOutcome::waiting(ctx.settings.poll_interval, "StatefulSet orphaning its pods");
  }
  if (auto removed =
          delete_intended(ctx, ref, ctx.op.sts_uid, Propagation::Orphan,
                          "propagation Orphan (pods keep running); definition in ConfigMap " +
                              definition_ref(ctx.op).name);
      !removed) {
    return removed.error();
  }
  tell(ctx, "StatefulSetDeleted", "deleted with propagation Orphan; its pods keep running");
  return StepOutcome::waiting(Duration{0});
}

}  // namespace

StepOutcome update_template_step(StepContext& ctx) {
  if (ctx.op.template_changes.empty()) {
    return StepOutcome::critical("no template changes to apply");
  }
  const ObjectRef cm_ref = definition_ref(ctx.op);
  auto config_map = get_optional(ctx, cm_ref);
  if (!config_map) return config_map.error();
  if (ctx.statefulset.is_null()) {
    // Step 4.
    if (ctx.op.statefulset_recreated) {
      // Someone deleted the object stsresize created; re-creating it again would undo them.
      return StepOutcome::transient(to_string(statefulset_ref(ctx.op)) +
                                    " was deleted after it was re-created");
    }
    return create_from_definition(ctx, *config_map,
                                  "created again with the new volumeClaimTemplates");
  }

  auto uid = k8s::uid(ctx.statefulset);
  if (!uid) return malformed(uid.error());
  if (*uid != ctx.op.sts_uid) {
    if (ctx.op.statefulset_recreated) {
      return StepOutcome::critical(to_string(statefulset_ref(ctx.op)) +
                                   " was replaced by someone else (uid " + *uid + ")");
    }
    // Step 5: the object created from the definition (it carries this operation's state).
    return record_and_continue(ctx, entries::StatefulSetRecreated{*uid});
  }
  if (ctx.op.statefulset_recreated) {
    // Step 6.
    bool acted = false;
    auto exists = delete_ours(ctx, cm_ref, acted);
    if (!exists) return exists.error();
    if (acted) return StepOutcome::waiting(Duration{0});
    if (*exists) return StepOutcome::waiting(ctx.settings.poll_interval, "ConfigMap finalizing");
    return StepOutcome::done();
  }
  if (!config_map->has_value()) return save_definition(ctx);
  if (!created_by(**config_map, ctx.op)) {
    return StepOutcome::critical(to_string(cm_ref) + " exists but was not created by operation " +
                                 ctx.op.id);
  }
  return delete_statefulset(ctx);
}

}  // namespace stsresize
