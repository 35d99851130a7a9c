#include "engine/operation.h"

#include <algorithm>
#include <chrono>

#include "engine/naming.h"

namespace stsresize {

namespace {

template <class Enum, std::size_t N>
std::optional<Enum> parse_by_name(std::string_view text, const Enum (&all)[N]) {
  for (Enum value : all) {
    if (to_string(value) == text) return value;
  }
  return std::nullopt;
}

constexpr Path kAllPaths[] = {Path::Undecided, Path::Expand, Path::Copy};

}  // namespace

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::Pending:
      return "Pending";
    case Phase::UpdatingTemplate:
      return "UpdatingTemplate";
    case Phase::Planning:
      return "Planning";
    case Phase::ScalingDown:
      return "ScalingDown";
    case Phase::BackingUp:
      return "BackingUp";
    case Phase::Recreating:
      return "Recreating";
    case Phase::Restoring:
      return "Restoring";
    case Phase::ScalingUp:
      return "ScalingUp";
    case Phase::CleaningUp:
      return "CleaningUp";
    case Phase::Expanding:
      return "Expanding";
    case Phase::ScalingBack:
      return "ScalingBack";
    case Phase::Completed:
      return "Completed";
    case Phase::Failed:
      return "Failed";
  }
  return "Unknown";
}

std::optional<Phase> parse_phase(std::string_view text) {
  return parse_by_name(text, kAllPhases);
}

bool is_terminal(Phase phase) {
  return phase == Phase::Completed || phase == Phase::Failed;
}

std::string_view to_string(PhaseEvent event) {
  switch (event) {
    case PhaseEvent::StartPlanning:
      return "StartPlanning";
    case PhaseEvent::StartTemplateUpdate:
      return "StartTemplateUpdate";
    case PhaseEvent::PlannedCopy:
      return "PlannedCopy";
    case PhaseEvent::PlannedExpand:
      return "PlannedExpand";
    case PhaseEvent::StepDone:
      return "StepDone";
    case PhaseEvent::CriticalError:
      return "CriticalError";
    case PhaseEvent::ScaleBackDone:
      return "ScaleBackDone";
    case PhaseEvent::Abort:
      return "Abort";
    case PhaseEvent::Skip:
      return "Skip";
    case PhaseEvent::Resume:
      return "Resume";
  }
  return "Unknown";
}

std::optional<PhaseEvent> parse_phase_event(std::string_view text) {
  return parse_by_name(text, kAllPhaseEvents);
}

std::string_view to_string(Path path) {
  switch (path) {
    case Path::Undecided:
      return "Undecided";
    case Path::Expand:
      return "Expand";
    case Path::Copy:
      return "Copy";
  }
  return "Unknown";
}

std::optional<Path> parse_path(std::string_view text) {
  return parse_by_name(text, kAllPaths);
}

bool Operation::sources_intact() const {
  return std::none_of(claims.begin(), claims.end(),
                      [](const ClaimPlan& c) { return c.source_deleted; });
}

const ClaimPlan* Operation::find_claim(std::string_view claim) const {
  for (const ClaimPlan& c : claims) {
    if (c.claim == claim) return &c;
  }
  return nullptr;
}

ClaimPlan* Operation::find_claim(std::string_view claim) {
  for (ClaimPlan& c : claims) {
    if (c.claim == claim) return &c;
  }
  return nullptr;
}

bool same_state(const Operation& a, const Operation& b) {
  Operation left = a;
  left.last_sequence = b.last_sequence;
  return left == b;
}

std::string make_operation_id(std::string_view ns, std::string_view sts, std::string_view sts_uid,
                              TimePoint started) {
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(started.time_since_epoch()).count();
  std::string key;
  key.append(ns).append("/").append(sts).append("/").append(sts_uid).append("/");
  key += std::to_string(millis);
  const std::string hash = naming::short_hash(key);
  // Keep room for "-<hash>" so the id stays a valid label value however long the name is.
  std::string prefix{sts.substr(0, std::min<std::size_t>(sts.size(), 63 - 1 - hash.size()))};
  while (!prefix.empty() && prefix.back() == '-') prefix.pop_back();
  return prefix + "-" + hash;
}

}  // namespace stsresize
