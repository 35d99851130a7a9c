// The one translation unit that instantiates Boost.MSM.
#define BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS
#define BOOST_MPL_LIMIT_VECTOR_SIZE 40
#define BOOST_MPL_LIMIT_MAP_SIZE 40
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
struct StartPlanning {};
struct StartTemplateUpdate {};
struct PlannedCopy {};
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

// States: one per Phase.
template <Phase P>
struct PhaseState : msm::front::state<> {
  static constexpr Phase phase = P;
};
using Pending = PhaseState<Phase::Pending>;
using UpdatingTemplate = PhaseState<Phase::UpdatingTemplate>;
using Planning = PhaseState<Phase::Planning>;
using ScalingDown = PhaseState<Phase::ScalingDown>;
using BackingUp = PhaseState<Phase::BackingUp>;
using Recreating = PhaseState<Phase::Recreating>;
using Restoring = PhaseState<Phase::Restoring>;
using ScalingUp = PhaseState<Phase::ScalingUp>;
using CleaningUp = PhaseState<Phase::CleaningUp>;
using Expanding = PhaseState<Phase::Expanding>;
using ScalingBack = PhaseState<Phase::ScalingBack>;
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

struct ResizeMachine_ : msm::front::state_machine_def<ResizeMachine_> {
  using initial_state = Pending;

  // clang-format off
  struct transition_table : mpl::vector<
    //   From              Event                To                Action Guard
    Row< Pending,          StartPlanning,       Planning,         none,  none         >,
    Row< Pending,          StartTemplateUpdate, UpdatingTemplate, none,  none         >,
    Row< UpdatingTemplate, StepDone,            Planning,         none,  none         >,
    Row< Planning,         PlannedCopy,         ScalingDown,      none,  none         >,
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
    Row< Planning,         CriticalError,       Failed,           none,  none         >,
    Row< ScalingDown,      CriticalError,       ScalingBack,      none,  Intact       >,
    Row< ScalingDown,      CriticalError,       Failed,           none,  Lost         >,
    Row< BackingUp,        CriticalError,       ScalingBack,      none,  Intact       >,
    Row< BackingUp,        CriticalError,       Failed,           none,  Lost         >,
    Row< Recreating,       CriticalError,       ScalingBack,      none,  Intact       >,
    Row< Recreating,       CriticalError,       Failed,           none,  Lost         >,
    Row< Restoring,        CriticalError,       Failed,           none,  none         >,
    Row< ScalingUp,        CriticalError,       Failed,           none,  none         >,
    Row< CleaningUp,       CriticalError,       Failed,           none,  none         >,
    Row< Expanding,        CriticalError,       Failed,           none,  none         >,
    Row< ScalingBack,      ScaleBackDone,       Failed,           none,  none         >,
    Row< ScalingBack,      CriticalError,       Failed,           none,  none         >,
    Row< Planning,         Abort,               ScalingBack,      none,  Intact       >,
    Row< ScalingDown,      Abort,               ScalingBack,      none,  Intact       >,
    Row< BackingUp,        Abort,               ScalingBack,      none,  Intact       >,
    Row< Recreating,       Abort,               ScalingBack,      none,  Intact       >,
    // A person's skip: CleaningUp only (check_skip() in engine/actions/rules.h says why)
    Row< CleaningUp,       Skip,                Completed,        none,  none         >,
    // A person's retry after the sources were replaced: back to the phase it failed in
    Row< Failed,           Resume,              Restoring,        none,  InRestoring  >,
    Row< Failed,           Resume,              ScalingUp,        none,  InScalingUp  >,
    Row< Failed,           Resume,              CleaningUp,       none,  InCleaningUp >
  > {};
  // clang-format on

  // An event with no row from the current state: remembered and turned into an error value
  // by fire(); MSM's default would assert.
  template <class M, class E>
  void no_transition(const E&, M&, int) {
    refused = true;
  }
  template <class M, class E>
  void exception_caught(const E&, M&, std::exception& e) {
    refused = true;
    exception = e.what();
  }

