#pragma once
// A pool of workers that reconcile the keys of a WorkQueue, as controller-runtime's do.
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "adapters/runtime/work_queue.h"
#include "states/reconciler.h"

namespace stsresize::runtime {

// N threads, each taking a key from the queue, reconciling it and acting on the result as
// controller-runtime does:
//   RequeueAfter → forget the backoff, add_after(key, after);
//   Retry        → add_rate_limited(key) (per-key exponential backoff);
//   Idle, Terminal → forget the backoff (a Terminal key waits for a change of its object).
// A reconcile that throws counts as Retry. The queue guarantees one worker per key.
class WorkerPool {
 public:
  using Reconcile = std::function<ReconcileResult(const std::string& key)>;
  // For metrics and logs: called on the worker thread after each reconcile.
  using Observer =
      std::function<void(const std::string& key, const ReconcileResult& result, Duration took)>;

  WorkerPool(WorkQueue& queue, Reconcile reconcile, int workers, Observer observer = {});
  ~WorkerPool();  // stop()

  // Shuts the queue down (no new work is taken) and waits for the reconciles in flight.
  void stop();
  // Reconciles running now.
  int busy() const { return busy_.load(); }

 private:
  void work();

  WorkQueue& queue_;
  const Reconcile reconcile_;
  const Observer observer_;
  std::atomic<int> busy_{0};
  std::vector<std::jthread> threads_;
};

}  // namespace stsresize::runtime
