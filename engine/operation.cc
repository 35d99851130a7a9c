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

constexpr Path kAllPaths[] = {Path::Undecided, Path::Expand, Path::Copy, Path::Rebind};
constexpr Strategy kAllStrategies[] = {Strategy::AllAtOnce, Strategy::Rolling};

}  // namespace

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::Pending:
      return "Pending";
    case Phase::Measuring:
      return "Measuring";
    case Phase::UpdatingTemplate:
      return "UpdatingTemplate";
    case Phase::Planning:
      return "Planning";
    case Phase::PreCopying:
      return "PreCopying";
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
    case Phase::StoppingReplica:
      return "StoppingReplica";
    case Phase::StartingReplica:
      return "StartingReplica";
    case Phase::Draining:
      return "Draining";
    case Phase::DeletingClaims:
      return "DeletingClaims";
    case Phase::StoppingDrain:
      return "StoppingDrain";
    case Phase::AwaitingNode:
      return "AwaitingNode";
    case Phase::ReplacingVolume:
      return "ReplacingVolume";
    case Phase::Reseeding:
      return "Reseeding";
    case Phase::MarkingReplica:
      return "MarkingReplica";
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

std::string_view to_string(Trigger event) {
  switch (event) {
    case Trigger::StartMeasuring:
      return "StartMeasuring";
    case Trigger::StartPlanning:
      return "StartPlanning";
    case Trigger::StartTemplateUpdate:
      return "StartTemplateUpdate";
    case Trigger::PlannedCopy:
      return "PlannedCopy";
    case Trigger::PlannedPreCopy:
      return "PlannedPreCopy";
    case Trigger::PlannedExpand:
      return "PlannedExpand";
    case Trigger::StepDone:
      return "StepDone";
    case Trigger::CriticalError:
      return "CriticalError";
    case Trigger::ScaleBackDone:
      return "ScaleBackDone";
    case Trigger::Abort:
      return "Abort";
    case Trigger::Skip:
      return "Skip";
    case Trigger::Resume:
      return "Resume";
    case Trigger::BackupStale:
      return "BackupStale";
    case Trigger::RecreateAgain:
      return "RecreateAgain";
    case Trigger::StartDrain:
      return "StartDrain";
    case Trigger::RollOn:
      return "RollOn";
    case Trigger::StartRecovery:
      return "StartRecovery";
    case Trigger::NodeReturned:
      return "NodeReturned";
    case Trigger::Reseed:
      return "Reseed";
  }
  return "Unknown";
}

std::optional<Trigger> parse_trigger(std::string_view text) {
  return parse_by_name(text, kAllTriggers);
}

std::string_view to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::AllAtOnce:
      return "all-at-once";
    case Strategy::Rolling:
      return "rolling";
  }
  return "unknown";
}

std::optional<Strategy> parse_strategy(std::string_view text) {
  return parse_by_name(text, kAllStrategies);
}

std::string_view to_string(OperationKind kind) {
  switch (kind) {
    case OperationKind::Resize:
      return "Resize";
    case OperationKind::Drain:
      return "Drain";
    case OperationKind::Recovery:
      return "Recovery";
  }
  return "Unknown";
}

std::optional<OperationKind> parse_kind(std::string_view text) {
  return parse_by_name(text, kAllKinds);
}

std::string_view to_string(Path path) {
  switch (path) {
    case Path::Undecided:
      return "Undecided";
    case Path::Expand:
      return "Expand";
    case Path::Copy:
      return "Copy";
    case Path::Rebind:
      return "Rebind";
  }
  return "Unknown";
}

std::optional<Path> parse_path(std::string_view text) {
  return parse_by_name(text, kAllPaths);
}

constexpr VolumeRole kAllVolumeRoles[] = {VolumeRole::Source, VolumeRole::Copy};

std::string_view to_string(VolumeRole role) {
  switch (role) {
    case VolumeRole::Source:
      return "Source";
    case VolumeRole::Copy:
      return "Copy";
  }
  return "Unknown";
}

std::optional<VolumeRole> parse_volume_role(std::string_view text) {
  return parse_by_name(text, kAllVolumeRoles);
}

