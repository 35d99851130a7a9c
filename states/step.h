#pragma once
// The contract of every step (one file per phase under states/): read the cluster, perform AT
// MOST ONE mutating Kubernetes call, report. Idempotent: running a step again after a crash,
// at any point, converges to the same result without repeating a side effect that already
// happened. Before a side effect the step calls journal.intend() (no journal entry, no act);
// progress (a verified backup, a deleted source...) is reported through journal.commit(),
// which journals the entry; the state annotation carrying it is written before the next
// intend(), at the next transition or at the end of the reconcile, so a step never acts on
// progress the cluster does not hold. After any mutating call a step returns Waiting(0): the
// reconciler calls again.
#include <expected>
#include <string>
#include <string_view>

#include "engine/fold.h"
#include "engine/operation.h"
#include "engine/ports/clock.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/kubernetes.h"
#include "engine/settings.h"

namespace stsresize {

// Implemented by the reconciler.
class StepJournal {
 public:
  virtual ~StepJournal() = default;
  // Appends ActionIntended{current phase, action, target, detail}. An error means the journal
  // could not record it: the step must not act.
  virtual std::expected<void, std::string> intend(std::string_view action, const ObjectRef& target,
                                                  std::string_view detail) = 0;
  // Journals a progress entry and applies it to the operation. The state annotation that makes
  // it authoritative is written before the next intend(), at the next transition or at the end
  // of the reconcile: a crash between leaves what a crash between an act and its entry leaves.
  virtual std::expected<void, std::string> commit(const Entry& entry) = 0;
  // Journals an entry that changes nothing in the operation (DefinitionSaved: the journal's
  // copy of what is about to be written); no annotation write. An error: the step must not act.
  virtual std::expected<void, std::string> append(const Entry& entry) = 0;
};

struct StepContext {
  Kubernetes& kube;
  const Clock& clock;
  EventRecorder& events;
  StepJournal& journal;
  const EngineSettings& settings;
  const Operation& op;  // changes only through journal.commit()
  // As read at the start of this step. Null only while the StatefulSet does not exist between
  // its delete and its re-create from the stored definition: in UpdatingTemplate, and in a
  // rolling resize's StartingReplica and ScalingBack (states/rolling.h).
  const Json& statefulset;
};

struct StepOutcome {
  enum class Kind { Done, Waiting, Transient, Critical };
  Kind kind = Kind::Waiting;
  Duration requeue_after{0};
  std::string message;
  // The machine event a Done fires (Planning chooses between PlannedCopy and PlannedExpand).
  Trigger event = Trigger::StepDone;

  static StepOutcome done(Trigger event = Trigger::StepDone) {
    return {Kind::Done, Duration{0}, {}, event};
  }
  // Waiting(0): a side effect happened, call again now.
  static StepOutcome waiting(Duration after, std::string why = {}) {
    return {Kind::Waiting, after, std::move(why), Trigger::StepDone};
  }
  static StepOutcome transient(std::string error) {
    return {Kind::Transient, Duration{0}, std::move(error), Trigger::StepDone};
  }
  static StepOutcome critical(std::string reason) {
    return {Kind::Critical, Duration{0}, std::move(reason), Trigger::StepDone};
  }
  bool is(Kind k) const { return kind == k; }
};

using Step = StepOutcome (*)(StepContext&);

StepOutcome measure_step(StepContext& ctx);          // Measuring
StepOutcome update_template_step(StepContext& ctx);  // UpdatingTemplate
StepOutcome plan_step(StepContext& ctx);             // Planning
StepOutcome pre_copy_step(StepContext& ctx);         // PreCopying
StepOutcome scale_down_step(StepContext& ctx);       // ScalingDown
StepOutcome backup_step(StepContext& ctx);           // BackingUp
StepOutcome recreate_step(StepContext& ctx);         // Recreating
StepOutcome restore_step(StepContext& ctx);          // Restoring
StepOutcome scale_up_step(StepContext& ctx);         // ScalingUp
StepOutcome cleanup_step(StepContext& ctx);          // CleaningUp
StepOutcome expand_step(StepContext& ctx);           // Expanding
StepOutcome scale_back_step(StepContext& ctx);       // ScalingBack
StepOutcome stop_replica_step(StepContext& ctx);     // StoppingReplica (rolling)
StepOutcome start_replica_step(StepContext& ctx);    // StartingReplica (rolling)
// The scale-down drain's.
StepOutcome drain_start_step(StepContext& ctx);     // Pending
StepOutcome drain_step(StepContext& ctx);           // Draining
StepOutcome delete_drained_step(StepContext& ctx);  // DeletingClaims
StepOutcome stop_drain_step(StepContext& ctx);      // StoppingDrain
// The lost-volume recovery's.
StepOutcome await_node_step(StepContext& ctx);           // AwaitingNode
StepOutcome replace_volume_step(StepContext& ctx);       // ReplacingVolume
StepOutcome reseed_step(StepContext& ctx);               // Reseeding
StepOutcome mark_recovered_step(StepContext& ctx);       // MarkingReplica
StepOutcome recovery_scale_back_step(StepContext& ctx);  // ScalingBack (recovery)

// The step of `phase` in an operation of `kind`; nullptr for the terminal phases and a
// resize's Pending (it begins in its first phase): there is nothing to do in them.
Step step_for(OperationKind kind, Phase phase);

}  // namespace stsresize
