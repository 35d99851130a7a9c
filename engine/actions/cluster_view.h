#pragma once
// What the rules of a person's actions (engine/actions/rules.h) read from the cluster, picked
// out of the objects the caller listed. Pure.
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"

namespace stsresize {

// The planned source claims (op.claims, not yet recorded deleted) that are missing from
// `live_claims` (the namespace's PVCs), carry another uid, or have a deletionTimestamp.
std::vector<std::string> sources_going(const Operation& op, const std::vector<Json>& live_claims);

// Whether `object` carries the label stsresize.dev/operation of `op`.
bool labelled_by(const Json& object, const Operation& op);
// The names of `objects` (claims, Jobs) labelled stsresize.dev/operation=<op>.
std::vector<std::string> labelled_with(const Operation& op, const std::vector<Json>& objects);

// The operation's Jobs (label and annotation stsresize.dev/operation) that failed: what made
// the step fail. A resume deletes them first, so that the step creates them again instead of
// reading the same failure.
std::vector<Json> failed_jobs(const Operation& op, const std::vector<Json>& jobs);

// What the StatefulSet asks for now: the trigger of the resize a new operation would start
// (its stsresize.dev/resize request if one is there, else its templates against its claims),
// or why none would start. `storage_classes` nullopt: they could not be read.
std::expected<std::string, std::string> wanted_resize(
    const Json& statefulset, const std::vector<Json>& claims,
    const std::optional<std::vector<Json>>& storage_classes);

// What the StatefulSet asks of a drain now: the trigger of the drain a new operation would
// start (engine/drain_plan.h), or why none would.
std::expected<std::string, std::string> wanted_drain(const Json& statefulset,
                                                     const std::vector<Json>& claims,
                                                     const std::vector<Json>& pods);

}  // namespace stsresize
