#include "adapters/runtime/worker_pool.h"
#include "adapters/runtime/shutdown_signal.h"

#include <gtest/gtest.h>

#include <csignal>
#include <deque>
#include <stdexcept>

#include "adapters/clock/system_clock.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Kind = ReconcileResult::Kind;

ReconcileResult result(Kind kind, Duration after = Duration{0}, std::string message = {}) {
  return {.kind = kind, .after = after, .message = std::move(message)};
}

// Hands out scripted results and records the calls.
class ScriptedReconciler {
 public:
  explicit ScriptedReconciler(std::deque<ReconcileResult> script) : script_(std::move(script)) {}

  ReconcileResult operator()(const std::string& key) {
    std::lock_guard lock(mutex_);
    calls_.push_back({key, std::chrono::steady_clock::now()});
    changed_.notify_all();
    if (script_.empty()) return {};
    ReconcileResult next = script_.front();
    script_.pop_front();
    if (next.message == "throw") throw std::runtime_error("boom");
    return next;
  }

  bool wait_for_calls(std::size_t n, Duration limit = seconds{5}) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return calls_.size() >= n; });
  }
  std::size_t calls() {
    std::lock_guard lock(mutex_);
    return calls_.size();
  }
  std::chrono::steady_clock::duration gap(std::size_t i) {
    std::lock_guard lock(mutex_);
    return calls_.at(i + 1).second - calls_.at(i).second;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ReconcileResult> script_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> calls_;
};

struct PoolFixture {
  explicit PoolFixture(std::deque<ReconcileResult> script, int workers = 2)
      : reconciler(std::move(script)),
        pool(
            queue, [this](const std::string& key) { return reconciler(key); }, workers) {}

  SystemClock clock;
  WorkQueue queue{clock, {.base_delay = milliseconds{20}}};
  ScriptedReconciler reconciler;
  WorkerPool pool;
};

TEST(WorkerPool, RetryBacksOffAndSuccessForgetsTheFailures) {
  PoolFixture f({result(Kind::Retry), result(Kind::Retry), result(Kind::Idle)});
  f.queue.add("ns/a");
  ASSERT_TRUE(f.reconciler.wait_for_calls(3));
  EXPECT_GE(f.reconciler.gap(0), milliseconds{20});  // base delay
  EXPECT_GE(f.reconciler.gap(1), milliseconds{40});  // doubled
  f.pool.stop();
  EXPECT_EQ(f.queue.failures("ns/a"), 0);
  EXPECT_EQ(f.reconciler.calls(), 3u);
}

TEST(WorkerPool, RequeueAfterCallsAgainAfterTheDelayWithoutBackoff) {
  PoolFixture f(
      {result(Kind::Retry), result(Kind::RequeueAfter, milliseconds{60}), result(Kind::Idle)});
  f.queue.add("ns/a");
  ASSERT_TRUE(f.reconciler.wait_for_calls(3));
  // The third call began after the second's result was acted upon.
  EXPECT_EQ(f.queue.failures("ns/a"), 0) << "RequeueAfter must forget the earlier failure";
  EXPECT_GE(f.reconciler.gap(1), milliseconds{60});
}

TEST(WorkerPool, TerminalAndIdleAreNotRetried) {
  PoolFixture f({result(Kind::Terminal), result(Kind::Idle)});
  f.queue.add("ns/a");
  f.queue.add("ns/b");
  ASSERT_TRUE(f.reconciler.wait_for_calls(2));
  std::this_thread::sleep_for(milliseconds{100});
  EXPECT_EQ(f.reconciler.calls(), 2u);
  EXPECT_EQ(f.queue.waiting(), 0u);
}

TEST(WorkerPool, AThrowingReconcileIsRetried) {
  PoolFixture f({result(Kind::Idle, Duration{0}, "throw"), result(Kind::Idle)});
  f.queue.add("ns/a");
  ASSERT_TRUE(f.reconciler.wait_for_calls(2));
}

TEST(WorkerPool, StopWaitsForReconcilesInFlightAndTakesNoNewWork) {
  SystemClock clock;
  WorkQueue queue(clock);
  std::atomic<bool> entered{false};
  std::atomic<bool> finish{false};
  std::atomic<int> calls{0};
  WorkerPool pool(
      queue,
      [&](const std::string&) {
        ++calls;
        entered = true;
        while (!finish) std::this_thread::sleep_for(milliseconds{1});
        return ReconcileResult{};
      },
      1);
  queue.add("ns/a");
  while (!entered) std::this_thread::sleep_for(milliseconds{1});
  queue.add("ns/b");
  std::atomic<bool> stopped{false};
  std::jthread stopper([&] {
    pool.stop();
    stopped = true;
  });
  std::this_thread::sleep_for(milliseconds{50});
  EXPECT_FALSE(stopped.load()) << "stop() returned while a reconcile was running";
  EXPECT_EQ(pool.busy(), 1);
  finish = true;
  stopper.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(calls.load(), 1) << "ns/b was taken after the shutdown";
}

TEST(ShutdownSignal, SigtermRequestsShutdownOnce) {
  std::atomic<int> callbacks{0};
  std::atomic<int> number{-1};
  ShutdownSignal signal([&](int n) {
    ++callbacks;
    number = n;
  });
  EXPECT_FALSE(signal.triggered());
  std::raise(SIGTERM);
  ASSERT_TRUE(signal.wait_for(seconds{5}));
  EXPECT_EQ(signal.wait(), SIGTERM);
  std::raise(SIGINT);  // swallowed: the shutdown is under way
  std::this_thread::sleep_for(milliseconds{50});
  EXPECT_EQ(callbacks.load(), 1);
  EXPECT_EQ(number.load(), SIGTERM);
}

TEST(ShutdownSignal, TriggerActsLikeASignal) {
  std::atomic<int> number{-1};
  ShutdownSignal signal([&](int n) { number = n; });
  EXPECT_FALSE(signal.wait_for(milliseconds{10}));
  signal.trigger();
  ASSERT_TRUE(signal.wait_for(seconds{5}));
  EXPECT_EQ(signal.wait(), 0);
  EXPECT_EQ(number.load(), 0);
}

}  // namespace
}  // namespace stsresize::runtime
