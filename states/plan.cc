// Planning: decide which claims to resize and how; the plan is recorded once and never
// recomputed, so a resumed operation keeps the claims (and their uids) it started with.
#include "engine/drain_candidates.h"
#include "engine/planner.h"
#include "states/fence.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

// The binder's and the provisioner's own annotations: the rebound claim gets its own from them.
bool binders_annotation(std::string_view key) {
  return key.starts_with("pv.kubernetes.io/") ||
         key == "volume.beta.kubernetes.io/storage-provisioner" ||
         key == "volume.kubernetes.io/storage-provisioner" ||
         key == "volume.kubernetes.io/selected-node";
}

// Whether the copy path may be the rebind path (engine/operation.h, states/rebind.h), filling
// in what it needs of each claim: "" when it may, else why not, for people. It needs each
// claim bound, rights to read and patch PersistentVolumes (a namespace-scoped installation has
// none), and no ReadWriteOncePod claim.
std::expected<std::string, StepOutcome> choose_rebind(StepContext& ctx,
                                                      const std::vector<Json>& live,
                                                      std::vector<ClaimPlan>& planned) {
  if (!ctx.settings.rebind) return std::string{"the controller runs with --no-rebind"};
  std::vector<ClaimPlan> filled = planned;
  bool probed = false;
  for (ClaimPlan& claim : filled) {
    if (std::ranges::find(claim.access_modes, "ReadWriteOncePod") != claim.access_modes.end()) {
      return "claim " + claim.claim + " is ReadWriteOncePod";
    }
    const auto found = std::ranges::find_if(
        live, [&](const Json& c) { return k8s::name(c).value_or("") == claim.claim; });
    if (found == live.end()) return "claim " + claim.claim + " is not bound";
    claim.source_volume = k8s::volume_name(*found).value_or("");
    if (claim.source_volume.empty() || k8s::pvc_phase(*found).value_or("") != "Bound") {
      return "claim " + claim.claim + " is not bound";
    }
    const ObjectRef volume{Kind::PersistentVolume, "", claim.source_volume};
    auto read = ctx.kube.get(volume);
    if (!read && read.error().code == KubeErrorCode::Forbidden) {
      return std::string{
          "reading PersistentVolumes is forbidden (a namespace-scoped "
          "installation has no cluster-level rights)"};
    }
    if (!read) return std::unexpected(from_error(read.error(), "reading " + to_string(volume)));
    if (!probed) {
      // An empty merge patch changes nothing but is authorized like any other.
      auto patched = ctx.kube.patch(volume, PatchType::Merge, Json::object());
      if (!patched && patched.error().code == KubeErrorCode::Forbidden) {
        return std::string{
            "patching PersistentVolumes is forbidden (the rebind path sets their "
            "reclaim policy and reserves a copy for its claim)"};
      }
      if (!patched) {
        return std::unexpected(from_error(patched.error(), "patching " + to_string(volume)));
      }
      probed = true;
    }
    if (auto annotations = k8s::annotations(*found); annotations) {
      for (const auto& [key, value] : *annotations) {
        if (!binders_annotation(key)) claim.annotations.emplace(key, value);
      }
    }
  }
  planned = std::move(filled);
  return std::string{};
}

// Whether the copy begins with a warm pre-copy (kPreCopyAnnotation), or why the annotation
// cannot be read.
std::expected<bool, std::string> pre_copy_wanted(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kPreCopyAnnotation);
  if (!value) return std::unexpected(value.error());
  if (!value->has_value() || **value == "true") return true;
  if (**value == "false") return false;
  return std::unexpected("the StatefulSet's annotation " + std::string{kPreCopyAnnotation} +
                         " is \"" + **value +
                         "\": it takes \"true\" (the default: copy once while the replicas run, "
                         "then only what changed with them stopped) or \"false\" (copy only with "
                         "them stopped); nothing was changed");
}

// The strategy of the copy paths (kStrategyAnnotation), or why the annotation cannot be read.
std::expected<Strategy, std::string> strategy_wanted(const Json& statefulset) {
  auto value = k8s::annotation(statefulset, kStrategyAnnotation);
  if (!value) return std::unexpected(value.error());
  if (!value->has_value()) return Strategy::AllAtOnce;
  if (auto parsed = parse_strategy(**value)) return *parsed;
  return std::unexpected("the StatefulSet's annotation " + std::string{kStrategyAnnotation} +
                         " is \"" + **value +
                         "\": it takes \"all-at-once\" (the default: every replica stopped for "
                         "the copies) or \"rolling\" (one ordinal at a time, the others "
                         "serving); nothing was changed");
}

}  // namespace

