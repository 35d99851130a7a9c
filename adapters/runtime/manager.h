#pragma once
// The controller's moving parts around the WorkQueue: a pool of workers that reconcile keys,
// and a shutdown signal fed by SIGTERM/SIGINT through Boost.Asio.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

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

// Turns the first SIGTERM or SIGINT into a shutdown request. The handlers are installed on
// construction (Boost.Asio signal_set on an io_context run by its own thread) and removed on
// destruction, when the default action applies again; later signals are swallowed meanwhile
// (the shutdown is already under way).
class ShutdownSignal {
 public:
  // `on_signal` runs once, on the signal thread, with the signal number (0 for trigger()).
  explicit ShutdownSignal(std::function<void(int)> on_signal = {});
  ~ShutdownSignal();

  // Requests shutdown as a signal would (e.g. after leadership was lost).
  void trigger();
  bool triggered() const;
  // Blocks until shutdown was requested and on_signal has returned; the signal number, 0 for
  // trigger().
  int wait();
  // false when `limit` passed first.
  bool wait_for(Duration limit);

 private:
  void fire(int signal_number);
  void wait_for_signal();

  std::function<void(int)> on_signal_;
  boost::asio::io_context io_;
  // Keeps io_.run() going after the first signal, for trigger() and later signals.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> keep_running_;
  boost::asio::signal_set signals_;
  mutable std::mutex mutex_;
  std::condition_variable fired_;
  bool triggered_ = false;
  int signal_number_ = 0;
  std::thread thread_;
};

}  // namespace stsresize::runtime
