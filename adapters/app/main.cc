// The stsresize executable; the command line is adapters/app/cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "adapters/app/cli.h"
#include "adapters/app/crash_handler.h"

int main(int argc, char** argv) {
  stsresize::crash::install_handler();
  return stsresize::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                 std::cerr);
}
