#pragma once
// The one seam between `stsresize run` and the failpoint test hook (failpoint.h), so that a
// binary built without it (cmake -DSTSRESIZE_FAILPOINT=OFF, the default for Release and the
// deploy/ image) links none of its code. CMake compiles one of two implementations:
//   hook.cc      reads STSRESIZE_FAILPOINT and wraps the controller's ports as it says;
//   hook_off.cc  wraps nothing, and refuses a set STSRESIZE_FAILPOINT: a crash test run on
//                such a binary must fail at once, not pass by never crashing.
// No name declared here says "failpoint": `nm -C stsresize | grep -i failpoint` stays empty
// in a build without it.
#include <expected>
#include <functional>
#include <memory>
#include <string>

#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::test_hook {

// The ports the controller is given: the ones passed in, or decorators around them that
// `owner` keeps alive.
struct Ports {
  Kubernetes* kube = nullptr;
  Journal* journal = nullptr;
  std::shared_ptr<void> owner;
};
using Wrap = std::function<Ports(Kubernetes& kube, Journal& journal)>;

// Reads the environment; `stsresize run` calls it before anything starts. An error is a
// message for stderr (exit 2): a malformed value, or a value set on a binary built without
// the hook. Otherwise a function that wraps the controller's ports (or passes them through).
std::expected<Wrap, std::string> from_environment();

}  // namespace stsresize::test_hook
