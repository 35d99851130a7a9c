#pragma once
// The rest of a cluster around FakeKubernetes: what kube-controller-manager, a CSI
// provisioner/resizer and the kubelets would do, one deterministic pass per tick(). No
// threads, no real time: tests call tick() between reconciles (each controller writes through
// FakeKubernetes::system(), so the API rules hold and history shows Actor::System).
//
// One tick runs, in this order:
// 1. garbage collector: finishes the propagation of a delete held by a finalizer (the API
//    server's "orphan": the dependents' ownerReferences to it removed, then the finalizer;
//    "foregroundDeletion": the dependents deleted, and the finalizer removed once none is left),
//    then deletes objects whose every owner (by uid) is gone (Background). A dependent whose
//    owner still exists, being deleted or not, is left alone: a Background delete held by a
//    finalizer (the drain's) keeps the StatefulSet's pods until the finalizer is removed.
// 2. volumes: pvc-protection (drops the finalizer of a deleting PVC once no pod that is not
//    Succeeded/Failed mounts it) and pv-protection; reclaim (a PV whose claim is gone becomes
//    Released; with reclaimPolicy Delete it is deleted with its content); binding: a Pending
//    PVC binds to a PV whose claimRef names it, else, when its StorageClass exists and
//    provisioning is not failed, to a new PV "pvc-<claim uid>" (capacity = request, reclaim
//    policy from the class); expansion: a bound PVC whose request exceeds its capacity and
//    whose class allows expansion grows (PV and PVC status; content unchanged).
// 3. kubelet: a Pending pod whose claims are all Bound starts: Job pods run to completion
//    through the JobRunner (Succeeded/Failed with containerStatuses[0].state.terminated);
//    with a PodRunner set, a pod of no owner whose restartPolicy is OnFailure or Never (a
//    cleanup pod) runs through it, once per tick until it ends (OnFailure: a failed run is a
//    restart, restartCount + 1, and runs again); other pods become Running and Ready. Pods
//    created during this tick start next tick.
// 4. Job controller: startTime, active/succeeded/failed; one pod at a time; on success
//    conditions SuccessCriteriaMet + Complete and completionTime; when failures exceed
//    backoffLimit (or activeDeadlineSeconds passes) FailureTarget + Failed
//    (BackoffLimitExceeded / DeadlineExceeded); otherwise a replacement pod per tick.
// 5. StatefulSet controller: pods "<sts>-<i>" with claims "<template>-<sts>-<i>" created
//    first (an existing claim is never updated; a deleting one blocks its pod); OrderedReady
//    creates one pod per tick and only after the previous is Ready, scales down from the
//    highest ordinal one per tick; Parallel does all at once; RollingUpdate replaces pods of
//    an old template revision highest ordinal first, once all are Ready; adopts pods
//    "<sts>-<i>" that match its selector and have no controller (left by a delete with
//    propagation Orphan), as the real controller does; a StatefulSet being deleted is not
//    synced (no pod created, none deleted, status unchanged); status as the real
//    controller reports it (observedGeneration, replicas, ready/current/updated/available,
//    revisions).
// Not simulated: scheduling and nodes (pods need no node), WaitForFirstConsumer (binding is
// immediate), Job backoff delays (a retry pod is created on the next tick), the Job pod
// tracking finalizer, persistentVolumeClaimRetentionPolicy whenScaled, minReadySeconds,
// graceful pod termination, events.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "adapters/fake/fake_kubernetes.h"
#include "engine/copy_job.h"

namespace stsresize {

// A volume's simulated content: path relative to the volume root ("dir/file") → bytes.
using VolumeFiles = std::map<std::string, std::string>;

// The summary the copy script computes (engine/copy_job.h): files, bytes, and sha256 over the
// sorted "sha256  ./path" lines, so equal trees give equal digests.
TreeSummary summarise_tree(const VolumeFiles& files);

struct JobRun {
  int exit_code = 0;
  std::string termination_message;
};
// Runs one Job pod. `volumes` maps the pod's volume names to the content of the claims they
// mount (the runner may change it).
using JobRunner =
    std::function<JobRun(const Json& pod, std::map<std::string, VolumeFiles*>& volumes)>;

// The copy Job as the real script behaves: with volumes "source" and "destination", makes the
// destination equal to the source (rsync --delete), reports format_copy_summary() and exits 3
// if the trees differ; any other pod succeeds with no message.
JobRun run_copy_job(const Json& pod, std::map<std::string, VolumeFiles*>& volumes);

// Runs one pass of a bare pod (no owner, restartPolicy OnFailure or Never): nullopt while it is
// still running (it is called again next tick), else how that run ended.
using PodRunner = std::function<std::optional<JobRun>(
    const Json& pod, std::map<std::string, VolumeFiles*>& volumes)>;

class SimulatedCluster {
 public:
  explicit SimulatedCluster(FakeKubernetes& kube);

  // One pass of every controller (see above).
  void tick();
  void tick(int times);

  // ---- Volume content ----
  // The content of the PV bound to the claim; nullopt when the claim is missing or unbound.
  std::optional<VolumeFiles> volume_files(const ObjectRef& claim) const;
  // false when the claim is missing or unbound.
  bool write_file(const ObjectRef& claim, const std::string& path, const std::string& bytes);
  std::optional<VolumeFiles> persistent_volume_files(const std::string& pv_name) const;

  // ---- Faults ----
  // PVCs of this class stay Pending until provisioning is allowed again.
  void fail_provisioning(const std::string& storage_class, bool failing = true);
  // The next `pods` Job pods fail with `exit_code` without running (the copy does not happen).
  // Pre-copy pods (purpose pre-copy) are not counted: fail_next_pre_copies fails those.
  void fail_next_job_pods(int pods, int exit_code = 1);
  // The next `pods` pre-copy pods fail as rsync would, leaving their destination untouched.
  void fail_next_pre_copies(int pods);
  // The next copy completes but flips one destination byte, so the summaries differ (and the
  // pod fails with exit code 3, as the script does). Default runner only; not a pre-copy.
  void corrupt_next_copy();
  // Replaces run_copy_job for every Job pod (fail_next_job_pods still applies).
  void set_job_runner(JobRunner runner);
  // Bare pods with restartPolicy OnFailure or Never run through `runner` (without one they
  // become Running and Ready, as any other pod).
  void set_pod_runner(PodRunner runner);

 private:
  void collect_garbage();
  void finish_propagation();
  void protect_and_reclaim_volumes();
  void bind_claims();
  bool bind(const Json& claim, const Json& volume);
  void expand_volumes();
  void run_kubelet();
  void run_job_pod(const Json& pod);
  void run_bare_pod(const Json& pod);
  JobRun run(const Json& pod, std::map<std::string, VolumeFiles*>& volumes);
  void sync_jobs();
  void sync_job(const Json& job);
  void sync_statefulsets();
  void sync_statefulset(const Json& statefulset);
  void adopt_orphans(const Json& statefulset);
  bool ensure_claims(const Json& statefulset, int ordinal);
  std::optional<std::string> bound_volume(const std::string& ns, const std::string& claim) const;

  FakeKubernetes& kube_;
  std::map<std::string, VolumeFiles> volumes_;  // by PV name
  std::set<std::string> failing_classes_;
  int failing_job_pods_ = 0;
  int failing_pre_copies_ = 0;
  int failing_exit_code_ = 1;
  int corruptions_pending_ = 0;
  JobRunner job_runner_ = run_copy_job;
  PodRunner pod_runner_;
  std::set<std::string> running_bare_pods_;  // uids of bare pods whose runner has not ended
  bool custom_runner_ = false;
};

}  // namespace stsresize
