#pragma once
// What becomes of operations, for whoever counts them (the controller's /metrics): told by the
// reconciler when an operation begins, leaves a phase, is looked at, and ends. Called on the
// reconciling thread; an implementation must be thread-safe and must not block.
#include <cstdint>
#include <string>

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
  std::string id;                 // the operation's
  Path path = Path::Undecided;    // a resize's, once planned
  std::int64_t bytes_copied = 0;  // the bytes of every verified copy (a tree's bytes each)
};

// A transition: the operation left `phase` after `took` in it (as journaled).
struct PhaseLeft {
  OperationKind kind = OperationKind::Resize;
  Phase phase = Phase::Pending;
  Duration took{0};
};

// An operation under way, as a reconcile found its StatefulSet: `ready` Ready replicas of the
// `wanted` ones (a resize: the replicas it started with; a drain or a recovery: spec.replicas).
struct OperationSeen {
  OperationKind kind = OperationKind::Resize;
  std::string id;
  std::int32_t ready = 0;
  std::int32_t wanted = 0;
  TimePoint now{};
};

class OperationListener {
 public:
  virtual ~OperationListener() = default;
  virtual void started(OperationKind kind) = 0;
  virtual void left(const PhaseLeft& left) = 0;
  virtual void seen(const OperationSeen& seen) = 0;
  virtual void ended(const OperationEnded& ended) = 0;
};

// Tells nobody: the default.
class NoOperationListener final : public OperationListener {
 public:
  void started(OperationKind) override {}
  void left(const PhaseLeft&) override {}
  void seen(const OperationSeen&) override {}
  void ended(const OperationEnded&) override {}
};

}  // namespace stsresize
