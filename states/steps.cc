#include "states/step.h"

namespace stsresize {

Step step_for(Phase phase) {
  switch (phase) {
    case Phase::UpdatingTemplate:
      return &update_template_step;
    case Phase::Planning:
      return &plan_step;
    case Phase::ScalingDown:
      return &scale_down_step;
    case Phase::BackingUp:
      return &backup_step;
    case Phase::Recreating:
      return &recreate_step;
    case Phase::Restoring:
      return &restore_step;
    case Phase::ScalingUp:
      return &scale_up_step;
    case Phase::CleaningUp:
      return &cleanup_step;
    case Phase::Expanding:
      return &expand_step;
    case Phase::ScalingBack:
      return &scale_back_step;
    case Phase::Pending:
    case Phase::Completed:
    case Phase::Failed:
      return nullptr;
  }
  return nullptr;
}

}  // namespace stsresize