namespace {

std::string drain_progress_mismatch(const Operation& op) {
  const auto phase = std::string{to_string(op.phase)};
  for (const OrdinalDrain& d : op.drains) {
    const std::string ordinal = "ordinal " + std::to_string(d.ordinal);
    for (const OrdinalClaim& c : d.claims) {
      if (c.deleted && !d.succeeded) {
        return "claim " + c.claim + ": deleted before its cleanup pod succeeded";
      }
    }
    if (op.phase == Phase::DeletingClaims && !d.ended()) {
      return phase + " while " + ordinal + " is neither drained nor cancelled";
    }
  }
  return {};
}

std::string recovery_progress_mismatch(const Operation& op) {
  if (!op.lost) return "a recovery without its lost replica";
  const LostReplica& lost = *op.lost;
  for (const LostClaim& c : lost.claims) {
    if (c.deleted && c.policy.empty()) {
      return "claim " + c.claim + ": deleted before its volume " + c.volume + " was kept (Retain)";
    }
    if (!c.new_uid.empty() && !c.deleted) {
      return "claim " + c.claim + ": marked recovered while the lost one was not deleted";
    }
  }
  if (lost.any_deleted() && !lost.cancelled.empty()) {
    return "ordinal " + std::to_string(lost.ordinal) + ": cancelled after a claim was deleted";
  }
  const bool replaced =
      std::ranges::all_of(lost.claims, [](const LostClaim& c) { return c.deleted; }) &&
      lost.pod_deleted;
  if ((op.phase == Phase::MarkingReplica || op.phase == Phase::Reseeding) && !replaced) {
    return std::string{to_string(op.phase)} + " before every lost claim and the pod were deleted";
  }
  if (op.phase == Phase::Reseeding && !lost.reseed) {
    return "Reseeding without the StatefulSet paused for a re-seed";
  }
  if ((!lost.reseed_pod_uid.empty() || lost.reseed_ended) && !lost.reseed) {
    return "a re-seed pod without the StatefulSet paused for a re-seed";
  }
  if ((op.phase == Phase::AwaitingNode || op.phase == Phase::Pending) && lost.any_deleted()) {
    return std::string{to_string(op.phase)} + " after a lost claim was deleted";
  }
  return {};
}

}  // namespace

bool resumes_statefulset(const Operation& op) {
  if (op.kind == OperationKind::Recovery) {
    return op.lost && op.lost->reseed &&
           (op.phase == Phase::ReplacingVolume || op.phase == Phase::Reseeding ||
            op.phase == Phase::ScalingBack);
  }
  return op.strategy == Strategy::Rolling &&
         (op.phase == Phase::StartingReplica || op.phase == Phase::ScalingBack);
}

bool LostReplica::any_deleted() const {
  return std::ranges::any_of(claims, [](const LostClaim& c) { return c.deleted; });
}

std::string progress_mismatch(const Operation& op) {
  if (op.kind == OperationKind::Drain) return drain_progress_mismatch(op);
  if (op.kind == OperationKind::Recovery) return recovery_progress_mismatch(op);
  const auto phase = std::string{to_string(op.phase)};
  for (const ClaimPlan& c : op.claims) {
    if (c.source_deleted && !c.backup_verified) {
      return "claim " + c.claim + ": source deleted without a verified backup";
    }
    if (!c.recreated_uid.empty() && !c.source_deleted) {
      return "claim " + c.claim + ": recreated while its source was not deleted";
    }
    if (c.restore_verified && c.recreated_uid.empty()) {
      return "claim " + c.claim + ": restored before it was recreated";
    }
  }
  for (const ClaimPlan& c : op.claims) {
    if (c.source_deleted && op.path == Path::Rebind && c.source_policy.empty()) {
      return "claim " + c.claim + ": source deleted before its volume was kept (Retain)";
    }
    if (c.source_policy_restored && op.path == Path::Rebind && !c.restore_verified &&
        op.phase != Phase::ScalingBack && op.phase != Phase::Failed) {
      return "claim " + c.claim + ": its old volume released before the claim was on its copy";
    }
  }
  if (op.path != Path::Copy && op.path != Path::Rebind) return {};
  // Where the state stands once a phase ended, as the steps leave it (failed and aborted
  // operations may stop anywhere, so only the phases of the forward path are checked).
  for (const ClaimPlan& c : op.claims) {
    if (!op.in_scope(c)) continue;
    const bool backed_up = c.backup_verified.has_value() || c.source_deleted;
    const bool restored = c.restore_verified.has_value();
    switch (op.phase) {
      case Phase::Recreating:
        if (!backed_up) return phase + " while the backup of " + c.claim + " is not verified";
        break;
      case Phase::Restoring:
        // (not necessarily recreated: a recreated claim given up waits for RecreateAgain)
        if (!c.source_deleted) return phase + " while the source " + c.claim + " is intact";
        break;
      case Phase::ScalingUp:
      case Phase::StartingReplica:
      case Phase::CleaningUp:
        if (!restored) return phase + " while the restore of " + c.claim + " is not verified";
        break;
      default:
        break;
    }
  }
  return {};
}

