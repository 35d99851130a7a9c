#include "adapters/runtime/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace stsresize::runtime {

Duration ExponentialBackoff::next_delay(const std::string& key) {
  const int exponent = failures_[key]++;
  // In floating point, like client-go, so that a long-failing key cannot overflow the shift.
  const double delay_ms = static_cast<double>(base_.count()) * std::pow(2.0, exponent);
  if (delay_ms >= static_cast<double>(max_.count())) {
    return max_;
  }
  return Duration{static_cast<Duration::rep>(delay_ms)};
}

int ExponentialBackoff::failures(const std::string& key) const {
  const auto found = failures_.find(key);
  return found == failures_.end() ? 0 : found->second;
}

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(static_cast<double>(burst)), tokens_(static_cast<double>(burst)) {}

Duration TokenBucket::reserve(TimePoint now) {
  if (last_ && now > *last_) {
    const double elapsed_seconds = std::chrono::duration<double>(now - *last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed_seconds * qps_);
  }
  if (!last_ || now > *last_) {
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0 || qps_ <= 0) {
    return Duration{0};
  }
  // Rounded up: waiting a fraction of a millisecond too little would overdraw the bucket.
  return Duration{static_cast<Duration::rep>(std::ceil(-tokens_ / qps_ * 1000.0))};
}

RateLimiter::RateLimiter(RateLimiterOptions options)
    : backoff_(options.base_delay, options.max_delay), bucket_(options.qps, options.burst) {}

Duration RateLimiter::when(const std::string& key, TimePoint now) {
  const Duration own = backoff_.next_delay(key);
  const Duration global = bucket_.reserve(now);
  return std::max(own, global);
}

}  // namespace stsresize::runtime
