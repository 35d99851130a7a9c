// Expanding: raise each claim's request in place (the StorageClass allows expansion) and wait
// until its capacity shows the new size. The application keeps running throughout.
#include "states/step_support.h"

namespace stsresize {

StepOutcome expand_step(StepContext& ctx) {
  using namespace steps;
  for (const ClaimPlan& claim : ctx.op.claims) {
    if (claim.expanded) continue;
    const ObjectRef ref = claim_ref(ctx.op, claim.claim);
    auto pvc = get_optional(ctx, ref);
    if (!pvc) return pvc.error();
    auto uid = pvc->has_value() ? k8s::uid(**pvc) : k8s::Result<std::string>{""};
    if (!pvc->has_value() || !uid || *uid != claim.source_uid) {
      return StepOutcome::critical(claim.claim + " is gone or was replaced during expansion");
    }
    auto requested = k8s::requested_storage(**pvc);
    auto capacity = k8s::capacity(**pvc);
    if (!requested) return malformed(requested.error());
    if (!capacity) return malformed(capacity.error());
    if (*requested < claim.to_size) {
      if (auto intended = ctx.journal.intend(
              "patch", ref,
              "requests.storage " + requested->to_string() + " -> " + claim.to_size.to_string());
          !intended) {
        return StepOutcome::transient(intended.error());
      }
      const Json patch = {
          {"spec", {{"resources", {{"requests", {{"storage", claim.to_size.to_string()}}}}}}}};
      if (auto patched = ctx.kube.patch(ref, PatchType::Merge, patch); !patched) {
        return from_error(patched.error(), "expanding " + to_string(ref));
      }
      return StepOutcome::waiting(Duration{0});
    }
    if (capacity->has_value() && **capacity >= claim.to_size) {
      return record_and_continue(ctx, entries::ClaimExpanded{claim.claim});
    }
    return StepOutcome::waiting(ctx.settings.poll_interval, "volume expanding");
  }
  return StepOutcome::done();
}

}  // namespace stsresize
