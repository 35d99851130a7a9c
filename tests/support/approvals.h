#pragma once
// A person approving what waits (stsresize.dev/mode manual or step), for engine tests: writes
// the stsresize.dev/advance annotation as `stsresize advance --approve` would, through the
// fake's system() door (so it is neither a side effect of the engine nor subject to its
// mutation budget or faults).
#include <string>

#include "engine/actions/request.h"
#include "engine/annotations.h"
#include "tests/support/resize_world.h"

namespace stsresize::testing {

inline void set_mode(ResizeWorld& world, const std::string& mode) {
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kModeAnnotation}] = mode;
  });
}

// The transition waiting on the live StatefulSet, if any.
inline std::optional<AwaitedApproval> awaiting(const ResizeWorld& world) {
  auto sts = world.kube.get_raw(world.sts());
  if (!sts) return std::nullopt;
  auto op = read_operation(*sts);
  if (!op || !op->has_value()) return std::nullopt;
  return (*op)->awaiting;
}

// Writes an approval of what waits now (or, with `action` Abort, an abort instead of it); false
// when nothing waits.
inline bool approve_waiting(ResizeWorld& world, const std::string& by, const std::string& nonce,
                            Action action = Action::Approve) {
  auto sts = world.kube.get_raw(world.sts());
  if (!sts) return false;
  auto op = read_operation(*sts);
  if (!op || !op->has_value() || !(*op)->awaiting) return false;
  const AdvanceRequest request{action, (*op)->phase, (*op)->id, by, "2027-01-15T08:00:00Z", nonce};
  world.kube.mutate_raw(world.sts(), [&](Json& live) {
    live["metadata"]["annotations"][std::string{kAdvanceAnnotation}] =
        encode_advance_request(request);
  });
  return true;
}

}  // namespace stsresize::testing
