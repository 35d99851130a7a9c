// The one translation unit that instantiates Boost.MSM.
#define BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS
#define BOOST_MPL_LIMIT_VECTOR_SIZE 50
#define BOOST_MPL_LIMIT_MAP_SIZE 50
#include "states/machine.h"

#include <array>
#include <boost/msm/back/state_machine.hpp>
#include <boost/msm/front/functor_row.hpp>
#include <boost/msm/front/state_machine_def.hpp>
#include <exception>

namespace stsresize {

namespace {

namespace msm = boost::msm;
namespace mpl = boost::mpl;
using msm::front::none;
using msm::front::Row;

// Events
struct StartMeasuring {};
struct StartPlanning {};
struct StartTemplateUpdate {};
struct PlannedCopy {};
struct PlannedPreCopy {};
struct PlannedExpand {};
struct StepDone {};
struct CriticalError {
  bool sources_intact = true;
};
struct ScaleBackDone {};
struct Abort {
  bool sources_intact = true;
};
struct Skip {};
struct Resume {
  std::optional<Phase> failed_in;
};
struct BackupStale {};
struct RecreateAgain {};
struct StartDrain {};
struct RollOn {};
struct StartRecovery {};
struct NodeReturned {
  bool sources_intact = true;
};
struct Reseed {};

// States: one per Phase.
template <Phase P>
struct PhaseState : msm::front::state<> {
  static constexpr Phase phase = P;
};
using Pending = PhaseState<Phase::Pending>;
using Measuring = PhaseState<Phase::Measuring>;
using UpdatingTemplate = PhaseState<Phase::UpdatingTemplate>;
using Planning = PhaseState<Phase::Planning>;
using PreCopying = PhaseState<Phase::PreCopying>;
using ScalingDown = PhaseState<Phase::ScalingDown>;
using BackingUp = PhaseState<Phase::BackingUp>;
using Recreating = PhaseState<Phase::Recreating>;
using Restoring = PhaseState<Phase::Restoring>;
using ScalingUp = PhaseState<Phase::ScalingUp>;
using CleaningUp = PhaseState<Phase::CleaningUp>;
using Expanding = PhaseState<Phase::Expanding>;
using ScalingBack = PhaseState<Phase::ScalingBack>;
using StoppingReplica = PhaseState<Phase::StoppingReplica>;
using StartingReplica = PhaseState<Phase::StartingReplica>;
using Draining = PhaseState<Phase::Draining>;
using DeletingClaims = PhaseState<Phase::DeletingClaims>;
using StoppingDrain = PhaseState<Phase::StoppingDrain>;
using AwaitingNode = PhaseState<Phase::AwaitingNode>;
using ReplacingVolume = PhaseState<Phase::ReplacingVolume>;
using Reseeding = PhaseState<Phase::Reseeding>;
using MarkingReplica = PhaseState<Phase::MarkingReplica>;
using Completed = PhaseState<Phase::Completed>;
using Failed = PhaseState<Phase::Failed>;

// Guards: scaling back up is only safe while every source claim still exists (a person's
// abort is refused otherwise: no row).
struct Intact {
  template <class E, class M, class S, class T>
  bool operator()(const E& e, M&, S&, T&) const {
    return e.sources_intact;
  }
};
struct Lost {
  template <class E, class M, class S, class T>
  bool operator()(const E& e, M&, S&, T&) const {
    return !e.sources_intact;
  }
};

// A Resume goes back to the phase the operation failed in, and nowhere else.
template <Phase P>
struct FailedIn {
  template <class E, class M, class S, class T>
  bool operator()(const E& e, M&, S&, T&) const {
    return e.failed_in == P;
  }
};
using InRestoring = FailedIn<Phase::Restoring>;
using InScalingUp = FailedIn<Phase::ScalingUp>;
using InCleaningUp = FailedIn<Phase::CleaningUp>;

// What each table does with an event it has no row for: remember it, and fire() turns it into
// an error value (MSM's default would assert).
#define REFUSALS_REMEMBERED                                \
  template <class M, class E>                              \
  void no_transition(const E&, M&, int) {                  \
    refused = true;                                        \
  }                                                        \
  template <class M, class E>                              \
  void exception_caught(const E&, M&, std::exception& e) { \
    refused = true;                                        \
    exception = e.what();                                  \
  }                                                        \
  bool refused = false;                                    \
  std::string exception;

struct ResizeMachine_ : msm::front::state_machine_def<ResizeMachine_> {
  using initial_state = Pending;

