// hook.h, built with -DSTSRESIZE_FAILPOINT=ON: STSRESIZE_FAILPOINT arms the failpoint.
#include "adapters/failpoint/hook.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "adapters/app/logging.h"
#include "adapters/failpoint/failpoint.h"

namespace stsresize::test_hook {

std::expected<Wrap, std::string> from_environment() {
  const char* value = std::getenv(failpoint::kEnvironmentVariable.data());
  auto armed = failpoint::parse(value == nullptr ? "" : value);
  if (!armed) return std::unexpected(armed.error());
  if (!*armed) {
    return [](Kubernetes& kube, Journal& journal) { return Ports{&kube, &journal, nullptr}; };
  }
  const failpoint::Failpoint point = **armed;
  return [point](Kubernetes& kube, Journal& journal) {
    logging::warn("failpoint armed: this process kills itself at a boundary",
                  {{"failpoint", failpoint::to_string(point)}});
    auto kill = [](const std::string& what) {
      logging::error("failpoint fired", {{"at", what}});
      spdlog::default_logger()->flush();
      failpoint::kill_this_process(what);
    };
    if (point.position == failpoint::Position::AfterJournal) {
      auto wrapped = std::make_shared<failpoint::FailpointJournal>(journal, point.boundary, kill);
      return Ports{&kube, wrapped.get(), wrapped};
    }
    if (point.position == failpoint::Position::AfterWrite) {
      auto wrapped = std::make_shared<failpoint::FailpointWrites>(kube, point.boundary, kill);
      return Ports{wrapped.get(), &journal, wrapped};
    }
    auto wrapped = std::make_shared<failpoint::FailpointKubernetes>(kube, point.boundary, kill);
    return Ports{wrapped.get(), &journal, wrapped};
  };
}

}  // namespace stsresize::test_hook
