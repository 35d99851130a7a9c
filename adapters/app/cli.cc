#include "adapters/app/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "adapters/app/advance_command.h"
#include "adapters/app/apply_locally.h"
#include "adapters/app/completion.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/journal_command.h"
#include "adapters/app/replay_command.h"
#include "adapters/app/run_command.h"
#include "adapters/app/status_command.h"
#include "adapters/app/version_command.h"

namespace stsresize::cli {

namespace {

constexpr const char* kFooter =
    "Run `stsresize <command> --help` for a command's flags and examples.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  replay: the journal is inconsistent (or an export's checksum does not match)\n"
    "  2  usage error, an input that cannot be read, or a refused journal import\n"
    "  3  run, advance --apply-locally: the leader lease was lost\n"
    "  4  status, describe, advance: the API server could not be reached, or refused to answer\n"
    "  5  advance: refused (the message says why and what to run instead)\n"
    "  6  advance --apply-locally: stopped before the operation rested (--timeout, a signal)";

constexpr const char* kCompletionFooter =
    "Prints a script that completes stsresize's commands, flags and StatefulSet names (read\n"
    "from the cluster, with the command's --kubeconfig, --context and -n) in the shell. The\n"
    "kubectl plugin completes through kubectl (v1.26 or later) once kubectl_complete-stsresize\n"
    "is on PATH beside kubectl-stsresize: no script is needed for it.\n"
    "\n"
    "Examples:\n"
    "  source <(stsresize completion bash)            # in ~/.bashrc\n"
    "  source <(stsresize completion zsh)             # in ~/.zshrc, after compinit\n"
    "  stsresize completion bash > /etc/bash_completion.d/stsresize\n"
    "\n"
    "Exit codes:\n"
    "  0  printed\n"
    "  2  usage error (a shell other than bash or zsh)";

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            std::string_view invoked_as, const ListStatefulSets& statefulsets) {
  // kubectl runs its plugin's completion as kubectl_complete-stsresize WORD... PARTIAL.
  const bool completing =
      invoked_as == kPluginCompletionProgram || (!args.empty() && args.front() == "__complete");
  const std::string program = invoked_as == kPluginProgram || invoked_as == kPluginCompletionProgram
                                  ? "kubectl stsresize"
                                  : std::string{kProgram};
  CLI::App app{
      "stsresize resizes the volumes of Kubernetes StatefulSets safely: scale down, "
      "back up, recreate the claims, restore, scale up.",
      program};
  app.footer(kFooter);
  app.require_subcommand(1);

  ReplayOptions replay_options;
  JournalOptions journal_options;
  RunFlags run_flags;
  CLI::App* run = add_run_command(app, run_flags);
  StatusOptions status_options;
  DescribeOptions describe_options;
  CLI::App* status = add_status_command(app, status_options);
  CLI::App* describe = add_describe_command(app, describe_options);
  CLI::App* replay = add_replay_command(app, replay_options);
  CLI::App* version = add_version_command(app);
  CLI::App* journal = add_journal_command(app, journal_options);
  AdvanceOptions advance_options;
  CLI::App* advance = add_advance_command(app, advance_options);
  add_apply_locally_flags(*advance, advance_options);
  std::string shell;
  CLI::App* completion =
      app.add_subcommand("completion", "Print a shell completion script (bash or zsh)");
  completion->footer(kCompletionFooter);
  completion->add_option("shell", shell, "bash or zsh")->required()->type_name("SHELL");

  if (completing) {
    std::vector<std::string> words(args.begin() + (invoked_as == kPluginCompletionProgram ? 0 : 1),
                                   args.end());
    if (words.empty()) words.push_back("");
    print_completion(complete(app, words, statefulsets), out);
    return kExitOk;
  }

  // CLI11 reads `--flag=` (an empty value) as `--flag` and takes the next argument as its
  // value, so `--journal= --step` would open a journal named "--step": refuse it first.
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() > 3 && arg.starts_with("--") && arg.ends_with("=") &&
        arg.find('=') == arg.size() - 1) {
      const std::string flag = arg.substr(0, arg.size() - 1);
      err << "stsresize: " << arg << " gives " << flag << " an empty value: give it one (" << flag
          << "=VALUE or " << flag << " VALUE) or leave it out\n";
      return kExitUsage;
    }
  }

  // CLI11 parses a reversed vector (it pops arguments off the back).
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help, out, err);
  } catch (const CLI::ParseError& error) {
    app.exit(error, out, err);
    return kExitUsage;
  }

  if (run->parsed()) return run_controller(run_flags, err);
  if (replay->parsed()) return run_replay(replay_options, out, err);
  if (journal->parsed()) return run_journal(journal_options, out, err);
  if (status->parsed()) return run_status(status_options, out, err);
  if (describe->parsed()) return run_describe(describe_options, out, err);
  if (version->parsed()) return run_version(out);
  if (completion->parsed()) {
    std::string script = completion_script(
        shell, invoked_as == kPluginProgram ? kPluginProgram : std::string_view{kProgram});
    if (script.empty()) {
      err << "stsresize completion: no script for the shell \"" << shell << "\": bash or zsh\n";
      return kExitUsage;
    }
    out << script;
    return kExitOk;
  }
  if (advance->parsed()) {
    auto connected = connect_advance(advance_options, err);
    if (!connected) return connected.error();
    return advance_options.apply_locally
               ? run_apply_locally(advance_options, *connected->kube, connected->caller, out, err)
               : run_advance(*connected->kube, advance_options, connected->caller, out, err);
  }
  return kExitUsage;  // unreachable: require_subcommand(1)
}

}  // namespace stsresize::cli
