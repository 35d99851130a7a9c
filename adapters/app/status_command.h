#pragma once
// `stsresize status` and `stsresize describe`: what the resizes of the cluster's StatefulSets
// are doing, read from the cluster (the stsresize.dev annotations, the copy Jobs and backup
// claims labelled stsresize.dev/statefulset, Events) and, for describe, the journal. Read-only.
// The renderings are status_view.h. Exit codes (exit_codes.h): 0 shown, 2 usage error or a
// StatefulSet / journal that cannot be found or read, 4 the API server could not be reached
// or refused to answer.
#include <functional>
#include <ostream>
#include <stop_token>
#include <string>

#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"
#include "engine/ports/pod_logs.h"
#include "engine/time.h"

namespace CLI {
class App;
}

namespace stsresize::cli {

// As typed. Empty strings mean "not given".
struct StatusOptions {
  std::string kubeconfig{};
  std::string context{};
  std::string ns{};  // -n; default: the kubeconfig context's namespace
  bool all_namespaces = false;
  std::string statefulset{};  // one StatefulSet only
  std::string output{};       // "" (table), "wide", "json", "yaml"
  bool watch = false;         // -w: then a line per row that changes
};

struct DescribeOptions {
  std::string kubeconfig{};
  std::string context{};
  std::string ns{};
  std::string target{};   // "NS/NAME" or "NAME"
  std::string journal{};  // the controller's journal file, read-only
};

// The cluster as the commands name it in messages, and its default namespace.
struct ClusterTarget {
  std::string default_ns = "default";
  std::string server{};  // "https://127.0.0.1:6443", for messages
  // Where a running copy's progress is read (the end of its pod's log); nullptr: not read, no
  // PROGRESS.
  PodLogs* logs = nullptr;
};

CLI::App* add_status_command(CLI::App& app, StatusOptions& options);
CLI::App* add_describe_command(CLI::App& app, DescribeOptions& options);

// Load the credentials, connect (HttpKubernetes), read, print; return the exit code.
int run_status(const StatusOptions& options, std::ostream& out, std::ostream& err);
int run_describe(const DescribeOptions& options, std::ostream& out, std::ostream& err);

// The same on any Kubernetes port (tests use FakeKubernetes) at time `now`. `journal` is the
// journal opened from options.journal (nullptr without --journal).
int run_status(Kubernetes& kube, const ClusterTarget& cluster, const StatusOptions& options,
               TimePoint now, std::ostream& out, std::ostream& err);
// -w: the table, then, each time the StatefulSets change (a watch) or kStatusResync has passed,
// the rows whose line changed (STEP AGE aside), without the header, as `kubectl get -w` does;
// until `stop` (the command: until interrupted) or the cluster cannot be read (exit 4). Each
// reading is the four lists of `status`: one per StatefulSet change, at most one per
// kStatusResync when nothing changes.
inline constexpr Duration kStatusResync = std::chrono::seconds{10};
int watch_status(Kubernetes& kube, const ClusterTarget& cluster, const StatusOptions& options,
                 const std::function<TimePoint()>& now, std::ostream& out, std::ostream& err,
                 std::stop_token stop);
int run_describe(Kubernetes& kube, Journal* journal, const ClusterTarget& cluster,
                 const DescribeOptions& options, TimePoint now, std::ostream& out,
                 std::ostream& err);

}  // namespace stsresize::cli
