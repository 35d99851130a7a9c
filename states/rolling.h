#pragma once
// The rolling strategy (Strategy::Rolling): one ordinal at a time while the other replicas
// serve. The StatefulSet controller creates again any pod that goes, so before a replica is
// stopped the StatefulSet is *paused*: given the finalizer stsresize.dev/rolling and deleted with
// propagation Background. The object stays (being deleted, held by the finalizer), its pods keep
// it as their owner (a PodDisruptionBudget still counts them against its replicas), and the
// StatefulSet controller does nothing for a set being deleted but update its status: no pod is
// created again, no claim either. Its annotations can still be written, so the operation's state
// stays on it. To resume, it is deleted again with propagation Orphan (the garbage collector
// takes its pods' owner reference away), its definition is saved in the ConfigMap UpdatingTemplate
// uses, the finalizer is removed (the object goes) and it is created again from the ConfigMap:
// the new object adopts the running pods, without restarting them, and creates the missing one.
#include <optional>
#include <string>

#include "states/step.h"

namespace stsresize::steps {

// Being deleted and held by kRollingFinalizer: its controller creates nothing.
bool paused(const Json& statefulset);

// The pod "<sts>-<ordinal>".
ObjectRef replica_ref(const Operation& op, int ordinal);

// Pauses the StatefulSet, one act per call (the finalizer, then the Background delete with the
// uid precondition). nullopt once it is paused.
std::optional<StepOutcome> pause_statefulset(StepContext& ctx);

// The reverse, one act per call, ending with the object created again and its uid recorded
// (StatefulSetRecreated) and the ConfigMap of its definition deleted: the Orphan delete, the
// definition saved (DefinitionSaved, then the ConfigMap, with the operation's current state), the
// finalizer removed, the object created from the ConfigMap. nullopt once it runs again.
std::optional<StepOutcome> resume_statefulset(StepContext& ctx);

// A PodDisruptionBudget refused the eviction of the rolling ordinal's replica: a Warning
// EvictionBlocked quoting the API server, given once per phase (kept as the operation's
// warning), and the step waits; nothing is paused or deleted meanwhile.
StepOutcome eviction_blocked(StepContext& ctx, const std::string& pod, const KubeError& refusal);

}  // namespace stsresize::steps