  // clang-format off
  struct transition_table : mpl::vector<
    //   From              Event                To                Action Guard
    Row< Pending,          StartPlanning,       Planning,         none,  none         >,
    Row< Pending,          StartTemplateUpdate, UpdatingTemplate, none,  none         >,
    // A shrink: measured while the application runs, then as any other operation
    Row< Pending,          StartMeasuring,      Measuring,        none,  none         >,
    Row< Measuring,        StartTemplateUpdate, UpdatingTemplate, none,  none         >,
    Row< Measuring,        StartPlanning,       Planning,         none,  none         >,
    Row< UpdatingTemplate, StepDone,            Planning,         none,  none         >,
    Row< Planning,         PlannedCopy,         ScalingDown,      none,  none         >,
    // A warm copy while the replicas still run; BackingUp then copies what changed since
    Row< Planning,         PlannedPreCopy,      PreCopying,       none,  none         >,
    Row< PreCopying,       StepDone,            ScalingDown,      none,  none         >,
    Row< Planning,         PlannedExpand,       Expanding,        none,  none         >,
    Row< ScalingDown,      StepDone,            BackingUp,        none,  none         >,
    Row< BackingUp,        StepDone,            Recreating,       none,  none         >,
    Row< Recreating,       StepDone,            Restoring,        none,  none         >,
    // A source still intact whose backup may miss writes (the fence was broken): copy again
    Row< Recreating,       BackupStale,         BackingUp,        none,  none         >,
    // A recreated claim given up before its restore was verified: create it again
    Row< Restoring,        RecreateAgain,       Recreating,       none,  none         >,
    Row< Restoring,        StepDone,            ScalingUp,        none,  none         >,
    Row< ScalingUp,        StepDone,            CleaningUp,       none,  none         >,
    Row< CleaningUp,       StepDone,            Completed,        none,  none         >,
    Row< Expanding,        StepDone,            Completed,        none,  none         >,
    Row< UpdatingTemplate, CriticalError,       Failed,           none,  none         >,
    // Measuring changed nothing but its Jobs, which ScalingBack deletes
    Row< Measuring,        CriticalError,       ScalingBack,      none,  Intact       >,
    Row< Measuring,        Abort,               ScalingBack,      none,  Intact       >,
    Row< Planning,         CriticalError,       Failed,           none,  none         >,
    // Nothing scaled yet: ScalingBack deletes the pre-copy Jobs and backup claims
    Row< PreCopying,       CriticalError,       ScalingBack,      none,  Intact       >,
    Row< ScalingDown,      CriticalError,       ScalingBack,      none,  Intact       >,
    Row< ScalingDown,      CriticalError,       Failed,           none,  Lost         >,
    Row< BackingUp,        CriticalError,       ScalingBack,      none,  Intact       >,
    Row< BackingUp,        CriticalError,       Failed,           none,  Lost         >,
    Row< Recreating,       CriticalError,       ScalingBack,      none,  Intact       >,
    Row< Recreating,       CriticalError,       Failed,           none,  Lost         >,
    // Intact only on the rebind path (Operation::sources_intact): each claim's own volume kept
    Row< Restoring,        CriticalError,       ScalingBack,      none,  Intact       >,
    Row< Restoring,        CriticalError,       Failed,           none,  Lost         >,
    Row< ScalingUp,        CriticalError,       Failed,           none,  none         >,
    Row< CleaningUp,       CriticalError,       Failed,           none,  none         >,
    Row< Expanding,        CriticalError,       Failed,           none,  none         >,
    Row< ScalingBack,      ScaleBackDone,       Failed,           none,  none         >,
    Row< ScalingBack,      CriticalError,       Failed,           none,  none         >,
    Row< Planning,         Abort,               ScalingBack,      none,  Intact       >,
    Row< PreCopying,       Abort,               ScalingBack,      none,  Intact       >,
    Row< ScalingDown,      Abort,               ScalingBack,      none,  Intact       >,
    Row< BackingUp,        Abort,               ScalingBack,      none,  Intact       >,
    Row< Recreating,       Abort,               ScalingBack,      none,  Intact       >,
    Row< Restoring,        Abort,               ScalingBack,      none,  Intact       >,
    // A person's skip: CleaningUp only (check_skip() in engine/actions/rules.h says why)
    Row< CleaningUp,       Skip,                Completed,        none,  none         >,
    // A person's retry after the sources were replaced: back to the phase it failed in
    Row< Failed,           Resume,              Restoring,        none,  InRestoring  >,
    Row< Failed,           Resume,              ScalingUp,        none,  InScalingUp  >,
    Row< Failed,           Resume,              CleaningUp,       none,  InCleaningUp >
  > {};
  // clang-format on

