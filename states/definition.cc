#include "states/definition.h"

#include "engine/naming.h"
#include "engine/resize_request.h"
#include "states/step_support.h"

namespace stsresize::steps {

ObjectRef definition_ref(const Operation& op) {
  return ObjectRef{Kind::ConfigMap, op.ns, naming::definition_config_map(op.statefulset)};
}

StepOutcome create_from_definition(StepContext& ctx, const std::optional<Json>& config_map,
                                   std::string_view what) {
  const ObjectRef ref = statefulset_ref(ctx.op);
  const std::string cm = definition_ref(ctx.op).name;
  if (!config_map) {
    return StepOutcome::transient(to_string(ref) + " is gone and ConfigMap " + cm +
                                  " with its definition is missing");
  }
  if (!created_by(*config_map, ctx.op)) {
    return StepOutcome::transient("ConfigMap " + cm + " was not created by operation " + ctx.op.id);
  }
  auto definition = definition_from_config_map(*config_map, ctx.op.ns, ctx.op.statefulset);
  if (!definition) return StepOutcome::transient(definition.error());
  if (auto created = create_intended(ctx, ref, *definition, "from ConfigMap " + cm); !created) {
    return StepOutcome::transient(std::move(created.error().message));
  }
  ctx.events.record(ref, EventSeverity::Normal, "StatefulSetRecreated",
                    "operation " + ctx.op.id + ": " + std::string{what});
  return StepOutcome::waiting(Duration{0});
}

}  // namespace stsresize::steps
