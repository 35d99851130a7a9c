// Draining: for each ordinal a scale-down left without its replica, the cleanup pod (the
// StatefulSet's scaledown-pod-template, with the replica's identity: engine/cleanup_pod.h) runs on
// its claims until it Succeeded. Nothing is deleted here but cleanup pods: an ordinal the
// StatefulSet was scaled back up over is cancelled (its cleanup pod deleted, its claims kept) so
// that the replica returns with its volume. Done when every ordinal is drained or cancelled.
#include <algorithm>

#include "engine/cleanup_pod.h"
#include "engine/duration.h"
#include "engine/statefulset_deletion.h"
#include "engine/vocabulary.h"
#include "states/drain_support.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

using namespace steps;

ObjectRef pod_ref(const Operation& op, int ordinal) {
  return {Kind::Pod, op.ns, drain::pod_name(op, ordinal)};
}

// Why an ordinal is not drained after all: a scale back up over it, or an orphan delete of the
// StatefulSet.
enum class CancelCause { ScaledBackUp, OrphanDelete };

// An ordinal that is a replica again, or whose StatefulSet is orphan-deleted: its cleanup pod (if
// ours) deleted, then the cancellation recorded, its claims kept. The StatefulSet controller
// creates the replica's pod once the name is free; a StatefulSet applied again after an orphan
// delete plans a new drain of what it left.
// deletion_why: the signal of the orphan delete (engine/statefulset_deletion.h).
StepOutcome cancel(StepContext& ctx, const OrdinalDrain& d, const Json* pod, CancelCause cause,
                   const std::string& deletion_why = {}) {
  const std::string ordinal = std::to_string(d.ordinal);
  if (pod != nullptr && is_cleanup_pod(*pod, ctx.op.statefulset)) {
    if (being_deleted(*pod)) return StepOutcome::waiting(ctx.settings.poll_interval);
    if (auto deleted = delete_intended(
            ctx, pod_ref(ctx.op, d.ordinal), k8s::uid(*pod).value_or(""), Propagation::Background,
            cause == CancelCause::ScaledBackUp
                ? "cancelled: the StatefulSet scaled back up over it"
                : "cancelled: the StatefulSet is orphan-deleted, not scaled down");
        !deleted) {
      return deleted.error();
    }
    drain::tell_deleted(ctx, "cleanup pod " + drain::pod_name(ctx.op, d.ordinal) + " deleted: " +
                                 (cause == CancelCause::ScaledBackUp
                                      ? "the StatefulSet scaled back up over ordinal " + ordinal
                                      : "the StatefulSet is orphan-deleted (its replicas kept): "
                                        "not a scale-down"));
    return StepOutcome::waiting(Duration{0});
  }
  std::string why;
  if (cause == CancelCause::ScaledBackUp) {
    auto replicas = k8s::spec_replicas(ctx.statefulset);
    why = "scaled back up to " + std::to_string(replicas.value_or(0)) +
          " replicas: the replica returns with its claims";
  } else {
    why = "the StatefulSet is orphan-deleted (" + deletion_why +
          "): claims kept, drained anew if it is applied again without this ordinal";
  }
  return drain::record_and_tell(ctx, entries::DrainCancelled{d.ordinal, why}, "DrainCancelled",
                                "ordinal " + ordinal + " not drained, " + why);
}

// The pod names the StatefulSet (by uid) as its owner.
bool owned_by_set(const StepContext& ctx, const Json& pod) {
  auto owners = k8s::owner_references(pod);
  const std::string uid = k8s::uid(ctx.statefulset).value_or("");
  return owners && !uid.empty() &&
         std::ranges::any_of(*owners, [&](const k8s::OwnerReference& o) { return o.uid == uid; });
}

