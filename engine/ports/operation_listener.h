#pragma once
// What becomes of operations, for whoever counts them (the controller's /metrics): told by the
// reconciler when an operation begins and when it ends. Called on the reconciling thread; an
// implementation must be thread-safe and must not block.
#include "engine/operation.h"
#include "engine/time.h"

namespace stsresize {

struct OperationEnded {
  OperationKind kind = OperationKind::Resize;
  Phase outcome = Phase::Completed;  // Completed or Failed
  bool aborted = false;              // a person's abort
  Duration took{0};                  // from its start to its end, as journaled
  // A drain's ordinals by what became of them: drained (its claims deleted) or cancelled (kept:
  // scaled back up over, or the drain stopped).
  int ordinals_drained = 0;
  int ordinals_cancelled = 0;
};

class OperationListener {
 public:
  virtual ~OperationListener() = default;
  virtual void started(OperationKind kind) = 0;
  virtual void ended(const OperationEnded& ended) = 0;
};

// Tells nobody: the default.
class NoOperationListener final : public OperationListener {
 public:
  void started(OperationKind) override {}
  void ended(const OperationEnded&) override {}
};

}  // namespace stsresize
