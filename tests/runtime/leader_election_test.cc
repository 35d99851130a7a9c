#include "adapters/runtime/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/clock/manual_clock.h"
#include "adapters/clock/system_clock.h"
#include "adapters/fake/fake_kubernetes.h"

namespace stsresize::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const ObjectRef kLease{Kind::Lease, "stsresize-system", "stsresize-leader"};

LeaderElectionOptions options_for(const std::string& identity) {
  return {.lease_namespace = kLease.ns, .lease_name = kLease.name, .identity = identity};
}

// One candidate with counted callbacks.
struct Candidate {
  Candidate(Kubernetes& kube, const Clock& clock, LeaderElectionOptions options)
      : elector(
            kube, clock, std::move(options),
            {.on_started_leading = [this] { ++started; },
             .on_stopped_leading = [this] { ++stopped; },
             .on_error =
                 [this](std::string_view doing, const KubeError& error) {
                   std::lock_guard lock(mutex);
                   errors.push_back(std::string{doing} + " " + std::string{to_string(error.code)});
                 },
             .on_recovered = [this] { ++recovered; }}) {}
  Candidate(Kubernetes& kube, const Clock& clock, const std::string& identity)
      : Candidate(kube, clock, options_for(identity)) {}

  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<int> recovered{0};
  std::mutex mutex;
  std::vector<std::string> errors;  // "update Forbidden"
  LeaderElector elector;
};

Json lease_spec(FakeKubernetes& kube) {
  return kube.get_raw(kLease).value().at("spec");
}

class LeaderElectorTest : public ::testing::Test {
 protected:
  ManualClock clock;
  FakeKubernetes kube{clock};
};

