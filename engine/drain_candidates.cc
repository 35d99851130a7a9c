#include "engine/drain_candidates.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "engine/cleanup_pod.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"

namespace stsresize {

namespace {

// Ordinal of "<prefix><digits>" where digits is a canonical non-negative integer, or nullopt.
std::optional<int> ordinal_of(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  // from_chars would take "-0" for 0: only digits, and no leading zero.
  if (!std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  int ordinal = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
  if (error != std::errc{} || end != digits.data() + digits.size() || ordinal < 0) {
    return std::nullopt;
  }
  return ordinal;
}

std::unexpected<DrainCandidatesError> unreadable(DrainUnreadable what, std::string detail) {
  return std::unexpected(DrainCandidatesError{what, std::move(detail)});
}

DrainWait waiting(DrainWaitReason reason, std::string pod = {}) {
  DrainWait wait;
  wait.reason = reason;
  wait.pod = std::move(pod);
  return wait;
}

const Json* at(const Json& object, std::initializer_list<std::string_view> path) {
  const Json* current = &object;
  for (std::string_view key : path) {
    if (!current->is_object()) return nullptr;
    const auto it = current->find(key);
    if (it == current->end() || it->is_null()) return nullptr;
    current = &*it;
  }
  return current;
}

}  // namespace

bool claims_deleted_when_scaled(const Json& statefulset) {
  const Json* policy =
      at(statefulset, {"spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"});
  return policy != nullptr && policy->is_string() && policy->get<std::string>() == "Delete";
}

std::expected<DrainCandidates, DrainCandidatesError> drain_candidates(const Json& statefulset,
                                                                      std::span<const Json> claims,
                                                                      std::span<const Json> pods) {
  const std::string what = k8s::describe(statefulset);
  auto sts_name = k8s::name(statefulset);
  if (!sts_name) return unreadable(DrainUnreadable::StatefulSet, sts_name.error());
  auto replicas = k8s::spec_replicas(statefulset);
  if (!replicas) return unreadable(DrainUnreadable::StatefulSet, replicas.error());
  auto templates = k8s::claim_templates(statefulset);
  if (!templates) return unreadable(DrainUnreadable::StatefulSet, templates.error());
  auto selector = k8s::selector_match_labels(statefulset);
  if (!selector) return unreadable(DrainUnreadable::StatefulSet, selector.error());
  auto generation = k8s::generation(statefulset);
  if (!generation) return unreadable(DrainUnreadable::StatefulSet, generation.error());
  auto status = k8s::statefulset_status(statefulset);
  if (!status) return unreadable(DrainUnreadable::StatefulSet, status.error());
  std::int64_t start = 0;
  if (const Json* given = at(statefulset, {"spec", "ordinals", "start"}); given != nullptr) {
    if (!given->is_number_integer() || given->get<std::int64_t>() < 0 ||
        given->get<std::int64_t>() > std::numeric_limits<std::int32_t>::max()) {
      return unreadable(DrainUnreadable::StatefulSet,
                        what + ": spec.ordinals.start is not a non-negative integer");
    }
    start = given->get<std::int64_t>();
  }
  // A StatefulSet being deleted keeps no replica: every ordinal is a candidate, and its
  // controller, which no longer acts on it, has nothing left to observe.
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return unreadable(DrainUnreadable::StatefulSet, deleting.error());
  const auto in_range = [&](int ordinal) {
    return !*deleting && ordinal >= start && ordinal < start + static_cast<std::int64_t>(*replicas);
  };

  // Reasons that hold for every ordinal: the StatefulSet controller has not yet acted on the
  // scale-down, or its pods are still going.
  std::vector<DrainWait> set_waits;
  const bool observed_present = at(statefulset, {"status", "observedGeneration"}) != nullptr;
  if (*deleting) {
    // No set-wide wait: the pods left are the replicas (NameTaken, ClaimInUse per ordinal).
  } else if (!observed_present || status->observed_generation < *generation) {
    DrainWait wait = waiting(DrainWaitReason::NotObserved);
    wait.generation = *generation;
    wait.observed_generation = status->observed_generation;
    set_waits.push_back(std::move(wait));
  }
  if (!*deleting && status->replicas > *replicas) {
    DrainWait wait = waiting(DrainWaitReason::PodsTerminating);
    wait.spec_replicas = *replicas;
    wait.status_replicas = status->replicas;
    set_waits.push_back(std::move(wait));
  }

  // Pods: who mounts which claim (cleanup pods of this set aside), and the cleanup pods.
  std::map<std::string, std::set<std::string>> users;  // claim -> pods, not cleanup pods
  std::map<std::string, bool> pod_is_cleanup;          // pod name -> is a cleanup pod
  std::map<int, ExistingCleanupPod, std::greater<>> cleanup_pods;
  const std::string pod_prefix = *sts_name + "-";
  for (const Json& pod : pods) {
    auto name = k8s::name(pod);
    if (!name) return unreadable(DrainUnreadable::Pod, name.error());
    const bool cleanup = is_cleanup_pod(pod, *sts_name);
    pod_is_cleanup[*name] = cleanup;
    if (cleanup) {
      auto ordinal = ordinal_of(*name, pod_prefix);
      if (!ordinal) continue;
      auto uid = k8s::uid(pod);
      if (!uid) return unreadable(DrainUnreadable::Pod, uid.error());
      auto phase = k8s::pod_phase(pod);
      if (!phase) return unreadable(DrainUnreadable::Pod, phase.error());
      auto deleting = k8s::is_being_deleted(pod);
      if (!deleting) return unreadable(DrainUnreadable::Pod, deleting.error());
      cleanup_pods[*ordinal] = {*name, *uid, *phase, *deleting};
      continue;
    }
    auto mounted = k8s::mounted_claims(pod);
    if (!mounted) return unreadable(DrainUnreadable::Pod, mounted.error());
    for (const std::string& claim : *mounted) users[claim].insert(*name);
  }

  std::map<std::string, const Json*> claims_by_name;
  for (const Json& claim : claims) {
    auto name = k8s::name(claim);
    if (!name) return unreadable(DrainUnreadable::Claim, name.error());
    claims_by_name.emplace(*name, &claim);
  }

  DrainCandidates out;
  std::map<int, DrainCandidate, std::greater<>> candidates;
  for (const k8s::ClaimTemplate& tmpl : *templates) {
    const std::string prefix = tmpl.name + "-" + *sts_name + "-";
    for (const auto& [name, claim] : claims_by_name) {
      auto ordinal = ordinal_of(name, prefix);
      if (!ordinal || in_range(*ordinal)) continue;
      auto deleting = k8s::is_being_deleted(*claim);
      if (!deleting) return unreadable(DrainUnreadable::Claim, deleting.error());
      if (*deleting) continue;
      auto claim_labels = k8s::labels(*claim);
      if (!claim_labels) return unreadable(DrainUnreadable::Claim, claim_labels.error());
      const auto foreign = std::ranges::find_if(*selector, [&](const auto& entry) {
        auto label = claim_labels->find(entry.first);
        return label != claim_labels->end() && label->second != entry.second;
      });
      if (foreign != selector->end()) {
        out.left_alone.push_back(
            {name, foreign->first, claim_labels->at(foreign->first), foreign->second});
        continue;
      }
      auto uid = k8s::uid(*claim);
      if (!uid) return unreadable(DrainUnreadable::Claim, uid.error());
      DrainCandidate& candidate = candidates[*ordinal];
      candidate.ordinal = *ordinal;
      candidate.claims.push_back({tmpl.name, name, *uid});
    }
  }
  for (const auto& [ordinal, pod] : cleanup_pods) {
    if (in_range(ordinal)) {
      out.in_range_cleanup_pods.push_back(pod);
      continue;
    }
    DrainCandidate& candidate = candidates[ordinal];
    candidate.ordinal = ordinal;
    candidate.cleanup_pod = pod;
  }

  for (auto& [ordinal, candidate] : candidates) {
    candidate.waits = set_waits;
    for (const DrainClaim& claim : candidate.claims) {
      if (auto found = users.find(claim.name); found != users.end()) {
        for (const std::string& pod : found->second) {
          DrainWait wait = waiting(DrainWaitReason::ClaimInUse, pod);
          wait.claim = claim.name;
          candidate.waits.push_back(std::move(wait));
        }
      }
    }
    const std::string pod_name = pod_prefix + std::to_string(ordinal);
    if (auto found = pod_is_cleanup.find(pod_name);
        found != pod_is_cleanup.end() && !found->second) {
      candidate.waits.push_back(waiting(DrainWaitReason::NameTaken, pod_name));
    }
    out.candidates.push_back(std::move(candidate));
  }
  return out;
}

std::string explain(const DrainWait& wait) {
  switch (wait.reason) {
    case DrainWaitReason::NotObserved:
      return "the StatefulSet controller has not observed generation " +
             std::to_string(wait.generation) + " yet (" +
             (wait.observed_generation == 0
                  ? std::string{"no observedGeneration"}
                  : "observedGeneration " + std::to_string(wait.observed_generation)) +
             ")";
    case DrainWaitReason::PodsTerminating:
      return "the StatefulSet still has " + std::to_string(wait.status_replicas) + " pods for " +
             std::to_string(wait.spec_replicas) + " replicas (pods terminating)";
    case DrainWaitReason::ClaimInUse:
      return "pod " + wait.pod + " (not a cleanup pod of this StatefulSet) uses claim " +
             wait.claim;
    case DrainWaitReason::NameTaken:
      return "pod " + wait.pod + " exists and is not a cleanup pod: the cleanup pod needs its name";
  }
  return "waiting";
}

std::string explain(const ForeignClaim& claim) {
  return claim.name + " (label " + claim.label + "=" + claim.value + "; the selector says " +
         claim.label + "=" + claim.selector_value + ")";
}

std::string explain(const DrainCandidatesError& error) {
  // `detail` names the object and the field (engine/k8s_objects.h), whichever kind it is.
  return "cannot tell which claims to drain: " + error.detail;
}

}  // namespace stsresize
