#include "adapters/app/advance_command.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "adapters/app/exit_codes.h"
#include "adapters/app/namespaces.h"
#include "adapters/clock/system_clock.h"
#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"
#include "adapters/kube/whoami.h"
#include "engine/actions/cluster_view.h"
#include "engine/actions/explain.h"
#include "engine/actions/rules.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/timestamp.h"
#include "states/machine.h"

namespace stsresize::cli {

namespace {

constexpr std::string_view kSummary =
    "Approve the next transition of a resize held by stsresize.dev/mode; abort or retry a "
    "resize, or skip its cleanup";

constexpr std::string_view kFooter =
    "A StatefulSet annotated stsresize.dev/mode=manual has every transition of its resize\n"
    "wait for a person; with stsresize.dev/mode=step only the transition into Recreating\n"
    "(which deletes the source claims, once their backups are verified) waits. A waiting\n"
    "operation shows the transition in the annotation stsresize.dev/awaiting-approval and in\n"
    "an Event AwaitingApproval. Transitions caused by an error (to ScalingBack or Failed)\n"
    "never wait: they protect the data.\n"
    "\n"
    "`advance --approve` writes the annotation stsresize.dev/advance (action, phase, operation\n"
    "id, who, when, a nonce) with the resourceVersion it read; the controller consumes it on\n"
    "its next watch event, journals it as an OperatorAction with your identity, removes it and\n"
    "continues. An approval naming another phase or operation than the one waiting is refused\n"
    "by the controller (Warning AdvanceRefused). Identity: --as NAME when given, else the user\n"
    "the API server authenticates (a SelfSubjectReview: \"admin\" for a certificate with\n"
    "CN=admin, system:serviceaccount:NS:NAME for a service account's token), else the\n"
    "kubeconfig context's user entry (a server before Kubernetes 1.28 has no such review).\n"
    "The name is what the request says, nothing more: anyone who may update the StatefulSet\n"
    "can write any --as. With deploy/components/admission-fence installed the API server\n"
    "refuses a request whose name is not the requesting user's, so --as must then be your own\n"
    "name (or be left out).\n"
    "\n"
    "`advance --abort` rolls a resize back while every source claim is intact (Measuring,\n"
    "Planning, PreCopying, ScalingDown, BackingUp, or Recreating before its first delete; on\n"
    "the rebind path also after it and in Restoring, each claim put back on its own kept\n"
    "volume), waiting for approval or not: the controller takes it before the current step,\n"
    "journals it, moves to ScalingBack (original replica count once one was planned, this\n"
    "operation's Jobs and backup claims deleted) and ends in Failed (\"aborted by NAME in\n"
    "PHASE\", label stsresize.dev/failed, Event ResizeAborted).\n"
    "Refused once a source claim is deleted (the data is then in the backup claims and the\n"
    "resize itself restores it: let it finish), in Expanding (claims never shrink),\n"
    "UpdatingTemplate (let it finish first), ScalingBack and after the end.\n"
    "\n"
    "`advance --retry` re-runs a Failed resize once the cause is fixed. If it failed before\n"
    "any source claim was deleted (or was aborted), it starts again as a NEW operation.\n"
    "Checked here and again by the controller: every planned source claim is still there\n"
    "with its uid, Bound and not being deleted, no Job or claim of the failed operation is\n"
    "left, and the StatefulSet still asks for a resize (its templates or\n"
    "stsresize.dev/resize). The controller journals the OperatorAction on the failed\n"
    "operation, removes the label stsresize.dev/failed and starts a new operation whose\n"
    "trigger says \"retry of <id> by NAME\".\n"
    "If it failed after source claims were replaced, in Restoring, ScalingUp or CleaningUp,\n"
    "the SAME operation is resumed in the phase it failed in. Checked here and again by the\n"
    "controller: every recreated claim is there with its recorded uid, every backup claim\n"
    "still needed (Restoring) is there, Bound and not being deleted, and no Job of the\n"
    "operation is still running. The controller deletes the operation's failed Jobs,\n"
    "journals the OperatorAction with the transition Failed -> PHASE, clears the failure and\n"
    "the label stsresize.dev/failed (Event ResizeResumed) and runs that step again; backup\n"
    "claims are deleted only once the data is verified restored. A failure in any other\n"
    "phase after a source claim was replaced is refused: the message names the backup claims\n"
    "that hold the data.\n"
    "\n"
    "`advance --skip-step` leaves the current step undone and moves on, only where that loses\n"
    "nothing: CleaningUp (every restore verified, every pod Ready on the new claims; it deletes\n"
    "the operation's copy Jobs and backup claims, and can hang on a claim that will not go).\n"
    "The controller checks again, journals it, ends the operation Completed and names in an\n"
    "Event StepSkipped the claims and Jobs it keeps (label stsresize.dev/operation=<id>):\n"
    "delete them yourself once no longer needed, and before the next resize. Every other step\n"
    "is refused with why and what to run instead: skipping ScalingDown, BackingUp or\n"
    "Recreating would lose data (--abort stops those), PreCopying would leave its Jobs writing\n"
    "into the backup claims during the copy, Restoring would leave empty claims,\n"
    "ScalingUp is the proof that the pods work on the new claims, Expanding would leave claims\n"
    "smaller than asked for, and UpdatingTemplate, Planning and ScalingBack hold the\n"
    "StatefulSet's definition, plan or replicas.\n"
    "\n"
    "`--apply-locally` is for a cluster whose controller is down: the request is written as\n"
    "above, then this process runs the controller's own engine on this StatefulSet until the\n"
    "request is taken and the operation rests (waits for an approval again, or ended), printing\n"
    "each phase change and verified copy; at most --timeout, and SIGINT/SIGTERM stop it between\n"
    "two steps. Before writing anything it takes the controller's leader Lease\n"
    "(--leader-elect-namespace, default the kubeconfig context's namespace as for `run`;\n"
    "--leader-elect-id) as advance-local:WHO@HOST, so that a controller started meanwhile stands\n"
    "by, and releases it at the end; a Lease that a controller renews is a refusal. A controller\n"
    "run without --leader-elect holds no Lease and cannot be seen: stop it first. The steps run\n"
    "here are journaled in --journal FILE (required; the controller's file if you can reach it\n"
    "and it is stopped, else a file of your own: keep it, it is their history). A controller\n"
    "that comes back with its own journal journals Resumed from the annotations and goes on.\n"
    "\n"
    "Examples:\n"
    "  kubectl annotate sts web stsresize.dev/mode=manual\n"
    "  stsresize advance shop/web --approve --dry-run\n"
    "  stsresize advance shop/web --approve --as alice\n"
    "  stsresize advance shop/web --abort\n"
    "  stsresize advance shop/web --retry --dry-run\n"
    "  stsresize advance shop/web --skip-step --dry-run\n"
    "  stsresize advance shop/web --approve --apply-locally --journal ./advance.db \\\n"
    "      --leader-elect-namespace stsresize-system\n"
    "\n"
    "Exit codes:\n"
    "  0  approval, abort, retry or skip written (--dry-run: would be written); with\n"
    "     --apply-locally: taken, and the operation waits for an approval again or ended\n"
    "  2  bad flags or arguments, unusable credentials, an unusable --journal\n"
    "  3  --apply-locally: the Lease was lost while the engine ran here (nothing is lost)\n"
    "  4  the API server could not be reached, or refused or failed the request\n"
    "  5  refused: nothing waits, the operation cannot be aborted, retried or skipped now\n"
    "     (the step is not one that is safe to skip), another request is pending, or the\n"
    "     state is unreadable; with --apply-locally, a controller holds the Lease or the\n"
    "     engine refused the request; the message says why and what to run instead\n"
    "  6  --apply-locally stopped before the operation rested (--timeout, SIGINT, SIGTERM):\n"
    "     nothing is lost, the annotations say where it is and the controller or another\n"
    "     --apply-locally continues it";

struct Target {
  std::string ns;
  std::string name;
};

std::expected<Target, std::string> parse_target(const std::string& text,
                                                const std::string& default_namespace) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    if (text.empty()) return std::unexpected("the StatefulSet is missing");
    if (auto valid = check_statefulset_name(text); !valid) return std::unexpected(valid.error());
    return Target{default_namespace, text};
  }
  Target target{text.substr(0, slash), text.substr(slash + 1)};
  if (target.ns.empty() || target.name.empty() || target.name.find('/') != std::string::npos) {
    return std::unexpected("\"" + text + "\" is not NAMESPACE/NAME");
  }
  if (auto valid = check_namespace(target.ns); !valid) return std::unexpected(valid.error());
  if (auto valid = check_statefulset_name(target.name); !valid) {
    return std::unexpected(valid.error());
  }
  return target;
}

