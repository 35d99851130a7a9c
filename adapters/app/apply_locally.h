#pragma once
// `stsresize advance NS/STS --approve|--abort|--retry|--skip-step --apply-locally`: for a cluster
// whose controller is down. The request is written exactly as without the flag, then this process
// runs the controller's own Reconciler (states/reconciler.h: the same steps, the same journal
// discipline) on that one StatefulSet until the request is consumed and the operation rests:
// it waits for an approval again, or it ended (Completed or Failed).
//
// Two writers never act at once: this process takes the controller's leader Lease (the same
// LeaderElector as `stsresize run --leader-elect`, identity "advance-local:<who>@<host>")
// before it writes anything and releases it at the end. A Lease that a controller renews is a
// refusal (exit 5); a controller started meanwhile stands by until the release.
//
// The records of the steps run here go to --journal (required). A controller that comes back
// with its own journal finds the annotation ahead of its stream and journals `Resumed` with the
// annotation's snapshot (fold() accepts a Resumed that leads the journal by transitions the
// state machine allows): both journals replay without inconsistency, and the history is the
// two together.
#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "adapters/app/advance_command.h"
#include "adapters/kube/config.h"
#include "engine/ports/clock.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"
#include "engine/settings.h"

namespace CLI {
class App;
}
namespace stsresize::runtime {
class LeaderElector;
}

namespace stsresize::cli {

// The flags of --apply-locally, added to `advance` (their values land in AdvanceOptions).
void add_apply_locally_flags(CLI::App& advance, AdvanceOptions& options);

// With the credentials `run_advance` loaded: opens --journal, takes the Lease, writes the
// request (run_advance), runs the engine until the operation rests, releases the Lease.
// SIGINT/SIGTERM stop it between two reconciles.
int run_apply_locally(const AdvanceOptions& options, Kubernetes& kube, const AdvanceCaller& caller,
                      std::ostream& out, std::ostream& err);

// Everything resolved from the flags.
struct ApplyLocallySettings {
  std::string lease_namespace;
  std::string lease_name = "stsresize-leader";
  std::string identity;  // "advance-local:<who>@<host>"
  Duration lease_duration = std::chrono::seconds{15};
  Duration renew_deadline = std::chrono::seconds{10};
  Duration retry_period = std::chrono::seconds{2};
  Duration timeout = std::chrono::minutes{30};
  EngineSettings engine;  // engine.poll_interval: also the longest wait between two reconciles
};

// What the loop needs from the process, so that tests run it on a ManualClock and a
// SimulatedCluster.
struct ApplyLocallyHooks {
  // Waits `delay` (the cluster works meanwhile); false when asked to stop (a signal).
  std::function<bool(Duration)> wait;
  // Keeps the Lease renewed while the engine runs (a LeaderElectionRunner), from after it was
  // taken until the returned object is destroyed; empty: no renewals (tests).
  std::function<std::shared_ptr<void>(runtime::LeaderElector&)> keep_lease;
  // Called (on the renewing thread) when the Lease is lost while held: the CLI ends the process
  // at once, as `run` does, so that no step runs unleased. Empty: the loop stops before its
  // next reconcile (exit 3).
  std::function<void()> on_lease_lost;
  // Lease expiry and --timeout are measured on it (monotonic in the CLI); nullptr: the clock.
  const Clock* lease_clock = nullptr;
};

// The testable whole: lease, request, loop, release. `journal` is already open.
int apply_locally(Kubernetes& kube, Journal& journal, const Clock& clock, EventRecorder& events,
                  const AdvanceOptions& options, const AdvanceCaller& caller,
                  const ApplyLocallySettings& settings, const ApplyLocallyHooks& hooks,
                  std::ostream& out, std::ostream& err);

}  // namespace stsresize::cli
