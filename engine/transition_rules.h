#pragma once
// Which phase follows which. The one table lives in states/machine.cc (Boost.MSM); engine/
// code that needs it (fold, replay) receives it through this interface so that the
// dependency stays one-way (states/ -> engine/) and there is no second copy of the rules.
#include <optional>

#include "engine/operation.h"

namespace stsresize {

class TransitionRules {
 public:
  virtual ~TransitionRules() = default;
  // True when `event` in phase `from` leads to `to`. `sources_intact` feeds the guard that
  // chooses between ScalingBack and Failed on a critical error; `failed_in` (the operation's
  // Operation::failed_in) the guard that says which phase a Resume out of Failed goes back to.
  virtual bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
                       std::optional<Phase> failed_in) const = 0;
  bool allowed(Phase from, Trigger event, bool sources_intact, Phase to) const {
    return allowed(from, event, sources_intact, to, std::nullopt);
  }
  // The rules of one kind of operation. A kind's own table answers itself; the rules of every
  // kind (what fold() and replay() receive, as they meet operations of any kind) answer that
  // kind's table, so that what is decided about one operation is decided by its own table.
  virtual const TransitionRules& of(OperationKind kind) const {
    (void)kind;
    return *this;
  }
};

}  // namespace stsresize
