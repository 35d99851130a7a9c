#pragma once
// The stsresize command line: one CLI11 app whose subcommands live in one file each
// (replay_command.h, version_command.h). main() only forwards argv here, so that the whole
// command line, help texts and exit codes included, is testable without a process.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/app/completion.h"

namespace stsresize::cli {

// The names the executable answers to (argv[0]'s base name; a link to it is installed under
// each): the kubectl plugin, which kubectl runs for `kubectl stsresize ...`, and its completion,
// which kubectl runs to complete `kubectl stsresize ...` (as `__complete`).
inline constexpr std::string_view kProgram = "stsresize";
inline constexpr std::string_view kPluginProgram = "kubectl-stsresize";
inline constexpr std::string_view kPluginCompletionProgram = "kubectl_complete-stsresize";

// `args` excludes the program name. Help and errors go to `out` / `err`; returns the exit code
// (adapters/app/exit_codes.h): usage errors are 2 whatever CLI11 would return. `invoked_as` is
// argv[0]'s base name; `statefulsets` lists the StatefulSets that `__complete` offers.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            std::string_view invoked_as = kProgram,
            const ListStatefulSets& statefulsets = list_statefulsets_from_cluster);

}  // namespace stsresize::cli
