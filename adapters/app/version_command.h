#pragma once
// `stsresize version`: the version CMake's project() declares.
#include <ostream>
#include <string_view>

namespace CLI {
class App;
}

namespace stsresize::cli {

std::string_view version();
CLI::App* add_version_command(CLI::App& app);
int run_version(std::ostream& out);

}  // namespace stsresize::cli