// A drain by claim policy (Operation::delete_after): no cleanup pod. Each ordinal still gone once
// Draining has lasted delete_after, with no pod on its claims and no pod of its name, is recorded
// as cleaned up (CleanupSucceeded), and DeletingClaims deletes its claims. An ordinal scaled
// back up within the delay is cancelled, its claims kept. The drain timeout counts from the end
// of the delay: a long delete-after is waiting, not a drain that hangs.
StepOutcome policy_drain_step(StepContext& ctx, std::span<const Json> all) {
  const TimePoint deadline = ctx.op.phase_since + ctx.op.delete_after;
  const TimePoint now = ctx.clock.now();
  bool waiting = false;
  bool delayed = false;
  for (const OrdinalDrain& d : ctx.op.drains) {
    if (d.ended()) continue;
    const Json* pod = drain::find_pod(all, drain::pod_name(ctx.op, d.ordinal));
    auto replica = drain::is_replica(ctx.statefulset, d.ordinal);
    if (!replica) return malformed(replica.error());
    if (*replica) return cancel(ctx, d, pod, CancelCause::ScaledBackUp);
    if (now < deadline) {
      delayed = true;
      continue;
    }
    auto observed = drain::scale_down_observed(ctx.statefulset);
    if (!observed) return malformed(observed.error());
    // Never while a pod uses the claims, nor while a pod holds the replica's name.
    if (!*observed || pod != nullptr || !drain::claim_users(all, d, ctx.op.statefulset).empty()) {
      waiting = true;
      continue;
    }
    return record_and_continue(ctx, entries::CleanupSucceeded{d.ordinal});
  }
  if (delayed) {
    return StepOutcome::waiting(std::chrono::duration_cast<Duration>(deadline - now),
                                "claims deleted after " + format_duration(ctx.op.delete_after) +
                                    " (" + std::string{kScaledownClaimsAnnotation} + ")");
  }
  if (waiting && now - deadline > ctx.settings.drain_timeout) {
    return StepOutcome::critical(
        "the claims are still in use past the drain timeout after the delete-after delay");
  }
  if (waiting) return StepOutcome::waiting(ctx.settings.poll_interval, "claims in use");
  return StepOutcome::done();
}

}  // namespace