  REFUSALS_REMEMBERED
};

using ResizeMachine = msm::back::state_machine<ResizeMachine_>;

// The resize's rows of the rolling strategy (stsresize.dev/strategy: rolling), a second table of
// the same kind: MPL's vector, which Boost.MSM's tables are, holds at most 50 rows. A resize
// moves by whichever of its two tables has a row (fire_kind); no event leaves a phase in both.
// The copy phases for one ordinal at a time, highest first, between stopping its replica (the
// StatefulSet paused, the pod evicted) and starting it again.
struct RollingMachine_ : msm::front::state_machine_def<RollingMachine_> {
  using initial_state = StoppingReplica;

  // clang-format off
  struct transition_table : mpl::vector<
    //   From              Event                To                Action Guard
    Row< Planning,         RollOn,              StoppingReplica,  none,  none         >,
    Row< PreCopying,       RollOn,              StoppingReplica,  none,  none         >,
    Row< StoppingReplica,  StepDone,            BackingUp,        none,  none         >,
    Row< Restoring,        RollOn,              StartingReplica,  none,  none         >,
    Row< StartingReplica,  StepDone,            CleaningUp,       none,  none         >,
    Row< CleaningUp,       RollOn,              StoppingReplica,  none,  none         >,
    // Nothing of this ordinal deleted yet: ScalingBack creates the StatefulSet again
    Row< StoppingReplica,  CriticalError,       ScalingBack,      none,  Intact       >,
    Row< StoppingReplica,  Abort,               ScalingBack,      none,  Intact       >,
    // The replica runs on its new claims, as in ScalingUp
    Row< StartingReplica,  CriticalError,       Failed,           none,  none         >
  > {};
  // clang-format on

  REFUSALS_REMEMBERED
};

using RollingMachine = msm::back::state_machine<RollingMachine_>;

// The scale-down drain. Nothing is deleted before DeletingClaims, so a failure or a person's
// abort in Draining stops it (StoppingDrain deletes the cleanup pods, keeps every claim).
struct DrainMachine_ : msm::front::state_machine_def<DrainMachine_> {
  using initial_state = Pending;

  // clang-format off
  struct transition_table : mpl::vector<
    //   From              Event                To                Action Guard
    Row< Pending,          StartDrain,          Draining,         none,  none         >,
    Row< Draining,         StepDone,            DeletingClaims,   none,  none         >,
    Row< DeletingClaims,   StepDone,            Completed,        none,  none         >,
    Row< Draining,         CriticalError,       StoppingDrain,    none,  none         >,
    Row< Draining,         Abort,               StoppingDrain,    none,  Intact       >,
    // Held for approval before its first cleanup pod (stsresize.dev/mode): a person may stop it
    Row< Pending,          Abort,               StoppingDrain,    none,  Intact       >,
    Row< StoppingDrain,    StepDone,            Failed,           none,  none         >,
    Row< StoppingDrain,    CriticalError,       Failed,           none,  none         >,
    Row< DeletingClaims,   CriticalError,       Failed,           none,  none         >
  > {};
  // clang-format on