std::string transition_of(const AwaitedApproval& awaited) {
  return std::string{to_string(awaited.from)} + " -> " + std::string{to_string(awaited.to)};
}

std::string random_nonce() {
  std::random_device random;
  std::uniform_int_distribution<int> digit(0, 15);
  std::string nonce;
  for (int i = 0; i < 16; ++i) nonce += "0123456789abcdef"[digit(random)];
  return nonce;
}

std::expected<KubeConfig, std::string> load_credentials(const AdvanceOptions& options) {
  const char* kubeconfig_env = std::getenv("KUBECONFIG");
  const bool in_cluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (options.kubeconfig.empty() && (kubeconfig_env == nullptr || *kubeconfig_env == '\0') &&
      in_cluster) {
    if (!options.context.empty()) {
      return std::unexpected("--context needs a kubeconfig (--kubeconfig or $KUBECONFIG)");
    }
    return load_in_cluster(InClusterEnvironment::from_process());
  }
  auto path = kubeconfig_path(options.kubeconfig, kubeconfig_env, std::getenv("HOME"));
  if (!path) return std::unexpected(path.error());
  return load_kubeconfig(*path, options.context);
}

// Exactly one of --approve, --abort, --retry and --skip-step.
bool action_is_clear(const AdvanceOptions& options, std::ostream& err) {
  const int actions =
      int{options.approve} + int{options.abort} + int{options.retry} + int{options.skip_step};
  if (actions > 1) {
    err << "stsresize advance: --approve, --abort, --retry and --skip-step exclude each other: "
           "say one\n";
    return false;
  }
  if (actions == 0) {
    err << "stsresize advance: say what to do: --approve continues the transition that waits "
           "for approval, --abort rolls the resize back, --retry starts a failed one again, "
           "--skip-step leaves a step that is safe to skip (see `stsresize advance --help`)\n";
    return false;
  }
  return true;
}