StepOutcome plan_step(StepContext& ctx) {
  auto pre_copy = pre_copy_wanted(ctx.statefulset);
  if (!pre_copy) return StepOutcome::critical(pre_copy.error());
  auto strategy = strategy_wanted(ctx.statefulset);
  if (!strategy) return StepOutcome::critical(strategy.error());
  if (ctx.op.path != Path::Undecided) {
    // The rebind path is the copy path's phases with one copy.
    if (ctx.op.path == Path::Expand) return StepOutcome::done(Trigger::PlannedExpand);
    if (*pre_copy) return StepOutcome::done(Trigger::PlannedPreCopy);
    return StepOutcome::done(ctx.op.strategy == Strategy::Rolling ? Trigger::RollOn
                                                                  : Trigger::PlannedCopy);
  }
  auto claims = ctx.kube.list(Kind::PersistentVolumeClaim, ctx.op.ns);
  if (!claims) return from_error(claims.error(), "listing claims");
  auto classes = list_storage_classes(ctx.kube);
  if (!classes) return from_error(classes.error(), "listing storage classes");
  auto plan = classes->has_value()
                  ? plan_resize(ctx.statefulset, claims->items, **classes)
                  : plan_resize(ctx.statefulset, claims->items, StorageClassesUnknown{});
  if (!plan) return StepOutcome::critical(plan.error());
  if (!plan->has_value()) return StepOutcome::critical("nothing to resize any more");
  std::string rebind_unavailable;
  if ((*plan)->path == Path::Copy) {
    auto why_not = choose_rebind(ctx, claims->items, (*plan)->claims);
    if (!why_not) return why_not.error();
    rebind_unavailable = *why_not;
    if (rebind_unavailable.empty()) (*plan)->path = Path::Rebind;
  }
  // Expansion stops nothing: the strategy is the copy paths' only.
  const Strategy planned_strategy = (*plan)->path == Path::Expand ? Strategy::AllAtOnce : *strategy;
  // All at once, the copy path scales to 0: refused before anything is created.
  if (planned_strategy == Strategy::AllAtOnce && (*plan)->path != Path::Expand &&
      claims_deleted_when_scaled(ctx.statefulset)) {
    return StepOutcome::critical(scale_down_deletes_claims());
  }
  if (auto recorded = ctx.journal.commit(
          entries::Planned{(*plan)->path, (*plan)->claims, rebind_unavailable, planned_strategy});
      !recorded) {
    return StepOutcome::transient(recorded.error());
  }
  // Checked before anything is stopped: the fence would find it only after ScalingDown.
  std::vector<std::string> planned;
  for (const ClaimPlan& claim : (*plan)->claims) planned.push_back(claim.claim);
  auto foreign = mounted_by_another_owner(ctx, planned);
  if (!foreign) return foreign.error();
  if (foreign->has_value()) {
    return StepOutcome::critical(**foreign +
                                 ", a claim this StatefulSet's name and template give too: "
                                 "stsresize does not resize a claim another owner's pod uses "
                                 "(if the claim is the other's, give it that StatefulSet's "
                                 "selector labels and stsresize leaves it alone; if it is this "
                                 "StatefulSet's, stop that pod first)");
  }
  if (!(*plan)->left_alone.empty()) {
    std::string names;
    for (const std::string& claim : (*plan)->left_alone)
      names += (names.empty() ? "" : ", ") + claim;
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Warning, "ClaimsLeftAlone",
                      "operation " + ctx.op.id + " leaves alone " + names +
                          ": the claim's labels say it belongs to another StatefulSet whose name "
                          "and volumeClaimTemplate give the same claim name; the pod of this "
                          "StatefulSet with that ordinal runs on it and is not resized");
  }
  if (!classes->has_value()) {
    ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Normal, kStorageClassesUnreadable,
                      std::string{kStorageClassesUnreadableWhy});
  }
  if (!rebind_unavailable.empty()) {
    ctx.events.record(
        statefulset_ref(ctx.op), EventSeverity::Normal, "RebindUnavailable",
        "operation " + ctx.op.id +
            " takes the two-copy path (copy to a backup claim and back): " + rebind_unavailable);
  }
  return StepOutcome::waiting(Duration{0});
}

}  // namespace stsresize
