#pragma once
// The stsresize command line: one CLI11 app whose subcommands live in one file each
// (replay_command.h, version_command.h). main() only forwards argv here, so that the whole
// command line, help texts and exit codes included, is testable without a process.
#include <ostream>
#include <string>
#include <vector>

namespace stsresize::cli {

// `args` excludes the program name. Help and errors go to `out` / `err`; returns the exit code
// (adapters/app/exit_codes.h): usage errors are 2 whatever CLI11 would return.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace stsresize::cli
