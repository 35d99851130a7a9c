#include "adapters/app/namespaces.h"

#include "engine/naming.h"

namespace stsresize::cli {

std::expected<void, std::string> check_namespace(std::string_view value) {
  if (naming::is_dns1123_label(value)) return {};
  return std::unexpected("\"" + std::string{value} +
                         "\" is not a namespace name (at most 63 lowercase letters, digits and "
                         "'-', starting and ending with a letter or digit, e.g. shop)");
}

}  // namespace stsresize::cli
