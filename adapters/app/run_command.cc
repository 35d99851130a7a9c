#include "adapters/app/run_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <random>

#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "adapters/app/copy_job_flags.h"
#include "adapters/app/credentials.h"
#include "adapters/app/durations.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/informer_errors.h"
#include "adapters/app/lease_errors.h"
#include "adapters/app/logging.h"
#include "adapters/app/namespaces.h"
#include "adapters/clock/system_clock.h"
#include "adapters/controller/controller.h"
#include "adapters/controller/copy_progress.h"
#include "adapters/events/kube_event_recorder.h"
#include "adapters/failpoint/hook.h"
#include "adapters/journal/sqlite_journal.h"
#include "adapters/kube/http_kubernetes.h"
#include "adapters/metrics/metrics.h"
#include "adapters/runtime/leader_election.h"
#include "adapters/runtime/monotonic_clock.h"
#include "adapters/runtime/shutdown_signal.h"
#include "engine/naming.h"
#include "engine/quantity.h"

namespace stsresize::cli {

namespace {

constexpr std::string_view kSummary = "Run the controller (in a cluster, or against a kubeconfig)";

constexpr std::string_view kFooter =
    "The controller watches StatefulSets and resizes their PersistentVolumeClaims when a\n"
    "volumeClaimTemplate asks for more than the claims have (after `kubectl delete sts\n"
    "--cascade=orphan` and a re-apply with bigger templates), or when the StatefulSet carries\n"
    "a stsresize.dev/resize annotation. Every step is journaled (--journal) and its state kept\n"
    "in annotations on the StatefulSet, so a controller killed at any moment resumes where it\n"
    "was. Run two replicas with --leader-elect: only the holder of the Lease works.\n"
    "\n"
    "Scale-down drain: a StatefulSet annotated statefulsets.kubernetes.io/scaledown-pod-template\n"
    "(the StatefulSet Scale-Down Controller's key, or stsresize.dev/scaledown-pod-template) gets,\n"
    "for each ordinal a scale-down leaves without its replica, a cleanup pod named as that\n"
    "replica, on its claims; once the pod Succeeded, the pod and then the claims are deleted. A\n"
    "scale back up first stops it, keeping the claims (--max-parallel-drains, --drain-timeout).\n"
    "\n"
    "Lost-volume recovery: a StatefulSet annotated stsresize.dev/lost-volume-recovery: auto (or\n"
    "manual: each recovery waits for `stsresize advance --approve`) whose replica's volume is\n"
    "pinned to a node that is gone (the Node deleted, or tainted "
    "node.kubernetes.io/out-of-service)\n"
    "gets that replica back on new, empty claims once the node has been gone for the grace\n"
    "period (--lost-volume-grace, or stsresize.dev/lost-volume-grace): the lost volume kept\n"
    "(Retain), the claim and the stuck pod deleted, the new ones annotated\n"
    "stsresize.dev/recovered-from. A node that is only NotReady is reported, never acted on.\n"
    "One replica without its data at a time (stsresize.dev/lost-volume-max-unavailable raises\n"
    "it). With stsresize.dev/recovery-pod-template, a re-seed pod runs once on the new claims\n"
    "before the replica starts on them (the StatefulSet paused meanwhile).\n"
    "\n"
    "Credentials: --kubeconfig, else $KUBECONFIG, else the pod's service account (in a\n"
    "cluster), else ~/.kube/config.\n"
    "\n"
    "Caches: StatefulSets, claims, pods, and the Jobs and ConfigMaps stsresize makes, in the\n"
    "watched namespaces; without --namespace also StorageClasses and, when the credentials\n"
    "may list them, PersistentVolumes (otherwise read live at each step, and a warning says\n"
    "what to grant). A step that deletes or changes data reads what it decides on live.\n"
    "\n"
    "Endpoints: /metrics (Prometheus) on --metrics-bind-address; /healthz and /readyz on\n"
    "--health-probe-bind-address (ready: caches synced, and when electing, leading or standing\n"
    "by). Addresses: host:port, :port (all interfaces), [::1]:port, or 0 to disable.\n"
    "\n"
    "Copy Jobs run --sync-image as root, to keep every file's owner (rsync -aHAX\n"
    "--numeric-ids), under the Pod Security \"baseline\" level: read-only root filesystem, /tmp\n"
    "on an emptyDir, no service account token, every capability dropped but CHOWN,\n"
    "DAC_OVERRIDE, FOWNER, FSETID, MKNOD and SETFCAP, with the --copy-job-* requests and\n"
    "limits (quantities, or none). Namespaces whose StatefulSets are resized must allow it.\n"
    "\n"
    "Examples:\n"
    "  stsresize run --kubeconfig ~/.kube/config --journal ./journal.db\n"
    "  stsresize run --namespace shop --leader-elect --metrics-bind-address 127.0.0.1:8080\n"
    "\n"
    "Exit codes:\n"
    "  0  stopped by SIGTERM or SIGINT after finishing the steps in flight\n"
    "  2  bad flags, unusable credentials, unreadable journal, or a port already taken\n"
    "  3  the leader lease was lost (the process stops at once; a restart resumes the work)";

std::string default_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof host, "stsresize");
  std::random_device random;
  return std::string{host} + "_" + naming::short_hash(std::to_string(random()) + host);
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunFlags& flags) {
  CLI::App* run = app.add_subcommand("run", std::string{kSummary});
  run->footer(std::string{kFooter});
  run->add_option("--kubeconfig", flags.kubeconfig,
                  "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  run->add_option("--context", flags.context, "Kubeconfig context (default: current-context)");
  run->add_option("-n,--namespace", flags.ns,
                  "Watch only this namespace (default: all namespaces)");
  run->add_flag("--leader-elect", flags.leader_elect,
                "Work only while holding a coordination.k8s.io Lease (run 2 replicas)");
  run->add_option("--leader-elect-namespace", flags.leader_elect_namespace,
                  "Namespace of the Lease (default: the kubeconfig context's or the pod's)");
  run->add_option("--leader-elect-id", flags.leader_elect_id, "Name of the Lease")
      ->capture_default_str();
  run->add_option("--leader-elect-identity", flags.leader_elect_identity,
                  "This replica's name in the Lease (default: hostname_random)");
  run->add_option("--leader-elect-lease-duration", flags.lease_duration,
                  "How long standbys wait before taking over a lease that is not renewed")
      ->capture_default_str();
  run->add_option("--leader-elect-renew-deadline", flags.renew_deadline,
                  "How long the leader keeps trying to renew before it stops working")
      ->capture_default_str();
  run->add_option("--leader-elect-retry-period", flags.retry_period,
                  "Interval between attempts to acquire or renew the lease")
      ->capture_default_str();
  run->add_option("--metrics-bind-address", flags.metrics_bind_address,
                  "Where /metrics listens; 0 disables it")
      ->capture_default_str();
  run->add_option("--health-probe-bind-address", flags.health_probe_bind_address,
                  "Where /healthz and /readyz listen; 0 disables them")
      ->capture_default_str();
  run->add_option("--journal", flags.journal,
                  "SQLite journal file (created if missing; put it on a volume to keep history)")
      ->capture_default_str();
  run->add_option("--max-concurrent-operations", flags.max_concurrent_operations,
                  "StatefulSets worked on at once (worker threads)")
      ->capture_default_str();
  run->add_option("--max-parallel-copies", flags.max_parallel_copies,
                  "Copy Jobs running at once per operation; 0: every claim at once, the "
                  "default, as the application is down for the whole copy and each claim's copy "
                  "has volumes of its own; give N where the claims share storage bandwidth (one "
                  "node's disk, a throttled backend), to bound the load on it")
      ->capture_default_str();
  run->add_flag("--no-rebind", flags.no_rebind,
                "Always take the two-copy path (copy to a backup claim, recreate the claim, copy "
                "back), even where the controller may rebind the copied volume (one copy)");
  run->add_option("--max-parallel-drains", flags.max_parallel_drains,
                  "Cleanup pods running at once per scale-down drain (OrderedReady sets: 1)")
      ->capture_default_str();
  run->add_option("--sync-image", flags.sync_image,
                  "Image of the copy Jobs: needs sh, rsync, find, xargs, stat, sort, sha256sum "
                  "(default: " +
                      CopyJobSettings{}.image + ")");
  add_copy_job_flags(*run, flags.copy_job);
  run->add_option("--poll-interval", flags.poll_interval,
                  "How soon to look again while waiting for the cluster")
      ->capture_default_str();
  run->add_option("--copy-progress-interval", flags.copy_progress_interval,
                  "How often the leader reads each running copy's progress from its log (pods/log: "
                  "one request a copy each time) for /metrics and the CopyProgress Events")
      ->capture_default_str();
  run->add_option("--pending-timeout", flags.pending_timeout,
                  "A claim still Pending this long fails the operation (then scale-back); a "
                  "pre-copy pod still unscheduled then is given up")
      ->capture_default_str();
  run->add_option("--scale-up-timeout", flags.scale_up_timeout,
                  "Pods not all Ready this long after the replicas were put back (ScalingUp; a "
                  "rolling resize's StartingReplica) give a Warning ScaleUpTimeout; the "
                  "operation keeps waiting, and a rolling resize touches no other ordinal")
      ->capture_default_str();
  run->add_option("--job-timeout", flags.job_timeout,
                  "A copy Job still running this long fails the operation")
      ->capture_default_str();
  run->add_option("--drain-timeout", flags.drain_timeout,
                  "A drain whose cleanup pods have not all Succeeded this long fails (its "
                  "cleanup pods deleted, every claim kept)")
      ->capture_default_str();
  run->add_option("--lost-volume-grace", flags.lost_volume_grace,
                  "A lost-volume recovery deletes nothing until the node has been gone this long "
                  "(a StatefulSet may say otherwise: stsresize.dev/lost-volume-grace)")
      ->capture_default_str();
  run->add_option("--lost-volume-check-interval", flags.lost_volume_check_interval,
                  "How often a StatefulSet with stsresize.dev/lost-volume-recovery is checked "
                  "for a lost volume (nodes are not watched)")
      ->capture_default_str();
  run->add_option("--drain-restart-limit", flags.drain_restart_limit,
                  "A cleanup pod restarted more often than this fails the drain")
      ->capture_default_str();
  run->add_option("--log-level", flags.log_level, "debug, info, warn or error")
      ->capture_default_str();
  run->add_option("--log-format", flags.log_format, "text or json")->capture_default_str();
  return run;
}

std::expected<RunConfig, std::string> resolve_run_flags(const RunFlags& flags) {
  RunConfig config;
  auto named = [](std::string_view flag, const std::string& why) {
    return std::unexpected("--" + std::string{flag} + ": " + why);
  };
  if (auto level = logging::parse_level(flags.log_level); !level) {
    return named("log-level", level.error());
  }
  if (auto format = logging::parse_format(flags.log_format); !format) {
    return named("log-format", format.error());
  }
  config.log_level = flags.log_level;
  config.log_format = flags.log_format;

  struct DurationFlag {
    std::string_view name;
    const std::string& text;
    Duration* target;
  };
  LeaderElectionConfig election;
  const DurationFlag durations[] = {
      {"leader-elect-lease-duration", flags.lease_duration, &election.lease_duration},
      {"leader-elect-renew-deadline", flags.renew_deadline, &election.renew_deadline},
      {"leader-elect-retry-period", flags.retry_period, &election.retry_period},
      {"poll-interval", flags.poll_interval, &config.engine.poll_interval},
      {"pending-timeout", flags.pending_timeout, &config.engine.pending_timeout},
      {"scale-up-timeout", flags.scale_up_timeout, &config.engine.scale_up_timeout},
      {"job-timeout", flags.job_timeout, &config.engine.job_timeout},
      {"drain-timeout", flags.drain_timeout, &config.engine.drain_timeout},
      {"lost-volume-grace", flags.lost_volume_grace, &config.engine.lost_volume_grace},
      {"lost-volume-check-interval", flags.lost_volume_check_interval,
       &config.engine.lost_volume_check_interval},
      {"copy-progress-interval", flags.copy_progress_interval, &config.copy_progress_interval},
  };
  for (const DurationFlag& flag : durations) {
    auto parsed = parse_duration(flag.text);
    if (!parsed) return named(flag.name, parsed.error());
    if (parsed->count() <= 0) return named(flag.name, "must be longer than 0");
    *flag.target = *parsed;
  }
  // client-go's rules: the leader must give up (renew deadline) before standbys may take over
  // (lease duration), and must try to renew more than once within its deadline.
  if (election.renew_deadline >= election.lease_duration) {
    return named("leader-elect-renew-deadline",
                 "must be shorter than --leader-elect-lease-duration");
  }
  if (election.retry_period >= election.renew_deadline) {
    return named("leader-elect-retry-period", "must be shorter than --leader-elect-renew-deadline");
  }
  if (flags.max_concurrent_operations < 1 || flags.max_concurrent_operations > 64) {
    return named("max-concurrent-operations", "must be from 1 to 64");
  }
  if (flags.max_parallel_copies < 0 || flags.max_parallel_copies > 64) {
    return named("max-parallel-copies", "must be from 0 (no bound) to 64");
  }
  if (flags.max_parallel_drains < 1 || flags.max_parallel_drains > 64) {
    return named("max-parallel-drains", "must be from 1 to 64");
  }
  if (flags.drain_restart_limit < 0) return named("drain-restart-limit", "must not be negative");
  config.workers = flags.max_concurrent_operations;
  config.engine.max_parallel_copies = flags.max_parallel_copies;
  config.engine.rebind = !flags.no_rebind;
  config.engine.max_parallel_drains = flags.max_parallel_drains;
  config.engine.drain_restart_limit = flags.drain_restart_limit;
  if (!flags.sync_image.empty()) config.engine.copy_job.image = flags.sync_image;
  if (auto resources = copy_job_resources(flags.copy_job); resources) {
    config.engine.copy_job.resources = *resources;
  } else {
    return std::unexpected(resources.error());
  }
  if (auto rsync = copy_rsync_flags(flags.copy_job); rsync) {
    config.engine.copy_job.rsync_flags = *rsync;
  } else {
    return std::unexpected(rsync.error());
  }
  if (flags.journal.empty()) return named("journal", "must name a file");
  config.journal = flags.journal;

  auto metrics = parse_bind_address(flags.metrics_bind_address);
  if (!metrics) return named("metrics-bind-address", metrics.error());
  config.metrics_address = *metrics;
  auto probes = parse_bind_address(flags.health_probe_bind_address);
  if (!probes) return named("health-probe-bind-address", probes.error());
  config.probe_address = *probes;

  // Both become part of request paths; checked before the credentials are even read.
  for (const auto& [flag, value] :
       {std::pair<std::string_view, const std::string&>{"namespace", flags.ns},
        {"leader-elect-namespace", flags.leader_elect_namespace}}) {
    if (value.empty()) continue;
    if (auto valid = check_namespace(value); !valid) return named(flag, valid.error());
  }

  auto kube = load_credentials(flags.kubeconfig, flags.context);
  if (!kube) return std::unexpected("credentials: " + kube.error());
  config.kube = std::move(*kube);
  config.ns = flags.ns;

  if (flags.leader_elect) {
    election.lease_namespace =
        flags.leader_elect_namespace.empty() ? config.kube.ns : flags.leader_elect_namespace;
    election.lease_name = flags.leader_elect_id;
    if (election.lease_name.empty()) return named("leader-elect-id", "must not be empty");
    election.identity =
        flags.leader_elect_identity.empty() ? default_identity() : flags.leader_elect_identity;
    config.leader_election = election;
  }
  return config;
}

}  // namespace stsresize::cli

