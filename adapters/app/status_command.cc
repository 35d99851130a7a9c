#include "adapters/app/status_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "adapters/app/credentials.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/namespaces.h"
#include "adapters/app/status_view.h"
#include "adapters/clock/system_clock.h"
#include "adapters/controller/copy_progress.h"
#include "adapters/journal/sqlite_journal.h"
#include "adapters/kube/http_kubernetes.h"
#include "engine/annotations.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/resize_request.h"
#include "engine/vocabulary.h"

namespace stsresize::cli {

namespace {

constexpr std::string_view kStatusSummary =
    "Show the resize operations of StatefulSets (phase, path, progress)";
constexpr std::string_view kDescribeSummary =
    "Show one StatefulSet's resize in detail: claims, step history, Jobs, Events";

constexpr std::string_view kStatusFooter =
    "Status reads the cluster (read-only): the stsresize.dev annotations of every StatefulSet,\n"
    "and the copy Jobs and backup claims labelled stsresize.dev/statefulset. It lists each\n"
    "StatefulSet with an operation under way, one that failed, one whose last operation ended\n"
    "(stsresize.dev/last-operation), or whose resize request was refused\n"
    "(stsresize.dev/resize-status). While an explicit request re-creates a StatefulSet, it is\n"
    "shown from the definition kept in its ConfigMap. StatefulSets stsresize never touched are\n"
    "not listed.\n"
    "\n"
    "Columns: PATH copy (scale down, back up, recreate, restore, scale up) or expand (in place);\n"
    "PHASE the state machine's phase, or Completed, Refused, Invalid (unreadable state);\n"
    "CLAIMS the claims through the current phase's step (BackingUp: backups verified,\n"
    "Recreating: claims re-created, Restoring and later: restores verified, Expanding:\n"
    "expanded) out of the claims planned (a drain: claims deleted; a lost-volume recovery:\n"
    "lost claims deleted); STEP AGE how long the current phase has lasted (for Completed: since\n"
    "it ended); MESSAGE the failure, a warning, the refusal, or a failing Job.\n"
    "-o wide adds OPERATION, TRIGGER (request: the stsresize.dev/resize annotation; template:\n"
    "templates larger than the claims; scale-down: a drain; lost-volume: a recovery), TARGET\n"
    "(template:size, (class) when it changes; drain ORDINALS; recover ORDINAL (node N deleted))\n"
    "and REPLICAS (before the operation). -o json and -o yaml print every field, claim by claim.\n"
    "-w (--watch) then keeps reading, as `kubectl get -w`: a row is printed again, without the\n"
    "header, each time it changes (STEP AGE aside); the StatefulSets are watched, and read again\n"
    "at least every 10 s for what their annotations do not carry (a failing Job). Ctrl-C ends it.\n"
    "\n"
    "Credentials: --kubeconfig, else $KUBECONFIG, else the pod's service account (in a\n"
    "cluster), else ~/.kube/config. The namespace: -n, else the kubeconfig context's.\n"
    "\n"
    "Examples:\n"
    "  stsresize status                       # the current namespace\n"
    "  stsresize status -A -o wide            # every namespace, more columns\n"
    "  stsresize status -n shop web -o json   # one StatefulSet, for scripts\n"
    "  stsresize status -A -w                 # every namespace, as the operations advance\n"
    "  stsresize describe shop/web --journal /var/lib/stsresize/journal.db\n"
    "\n"
    "Exit codes:\n"
    "  0  shown (also when nothing matched)\n"
    "  2  usage error, unusable credentials, or the named StatefulSet does not exist\n"
    "  4  the API server could not be reached, or refused (401, 403, server error)";

constexpr std::string_view kDescribeFooter =
    "Describe reads one StatefulSet (read-only) and prints its operation: phase, path, trigger,\n"
    "each claim's progress (backup verified, source deleted, recreated, restore verified,\n"
    "expanded), the phase history the annotation holds (the start and the current phase), the\n"
    "copy Jobs and backup claims, and the StatefulSet's Events. With --journal (the file the\n"
    "controller writes, `stsresize run --journal`), also every phase with its start and\n"
    "duration and every journal record of the StatefulSet's operations, checked as `stsresize\n"
    "replay` checks them. A failed or refused operation says what to do next.\n"
    "\n"
    "Examples:\n"
    "  stsresize describe shop/web\n"
    "  stsresize describe web -n shop --journal ./journal.db\n"
    "\n"
    "Exit codes:\n"
    "  0  shown\n"
    "  2  usage error, unusable credentials, the StatefulSet does not exist, or the journal\n"
    "     cannot be read\n"
    "  4  the API server could not be reached, or refused (401, 403, server error)";

int usage(std::ostream& err, std::string_view command, const std::string& message) {
  err << "stsresize " << command << ": " << message << "\n";
  return kExitUsage;
}

// A failed read: what happened, and what to try.
int cluster_error(std::ostream& err, std::string_view command, const ClusterTarget& cluster,
                  const std::string& what, const KubeError& error) {
  err << "stsresize " << command << ": cannot " << what << ": ";
  switch (error.code) {
    case KubeErrorCode::Unreachable:
      err << "no answer from the API server" << (cluster.server.empty() ? "" : " ")
          << cluster.server << " (" << error.message
          << "). Is the cluster up (`kubectl cluster-info`), and do --kubeconfig / --context "
             "name it?\n";
      return kExitClusterUnreachable;
    case KubeErrorCode::Unauthorized:
      err << "the API server rejected the credentials (401 Unauthorized: " << error.message
          << "). Renew them, or pick others with --kubeconfig / --context.\n";
      return kExitClusterUnreachable;
    case KubeErrorCode::Forbidden:
      err << "forbidden (403: " << error.message
          << "). These credentials need get and list on statefulsets (apps), "
             "persistentvolumeclaims, jobs (batch), configmaps and events there; or ask "
             "with -n for a namespace you may read.\n";
      return kExitClusterUnreachable;
    default:
      err << "the API server answered " << to_string(error.code) << " (" << error.message
          << "). Try again; `kubectl get --raw /readyz?verbose` shows the server's health.\n";
      return kExitClusterUnreachable;
  }
}

// Every page; the resourceVersion is the first page's (the list's snapshot).
KubeResult<ObjectList> list_all(Kubernetes& kube, Kind kind, const std::string& ns,
                                ListOptions options) {
  ObjectList all;
  options.limit = 500;
  for (;;) {
    auto page = kube.list(kind, ns, options);
    if (!page) return std::unexpected(page.error());
    if (all.resource_version.empty()) all.resource_version = page->resource_version;
    for (Json& item : page->items) all.items.push_back(std::move(item));
    if (page->continue_token.empty()) return all;
    options.continue_token = page->continue_token;
  }
}

std::string where(const std::string& ns) {
  return ns.empty() ? "in any namespace" : "in namespace " + ns;
}

// Usage errors, found before anything is read.
std::optional<int> check_status_options(const StatusOptions& options, std::ostream& err) {
  const std::string& output = options.output;
  if (output != "" && output != "wide" && output != "json" && output != "yaml") {
    return usage(
        err, "status",
        "--output must be wide, json or yaml (or left out for a table), not \"" + output + "\"");
  }
  if (options.watch && (output == "json" || output == "yaml")) {
    return usage(err, "status",
                 "-w prints table rows: leave -o out or give -o wide (scripts can poll `status "
                 "-o json`)");
  }
  if (options.all_namespaces && !options.ns.empty()) {
    return usage(err, "status",
                 "-n and -A contradict each other: give -n NS for one namespace, or -A for all");
  }
  if (!options.ns.empty()) {
    if (auto valid = check_namespace(options.ns); !valid) {
      return usage(err, "status", "-n/--namespace: " + valid.error());
    }
  }
  if (options.all_namespaces && !options.statefulset.empty()) {
    return usage(err, "status",
                 "a StatefulSet name needs one namespace, not -A: run `stsresize status -n NS " +
                     options.statefulset + "`");
  }
  if (!options.statefulset.empty()) {
    if (auto valid = check_statefulset_name(options.statefulset); !valid) {
      return usage(err, "status", valid.error());
    }
  }
  return std::nullopt;
}

std::optional<int> check_describe_target(const DescribeOptions& options, std::ostream& err) {
  if (options.target.empty()) {
    return usage(err, "describe",
                 "which StatefulSet? Run `stsresize describe NS/NAME` (`stsresize status -A` "
                 "lists those with an operation)");
  }
  if (!options.ns.empty()) {
    if (auto valid = check_namespace(options.ns); !valid) {
      return usage(err, "describe", "-n/--namespace: " + valid.error());
    }
  }
  // The rest of NS/NAME is checked where it is split (run_describe).
  if (const auto slash = options.target.find('/'); slash != std::string::npos && slash > 0) {
    if (auto valid = check_namespace(options.target.substr(0, slash)); !valid) {
      return usage(err, "describe", options.target + ": " + valid.error());
    }
  }
  return std::nullopt;
}

struct Connection {
  std::unique_ptr<HttpKubernetes> kube;
  ClusterTarget target;
};

std::expected<Connection, std::string> connect(const std::string& kubeconfig,
                                               const std::string& context) {
  auto config = load_credentials(kubeconfig, context);
  if (!config) return std::unexpected("credentials: " + config.error());
  ClusterTarget target{.default_ns = config->ns.empty() ? "default" : config->ns,
                       .server = config->server};
  auto kube = HttpKubernetes::create(*config);
  if (!kube) return std::unexpected("credentials: " + kube.error());
  target.logs = kube->get();
  return Connection{std::move(*kube), std::move(target)};
}

void add_connection_flags(CLI::App* command, std::string& kubeconfig, std::string& context) {
  command->add_option("--kubeconfig", kubeconfig,
                      "Kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  command->add_option("--context", context, "Kubeconfig context (default: current-context)");
}

}  // namespace

CLI::App* add_status_command(CLI::App& app, StatusOptions& options) {
  CLI::App* status = app.add_subcommand("status", std::string{kStatusSummary});
  status->footer(std::string{kStatusFooter});
  status->add_option("statefulset", options.statefulset, "Only this StatefulSet")->type_name("STS");
  add_connection_flags(status, options.kubeconfig, options.context);
  status->add_option("-n,--namespace", options.ns, "Namespace (default: the kubeconfig context's)");
  status->add_flag("-A,--all-namespaces", options.all_namespaces, "Every namespace");
  status
      ->add_option("-o,--output", options.output,
                   "wide (more columns), json or yaml; default: a table")
      ->type_name("FORMAT");
  status->add_flag("-w,--watch", options.watch,
                   "After the table, print each row again when it changes, until interrupted");
  return status;
}

CLI::App* add_describe_command(CLI::App& app, DescribeOptions& options) {
  CLI::App* describe = app.add_subcommand("describe", std::string{kDescribeSummary});
  describe->footer(std::string{kDescribeFooter});
  describe->add_option("statefulset", options.target, "The StatefulSet: NS/NAME, or NAME with -n")
      ->type_name("NS/STS");
  add_connection_flags(describe, options.kubeconfig, options.context);
  describe->add_option("-n,--namespace", options.ns,
                       "Namespace (default: the kubeconfig context's)");
  describe
      ->add_option("--journal", options.journal,
                   "The controller's journal (SQLite), opened read-only: every step with its time")
      ->type_name("FILE");
  return describe;
}

int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err) {
  if (auto refused = check_status_options(options, err)) return *refused;
  auto connection = connect(options.kubeconfig, options.context);
  if (!connection) return usage(err, "status", connection.error());
  SystemClock clock;
  if (options.watch) {
    return watch_status(*connection->kube, connection->target, options, [&] { return clock.now(); },
                        out, err, {});
  }
  return run_status(*connection->kube, connection->target, options, clock.now(), out, err);
}

namespace {

struct StatusRead {
  std::string ns;  // "" with -A
  std::vector<StatusRow> rows;
  bool statefulset_exists = true;    // the named StatefulSet (or its kept definition) was found
  std::string statefulsets_version;  // of the StatefulSets read: where -w's watch starts
};

// The progress of each running copy among the pods `owned` selects in `ns`, by namespace and
// Job name: one list of pods and one read of each running copy's log (the last lines). What
// cannot be read is left out: the column then says "-", as for a copy that has said nothing yet.
std::map<std::pair<std::string, std::string>, CopyProgress> read_copies_progress(
    Kubernetes& kube, PodLogs& logs, const std::string& ns, const ListOptions& owned) {
  std::map<std::pair<std::string, std::string>, CopyProgress> out;
  auto pods = list_all(kube, Kind::Pod, ns, owned);
  if (!pods) return out;
  for (const RunningCopy& copy : running_copies(pods->items)) {
    auto progress = read_copy_progress(logs, copy);
    if (progress && *progress) out[{copy.ns, copy.job}] = **progress;
  }
  return out;
}

// One reading of the cluster; the exit code when it could not be made.
std::expected<StatusRead, int> read_status(Kubernetes& kube, const ClusterTarget& cluster,
                                           const StatusOptions& options, std::ostream& err) {
  StatusRead read;
  const std::string& ns = read.ns =
      options.all_namespaces ? "" : (options.ns.empty() ? cluster.default_ns : options.ns);
  std::vector<Json> statefulsets;
  ListOptions owned;
  owned.label_selector = std::string{kStatefulSetLabel};
  if (!options.statefulset.empty()) {
    owned.label_selector += "=" + naming::label_value(options.statefulset);
    auto one = kube.get(ObjectRef{Kind::StatefulSet, ns, options.statefulset});
    if (one) {
      read.statefulsets_version = k8s::resource_version(*one).value_or("");
      statefulsets.push_back(std::move(*one));
    } else if (one.error().code != KubeErrorCode::NotFound) {
      return std::unexpected(cluster_error(err, "status", cluster,
                                           "read statefulset " + ns + "/" + options.statefulset,
                                           one.error()));
    }
  } else {
    auto all = list_all(kube, Kind::StatefulSet, ns, {});
    if (!all) {
      return std::unexpected(
          cluster_error(err, "status", cluster, "list statefulsets " + where(ns), all.error()));
    }
    read.statefulsets_version = all->resource_version;
    statefulsets = std::move(all->items);
  }
  auto claims = list_all(kube, Kind::PersistentVolumeClaim, ns, owned);
  if (!claims) {
    return std::unexpected(cluster_error(
        err, "status", cluster, "list persistentvolumeclaims " + where(ns), claims.error()));
  }
  auto jobs = list_all(kube, Kind::Job, ns, owned);
  if (!jobs) {
    return std::unexpected(
        cluster_error(err, "status", cluster, "list jobs " + where(ns), jobs.error()));
  }
  // Definitions kept while an explicit request re-creates a StatefulSet (absent meanwhile).
  auto definitions = list_all(kube, Kind::ConfigMap, ns, owned);
  if (!definitions) {
    return std::unexpected(
        cluster_error(err, "status", cluster, "list configmaps " + where(ns), definitions.error()));
  }
  read.rows = status_rows(statefulsets, claims->items, jobs->items, definitions->items);
  const bool copying = std::ranges::any_of(read.rows, [](const StatusRow& row) {
    return std::ranges::any_of(row.jobs, [](const JobView& job) { return job.state == "Running"; });
  });
  if (copying && cluster.logs != nullptr) {
    const auto progress = read_copies_progress(kube, *cluster.logs, ns, owned);
    for (StatusRow& row : read.rows) {
      for (JobView& job : row.jobs) {
        if (const auto found = progress.find({row.ns, job.name}); found != progress.end()) {
          job.progress = found->second;
        }
      }
    }
  }
  if (!options.statefulset.empty()) {
    std::erase_if(read.rows, [&](const StatusRow& row) { return row.name != options.statefulset; });
    read.statefulset_exists = !statefulsets.empty() || !read.rows.empty();
  }
  return read;
}

// A row's table line, less what changes by itself (STEP AGE): -w prints a row again when this
// changes.
std::string watched_content(const StatusRow& row, const StatusOptions& options) {
  StatusRow still = row;
  still.since.reset();
  return render_status_table(
      std::span<const StatusRow>{&still, 1}, TimePoint{},
      {.all_namespaces = options.all_namespaces, .wide = options.output == "wide"});
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return lines;
}

}  // namespace

int run_status(Kubernetes& kube, const ClusterTarget& cluster, const StatusOptions& options,
               TimePoint now, std::ostream& out, std::ostream& err) {
  if (auto refused = check_status_options(options, err)) return *refused;
  const std::string& output = options.output;
  auto read = read_status(kube, cluster, options, err);
  if (!read) return read.error();
  const std::string& ns = read->ns;
  const std::vector<StatusRow>& rows = read->rows;
  if (!read->statefulset_exists) {
    return usage(err, "status",
                 "no StatefulSet " + options.statefulset + " in namespace " + ns +
                     " (`stsresize status -A` lists every StatefulSet with an operation)");
  }
  if (output == "json") {
    out << render_status_json(rows, now);
  } else if (output == "yaml") {
    out << render_status_yaml(rows, now);
  } else if (rows.empty()) {
    if (options.watch) return kExitOk;  // kubectl get -w prints nothing either
    if (!options.statefulset.empty()) {
      out << "No resize operation on StatefulSet " << ns << "/" << options.statefulset
          << " (it has no stsresize.dev annotation).\n";
    } else {
      out << "No resize operations found " << where(ns) << ".\n";
    }
  } else {
    out << render_status_table(
        rows, now, {.all_namespaces = options.all_namespaces, .wide = output == "wide"});
  }
  return kExitOk;
}

int watch_status(Kubernetes& kube, const ClusterTarget& cluster, const StatusOptions& options,
                 const std::function<TimePoint()>& now, std::ostream& out, std::ostream& err,
                 std::stop_token stop) {
  if (auto refused = check_status_options(options, err)) return *refused;
  auto read = read_status(kube, cluster, options, err);
  if (!read) return read.error();
  if (!read->statefulset_exists) return run_status(kube, cluster, options, now(), out, err);
  std::map<std::string, std::string> shown;  // "ns/name" -> watched_content
  const auto key = [](const StatusRow& row) { return row.ns + "/" + row.name; };
  std::vector<StatusRow> printed;  // the rows printed last: the widths of the columns
  for (;;) {
    std::vector<std::size_t> changed;  // indexes into read->rows
    for (std::size_t i = 0; i < read->rows.size(); ++i) {
      const StatusRow& row = read->rows[i];
      std::string content = watched_content(row, options);
      auto [at, added] = shown.try_emplace(key(row), content);
      if (added || at->second != content) {
        at->second = std::move(content);
        changed.push_back(i);
      }
    }
    if (!changed.empty()) {
      // Laid out with the header and every row printed before, so that a line lines up with
      // those above it: a column is never narrower than it was.
      std::vector<StatusRow> laid = printed;
      for (std::size_t i : changed) laid.push_back(read->rows[i]);
      const std::vector<std::string> lines = split_lines(render_status_table(
          laid, now(),
          {.all_namespaces = options.all_namespaces, .wide = options.output == "wide"}));
      if (printed.empty()) out << lines.front() << "\n";
      for (std::size_t k = 1 + printed.size(); k < lines.size(); ++k) out << lines[k] << "\n";
      out << std::flush;
      for (std::size_t i : changed) {
        StatusRow kept = read->rows[i];
        kept.operation.reset();  // the table's cells only
        kept.jobs.clear();
        kept.backup_claims.clear();
        printed.push_back(std::move(kept));
      }
      // The last rows printed are enough to keep the columns steady; all of them would make a
      // long watch lay out ever more rows at each change.
      constexpr std::size_t kRowsKept = 256;
      if (printed.size() > kRowsKept) {
        printed.erase(printed.begin(), printed.end() - static_cast<std::ptrdiff_t>(kRowsKept));
      }
    }
    // Until a StatefulSet changes (its annotations carry the operation), or kStatusResync for
    // what they do not carry (a Job failing, a backup claim created).
    WatchOptions watch;
    watch.resource_version = read->statefulsets_version;
    watch.timeout = kStatusResync;
    watch.allow_bookmarks = false;
    if (!options.statefulset.empty()) {
      watch.field_selector = "metadata.name=" + options.statefulset;
    }
    auto waited = kube.watch(Kind::StatefulSet, read->ns, watch, stop,
                             [](const WatchEvent&) { return false; });
    if (stop.stop_requested()) return kExitOk;
    if (!waited && waited.error().code != KubeErrorCode::Gone) {
      return cluster_error(err, "status", cluster, "watch statefulsets " + where(read->ns),
                           waited.error());
    }
    read = read_status(kube, cluster, options, err);
    if (!read) return read.error();
  }
}

int run_describe(const DescribeOptions& options, std::ostream& out, std::ostream& err) {
  if (auto refused = check_describe_target(options, err)) return *refused;
  std::unique_ptr<SqliteJournal> journal;
  if (!options.journal.empty()) {
    auto opened = SqliteJournal::open_read_only(options.journal);
    if (!opened) {
      return usage(err, "describe",
                   "cannot read journal " + options.journal + ": " + opened.error().message +
                       " (it is the file `stsresize run --journal` writes; leave --journal out "
                       "to describe from the cluster alone)");
    }
    journal = std::move(*opened);
  }
  auto connection = connect(options.kubeconfig, options.context);
  if (!connection) return usage(err, "describe", connection.error());
  SystemClock clock;
  return run_describe(*connection->kube, journal.get(), connection->target, options, clock.now(),
                      out, err);
}

int run_describe(Kubernetes& kube, Journal* journal, const ClusterTarget& cluster,
                 const DescribeOptions& options, TimePoint now, std::ostream& out,
                 std::ostream& err) {
  if (auto refused = check_describe_target(options, err)) return *refused;
  std::string ns = options.ns.empty() ? cluster.default_ns : options.ns;
  std::string name = options.target;
  if (const auto slash = options.target.find('/'); slash != std::string::npos) {
    const std::string given_ns = options.target.substr(0, slash);
    name = options.target.substr(slash + 1);
    if (given_ns.empty() || name.empty() || name.find('/') != std::string::npos) {
      return usage(err, "describe",
                   "\"" + options.target + "\" is not NS/NAME: run `stsresize describe shop/web`");
    }
    if (!options.ns.empty() && options.ns != given_ns) {
      return usage(err, "describe",
                   "-n " + options.ns + " contradicts " + options.target +
                       ": give the namespace once, as NS/NAME or with -n");
    }
    ns = given_ns;
  }
  if (auto valid = check_statefulset_name(name); !valid) {
    return usage(err, "describe", options.target + ": " + valid.error());
  }

  DescribeInput input;
  auto statefulset = kube.get(ObjectRef{Kind::StatefulSet, ns, name});
  if (!statefulset && statefulset.error().code == KubeErrorCode::NotFound) {
    // An explicit request re-creating it: the definition is in a ConfigMap meanwhile.
    const std::string config_map = naming::definition_config_map(name);
    auto kept = kube.get(ObjectRef{Kind::ConfigMap, ns, config_map});
    if (!kept && kept.error().code != KubeErrorCode::NotFound) {
      return cluster_error(err, "describe", cluster, "read configmap " + ns + "/" + config_map,
                           kept.error());
    }
    auto definition = kept ? definition_from_config_map(*kept, ns, name)
                           : std::expected<Json, std::string>{std::unexpected("absent")};
    if (!definition) {
      return usage(err, "describe",
                   "no StatefulSet " + name + " in namespace " + ns +
                       ", and no definition of it being re-created (ConfigMap " + config_map +
                       "): `stsresize status -A` lists every StatefulSet with an operation");
    }
    statefulset = std::move(*definition);
    input.definition_config_map = config_map;
  }
  if (!statefulset) {
    return cluster_error(err, "describe", cluster, "read statefulset " + ns + "/" + name,
                         statefulset.error());
  }
  input.statefulset = std::move(*statefulset);

  ListOptions owned;
  owned.label_selector = std::string{kStatefulSetLabel} + "=" + naming::label_value(name);
  auto claims = list_all(kube, Kind::PersistentVolumeClaim, ns, owned);
  if (!claims) {
    return cluster_error(err, "describe", cluster, "list persistentvolumeclaims " + where(ns),
                         claims.error());
  }
  auto jobs = list_all(kube, Kind::Job, ns, owned);
  if (!jobs) return cluster_error(err, "describe", cluster, "list jobs " + where(ns), jobs.error());
  ListOptions about;
  about.field_selector = "involvedObject.kind=StatefulSet,involvedObject.name=" + name;
  auto events = list_all(kube, Kind::Event, ns, about);
  if (!events) {
    return cluster_error(err, "describe", cluster, "list events " + where(ns), events.error());
  }
  // The replica claims a lost-volume recovery created afresh carry no label of ours: one list of
  // the namespace's claims, kept by name (<template>-<name>-<ordinal>) and annotation.
  auto every_claim = list_all(kube, Kind::PersistentVolumeClaim, ns, {});
  if (!every_claim) {
    return cluster_error(err, "describe", cluster, "list persistentvolumeclaims " + where(ns),
                         every_claim.error());
  }
  if (auto templates = k8s::claim_templates(input.statefulset); templates) {
    for (Json& claim : every_claim->items) {
      auto from = k8s::annotation(claim, kRecoveredFromAnnotation);
      if (!from || !from->has_value()) continue;
      const std::string claim_name = k8s::name(claim).value_or("");
      const bool of_this_set = std::ranges::any_of(*templates, [&](const k8s::ClaimTemplate& t) {
        const std::string prefix = t.name + "-" + name + "-";
        return claim_name.starts_with(prefix) && claim_name.size() > prefix.size() &&
               std::ranges::all_of(claim_name.substr(prefix.size()),
                                   [](char c) { return c >= '0' && c <= '9'; });
      });
      if (of_this_set) input.recovered.push_back(std::move(claim));
    }
  }
  if (cluster.logs != nullptr) {
    for (auto& [key, progress] : read_copies_progress(kube, *cluster.logs, ns, owned)) {
      input.progress[key.second] = progress;
    }
  }
  input.claims = std::move(claims->items);
  input.jobs = std::move(jobs->items);
  input.events = std::move(events->items);
  // The planned source claims not recorded deleted, as they are now: one may be going already.
  if (auto op = read_operation(input.statefulset); op && op->has_value()) {
    input.sources.emplace();
    for (const ClaimPlan& planned : (*op)->claims) {
      if (planned.source_deleted) continue;
      auto source = kube.get(ObjectRef{Kind::PersistentVolumeClaim, ns, planned.claim});
      if (!source && source.error().code == KubeErrorCode::NotFound) continue;
      if (!source) {
        return cluster_error(err, "describe", cluster,
                             "read persistentvolumeclaim " + ns + "/" + planned.claim,
                             source.error());
      }
      input.sources->push_back(std::move(*source));
    }
  }

  if (journal != nullptr) {
    auto records = journal->query({.ns = ns, .statefulset = name});
    const std::string journal_name = options.journal.empty() ? "journal" : options.journal;
    if (!records) {
      return usage(err, "describe",
                   "cannot read journal " + journal_name + ": " + records.error().message);
    }
    input.journal = journal_name;
    input.journal_records = std::move(*records);
  }
  out << render_describe(input, now);
  return kExitOk;
}

}  // namespace stsresize::cli
