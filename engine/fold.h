#pragma once
// The fold: an operation's journal entries, applied one at a time, rebuild its state, and
// every entry is checked against the rules on the way (engine/journal_entries.h holds the
// entries themselves; reachable.h the one question about the rules the fold asks beside
// TransitionRules::allowed). A new entry type's fold rule goes in ValidatingFold::apply_event.
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "engine/journal_entries.h"
#include "engine/operation.h"
#include "engine/ports/journal.h"
#include "engine/transition_rules.h"

namespace stsresize {

struct ReplayError {
  std::int64_t sequence = 0;
  std::string message;
  friend bool operator==(const ReplayError&, const ReplayError&) = default;
};

// Folding one record at a time. Invariants checked on every record: sequences are gap-free,
// the first record is OperationStarted or Resumed, a PhaseChanged is one the rules allow
// from the current phase, progress events match the phase they belong to and never claim a
// delete before a verified backup, and a Resumed snapshot lags the journal by at most one
// transition.
class ValidatingFold {
 public:
  // `rules` must outlive the ValidatingFold. Copyable: apply to a trial copy, keep it if that
  // worked.
  explicit ValidatingFold(const TransitionRules& rules) : rules_(&rules) {}

  std::expected<void, ReplayError> apply(const JournalRecord& record);
  std::expected<void, ReplayError> apply(const JournalRecord& record, const Entry& event);
  // nullopt before the first record.
  const std::optional<Operation>& state() const { return state_; }

 private:
  std::expected<void, std::string> apply_event(const JournalRecord& record, const Entry& event);
  // The table of the operation's kind.
  const TransitionRules& rules() const {
    return rules_->of(state_ ? state_->kind : OperationKind::Resize);
  }

  const TransitionRules* rules_;
  std::optional<Operation> state_;
  std::optional<Phase> previous_phase_;
  // The last record applied was an accepted OperatorAction skip: only then may a PhaseChanged
  // on Skip follow (the engine never skips a step on its own).
  bool skip_taken_ = false;
  // An accepted retry of an operation whose sources were replaced: the next record must be
  // its PhaseChanged on Resume, and a Resume needs one.
  bool resume_taken_ = false;
};

std::expected<Operation, ReplayError> fold(std::span<const JournalRecord> records,
                                           const TransitionRules& rules);

}  // namespace stsresize
