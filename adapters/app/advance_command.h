#pragma once
// `stsresize advance NS/STS --approve`: lets an operation held by stsresize.dev/mode (manual or
// step) take its next transition. `--abort`: rolls an operation back onto its source claims
// (ScalingBack, then Failed) while none of them has been deleted. `--retry`: starts a Failed
// operation whose source claims are intact again, as a new operation. `--skip-step`: ends an
// operation in CleaningUp as Completed, keeping its remaining backup claims and copy Jobs (the
// only step that is safe to skip, engine/actions/rules.h). It talks to the controller
// only through the StatefulSet: it writes the stsresize.dev/advance annotation
// (engine/actions/request.h) with the resourceVersion it read, and the controller consumes it on
// the next watch event, journals it as an OperatorAction with the caller's identity and moves on.
// Exit codes (adapters/app/exit_codes.h): 0 written (or, --dry-run, would be), 2 usage error or
// unusable credentials, 4 the API server could not be reached or failed the request, 5 refused (the
// message says why and what to run instead).
#include <expected>
#include <memory>
#include <ostream>
#include <string>

#include "adapters/app/copy_job_flags.h"
#include "engine/actions/request.h"
#include "engine/ports/kubernetes.h"
#include "engine/time.h"

namespace CLI {
class App;
}

namespace stsresize::cli {

struct AdvanceOptions {
  std::string target{};  // "ns/name", or "name" in the kubeconfig context's namespace
  bool approve = false;
  bool abort = false;
  bool retry = false;
  bool skip_step = false;
  bool dry_run = false;
  std::string as{};  // the operator recorded; default: AdvanceCaller::identity
  std::string kubeconfig{};
  std::string context{};
  // --apply-locally and its flags (adapters/app/apply_locally.h).
  bool apply_locally = false;
  std::string journal{};
  std::string timeout = "30m";
  std::string poll_interval = "2s";
  std::string sync_image{};
  CopyJobFlags copy_job{};
  std::string leader_elect_namespace{};
  std::string leader_elect_id = "stsresize-leader";
};

// The subcommand and its own flags; --apply-locally adds its flags beside them
// (adapters/app/apply_locally.h), and the CLI (adapters/app/cli.cc) chooses which runs.
CLI::App* add_advance_command(CLI::App& app, AdvanceOptions& options);
// The action the flags ask for (exactly one is set once the flags are checked).
Action action_of(const AdvanceOptions& options);

// What the command needs from outside the cluster: who, when, a nonce, and the namespace for a
// target without one. Tests pass fixed values.
struct AdvanceCaller {
  // The user the API server authenticates (SelfSubjectReview), else the kubeconfig user;
  // options.as overrides it.
  std::string identity;
  std::string default_namespace = "default";
  TimePoint now;
  std::string nonce;
};
int run_advance(Kubernetes& kube, const AdvanceOptions& options, const AdvanceCaller& caller,
                std::ostream& out, std::ostream& err);

// The API server and the caller, from the options' credentials (kubeconfig, $KUBECONFIG,
// in-cluster, ~/.kube/config), once the flags and namespaces are checked; else the exit code,
// the reason said on `err`.
struct AdvanceConnection {
  std::unique_ptr<Kubernetes> kube;
  AdvanceCaller caller;
};
std::expected<AdvanceConnection, int> connect_advance(const AdvanceOptions& options,
                                                      std::ostream& err);

}  // namespace stsresize::cli
