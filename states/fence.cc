#include "states/fence.h"

#include <algorithm>
#include <set>

#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize::steps {

namespace {

// "pod db-0 (StatefulSet db)", "pod debug (no owner)".
std::string describe_pod(const Json& pod) {
  std::string text = "pod " + k8s::name(pod).value_or("?");
  auto owners = k8s::owner_references(pod);
  if (owners && !owners->empty()) {
    text += " (" + owners->front().kind + " " + owners->front().name + ")";
  } else {
    text += " (no owner)";
  }
  return text;
}

bool copy_pod_of(const Json& pod, const Operation& op) {
  auto label = k8s::label(pod, kOperationLabel);
  return label && label->has_value() && **label == naming::label_value(op.id);
}

// The StatefulSet's own pod: owned by a StatefulSet of its name (not by uid: an explicit
// request re-creates the object), or orphaned meanwhile (no owner) and named <sts>-<ordinal>.
bool pod_of(const Json& pod, const Operation& op) {
  auto owners = k8s::owner_references(pod);
  if (!owners) return false;
  if (!owners->empty()) {
    return std::ranges::any_of(*owners, [&](const k8s::OwnerReference& owner) {
      return owner.kind == "StatefulSet" && owner.name == op.statefulset;
    });
  }
  const std::string name = k8s::name(pod).value_or("");
  const std::string prefix = op.statefulset + "-";
  return name.size() > prefix.size() && name.starts_with(prefix) &&
         std::ranges::all_of(name.substr(prefix.size()),
                             [](char c) { return c >= '0' && c <= '9'; });
}

// "pod db-0 (StatefulSet db) mounts data-web-db-0" of the first pod that may write to one of
// `claims`: not one of the operation's copy pods, not ended, and (unless `own_pods_too`) not
// one of the StatefulSet's own.
std::expected<std::optional<std::string>, StepOutcome> first_mount(
    StepContext& ctx, const std::vector<std::string>& claims, bool own_pods_too) {
  if (claims.empty()) return std::nullopt;
  // Every pod of the namespace: a pod of another owner can mount a claim whose name collides
  // with this StatefulSet's, and a pod started by hand needs no owner at all.
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return std::unexpected(from_error(pods.error(), "listing pods"));
  const std::set<std::string, std::less<>> wanted(claims.begin(), claims.end());
  for (const Json& pod : pods->items) {
    if (copy_pod_of(pod, ctx.op)) continue;
    if (!own_pods_too && pod_of(pod, ctx.op)) continue;
    // A pod that has ended writes nothing more (pvc-protection still counts it, which is why
    // the backup Job goes before its source).
    auto phase = k8s::pod_phase(pod);
    if (phase && (*phase == "Succeeded" || *phase == "Failed")) continue;
    auto mounted = k8s::mounted_claims(pod);
    if (!mounted) return std::unexpected(malformed(mounted.error()));
    for (const std::string& claim : *mounted) {
      if (wanted.contains(claim)) return describe_pod(pod) + " mounts " + claim;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string describe(const FenceBreach& breach) {
  return breach.detail;
}

std::expected<std::optional<FenceBreach>, StepOutcome> fence_breach(
    StepContext& ctx, const std::vector<std::string>& claims) {
  if (ctx.op.strategy == Strategy::Rolling) {
    // The other replicas run: the StatefulSet is held paused instead of at 0 replicas.
    if (!paused(ctx.statefulset)) {
      return FenceBreach{FenceBreach::Kind::Replicas,
                         "the StatefulSet is not paused (being deleted, held by finalizer " +
                             std::string{kRollingFinalizer} + ")"};
    }
    auto mounted = first_mount(ctx, claims, /*own_pods_too=*/true);
    if (!mounted) return std::unexpected(mounted.error());
    if (!mounted->has_value()) return std::nullopt;
    return FenceBreach{FenceBreach::Kind::Mounted, **mounted};
  }
  auto wanted = k8s::spec_replicas(ctx.statefulset);
  if (!wanted) return std::unexpected(malformed(wanted.error()));
  if (*wanted != 0) {
    return FenceBreach{FenceBreach::Kind::Replicas,
                       "spec.replicas of the StatefulSet is " + std::to_string(*wanted)};
  }
  auto status = k8s::statefulset_status(ctx.statefulset);
  if (!status) return std::unexpected(malformed(status.error()));
  if (status->replicas != 0) {
    return FenceBreach{FenceBreach::Kind::Replicas,
                       "the StatefulSet still runs " + std::to_string(status->replicas) + " pods"};
  }
  auto mounted = first_mount(ctx, claims, /*own_pods_too=*/true);
  if (!mounted) return std::unexpected(mounted.error());
  if (!mounted->has_value()) return std::nullopt;
  return FenceBreach{FenceBreach::Kind::Mounted, **mounted};
}

std::expected<std::optional<std::string>, StepOutcome> mounted_by_another_owner(
    StepContext& ctx, const std::vector<std::string>& claims) {
  return first_mount(ctx, claims, /*own_pods_too=*/false);
}

std::expected<std::optional<std::string>, StepOutcome> mounted_by_any_pod(
    StepContext& ctx, const std::vector<std::string>& claims) {
  return first_mount(ctx, claims, /*own_pods_too=*/true);
}

std::int64_t fence_generation(const StepContext& ctx) {
  return k8s::generation(ctx.statefulset).value_or(0);
}

std::vector<std::string> planned_claims(const Operation& op) {
  std::vector<std::string> names;
  for (const ClaimPlan& claim : op.claims) {
    if (op.in_scope(claim)) names.push_back(claim.claim);
  }
  return names;
}

std::vector<std::string> intact_sources(const Operation& op) {
  std::vector<std::string> names;
  for (const ClaimPlan& claim : op.claims) {
    if (op.in_scope(claim) && !claim.source_deleted) names.push_back(claim.claim);
  }
  return names;
}

std::expected<std::optional<HeldSource>, StepOutcome> held_source(StepContext& ctx) {
  std::vector<std::pair<std::string, std::string>> going;  // claim, volume
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (!ctx.op.in_scope(claim) || claim.source_deleted || !claim.recreated_uid.empty()) continue;
    auto source = get_optional(ctx, claim_ref(ctx.op, claim.claim));
    if (!source) return std::unexpected(source.error());
    if (!source->has_value() || !being_deleted(**source)) continue;
    if (k8s::uid(**source).value_or("") != claim.source_uid) continue;
    going.emplace_back(claim.claim, k8s::volume_name(**source).value_or(""));
  }
  if (going.empty()) return std::nullopt;
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return std::unexpected(from_error(pods.error(), "listing pods"));
  for (const Json& pod : pods->items) {
    if (copy_pod_of(pod, ctx.op)) continue;
    auto phase = k8s::pod_phase(pod);
    if (phase && (*phase == "Succeeded" || *phase == "Failed")) continue;
    auto mounted = k8s::mounted_claims(pod);
    if (!mounted) return std::unexpected(malformed(mounted.error()));
    for (const auto& [claim, volume] : going) {
      if (std::ranges::find(*mounted, claim) != mounted->end()) {
        return HeldSource{claim, describe_pod(pod), volume};
      }
    }
  }
  return std::nullopt;
}

StepOutcome report_held_source(StepContext& ctx, const HeldSource& held) {
  const std::string prefix = "source claim " + held.claim + " is being deleted but " + held.pod;
  const std::string volume = held.volume.empty() ? "VOLUME" : held.volume;
  const std::string why =
      prefix +
      " mounts it (it started after the fence was last checked): whatever it wrote "
      "since the backup " +
      naming::backup_claim(held.claim) + " was taken is only on " + held.claim +
      ", and goes with it once the pod stops. stsresize scales nothing and deletes nothing while "
      "the pod runs. To keep those writes, first make the volume outlive the claim (kubectl "
      "patch pv " +
      volume +
      " -p '{\"spec\":{\"persistentVolumeReclaimPolicy\":\"Retain\"}}') or copy them out of "
      "the pod; then scale the StatefulSet to 0, and the resize goes on from the backup, "
      "without them";
  if (!ctx.op.warning.starts_with(prefix)) {
    return warn_and_continue(ctx, ctx.op.phase, "SourceHeldByPod", why);
  }
  return StepOutcome::waiting(ctx.settings.poll_interval,
                              held.claim + " is being deleted under " + held.pod);
}

StepOutcome restore_fence(StepContext& ctx, const FenceBreach& breach) {
  const std::string prefix = "the fence was broken in " + std::string{to_string(ctx.op.phase)};
  const std::string why =
      ctx.op.strategy == Strategy::Rolling
          ? prefix + " (" + describe(breach) +
                ") after a source claim was deleted: stsresize pauses the StatefulSet again and "
                "stops the replica of ordinal " +
                std::to_string(ctx.op.rolling_ordinal().value_or(-1)) +
                " until its restore is verified, then resumes it"
          : prefix + " (" + describe(breach) +
                ") after a source claim was deleted: stsresize holds the StatefulSet at 0 "
                "replicas until every restore is verified, then scales it back to the " +
                std::to_string(ctx.op.original_replicas) +
                " replicas it started from (to run another count, scale it once the resize has "
                "completed)";
  // Once per phase: the breach's detail changes as pods go (replicas, then a pod, ...).
  if (!ctx.op.warning.starts_with(prefix)) {
    return warn_and_continue(ctx, ctx.op.phase, "FenceRestored", why);
  }
  if (ctx.op.strategy == Strategy::Rolling) {
    // Paused again, then the replica's pod (it runs on claims that hold nothing verified)
    // deleted with its uid: what the all-at-once fence does by scaling to 0.
    if (auto now = pause_statefulset(ctx)) return *now;
    if (breach.kind == FenceBreach::Kind::Mounted && ctx.op.rolling_ordinal()) {
      const ObjectRef pod = replica_ref(ctx.op, *ctx.op.rolling_ordinal());
      auto live = get_optional(ctx, pod);
      if (!live) return live.error();
      if (live->has_value() && !being_deleted(**live)) {
        if (auto removed =
                delete_intended(ctx, pod, k8s::uid(**live).value_or(""), Propagation::Default,
                                "the fence restored: it runs on claims whose restore "
                                "is not verified");
            !removed) {
          return removed.error();
        }
        return StepOutcome::waiting(Duration{0});
      }
    }
    return StepOutcome::waiting(
        ctx.settings.poll_interval,
        "fence: " + describe(breach) + "; waiting until no pod uses the claims");
  }
  if (auto acted = set_replicas(ctx, 0)) return *acted;
  return StepOutcome::waiting(
      ctx.settings.poll_interval,
      "fence: " + describe(breach) + "; waiting until no pod uses the claims");
}

}  // namespace stsresize::steps
