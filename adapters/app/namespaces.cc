#include "adapters/app/namespaces.h"

#include "engine/naming.h"

#include <algorithm>

namespace stsresize::cli {

std::expected<void, std::string> check_namespace(std::string_view value) {
  if (naming::is_dns1123_label(value)) return {};
  return std::unexpected("\"" + std::string{value} +
                         "\" is not a namespace name (at most 63 lowercase letters, digits and "
                         "'-', starting and ending with a letter or digit, e.g. shop)");
}

std::expected<void, std::string> check_statefulset_name(std::string_view value) {
  bool valid = !value.empty() && value.size() <= 253;
  for (std::size_t start = 0; valid && start <= value.size();) {
    const std::size_t dot = std::min(value.find('.', start), value.size());
    valid = naming::is_dns1123_label(value.substr(start, dot - start), 253);
    start = dot + 1;
  }
  if (valid) return {};
  return std::unexpected("\"" + std::string{value} +
                         "\" is not a StatefulSet name (at most 253 lowercase letters, digits, "
                         "'-' and '.', starting and ending with a letter or digit, e.g. web)");
}

}  // namespace stsresize::cli
