#pragma once
// Whether the state machine leads from one phase to another in one or more transitions (any
// event, either outcome of the sources-intact guard). `failed_in` is the operation's
// Operation::failed_in when `from` is Failed: a Resume goes back only to the phase that failed,
// and each Failed reached on the way remembers the phase it came from, as fold() records it. fold()
// accepts a Resumed that leads the journal this way: another process took those transitions and
// journaled them elsewhere
// (`stsresize advance --apply-locally`); replay says so on the Resumed row.
#include <optional>

#include "engine/operation.h"
#include "engine/transition_rules.h"

namespace stsresize {

bool reachable(const TransitionRules& rules, Phase from, Phase to,
               std::optional<Phase> failed_in = std::nullopt);

}  // namespace stsresize
