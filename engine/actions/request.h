#pragma once
// A person's `stsresize advance`, as it travels to the engine. Two annotations on the
// StatefulSet:
//
//   stsresize.dev/mode     written by the user: "auto" (default, absent), "manual" (every
//                          transition after the start waits for approval) or "step" (only the
//                          transition into Recreating, which deletes the source claims, waits)
//   stsresize.dev/advance  written by `stsresize advance` (optimistic, with the StatefulSet's
//                          resourceVersion) and removed by the engine when it consumes it:
//                          {"action":"approve","phase":"BackingUp","operation":"<id>",
//                           "by":"alice","at":"2027-...Z","nonce":"<random hex>"}
//
// What each action may do, and why not, is engine/actions/rules.h; the text people read about
// it is engine/actions/explain.h. Pure: no I/O here.
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "engine/json.h"
#include "engine/operation.h"
#include "engine/vocabulary.h"

namespace stsresize {

// What a person asks of an operation. Each has one rule (engine/actions/rules.h) that the CLI
// and the engine both decide with, and one Trigger row kind in the state machine:
//   Approve  lets a transition that waits (stsresize.dev/mode) happen;
//   Abort    rolls the operation back (ScalingBack, then Failed) while its sources are intact;
//   Retry    starts a Failed operation again as a new operation when its sources are intact,
//            or resumes it in the phase it failed in once they were replaced;
//   Skip     leaves the current step where the table has a Skip row (CleaningUp).
enum class Action { Approve, Abort, Retry, Skip };
inline constexpr Action kAllActions[] = {Action::Approve, Action::Abort, Action::Retry,
                                         Action::Skip};
// "approve", "abort", "retry", "skip": the annotation's and the journal's spelling.
std::string_view to_string(Action action);
std::optional<Action> parse_action(std::string_view text);

enum class ApprovalMode { Auto, Manual, Step };
std::string_view to_string(ApprovalMode mode);

struct ModeSetting {
  ApprovalMode mode = ApprovalMode::Auto;
  // Set when the annotation holds something else than auto|manual|step: the mode is then
  // Manual (waiting is the safe reading of a typo), and this says why.
  std::string invalid;
};
ModeSetting approval_mode_of(const Json& statefulset);

// Whether `mode` holds the transition from -> to on `event` for approval. Error transitions
// (CriticalError, ScaleBackDone, BackupStale, RecreateAgain, NodeReturned) and a person's own
// (Abort, Skip) never wait: they protect the data or are already a person's decision.
bool needs_approval(ApprovalMode mode, Phase from, Phase to, Trigger event);

struct AdvanceRequest {
  Action action = Action::Approve;
  Phase phase = Phase::Pending;
  std::string operation;
  std::string by;
  std::string at;
  std::string nonce;
  friend bool operator==(const AdvanceRequest&, const AdvanceRequest&) = default;
};
std::string encode_advance_request(const AdvanceRequest& request);
// Strict: every field present, a string, non-empty; a known action and phase; no other key.
std::expected<AdvanceRequest, std::string> decode_advance_request(std::string_view text);
// The annotation's text; nullopt when the StatefulSet has none.
std::optional<std::string> advance_request_of(const Json& statefulset);

}  // namespace stsresize