std::string unwritten_state(const Operation& op) {
  if (op.phase == Phase::Completed) {
    return "a state in Completed, which stsresize never writes (completion removes the state)";
  }
  if (const std::string why = progress_mismatch(op); !why.empty()) {
    return "a state stsresize does not write: " + why;
  }
  return {};
}

bool Operation::sources_intact() const {
  const bool drained_claim_deleted = std::ranges::any_of(drains, [](const OrdinalDrain& d) {
    return std::ranges::any_of(d.claims, [](const OrdinalClaim& c) { return c.deleted; });
  });
  if (drained_claim_deleted) return false;
  // A lost claim deleted cannot be given back: its volume's node is gone.
  if (lost && lost->any_deleted()) return false;
  if (path != Path::Rebind || !source_claim_deleted()) return !source_claim_deleted();
  const Phase at = phase == Phase::Failed && failed_in ? *failed_in : phase;
  if (at == Phase::ScalingUp || at == Phase::CleaningUp || at == Phase::Completed ||
      at == Phase::StartingReplica) {
    return false;
  }
  return std::ranges::all_of(claims, [&](const ClaimPlan& c) {
    return !in_scope(c) || !c.source_deleted ||
           (!c.source_policy.empty() && !c.source_policy_restored);
  });
}

// Rolled ordinals are finished and running on their new claims: only the rolling ordinal's
// sources say whether scaling back keeps every byte.
bool Operation::source_claim_deleted() const {
  return std::ranges::any_of(claims,
                             [&](const ClaimPlan& c) { return in_scope(c) && c.source_deleted; });
}

std::optional<int> Operation::rolling_ordinal() const {
  if (strategy != Strategy::Rolling) return std::nullopt;
  std::optional<int> highest;
  for (const ClaimPlan& c : claims) {
    if (!c.rolled && (!highest || c.ordinal > *highest)) highest = c.ordinal;
  }
  return highest;
}

bool Operation::in_scope(const ClaimPlan& claim) const {
  if (strategy != Strategy::Rolling) return true;
  const std::optional<int> ordinal = rolling_ordinal();
  return ordinal && claim.ordinal == *ordinal;
}

const OrdinalDrain* Operation::find_drain(int ordinal) const {
  for (const OrdinalDrain& d : drains) {
    if (d.ordinal == ordinal) return &d;
  }
  return nullptr;
}

OrdinalDrain* Operation::find_drain(int ordinal) {
  for (OrdinalDrain& d : drains) {
    if (d.ordinal == ordinal) return &d;
  }
  return nullptr;
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

DrainResult drain_result(const Operation& op) {
  DrainResult result;
  for (const OrdinalDrain& d : op.drains) {
    (d.cancelled.empty() && d.succeeded ? result.drained : result.cancelled).push_back(d.ordinal);
  }
  return result;
}

std::string to_string(const DrainResult& result) {
  const auto ordinals = [](const std::vector<int>& list) {
    std::string text = list.size() == 1 ? "ordinal " : "ordinals ";
    for (std::size_t i = 0; i < list.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(list[i]);
    }
    return text;
  };
  std::string text;
  if (!result.drained.empty()) text = "drained: " + ordinals(result.drained);
  if (!result.cancelled.empty()) {
    text += (text.empty() ? "" : "; ") + std::string{"cancelled: "} + ordinals(result.cancelled) +
            " (its claims kept)";
  }
  return text;
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
