// hook.h, built with -DSTSRESIZE_FAILPOINT=OFF: no failpoint code, nothing wrapped. The
// variable's name is spelled here rather than taken from failpoint.h, which this build leaves
// out.
#include <cstdlib>
#include <string_view>

#include "adapters/failpoint/hook.h"

namespace stsresize::test_hook {

std::expected<Wrap, std::string> from_environment() {
  constexpr std::string_view kVariable = "STSRESIZE_FAILPOINT";
  const char* value = std::getenv(kVariable.data());
  // Empty means disarmed in the build with the hook too.
  if (value != nullptr && *value != '\0') {
    return std::unexpected(std::string{kVariable} + "='" + value +
                           "': this binary was built without the failpoint test hook "
                           "(cmake -DSTSRESIZE_FAILPOINT=ON adds it); unset the variable");
  }
  return [](Kubernetes& kube, Journal& journal) { return Ports{&kube, &journal, nullptr}; };
}

}  // namespace stsresize::test_hook