int refuse_target(const std::string& why, std::ostream& err) {
  err << "stsresize advance: " << why << " (example: stsresize advance shop/web --approve)\n";
  return kExitUsage;
}

// The namespaces given (NS of NS/NAME, --leader-elect-namespace) are checked before connecting:
// both become part of request paths. NAME alone takes the context's namespace later.
bool namespaces_are_valid(const AdvanceOptions& options, std::ostream& err) {
  if (auto target = parse_target(options.target, ""); !target) {
    refuse_target(target.error(), err);
    return false;
  }
  if (!options.leader_elect_namespace.empty()) {
    if (auto valid = check_namespace(options.leader_elect_namespace); !valid) {
      err << "stsresize advance: --leader-elect-namespace: " << valid.error() << "\n";
      return false;
    }
  }
  return true;
}

// Who runs the command, as the journal records it: the user the API server authenticates
// (the name its audit log and RBAC use), else the kubeconfig entry's name. Any failure of the
// review falls back quietly: an older server has no such API, and an unreachable one fails
// the next request with its own message.
std::string caller_identity(HttpKubernetes& kube, const std::string& kubeconfig_user) {
  auto authenticated = authenticated_username(kube);
  return authenticated ? *authenticated : kubeconfig_user;
}

enum class Written { Done, Conflict, Failed };

// Writes `text` as the stsresize.dev/advance annotation of `statefulset`, with the
// resourceVersion it was read at. Conflict: someone wrote the StatefulSet since (often its
// controller, updating status): the caller reads it again and decides again on what it says
// now. Failed: said on `err`.
Written write_request(Kubernetes& kube, const Json& statefulset, const std::string& text,
                      const std::string& sts, std::ostream& err) {
  Json updated = statefulset;
  if (auto set = k8s::set_annotation(updated, kAdvanceAnnotation, text); !set) {
    err << "stsresize advance: " << set.error() << "\n";
    return Written::Failed;
  }
  auto written = kube.update(Kind::StatefulSet, updated);
  if (!written && written.error().code == KubeErrorCode::Conflict) return Written::Conflict;
  if (!written) {
    err << "stsresize advance: writing " << kAdvanceAnnotation << " on " << sts << ": "
        << to_string(written.error().code) << ": " << written.error().message << "\n";
    return Written::Failed;
  }
  return Written::Done;
}

// The start of the refusal (or the answer) that follows a 409 on writing `what`.
std::string changed_while_writing(std::string_view what) {
  return "the StatefulSet changed while the " + std::string{what} +
         " was being written (409 Conflict), and now: ";
}

}  // namespace

