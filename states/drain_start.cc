// Pending, of a drain: planned (DrainPlanned, when it began), it starts. A step of its own so
// that stsresize.dev/mode: manual holds a drain before its first cleanup pod, as it holds each
// step of a resize (the approval is of the transition this Done fires).
#include "states/step.h"

namespace stsresize {

StepOutcome drain_start_step(StepContext&) {
  return StepOutcome::done(Trigger::StartDrain);
}

}  // namespace stsresize
