#pragma once
// What a platform engineer may tune about how the engine works (flags of `stsresize run`).
#include "engine/copy_job.h"
#include "engine/time.h"

namespace stsresize {

struct EngineSettings {
  // Copy Jobs running at once per operation (backup and restore each).
  int max_parallel_copies = 2;
  CopyJobSettings copy_job;
  // A claim still Pending this long after its phase began is a critical error (no provisioner,
  // no capacity): better to scale back than to wait forever with the application down.
  Duration pending_timeout = std::chrono::minutes{10};
  // A copy Job still running this long after its phase began is a critical error.
  Duration job_timeout = std::chrono::hours{6};
  // Pods still not all Ready this long after ScalingUp began: a Warning event (ScaleUpTimeout)
  // and a warning in the state, once; the operation keeps waiting, as the data is already
  // restored and verified — failing would only leave the backups to a person.
  Duration scale_up_timeout = std::chrono::minutes{30};
  // How soon to look again while waiting for the cluster.
  Duration poll_interval = std::chrono::seconds{5};
  // Steps one reconcile may run back to back while they make progress without waiting.
  int max_steps_per_reconcile = 64;
};

}  // namespace stsresize