CLI::App* add_advance_command(CLI::App& app, AdvanceOptions& options) {
  CLI::App* advance = app.add_subcommand("advance", std::string{kSummary});
  advance->footer(std::string{kFooter});
  advance
      ->add_option("statefulset", options.target,
                   "NAMESPACE/NAME of the StatefulSet (NAME alone: the context's namespace)")
      ->required()
      ->type_name("NS/STS");
  advance->add_flag("--approve", options.approve,
                    "Let the transition that waits for approval happen");
  advance->add_flag("--abort", options.abort,
                    "Roll the resize back onto its source claims and end it in Failed (only "
                    "before a source claim is deleted)");
  advance->add_flag("--retry", options.retry,
                    "Re-run a failed resize: as a new operation when it failed before a source "
                    "claim was deleted, else resumed in the phase it failed in");
  advance->add_flag("--skip-step", options.skip_step,
                    "End the resize without the rest of its current step, keeping what that "
                    "step would delete (only CleaningUp: its backup claims and copy Jobs)");
  advance->add_flag("--dry-run", options.dry_run,
                    "Check and show what would be written, write nothing");
  advance->add_option("--as", options.as,
                      "Operator name recorded in the journal (default: the user the API server "
                      "authenticates, else the kubeconfig user); with the admission fence "
                      "installed, only your own name is accepted");
  advance->add_option("--kubeconfig", options.kubeconfig,
                      "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  advance->add_option("--context", options.context,
                      "Kubeconfig context (default: current-context)");
  return advance;
}

std::expected<AdvanceConnection, int> connect_advance(const AdvanceOptions& options,
                                                      std::ostream& err) {
  if (!action_is_clear(options, err)) return std::unexpected(kExitUsage);
  if (!namespaces_are_valid(options, err)) return std::unexpected(kExitUsage);
  auto config = load_credentials(options);
  if (!config) {
    err << "stsresize advance: credentials: " << config.error() << "\n";
    return std::unexpected(kExitUsage);
  }
  auto kube = HttpKubernetes::create(*config, {});
  if (!kube) {
    err << "stsresize advance: credentials: " << kube.error() << "\n";
    return std::unexpected(kExitUsage);
  }
  SystemClock clock;
  const std::string identity = options.as.empty() ? caller_identity(**kube, config->user) : "";
  AdvanceCaller caller{identity, config->ns, clock.now(), random_nonce()};
  return AdvanceConnection{std::move(*kube), std::move(caller)};
}

Action action_of(const AdvanceOptions& options) {
  return options.abort       ? Action::Abort
         : options.retry     ? Action::Retry
         : options.skip_step ? Action::Skip
                             : Action::Approve;
}

namespace {

// One attempt of run_advance: the StatefulSet as read, its operation, and how to answer.
struct Attempt {
  Kubernetes& kube;
  const AdvanceOptions& options;
  const AdvanceCaller& caller;
  const Target& target;
  const std::string& who;
  const Json& object;
  const Operation& op;
  const std::string& changed;  // after a 409: the start of the next refusal
  std::ostream& out;
  std::ostream& err;

