#pragma once
// The drain a StatefulSet asks for now: the ordinals a scale-down left whose claims may be
// drained (engine/drain_candidates.h), as the plan of a new drain operation. Pure.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"

namespace stsresize {

struct DrainPlan {
  std::string trigger;  // for people: "scaled down to 2 replicas: ordinal 2 left to drain"
  std::vector<OrdinalDrain> ordinals;
};

// nullopt: the StatefulSet has not opted in (no cleanup pod template), or nothing can be
// drained now (no claim left outside the replicas, or each waits: the scale-down not observed
// yet, a pod still uses the claim...). An error: the StatefulSet, a claim or a pod is malformed.
// A StatefulSet being deleted is drained only when `cascade` says its delete removes the
// replicas (engine/statefulset_deletion.h: DeletionReading::Cascade): then every ordinal with a
// claim is planned, its replica's pod still there or not (the drain deletes it first). Without,
// nullopt: an orphan delete is not a scale-down.
std::expected<std::optional<DrainPlan>, std::string> plan_drain(const Json& statefulset,
                                                                const std::vector<Json>& claims,
                                                                const std::vector<Json>& pods,
                                                                bool cascade = false);

}  // namespace stsresize
