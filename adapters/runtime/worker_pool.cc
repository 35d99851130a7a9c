#include "adapters/runtime/worker_pool.h"

#include <exception>

namespace stsresize::runtime {

WorkerPool::WorkerPool(WorkQueue& queue, Reconcile reconcile, int workers, Observer observer)
    : queue_(queue), reconcile_(std::move(reconcile)), observer_(std::move(observer)) {
  threads_.reserve(static_cast<std::size_t>(std::max(workers, 1)));
  for (int i = 0; i < std::max(workers, 1); ++i) {
    threads_.emplace_back([this] { work(); });
  }
}

WorkerPool::~WorkerPool() {
  stop();
}

void WorkerPool::stop() {
  queue_.shut_down();
  threads_.clear();  // joins: each worker finishes its reconcile, then get() returns nullopt
}

void WorkerPool::work() {
  while (const std::optional<std::string> key = queue_.get()) {
    ++busy_;
    const auto started = std::chrono::steady_clock::now();
    ReconcileResult result;
    try {
      result = reconcile_(*key);
    } catch (const std::exception& error) {
      result.kind = ReconcileResult::Kind::Retry;
      result.message = error.what();
    } catch (...) {
      result.kind = ReconcileResult::Kind::Retry;
      result.message = "unknown exception";
    }
    switch (result.kind) {
      case ReconcileResult::Kind::RequeueAfter:
        queue_.forget(*key);
        queue_.add_after(*key, result.after);
        break;
      case ReconcileResult::Kind::Retry:
        queue_.add_rate_limited(*key);
        break;
      case ReconcileResult::Kind::Idle:
      case ReconcileResult::Kind::Terminal:
        queue_.forget(*key);
        break;
    }
    // Told before the key is done: the queue may hand it to another worker at once, which must
    // find what this reconcile's observer records (a refusal) already recorded.
    if (observer_) {
      observer_(*key, result,
                std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
    }
    queue_.done(*key);
    --busy_;
  }
}

}  // namespace stsresize::runtime