  REFUSALS_REMEMBERED
};

using DrainMachine = msm::back::state_machine<DrainMachine_>;

// The lost-volume recovery. Nothing is deleted before ReplacingVolume, and there only after the
// node is seen gone again: until its first delete, a person's abort ends it with every claim kept,
// and a node that comes back ends it with nothing more done. With a re-seed pod template the
// StatefulSet is paused before that first delete and resumed after the re-seed: a failure or an
// abort from ReplacingVolume or Reseeding goes through ScalingBack, which resumes it.
struct RecoveryMachine_ : msm::front::state_machine_def<RecoveryMachine_> {
  using initial_state = Pending;

  // clang-format off
  struct transition_table : mpl::vector<
    //   From              Event                To                Action Guard
    Row< Pending,          StartRecovery,       AwaitingNode,     none,  none         >,
    // The grace period over, the node still gone (held for approval in manual mode)
    Row< AwaitingNode,     StepDone,            ReplacingVolume,  none,  none         >,
    Row< AwaitingNode,     NodeReturned,        Completed,        none,  none         >,
    // Every lost claim and the pod deleted: the StatefulSet controller creates them afresh
    Row< ReplacingVolume,  StepDone,            MarkingReplica,   none,  none         >,
    // ...or, paused for a re-seed, the recovery creates the claims and runs the re-seed pod on
    // them, then resumes the StatefulSet, whose controller creates the pod
    Row< ReplacingVolume,  Reseed,              Reseeding,        none,  none         >,
    Row< Reseeding,        StepDone,            MarkingReplica,   none,  none         >,
    // Nothing deleted (a pause undone first)
    Row< ReplacingVolume,  NodeReturned,        Completed,        none,  Intact       >,
    Row< MarkingReplica,   StepDone,            Completed,        none,  none         >,
    Row< AwaitingNode,     CriticalError,       Failed,           none,  none         >,
    Row< ReplacingVolume,  CriticalError,       ScalingBack,      none,  none         >,
    Row< Reseeding,        CriticalError,       ScalingBack,      none,  none         >,
    Row< MarkingReplica,   CriticalError,       Failed,           none,  none         >,
    // A paused StatefulSet resumed, and nothing else
    Row< ScalingBack,      ScaleBackDone,       Failed,           none,  none         >,
    Row< ScalingBack,      CriticalError,       Failed,           none,  none         >,
    // A person's abort, before any claim is deleted
    Row< AwaitingNode,     Abort,               Failed,           none,  Intact       >,
    Row< ReplacingVolume,  Abort,               ScalingBack,      none,  Intact       >
  > {};
  // clang-format on

  REFUSALS_REMEMBERED
};

using RecoveryMachine = msm::back::state_machine<RecoveryMachine_>;

// MSM numbers a table's states by order of appearance; map both ways once. A phase that is not
// in the table has no id (-1): a machine of that kind is never in it.
template <class Back>
struct StateIds {
  std::array<int, std::size(kAllPhases)> id_of_phase{};
  std::array<Phase, std::size(kAllPhases)> phase_of_id{};

