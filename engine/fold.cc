#include "engine/fold.h"

#include <algorithm>
#include <utility>

#include "engine/actions/explain.h"
#include "engine/actions/rules.h"
#include "engine/operation_codec.h"
#include "engine/reachable.h"

namespace stsresize {

namespace {

// A rolling resize creates the StatefulSet again at the end of each ordinal (and when it scales
// back): the definition it saves and the new object's uid are journaled there.
using namespace entries;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace

std::expected<void, ReplayError> ValidatingFold::apply(const JournalRecord& record) {
  auto event = decode_entry(record);
  if (!event) return std::unexpected(ReplayError{record.sequence, event.error()});
  return apply(record, *event);
}

std::expected<void, ReplayError> ValidatingFold::apply(const JournalRecord& record,
                                                       const Entry& event) {
  const std::int64_t expected_sequence = state_ ? state_->last_sequence + 1 : 1;
  if (record.sequence != expected_sequence) {
    return std::unexpected(
        ReplayError{record.sequence, "sequence " + std::to_string(record.sequence) + " where " +
                                         std::to_string(expected_sequence) +
                                         " was expected (gap or duplicate)"});
  }
  if (state_ && record.operation_id != state_->id) {
    return std::unexpected(ReplayError{
        record.sequence,
        "record of operation " + record.operation_id + " in the stream of " + state_->id});
  }
  if (auto applied = apply_event(record, event); !applied) {
    return std::unexpected(ReplayError{record.sequence, applied.error()});
  }
  const auto* action = std::get_if<OperatorAction>(&event);
  skip_taken_ = action && action->refused.empty() && parse_action(action->action) == Action::Skip;
  state_->last_sequence = record.sequence;
  return {};
}

std::expected<void, std::string> ValidatingFold::apply_event(const JournalRecord& record,
                                                             const Entry& event) {
  using Result = std::expected<void, std::string>;
  const std::string type{entry_type(event)};
  if (!state_) {
    if (const auto* started = std::get_if<OperationStarted>(&event)) {
      Operation op;
      op.id = record.operation_id;
      op.ns = record.ns;
      op.statefulset = record.statefulset;
      op.sts_uid = started->sts_uid;
      op.original_replicas = started->original_replicas;
      op.kind = started->kind;
      op.started = record.time;
      op.phase_since = record.time;
      state_ = std::move(op);
      return {};
    }
    if (const auto* resumed = std::get_if<Resumed>(&event)) {
      if (resumed->snapshot.id != record.operation_id) {
        return std::unexpected("Resumed snapshot of " + resumed->snapshot.id +
                               " in the stream of " + record.operation_id);
      }
      state_ = resumed->snapshot;
      return {};
    }
    return std::unexpected(type + " before OperationStarted or Resumed");
  }

  Operation& op = *state_;
  // Only the record right after an accepted resume may be its PhaseChanged on Resume.
  const bool resume_pending = std::exchange(resume_taken_, false);
  if (const auto* changed = std::get_if<PhaseChanged>(&event);
      resume_pending && (changed == nullptr || changed->event != Trigger::Resume)) {
    return std::unexpected(type +
                           " right after an accepted retry of an operation whose sources "
                           "were replaced (its PhaseChanged on Resume belongs there)");
  }
  auto in_phase = [&](Phase phase) -> Result {
    if (op.phase == phase) return {};
    return std::unexpected(type + " in phase " + std::string{to_string(op.phase)} +
                           " (belongs to " + std::string{to_string(phase)} + ")");
  };
  auto drain_of = [&](int ordinal) -> std::expected<OrdinalDrain*, std::string> {
    if (OrdinalDrain* drain = op.find_drain(ordinal)) return drain;
    return std::unexpected(type + " names ordinal " + std::to_string(ordinal) +
                           ", which is not in the drain");
  };
  auto lost_claim_of = [&](const std::string& name) -> LostClaim* {
    if (!op.lost) return nullptr;
    for (LostClaim& c : op.lost->claims) {
      if (c.claim == name) return &c;
    }
    return nullptr;
  };
  auto claim_of = [&](const std::string& name) -> std::expected<ClaimPlan*, std::string> {
    if (ClaimPlan* claim = op.find_claim(name)) return claim;
    return std::unexpected(type + " names claim \"" + name + "\", which is not in the plan");
  };

  return std::visit(
      Overloaded{
          [&](const OperationStarted&) -> Result {
            return std::unexpected("OperationStarted in the middle of an operation");
          },
          [&](const TemplateUpdateRequested& e) -> Result {
            // A shrink measures first: its request is journaled with the start, in Measuring.
            if (op.phase != Phase::Measuring) {
              if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            }
            if (!op.template_changes.empty()) {
              return std::unexpected("TemplateUpdateRequested twice");
            }
            if (e.changes.empty())
              return std::unexpected("TemplateUpdateRequested without changes");
            op.template_changes = e.changes;
            return {};
          },
          [&](const DefinitionSaved& e) -> Result {
            if (resumes_statefulset(op)) {
              if (e.config_map.empty() || !e.definition.is_object()) {
                return std::unexpected("DefinitionSaved without a ConfigMap or a definition");
              }
              return {};
            }
            if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            if (op.template_changes.empty() || op.statefulset_recreated) {
              return std::unexpected("DefinitionSaved without a pending template update");
            }
            if (e.config_map.empty() || !e.definition.is_object()) {
              return std::unexpected("DefinitionSaved without a ConfigMap or a definition");
            }
            return {};
          },
          [&](const StatefulSetRecreated& e) -> Result {
            if (resumes_statefulset(op)) {
              if (e.uid.empty() || e.uid == op.sts_uid) {
                return std::unexpected("StatefulSetRecreated needs the new object's uid");
              }
              op.sts_uid = e.uid;
              return {};
            }
            if (auto ok = in_phase(Phase::UpdatingTemplate); !ok) return ok;
            if (op.template_changes.empty() || op.statefulset_recreated) {
              return std::unexpected("StatefulSetRecreated without a pending template update");
            }
            if (e.uid.empty() || e.uid == op.sts_uid) {
              return std::unexpected("StatefulSetRecreated needs the new object's uid");
            }
            op.sts_uid = e.uid;
            op.statefulset_recreated = true;
            return {};
          },
          [&](const Planned& e) -> Result {
            if (auto ok = in_phase(Phase::Planning); !ok) return ok;
            if (op.path != Path::Undecided) return std::unexpected("Planned twice");
            if (e.path == Path::Undecided || e.claims.empty()) {
              return std::unexpected("Planned without a path or claims");
            }
            if (!e.rebind_unavailable.empty() && e.path != Path::Copy) {
              return std::unexpected("Planned with a reason not to rebind on the " +
                                     std::string{to_string(e.path)} + " path");
            }
            if (e.strategy == Strategy::Rolling && e.path == Path::Expand) {
              return std::unexpected("Planned rolling on the Expand path, which stops nothing");
            }
            op.path = e.path;
            op.claims = e.claims;
            op.rebind_unavailable = e.rebind_unavailable;
            op.strategy = e.strategy;
            return {};
          },
          [&](const PhaseChanged& e) -> Result {
            if (e.from != op.phase) {
              return std::unexpected("PhaseChanged from " + std::string{to_string(e.from)} +
                                     " but the operation is in " +
                                     std::string{to_string(op.phase)});
            }
            if (!rules().allowed(e.from, e.event, op.sources_intact(), e.to, op.failed_in)) {
              return std::unexpected("transition " + std::string{to_string(e.from)} + " -> " +
                                     std::string{to_string(e.to)} + " on " +
                                     std::string{to_string(e.event)} +
                                     " is refused by the state machine");
            }
            if (e.event == Trigger::Skip && !skip_taken_) {
              return std::unexpected("transition " + std::string{to_string(e.from)} + " -> " +
                                     std::string{to_string(e.to)} +
                                     " on Skip without a person's accepted skip just before it");
            }
            if (e.event == Trigger::RollOn && op.strategy != Strategy::Rolling) {
              return std::unexpected("transition on RollOn in an operation that is not rolling");
            }
            if (e.event == Trigger::Resume && !resume_pending) {
              return std::unexpected(
                  "PhaseChanged on Resume without an accepted OperatorAction retry right before "
                  "it");
            }
            // The rolling ordinal is done once its CleaningUp moves on: to the next ordinal, or
            // to Completed after the last.
            if (op.strategy == Strategy::Rolling && e.from == Phase::CleaningUp &&
                (e.event == Trigger::RollOn || e.event == Trigger::StepDone)) {
              const std::optional<int> ordinal = op.rolling_ordinal();
              const bool more = std::ranges::any_of(op.claims, [&](const ClaimPlan& claim) {
                return !claim.rolled && ordinal && claim.ordinal != *ordinal;
              });
              if (e.event == Trigger::RollOn && !more) {
                return std::unexpected("RollOn from CleaningUp after the last ordinal");
              }
              if (e.event == Trigger::StepDone && more) {
                return std::unexpected("CleaningUp done while ordinals are left to roll");
              }
              for (ClaimPlan& claim : op.claims) {
                if (ordinal && claim.ordinal == *ordinal) claim.rolled = true;
              }
            }
            previous_phase_ = op.phase;
            op.phase = e.to;
            // Failed remembers where it came from (what a resume goes back to); leaving it
            // (Resume) forgets that and the failure, which the StepFailed records keep.
            if (e.to == Phase::Failed) {
              op.failed_in = e.from;
            } else {
              op.failed_in.reset();
            }
            if (e.event == Trigger::Resume) op.failure.clear();
            op.warning.clear();
            op.awaiting.reset();
            op.phase_since = record.time;
            return {};
          },
          [&](const ActionIntended& e) -> Result { return in_phase(e.phase); },
          [&](const PreCopied& e) -> Result {
            if (auto ok = in_phase(Phase::PreCopying); !ok) return ok;
            if (e.passes < 0 || e.bytes < 0) {
              return std::unexpected("PreCopied " + e.claim + " with a negative figure");
            }
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            (*claim)->pre_copied = true;
            return {};
          },
          [&](const BackupVerified& e) -> Result {
            if (auto ok = in_phase(Phase::BackingUp); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            (*claim)->backup_verified = e.summary;
            (*claim)->backup_generation = e.generation;
            return {};
          },
          [&](const SourceDeleted& e) -> Result {
            if (auto ok = in_phase(Phase::Recreating); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (!(*claim)->backup_verified) {
              return std::unexpected("source " + e.claim +
                                     " deleted before its backup was verified");
            }
            if (op.path == Path::Rebind &&
                ((*claim)->source_policy.empty() || (*claim)->copy_policy.empty())) {
              return std::unexpected("source " + e.claim +
                                     " deleted before both its volumes were kept (Retain)");
            }
            (*claim)->source_deleted = true;
            return {};
          },
          [&](const ClaimRecreated& e) -> Result {
            if (auto ok = in_phase(Phase::Recreating); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (!(*claim)->source_deleted) {
              return std::unexpected(e.claim + " recreated before its source was deleted");
            }
            (*claim)->recreated_uid = e.uid;
            return {};
          },
          [&](const ClaimDiscarded& e) -> Result {
            if (auto ok = in_phase(Phase::Restoring); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if ((*claim)->recreated_uid.empty() || (*claim)->recreated_uid != e.uid) {
              return std::unexpected(e.claim + " discarded with uid " + e.uid +
                                     ", which is not the recreated claim's");
            }
            if ((*claim)->restore_verified) {
              return std::unexpected(e.claim + " discarded after its restore was verified");
            }
            (*claim)->recreated_uid.clear();
            return {};
          },
          [&](const RestoreVerified& e) -> Result {
            if (auto ok = in_phase(Phase::Restoring); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if ((*claim)->recreated_uid.empty()) {
              return std::unexpected(e.claim + " restored before it was recreated");
            }
            (*claim)->restore_verified = e.summary;
            return {};
          },
          [&](const ClaimMeasured& e) -> Result {
            if (auto ok = in_phase(Phase::Measuring); !ok) return ok;
            if (e.claim.empty() || e.uid.empty()) {
              return std::unexpected(std::string{"ClaimMeasured without a claim or its uid"});
            }
            if (e.files < 0 || e.bytes < 0 || e.used < 0) {
              return std::unexpected("ClaimMeasured " + e.claim + " with a negative figure");
            }
            std::erase_if(op.measured, [&](const MeasuredClaim& m) { return m.claim == e.claim; });
            op.measured.push_back(MeasuredClaim{e.claim, e.uid, {e.files, e.bytes, e.used}});
            return {};
          },
          [&](const ClaimExpanded& e) -> Result {
            if (auto ok = in_phase(Phase::Expanding); !ok) return ok;
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            (*claim)->expanded = true;
            return {};
          },
          [&](const StepFailed& e) -> Result {
            if (auto ok = in_phase(e.phase); !ok) return ok;
            if (e.critical) {
              op.failure = op.failure.empty() ? e.reason : op.failure + "; then " + e.reason;
            } else {
              op.warning = e.reason;
            }
            return {};
          },
          [&](const Resumed& e) -> Result {
            if (e.snapshot.id != op.id) {
              return std::unexpected("Resumed snapshot of " + e.snapshot.id + " in the stream of " +
                                     op.id);
            }
            if (e.snapshot.kind != op.kind) {
              return std::unexpected("Resumed snapshot of a " +
                                     std::string{to_string(e.snapshot.kind)} +
                                     " in the stream of a " + std::string{to_string(op.kind)});
            }
            // The annotation may lag the journal by the one transition a crash between the
            // two leaves, or lead it by any number of transitions the machine allows: those were
            // taken by another process with a journal of its own (`stsresize advance
            // --apply-locally`, a controller on another volume). Going back further is refused.
            const bool lags_by_at_most_one =
                e.snapshot.phase == op.phase || e.snapshot.phase == previous_phase_;
            if (!lags_by_at_most_one &&
                !reachable(rules(), op.phase, e.snapshot.phase, op.failed_in)) {
              return std::unexpected(
                  "Resumed at phase " + std::string{to_string(e.snapshot.phase)} +
                  " but the journal is at " + std::string{to_string(op.phase)} +
                  ": the annotation may lag the journal by one transition at most, or lead it "
                  "by transitions the state machine allows");
            }
            if (e.snapshot.phase != op.phase) previous_phase_.reset();
            op = e.snapshot;
            return {};
          },
          [&](const ApprovalAwaited& e) -> Result {
            if (auto ok = in_phase(e.from); !ok) return ok;
            if (e.event == Trigger::CriticalError ||
                !rules().allowed(e.from, e.event, op.sources_intact(), e.to)) {
              return std::unexpected("ApprovalAwaited for " + std::string{to_string(e.from)} +
                                     " -> " + std::string{to_string(e.to)} + " on " +
                                     std::string{to_string(e.event)} +
                                     ", which the state machine does not allow or never holds");
            }
            op.awaiting = AwaitedApproval{e.from, e.to, e.event};
            return {};
          },
          [&](const OperatorAction& e) -> Result {
            if (e.action.empty() || e.by.empty() || e.nonce.empty()) {
              return std::unexpected("OperatorAction without an action, a person or a nonce");
            }
            // The verb as journaled; a refused request may hold anything a person wrote.
            const std::optional<Action> taken =
                e.refused.empty() ? parse_action(e.action) : std::nullopt;
            if (taken == Action::Retry) {
              // Sources intact: the old operation's last word, a new operation starts from them.
              // Sources replaced: the PhaseChanged on Resume follows in the same append.
              const bool resumable =
                  op.failed_in && rules().allowed(Phase::Failed, Trigger::Resume, false,
                                                  *op.failed_in, op.failed_in);
              if (op.phase != Phase::Failed || (!op.sources_intact() && !resumable)) {
                return std::unexpected(
                    "OperatorAction retry accepted in phase " + std::string{to_string(op.phase)} +
                    (op.sources_intact() ? "" : " after a source delete, not resumable"));
              }
              resume_taken_ = !op.sources_intact();
              return {};
            }
            if (taken == Action::Skip) {
              // Taken only in the phase the person saw and where the rules let a step be
              // skipped; the PhaseChanged on Skip follows in the same append.
              if (e.phase != op.phase) {
                return std::unexpected("OperatorAction skip of " + std::string{to_string(e.phase)} +
                                       " accepted in phase " + std::string{to_string(op.phase)});
              }
              if (auto allowed = check_skip(op, rules()); !allowed) {
                return std::unexpected("OperatorAction skip accepted in phase " +
                                       std::string{to_string(op.phase)} + ": " +
                                       explain(allowed.error(), op));
              }
              return {};
            }
            if (taken == Action::Abort) {
              // Taken only where the rules let a person abort (sources intact); the
              // PhaseChanged on Abort follows in the same append.
              if (auto allowed = check_abort(op, rules()); !allowed) {
                return std::unexpected("OperatorAction abort accepted in phase " +
                                       std::string{to_string(op.phase)} + ": " +
                                       explain(allowed.error(), op));
              }
              op.aborted_by = e.by;
              return {};
            }
            if (e.refused.empty() && (!op.awaiting || op.awaiting->from != e.phase)) {
              return std::unexpected("OperatorAction " + e.action + " accepted in phase " +
                                     std::string{to_string(e.phase)} +
                                     " while no transition from it awaited approval");
            }
            return {};
          },
          [&](const DrainPlanned& e) -> Result {
            if (auto ok = in_phase(Phase::Pending); !ok) return ok;
            if (op.kind != OperationKind::Drain) {
              return std::unexpected("DrainPlanned in an operation of kind " +
                                     std::string{to_string(op.kind)});
            }
            if (!op.drains.empty()) return std::unexpected("DrainPlanned twice");
            if (e.ordinals.empty()) return std::unexpected("DrainPlanned without ordinals");
            for (const OrdinalDrain& d : e.ordinals) {
              if (d.claims.empty() || d.ended() || !d.pod_uid.empty() ||
                  std::ranges::any_of(d.claims, [](const OrdinalClaim& c) { return c.deleted; })) {
                return std::unexpected("DrainPlanned: ordinal " + std::to_string(d.ordinal) +
                                       " without claims or with progress already");
              }
            }
            if (e.delete_after < Duration{0}) {
              return std::unexpected("DrainPlanned with a negative delete-after");
            }
            op.drains = e.ordinals;
            op.delete_after = e.delete_after;
            return {};
          },
          [&](const CleanupPodCreated& e) -> Result {
            if (auto ok = in_phase(Phase::Draining); !ok) return ok;
            auto drain = drain_of(e.ordinal);
            if (!drain) return std::unexpected(drain.error());
            if ((*drain)->ended() || e.uid.empty()) {
              return std::unexpected("CleanupPodCreated for ordinal " + std::to_string(e.ordinal) +
                                     ", which is drained or cancelled, or without a uid");
            }
            if (op.delete_after > Duration{0}) {
              return std::unexpected(
                  "CleanupPodCreated in a drain by claim policy (no cleanup "
                  "pod runs)");
            }
            (*drain)->pod_uid = e.uid;
            return {};
          },
          [&](const CleanupSucceeded& e) -> Result {
            if (auto ok = in_phase(Phase::Draining); !ok) return ok;
            auto drain = drain_of(e.ordinal);
            if (!drain) return std::unexpected(drain.error());
            if ((*drain)->ended()) {
              return std::unexpected("CleanupSucceeded for ordinal " + std::to_string(e.ordinal) +
                                     " after it ended");
            }
            if (op.delete_after > Duration{0}) {
              // A drain by claim policy has no cleanup pod: its "success" is the delay elapsed.
              if (record.time < op.phase_since + op.delete_after) {
                return std::unexpected("CleanupSucceeded for ordinal " + std::to_string(e.ordinal) +
                                       " before the claim policy's delete-after elapsed");
              }
            } else if ((*drain)->pod_uid.empty()) {
              return std::unexpected("CleanupSucceeded for ordinal " + std::to_string(e.ordinal) +
                                     " without a cleanup pod");
            }
            (*drain)->succeeded = true;
            return {};
          },
          [&](const DrainCancelled& e) -> Result {
            if (op.phase != Phase::Draining && op.phase != Phase::DeletingClaims &&
                op.phase != Phase::StoppingDrain) {
              return std::unexpected("DrainCancelled in phase " + std::string{to_string(op.phase)});
            }
            auto drain = drain_of(e.ordinal);
            if (!drain) return std::unexpected(drain.error());
            if (!(*drain)->cancelled.empty() || e.reason.empty()) {
              return std::unexpected("DrainCancelled twice for ordinal " +
                                     std::to_string(e.ordinal) + ", or without a reason");
            }
            (*drain)->cancelled = e.reason;
            return {};
          },
          [&](const VolumeRetained& e) -> Result {
            if (op.kind == OperationKind::Recovery) {
              if (auto ok = in_phase(Phase::ReplacingVolume); !ok) return ok;
              LostClaim* lost = lost_claim_of(e.claim);
              if (lost == nullptr || e.role != VolumeRole::Source || e.volume != lost->volume ||
                  e.policy.empty() || lost->deleted) {
                return std::unexpected("VolumeRetained of " + e.claim + " (" + e.volume +
                                       ") is not of a lost claim not yet deleted");
              }
              lost->policy = e.policy;
              return {};
            }
            if (auto ok = in_phase(Phase::Recreating); !ok) return ok;
            if (op.path != Path::Rebind)
              return std::unexpected("VolumeRetained off the rebind path");
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (e.volume.empty() || e.policy.empty()) {
              return std::unexpected("VolumeRetained without a volume or a policy");
            }
            if (!(*claim)->backup_verified) {
              return std::unexpected("VolumeRetained for " + e.claim +
                                     " before its copy was verified");
            }
            if (e.role == VolumeRole::Source) {
              if (e.volume != (*claim)->source_volume) {
                return std::unexpected("VolumeRetained names " + e.volume + " as the volume of " +
                                       e.claim + ", planned on " + (*claim)->source_volume);
              }
              if ((*claim)->source_deleted) {
                return std::unexpected("VolumeRetained after the source " + e.claim +
                                       " was deleted");
              }
              (*claim)->source_policy = e.policy;
            } else {
              (*claim)->copy_volume = e.volume;
              (*claim)->copy_policy = e.policy;
            }
            return {};
          },
          [&](const ReclaimPolicyRestored& e) -> Result {
            if (op.path != Path::Rebind) {
              return std::unexpected("ReclaimPolicyRestored off the rebind path");
            }
            if (op.phase != Phase::CleaningUp && op.phase != Phase::ScalingBack) {
              return std::unexpected(type + " in phase " + std::string{to_string(op.phase)} +
                                     " (belongs to CleaningUp or ScalingBack)");
            }
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            const bool source = e.role == VolumeRole::Source;
            if ((source ? (*claim)->source_policy : (*claim)->copy_policy).empty()) {
              return std::unexpected("ReclaimPolicyRestored for " + e.claim +
                                     ", whose volume was never kept");
            }
            // The old volume goes back to its policy (and is released by it) only once the claim
            // is on its verified copy, or, scaling back, on the old volume again.
            if (source && op.phase == Phase::CleaningUp && !(*claim)->restore_verified) {
              return std::unexpected("the old volume of " + e.claim +
                                     " released before the claim was on its verified copy");
            }
            if (source && op.phase == Phase::ScalingBack && (*claim)->source_deleted) {
              return std::unexpected("the volume of " + e.claim +
                                     " given back its policy before the claim was on it again");
            }
            (source ? (*claim)->source_policy_restored : (*claim)->copy_policy_restored) = true;
            return {};
          },
          [&](const SourceRebound& e) -> Result {
            if (auto ok = in_phase(Phase::ScalingBack); !ok) return ok;
            if (op.path != Path::Rebind)
              return std::unexpected("SourceRebound off the rebind path");
            auto claim = claim_of(e.claim);
            if (!claim) return std::unexpected(claim.error());
            if (!(*claim)->source_deleted || (*claim)->source_policy.empty() ||
                (*claim)->source_policy_restored || e.uid.empty()) {
              return std::unexpected("SourceRebound for " + e.claim +
                                     ", whose source was not deleted with its volume kept");
            }
            (*claim)->source_deleted = false;
            (*claim)->source_uid = e.uid;
            (*claim)->recreated_uid.clear();
            (*claim)->restore_verified.reset();
            return {};
          },
          [&](const DrainedClaimDeleted& e) -> Result {
            if (auto ok = in_phase(Phase::DeletingClaims); !ok) return ok;
            for (OrdinalDrain& d : op.drains) {
              for (OrdinalClaim& c : d.claims) {
                if (c.claim != e.claim) continue;
                if (!d.succeeded || !d.cancelled.empty()) {
                  return std::unexpected("claim " + e.claim +
                                         " deleted while its ordinal's cleanup has not succeeded "
                                         "or its drain was cancelled");
                }
                c.deleted = true;
                return {};
              }
            }
            return std::unexpected("DrainedClaimDeleted names claim \"" + e.claim +
                                   "\", which is not in the drain");
          },
          [&](const ReplicaLost& e) -> Result {
            if (auto ok = in_phase(Phase::Pending); !ok) return ok;
            if (op.kind != OperationKind::Recovery) {
              return std::unexpected("ReplicaLost in an operation of kind " +
                                     std::string{to_string(op.kind)});
            }
            if (op.lost) return std::unexpected("ReplicaLost twice");
            if (e.lost.claims.empty() || e.lost.node.empty() || e.lost.any_deleted() ||
                e.lost.pod_deleted || !e.lost.cancelled.empty() ||
                std::ranges::any_of(e.lost.claims,
                                    [](const LostClaim& c) { return !c.policy.empty(); })) {
              return std::unexpected("ReplicaLost without claims or a node, or with progress");
            }
            op.lost = e.lost;
            return {};
          },
          [&](const RecoveryCancelled& e) -> Result {
            if (op.phase != Phase::AwaitingNode && op.phase != Phase::ReplacingVolume) {
              return std::unexpected("RecoveryCancelled in phase " +
                                     std::string{to_string(op.phase)});
            }
            if (!op.lost || op.lost->any_deleted() || e.reason.empty() ||
                !op.lost->cancelled.empty()) {
              return std::unexpected(
                  "RecoveryCancelled after a lost claim was deleted, twice, "
                  "or without a reason");
            }
            op.lost->cancelled = e.reason;
            return {};
          },
          [&](const LostClaimDeleted& e) -> Result {
            if (auto ok = in_phase(Phase::ReplacingVolume); !ok) return ok;
            LostClaim* lost = lost_claim_of(e.claim);
            if (lost == nullptr) {
              return std::unexpected("LostClaimDeleted names claim \"" + e.claim +
                                     "\", which is not lost");
            }
            if (lost->policy.empty()) {
              return std::unexpected("LostClaimDeleted of " + e.claim +
                                     " before its volume was kept (Retain)");
            }
            if (!op.lost->cancelled.empty()) {
              return std::unexpected("LostClaimDeleted in a cancelled recovery");
            }
            lost->deleted = true;
            return {};
          },
          [&](const LostPodDeleted&) -> Result {
            if (auto ok = in_phase(Phase::ReplacingVolume); !ok) return ok;
            if (!op.lost || !std::ranges::all_of(op.lost->claims,
                                                 [](const LostClaim& c) { return c.deleted; })) {
              return std::unexpected("LostPodDeleted before every lost claim was deleted");
            }
            op.lost->pod_deleted = true;
            return {};
          },
          [&](const MarkedRecovered& e) -> Result {
            if (auto ok = in_phase(Phase::MarkingReplica); !ok) return ok;
            if (e.uid.empty()) return std::unexpected("MarkedRecovered without a uid");
            if (LostClaim* lost = lost_claim_of(e.name)) {
              if (e.uid == lost->uid) {
                return std::unexpected("MarkedRecovered names the lost claim " + e.name +
                                       " itself");
              }
              lost->new_uid = e.uid;
              return {};
            }
            if (op.lost && e.name == op.statefulset + "-" + std::to_string(op.lost->ordinal)) {
              // Not necessarily a pod created since: one the StatefulSet controller made while
              // the claim still existed (Pending, placed nowhere) gets the new claims too.
              if (!std::ranges::all_of(op.lost->claims,
                                       [](const LostClaim& c) { return !c.new_uid.empty(); })) {
                return std::unexpected("MarkedRecovered of the pod before its new claims");
              }
              op.lost->new_pod_uid = e.uid;
              return {};
            }
            return std::unexpected("MarkedRecovered names \"" + e.name +
                                   "\", neither a lost claim nor the replica's pod");
          },
          [&](const ReseedHeld&) -> Result {
            if (auto ok = in_phase(Phase::ReplacingVolume); !ok) return ok;
            if (!op.lost || op.lost->reseed || op.lost->any_deleted() ||
                !op.lost->cancelled.empty()) {
              return std::unexpected(
                  "ReseedHeld twice, after a lost claim was deleted, or in a cancelled recovery");
            }
            op.lost->reseed = true;
            return {};
          },
          [&](const ReseedPodCreated& e) -> Result {
            if (auto ok = in_phase(Phase::Reseeding); !ok) return ok;
            if (!op.lost || !op.lost->reseed || !op.lost->reseed_pod_uid.empty() ||
                op.lost->reseed_ended || e.pod.empty() || e.uid.empty()) {
              return std::unexpected(
                  "ReseedPodCreated without a re-seed, twice, after it ended, or without its pod");
            }
            op.lost->reseed_pod_uid = e.uid;
            return {};
          },
          [&](const ReseedEnded& e) -> Result {
            if (auto ok = in_phase(Phase::Reseeding); !ok) return ok;
            if (!op.lost || !op.lost->reseed || op.lost->reseed_ended) {
              return std::unexpected("ReseedEnded without a re-seed, or twice");
            }
            if (e.failure.empty() && op.lost->reseed_pod_uid.empty()) {
              return std::unexpected("ReseedEnded succeeded without a re-seed pod");
            }
            op.lost->reseed_ended = true;
            op.lost->reseed_failure = e.failure;
            return {};
          },
          [&](const OperationFinished& e) -> Result {
            if (!is_terminal(e.outcome) || e.outcome != op.phase) {
              return std::unexpected("OperationFinished with outcome " +
                                     std::string{to_string(e.outcome)} + " in phase " +
                                     std::string{to_string(op.phase)});
            }
            return {};
          },
      },
      event);
}

std::expected<Operation, ReplayError> fold(std::span<const JournalRecord> records,
                                           const TransitionRules& rules) {
  ValidatingFold folder{rules};
  for (const JournalRecord& record : records) {
    if (auto applied = folder.apply(record); !applied) return std::unexpected(applied.error());
  }
  if (!folder.state()) return std::unexpected(ReplayError{0, "no records"});
  return *folder.state();
}

}  // namespace stsresize
