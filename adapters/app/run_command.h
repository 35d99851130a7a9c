#pragma once
// `stsresize run`: the in-cluster controller. Flags follow controller-runtime operators
// (--kubeconfig, --leader-elect, --metrics-bind-address, --health-probe-bind-address...);
// every flag is validated before anything starts, so a typo fails fast with exit code 2.
#include <ostream>
#include <string>

#include "adapters/app/copy_job_flags.h"
#include "adapters/kube/config.h"
#include "adapters/server/probe_server.h"
#include "engine/ports/kubernetes.h"
#include "engine/settings.h"

namespace CLI {
class App;
}

namespace stsresize::cli {

// As typed on the command line; durations in Go spelling ("15s").
struct RunFlags {
  std::string kubeconfig{};
  std::string context{};
  std::string ns{};  // empty: every namespace
  bool leader_elect = false;
  std::string leader_elect_namespace{};  // empty: the namespace of the kubeconfig context / pod
  std::string leader_elect_id = "stsresize-leader";
  std::string leader_elect_identity{};  // empty: hostname + "_" + a random suffix
  std::string lease_duration = "15s";
  std::string renew_deadline = "10s";
  std::string retry_period = "2s";
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  std::string journal = "/var/lib/stsresize/journal.db";
  int max_concurrent_operations = 4;
  int max_parallel_copies = 0;  // 0: every claim at once
  bool no_rebind = false;
  int max_parallel_drains = 2;
  int drain_restart_limit = 5;
  std::string sync_image{};  // empty: the engine's default
  CopyJobFlags copy_job{};
  std::string poll_interval = "5s";
  std::string pending_timeout = "10m";
  std::string scale_up_timeout = "30m";
  std::string job_timeout = "6h";
  std::string drain_timeout = "1h";
  std::string lost_volume_grace = "5m";
  std::string lost_volume_check_interval = "30s";
  std::string copy_progress_interval = "10s";
  std::string log_level = "info";
  std::string log_format = "text";
};

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;
  Duration lease_duration{0};
  Duration renew_deadline{0};
  Duration retry_period{0};
};

// Everything `run` needs, checked.
struct RunConfig {
  KubeConfig kube;
  std::string ns;
  std::optional<LeaderElectionConfig> leader_election;
  std::optional<BindAddress> metrics_address;  // nullopt: disabled ("0")
  std::optional<BindAddress> probe_address;
  std::string journal;
  int workers = 4;
  EngineSettings engine;
  Duration copy_progress_interval{0};
  std::string log_level;
  std::string log_format;
};

CLI::App* add_run_command(CLI::App& app, RunFlags& flags);

// Validation: errors name the flag and say what would be accepted.
std::expected<RunConfig, std::string> resolve_run_flags(const RunFlags& flags);

// Runs until SIGTERM/SIGINT (exit 0 after a graceful stop), a lost leadership (exit 3: the
// process ends at once so that no work continues without the lease; the engine resumes from
// the cluster), or a failure to start (exit 2 with the reason on `err`).
int run_controller(const RunFlags& flags, std::ostream& err);

// Whether a cluster-scoped controller may list PersistentVolumes, and so watch them (one list
// of at most one). Forbidden: no, with a warning that names what to grant; any other answer:
// yes (the informer then reports what fails).
bool may_list_volumes(Kubernetes& kube);

}  // namespace stsresize::cli
