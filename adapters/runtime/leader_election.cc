#include "adapters/runtime/leader_election.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace stsresize::runtime {

namespace {

std::string text_field(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

std::int64_t integer_field(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found != object.end() && found->is_number_integer() ? found->get<std::int64_t>() : 0;
}

std::int64_t whole_seconds(Duration duration) {
  return std::chrono::duration_cast<std::chrono::seconds>(duration).count();
}

}  // namespace

std::string format_micro_time(TimePoint time) {
  const auto micros = std::chrono::floor<std::chrono::microseconds>(time);
  const auto seconds = std::chrono::floor<std::chrono::seconds>(micros);
  const std::time_t since_epoch = std::chrono::system_clock::to_time_t(seconds);
  std::tm utc{};
  gmtime_r(&since_epoch, &utc);
  char text[96];  // room for any int the compiler can imagine in each field
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>((micros - seconds).count()));
  return text;
}

LeaderElector::LeaderElector(Kubernetes& kube, const Clock& clock, LeaderElectionOptions options,
                             LeaderCallbacks callbacks)
    : kube_(kube), clock_(clock), options_(std::move(options)), callbacks_(std::move(callbacks)) {}

Json LeaderElector::lease_object() const {
  return Json{
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"namespace", options_.lease_namespace}, {"name", options_.lease_name}}}};
}

void LeaderElector::observe(const Json& spec, TimePoint now) {
  if (spec != observed_spec_) {
    observed_spec_ = spec;
    observed_time_ = now;
  }
  std::lock_guard lock(state_mutex_);
  holder_ = text_field(observed_spec_, "holderIdentity");
}

LeaderElector::Attempt LeaderElector::try_acquire_or_renew(TimePoint now) {
  const std::string now_text = format_micro_time(now);
  auto current = kube_.get(ObjectRef{Kind::Lease, options_.lease_namespace, options_.lease_name});
  if (!current) {
    if (current.error().code != KubeErrorCode::NotFound) {
      return failed("get", current.error());
    }
    Json lease = lease_object();
    lease["spec"] = {{"holderIdentity", options_.identity},
                     {"leaseDurationSeconds", whole_seconds(options_.lease_duration)},
                     {"acquireTime", now_text},
                     {"renewTime", now_text},
                     {"leaseTransitions", 0}};
    auto created = kube_.create(Kind::Lease, lease);
    if (!created) {
      // AlreadyExists: another candidate created it first.
      if (created.error().code == KubeErrorCode::AlreadyExists) return Attempt::Failed;
      return failed("create", created.error());
    }
    observe(created->value("spec", Json::object()), now);
    succeeded();
    return Attempt::Holding;
  }

  const Json old_spec = current->value("spec", Json::object());
  observe(old_spec, now);
  const std::string old_holder = text_field(old_spec, "holderIdentity");
  const auto lease_duration = std::chrono::seconds{integer_field(old_spec, "leaseDurationSeconds")};
  const bool ours = old_holder == options_.identity;
  if (!old_holder.empty() && !ours && observed_time_ + lease_duration > now) {
    succeeded();  // read: enough for a candidate that stands by
    return Attempt::HeldByOther;
  }

  Json spec = old_spec;
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = whole_seconds(options_.lease_duration);
  spec["renewTime"] = now_text;
  if (!ours) {
    spec["acquireTime"] = now_text;
    spec["leaseTransitions"] = integer_field(old_spec, "leaseTransitions") + 1;
  }
  Json lease = *current;  // keeps metadata.resourceVersion: a concurrent writer makes this 409
  lease["spec"] = std::move(spec);
  auto updated = kube_.update(Kind::Lease, lease);
  if (!updated) {
    // Conflict: someone else wrote it since the read (the next tick sees who).
    if (updated.error().code == KubeErrorCode::Conflict) return Attempt::Failed;
    return failed("update", updated.error());
  }
  observe(updated->value("spec", Json::object()), now);
  succeeded();
  return Attempt::Holding;
}

LeaderElector::Attempt LeaderElector::failed(std::string_view doing, const KubeError& error) {
  failing_ = true;
  if (callbacks_.on_error) callbacks_.on_error(doing, error);
  return Attempt::Failed;
}

void LeaderElector::succeeded() {
  if (!failing_) return;
  failing_ = false;
  if (callbacks_.on_recovered) callbacks_.on_recovered();
}

