#pragma once
// The StatefulSet's definition kept in a ConfigMap while the object is deleted and created again
// (UpdatingTemplate, states/update_template.cc; a rolling resize's resume, states/rolling.cc).
#include <optional>
#include <string_view>

#include "states/step.h"

namespace stsresize::steps {

// ConfigMap naming::definition_config_map(<sts>) in the StatefulSet's namespace.
ObjectRef definition_ref(const Operation& op);

// The StatefulSet does not exist: created from the definition in `config_map` (intend + create),
// only from a ConfigMap this operation created; a Normal Event StatefulSetRecreated saying `what`.
// Never critical: the definition stays safe in the ConfigMap until this succeeds, and a failure
// could not be recorded on an object that does not exist.
StepOutcome create_from_definition(StepContext& ctx, const std::optional<Json>& config_map,
                                   std::string_view what);

}  // namespace stsresize::steps