TEST(MicroTime, FormatsUtcWithSixFractionDigits) {
  const TimePoint time = TimePoint{seconds{1'136'214'245}} + std::chrono::microseconds{7};
  EXPECT_EQ(format_micro_time(time), "2006-01-02T15:04:05.000007Z");
  EXPECT_EQ(format_micro_time(TimePoint{seconds{1'136'214'245}} + milliseconds{123}),
            "2006-01-02T15:04:05.123000Z");
}

TEST_F(LeaderElectorTest, FirstCandidateCreatesTheLeaseAndLeads) {
  Candidate a(kube, clock, "a");
  EXPECT_EQ(a.elector.tick(), seconds{2});
  EXPECT_TRUE(a.elector.is_leader());
  EXPECT_EQ(a.started, 1);
  EXPECT_EQ(a.elector.holder(), "a");
  const Json spec = lease_spec(kube);
  EXPECT_EQ(spec.at("holderIdentity"), "a");
  EXPECT_EQ(spec.at("leaseDurationSeconds"), 15);
  EXPECT_EQ(spec.at("leaseTransitions"), 0);
  EXPECT_EQ(spec.at("acquireTime"), format_micro_time(clock.now()));
  EXPECT_EQ(spec.at("renewTime"), spec.at("acquireTime"));
  EXPECT_TRUE(std::regex_match(spec.at("renewTime").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
}

TEST_F(LeaderElectorTest, RenewalKeepsAcquireTimeAndTransitionsAndMovesRenewTime) {
  Candidate a(kube, clock, "a");
  a.elector.tick();
  const Json first = lease_spec(kube);
  clock.advance(seconds{2});
  a.elector.tick();
  const Json second = lease_spec(kube);
  EXPECT_EQ(second.at("acquireTime"), first.at("acquireTime"));
  EXPECT_EQ(second.at("leaseTransitions"), 0);
  EXPECT_EQ(second.at("renewTime"), format_micro_time(clock.now()));
  EXPECT_NE(second.at("renewTime"), first.at("renewTime"));
  EXPECT_EQ(a.started, 1) << "a renewal is not a new start";
}

TEST_F(LeaderElectorTest, StandbyNeverLeadsWhileTheLeaderRenews) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  a.elector.tick();
  for (int i = 0; i < 60; ++i) {
    b.elector.tick();
    ASSERT_FALSE(b.elector.is_leader()) << "round " << i;
    clock.advance(seconds{2});
    a.elector.tick();
    ASSERT_TRUE(a.elector.is_leader()) << "round " << i;
  }
  EXPECT_EQ(b.started, 0);
  EXPECT_EQ(b.elector.holder(), "a");
}

TEST_F(LeaderElectorTest, StandbyTakesOverALeaseUnchangedForItsDuration) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  a.elector.tick();
  b.elector.tick();  // b first sees the record now
  clock.advance(milliseconds{14'999});
  b.elector.tick();
  EXPECT_FALSE(b.elector.is_leader());
  clock.advance(milliseconds{1});
  b.elector.tick();
  EXPECT_TRUE(b.elector.is_leader());
  EXPECT_EQ(b.started, 1);
  const Json spec = lease_spec(kube);
  EXPECT_EQ(spec.at("holderIdentity"), "b");
  EXPECT_EQ(spec.at("leaseTransitions"), 1);
  EXPECT_EQ(spec.at("acquireTime"), format_micro_time(clock.now()));
}

TEST_F(LeaderElectorTest, ExpiryIsMeasuredFromObservationNotFromTheRemoteRenewTime) {
  // The holder's clock is an hour behind ours: its renewTime looks long expired, yet the
  // record is fresh to us.
  kube.put_raw(Kind::Lease,
               {{"metadata", {{"namespace", kLease.ns}, {"name", kLease.name}}},
                {"spec",
                 {{"holderIdentity", "skewed"},
                  {"leaseDurationSeconds", 15},
                  {"acquireTime", format_micro_time(clock.now() - std::chrono::hours{1})},
                  {"renewTime", format_micro_time(clock.now() - std::chrono::hours{1})},
                  {"leaseTransitions", 3}}}});
  Candidate b(kube, clock, "b");
  b.elector.tick();
  EXPECT_FALSE(b.elector.is_leader());
  EXPECT_EQ(b.elector.holder(), "skewed");
  clock.advance(seconds{14});
  b.elector.tick();
  EXPECT_FALSE(b.elector.is_leader());
  clock.advance(seconds{1});
  b.elector.tick();
  EXPECT_TRUE(b.elector.is_leader());
  EXPECT_EQ(lease_spec(kube).at("leaseTransitions"), 4);
}

TEST_F(LeaderElectorTest, AChangedRecordRestartsTheExpiryWait) {
  Candidate b(kube, clock, "b");
  Candidate a(kube, clock, "a");
  a.elector.tick();
  b.elector.tick();
  clock.advance(seconds{10});
  a.elector.tick();  // renewal: b must wait 15 s from when it sees this one
  clock.advance(seconds{4});
  b.elector.tick();
  clock.advance(seconds{10});
  b.elector.tick();
  EXPECT_FALSE(b.elector.is_leader());
}

TEST_F(LeaderElectorTest, FailingRenewalsStopLeadingWithinTheRenewDeadline) {
  Candidate a(kube, clock, "a");
  a.elector.tick();
  kube.inject({.verb = Verb::Update,
               .kind = Kind::Lease,
               .times = FaultRule::kForever,
               .error = KubeError{KubeErrorCode::Unreachable, "injected"}});
  const TimePoint last_renewal = clock.now();
  for (int i = 0; i < 4; ++i) {  // 2, 4, 6, 8 s: still within the deadline
    clock.advance(seconds{2});
    a.elector.tick();
    ASSERT_TRUE(a.elector.is_leader()) << "at " << (i + 1) * 2 << " s";
  }
  clock.advance(seconds{2});
  a.elector.tick();
  EXPECT_FALSE(a.elector.is_leader());
  EXPECT_EQ(a.stopped, 1);
  EXPECT_LE(clock.now() - last_renewal, seconds{10});
  // The lease outlives our leadership: no standby could have taken over yet.
  EXPECT_LT(clock.now() - last_renewal, seconds{15});
  clock.advance(seconds{2});
  a.elector.tick();
  EXPECT_EQ(a.stopped, 1) << "stopped once only";
}

// A Lease it may not read or write is told (each attempt; the caller says it once), not taken
// for contention; the race the protocol expects (a lost update, a create beaten) is not told.
TEST_F(LeaderElectorTest, LeaseErrorsAreToldAndTheirEndToo) {
  Candidate a(kube, clock, "a");
  kube.inject({.verb = Verb::Get,
               .kind = Kind::Lease,
               .times = 2,
               .error = KubeError{KubeErrorCode::Forbidden, "leases is forbidden"}});
  a.elector.tick();
  clock.advance(seconds{2});
  a.elector.tick();
  EXPECT_FALSE(a.elector.is_leader());
  EXPECT_EQ(a.errors, (std::vector<std::string>{"get Forbidden", "get Forbidden"}));
  EXPECT_EQ(a.recovered, 0);
  clock.advance(seconds{2});
  a.elector.tick();  // granted: creates the Lease and leads
  EXPECT_TRUE(a.elector.is_leader());
  EXPECT_EQ(a.recovered, 1);
  kube.inject({.verb = Verb::Update,
               .kind = Kind::Lease,
               .error = KubeError{KubeErrorCode::Conflict, "the object has been modified"}});
  clock.advance(seconds{2});
  a.elector.tick();
  EXPECT_EQ(a.errors.size(), 2u) << "a lost race is not an error";
}

TEST_F(LeaderElectorTest, DeadlineCheckStopsLeadingWithoutATick) {
  Candidate a(kube, clock, "a");
  a.elector.tick();
  clock.advance(milliseconds{9'999});
  a.elector.check_deadline();
  EXPECT_EQ(a.stopped, 0);
  EXPECT_EQ(a.elector.time_left(), milliseconds{1});
  clock.advance(milliseconds{1});
  EXPECT_FALSE(a.elector.is_leader()) << "is_leader() must not wait for the watchdog";
  a.elector.check_deadline();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(a.elector.time_left(), std::nullopt);
}

TEST_F(LeaderElectorTest, LeaderStopsAtOnceWhenItSeesAnotherHolder) {
  Candidate a(kube, clock, "a");
  a.elector.tick();
  kube.mutate_raw(kLease, [](Json& lease) { lease["spec"]["holderIdentity"] = "c"; });
  clock.advance(seconds{2});
  a.elector.tick();
  EXPECT_FALSE(a.elector.is_leader());
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(a.elector.holder(), "c");
}

TEST_F(LeaderElectorTest, ReleaseLetsTheStandbyAcquireImmediately) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  a.elector.tick();
  b.elector.tick();
  clock.advance(seconds{1});
  ASSERT_TRUE(a.elector.release().has_value());
  EXPECT_FALSE(a.elector.is_leader());
  EXPECT_EQ(a.stopped, 1);
  const Json released = lease_spec(kube);
  EXPECT_EQ(released.at("holderIdentity"), "");
  EXPECT_EQ(released.at("leaseDurationSeconds"), 1);
  EXPECT_EQ(released.at("leaseTransitions"), 0);
  b.elector.tick();  // no waiting at all
  EXPECT_TRUE(b.elector.is_leader());
  EXPECT_EQ(lease_spec(kube).at("leaseTransitions"), 1);
}

TEST_F(LeaderElectorTest, ReleaseByANonHolderWritesNothing) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  a.elector.tick();
  b.elector.tick();
  const int writes = kube.mutations();
  EXPECT_TRUE(b.elector.release().has_value());
  EXPECT_EQ(kube.mutations(), writes);
  EXPECT_EQ(lease_spec(kube).at("holderIdentity"), "a");
  EXPECT_EQ(b.stopped, 0);
}

TEST_F(LeaderElectorTest, LosingAWriteRaceMeansSomeoneElseWon) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  a.elector.tick();
  b.elector.tick();
  clock.advance(seconds{15});
  // Between b's read and b's write, c takes the expired lease.
  kube.inject({.verb = Verb::Update, .kind = Kind::Lease, .action = [this] {
                 kube.mutate_raw(kLease,
                                 [](Json& lease) { lease["spec"]["holderIdentity"] = "c"; });
               }});
  b.elector.tick();
  EXPECT_FALSE(b.elector.is_leader());
  EXPECT_EQ(lease_spec(kube).at("holderIdentity"), "c");
  b.elector.tick();  // sees c's record as new: waits a full lease duration again
  EXPECT_FALSE(b.elector.is_leader());
  EXPECT_EQ(b.elector.holder(), "c");
  EXPECT_EQ(b.started, 0);
}

TEST_F(LeaderElectorTest, TwoCandidatesCreatingAtOnceYieldOneLeader) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  // a's create happens between b's read (NotFound) and b's create.
  kube.inject({.verb = Verb::Create, .kind = Kind::Lease, .action = [&] { a.elector.tick(); }});
  b.elector.tick();
  EXPECT_TRUE(a.elector.is_leader());
  EXPECT_FALSE(b.elector.is_leader());
  EXPECT_EQ(lease_spec(kube).at("holderIdentity"), "a");
}

TEST_F(LeaderElectorTest, NeverTwoLeadersUnderRandomTimingAndFaults) {
  Candidate a(kube, clock, "a");
  Candidate b(kube, clock, "b");
  std::mt19937 random(42);
  int leader_changes = 0;
  std::string last_leader;
  for (int step = 0; step < 3000; ++step) {
    clock.advance(milliseconds{std::uniform_int_distribution<int>(0, 4000)(random)});
    if (random() % 10 == 0) {
      kube.inject({.kind = Kind::Lease,
                   .times = static_cast<int>(random() % 8),
                   .error = KubeError{KubeErrorCode::ServerError, "injected"}});
    }
    Candidate& next = random() % 2 == 0 ? a : b;
    if (random() % 3 != 0) next.elector.tick();  // sometimes a candidate stalls
    ASSERT_FALSE(a.elector.is_leader() && b.elector.is_leader()) << "step " << step;
    const std::string leader = a.elector.is_leader() ? "a" : b.elector.is_leader() ? "b" : "";
    if (!leader.empty() && leader != last_leader) {
      ++leader_changes;
      last_leader = leader;
    }
  }
  EXPECT_GT(leader_changes, 2) << "the scenario should exercise takeovers";
}

// ---- The runner, on real time (short durations) ----

LeaderElectionOptions fast_options(const std::string& identity) {
  LeaderElectionOptions options = options_for(identity);
  options.lease_duration = seconds{1};
  options.renew_deadline = milliseconds{400};
  options.retry_period = milliseconds{50};
  return options;
}

bool eventually(const std::function<bool()>& condition, Duration limit = seconds{5}) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds{5});
  }
  return condition();
}

TEST(LeaderElectionRunner, StoppingWithReleaseHandsOverToTheStandbyAtOnce) {
  SystemClock clock;
  FakeKubernetes kube(clock);
  Candidate a(kube, clock, fast_options("a"));
  Candidate b(kube, clock, fast_options("b"));
  LeaderElectionRunner run_a(a.elector);
  ASSERT_TRUE(eventually([&] { return a.elector.is_leader(); }));
  LeaderElectionRunner run_b(b.elector);
  std::this_thread::sleep_for(milliseconds{200});
  EXPECT_FALSE(b.elector.is_leader());
  const auto released_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_a.stop(true).has_value());
  EXPECT_EQ(a.stopped, 1);
  ASSERT_TRUE(eventually([&] { return b.elector.is_leader(); }));
  // Within a few retry periods; without the release it would wait out the 1 s lease duration
  // (the bound leaves room for a loaded machine).
  EXPECT_LT(std::chrono::steady_clock::now() - released_at, seconds{1});
  (void)run_b.stop(true);
}

TEST(LeaderElectionRunner, WatchdogStopsLeadingWhileARenewalHangs) {
  SystemClock clock;
  FakeKubernetes kube(clock);
  Candidate a(kube, clock, fast_options("a"));
  LeaderElectionRunner run(a.elector);
  ASSERT_TRUE(eventually([&] { return a.elector.is_leader(); }));
  std::atomic<bool> release_hang{false};
  // Declared after the runner: ends the hang before the runner joins its threads, also when an
  // assertion below returns early.
  struct EndHang {
    std::atomic<bool>& flag;
    ~EndHang() { flag = true; }
  } end_hang{release_hang};
  // Every further API call hangs (until the test ends it), like a dead connection.
  kube.inject({.kind = Kind::Lease,
               .times = FaultRule::kForever,
               .error = KubeError{KubeErrorCode::Unreachable, "hung"},
               .action = [&] {
                 while (!release_hang) std::this_thread::sleep_for(milliseconds{5});
               }});
  const auto hung_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return a.stopped.load() == 1; }, seconds{3}));
  // The renew deadline is 400 ms: leadership must end before the 1 s lease could expire for a
  // standby (the bound leaves room for a loaded machine).
  EXPECT_LT(std::chrono::steady_clock::now() - hung_at, seconds{1});
  release_hang = true;
  (void)run.stop(false);
}

}  // namespace
}  // namespace stsresize::runtime
