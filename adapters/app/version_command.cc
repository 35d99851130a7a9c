#include "adapters/app/version_command.h"

#include <CLI/CLI.hpp>

#include "adapters/app/exit_codes.h"

#ifndef STSRESIZE_VERSION
#error "STSRESIZE_VERSION must be defined by the build (adapters/CMakeLists.txt)"
#endif

namespace stsresize::cli {

std::string_view version() {
  return STSRESIZE_VERSION;
}

CLI::App* add_version_command(CLI::App& app) {
  return app.add_subcommand("version", "Print the version of stsresize");
}

int run_version(std::ostream& out) {
  out << "stsresize " << version() << "\n";
  return kExitOk;
}

}  // namespace stsresize::cli