  std::string sts() const { return target.ns + "/" + target.name; }
  int refuse(const std::string& why) const {
    err << "stsresize advance: refused: " << changed << why << "\n";
    return kExitRefused;
  }
  std::string watch() const {
    return "kubectl -n " + target.ns + " get sts " + target.name + " -L " +
           std::string{kPhaseAnnotation} + " -w";
  }
  AdvanceRequest request(Action action) const {
    return {action, op.phase, op.id, who, format_timestamp(caller.now), caller.nonce};
  }
  int refuse(const Refusal& refusal) const { return refuse(explain(refusal, op)); }
};

// Returned by a branch whose write met a 409: read again and decide again.
constexpr int kReadAgain = -1;

// The stsresize.dev/advance request already on the StatefulSet, checked before `action` is
// written over it, for every action alike. Refused (the error: why) when the controller will
// still take the pending one: the same action for this operation not taken yet (an approval:
// of the transition that waits now), or, while the operation runs, an abort or a skip of it,
// which the controller takes before its next step, ahead of anything else. Otherwise the
// pending request is replaced, and the value says so for the output (empty: none pending).
std::expected<std::string, std::string> pending_request(const Attempt& at, Action action) {
  auto text = advance_request_of(at.object);
  if (!text) return std::string{};
  auto pending = decode_advance_request(*text);
  if (!pending) {
    // The decoder's message names the annotation already.
    return " (replaces the pending request, which is unreadable: " + pending.error() + ")";
  }
  const bool ours = pending->operation == at.op.id;
  auto what = [&] {
    if (pending->action == Action::Approve && at.op.awaiting) {
      return "approval of " + transition_of(*at.op.awaiting);
    }
    if (pending->action == Action::Skip) {
      return "skip of " + std::string{to_string(pending->phase)};
    }
    return std::string{to_string(pending->action)};
  };
  const bool same = ours && pending->action == action &&
                    (action != Action::Approve || check_approve(*pending, at.op));
  if (same) {
    const bool approval = action == Action::Approve;
    return std::unexpected(
        "the " + what() + (approval ? " for" : " of") + " operation " + at.op.id +
        (approval ? " was already given by " : " was already requested by ") + pending->by +
        " at " + pending->at +
        " and the controller has not taken it yet: is `stsresize run` "
        "running? (kubectl -n " +
        at.target.ns + " get events --field-selector involvedObject.name=" + at.target.name + ")");
  }
  if (ours && !is_terminal(at.op.phase) && pending->action != action &&
      (pending->action == Action::Abort || pending->action == Action::Skip)) {
    return std::unexpected("the " + what() + " of operation " + at.op.id + " requested by " +
                           pending->by + " at " + pending->at +
                           " is pending; the controller takes it before its next step, ahead of "
                           "any other request: run this again once it is taken (" +
                           at.watch() + ")");
  }
  std::string why_stale;
  if (pending->action == Action::Approve) {
    if (auto approved = check_approve(*pending, at.op); !approved) {
      why_stale = ", which the controller would refuse: " + explain(approved.error(), at.op);
    }
  }
  return " (replaces the pending " + std::string{kAdvanceAnnotation} + " " +
         std::string{to_string(pending->action)} + " by " + pending->by + why_stale + ")";
}

// Writes the request; kReadAgain after a 409, kExitClusterUnreachable when it failed.
int write(const Attempt& at, const std::string& text) {
  const Written written = write_request(at.kube, at.object, text, at.sts(), at.err);
  if (written == Written::Done) return kExitOk;
  return written == Written::Failed ? kExitClusterUnreachable : kReadAgain;
}

// --retry of an operation that failed after its source claims were replaced: resumed in the
// phase it failed in (check_resume decides, here and in the controller).
int resume_branch(const Attempt& at) {
  const Operation& op = at.op;
  auto claims = at.kube.list(Kind::PersistentVolumeClaim, at.target.ns);
  auto jobs = claims ? at.kube.list(Kind::Job, at.target.ns) : std::unexpected(claims.error());
  if (!claims || !jobs) {
    const KubeError& e = !claims ? claims.error() : jobs.error();
    at.err << "stsresize advance: reading the claims and Jobs of " << at.target.ns << ": "
           << to_string(e.code) << ": " << e.message << "\n";
    return kExitClusterUnreachable;
  }
  if (auto allowed = check_resume(op, PhaseMachine::rules(op.kind), claims->items, jobs->items);
      !allowed) {
    return at.refuse(allowed.error());
  }
  auto replacing = pending_request(at, Action::Retry);
  if (!replacing) return at.refuse(replacing.error());
  const std::string phase{to_string(*op.failed_in)};
  std::string deleting;
  for (const Json& job : failed_jobs(op, jobs->items)) {
    deleting += (deleting.empty() ? "" : ", ") + k8s::name(job).value_or("?");
  }
  const std::string text = encode_advance_request(at.request(Action::Retry));
  const std::string then =
      (deleting.empty() ? "" : "delete the failed Job(s) " + deleting + ", ") +
      "journal OperatorAction and Failed -> " + phase + " on " + op.id + ", remove the label " +
      std::string{kFailedLabel} + " and run the " + phase +
      " step again (backup claims are kept until the data is verified restored)";
  if (at.options.dry_run) {
    at.out << "dry run: would resume " << phase << " of operation " << op.id << " on " << at.sts()
           << " (failed: " << op.failure << ") as " << at.who << *replacing << "\n"
           << "would write annotation " << kAdvanceAnnotation << "=" << text << "\n"
           << "the controller would then check again, " << then << "\n";
    return kExitOk;
  }
  if (const int written = write(at, text); written != kExitOk) return written;
  at.out << "resume of " << phase << " of operation " << op.id << " on " << at.sts()
         << " requested as " << at.who << *replacing << "\n"
         << "the controller checks again and will " << then << ": " << at.watch() << "\n";
  return kExitOk;
}

int retry_branch(const Attempt& at) {
  const Operation& op = at.op;
  if (resumes_in_place(op)) return resume_branch(at);
  auto claims = at.kube.list(Kind::PersistentVolumeClaim, at.target.ns);
  auto jobs = claims ? at.kube.list(Kind::Job, at.target.ns) : std::unexpected(claims.error());
  auto classes = at.kube.list(Kind::StorageClass, "");
  if (!claims || !jobs || (!classes && classes.error().code != KubeErrorCode::Forbidden)) {
    const KubeError& e = !claims ? claims.error() : !jobs ? jobs.error() : classes.error();
    at.err << "stsresize advance: reading the claims, Jobs and StorageClasses of " << at.target.ns
           << ": " << to_string(e.code) << ": " << e.message << "\n";
    return kExitClusterUnreachable;
  }
  std::optional<std::vector<Json>> class_list;
  if (classes) class_list = classes->items;
  std::expected<std::string, std::string> wanted = std::unexpected(std::string{});
  if (op.kind == OperationKind::Recovery) {
    wanted = std::string{"a lost-volume recovery of any replica whose volume is still lost"};
  } else if (op.kind == OperationKind::Drain) {
    auto pods = at.kube.list(Kind::Pod, at.target.ns);
    if (!pods) {
      at.err << "stsresize advance: reading the pods of " << at.target.ns << ": "
             << to_string(pods.error().code) << ": " << pods.error().message << "\n";
      return kExitClusterUnreachable;
    }
    wanted = wanted_drain(at.object, claims->items, pods->items);
  } else {
    wanted = wanted_resize(at.object, claims->items, class_list);
  }
  if (auto allowed =
          check_retry(op, PhaseMachine::rules(op.kind), claims->items, jobs->items, wanted);
      !allowed) {
    return at.refuse(allowed.error());
  }
  auto replacing = pending_request(at, Action::Retry);
  if (!replacing) return at.refuse(replacing.error());
  const std::string text = encode_advance_request(at.request(Action::Retry));
  const std::string then = "remove the label " + std::string{kFailedLabel} +
                           " and start a new operation: " + retry_trigger(op.id, at.who, *wanted);
  if (at.options.dry_run) {
    at.out << "dry run: would retry operation " << op.id << " on " << at.sts()
           << " (failed: " << op.failure << ") as " << at.who << *replacing << "\n"
           << "would write annotation " << kAdvanceAnnotation << "=" << text << "\n"
           << "the controller would then check again, journal OperatorAction on " << op.id << ", "
           << then << "\n";
    return kExitOk;
  }
  if (const int written = write(at, text); written != kExitOk) return written;
  at.out << "retry of operation " << op.id << " on " << at.sts() << " requested as " << at.who
         << *replacing << "\n"
         << "the controller checks again, journals it and will " << then << ": " << at.watch()
         << "\n";
  return kExitOk;
}

int abort_branch(const Attempt& at) {
  const Operation& op = at.op;
  std::vector<std::string> going;
  if (op.phase == Phase::Recreating) {
    auto claims = at.kube.list(Kind::PersistentVolumeClaim, at.target.ns);
    if (!claims) {
      at.err << "stsresize advance: listing the claims of " << at.target.ns << ": "
             << to_string(claims.error().code) << ": " << claims.error().message << "\n";
      return kExitClusterUnreachable;
    }
    going = sources_going(op, claims->items);
  }
  if (auto allowed = check_abort(op, PhaseMachine::rules(op.kind), going); !allowed) {
    return at.refuse(allowed.error());
  }
  auto replacing = pending_request(at, Action::Abort);
  if (!replacing) return at.refuse(replacing.error());
  const std::string text = encode_advance_request(at.request(Action::Abort));
  const std::string then =
      op.kind == OperationKind::Recovery
          ? "end in Failed with every lost claim kept (\"" + abort_failure(at.who, op.phase) +
                "\", label " + std::string{kFailedLabel} + ")"
      : op.kind == OperationKind::Drain
          ? "move to StoppingDrain: delete the drain's cleanup pods, keep every claim, and end "
            "in Failed (\"" +
                abort_failure(at.who, op.phase) + "\", label " + std::string{kFailedLabel} + ")"
      : op.phase == Phase::Measuring || op.path == Path::Undecided
          ? "move to ScalingBack: nothing was planned or scaled yet, so it only deletes this "
            "operation's measure Jobs, and end in Failed (\"" +
                abort_failure(at.who, op.phase) + "\", label " + std::string{kFailedLabel} + ")"
          : "move to ScalingBack: " +
                std::string{op.source_claim_deleted()
                                ? "put each claim whose source was deleted back on its own "
                                  "volume (kept Retain), "
                                : ""} +
                (op.strategy == Strategy::Rolling
                     ? "start the StatefulSet again with ordinal " +
                           std::to_string(op.rolling_ordinal().value_or(-1)) +
                           " on its source claims (the ordinals done before stay resized)"
                     : "scale back to " + std::to_string(op.original_replicas) +
                           " replicas on the source claims") +
                ", delete this operation's copy Jobs and backup claims" +
                (op.path == Path::Rebind ? ", put the volumes' reclaim policies back" : "") +
                ", and end in Failed (\"" + abort_failure(at.who, op.phase) + "\", label " +
                std::string{kFailedLabel} + ")";
  if (at.options.dry_run) {
    at.out << "dry run: would abort operation " << op.id << " on " << at.sts() << " in phase "
           << to_string(op.phase) << " as " << at.who << *replacing << "\n"
           << "would write annotation " << kAdvanceAnnotation << "=" << text << "\n"
           << "the controller would then journal OperatorAction and " << then << "\n";
    return kExitOk;
  }
  if (const int written = write(at, text); written != kExitOk) return written;
  at.out << "abort of operation " << op.id << " on " << at.sts() << " (in phase "
         << to_string(op.phase) << ") requested as " << at.who << *replacing << "\n"
         << "the controller takes it before its next step: it will journal OperatorAction and "
         << then << ": " << at.watch() << "\n";
  return kExitOk;
}

int skip_branch(const Attempt& at) {
  const Operation& op = at.op;
  if (auto allowed = check_skip(op, PhaseMachine::rules(op.kind)); !allowed) {
    return at.refuse(allowed.error());
  }
  ListOptions ours;
  ours.label_selector = std::string{kOperationLabel} + "=" + naming::label_value(op.id);
  auto claims = at.kube.list(Kind::PersistentVolumeClaim, at.target.ns, ours);
  auto jobs =
      claims ? at.kube.list(Kind::Job, at.target.ns, ours) : std::unexpected(claims.error());
  if (!claims || !jobs) {
    const KubeError& e = !claims ? claims.error() : jobs.error();
    at.err << "stsresize advance: listing the claims and Jobs of operation " << op.id << ": "
           << to_string(e.code) << ": " << e.message << "\n";
    return kExitClusterUnreachable;
  }
  auto replacing = pending_request(at, Action::Skip);
  if (!replacing) return at.refuse(replacing.error());
  const std::string text = encode_advance_request(at.request(Action::Skip));
  const std::string phase{to_string(op.phase)};
  const std::string then =
      "end the operation in Completed without the rest of " + phase + ", keeping " +
      skip_keeps(op, labelled_with(op, claims->items), labelled_with(op, jobs->items));
  if (at.options.dry_run) {
    at.out << "dry run: would skip " << phase << " of operation " << op.id << " on " << at.sts()
           << " as " << at.who << *replacing << "\n"
           << "would write annotation " << kAdvanceAnnotation << "=" << text << "\n"
           << "the controller would then check again, journal OperatorAction and " << then << "\n";
    return kExitOk;
  }
  if (const int written = write(at, text); written != kExitOk) return written;
  at.out << "skip of " << phase << " of operation " << op.id << " on " << at.sts()
         << " requested as " << at.who << *replacing << "\n"
         << "the controller takes it before its next step: it will check again, journal "
            "OperatorAction and "
         << then << "\nwatch it: " << at.watch() << "\n";
  return kExitOk;
}

int approve_branch(const Attempt& at) {
  const Operation& op = at.op;
  if (is_terminal(op.phase)) {
    return at.refuse("operation " + op.id + " on " + at.sts() + " ended in phase " +
                     std::string{to_string(op.phase)} +
                     (op.failure.empty() ? "" : " (" + op.failure + ")") +
                     "; nothing waits for approval. `stsresize replay --journal "
                     "JOURNAL --operation " +
                     op.id + "` shows its history; once the cause is fixed, `" +
                     advance_command_line(Action::Retry, at.target.ns, at.target.name) +
                     "` re-runs it (a new operation if it failed before a source "
                     "claim was deleted, else resumed where it failed)");
  }
  const ModeSetting mode = approval_mode_of(at.object);
  if (!op.awaiting) {
    return at.refuse(
        "operation " + op.id + " is in phase " + std::string{to_string(op.phase)} +
        " and waits for no approval (" + std::string{kModeAnnotation} + ": " +
        std::string{to_string(mode.mode)} + "). Run it again when the StatefulSet shows " +
        std::string{kAwaitingApprovalAnnotation} + " (kubectl -n " + at.target.ns + " get sts " +
        at.target.name + " -L " + std::string{kAwaitingApprovalAnnotation} + " -w)");
  }
  const std::string transition = transition_of(*op.awaiting);
  auto replacing = pending_request(at, Action::Approve);
  if (!replacing) return at.refuse(replacing.error());
  const std::string text = encode_advance_request(at.request(Action::Approve));
  if (at.options.dry_run) {
    at.out << "dry run: would approve " << transition << " of operation " << op.id << " on "
           << at.sts() << " as " << at.who << *replacing << "\n"
           << "would write annotation " << kAdvanceAnnotation << "=" << text << "\n"
           << "the controller would then journal OperatorAction, remove the annotation and move "
              "to "
           << to_string(op.awaiting->to) << "\n";
    return kExitOk;
  }
  if (const int written = write(at, text); written != kExitOk) return written;
  at.out << "approved " << transition << " of operation " << op.id << " on " << at.sts() << " as "
         << at.who << *replacing << "\n"
         << "the controller continues on its next watch event: "
         << watch_hint(at.target.ns, at.target.name) << "\n";
  return kExitOk;
}

std::string_view action_name(const AdvanceOptions& options) {
  const Action action = action_of(options);
  return action == Action::Approve ? "approval" : to_string(action);
}

std::string command_of(const AdvanceOptions& options, const Target& target) {
  return advance_command_line(action_of(options), target.ns, target.name);
}

}  // namespace

