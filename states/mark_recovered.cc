// MarkingReplica: the StatefulSet controller creates the replica's claims and pod afresh; each
// new claim and the new pod get stsresize.dev/recovered-from (the lost volume), so that the
// application or a person can tell that this identity came back empty, and a VolumeReplaced
// Event names the lost volumes and node. Done once the new pod runs on a live node with its
// claims bound.
#include "states/recovery_support.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

// Annotates the new object `ref` (not `old_uid`; "": any) with `from`, then records it; nullopt
// once it was recorded before.
std::optional<StepOutcome> mark(StepContext& ctx, const ObjectRef& ref, const std::string& old_uid,
                                const std::string& from, const std::string& recorded) {
  if (!recorded.empty()) return std::nullopt;
  auto object = steps::get_optional(ctx, ref);
  if (!object) return object.error();
  if (!object->has_value() || (!old_uid.empty() && k8s::uid(**object).value_or("") == old_uid)) {
    return StepOutcome::waiting(
        ctx.settings.poll_interval,
        "waiting for the StatefulSet controller to create " + to_string(ref) + " afresh");
  }
  const std::string uid = k8s::uid(**object).value_or("");
  auto current = k8s::annotation(**object, kRecoveredFromAnnotation);
  if (!current || !current->has_value() || **current != from) {
    if (auto intended = ctx.journal.intend("annotate", ref, "recovered from " + from); !intended) {
      return StepOutcome::transient(intended.error());
    }
    Json patch{{"metadata",
                {{"uid", uid}, {"annotations", {{std::string{kRecoveredFromAnnotation}, from}}}}}};
    auto patched = ctx.kube.patch(ref, PatchType::Merge, patch);
    if (!patched) return steps::from_error(patched.error(), "marking " + to_string(ref));
    return StepOutcome::waiting(Duration{0});
  }
  return steps::record_and_continue(ctx, entries::MarkedRecovered{ref.name, uid});
}

}  // namespace

StepOutcome mark_recovered_step(StepContext& ctx) {
  using namespace steps;
  const LostReplica& lost = *ctx.op.lost;
  for (const LostClaim& c : lost.claims) {
    if (auto now = mark(ctx, claim_ref(ctx.op, c.claim), c.uid, c.volume, c.new_uid)) return *now;
  }
  const ObjectRef pod_ref{Kind::Pod, ctx.op.ns, recovery::pod_name(ctx.op)};
  // The pod: the one the StatefulSet controller runs now with the new claims. It may be one
  // it created before the lost claims were deleted (after the pod garbage collector removed the
  // lost one, Pending and placed nowhere, which holds no claim), so it is not told by its uid
  // but by where it is: never on the lost node.
  {
    auto pod = get_optional(ctx, pod_ref);
    if (!pod) return pod.error();
    if (pod->has_value() && (**pod)["spec"].value("nodeName", std::string{}) == lost.node) {
      return StepOutcome::waiting(ctx.settings.poll_interval,
                                  "pod " + pod_ref.name + " still on the lost node " + lost.node);
    }
  }
  if (auto now = mark(ctx, pod_ref, "", recovery::volumes(lost), lost.new_pod_uid)) {
    return *now;
  }
  for (const LostClaim& c : lost.claims) {
    auto claim = get_optional(ctx, claim_ref(ctx.op, c.claim));
    if (!claim) return claim.error();
    if (!claim->has_value() || k8s::pvc_phase(**claim).value_or("") != "Bound") {
      return StepOutcome::waiting(ctx.settings.poll_interval, "claim " + c.claim + " not Bound");
    }
  }
  auto pod = get_optional(ctx, pod_ref);
  if (!pod) return pod.error();
  if (!pod->has_value() || k8s::pod_phase(**pod).value_or("") != "Running" ||
      (**pod)["spec"].value("nodeName", std::string{}) == lost.node) {
    return StepOutcome::waiting(ctx.settings.poll_interval,
                                "pod " + pod_ref.name + " not Running on a live node");
  }
  std::string claims;
  for (const LostClaim& c : lost.claims) claims += (claims.empty() ? "" : ", ") + c.claim;
  ctx.events.record(statefulset_ref(ctx.op), EventSeverity::Warning, "VolumeReplaced",
                    "operation " + ctx.op.id + ": replica " + pod_ref.name + " runs on node " +
                        (**pod)["spec"].value("nodeName", std::string{"?"}) +
                        " with new, empty claims " + claims + " (annotated " +
                        std::string{kRecoveredFromAnnotation} + "); its data was on volume" +
                        (lost.claims.size() == 1 ? " " : "s ") + recovery::volumes(lost) +
                        " of node " + lost.node + " (" + lost.gone +
                        "), kept with reclaim policy Retain");
  return StepOutcome::done();
}

}  // namespace stsresize
