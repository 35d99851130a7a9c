#include "adapters/runtime/manager.h"

#include <csignal>
#include <exception>

#include <boost/asio/post.hpp>

namespace stsresize::runtime {

// ---- WorkerPool ----

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
    queue_.done(*key);
    --busy_;
    if (observer_) {
      observer_(*key, result,
                std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - started));
    }
  }
}

// ---- ShutdownSignal ----

ShutdownSignal::ShutdownSignal(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)),
      keep_running_(boost::asio::make_work_guard(io_)),
      signals_(io_, SIGTERM, SIGINT) {
  wait_for_signal();
  thread_ = std::thread([this] { io_.run(); });
}

void ShutdownSignal::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal_number) {
    if (error) return;  // cancelled: shutting down
    fire(signal_number);
    wait_for_signal();
  });
}

ShutdownSignal::~ShutdownSignal() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  keep_running_.reset();
  io_.stop();
  thread_.join();
}

void ShutdownSignal::trigger() {
  boost::asio::post(io_, [this] { fire(0); });
}

void ShutdownSignal::fire(int signal_number) {
  // Runs on the io_context thread only, so that no second fire() can interleave.
  {
    std::lock_guard lock(mutex_);
    if (triggered_) return;
  }
  if (on_signal_) on_signal_(signal_number);
  {
    std::lock_guard lock(mutex_);
    triggered_ = true;
    signal_number_ = signal_number;
  }
  fired_.notify_all();
}

bool ShutdownSignal::triggered() const {
  std::lock_guard lock(mutex_);
  return triggered_;
}

int ShutdownSignal::wait() {
  std::unique_lock lock(mutex_);
  fired_.wait(lock, [this] { return triggered_; });
  return signal_number_;
}

bool ShutdownSignal::wait_for(Duration limit) {
  std::unique_lock lock(mutex_);
  return fired_.wait_for(lock, limit, [this] { return triggered_; });
}

}  // namespace stsresize::runtime
