#pragma once
// Small readers shared by the simulated controllers (adapters/fake/simulated_*.cc). Lenient on
// purpose: a controller skips what it cannot read rather than crash the test.
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::sim {

// The value at `path`, or null.
const Json& at(const Json& object, std::initializer_list<const char*> path);
// The string at `path`, or "".
std::string text(const Json& object, std::initializer_list<const char*> path);
std::int64_t integer(const Json& object, std::initializer_list<const char*> path,
                     std::int64_t fallback);

bool is_deleting(const Json& object);
bool has_owner(const Json& object, const std::string& owner_uid);
// An ownerReferences entry naming `owner` as controller.
Json controller_reference(Kind kind, const Json& owner);
void remove_finalizer(Json& object, const std::string& finalizer);
bool has_finalizer(const Json& object, const std::string& finalizer);

bool pod_is_ready(const Json& pod);
bool pod_is_terminated(const Json& pod);  // Succeeded or Failed
// Claim names of the pod's persistentVolumeClaim volumes, with the volume names.
std::vector<std::pair<std::string, std::string>> pod_claims(const Json& pod);

// A status.conditions entry with both timestamps at `now`.
Json condition(const std::string& type, const std::string& reason, const std::string& message,
               const std::string& now);

}  // namespace stsresize::sim
