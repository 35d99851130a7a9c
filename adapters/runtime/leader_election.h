#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, with client-go leaderelection semantics:
// - a candidate takes the lease when it is absent, held by nobody (released), held by itself,
//   or expired: not changed for spec.leaseDurationSeconds as measured on *this* process's clock
//   from when it last saw the record change (never from the remote renewTime, so clock skew
//   between nodes does not matter);
// - the leader renews every retry_period; a write that loses a race (409 Conflict) means
//   someone else won;
// - the leader stops leading when no renewal has succeeded for renew_deadline (< lease_duration,
//   so it stops before any standby may take over), or at once when it sees another holder;
// - release() on shutdown writes holderIdentity "" and leaseDurationSeconds 1, so a standby
//   takes over at its next try instead of waiting out the lease;
// - leaseTransitions counts changes of holder; acquireTime is when the current holder took it.
//
// LeaderElector is the decision logic, one acquire-or-renew per tick(), with time from the
// Clock: tests drive it with a ManualClock and FakeKubernetes. LeaderElectionRunner calls it
// on real time, on two threads: one ticks, one enforces the renew deadline even while a tick
// is stuck in a slow API call.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "engine/json.h"
#include "engine/ports/clock.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::runtime {

struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. pod name + random suffix
  Duration lease_duration = std::chrono::seconds{15};
  Duration renew_deadline = std::chrono::seconds{10};  // must be < lease_duration
  Duration retry_period = std::chrono::seconds{2};
};

// Under LeaderElectionRunner both run on its threads (the ticker, or the watchdog for a missed
// renew deadline), never concurrently and always alternating; they must return quickly and
// must not call stop() or release().
struct LeaderCallbacks {
  // This process won the lease: start the controller's workers.
  std::function<void()> on_started_leading;
  // Leadership ended for any reason: renew deadline missed, another holder seen, or release().
  // Stop all work that needs leadership, promptly. Called once per started.
  std::function<void()> on_stopped_leading;
  // A read or write of the Lease failed for a reason other than the contention the protocol
  // expects (a Lease not there yet, a create or update that lost a race): a 403 without the
  // RBAC rule, a 401, an unreachable server. `doing` is "get", "create" or "update". Each
  // failed attempt is told; the caller decides what to say how often.
  std::function<void(std::string_view doing, const KubeError& error)> on_error;
  // The first attempt that reads and writes the Lease after failed ones.
  std::function<void()> on_recovered;
};

// The lease's spec as MicroTime text: "2006-01-02T15:04:05.000000Z" (UTC, microseconds).
std::string format_micro_time(TimePoint time);

class LeaderElector {
 public:
  LeaderElector(Kubernetes& kube, const Clock& clock, LeaderElectionOptions options,
                LeaderCallbacks callbacks = {});

  // One attempt to acquire or renew; fires the callbacks on a change of leadership. Returns
  // the delay until the next attempt (retry_period). Not concurrent with itself or release().
  Duration tick();
  // Ends leadership if renew_deadline has passed since the last successful renewal; callable
  // from another thread while tick() is blocked in the API.
  void check_deadline();
  // Gives the lease up if this process holds it (see above) and ends leadership. Safe to call
  // when not leading (no write).
  KubeResult<void> release();

  // Leading, and the last renewal is younger than renew_deadline.
  bool is_leader() const;
  // The holder of the lease as last observed ("" when released or never seen).
  std::string holder() const;
  // When leadership ends unless renewed (the watchdog waits for it); nullopt when not leading.
  std::optional<TimePoint> leadership_deadline() const;
  // leadership_deadline() - now (<= 0: overdue); nullopt when not leading.
  std::optional<Duration> time_left() const;
  const LeaderElectionOptions& options() const { return options_; }

 private:
  enum class Attempt { Holding, HeldByOther, Failed };
  Attempt try_acquire_or_renew(TimePoint now);
  // An unexpected error: told to on_error; Attempt::Failed.
  Attempt failed(std::string_view doing, const KubeError& error);
  // The Lease was read (and written, when holding): on_recovered after failed attempts.
  void succeeded();
  void observe(const Json& spec, TimePoint now);
  Json lease_object() const;
  // Callers hold transition_mutex_.
  void stop_leading_locked();

  Kubernetes& kube_;
  const Clock& clock_;
  const LeaderElectionOptions options_;
  const LeaderCallbacks callbacks_;

  // Only tick() and release() touch these (never concurrently).
  Json observed_spec_;
  TimePoint observed_time_{};
  bool failing_ = false;  // an attempt failed unexpectedly since the last one that worked

  // Serialises leadership changes with their callbacks, so that they alternate.
  std::mutex transition_mutex_;
  mutable std::mutex state_mutex_;  // guards the members below, for the readers
  bool leading_ = false;
  TimePoint last_renewal_{};
  std::string holder_;
};

// Runs a LeaderElector until stopped: ticks every retry_period (jittered by up to 20% while
// not leading, like client-go, so standbys do not try in lockstep) and a watchdog thread that
// calls check_deadline() when the renew deadline falls due.
class LeaderElectionRunner {
 public:
  explicit LeaderElectionRunner(LeaderElector& elector);
  ~LeaderElectionRunner();  // stop(false) if not stopped

  // Stops both threads (interrupting the waits; a tick in an API call finishes first), then
  // releases the lease when asked to and this process holds it.
  KubeResult<void> stop(bool release_lease);

 private:
  void tick_loop(std::stop_token stop);
  void watchdog_loop(std::stop_token stop);

  LeaderElector& elector_;
  std::mutex mutex_;
  std::condition_variable_any wake_;  // a tick happened: the watchdog re-reads the deadline
  std::jthread ticker_;
  std::jthread watchdog_;
  bool stopped_ = false;
};

}  // namespace stsresize::runtime