StepOutcome drain_step(StepContext& ctx) {
  if (ctx.statefulset.is_null()) return StepOutcome::transient("the StatefulSet is gone");
  auto pods = ctx.kube.list(Kind::Pod, ctx.op.ns);
  if (!pods) return from_error(pods.error(), "listing pods");
  const std::span<const Json> all = pods->items;
  if (ctx.op.delete_after > Duration{0}) return policy_drain_step(ctx, all);
  int running = 0;
  for (const OrdinalDrain& d : ctx.op.drains) {
    if (!d.ended() && !d.pod_uid.empty()) ++running;
  }
  // Highest ordinal first, as the StatefulSet controller removes them.
  std::vector<const OrdinalDrain*> order;
  for (const OrdinalDrain& d : ctx.op.drains) order.push_back(&d);
  std::ranges::sort(order, [](auto* a, auto* b) { return a->ordinal > b->ordinal; });

  // OrderedReady starts and stops replicas one at a time: so do its cleanup pods.
  const bool ordered =
      ctx.statefulset.value("spec", Json::object())
          .value("podManagementPolicy", std::string{"OrderedReady"}) == "OrderedReady";
  const int limit = ordered ? 1 : ctx.settings.max_parallel_drains;
  // An orphan delete (kubectl delete --cascade=orphan; a tool that re-creates the StatefulSet to
  // change a field it cannot update) is not a scale-down, and the finalizer must not hold it for
  // as long as a cleanup may run: every ordinal not drained yet is cancelled as on a scale back
  // up, then the finalizer lets the delete through (states/drain_finalizer.cc). An ordinal whose
  // cleanup Succeeded already is past this step: its claims are deleted, as it asked.
  const Deletion deletion = read_deletion(ctx.statefulset, all);
  const bool orphaned = deletion.reading == DeletionReading::Orphan;
  bool waiting = false;
  for (const OrdinalDrain* d : order) {
    if (d->ended()) continue;
    const Json* pod = drain::find_pod(all, drain::pod_name(ctx.op, d->ordinal));
    if (orphaned) return cancel(ctx, *d, pod, CancelCause::OrphanDelete, deletion.why);
    auto replica = drain::is_replica(ctx.statefulset, d->ordinal);
    if (!replica) return malformed(replica.error());
    if (*replica) return cancel(ctx, *d, pod, CancelCause::ScaledBackUp);

    const bool cleanup = pod != nullptr && is_cleanup_pod(*pod, ctx.op.statefulset);
    if (pod != nullptr && !cleanup && !being_deleted(*pod) && owned_by_set(ctx, *pod) &&
        deletion.reading == DeletionReading::Cascade) {
      // The StatefulSet is being deleted with its pods, but the garbage collector leaves them
      // while our finalizer holds the owner (Background): the replica goes first, as the delete
      // asked, so that its claims are free for the cleanup pod.
      if (auto deleted = delete_intended(ctx, pod_ref(ctx.op, d->ordinal),
                                         k8s::uid(*pod).value_or(""), Propagation::Background,
                                         "the StatefulSet is being deleted: " + deletion.why);
          !deleted) {
        return deleted.error();
      }
      return StepOutcome::waiting(Duration{0});
    }
    if (pod != nullptr && !cleanup) {
      // The replica's own pod (still terminating) or someone else's: the name is taken.
      waiting = true;
      continue;
    }
    if (cleanup) {
      auto uid = k8s::uid(*pod);
      if (!uid) return malformed(uid.error());
      if (*uid != d->pod_uid) {
        // Created by the last call (or before a crash), or left by an earlier drain or by the
        // StatefulSet Scale-Down Controller: this drain takes it over.
        if (being_deleted(*pod)) {
          waiting = true;
          continue;
        }
        // One that already ended before this drain began (left by a drain that stopped, or by
        // the old controller) says nothing about these claims as they are now: deleted, and a
        // cleanup pod of this drain runs instead. A running one is taken over.
        if (drain::ended_before(*pod, ctx.op.started)) {
          if (auto deleted =
                  delete_intended(ctx, pod_ref(ctx.op, d->ordinal), *uid, Propagation::Background,
                                  "a cleanup pod that ended before this drain began");
              !deleted) {
            return deleted.error();
          }
          return StepOutcome::waiting(Duration{0});
        }
        return drain::record_and_tell(ctx, entries::CleanupPodCreated{d->ordinal, *uid},
                                      "CleanupPodRunning",
                                      "cleanup pod " + drain::pod_name(ctx.op, d->ordinal) +
                                          " runs on the claims of "
                                          "ordinal " +
                                          std::to_string(d->ordinal));
      }
      auto phase = k8s::pod_phase(*pod);
      if (!phase) return malformed(phase.error());
      if (*phase == "Succeeded") {
        return drain::record_and_tell(
            ctx, entries::CleanupSucceeded{d->ordinal}, "CleanupSucceeded",
            "cleanup pod " + drain::pod_name(ctx.op, d->ordinal) +
                " Succeeded: the claims of ordinal " + std::to_string(d->ordinal) + " may go");
      }
      if (*phase == "Failed") {
        return StepOutcome::critical("cleanup pod " + drain::pod_name(ctx.op, d->ordinal) +
                                     " failed");
      }
      if (const std::int32_t restarts = drain::restarts(*pod);
          restarts > ctx.settings.drain_restart_limit) {
        return StepOutcome::critical("cleanup pod " + drain::pod_name(ctx.op, d->ordinal) +
                                     " restarted " + std::to_string(restarts) + " times (limit " +
                                     std::to_string(ctx.settings.drain_restart_limit) + ")");
      }
      waiting = true;
      continue;
    }
    // No pod of that name. Its cleanup pod was deleted by someone (pod_uid set): created again,
    // the cleanup has not reported success and runs from the start.
    if (!d->pod_uid.empty()) --running;
    if (running >= limit) {
      waiting = true;
      continue;
    }
    auto observed = drain::scale_down_observed(ctx.statefulset);
    if (!observed) return malformed(observed.error());
    const std::vector<std::string> users = drain::claim_users(all, *d, ctx.op.statefulset);
    if (!*observed || !users.empty()) {
      waiting = true;
      continue;
    }
    auto pod_object = cleanup_pod(ctx.statefulset, d->ordinal, ctx.op.id);
    if (!pod_object) return StepOutcome::critical(explain(pod_object.error()));
    if (auto created = create_intended(ctx, pod_ref(ctx.op, d->ordinal), *pod_object,
                                       "cleanup pod of ordinal " + std::to_string(d->ordinal));
        !created) {
      return created.error();
    }
    return StepOutcome::waiting(Duration{0});
  }
  if (phase_timed_out(ctx, ctx.settings.drain_timeout)) {
    return StepOutcome::critical("the drain is still running past the drain timeout");
  }
  if (waiting) return StepOutcome::waiting(ctx.settings.poll_interval, "cleanup pods running");
  return StepOutcome::done();
}

}  // namespace stsresize
