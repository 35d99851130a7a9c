#pragma once
// The rebind path's work in the copy path's phases (Path::Rebind, engine/operation.h): one copy,
// then the copy's volume becomes the claim's under the claim's own name.
//
//   BackingUp    the backup claim has the target size and class (states/backup.cc)
//   Recreating   keep_volumes, then the source deleted (states/recreate.cc), then rebind_claim
//   Restoring    check_rebound: nothing is copied back
//   CleaningUp   put_policies_back: the copy's volume gets its own policy, then the old volume
//                (which releases it: with Delete the PV controller deletes it)
//   ScalingBack  put_back: the claim created again on its own volume, then put_policies_back
//
// Safety: both volumes are Retain before either claim is deleted, so a volume with data is at
// every instant Bound or Retain; a Released copy is pre-bound (claimRef without uid) to the
// claim's name before that claim is created, so the binder gives it to no other claim. Each
// function does at most one mutating call and returns the outcome to return, or nullopt when
// its part is done.
#include <optional>

#include "states/step.h"

namespace stsresize::steps {

// Before the source claim is deleted: each volume's own reclaim policy journaled
// (VolumeRetained), then the volume set to Retain.
std::optional<StepOutcome> keep_volumes(StepContext& ctx, const ClaimPlan& claim);
// After the source claim was deleted: the backup claim deleted, the copy's volume pre-bound to
// the claim's name, the claim created on it (ClaimRecreated).
StepOutcome rebind_claim(StepContext& ctx, const ClaimPlan& claim);
// Restoring: the rebound claim is Bound to its copy's volume (RestoreVerified with the summary
// verified on that volume, which nothing else has mounted since).
std::optional<StepOutcome> check_rebound(StepContext& ctx, const ClaimPlan& claim);
// ScalingBack: the claim on its own volume again (SourceRebound): the rebound claim deleted, the
// old volume pre-bound to the claim's name, the claim created on it with its old size and class.
std::optional<StepOutcome> put_back(StepContext& ctx, const ClaimPlan& claim);
// CleaningUp and ScalingBack: each kept volume's own policy put back (ReclaimPolicyRestored),
// the copy's first.
std::optional<StepOutcome> put_policies_back(StepContext& ctx, const ClaimPlan& claim);

}  // namespace stsresize::steps