namespace stsresize::cli {

namespace {

// The lease, when electing: the elector's state for /readyz and /metrics.
struct Leadership {
  runtime::LeaderElector* elector = nullptr;

  bool leading() const { return elector == nullptr || elector->is_leader(); }
  // A standby that has seen the lease is as ready as the leader: it can take over.
  bool participating() const {
    return elector == nullptr || elector->is_leader() || !elector->holder().empty();
  }
};

void log_reconcile(const std::string& key, std::string_view result, Duration took,
                   const std::string& message) {
  if (result == "idle" && message.empty()) {
    logging::debug("reconciled", {{"statefulset", key},
                                  {"result", std::string{result}},
                                  {"ms", std::to_string(took.count())}});
    return;
  }
  const logging::Level level =
      result == "retry" || result == "terminal" ? logging::Level::Warn : logging::Level::Info;
  logging::log(level, "reconciled",
               {{"statefulset", key},
                {"result", std::string{result}},
                {"ms", std::to_string(took.count())},
                {"message", message}});
}

}  // namespace

// Whether a cluster-scoped controller may list PersistentVolumes: one list of at most one, at
// start. deploy/overlays/cluster-scoped/rbac.yaml grants list and watch beside get and patch,
// and the steps then read volumes from an informer's cache; a ClusterRole of an older release
// grants only get and patch, and an informer refused would keep the controller unready for
// ever, so the volumes are then read live, as before, and the log says what to grant. Any
// answer but Forbidden counts as may: the informer then says what fails, as every informer
// does. A namespace-scoped installation is not asked (a Role cannot grant a cluster-scoped
// kind): it takes the two-copy path, which reads no volume.
bool may_list_volumes(Kubernetes& kube) {
  ListOptions one;
  one.limit = 1;
  auto listed = kube.list(Kind::PersistentVolume, "", one);
  if (listed || listed.error().code != KubeErrorCode::Forbidden) return true;
  logging::warn(
      "PersistentVolumes are read live at each step, not watched: grant list and watch on "
      "persistentvolumes to the ClusterRole (as deploy/overlays/cluster-scoped/rbac.yaml does)",
      {{"reason", listed.error().message}});
  return false;
}

int run_controller(const RunFlags& flags, std::ostream& err) {
  auto test_hook = test_hook::from_environment();
  if (!test_hook) {
    err << "stsresize run: " << test_hook.error() << "\n";
    return kExitUsage;
  }
  auto config = resolve_run_flags(flags);
  if (!config) {
    err << "stsresize run: " << config.error() << "\n";
    return kExitUsage;
  }
  logging::configure(*logging::parse_level(config->log_level),
                     *logging::parse_format(config->log_format));

  ControllerMetrics metrics;
  add_process_metrics(metrics);
  HttpKubernetesOptions http_options;
  http_options.on_request = [&metrics](std::string_view verb, std::string_view request, int status,
                                       Duration latency) {
    metrics.api_request(verb, status, latency);
    // As kubectl -v=6 does: every request, for counting them or following one step's reads.
    logging::debug(
        "api request",
        {{"request", std::string{request}},
         {"code", std::to_string(status)},
         {"ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(latency).count())}});
  };
  auto kube = HttpKubernetes::create(config->kube, http_options);
  if (!kube) {
    err << "stsresize run: credentials: " << kube.error() << "\n";
    return kExitUsage;
  }

  std::error_code ec;
  const std::filesystem::path journal_path{config->journal};
  if (journal_path.has_parent_path())
    std::filesystem::create_directories(journal_path.parent_path(), ec);
  auto journal = SqliteJournal::open(journal_path);
  if (!journal) {
    err << "stsresize run: --journal " << config->journal << ": " << journal.error().message
        << "\n";
    return kExitUsage;
  }

  SystemClock clock;
  // Lease deadlines must not move when the wall clock is set.
  runtime::MonotonicClock lease_clock;
  const std::string identity =
      config->leader_election ? config->leader_election->identity : std::string{};
  KubeEventRecorder recorder(
      **kube, clock, {.component = "stsresize", .host = identity},
      [](const ObjectRef& about, std::string_view reason, const KubeError& error) {
        logging::warn("event not recorded", {{"object", to_string(about)},
                                             {"reason", std::string{reason}},
                                             {"error", std::string{to_string(error.code)}},
                                             {"message", error.message}});
      });

  // The test hook (adapters/failpoint): only the controller's own ports are wrapped.
  const test_hook::Ports ports = (*test_hook)(**kube, **journal);
  Kubernetes* controller_kube = ports.kube;
  Journal* controller_journal = ports.journal;

  // Informers retry failed lists and watches for ever; this says why, once per cause.
  InformerErrorLog informer_errors;
  ControllerOptions controller_options;
  controller_options.on_informer_error = [&informer_errors](const runtime::InformerError& error) {
    informer_errors.failed(error);
  };
  controller_options.on_informer_recovered = [&informer_errors](Kind kind) {
    informer_errors.recovered(kind);
  };
  controller_options.ns = config->ns;
  controller_options.workers = config->workers;
  controller_options.engine = config->engine;
  controller_options.operation_listener = &metrics;
  // A namespace-scoped installation has no right to list cluster-scoped StorageClasses.
  controller_options.watch_storage_classes = config->ns.empty();
  controller_options.watch_volumes = config->ns.empty() && may_list_volumes(*controller_kube);
  Controller controller(*controller_kube, *controller_journal, clock, recorder, controller_options);
  // An Event's involved object is the StatefulSet just written: its copy is in the caches.
  recorder.read_objects_through(controller.reads());
  controller.export_metrics(metrics);
  controller.on_reconciled([&metrics](const std::string& key, std::string_view result,
                                      Duration took, const std::string& message) {
    metrics.reconciled(result, took);
    log_reconcile(key, result, took, message);
  });
  // Read by the leader only: a standby's controller does not work.
  CopyProgressWatcher copy_progress(controller.reads(), **kube, recorder,
                                    {.ns = config->ns, .interval = config->copy_progress_interval},
                                    [&controller] { return controller.working(); });
  copy_progress.export_metrics(metrics);

  std::unique_ptr<runtime::LeaderElector> elector;
  std::optional<LeaseErrorLog> lease_errors;
  Leadership leadership;
  std::atomic<bool> shutting_down{false};
  std::thread starter;
  if (config->leader_election) {
    const LeaderElectionConfig& le = *config->leader_election;
    lease_errors.emplace(le.lease_namespace, le.lease_name);
    elector = std::make_unique<runtime::LeaderElector>(
        **kube, lease_clock,
        runtime::LeaderElectionOptions{le.lease_namespace, le.lease_name, le.identity,
                                       le.lease_duration, le.renew_deadline, le.retry_period},
        runtime::LeaderCallbacks{
            .on_started_leading =
                [&] {
                  logging::info("leading", {{"lease", le.lease_namespace + "/" + le.lease_name},
                                            {"identity", le.identity}});
                  starter = std::thread([&controller] { controller.start_workers(); });
                },
            .on_stopped_leading =
                [&] {
                  if (shutting_down) return;
                  // No step may run without the lease; ending the process is the one way to
                  // stop a step mid-call. The engine resumes from the cluster on restart.
                  logging::error("leader lease lost; exiting",
                                 {{"lease", le.lease_namespace + "/" + le.lease_name},
                                  {"identity", le.identity}});
                  spdlog::default_logger()->flush();
                  std::_Exit(kExitLeadershipLost);
                },
            .on_error = [&lease_errors](
                            std::string_view doing,
                            const KubeError& error) { lease_errors->failed(doing, error); },
            .on_recovered = [&lease_errors] { lease_errors->recovered(); }});
    leadership.elector = elector.get();
    metrics.add_sampled("stsresize_leader", "1 while this replica holds the leader lease.",
                        MetricType::Gauge, [&leadership] {
                          return std::vector<MetricSample>{{{}, leadership.leading() ? 1.0 : 0.0}};
                        });
  }

  Endpoints probes{.healthz = [] { return Check{}; },
                   .readyz =
                       [&] {
                         if (!controller.caches_synced())
                           return Check{false, controller.sync_detail()};
                         if (!leadership.participating())
                           return Check{false, "leader election: no lease seen yet"};
                         return Check{true, leadership.leading() ? "leading" : "standing by"};
                       },
                   .metrics = {}};
  std::vector<std::unique_ptr<EndpointServer>> servers;
  auto serve = [&](const BindAddress& address, Endpoints endpoints, std::string_view flag) -> bool {
    auto server = EndpointServer::start(address, std::move(endpoints));
    if (!server) {
      err << "stsresize run: --" << flag << ": " << server.error() << "\n";
      return false;
    }
    logging::info("listening", {{"address", address.host + ":" + std::to_string((*server)->port())},
                                {"for", std::string{flag}}});
    servers.push_back(std::move(*server));
    return true;
  };
  auto scrape = [&metrics] { return metrics.scrape(); };
  const bool shared = config->metrics_address && config->probe_address &&
                      config->metrics_address->host == config->probe_address->host &&
                      config->metrics_address->port == config->probe_address->port &&
                      config->metrics_address->port != 0;
  if (shared) {
    probes.metrics = scrape;
    if (!serve(*config->probe_address, probes, "health-probe-bind-address")) return kExitUsage;
  } else {
    if (config->metrics_address &&
        !serve(*config->metrics_address, {.metrics = scrape}, "metrics-bind-address")) {
      return kExitUsage;
    }
    if (config->probe_address &&
        !serve(*config->probe_address, probes, "health-probe-bind-address")) {
      return kExitUsage;
    }
  }

  logging::info("starting", {{"namespace", config->ns.empty() ? "(all)" : config->ns},
                             {"workers", std::to_string(config->workers)},
                             {"journal", config->journal},
                             {"server", config->kube.server},
                             {"leader-elect", config->leader_election ? "true" : "false"},
                             {"persistent-volumes",
                              controller_options.watch_volumes ? "watched" : "read live"}});
  controller.start_caches();
  copy_progress.start();

  runtime::ShutdownSignal shutdown([&](int signal) {
    shutting_down = true;
    logging::info("stopping", {{"signal", signal == SIGTERM  ? "SIGTERM"
                                          : signal == SIGINT ? "SIGINT"
                                                             : "requested"}});
  });
  std::unique_ptr<runtime::LeaderElectionRunner> runner;
  if (elector) {
    runner = std::make_unique<runtime::LeaderElectionRunner>(*elector);
  } else {
    starter = std::thread([&controller] { controller.start_workers(); });
  }
  shutdown.wait();

  // Work stops first (no step runs unleased), then the lease is released; only after that can
  // no on_started_leading callback assign `starter` any more, so it is joined last.
  copy_progress.stop();
  controller.stop();
  if (runner) {
    if (auto released = runner->stop(/*release_lease=*/true); !released) {
      logging::warn("lease not released", {{"error", released.error().message}});
    }
  }
  if (starter.joinable()) starter.join();
  for (auto& server : servers) server->stop();
  logging::info("stopped");
  return kExitOk;
}

}  // namespace stsresize::cli
