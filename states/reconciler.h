#pragma once
// The reconciler: level-based, like a controller-runtime Reconciler. reconcile(ns, name) reads
// the StatefulSet, rebuilds its operation from the annotation (authoritative) and the journal
// (audit trail), runs the current step, and on Done fires the machine, journals the
// transition and writes the annotation. It runs steps back to back while they make progress
// without waiting (at most settings.max_steps_per_reconcile), so one call may advance several
// phases, yet every side effect is its own journaled, idempotent step: stop the process after
// any of them and a new Reconciler resumes from the cluster (and the journal, if it survived).
//
// Lives in states/ because it drives the steps and the machine; engine/ stays free of both.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "engine/fold.h"
#include "engine/ports/clock.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"
#include "engine/ports/operation_listener.h"
#include "engine/settings.h"
#include "states/permission_denial.h"

namespace stsresize {

struct ReconcileResult {
  enum class Kind {
    Idle,          // nothing to do until the StatefulSet changes
    RequeueAfter,  // waiting for the cluster: call again after `after`
    Retry,         // a transient error: call again with backoff
    Terminal,      // refused (invalid state, invalid resize): a person must act
  };
  Kind kind = Kind::Idle;
  Duration after{0};
  std::string message;

  bool is(Kind k) const { return kind == k; }
};
std::string_view to_string(ReconcileResult::Kind kind);

class Reconciler {
 public:
  // `listener` (not owned; must outlive the Reconciler) is told of every operation that begins
  // and ends; nullptr: nobody.
  //
  // `cached_reads` (not owned; nullptr: none) is the same cluster with reads that may be a
  // moment old (the controller's informer caches, adapters/controller/cached_reads.h) and writes
  // passed through. Steps then read through it, except that a step about to delete a claim, a
  // volume or the StatefulSet, or to change a volume, is stopped before it acts (its intent is not
  // journaled) and run again at once on `kube`'s live reads: a destructive act is decided on the
  // cluster as it is, and a step that only waits costs no request.
  Reconciler(Kubernetes& kube, Journal& journal, const Clock& clock, EventRecorder& events,
             EngineSettings settings = {}, OperationListener* listener = nullptr,
             Kubernetes* cached_reads = nullptr);
  ~Reconciler();

  // When the StatefulSet does not exist, looks for the ConfigMap naming::definition_config_map
  // (label stsresize.dev/statefulset=<name>) that an explicit request leaves while it re-creates
  // the StatefulSet, and finishes the re-create from it; with no such ConfigMap: Idle, nothing
  // done. The controller must therefore also enqueue <ns>/<name> for events on ConfigMaps
  // carrying that label (name: the ConfigMap's stsresize.dev/statefulset annotation, which holds
  // the full name), so that a crash between delete and create is finished even though no
  // StatefulSet event will ever come for an object that does not exist.
  //
  // A Retry caused by an API call refused with Forbidden names the missing RBAC rule in its
  // message (`Forbidden: cannot delete persistentvolumeclaims in namespace shop (RBAC: ...)`)
  // and gives a Warning event `Forbidden` on the StatefulSet — once per StatefulSet and
  // distinct denial, until a reconcile of it ends without one. Nothing else changes: the step
  // that was refused runs again on the retry, as after any transient error.
  ReconcileResult reconcile(const std::string& ns, const std::string& name);

 private:
  ReconcileResult reconcile_tracked(const ObjectRef& statefulset);
  void report_denial(const ObjectRef& statefulset, ReconcileResult& result);
  ReconcileResult recover(const ObjectRef& statefulset);
  class Session;
  friend class Session;

  DenialTrackingKubernetes tracked_kube_;  // every call the engine makes goes through it
  Kubernetes& kube_;                       // = tracked_kube_
  // The steps' cached reads, when given (else kube_), also tracked for denials.
  std::unique_ptr<DenialTrackingKubernetes> tracked_cached_;
  Journal& journal_;
  const Clock& clock_;
  EventRecorder& events_;
  EngineSettings settings_;
  NoOperationListener nobody_;
  OperationListener& listener_;
  // The journal's view of each operation this process has touched, so that a reconcile does
  // not refold the whole stream: valid while its last sequence is the journal's.
  std::map<std::string, std::unique_ptr<ValidatingFold>> folded_;
  // "ns/name" -> the nodes reported NotReady under it (a lost-volume recovery's watch), so each
  // is reported once while it stays so.
  std::map<std::string, std::set<std::string>> reported_not_ready_;
  // Node name -> when this process last saw it Ready (a lost-volume recovery's check): a claim
  // created or bound after that may have been bound after the loss, and is never taken for a
  // lost one.
  std::map<std::string, TimePoint> node_seen_;
  // "ns/name" -> the denial last reported on it as an event.
  std::map<std::string, PermissionDenial> reported_denials_;
};

}  // namespace stsresize
