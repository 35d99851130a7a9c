#include "adapters/runtime/rate_limiter.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ExponentialBackoff, DoublesPerFailureFromTheBaseDelay) {
  ExponentialBackoff backoff(milliseconds{5}, minutes{5});
  EXPECT_EQ(backoff.next_delay("ns/a"), milliseconds{5});
  EXPECT_EQ(backoff.next_delay("ns/a"), milliseconds{10});
  EXPECT_EQ(backoff.next_delay("ns/a"), milliseconds{20});
  EXPECT_EQ(backoff.next_delay("ns/a"), milliseconds{40});
  EXPECT_EQ(backoff.failures("ns/a"), 4);
}

TEST(ExponentialBackoff, KeysBackOffIndependently) {
  ExponentialBackoff backoff(milliseconds{5}, minutes{5});
  backoff.next_delay("ns/a");
  backoff.next_delay("ns/a");
  EXPECT_EQ(backoff.next_delay("ns/b"), milliseconds{5});
  EXPECT_EQ(backoff.failures("ns/a"), 2);
  EXPECT_EQ(backoff.failures("ns/b"), 1);
}

TEST(ExponentialBackoff, CapsAtTheMaximumEvenAfterManyFailures) {
  ExponentialBackoff backoff(milliseconds{5}, seconds{1});
  Duration last{0};
  for (int i = 0; i < 200; ++i) {  // 5 ms * 2^199 would overflow any integer
    last = backoff.next_delay("ns/a");
    ASSERT_LE(last, seconds{1}) << "failure " << i;
  }
  EXPECT_EQ(last, seconds{1});
  // 5 * 2^7 = 640 ms is the last uncapped step, 1280 ms is capped.
  ExponentialBackoff fresh(milliseconds{5}, seconds{1});
  for (int i = 0; i < 7; ++i) fresh.next_delay("k");
  EXPECT_EQ(fresh.next_delay("k"), milliseconds{640});
  EXPECT_EQ(fresh.next_delay("k"), seconds{1});
}

TEST(ExponentialBackoff, ForgetStartsAgainAtTheBaseDelay) {
  ExponentialBackoff backoff(milliseconds{5}, minutes{5});
  for (int i = 0; i < 5; ++i) backoff.next_delay("ns/a");
  backoff.forget("ns/a");
  EXPECT_EQ(backoff.failures("ns/a"), 0);
  EXPECT_EQ(backoff.next_delay("ns/a"), milliseconds{5});
}

TEST(TokenBucket, BurstIsFreeThenCallsAreSpreadAtQps) {
  ManualClock clock;
  TokenBucket bucket(10, 100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(bucket.reserve(clock.now()), Duration{0}) << "call " << i;
  }
  // The bucket is empty: each further call waits one more 1/qps = 100 ms.
  EXPECT_EQ(bucket.reserve(clock.now()), milliseconds{100});
  EXPECT_EQ(bucket.reserve(clock.now()), milliseconds{200});
  EXPECT_EQ(bucket.reserve(clock.now()), milliseconds{300});
}

TEST(TokenBucket, RefillsAtQpsUpToTheBurstOnly) {
  ManualClock clock;
  TokenBucket bucket(10, 3);
  for (int i = 0; i < 3; ++i) bucket.reserve(clock.now());
  EXPECT_EQ(bucket.reserve(clock.now()), milliseconds{100});  // in debt by one token
  clock.advance(milliseconds{300});  // +3 tokens: 2 left after repaying the debt
  EXPECT_EQ(bucket.reserve(clock.now()), Duration{0});
  EXPECT_EQ(bucket.reserve(clock.now()), Duration{0});
  EXPECT_EQ(bucket.reserve(clock.now()), milliseconds{100});
  clock.advance(minutes{10});  // a long quiet time refills to the burst, not beyond
  for (int i = 0; i < 3; ++i) ASSERT_EQ(bucket.reserve(clock.now()), Duration{0});
  EXPECT_GT(bucket.reserve(clock.now()), Duration{0});
}

TEST(RateLimiter, TakesTheLongerOfKeyBackoffAndGlobalBucket) {
  ManualClock clock;
  RateLimiter limiter(
      {.base_delay = milliseconds{5}, .max_delay = minutes{5}, .qps = 10, .burst = 2});
  EXPECT_EQ(limiter.when("ns/a", clock.now()), milliseconds{5});    // own backoff
  EXPECT_EQ(limiter.when("ns/b", clock.now()), milliseconds{5});    // last free token
  EXPECT_EQ(limiter.when("ns/c", clock.now()), milliseconds{100});  // the bucket's wait
  EXPECT_EQ(limiter.failures("ns/a"), 1);
  clock.advance(seconds{10});
  for (int i = 0; i < 10; ++i) limiter.when("ns/a", clock.now() + seconds{i});
  // 5 ms * 2^11 = 10.24 s: the key's own backoff dominates the refilled bucket.
  EXPECT_EQ(limiter.when("ns/a", clock.now() + seconds{20}), milliseconds{10240});
  limiter.forget("ns/a");
  EXPECT_EQ(limiter.failures("ns/a"), 0);
}

TEST(RateLimiter, MaxDelayIsConfigurable) {
  ManualClock clock;
  RateLimiter limiter({.max_delay = seconds{2}});
  Duration last{0};
  for (int i = 0; i < 20; ++i) last = limiter.when("ns/a", clock.now());
  EXPECT_EQ(last, seconds{2});
}

}  // namespace
}  // namespace stsresize::runtime