  template <class... States>
  static StateIds make() {
    StateIds ids;
    ids.id_of_phase.fill(-1);
    ((ids.id_of_phase[static_cast<std::size_t>(States::phase)] =
          msm::back::get_state_id<typename Back::stt, States>::value,
      ids.phase_of_id[static_cast<std::size_t>(
          msm::back::get_state_id<typename Back::stt, States>::value)] = States::phase),
     ...);
    return ids;
  }
};

template <class Back>
const StateIds<Back>& state_ids();

template <>
const StateIds<ResizeMachine>& state_ids() {
  static const auto ids =
      StateIds<ResizeMachine>::make<Pending, Measuring, UpdatingTemplate, Planning, PreCopying,
                                    ScalingDown, BackingUp, Recreating, Restoring, ScalingUp,
                                    CleaningUp, Expanding, ScalingBack, Completed, Failed>();
  return ids;
}

template <>
const StateIds<RollingMachine>& state_ids() {
  static const auto ids =
      StateIds<RollingMachine>::make<StoppingReplica, Planning, PreCopying, BackingUp, Restoring,
                                     StartingReplica, CleaningUp, ScalingBack, Failed>();
  return ids;
}

template <>
const StateIds<RecoveryMachine>& state_ids() {
  static const auto ids =
      StateIds<RecoveryMachine>::make<Pending, AwaitingNode, ReplacingVolume, Completed,
                                      MarkingReplica, Reseeding, ScalingBack, Failed>();
  return ids;
}

template <>
const StateIds<DrainMachine>& state_ids() {
  static const auto ids = StateIds<DrainMachine>::make<Pending, Draining, DeletingClaims,
                                                       StoppingDrain, Completed, Failed>();
  return ids;
}

// The phase after `event` from `from` in table `Back`, or why not.
template <class Back>
std::expected<Phase, std::string> fire_in(Phase from, Trigger event, bool sources_intact,
                                          std::optional<Phase> failed_in) {
  const StateIds<Back>& ids = state_ids<Back>();
  const int id = ids.id_of_phase[static_cast<std::size_t>(from)];
  auto refusal = [&](std::string_view why) {
    std::string message = "event " + std::string{to_string(event)} + " is not allowed in phase " +
                          std::string{to_string(from)};
    if (!why.empty()) message += ": " + std::string{why};
    return std::unexpected(message);
  };
  if (id < 0) return refusal("not a phase of this kind of operation");
  Back m;
  m.start();
  // MSM has no public way to enter a machine in a given state, and resuming an operation is
  // exactly that. current_state() points into the machine's own (non-const) state array, so
  // writing through it is well-defined; no entry action runs, as none is defined.
  const_cast<int*>(m.current_state())[0] = id;
  switch (event) {
    case Trigger::StartMeasuring:
      m.process_event(StartMeasuring{});
      break;
    case Trigger::StartPlanning:
      m.process_event(StartPlanning{});
      break;
    case Trigger::StartTemplateUpdate:
      m.process_event(StartTemplateUpdate{});
      break;
    case Trigger::PlannedCopy:
      m.process_event(PlannedCopy{});
      break;
    case Trigger::PlannedPreCopy:
      m.process_event(PlannedPreCopy{});
      break;
    case Trigger::PlannedExpand:
      m.process_event(PlannedExpand{});
      break;
    case Trigger::StepDone:
      m.process_event(StepDone{});
      break;
    case Trigger::CriticalError:
      m.process_event(CriticalError{sources_intact});
      break;
    case Trigger::ScaleBackDone:
      m.process_event(ScaleBackDone{});
      break;
    case Trigger::Abort:
      m.process_event(Abort{sources_intact});
      break;
    case Trigger::Skip:
      m.process_event(Skip{});
      break;
    case Trigger::Resume:
      m.process_event(Resume{failed_in});
      break;
    case Trigger::BackupStale:
      m.process_event(BackupStale{});
      break;
    case Trigger::RecreateAgain:
      m.process_event(RecreateAgain{});
      break;
    case Trigger::StartDrain:
      m.process_event(StartDrain{});
      break;
    case Trigger::RollOn:
      m.process_event(RollOn{});
      break;
    case Trigger::StartRecovery:
      m.process_event(StartRecovery{});
      break;
    case Trigger::NodeReturned:
      m.process_event(NodeReturned{sources_intact});
      break;
    case Trigger::Reseed:
      m.process_event(Reseed{});
      break;
  }
  // A guard that rejects (Abort with a source lost) leaves the machine where it was without
  // calling no_transition; every row of a table changes the phase, so staying is a refusal.
  const Phase after = ids.phase_of_id[static_cast<std::size_t>(m.current_state()[0])];
  if (m.refused || after == from) return refusal(m.exception);
  return after;
}

std::expected<Phase, std::string> fire_kind(OperationKind kind, Phase from, Trigger event,
                                            bool sources_intact, std::optional<Phase> failed_in) {
  switch (kind) {
    case OperationKind::Resize: {
      auto next = fire_in<ResizeMachine>(from, event, sources_intact, failed_in);
      if (next) return next;
      auto rolling = fire_in<RollingMachine>(from, event, sources_intact, failed_in);
      // A refusal in the words of the table that has the phase.
      const bool main_has =
          state_ids<ResizeMachine>().id_of_phase[static_cast<std::size_t>(from)] >= 0;
      return rolling || !main_has ? rolling : next;
    }
    case OperationKind::Drain:
      return fire_in<DrainMachine>(from, event, sources_intact, failed_in);
    case OperationKind::Recovery:
      return fire_in<RecoveryMachine>(from, event, sources_intact, failed_in);
  }
  return std::unexpected("unknown kind of operation");
}

class KindRules final : public TransitionRules {
 public:
  explicit KindRules(OperationKind kind) : kind_(kind) {}
  bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
               std::optional<Phase> failed_in) const override {
    auto next = fire_kind(kind_, from, event, sources_intact, failed_in);
    return next && *next == to;
  }

