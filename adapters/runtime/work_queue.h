#pragma once
// The controller's work queue, with client-go workqueue semantics (a rate-limited delaying
// queue) for keys "namespace/name":
// - a key is queued at most once however often it is added (de-duplication);
// - a key is never handed to two workers at once: added while a worker holds it, it is queued
//   again only when that worker calls done(key);
// - add_after delays an add; of several pending delays for one key the earliest wins;
// - add_rate_limited delays by the key's exponential backoff and the global token bucket
//   (rate_limiter.h) until forget(key).
//
// Time comes from the injected Clock, so delays are testable without sleeping: advance a
// ManualClock, then try_get(). get() blocks in real time; it wakes when a delay falls due, when
// something is added, and at least every few seconds (so a wall-clock jump costs seconds at
// most).
//
// Deviation from client-go: after shut_down() get() returns nullopt at once even if keys are
// still queued; a worker stops taking work immediately (leader lost, SIGTERM). Keys left behind
// are harmless: reconciliation is level-based and the next leader lists everything again.
//
// Thread-safe.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "adapters/runtime/rate_limiter.h"
#include "engine/ports/clock.h"

namespace stsresize::runtime {

class WorkQueue {
 public:
  explicit WorkQueue(const Clock& clock, RateLimiterOptions rate_limits = {});

  void add(const std::string& key);
  // delay <= 0 is add(key).
  void add_after(const std::string& key, Duration delay);
  // add_after(key, the rate limiter's delay); counts a failure of `key`.
  void add_rate_limited(const std::string& key);
  // Resets the key's backoff (call after a success); does not dequeue it.
  void forget(const std::string& key);
  // Failures counted since the last forget(key).
  int failures(const std::string& key) const;

  // Blocks until a key is ready and hands it to the caller, who must call done(key) when
  // finished with it. nullopt once shut down.
  std::optional<std::string> get();
  // Like get() without blocking: nullopt when no key is ready now (or shut down).
  std::optional<std::string> try_get();
  void done(const std::string& key);

  // Stops handing out keys, ignores further adds, wakes every blocked get().
  void shut_down();
  bool shutting_down() const;

  // Keys ready to be handed out now (the queue_depth metric).
  std::size_t depth() const;
  // Keys waiting for their delay to pass.
  std::size_t waiting() const;
  // Keys handed out and not yet done.
  std::size_t in_flight() const;

 private:
  // Callers hold mutex_.
  void add_locked(const std::string& key);
  void promote_due_locked(TimePoint now);
  std::optional<std::string> pop_locked();

  const Clock& clock_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  RateLimiter limiter_;
  std::deque<std::string> queue_;  // ready keys in FIFO order
  std::set<std::string> dirty_;    // keys that need processing (queued, or re-added in flight)
  std::set<std::string> processing_;
  // Delayed adds: due time per key, and the same entries ordered by due time (then by arrival).
  std::map<std::string, std::pair<TimePoint, std::uint64_t>> waiting_by_key_;
  std::set<std::tuple<TimePoint, std::uint64_t, std::string>> waiting_by_time_;
  std::uint64_t arrivals_ = 0;
  bool shutting_down_ = false;
};

}  // namespace stsresize::runtime
