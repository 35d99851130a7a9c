#include "states/step.h"

namespace stsresize {

Step step_for(OperationKind kind, Phase phase) {
  switch (phase) {
    case Phase::Pending:
      return kind == OperationKind::Drain ? &drain_start_step : nullptr;
    case Phase::Draining:
      return &drain_step;
    case Phase::DeletingClaims:
      return &delete_drained_step;
    case Phase::StoppingDrain:
      return &stop_drain_step;
    case Phase::AwaitingNode:
      return &await_node_step;
    case Phase::ReplacingVolume:
      return &replace_volume_step;
    case Phase::Reseeding:
      return &reseed_step;
    case Phase::MarkingReplica:
      return &mark_recovered_step;
    case Phase::Measuring:
      return &measure_step;
    case Phase::UpdatingTemplate:
      return &update_template_step;
    case Phase::Planning:
      return &plan_step;
    case Phase::PreCopying:
      return &pre_copy_step;
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
      return kind == OperationKind::Recovery ? &recovery_scale_back_step : &scale_back_step;
    case Phase::StoppingReplica:
      return &stop_replica_step;
    case Phase::StartingReplica:
      return &start_replica_step;
    case Phase::Completed:
    case Phase::Failed:
      return nullptr;
  }
  return nullptr;
}

}  // namespace stsresize
