#pragma once
// Whether the state machine leads from one phase to another in one or more transitions (any
// event, either outcome of the sources-intact guard). fold() accepts a Resumed that leads the
// journal this way: another process took those transitions and journaled them elsewhere
// (`stsresize advance --apply-locally`); replay says so on the Resumed row.
#include "engine/operation.h"
#include "engine/transition_rules.h"

namespace stsresize {

bool reachable(const TransitionRules& rules, Phase from, Phase to);

}  // namespace stsresize
