// StartingReplica (Strategy::Rolling): the StatefulSet resumed (states/rolling.h: created again
// from its definition, its pods adopted) and Done once the rolling ordinal's replica is Ready on
// its new claims, and every other pod of the set is back under it. Past
// settings.scale_up_timeout a Warning ScaleUpTimeout is given once and the step keeps waiting:
// the roll stops there, the other ordinals untouched.
// The resume lets the pods go (an Orphan delete) and the new object adopts them. A pod the next
// ordinal's StoppingReplica found still orphaned would be, to its fence, something else mounting
// the claims (Critical), and pausing the set again would leave it orphaned for good; so each pod
// of a planned ordinal must be owned by the new object, or gone, or going, before the next ordinal.
// A StatefulSet scaled down below the ordinal meanwhile (a person, a GitOps tool: the resume
// keeps the live spec) runs no such replica: the ordinal's claims are restored and verified and
// nothing will start on them until someone scales up again, so there is nothing to wait for but
// the adoption (the new object adopts the pods above its replicas too, and deletes them).
#include <algorithm>
#include <set>
#include <string>

#include "engine/duration.h"
#include "states/rolling.h"
#include "states/step_support.h"

namespace stsresize {
namespace {

bool owned_by(const Json& pod, const std::string& uid) {
  auto owners = k8s::owner_references(pod);
  return owners &&
         std::ranges::any_of(*owners, [&](const k8s::OwnerReference& o) { return o.uid == uid; });
}

}  // namespace

StepOutcome start_replica_step(StepContext& ctx) {
  using namespace steps;
  const std::optional<int> ordinal = ctx.op.rolling_ordinal();
  if (!ordinal) return StepOutcome::critical("StartingReplica with no ordinal left to roll");
  if (auto now = resume_statefulset(ctx)) return *now;
  auto replicas = k8s::spec_replicas(ctx.statefulset);
  if (!replicas) return StepOutcome::critical("StatefulSet: " + replicas.error());

  // Why it is not Done yet; empty once it is.
  std::string waiting_for;
  std::set<int> ordinals;
  for (const ClaimPlan& claim : ctx.op.claims) ordinals.insert(claim.ordinal);
  for (int n : ordinals) {
    const ObjectRef ref = replica_ref(ctx.op, n);
    auto pod = get_optional(ctx, ref);
    if (!pod) return pod.error();
    if (!pod->has_value() || being_deleted(**pod)) {
      if (n == *ordinal && n < *replicas && waiting_for.empty()) {
        waiting_for = "pod " + ref.name + " not Ready yet";
      }
      continue;
    }
    if (!owned_by(**pod, ctx.op.sts_uid)) {
      waiting_for = "pod " + ref.name + " not yet adopted by the resumed StatefulSet";
      break;
    }
    if (n == *ordinal && !k8s::pod_ready(**pod).value_or(false) && waiting_for.empty()) {
      waiting_for = "pod " + ref.name + " not Ready yet";
    }
  }
  if (waiting_for.empty()) return StepOutcome::done();

  if (ctx.op.warning.empty() && phase_timed_out(ctx, ctx.settings.scale_up_timeout)) {
    return warn_and_continue(
        ctx, Phase::StartingReplica, "ScaleUpTimeout",
        waiting_for + " " + format_duration(ctx.settings.scale_up_timeout) +
            " after its StatefulSet was resumed; the data of ordinal " + std::to_string(*ordinal) +
            " is restored and verified, the other ordinals are not touched, still waiting");
  }
  return StepOutcome::waiting(ctx.settings.poll_interval, waiting_for);
}

}  // namespace stsresize