 private:
  OperationKind kind_;
};

// Every kind's rows: the tables share only Pending, Completed and Failed, and no trigger leaves
// one of those in two tables, so a row of the union belongs to one kind.
class AllRules final : public TransitionRules {
 public:
  bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
               std::optional<Phase> failed_in) const override {
    for (OperationKind kind : kAllKinds) {
      if (PhaseMachine::rules(kind).allowed(from, event, sources_intact, to, failed_in)) {
        return true;
      }
    }
    return false;
  }
  const TransitionRules& of(OperationKind kind) const override { return PhaseMachine::rules(kind); }
};

}  // namespace

PhaseMachine::PhaseMachine(Phase phase) : PhaseMachine(OperationKind::Resize, phase) {}
PhaseMachine::PhaseMachine(OperationKind kind, Phase phase) : kind_(kind), phase_(phase) {}

std::expected<Phase, std::string> PhaseMachine::fire(Trigger event, bool sources_intact,
                                                     std::optional<Phase> failed_in) {
  auto next = fire_kind(kind_, phase_, event, sources_intact, failed_in);
  if (next) phase_ = *next;
  return next;
}

bool PhaseMachine::allowed(Phase from, Trigger event, bool sources_intact, Phase to,
                           std::optional<Phase> failed_in) {
  return rules().allowed(from, event, sources_intact, to, failed_in);
}

const TransitionRules& PhaseMachine::rules(OperationKind kind) {
  static const KindRules resize{OperationKind::Resize};
  static const KindRules drain{OperationKind::Drain};
  static const KindRules recovery{OperationKind::Recovery};
  switch (kind) {
    case OperationKind::Resize:
      return resize;
    case OperationKind::Drain:
      return drain;
    case OperationKind::Recovery:
      return recovery;
  }
  return resize;
}

const TransitionRules& PhaseMachine::rules() {
  static const AllRules rules;
  return rules;
}

bool PhaseMachine::has_phase(OperationKind kind, Phase phase) {
  switch (kind) {
    case OperationKind::Resize:
      return state_ids<ResizeMachine>().id_of_phase[static_cast<std::size_t>(phase)] >= 0 ||
             state_ids<RollingMachine>().id_of_phase[static_cast<std::size_t>(phase)] >= 0;
    case OperationKind::Drain:
      return state_ids<DrainMachine>().id_of_phase[static_cast<std::size_t>(phase)] >= 0;
    case OperationKind::Recovery:
      return state_ids<RecoveryMachine>().id_of_phase[static_cast<std::size_t>(phase)] >= 0;
  }
  return false;
}

}  // namespace stsresize