  bool refused = false;
  std::string exception;
};

using ResizeMachine = msm::back::state_machine<ResizeMachine_>;

template <class State>
constexpr int state_id() {
  return msm::back::get_state_id<ResizeMachine::stt, State>::value;
}

// MSM numbers states by order of appearance; map both ways once.
struct StateIds {
  std::array<int, std::size(kAllPhases)> id_of_phase{};
  std::array<Phase, std::size(kAllPhases)> phase_of_id{};

  template <class... States>
  static StateIds make() {
    StateIds ids;
    ((ids.id_of_phase[static_cast<std::size_t>(States::phase)] = state_id<States>(),
      ids.phase_of_id[static_cast<std::size_t>(state_id<States>())] = States::phase),
     ...);
    return ids;
  }
};

const StateIds& state_ids() {
  static const StateIds ids =
      StateIds::make<Pending, UpdatingTemplate, Planning, ScalingDown, BackingUp, Recreating,
                     Restoring, ScalingUp, CleaningUp, Expanding, ScalingBack, Completed, Failed>();
  return ids;
}

class MachineRules final : public TransitionRules {
 public:
  bool allowed(Phase from, Trigger event, bool sources_intact, Phase to,
               std::optional<Phase> failed_in) const override {
    return PhaseMachine::allowed(from, event, sources_intact, to, failed_in);
  }
};

}  // namespace

struct PhaseMachine::Impl {
  ResizeMachine machine;
};

PhaseMachine::PhaseMachine(Phase phase) : impl_(std::make_unique<Impl>()) {
  impl_->machine.start();
  // MSM has no public way to enter a machine in a given state, and resuming an operation is
  // exactly that. current_state() points into the machine's own (non-const) state array, so
  // writing through it is well-defined; no entry action runs, as none is defined.
  const_cast<int*>(impl_->machine.current_state())[0] =
      state_ids().id_of_phase[static_cast<std::size_t>(phase)];
}

PhaseMachine::~PhaseMachine() = default;
PhaseMachine::PhaseMachine(PhaseMachine&&) noexcept = default;
PhaseMachine& PhaseMachine::operator=(PhaseMachine&&) noexcept = default;

Phase PhaseMachine::phase() const {
  return state_ids().phase_of_id[static_cast<std::size_t>(impl_->machine.current_state()[0])];
}

std::expected<Phase, std::string> PhaseMachine::fire(Trigger event, bool sources_intact,
                                                     std::optional<Phase> failed_in) {
  ResizeMachine& m = impl_->machine;
  const Phase before = phase();
  m.refused = false;
  m.exception.clear();
  switch (event) {
    case Trigger::StartPlanning:
      m.process_event(StartPlanning{});
      break;
    case Trigger::StartTemplateUpdate:
      m.process_event(StartTemplateUpdate{});
      break;
    case Trigger::PlannedCopy:
      m.process_event(PlannedCopy{});
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
  }
  // A guard that rejects (Abort with a source lost) leaves the machine where it was without
  // calling no_transition; every row of the table changes the phase, so staying is a refusal.
  if (m.refused || phase() == before) {
    std::string message = "event " + std::string{to_string(event)} + " is not allowed in phase " +
                          std::string{to_string(before)};
    if (!m.exception.empty()) message += ": " + m.exception;
    *this = PhaseMachine{before};
    return std::unexpected(message);
  }
  return phase();
}

bool PhaseMachine::allowed(Phase from, Trigger event, bool sources_intact, Phase to,
                           std::optional<Phase> failed_in) {
  PhaseMachine machine{from};
  auto next = machine.fire(event, sources_intact, failed_in);
  return next && *next == to;
}

const TransitionRules& PhaseMachine::rules() {
  static const MachineRules rules;
  return rules;
}

}  // namespace stsresize
