// The stsresize executable; the command line is adapters/app/cli.h.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/app/cli.h"
#include "adapters/app/crash_handler.h"

int main(int argc, char** argv) {
  stsresize::crash::install_handler();
  // The name it was run as: kubectl runs the plugin's links by their own names.
  std::string_view invoked_as = argc > 0 ? argv[0] : "stsresize";
  if (const auto slash = invoked_as.rfind('/'); slash != std::string_view::npos) {
    invoked_as.remove_prefix(slash + 1);
  }
  return stsresize::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                 std::cerr, invoked_as);
}
