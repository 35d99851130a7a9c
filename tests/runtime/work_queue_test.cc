#include "adapters/runtime/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/clock/manual_clock.h"
#include "adapters/clock/system_clock.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(WorkQueue, AddDeduplicatesQueuedKeys) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add("ns/a");
  queue.add("ns/b");
  queue.add("ns/a");
  EXPECT_EQ(queue.depth(), 2u);
  EXPECT_EQ(queue.try_get(), "ns/a");
  EXPECT_EQ(queue.try_get(), "ns/b");
  EXPECT_EQ(queue.try_get(), std::nullopt);
}

TEST(WorkQueue, KeyAddedWhileProcessingIsQueuedAgainOnlyAfterDone) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.try_get(), "ns/a");
  queue.add("ns/a");
  queue.add("ns/a");
  EXPECT_EQ(queue.depth(), 0u);
  EXPECT_EQ(queue.try_get(), std::nullopt) << "handed out twice at once";
  queue.done("ns/a");
  EXPECT_EQ(queue.depth(), 1u);
  EXPECT_EQ(queue.try_get(), "ns/a");
  queue.done("ns/a");
  EXPECT_EQ(queue.try_get(), std::nullopt) << "the two re-adds were one";
}

TEST(WorkQueue, DoneWithoutReAddLeavesTheKeyOut) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.try_get(), "ns/a");
  EXPECT_EQ(queue.in_flight(), 1u);
  queue.done("ns/a");
  EXPECT_EQ(queue.in_flight(), 0u);
  EXPECT_EQ(queue.try_get(), std::nullopt);
}

TEST(WorkQueue, AddAfterHandsKeysOutInDueOrder) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add_after("ns/late", seconds{3});
  queue.add_after("ns/early", seconds{1});
  queue.add_after("ns/middle", seconds{2});
  EXPECT_EQ(queue.try_get(), std::nullopt);
  EXPECT_EQ(queue.waiting(), 3u);
  clock.advance(milliseconds{999});
  EXPECT_EQ(queue.try_get(), std::nullopt);
  clock.advance(seconds{5});
  EXPECT_EQ(queue.try_get(), "ns/early");
  EXPECT_EQ(queue.try_get(), "ns/middle");
  EXPECT_EQ(queue.try_get(), "ns/late");
}

TEST(WorkQueue, EarlierAddAfterWinsOverLater) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add_after("ns/a", seconds{10});
  queue.add_after("ns/a", seconds{2});
  queue.add_after("ns/a", seconds{5});  // later than the pending 2 s: ignored
  EXPECT_EQ(queue.waiting(), 1u);
  clock.advance(seconds{2});
  EXPECT_EQ(queue.try_get(), "ns/a");
  queue.done("ns/a");
  clock.advance(seconds{10});
  EXPECT_EQ(queue.try_get(), std::nullopt) << "the superseded delays must not fire";
}

TEST(WorkQueue, ZeroDelayIsAnImmediateAdd) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add_after("ns/a", Duration{0});
  EXPECT_EQ(queue.try_get(), "ns/a");
}

TEST(WorkQueue, DelayedKeyFallingDueDuringProcessingWaitsForDone) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add("ns/a");
  ASSERT_EQ(queue.try_get(), "ns/a");
  queue.add_after("ns/a", seconds{1});
  clock.advance(seconds{1});
  EXPECT_EQ(queue.try_get(), std::nullopt);
  queue.done("ns/a");
  EXPECT_EQ(queue.try_get(), "ns/a");
}

TEST(WorkQueue, RateLimitedAddsBackOffPerKeyUntilForget) {
  ManualClock clock;
  WorkQueue queue(clock, {.base_delay = milliseconds{100}});
  queue.add_rate_limited("ns/a");  // 100 ms
  clock.advance(milliseconds{99});
  EXPECT_EQ(queue.try_get(), std::nullopt);
  clock.advance(milliseconds{1});
  ASSERT_EQ(queue.try_get(), "ns/a");
  queue.done("ns/a");
  queue.add_rate_limited("ns/a");  // 200 ms
  clock.advance(milliseconds{199});
  EXPECT_EQ(queue.try_get(), std::nullopt);
  clock.advance(milliseconds{1});
  ASSERT_EQ(queue.try_get(), "ns/a");
  queue.done("ns/a");
  EXPECT_EQ(queue.failures("ns/a"), 2);
  queue.forget("ns/a");
  EXPECT_EQ(queue.failures("ns/a"), 0);
  queue.add_rate_limited("ns/a");  // back to 100 ms
  clock.advance(milliseconds{100});
  EXPECT_EQ(queue.try_get(), "ns/a");
}

TEST(WorkQueue, ShutDownRefusesWorkAndDropsDelayedKeys) {
  ManualClock clock;
  WorkQueue queue(clock);
  queue.add("ns/a");
  queue.add_after("ns/b", seconds{1});
  queue.shut_down();
  EXPECT_TRUE(queue.shutting_down());
  EXPECT_EQ(queue.try_get(), std::nullopt);
  EXPECT_EQ(queue.get(), std::nullopt);
  queue.add("ns/c");
  EXPECT_EQ(queue.waiting(), 0u);
}

// ---- Real threads, real time (kept short) ----

TEST(WorkQueue, ShutDownWakesBlockedGetters) {
  SystemClock clock;
  WorkQueue queue(clock);
  std::atomic<int> returned{0};
  std::vector<std::jthread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      if (!queue.get()) ++returned;
    });
  }
  std::this_thread::sleep_for(milliseconds{50});
  EXPECT_EQ(returned.load(), 0);
  queue.shut_down();
  workers.clear();  // joins
  EXPECT_EQ(returned.load(), 3);
}

TEST(WorkQueue, BlockedGetWakesWhenADelayFallsDue) {
  SystemClock clock;
  WorkQueue queue(clock);
  const auto start = std::chrono::steady_clock::now();
  queue.add_after("ns/a", milliseconds{50});
  EXPECT_EQ(queue.get(), "ns/a");
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds{45});
  EXPECT_LT(waited, seconds{2});
}

TEST(WorkQueue, NoKeyIsProcessedByTwoWorkersAtOnce) {
  SystemClock clock;
  WorkQueue queue(clock);
  std::mutex mutex;
  std::map<std::string, int> active;
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.get()) {
        {
          std::lock_guard lock(mutex);
          if (active[*key]++ > 0) ++overlaps;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          --active[*key];
        }
        ++processed;
        queue.done(*key);
      }
    });
  }
  for (int round = 0; round < 2000; ++round) {
    queue.add("ns/key-" + std::to_string(round % 3));
  }
  // Wait until the queue drained, then stop the workers.
  for (int i = 0; i < 400 && (queue.depth() > 0 || queue.in_flight() > 0); ++i) {
    std::this_thread::sleep_for(milliseconds{5});
  }
  queue.shut_down();
  workers.clear();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GE(processed.load(), 3);
  EXPECT_LE(processed.load(), 2000);
}

}  // namespace
}  // namespace stsresize::runtime
