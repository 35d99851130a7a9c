#include "adapters/runtime/work_queue.h"

#include <algorithm>

namespace stsresize::runtime {

namespace {
// The longest get() sleeps while delayed keys wait: bounds the effect of a wall-clock jump on
// the injected Clock.
constexpr std::chrono::seconds kMaxTimedWait{5};
}  // namespace

WorkQueue::WorkQueue(const Clock& clock, RateLimiterOptions rate_limits)
    : clock_(clock), limiter_(rate_limits) {}

void WorkQueue::add(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_) {
      return;
    }
    add_locked(key);
  }
  ready_.notify_one();
}

void WorkQueue::add_locked(const std::string& key) {
  if (!dirty_.insert(key).second) {
    return;  // already queued, or already due again after done()
  }
  if (processing_.contains(key)) {
    return;  // done(key) queues it
  }
  queue_.push_back(key);
}

void WorkQueue::add_after(const std::string& key, Duration delay) {
  if (delay <= Duration{0}) {
    add(key);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_) {
      return;
    }
    const TimePoint due = clock_.now() + delay;
    const auto existing = waiting_by_key_.find(key);
    if (existing != waiting_by_key_.end()) {
      if (existing->second.first <= due) {
        return;  // an earlier delay is already pending
      }
      waiting_by_time_.erase({existing->second.first, existing->second.second, key});
      waiting_by_key_.erase(existing);
    }
    const std::uint64_t arrival = arrivals_++;
    waiting_by_key_.emplace(key, std::pair{due, arrival});
    waiting_by_time_.emplace(due, arrival, key);
  }
  // A blocked get() may now have an earlier deadline to wait for.
  ready_.notify_all();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  Duration delay{0};
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_) {
      return;
    }
    delay = limiter_.when(key, clock_.now());
  }
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  limiter_.forget(key);
}

int WorkQueue::failures(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return limiter_.failures(key);
}

void WorkQueue::promote_due_locked(TimePoint now) {
  while (!waiting_by_time_.empty()) {
    const auto first = waiting_by_time_.begin();
    const auto& [due, arrival, key] = *first;
    if (due > now) {
      return;
    }
    const std::string due_key = key;
    waiting_by_key_.erase(due_key);
    waiting_by_time_.erase(first);
    add_locked(due_key);
  }
}

std::optional<std::string> WorkQueue::pop_locked() {
  if (queue_.empty()) {
    return std::nullopt;
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (shutting_down_) {
      return std::nullopt;
    }
    const TimePoint now = clock_.now();
    promote_due_locked(now);
    if (auto key = pop_locked()) {
      return key;
    }
    if (waiting_by_time_.empty()) {
      ready_.wait(lock);
    } else {
      const auto until_due = std::get<0>(*waiting_by_time_.begin()) - now;
      ready_.wait_for(lock, std::min<std::chrono::nanoseconds>(until_due, kMaxTimedWait));
    }
  }
}

std::optional<std::string> WorkQueue::try_get() {
  std::lock_guard lock(mutex_);
  if (shutting_down_) {
    return std::nullopt;
  }
  promote_due_locked(clock_.now());
  return pop_locked();
}

void WorkQueue::done(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (processing_.erase(key) == 0) {
      return;
    }
    if (!dirty_.contains(key)) {
      return;
    }
    queue_.push_back(key);
  }
  ready_.notify_one();
}

void WorkQueue::shut_down() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
    waiting_by_key_.clear();
    waiting_by_time_.clear();
  }
  ready_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mutex_);
  return shutting_down_;
}

std::size_t WorkQueue::depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::size_t WorkQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_by_key_.size();
}

std::size_t WorkQueue::in_flight() const {
  std::lock_guard lock(mutex_);
  return processing_.size();
}

}  // namespace stsresize::runtime
