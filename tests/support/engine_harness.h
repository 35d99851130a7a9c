#pragma once
// Driving the Reconciler the way the engine tests do: reconcile shop/web, let the simulated
// cluster work, again, until a goal, within an explicit number of reconciles; and running
// `stsresize advance` as a person would, capturing what it prints.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "adapters/app/advance_command.h"
#include "states/reconciler.h"
#include "tests/support/resize_world.h"

namespace stsresize::testing {

// How the cluster moves between two reconciles: `ticks` ticks of the simulated cluster, each
// followed by `tick_length` of time. {2, 1s} is ResizeWorld::settle(2).
struct Pace {
  int ticks = 2;
  std::chrono::seconds tick_length{1};
};

// What a loop of reconcile_until waits for.
struct Until {
  std::string goal;  // named in the failure message: "idle", "phase Restoring"
  // Asked after every reconcile with its result; true ends the loop.
  std::function<bool(const ReconcileResult&)> reached;
};

// The two-copy path (EngineSettings::rebind false), for tests of its backup and restore claims:
// the rebind path (the default) has no restore Job and keeps no backup claim.
inline EngineSettings two_copies(EngineSettings settings = {}) {
  settings.rebind = false;
  return settings;
}

inline Until idle() {
  return {"idle", [](const ReconcileResult& r) { return r.is(ReconcileResult::Kind::Idle); }};
}
// Idle, or refused for good (Terminal): the engine does nothing more by itself.
inline Until at_rest() {
  return {"rest (idle or terminal)", [](const ReconcileResult& r) {
            return r.is(ReconcileResult::Kind::Idle) || r.is(ReconcileResult::Kind::Terminal);
          }};
}

struct Rounds {
  // Reconciles at most; not reaching the goal within them fails the test. A test that asserts
  // progress within N reconciles says N here.
  int limit;
  Pace pace{};
  // A Terminal result fails the test at once, before the goal is asked.
  bool terminal_fails = true;
};

// Reconciles shop/web with `reconciler` until `until` is reached, the cluster moving at
// `rounds.pace` between two reconciles. Returns the last result; a Terminal one (when it fails) or
// reaching the limit adds a test failure saying what was not reached, the last result and the
// operation's annotations.
inline ReconcileResult reconcile_until(Reconciler& reconciler, ResizeWorld& world,
                                       const Until& until, Rounds rounds) {
  ReconcileResult result;
  for (int round = 0; round < rounds.limit; ++round) {
    result = reconciler.reconcile(kNs, kSts);
    if (rounds.terminal_fails && result.is(ReconcileResult::Kind::Terminal)) {
      ADD_FAILURE() << "terminal while waiting for " << until.goal << ": " << result.message;
      return result;
    }
    if (until.reached(result)) return result;
    for (int tick = 0; tick < rounds.pace.ticks; ++tick) {
      world.cluster.tick();
      world.clock.advance(rounds.pace.tick_length);
    }
  }
  auto sts = world.kube.get_raw(world.sts());
  ADD_FAILURE() << until.goal << " not reached after " << rounds.limit
                << " reconciles; last result " << to_string(result.kind) << " " << result.message
                << "; StatefulSet annotations: "
                << (sts ? (*sts)["metadata"].value("annotations", Json::object()).dump()
                        : std::string{"(no StatefulSet)"});
  return result;
}

// Reconciles (the cluster settling 2 ticks in between) until idle; Terminal fails the test.
inline void reconcile_to_idle(Reconciler& reconciler, ResizeWorld& world, int limit) {
  reconcile_until(reconciler, world, idle(), {.limit = limit});
}

// What a command printed, and its exit code.
struct CliResult {
  int code = 0;
  std::string out;
  std::string err;
};

// Runs `command(out, err)`, which returns an exit code, and keeps what it wrote.
template <class Command>
CliResult capture(Command&& command) {
  std::ostringstream out, err;
  const int code = std::forward<Command>(command)(out, err);
  return {code, out.str(), err.str()};
}

// `stsresize advance` as `caller` against `kube`.
inline CliResult run_advance_command(Kubernetes& kube, const cli::AdvanceOptions& options,
                                     const cli::AdvanceCaller& caller) {
  return capture([&](std::ostream& out, std::ostream& err) {
    return cli::run_advance(kube, options, caller, out, err);
  });
}

// alice running `stsresize advance` in the world: namespace default, the world's time now, a new
// nonce every time ("nonce-1", "nonce-2", ...), as a person's successive commands have.
class AdvanceCli {
 public:
  explicit AdvanceCli(ResizeWorld& world) : world_(world) {}
  CliResult operator()(const cli::AdvanceOptions& options) {
    const cli::AdvanceCaller caller{"alice", "default", world_.clock.now(),
                                    "nonce-" + std::to_string(++nonce_)};
    return run_advance_command(world_.kube, options, caller);
  }

 private:
  ResizeWorld& world_;
  int nonce_ = 0;
};

}  // namespace stsresize::testing
