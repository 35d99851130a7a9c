#include "states/drain_support.h"

#include <algorithm>

#include "engine/cleanup_pod.h"
#include "engine/k8s_objects.h"
#include "engine/timestamp.h"
#include "states/step_support.h"

namespace stsresize::drain {

std::expected<bool, std::string> is_replica(const Json& statefulset, int ordinal) {
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return std::unexpected(deleting.error());
  if (*deleting) return false;  // a StatefulSet being deleted keeps no replica
  auto replicas = k8s::spec_replicas(statefulset);
  if (!replicas) return std::unexpected(replicas.error());
  std::int64_t start = 0;
  const Json& spec = statefulset.value("spec", Json::object());
  if (spec.contains("ordinals") && spec["ordinals"].is_object() &&
      spec["ordinals"].contains("start")) {
    const Json& value = spec["ordinals"]["start"];
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
      return std::unexpected("spec.ordinals.start is not a non-negative integer");
    }
    start = value.get<std::int64_t>();
  }
  return ordinal >= start && ordinal < start + *replicas;
}

std::expected<bool, std::string> scale_down_observed(const Json& statefulset) {
  auto deleting = k8s::is_being_deleted(statefulset);
  if (!deleting) return std::unexpected(deleting.error());
  if (*deleting) return true;  // its controller no longer acts on it: nothing left to observe
  auto generation = k8s::generation(statefulset);
  auto status = k8s::statefulset_status(statefulset);
  auto replicas = k8s::spec_replicas(statefulset);
  if (!generation) return std::unexpected(generation.error());
  if (!status) return std::unexpected(status.error());
  if (!replicas) return std::unexpected(replicas.error());
  return status->observed_generation >= *generation && status->replicas <= *replicas;
}

const Json* find_pod(std::span<const Json> pods, const std::string& name) {
  for (const Json& pod : pods) {
    auto pod_name = k8s::name(pod);
    if (pod_name && *pod_name == name) return &pod;
  }
  return nullptr;
}

std::vector<std::string> claim_users(std::span<const Json> pods, const OrdinalDrain& drain,
                                     const std::string& sts) {
  std::vector<std::string> users;
  for (const Json& pod : pods) {
    if (is_cleanup_pod(pod, sts)) continue;
    auto mounted = k8s::mounted_claims(pod);
    if (!mounted) continue;
    const bool uses = std::ranges::any_of(*mounted, [&](const std::string& claim) {
      return std::ranges::any_of(drain.claims,
                                 [&](const OrdinalClaim& c) { return c.claim == claim; });
    });
    if (uses) users.push_back(k8s::name(pod).value_or("?"));
  }
  return users;
}

std::string pod_name(const Operation& op, int ordinal) {
  return op.statefulset + "-" + std::to_string(ordinal);
}

StepOutcome record_and_tell(StepContext& ctx, const Entry& entry, std::string_view reason,
                            const std::string& message) {
  StepOutcome outcome = steps::record_and_continue(ctx, entry);
  if (outcome.is(StepOutcome::Kind::Waiting)) {
    ctx.events.record(steps::statefulset_ref(ctx.op), EventSeverity::Normal, reason,
                      "operation " + ctx.op.id + ": " + message);
  }
  return outcome;
}

void tell_deleted(StepContext& ctx, const std::string& message) {
  ctx.events.record(steps::statefulset_ref(ctx.op), EventSeverity::Normal, "SuccessfulDelete",
                    "operation " + ctx.op.id + ": " + message);
}

std::optional<StepOutcome> delete_cleanup_pod(StepContext& ctx, int ordinal, const std::string& why,
                                              bool& lingering) {
  const ObjectRef pod_ref{Kind::Pod, ctx.op.ns, pod_name(ctx.op, ordinal)};
  auto pod = steps::get_optional(ctx, pod_ref);
  if (!pod) return pod.error();
  if (!pod->has_value() || !is_cleanup_pod(**pod, ctx.op.statefulset)) return std::nullopt;
  if (steps::being_deleted(**pod)) {
    lingering = true;
    return std::nullopt;
  }
  if (auto deleted = steps::delete_intended(ctx, pod_ref, k8s::uid(**pod).value_or(""),
                                            Propagation::Background, why);
      !deleted) {
    return deleted.error();
  }
  tell_deleted(ctx, "cleanup pod " + pod_ref.name + " deleted: " + why);
  return StepOutcome::waiting(Duration{0});
}

bool ended_before(const Json& pod, TimePoint started) {
  auto phase = k8s::pod_phase(pod);
  if (!phase || (*phase != "Succeeded" && *phase != "Failed")) return false;
  const std::string created =
      pod.value("metadata", Json::object()).value("creationTimestamp", std::string{});
  auto time = parse_timestamp(created);
  if (!time) return false;
  return *time < std::chrono::floor<std::chrono::seconds>(started);
}

std::int32_t restarts(const Json& pod) {
  std::int32_t most = 0;
  const Json& status = pod.value("status", Json::object());
  for (const Json& container : status.value("containerStatuses", Json::array())) {
    if (container.contains("restartCount") && container["restartCount"].is_number_integer()) {
      most = std::max(most, container["restartCount"].get<std::int32_t>());
    }
  }
  return most;
}

}  // namespace stsresize::drain
