#pragma once
// What a platform engineer may tune about how the engine works (flags of `stsresize run`).
#include <cstdint>

#include "engine/copy_job.h"
#include "engine/time.h"

namespace stsresize {

struct EngineSettings {
  // Copy Jobs running at once per operation (backup and restore each); 0: no bound, every
  // claim at once. The application is down for the whole copy, and each claim's copy reads and
  // writes volumes of its own, so by default none waits for another (as the seed controller);
  // where claims share storage bandwidth (one node's disk), a bound is the operator's to give.
  int max_parallel_copies = 0;

  // Whether one more copy Job may start while `running` of this operation run.
  bool may_start_copy(int running) const {
    return max_parallel_copies == 0 || running < max_parallel_copies;
  }
  // The copy path copies each claim once and gives the copied volume the claim's name (the
  // rebind path, states/rebind.h) where the controller may: false always takes the two-copy
  // path (copy to a backup claim, recreate the claim, copy back).
  bool rebind = true;
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
  // Cleanup pods running at once per drain (a StatefulSet with podManagementPolicy OrderedReady
  // drains one ordinal at a time, as its replicas start and stop one at a time).
  int max_parallel_drains = 2;
  // A drain whose cleanup pods have not all Succeeded this long after it began fails: its
  // cleanup pods are deleted, every claim kept.
  Duration drain_timeout = std::chrono::hours{1};
  // A cleanup pod restarted more often than this (restartPolicy OnFailure) fails the drain.
  std::int32_t drain_restart_limit = 5;
  // A lost-volume recovery deletes nothing until the node has been gone this long (unless the
  // StatefulSet says stsresize.dev/lost-volume-grace): it may come back with the data.
  Duration lost_volume_grace = std::chrono::minutes{5};
  // How often a StatefulSet with stsresize.dev/lost-volume-recovery and nothing running is
  // looked at again for a lost volume (nodes wake no reconcile).
  Duration lost_volume_check_interval = std::chrono::seconds{30};
  // How soon to look again while waiting for the cluster.
  Duration poll_interval = std::chrono::seconds{5};
  // Steps one reconcile may run back to back while they make progress without waiting.
  int max_steps_per_reconcile = 64;
};

}  // namespace stsresize
