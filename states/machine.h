#pragma once
// The state machines, one per kind of operation: the ONLY place that says which phase follows
// which. Each table is a Boost.MSM transition table in states/machine.cc (the one translation unit
// that includes Boost.MSM, which is slow to compile); this header is its small non-template face.
// Both the reconciler and fold/replay use it, so there is no second copy of the rules.
#include <expected>
#include <optional>
#include <string>

#include "engine/operation.h"
#include "engine/transition_rules.h"

namespace stsresize {

class PhaseMachine {
 public:
  // A machine of `kind` already in `phase` (resuming an operation is entering it mid-way).
  explicit PhaseMachine(Phase phase = Phase::Pending);  // a resize's
  PhaseMachine(OperationKind kind, Phase phase);

  Phase phase() const { return phase_; }
  OperationKind kind() const { return kind_; }
  // The phase after `event`, or an error naming the phase and the event when the table has
  // no row for them: an illegal event is refused, never ignored. `sources_intact` is the guard
  // that sends a critical error to ScalingBack (true) or straight to Failed (false), and lets a
  // person abort. On refusal the machine stays where it was. `failed_in` is the guard of
  // Resume: Failed goes back to that phase, and only to the phases whose step can run again
  // (Restoring, ScalingUp, CleaningUp); nullopt (not recorded) has no row.
  std::expected<Phase, std::string> fire(Trigger event, bool sources_intact = true,
                                         std::optional<Phase> failed_in = std::nullopt);

  // Whether any kind's table has the row (rules()).
  static bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
                      std::optional<Phase> failed_in = std::nullopt);
  // One kind's table as TransitionRules: what a person's actions on an operation of that kind
  // are decided with (engine/actions/rules.h).
  static const TransitionRules& rules(OperationKind kind);
  // Every kind's tables as one TransitionRules, for what meets operations of any kind: fold()
  // and replay() (the fold also refuses a phase that is not of the operation's kind).
  static const TransitionRules& rules();
  // Whether `phase` is one of `kind`'s.
  static bool has_phase(OperationKind kind, Phase phase);

 private:
  OperationKind kind_;
  Phase phase_;
};

}  // namespace stsresize
