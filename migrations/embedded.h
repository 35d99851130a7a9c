#pragma once
// The SQL migrations of the journal database, compiled into the binary from
// migrations/NNNN_<name>.sql (see migrations/CMakeLists.txt), so a deployed stsresize never
// depends on files next to it.
#include <span>
#include <string_view>

namespace stsresize {

struct Migration {
  int version;            // NNNN of the file name: 1, 2, 3...
  std::string_view name;  // <name> of the file name, e.g. "journal"
  std::string_view sql;   // the file's bytes, verbatim (several statements)
};

// Every embedded migration, sorted by version. The build refuses a file set whose versions do
// not run 1, 2, 3... without gap or duplicate, so callers may rely on version == index + 1.
std::span<const Migration> embedded_migrations();

}  // namespace stsresize
