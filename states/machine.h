#pragma once
// The resize state machine: the ONLY place that says which phase follows which. The table is
// a Boost.MSM transition table in states/machine.cc (the one translation unit that includes
// Boost.MSM, which is slow to compile); this header is its small non-template face.
// Both the reconciler and fold/replay use it, so there is no second copy of the rules.
#include <expected>
#include <memory>
#include <optional>
#include <string>

#include "engine/operation.h"
#include "engine/transition_rules.h"

namespace stsresize {

class PhaseMachine {
 public:
  // A machine already in `phase` (resuming an operation is entering it mid-way).
  explicit PhaseMachine(Phase phase = Phase::Pending);
  ~PhaseMachine();
  PhaseMachine(PhaseMachine&&) noexcept;
  PhaseMachine& operator=(PhaseMachine&&) noexcept;

  Phase phase() const;
  // The phase after `event`, or an error naming the phase and the event when the table has
  // no row for them: an illegal event is refused, never ignored. `sources_intact` is the guard
  // that sends a critical error to ScalingBack (true) or straight to Failed (false). On
  // refusal the machine stays where it was. `failed_in` is the guard of Resume: Failed goes back
  // to that phase, and only to the phases whose step can run again (Restoring, ScalingUp,
  // CleaningUp); nullopt (not recorded) has no row.
  std::expected<Phase, std::string> fire(Trigger event, bool sources_intact = true,
                                         std::optional<Phase> failed_in = std::nullopt);

  static bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
                      std::optional<Phase> failed_in = std::nullopt);
  // The table as TransitionRules, for fold() and replay().
  static const TransitionRules& rules();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stsresize
