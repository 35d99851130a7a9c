// The start of a lost-volume recovery: which replica's volume died with its node.
#include <algorithm>
#include <set>

#include "engine/cleanup_pod.h"
#include "engine/lost_volume.h"
#include "engine/naming.h"
#include "engine/timestamp.h"
#include "states/reconciler_session.h"
#include "states/step_support.h"

namespace stsresize {

namespace {

std::optional<Json> found(KubeResult<Json> result, std::optional<KubeError>& error) {
  if (result) return std::move(*result);
  if (result.error().code != KubeErrorCode::NotFound) error = result.error();
  return std::nullopt;
}

std::string claim_list(const LostReplica& lost) {
  std::string out;
  for (const LostClaim& c : lost.claims) {
    out += (out.empty() ? "" : ", ") + c.claim + " (volume " + c.volume + ")";
  }
  return out;
}

}  // namespace

std::optional<ReconcileResult> Reconciler::Session::start_recovery() {
  auto setting = recovery_setting(sts_, r_.settings_.lost_volume_grace);
  if (!setting) {
    emit_event(EventSeverity::Warning, "InvalidRecoverySetting",
               setting.error() + "; no lost volume is recovered");
    return std::nullopt;
  }
  if (setting->mode == RecoveryMode::Never) return std::nullopt;
  auto replicas = k8s::spec_replicas(sts_);
  auto templates = k8s::claim_templates(sts_);
  if (!replicas || !templates) return retry(!replicas ? replicas.error() : templates.error());
  std::int32_t start = 0;
  const Json& spec = sts_.value("spec", Json::object());
  if (spec.contains("ordinals") && spec["ordinals"].is_object()) {
    start = spec["ordinals"].value("start", 0);
  }
  // Looked at every check interval: the claims and pods from the caches when there are any
  // (a claim that may be lost is read again live below), volumes and nodes live (not cached).
  Kubernetes& lists = r_.tracked_cached_ ? *r_.tracked_cached_ : r_.kube_;
  auto claims = lists.list(Kind::PersistentVolumeClaim, ref_.ns);
  if (!claims) return retry("listing claims: " + claims.error().message);
  auto pods = lists.list(Kind::Pod, ref_.ns);
  if (!pods) return retry("listing pods: " + pods.error().message);
  std::map<std::string, const Json*> claim_by_name;
  for (const Json& claim : claims->items) claim_by_name[k8s::name(claim).value_or("")] = &claim;
  std::map<std::string, const Json*> pod_by_name;
  for (const Json& pod : pods->items) pod_by_name[k8s::name(pod).value_or("")] = &pod;

  // A bounded number of identities at a time (one by default): while that many replicas
  // recovered earlier are not Ready (their application still copying their data back from
  // their peers), no other is given an empty volume.
  int unavailable = 0;
  for (std::int32_t ordinal = start; ordinal < start + *replicas; ++ordinal) {
    auto pod = pod_by_name.find(ref_.name + "-" + std::to_string(ordinal));
    if (pod == pod_by_name.end()) continue;
    auto mark = k8s::annotation(*pod->second, kRecoveredFromAnnotation);
    if (mark && mark->has_value() && !k8s::pod_ready(*pod->second).value_or(false)) {
      ++unavailable;
    }
  }
  if (unavailable >= setting->max_unavailable) return std::nullopt;
  // A re-seed pod template that cannot make a pod: said now, and nothing is recovered.
  if (has_reseed_template(sts_)) {
    if (auto pod = reseed_pod(sts_, start, "check"); !pod) {
      emit_event(EventSeverity::Warning, "InvalidRecoveryPodTemplate",
                 explain(pod.error()) + "; no lost volume is recovered");
      return std::nullopt;
    }
  }

  const TimePoint now = to_millis(r_.clock_.now());
  std::map<std::string, NodeView> nodes;
  std::optional<KubeError> error;
  auto node_of = [&](const std::string& name) -> const NodeView& {
    auto known = nodes.find(name);
    if (known != nodes.end()) return known->second;
    auto node = found(r_.kube_.get(ObjectRef{Kind::Node, "", name}), error);
    const NodeView view = view_node(node);
    // Last seen Ready: a node NotReady may already be dead, and a claim bound to one of its
    // volumes since holds nothing of a replica.
    if (!error && view.health == NodeHealth::Ready) r_.node_seen_[name] = now;
    return nodes.emplace(name, view).first->second;
  };
  std::set<std::string> not_ready;
  std::optional<LostReplica> chosen;
  for (std::int32_t ordinal = start; ordinal < start + *replicas && !chosen; ++ordinal) {
    LostReplica lost;
    lost.ordinal = ordinal;
    lost.grace = setting->grace;
    for (const k8s::ClaimTemplate& t : *templates) {
      const std::string name = t.name + "-" + ref_.name + "-" + std::to_string(ordinal);
      auto claim = claim_by_name.find(name);
      if (claim == claim_by_name.end()) continue;
      const std::string volume_name = k8s::volume_name(*claim->second).value_or("");
      if (volume_name.empty() || k8s::pvc_phase(*claim->second).value_or("") != "Bound") continue;
      auto volume = found(r_.kube_.get(ObjectRef{Kind::PersistentVolume, "", volume_name}), error);
      if (error) return retry("reading volume " + volume_name + ": " + error->message);
      if (!volume) continue;
      const std::optional<std::string> node = pinned_node(*volume);
      if (!node) continue;
      const NodeView& view = node_of(*node);
      if (error) return retry("reading node " + *node + ": " + error->message);
      if (view.health == NodeHealth::NotReady) not_ready.insert(*node);
      if (view.health != NodeHealth::Gone) continue;
      if (!lost.node.empty() && lost.node != *node) continue;  // one node per recovery
      // The claim as it is (the cache keeps no creationTimestamp): rarely read, only here.
      auto live = found(r_.kube_.get(ObjectRef{Kind::PersistentVolumeClaim, ref_.ns, name}), error);
      if (error) return retry("reading claim " + name + ": " + error->message);
      if (!live) continue;
      // When the node was lost, as well as this process knows: the taint's time, else the
      // last time it saw the node Ready, else now (a controller started after the loss: the volume
      // binder places no new claim on a node that is gone, so an older claim is the replica's).
      TimePoint lost_at = now;
      if (view.since && *view.since < lost_at) lost_at = *view.since;
      if (auto seen = r_.node_seen_.find(*node); seen != r_.node_seen_.end()) {
        lost_at = std::min(lost_at, seen->second);
      }
      // Never a claim that holds nothing of the replica (a scale-up, one re-created by hand).
      if (!bound_after_loss(*live, *volume, lost_at).empty()) continue;
      lost.node = *node;
      lost.gone = view.gone;
      LostClaim c;
      c.claim = name;
      c.uid = k8s::uid(*live).value_or("");
      c.volume = volume_name;
      lost.claims.push_back(std::move(c));
    }
    if (lost.claims.empty()) continue;
    auto pod = pod_by_name.find(ref_.name + "-" + std::to_string(ordinal));
    if (pod != pod_by_name.end()) lost.pod_uid = k8s::uid(*pod->second).value_or("");
    chosen = std::move(lost);
  }

  // A node that may come back is reported, never acted on.
  auto& reported = r_.reported_not_ready_[ref_.ns + "/" + ref_.name];
  for (const std::string& node : not_ready) {
    if (reported.contains(node)) continue;
    emit_event(EventSeverity::Warning, "NodeNotReady",
               "node " + node +
                   ", where volumes of this StatefulSet are, is not Ready; "
                   "nothing is done while it may come back with the data (stsresize recovers a "
                   "replica only once its node is deleted or tainted " +
                   std::string{kOutOfServiceTaint} + ")");
  }
  reported = not_ready;
  if (!chosen) return std::nullopt;

  const std::string trigger = "node " + chosen->node + " " + chosen->gone + ": ordinal " +
                              std::to_string(chosen->ordinal) + " lost " + claim_list(*chosen);
  if (auto begun = begin(
          trigger,
          {entries::ReplicaLost{*chosen},
           entries::PhaseChanged{Phase::Pending, Phase::AwaitingNode, Trigger::StartRecovery}},
          OperationKind::Recovery);
      !begun) {
    return retry(begun.error());
  }
  return drive();
}

}  // namespace stsresize
