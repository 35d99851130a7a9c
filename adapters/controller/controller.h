#pragma once
// The controller: informer caches, the filter (attention.h), a work queue and a bounded pool of
// workers, each running the engine's Reconciler on the keys it is handed.
//
// The caches decide *whether* to reconcile, so the cost of an idle cluster is its watches; the
// Reconciler's steps then read claims, Jobs, ConfigMaps and StorageClasses from them too
// (cached_reads.h: a key this process wrote is read live until the cache shows the write), and
// read live the StatefulSet, pods, volumes, and everything a destructive act is decided on. Keys:
// "namespace/name" of a StatefulSet. They come from StatefulSet events that pass the filter,
// and from the objects an operation creates (copy Jobs and their Pods, labelled
// stsresize.dev/statefulset; the StatefulSet definition ConfigMap of an explicit request),
// and from the claims of StatefulSets with an operation under way. Nothing is enqueued before
// every cache has synced; then every cached StatefulSet is looked at once.
//
// Results: RequeueAfter → looked at again after the delay; Retry → exponential backoff per
// key; Terminal → not reconciled again until the StatefulSet's spec, labels or annotations
// change; Idle → forgotten until the next event.
//
// Threads: informer threads call the handlers; `workers` threads reconcile; stop() ends both,
// letting reconciles in flight finish (each step is journaled and idempotent, so even an
// abandoned one is safe, but a clean stop leaves a tidier journal).
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/controller/attention.h"
#include "adapters/controller/cached_reads.h"
#include "adapters/metrics/metrics.h"
#include "engine/ports/clock.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"
#include "engine/settings.h"

namespace stsresize {

namespace runtime {
class Informer;
struct InformerError;
class WorkQueue;
class WorkerPool;
}  // namespace runtime
struct ReconcileResult;

struct ControllerOptions {
  std::string ns;   // "" every namespace
  int workers = 4;  // StatefulSets reconciled at once
  EngineSettings engine;
  // StorageClasses are cluster-scoped: a namespace-scoped installation may not list them.
  // Without the cache the filter sees no classes (a needed class looks missing, so the
  // StatefulSet is reconciled and the reconciler reports what it finds).
  bool watch_storage_classes = true;
  // PersistentVolumes are cluster-scoped too, and only the rebind path and the lost-volume
  // recovery read them: watched by a cluster-scoped controller that may list them, read live
  // otherwise (a namespace-scoped installation takes two copies and reads none).
  bool watch_volumes = false;
  // Watch events for a StatefulSet that arrive while it is being reconciled, or less than this
  // long after, are handled together by one reconcile this long after the last one; an event
  // later than that is handled at once. A resize sees bursts (its own writes echoed back, a
  // copy pod's and Job's status updates, a claim binding): two thirds of its reconciles started
  // within 50 ms of the previous one and found nothing new. 0: every event at once.
  Duration event_batching_window = std::chrono::milliseconds{200};
  // Every informer's failed lists and watches, and its first success after them (for logs:
  // a failing informer retries for ever and the workers wait for its cache). Informer threads.
  std::function<void(const runtime::InformerError&)> on_informer_error = {};
  std::function<void(Kind)> on_informer_recovered = {};
  // Told of every operation that begins and ends (the metrics); not owned. nullptr: nobody.
  OperationListener* operation_listener = nullptr;
};

class Controller {
 public:
  Controller(Kubernetes& kube, Journal& journal, const Clock& clock, EventRecorder& events,
             ControllerOptions options);
  ~Controller();  // stop()

  // Starts the informers; returns at once.
  void start_caches();
  bool caches_synced() const;
  std::string sync_detail() const;  // "informers: 3/5 synced (waiting for Job)"

  // Starts the workers (once; when leading). Blocks until the caches have synced or stop().
  void start_workers();
  bool working() const { return working_; }

  // Stops handing out work, waits for reconciles in flight, stops the informers. Idempotent.
  void stop();

  // The Kubernetes port the Reconcilers read through: the informers' caches where they answer,
  // live reads otherwise. Writes pass through to the port given at construction.
  Kubernetes& reads();

  // Series for /metrics: queue depth, informer counters, operations by phase.
  void export_metrics(ControllerMetrics& metrics);
  // Called after every reconcile (for /metrics and logs); set before start_workers().
  void on_reconciled(std::function<void(const std::string& key, std::string_view result,
                                        Duration took, const std::string& message)>
                         callback);

 private:
  struct Informers;
  void handle_statefulset(const std::string& key, const Json& sts, bool deleted);
  void handle_owned(const Json& object);
  void handle_claim(const Json& claim);
  Attention attention_of(const Json& sts) const;
  void enqueue_all();
  // queue_->add(key), or add_after when within the batching window; caller holds mutex_.
  void enqueue_locked(const std::string& key);
  void observe(const std::string& key, const ReconcileResult& result, Duration took);
  class ReconcilerPool;

  Kubernetes& kube_;
  std::unique_ptr<CachedReads> cached_reads_;  // the Reconcilers' port: kube_ and the caches
  Journal& journal_;
  const Clock& clock_;
  EventRecorder& events_;
  ControllerOptions options_;
  std::unique_ptr<runtime::WorkQueue> queue_;
  std::unique_ptr<Informers> informers_;
  std::unique_ptr<ReconcilerPool> reconcilers_;
  std::unique_ptr<runtime::WorkerPool> workers_;
  std::atomic<bool> working_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> scanned_{false};
  std::function<void(const std::string&, std::string_view, Duration, const std::string&)>
      on_reconciled_;

  std::mutex lifecycle_mutex_;  // start_workers() against stop()
  mutable std::mutex mutex_;
  std::set<std::string> active_;                      // keys with an operation under way
  std::map<std::string, std::size_t> refused_;        // key → refusal_fingerprint at Terminal
  std::set<std::string> reconciling_;                 // keys a worker holds now
  std::map<std::string, TimePoint> last_reconciled_;  // key → end of its last reconcile
};

}  // namespace stsresize