Duration LeaderElector::tick() {
  const TimePoint attempt_time = clock_.now();
  const Attempt attempt = try_acquire_or_renew(attempt_time);

  std::lock_guard transition(transition_mutex_);
  bool started = false;
  {
    std::lock_guard lock(state_mutex_);
    if (attempt == Attempt::Holding) {
      last_renewal_ = attempt_time;
      // A renewal that took longer than the deadline does not count: the watchdog may already
      // have stopped us, and the next tick renews again.
      if (!leading_ && clock_.now() < attempt_time + options_.renew_deadline) {
        leading_ = true;
        started = true;
      }
    }
  }
  if (started) {
    if (callbacks_.on_started_leading) callbacks_.on_started_leading();
    return options_.retry_period;
  }
  if (attempt == Attempt::HeldByOther) {
    stop_leading_locked();  // someone took over after our renewals failed
  } else if (attempt == Attempt::Failed) {
    bool expired = false;
    {
      std::lock_guard lock(state_mutex_);
      expired = clock_.now() >= last_renewal_ + options_.renew_deadline;
    }
    if (expired) stop_leading_locked();
  }
  return options_.retry_period;
}

void LeaderElector::check_deadline() {
  std::lock_guard transition(transition_mutex_);
  bool expired = false;
  {
    std::lock_guard lock(state_mutex_);
    expired = clock_.now() >= last_renewal_ + options_.renew_deadline;
  }
  if (expired) stop_leading_locked();
}

void LeaderElector::stop_leading_locked() {
  {
    std::lock_guard lock(state_mutex_);
    if (!leading_) return;
    leading_ = false;
  }
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

KubeResult<void> LeaderElector::release() {
  KubeResult<void> result;
  auto current = kube_.get(ObjectRef{Kind::Lease, options_.lease_namespace, options_.lease_name});
  if (!current) {
    if (current.error().code != KubeErrorCode::NotFound) {
      result = std::unexpected(current.error());
    }
  } else if (text_field(current->value("spec", Json::object()), "holderIdentity") ==
             options_.identity) {
    const TimePoint now = clock_.now();
    Json lease = *current;
    Json& spec = lease["spec"];
    spec["holderIdentity"] = "";
    spec["leaseDurationSeconds"] = 1;
    spec["acquireTime"] = format_micro_time(now);
    spec["renewTime"] = format_micro_time(now);
    auto updated = kube_.update(Kind::Lease, lease);
    if (updated) {
      observe(updated->value("spec", Json::object()), now);
    } else {
      result = std::unexpected(updated.error());
    }
  }
  // Even when the write failed, this process must not act as leader any more: the lease then
  // expires on its own.
  std::lock_guard transition(transition_mutex_);
  stop_leading_locked();
  return result;
}

bool LeaderElector::is_leader() const {
  std::lock_guard lock(state_mutex_);
  return leading_ && clock_.now() < last_renewal_ + options_.renew_deadline;
}

std::string LeaderElector::holder() const {
  std::lock_guard lock(state_mutex_);
  return holder_;
}

std::optional<TimePoint> LeaderElector::leadership_deadline() const {
  std::lock_guard lock(state_mutex_);
  if (!leading_) return std::nullopt;
  return last_renewal_ + options_.renew_deadline;
}

std::optional<Duration> LeaderElector::time_left() const {
  std::lock_guard lock(state_mutex_);
  if (!leading_) return std::nullopt;
  return std::chrono::ceil<Duration>(last_renewal_ + options_.renew_deadline - clock_.now());
}

// ---- LeaderElectionRunner ----

LeaderElectionRunner::LeaderElectionRunner(LeaderElector& elector) : elector_(elector) {
  ticker_ = std::jthread([this](std::stop_token stop) { tick_loop(stop); });
  watchdog_ = std::jthread([this](std::stop_token stop) { watchdog_loop(stop); });
}

LeaderElectionRunner::~LeaderElectionRunner() {
  (void)stop(false);
}

void LeaderElectionRunner::tick_loop(std::stop_token stop) {
  std::minstd_rand random(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, 0.2);
  while (!stop.stop_requested()) {
    Duration delay = elector_.tick();
    {
      std::lock_guard lock(mutex_);  // so that the watchdog cannot miss the notification
    }
    wake_.notify_all();
    if (!elector_.is_leader()) {
      delay += std::chrono::duration_cast<Duration>(delay * jitter(random));
    }
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, delay, [] { return false; });
  }
}

void LeaderElectionRunner::watchdog_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const auto left = elector_.time_left();
    if (left && *left <= Duration{0}) {
      elector_.check_deadline();
      continue;
    }
    std::unique_lock lock(mutex_);
    if (!left) {
      wake_.wait(lock, stop, [this] { return elector_.time_left().has_value(); });
    } else {
      // A renewal meanwhile moves the deadline: check_deadline() then finds it not yet due.
      wake_.wait_for(lock, stop, *left, [] { return false; });
    }
  }
}

KubeResult<void> LeaderElectionRunner::stop(bool release_lease) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return {};
    stopped_ = true;
  }
  ticker_.request_stop();
  watchdog_.request_stop();
  ticker_.join();
  watchdog_.join();
  if (release_lease) return elector_.release();
  return {};
}

}  // namespace stsresize::runtime
