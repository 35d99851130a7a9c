#pragma once
// Per-key retry delays for the work queue, with client-go's workqueue semantics: an exponential
// backoff per key (ItemExponentialFailureRateLimiter) combined, by taking the longer delay, with
// a token bucket shared by all keys (BucketRateLimiter). The bucket keeps one failing key from
// being retried quickly, and a burst of failures from flooding the API server.
//
// Pure logic: time comes in as `now`, so tests drive it without sleeping. Not thread-safe (the
// WorkQueue that owns it holds its lock).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/time.h"

namespace stsresize::runtime {

struct RateLimiterOptions {
  Duration base_delay{5};  // the first retry of a key
  Duration max_delay = std::chrono::minutes{5};
  double qps = 10;  // the bucket's refill rate, shared by all keys; <= 0: no global limit
  int burst = 100;  // the bucket's size: retries that are free of the global limit
};

// delay(n failures) = base * 2^n, capped at max.
class ExponentialBackoff {
 public:
  ExponentialBackoff(Duration base, Duration max) : base_(base), max_(max) {}

  // Counts one more failure of `key` and returns how long to wait before retrying it.
  Duration next_delay(const std::string& key);
  void forget(const std::string& key) { failures_.erase(key); }
  int failures(const std::string& key) const;

 private:
  Duration base_;
  Duration max_;
  std::map<std::string, int> failures_;
};

// A token bucket like golang.org/x/time/rate's Reserve(): every call takes a token, even when
// none is left (the bucket goes into debt), and returns how long the caller must wait for it.
// So N calls in a burst beyond `burst` are spread out at `qps`.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst);

  Duration reserve(TimePoint now);

 private:
  double qps_;
  double burst_;
  double tokens_;
  std::optional<TimePoint> last_;
};

class RateLimiter {
 public:
  explicit RateLimiter(RateLimiterOptions options = {});

  // One more failure of `key`: the delay before retrying it, the longer of its own backoff and
  // the global bucket's wait. Both are charged, as client-go's MaxOfRateLimiter does.
  Duration when(const std::string& key, TimePoint now);
  // `key` succeeded: its next failure starts again at base_delay.
  void forget(const std::string& key) { backoff_.forget(key); }
  int failures(const std::string& key) const { return backoff_.failures(key); }

 private:
  ExponentialBackoff backoff_;
  TokenBucket bucket_;
};

}  // namespace stsresize::runtime
