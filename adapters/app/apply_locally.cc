#include "adapters/app/apply_locally.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "adapters/app/copy_job_flags.h"
#include "adapters/app/durations.h"
#include "adapters/app/exit_codes.h"
#include "adapters/clock/system_clock.h"
#include "adapters/events/kube_event_recorder.h"
#include "adapters/journal/sqlite_journal.h"
#include "adapters/runtime/leader_election.h"
#include "adapters/runtime/monotonic_clock.h"
#include "adapters/runtime/shutdown_signal.h"
#include "engine/actions/explain.h"
#include "engine/actions/rules.h"
#include "engine/annotations.h"
#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "engine/timestamp.h"
#include "states/machine.h"
#include "states/reconciler.h"

namespace stsresize::cli {

namespace {

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

// "NS/NAME" or "NAME" (the kubeconfig context's namespace); run_advance has already accepted it.
ObjectRef statefulset_of(const AdvanceOptions& options, const AdvanceCaller& caller) {
  const auto slash = options.target.find('/');
  if (slash == std::string::npos) {
    return ObjectRef{Kind::StatefulSet, caller.default_namespace, options.target};
  }
  return ObjectRef{Kind::StatefulSet, options.target.substr(0, slash),
                   options.target.substr(slash + 1)};
}

std::string text_field(const Json& object, const char* name) {
  const auto found = object.find(name);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

// The Lease as a person reads it: who holds it, when it was renewed, for how long.
struct LeaseView {
  std::string holder;
  std::string renew_time;
  std::int64_t duration_seconds = 0;
  bool live = false;  // renewTime + leaseDurationSeconds is still ahead of `now`
};

LeaseView view_lease(const Json& lease, TimePoint now) {
  const Json spec = lease.value("spec", Json::object());
  LeaseView view{text_field(spec, "holderIdentity"), text_field(spec, "renewTime"), 0, false};
  const auto duration = spec.find("leaseDurationSeconds");
  if (duration != spec.end() && duration->is_number_integer()) {
    view.duration_seconds = duration->get<std::int64_t>();
  }
  auto renewed = parse_timestamp(view.renew_time);
  // An unreadable renewTime with a holder is taken as live: refusing is the safe mistake.
  view.live = !view.holder.empty() &&
              (!renewed || *renewed + std::chrono::seconds{view.duration_seconds} > now);
  return view;
}

std::string lease_name(const ApplyLocallySettings& settings) {
  return settings.lease_namespace + "/" + settings.lease_name;
}

std::string held_by(const LeaseView& view) {
  return view.holder + " (renewed at " + (view.renew_time.empty() ? "?" : view.renew_time) +
         ", lease duration " + std::to_string(view.duration_seconds) + "s)";
}

std::string refusal_for_holder(const ApplyLocallySettings& settings, const LeaseView& view,
                               const std::string& plain_command) {
  return "a controller holds the Lease " + lease_name(settings) + ": " + held_by(view) +
         ". Two writers must not act at once: run `" + plain_command +
         "` (without --apply-locally) and that controller takes the request; or stop it first "
         "(SIGTERM releases the Lease at once; a killed one's Lease expires " +
         std::to_string(view.duration_seconds) + "s after its last renewal) and run this again";
}

// The command without --apply-locally and its flags, for the refusal.
std::string plain_command(const AdvanceOptions& options, const ObjectRef& sts) {
  return advance_command_line(action_of(options), sts.ns, sts.name);
}

// The lines of `text` that do not start with `skip`.
std::string without_lines_starting(const std::string& text, std::string_view skip) {
  std::istringstream lines(text);
  std::string line, kept;
  while (std::getline(lines, line)) {
    if (!line.starts_with(skip)) kept += line + "\n";
  }
  return kept;
}

// What changed between two readings of the operation, as progress lines.
void report_progress(const std::optional<Operation>& before, const std::optional<Operation>& after,
                     std::ostream& out) {
  if (!after) return;
  if (!before || before->id != after->id) {
    out << "operation " << after->id << " in phase " << to_string(after->phase) << "\n";
    return;
  }
  if (before->phase != after->phase) {
    out << "phase " << to_string(before->phase) << " -> " << to_string(after->phase) << "\n";
  }
  for (const ClaimPlan& claim : after->claims) {
    const ClaimPlan* was = before->find_claim(claim.claim);
    const ClaimPlan empty{};
    if (was == nullptr) was = &empty;
    auto summary = [](const TreeSummary& tree) {
      return std::to_string(tree.files) + " files, " + std::to_string(tree.bytes) + " bytes";
    };
    if (claim.backup_verified && !was->backup_verified) {
      out << "backup of " << claim.claim << " verified: " << summary(*claim.backup_verified)
          << "\n";
    }
    if (claim.source_deleted && !was->source_deleted) {
      out << "source claim " << claim.claim << " deleted\n";
    }
    if (!claim.recreated_uid.empty() && was->recreated_uid.empty()) {
      out << "claim " << claim.claim << " re-created (" << claim.to_size.to_string() << ")\n";
    }
    if (claim.restore_verified && !was->restore_verified) {
      out << "restore of " << claim.claim << " verified: " << summary(*claim.restore_verified)
          << "\n";
    }
    if (claim.expanded && !was->expanded) out << "claim " << claim.claim << " expanded\n";
  }
}

// The engine's answer to our request, when it refused it (journaled OperatorAction with our
// nonce and a reason).
std::optional<std::string> refusal_of(Journal& journal, const AdvanceRequest& request) {
  auto records = journal.read(request.operation);
  if (!records) return std::nullopt;
  for (const JournalRecord& record : *records) {
    auto event = decode_entry(record);
    if (!event) continue;
    const auto* action = std::get_if<entries::OperatorAction>(&*event);
    if (action != nullptr && action->nonce == request.nonce && !action->refused.empty()) {
      return action->refused;
    }
  }
  return std::nullopt;
}

// Holds the Lease for the local apply: taken, renewed by `keep` while held, released at the end
// (also on every early return).
class LocalLease {
 public:
  LocalLease(Kubernetes& kube, const Clock& clock, const ApplyLocallySettings& settings,
             std::function<void()> on_lost)
      : on_lost_(std::move(on_lost)),
        elector_(kube, clock,
                 runtime::LeaderElectionOptions{settings.lease_namespace, settings.lease_name,
                                                settings.identity, settings.lease_duration,
                                                settings.renew_deadline, settings.retry_period},
                 runtime::LeaderCallbacks{.on_started_leading = {},
                                          .on_stopped_leading =
                                              [this] {
                                                if (releasing_) return;
                                                lost_ = true;
                                                if (on_lost_) on_lost_();
                                              },
                                          .on_error = {},
                                          .on_recovered = {}}) {}
  ~LocalLease() { (void)release(); }

  runtime::LeaderElector& elector() { return elector_; }
  void keep(std::shared_ptr<void> renewer) { renewer_ = std::move(renewer); }
  bool lost() const { return lost_; }
  KubeResult<void> release() {
    if (released_) return {};
    released_ = true;
    renewer_.reset();  // the renewals stop before the release is written
    releasing_ = true;
    return elector_.release();
  }

 private:
  std::function<void()> on_lost_;
  runtime::LeaderElector elector_;
  std::shared_ptr<void> renewer_;
  std::atomic<bool> releasing_{false};
  std::atomic<bool> lost_{false};
  bool released_ = false;
};

// A request of the same action for the current operation, written earlier (by a plain `advance`
// while no controller ran) and never taken: --apply-locally takes that one instead of refusing
// it as "already given".
std::optional<AdvanceRequest> pending_request_to_take(Kubernetes& kube, const ObjectRef& sts,
                                                      const AdvanceOptions& options) {
  auto live = kube.get(sts);
  if (!live) return std::nullopt;
  auto text = advance_request_of(*live);
  auto op = read_operation(*live);
  if (!text || !op || !op->has_value()) return std::nullopt;
  auto request = decode_advance_request(*text);
  const Action action = action_of(options);
  if (!request || request->action != action || request->operation != (*op)->id) {
    return std::nullopt;
  }
  if (action == Action::Approve && !check_approve(*request, **op)) return std::nullopt;
  if (action == Action::Skip && !check_skip(*request, **op, PhaseMachine::rules((*op)->kind))) {
    return std::nullopt;
  }
  return *request;
}

enum class Taken { Yes, Refused, Stopped, Failed };

// Takes the Lease, or says why not. A holder that renews it is a refusal at once; a Lease
// whose renewTime + duration has passed by our wall clock is waited out as client-go does
// (expired once unchanged for its duration on this process's own clock), unless it changes.
Taken take_lease(LocalLease& lease, Kubernetes& kube, const Clock& clock, const Clock& lease_clock,
                 const ApplyLocallySettings& settings, const ApplyLocallyHooks& hooks,
                 const std::string& plain, std::ostream& out, std::ostream& err) {
  const ObjectRef ref{Kind::Lease, settings.lease_namespace, settings.lease_name};
  std::optional<std::string> first_renewal;
  TimePoint give_up{};
  for (int attempt = 0;; ++attempt) {
    lease.elector().tick();
    if (lease.elector().is_leader()) return Taken::Yes;
    auto current = kube.get(ref);
    if (!current) {
      if (current.error().code == KubeErrorCode::NotFound && attempt < 3) continue;  // a race
      err << "stsresize advance: --apply-locally: the Lease " << lease_name(settings)
          << " could not be taken: " << to_string(current.error().code) << ": "
          << current.error().message
          << " (rights needed: get, create, update on leases in that namespace)\n";
      return Taken::Failed;
    }
    const LeaseView view = view_lease(*current, clock.now());
    if (view.holder.empty() || view.holder == settings.identity) {
      if (attempt < 3) continue;  // lost a race to write it: try again
      err << "stsresize advance: --apply-locally: the Lease " << lease_name(settings)
          << " could not be written (409 Conflict four times); run this again\n";
      return Taken::Failed;
    }
    if (view.live || (first_renewal && *first_renewal != view.renew_time)) {
      err << "stsresize advance: refused: " << refusal_for_holder(settings, view, plain) << "\n";
      return Taken::Refused;
    }
    if (!first_renewal) {
      first_renewal = view.renew_time;
      const Duration wait_out = std::chrono::seconds{view.duration_seconds};
      give_up = lease_clock.now() + wait_out + 2 * settings.retry_period;
      out << "the Lease " << lease_name(settings) << " names " << held_by(view)
          << ", not renewed since: waiting up to "
          << format_duration(wait_out + settings.retry_period) << " to see that it expired\n";
    } else if (lease_clock.now() > give_up) {
      err << "stsresize advance: refused: the Lease " << lease_name(settings)
          << " could not be taken from " << held_by(view) << "; run this again\n";
      return Taken::Refused;
    }
    if (!hooks.wait(settings.retry_period)) return Taken::Stopped;
  }
}

enum class Rest { AwaitingApproval, Ended, Refused, TimedOut, Stopped, LeaseLost };

// Reconciles the StatefulSet, as the controller would, until the request with `request.nonce`
// is consumed and the operation rests; progress on `out`.
Rest run_until_rest(Kubernetes& kube, Journal& journal, const Clock& clock, EventRecorder& events,
                    const Clock& lease_clock, const LocalLease& lease, const ObjectRef& sts,
                    const AdvanceRequest& request, std::optional<Operation> seen,
                    const ApplyLocallySettings& settings, const ApplyLocallyHooks& hooks,
                    std::ostream& out, std::ostream& err) {
  Reconciler reconciler(kube, journal, clock, events, settings.engine);
  const TimePoint deadline = lease_clock.now() + settings.timeout;
  const std::string where = "kubectl -n " + sts.ns + " get sts " + sts.name + " -L " +
                            std::string{kPhaseAnnotation} + " -L " +
                            std::string{kAwaitingApprovalAnnotation};
  std::string last_message;
  for (;;) {
    if (lease.lost()) {
      err << "stsresize advance: --apply-locally: the Lease " << lease_name(settings)
          << " was lost (not renewed within " << format_duration(settings.renew_deadline)
          << "); stopped. Nothing is lost: the annotations say where the operation is, and the "
             "controller or another --apply-locally continues it ("
          << where << ")\n";
      return Rest::LeaseLost;
    }
    const ReconcileResult result = reconciler.reconcile(sts.ns, sts.name);
    auto live = kube.get(sts);
    if (live) {
      auto read = read_operation(*live);
      if (read) {
        report_progress(seen, *read, out);
        if (*read) seen = **read;
      }
      if (auto refused = refusal_of(journal, request)) {
        err << "stsresize advance: refused by the engine: " << *refused << "\n";
        return Rest::Refused;
      }
      bool pending = false;
      if (auto text = advance_request_of(*live)) {
        auto decoded = decode_advance_request(*text);
        pending = decoded && decoded->nonce == request.nonce;
      }
      if (!pending && read) {
        if (!read->has_value()) {
          auto last = k8s::annotation(*live, kLastOperationAnnotation);
          out << "the operation ended: "
              << (last && last->has_value() ? **last : std::string{"no operation in progress"})
              << "\n";
          return Rest::Ended;
        }
        const Operation& op = **read;
        if (is_terminal(op.phase)) {
          out << "operation " << op.id << " ended in " << to_string(op.phase)
              << (op.failure.empty() ? "" : ": " + op.failure) << "\n";
          return Rest::Ended;
        }
        if (op.awaiting) {
          out << "operation " << op.id << " waits for approval of " << to_string(op.awaiting->from)
              << " -> " << to_string(op.awaiting->to) << ": `"
              << advance_command_line(Action::Approve, sts.ns, sts.name)
              << "` (with --apply-locally while no controller runs)\n";
          return Rest::AwaitingApproval;
        }
      }
    }
    if (result.is(ReconcileResult::Kind::Terminal)) {
      err << "stsresize advance: refused by the engine: " << result.message << "\n";
      return Rest::Refused;
    }
    if (!result.message.empty() && result.message != last_message &&
        !result.is(ReconcileResult::Kind::Idle)) {
      out << (result.is(ReconcileResult::Kind::Retry) ? "retrying: " : "waiting: ")
          << result.message << "\n";
    }
    last_message = result.message;
    Duration delay = settings.engine.poll_interval;
    if (result.is(ReconcileResult::Kind::RequeueAfter)) delay = std::min(result.after, delay);
    const std::string stopped =
        std::string{
            "Nothing is lost: the annotations say where the "
            "operation is"} +
        (seen ? " (" + seen->id + " in " + std::string{to_string(seen->phase)} + ")"
              : std::string{}) +
        ", and the controller or another --apply-locally continues it (" + where + ")";
    if (!hooks.wait(delay)) {
      err << "stsresize advance: --apply-locally: stopped by a signal between two steps. "
          << stopped << "\n";
      return Rest::Stopped;
    }
    if (lease_clock.now() >= deadline) {
      err << "stsresize advance: --apply-locally: --timeout " << format_duration(settings.timeout)
          << " reached before the operation rested. " << stopped << "\n";
      return Rest::TimedOut;
    }
  }
}

int exit_code_of(Rest rest) {
  switch (rest) {
    case Rest::AwaitingApproval:
    case Rest::Ended:
      return kExitOk;
    case Rest::Refused:
      return kExitRefused;
    case Rest::TimedOut:
    case Rest::Stopped:
      return kExitIncomplete;
    case Rest::LeaseLost:
      return kExitLeadershipLost;
  }
  return kExitIncomplete;
}

}  // namespace

void add_apply_locally_flags(CLI::App& advance, AdvanceOptions& options) {
  CLI::Option* apply = advance.add_flag(
      "--apply-locally", options.apply_locally,
      "No controller running: take its Lease and run the steps in this process until the "
      "operation waits again or ends (needs --journal)");
  // Each of these means nothing without --apply-locally: CLI11 refuses it alone (exit 2).
  CLI::Option* options_of_apply[] = {
      advance.add_option("--journal", options.journal,
                         "SQLite journal for the steps run here (required; created if missing; "
                         "keep it, it is their history)"),
      advance
          .add_option("--timeout", options.timeout,
                      "Give up (exit 6, nothing lost) after this long")
          ->capture_default_str(),
      advance
          .add_option("--poll-interval", options.poll_interval,
                      "How soon to look again while waiting for the cluster")
          ->capture_default_str(),
      advance.add_option("--sync-image", options.sync_image,
                         "Image of the copy Jobs (give the controller's --sync-image if it has "
                         "one)"),
      advance.add_option("--leader-elect-namespace", options.leader_elect_namespace,
                         "Namespace of the controller's Lease (default: the kubeconfig "
                         "context's, as for `run`)"),
      advance
          .add_option("--leader-elect-id", options.leader_elect_id,
                      "Name of the controller's Lease")
          ->capture_default_str(),
  };
  for (CLI::Option* option : options_of_apply) option->needs(apply);
  // The controller's, if it sets them: the copy Jobs made here should be the same.
  for (CLI::Option* option : add_copy_job_flags(advance, options.copy_job)) option->needs(apply);
}

int apply_locally(Kubernetes& kube, Journal& journal, const Clock& clock, EventRecorder& events,
                  const AdvanceOptions& options, const AdvanceCaller& caller,
                  const ApplyLocallySettings& settings, const ApplyLocallyHooks& hooks,
                  std::ostream& out, std::ostream& err) {
  const Clock& lease_clock = hooks.lease_clock != nullptr ? *hooks.lease_clock : clock;
  const ObjectRef sts = statefulset_of(options, caller);
  const std::string plain = plain_command(options, sts);
  const bool clear =
      int{options.approve} + int{options.abort} + int{options.retry} + int{options.skip_step} == 1;
  const std::optional<AdvanceRequest> pending =
      clear ? pending_request_to_take(kube, sts, options) : std::nullopt;
  std::string checked;
  if (pending) {
    checked = "the " + std::string{to_string(pending->action)} + " of operation " +
              pending->operation + " written by " + pending->by + " at " + pending->at +
              " is pending and no controller took it: it is the request taken here\n";
  } else {
    // Everything the request needs is checked first, writing nothing: a refusal here leaves
    // the Lease alone.
    AdvanceOptions check = options;
    check.dry_run = true;
    std::ostringstream check_out, check_err;
    if (const int code = run_advance(kube, check, caller, check_out, check_err); code != kExitOk) {
      err << check_err.str();
      return code;
    }
    checked = check_out.str();
  }

  if (options.dry_run) {
    out << without_lines_starting(checked, "the controller would then");
    auto current = kube.get(ObjectRef{Kind::Lease, settings.lease_namespace, settings.lease_name});
    if (!current && current.error().code != KubeErrorCode::NotFound) {
      err << "stsresize advance: reading the Lease " << lease_name(settings) << ": "
          << to_string(current.error().code) << ": " << current.error().message << "\n";
      return kExitClusterUnreachable;
    }
    if (current) {
      const LeaseView view = view_lease(*current, clock.now());
      if (view.live && view.holder != settings.identity) {
        err << "stsresize advance: refused: " << refusal_for_holder(settings, view, plain) << "\n";
        return kExitRefused;
      }
    }
    out << "--apply-locally would then take the Lease " << lease_name(settings) << " as "
        << settings.identity << (pending ? ", take that request" : ", write that annotation")
        << ", run the engine here (journal " << options.journal
        << ") until the operation waits for approval again or ends, at most "
        << format_duration(settings.timeout) << ", and release the Lease\n";
    return kExitOk;
  }

  LocalLease lease(kube, lease_clock, settings, hooks.on_lease_lost);
  switch (take_lease(lease, kube, clock, lease_clock, settings, hooks, plain, out, err)) {
    case Taken::Yes:
      break;
    case Taken::Refused:
      return kExitRefused;
    case Taken::Stopped:
      err << "stsresize advance: --apply-locally: stopped by a signal; nothing was written\n";
      return kExitIncomplete;
    case Taken::Failed:
      return kExitClusterUnreachable;
  }
  out << "took the Lease " << lease_name(settings) << " as " << settings.identity
      << " (a controller started meanwhile stands by until it is released)\n";
  if (hooks.keep_lease) lease.keep(hooks.keep_lease(lease.elector()));

  if (pending) {
    out << checked;
  } else {
    std::ostringstream written, write_err;
    const int code = run_advance(kube, options, caller, written, write_err);
    if (code != kExitOk) {
      err << write_err.str();
      return code;
    }
    // The first line says what was requested; the rest said the controller would take it.
    const std::string said = written.str();
    out << said.substr(0, said.find('\n') + 1);
  }
  const std::string nonce = pending ? pending->nonce : caller.nonce;

  auto live = kube.get(sts);
  std::optional<AdvanceRequest> request;
  std::optional<Operation> seen;
  if (live) {
    if (auto text = advance_request_of(*live)) {
      if (auto decoded = decode_advance_request(*text); decoded && decoded->nonce == nonce) {
        request = *decoded;
      }
    }
    if (auto read = read_operation(*live); read && *read) seen = **read;
  }
  if (!request) {
    err << "stsresize advance: --apply-locally: the request written was not found on " << sts.ns
        << "/" << sts.name << " (" << (live ? "replaced by someone else" : "StatefulSet unreadable")
        << "); nothing was run here: look at it (kubectl -n " << sts.ns << " get sts " << sts.name
        << " -o yaml) and run this again\n";
    return kExitRefused;
  }
  out << "running the engine here until the operation waits or ends (journal " << options.journal
      << ", at most " << format_duration(settings.timeout) << ")\n";
  const Rest rest = run_until_rest(kube, journal, clock, events, lease_clock, lease, sts, *request,
                                   seen, settings, hooks, out, err);
  if (rest == Rest::LeaseLost) return kExitLeadershipLost;
  if (auto released = lease.release(); !released) {
    err << "stsresize advance: --apply-locally: the Lease " << lease_name(settings)
        << " was not released (" << released.error().message << "); it expires in "
        << format_duration(settings.lease_duration) << "\n";
  } else {
    out << "released the Lease " << lease_name(settings) << "\n";
  }
  return exit_code_of(rest);
}

int run_apply_locally(const AdvanceOptions& options, Kubernetes& kube, const AdvanceCaller& caller,
                      std::ostream& out, std::ostream& err) {
  ApplyLocallySettings settings;
  auto usage = [&](const std::string& why) {
    err << "stsresize advance: " << why << "\n";
    return kExitUsage;
  };
  if (options.journal.empty() && !options.dry_run) {
    return usage(
        "--apply-locally needs --journal FILE: the SQLite journal of the steps run here "
        "(the controller's own file if you can reach it, else one of your own; keep it)");
  }
  auto timeout = parse_duration(options.timeout);
  if (!timeout || timeout->count() <= 0) {
    return usage("--timeout: " +
                 (timeout ? std::string{"must be longer than 0"} : timeout.error()));
  }
  auto poll = parse_duration(options.poll_interval);
  if (!poll || poll->count() <= 0) {
    return usage("--poll-interval: " +
                 (poll ? std::string{"must be longer than 0"} : poll.error()));
  }
  if (options.leader_elect_id.empty()) return usage("--leader-elect-id: must not be empty");
  settings.timeout = *timeout;
  settings.engine.poll_interval = *poll;
  if (!options.sync_image.empty()) settings.engine.copy_job.image = options.sync_image;
  auto resources = copy_job_resources(options.copy_job);
  if (!resources) return usage(resources.error());
  settings.engine.copy_job.resources = *resources;
  auto rsync = copy_rsync_flags(options.copy_job);
  if (!rsync) return usage(rsync.error());
  settings.engine.copy_job.rsync_flags = *rsync;
  settings.lease_namespace = options.leader_elect_namespace.empty()
                                 ? caller.default_namespace
                                 : options.leader_elect_namespace;
  settings.lease_name = options.leader_elect_id;
  const std::string who = options.as.empty() ? caller.identity : options.as;
  settings.identity = "advance-local:" + who + "@" + host_name();

  SystemClock clock;
  runtime::MonotonicClock lease_clock;  // Lease expiry and --timeout must not follow the wall clock
  KubeEventRecorder recorder(
      kube, clock, {.component = "stsresize", .host = settings.identity},
      [&err](const ObjectRef& about, std::string_view reason, const KubeError& error) {
        err << "stsresize advance: event " << reason << " on " << to_string(about)
            << " not recorded: " << error.message << "\n";
      });
  runtime::ShutdownSignal shutdown;
  ApplyLocallyHooks hooks;
  hooks.wait = [&shutdown](Duration delay) { return !shutdown.wait_for(delay); };
  hooks.keep_lease = [](runtime::LeaderElector& elector) -> std::shared_ptr<void> {
    return std::make_shared<runtime::LeaderElectionRunner>(elector);
  };

  hooks.on_lease_lost = [] {
    // A step may be in flight: ending the process is the one way to stop it, as `run` does.
    std::fputs(
        "stsresize advance: --apply-locally: the Lease was lost (not renewed in time); exiting "
        "at once so that no step runs unleased. Nothing is lost: the annotations say where the "
        "operation is, and the controller or another --apply-locally continues it\n",
        stderr);
    std::_Exit(kExitLeadershipLost);
  };
  hooks.lease_clock = &lease_clock;

  if (options.dry_run) {
    // A dry run journals nothing; SQLite in memory stands in (the in-memory test double is not
    // part of the product).
    auto unused = SqliteJournal::open(":memory:");
    if (!unused) return usage("in-memory journal: " + unused.error().message);
    return apply_locally(kube, **unused, clock, recorder, options, caller, settings, hooks, out,
                         err);
  }
  std::error_code ec;
  const std::filesystem::path path{options.journal};
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  auto journal = SqliteJournal::open(path);
  if (!journal) return usage("--journal " + options.journal + ": " + journal.error().message);
  return apply_locally(kube, **journal, clock, recorder, options, caller, settings, hooks, out,
                       err);
}

}  // namespace stsresize::cli