int run_advance(Kubernetes& kube, const AdvanceOptions& options, const AdvanceCaller& caller,
                std::ostream& out, std::ostream& err) {
  if (!action_is_clear(options, err)) return kExitUsage;
  auto target = parse_target(options.target, caller.default_namespace);
  if (!target) return refuse_target(target.error(), err);
  const std::string who = options.as.empty() ? caller.identity : options.as;
  if (who.empty()) {
    err << "stsresize advance: neither the API server (SelfSubjectReview) nor the kubeconfig "
           "context names the user, so the request could not say who gave it; pass --as NAME\n";
    return kExitUsage;
  }
  const ObjectRef ref{Kind::StatefulSet, target->ns, target->name};
  const std::string sts = target->ns + "/" + target->name;
  const std::string approve = advance_command_line(Action::Approve, target->ns, target->name);
  auto refuse = [&](const std::string& prefix, const std::string& why) {
    err << "stsresize advance: refused: " << prefix << why << "\n";
    return kExitRefused;
  };

  std::string changed;  // set after a 409: the next refusal explains it
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto object = kube.get(ref);
    if (!object) {
      if (object.error().code == KubeErrorCode::NotFound) {
        return refuse(changed, "StatefulSet " + sts +
                                   " does not exist (kubectl get sts -A lists them; the "
                                   "argument is NAMESPACE/NAME)");
      }
      err << "stsresize advance: reading StatefulSet " << sts << ": "
          << to_string(object.error().code) << ": " << object.error().message << "\n";
      return kExitClusterUnreachable;
    }
    auto operation = read_operation(*object);
    if (!operation) {
      return refuse(changed, operation.error() +
                                 "; the controller takes no action on it either (Warning "
                                 "InvalidState): put back the state the controller wrote (its "
                                 "journal has it: stsresize describe --journal); removing the "
                                 "annotation makes the controller continue from its journal, "
                                 "or refuse to start anything while the operation's backup "
                                 "claims exist");
    }
    if (!operation->has_value() && options.retry) {
      return refuse(changed, sts +
                                 " has no failed operation to retry (none in progress, or the "
                                 "last one completed)");
    }
    if (!operation->has_value() && options.abort) {
      return refuse(changed, sts + " has no resize in progress, so there is nothing to abort");
    }
    if (!operation->has_value() && options.skip_step) {
      return refuse(changed, sts +
                                 " has no resize in progress, so there is no step to skip "
                                 "(`stsresize status -n " +
                                 target->ns + " " + target->name + "` shows the last one)");
    }
    if (!operation->has_value()) {
      return refuse(changed,
                    sts +
                        " has no resize in progress, so nothing waits for approval. Start one "
                        "(e.g. kubectl -n " +
                        target->ns + " annotate sts " + target->name +
                        " 'stsresize.dev/resize={\"data\":{\"storage\":\"2Gi\"}}'); with " +
                        std::string{kModeAnnotation} +
                        "=manual each of its transitions then "
                        "waits for `" +
                        approve + "`");
    }
    const Attempt at{kube, options, caller, *target, who, *object, **operation, changed, out, err};
    const int code = options.retry       ? retry_branch(at)
                     : options.abort     ? abort_branch(at)
                     : options.skip_step ? skip_branch(at)
                                         : approve_branch(at);
    if (code != kReadAgain) return code;
    changed = changed_while_writing(action_name(options));
  }
  err << "stsresize advance: the StatefulSet " << sts
      << " kept changing while the request was being written (409 Conflict five times); "
         "nothing was written: run `"
      << command_of(options, *target) << "` again\n";
  return kExitClusterUnreachable;
}

}  // namespace stsresize::cli
