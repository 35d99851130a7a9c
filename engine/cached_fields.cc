#include "engine/cached_fields.h"

#include <map>

namespace stsresize {

namespace {

// kubectl apply's copy of the whole object as last applied: as large as the spec, never read.
constexpr std::string_view kLastAppliedAnnotation =
    "kubectl.kubernetes.io/last-applied-configuration";

// Every kind: what the informer needs (its key, and the version a relist compares and a watch
// resumes from) and what k8s::describe, name, namespace_of, uid, labels, label, annotations,
// annotation and is_being_deleted read; then `more`.
std::vector<FieldPath> with_metadata(std::initializer_list<FieldPath> more) {
  std::vector<FieldPath> paths{{"apiVersion"},
                               {"kind"},
                               {"metadata", "name"},
                               {"metadata", "namespace"},
                               {"metadata", "uid"},
                               {"metadata", "resourceVersion"},
                               {"metadata", "labels"},
                               {"metadata", "annotations"},
                               {"metadata", "deletionTimestamp"}};
  paths.insert(paths.end(), more);
  return paths;
}

// Read from cached StatefulSets by adapters/controller/attention.cc (needs_attention and what
// it calls: read_operation, the drain's rules, drain_candidates, plan_resize) and by the
// controller (keys, refusal_fingerprint, the phase metric); the states' readers of the same
// kind are covered too, so that a step reading a cached StatefulSet finds what it reads live.
// Dropped: spec.template (the pod template: most of a StatefulSet, never read),
// spec.updateStrategy, spec.revisionHistoryLimit, spec.minReadySeconds, the claim templates'
// labels, annotations and status, status revisions, collisionCount and conditions.
const std::vector<FieldPath> kStatefulSetFields = with_metadata({
    FieldPath{"metadata", "generation"},  // k8s::generation
    FieldPath{"metadata", "finalizers"},  // has_finalizer (the drain's finalizer)
    FieldPath{"spec", "replicas"},        // k8s::spec_replicas
    FieldPath{"spec", "selector"},        // k8s::selector_match_labels, the cleanup pod's labels
    FieldPath{"spec", "serviceName"},     // the cleanup pod's subdomain
    FieldPath{"spec", "ordinals"},        // drain_candidates, states/drain_support.cc
    FieldPath{"spec", "podManagementPolicy"},                   // states/drain.cc
    FieldPath{"spec", "persistentVolumeClaimRetentionPolicy"},  // drain_candidates, drain_refusal
    // k8s::claim_templates
    FieldPath{"spec", "volumeClaimTemplates", "*", "metadata", "name"},
    FieldPath{"spec", "volumeClaimTemplates", "*", "spec", "accessModes"},
    FieldPath{"spec", "volumeClaimTemplates", "*", "spec", "resources", "requests", "storage"},
    FieldPath{"spec", "volumeClaimTemplates", "*", "spec", "storageClassName"},
    // k8s::statefulset_status
    FieldPath{"status", "observedGeneration"},
    FieldPath{"status", "replicas"},
    FieldPath{"status", "readyReplicas"},
    FieldPath{"status", "currentReplicas"},
    FieldPath{"status", "updatedReplicas"},
    FieldPath{"status", "availableReplicas"},
});

// Read from cached claims by needs_attention (unfinished_backups, the recreated-by annotation,
// drain_candidates, plan_resize) and the states' readers of claims. Dropped: finalizers,
// creationTimestamp, spec.selector, spec.dataSource(Ref), status.accessModes,
// status.allocatedResources and the rest of status.
const std::vector<FieldPath> kClaimFields = with_metadata({
    FieldPath{"metadata", "ownerReferences"},        // k8s::owner_references
    FieldPath{"spec", "accessModes"},                // k8s::access_modes
    FieldPath{"spec", "resources"},                  // k8s::requested_storage
    FieldPath{"spec", "storageClassName"},           // k8s::storage_class_name
    FieldPath{"spec", "volumeMode"},                 // plan_resize
    FieldPath{"spec", "volumeName"},                 // k8s::volume_name
    FieldPath{"spec", "volumeAttributesClassName"},  // kept by a re-created claim
    FieldPath{"status", "phase"},                    // k8s::pvc_phase
    FieldPath{"status", "capacity"},                 // k8s::capacity
    FieldPath{"status", "conditions"},               // k8s::conditions, condition
});

// Read by plan_resize (name, allowVolumeExpansion) and k8s::provisioner.
const std::vector<FieldPath> kStorageClassFields = with_metadata({
    FieldPath{"provisioner"},
    FieldPath{"allowVolumeExpansion"},
});

// Every pod of the watched namespaces is cached (the fence reads them all: a pod of any owner,
// or of none, may mount a claim), so a pod keeps what its readers read: the fence
// (states/fence.cc: mounted_claims, pod_phase, ownerReferences, the operation's label), the
// measure Jobs' placement (states/measure.cc: nodeName, tolerations), the drain
// (states/drain*.cc, engine/statefulset_deletion.cc: the cleanup pod's annotation,
// creationTimestamp, ownerReferences, and its status: phase, restarts, terminated containers,
// conditions). Dropped: the containers, their images, commands, env, probes and resources, most
// of a pod, never read from a cached pod.
const std::vector<FieldPath> kPodFields = with_metadata({
    FieldPath{"metadata", "ownerReferences"},    // k8s::owner_references
    FieldPath{"metadata", "creationTimestamp"},  // drain::ended_before
    FieldPath{"spec", "nodeName"},               // states/measure.cc
    FieldPath{"spec", "tolerations"},            // states/measure.cc
    FieldPath{"spec", "volumes"},                // k8s::mounted_claims
    FieldPath{"status"},  // pod_phase, pod_ready, terminated_container, drain::restarts
});

// Every volume is cached when the controller may list and watch them (a cluster-scoped
// installation), and keeps what the states read of a volume: the rebind path
// (states/rebind.cc: the reclaim policy, claimRef, phase, and the class and name a claim
// created on it takes), the lost-volume recovery (engine/lost_volume.cc: the node it is pinned
// to, when it was created and last changed phase; states/replace_volume.cc: its policy).
// Dropped: the volume source (csi, hostPath, local...), mount options, finalizers and the rest
// of status.
const std::vector<FieldPath> kVolumeFields = with_metadata({
    FieldPath{"metadata", "creationTimestamp"},          // bound_after_loss
    FieldPath{"spec", "persistentVolumeReclaimPolicy"},  // rebind.cc, replace_volume.cc
    FieldPath{"spec", "claimRef"},                       // rebind.cc: claim_ref_of
    FieldPath{"spec", "storageClassName"},               // rebind.cc: claim_on_volume
    FieldPath{"spec", "capacity"},                       // what a person reads in a dump
    FieldPath{"spec", "accessModes"},                    // what a person reads in a dump
    FieldPath{"spec", "volumeMode"},                     // what a person reads in a dump
    FieldPath{"spec", "nodeAffinity"},                   // pinned_node
    FieldPath{"status", "phase"},                        // rebind.cc
    FieldPath{"status", "lastPhaseTransitionTime"},      // bound_after_loss
});

struct Node {
  bool whole = false;
  std::map<std::string_view, Node> children;  // "*": every element of an array
};

Node tree_of(std::span<const FieldPath> paths) {
  Node root;
  for (const FieldPath& path : paths) {
    Node* node = &root;
    for (std::string_view segment : path) node = &node->children[segment];
    node->whole = true;
  }
  return root;
}

Json kept(const Json& object, const Node& node) {
  if (node.whole) return object;
  if (const auto every = node.children.find("*"); every != node.children.end()) {
    if (!object.is_array()) return object;  // not the shape read: its reader reports it
    Json out = Json::array();
    for (const Json& element : object) out.push_back(kept(element, every->second));
    return out;
  }
  if (!object.is_object()) return object;  // not the shape read: its reader reports it
  Json out = Json::object();
  for (const auto& [name, child] : node.children) {
    const auto found = object.find(name);
    if (found != object.end()) out[std::string{name}] = kept(*found, child);
  }
  return out;
}

void drop_unread_metadata(Json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return;
  metadata->erase("managedFields");
  const auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return;
  annotations->erase(std::string{kLastAppliedAnnotation});
}

}  // namespace

std::span<const FieldPath> cached_fields(Kind kind) {
  switch (kind) {
    case Kind::StatefulSet:
      return kStatefulSetFields;
    case Kind::PersistentVolumeClaim:
      return kClaimFields;
    case Kind::StorageClass:
      return kStorageClassFields;
    case Kind::Pod:
      return kPodFields;
    case Kind::PersistentVolume:
      return kVolumeFields;
    default:
      return {};
  }
}

Json keep_fields(const Json& object, std::span<const FieldPath> paths) {
  return kept(object, tree_of(paths));
}

Json trim_for_cache(Kind kind, Json object) {
  static const Node kStatefulSetTree = tree_of(kStatefulSetFields);
  static const Node kClaimTree = tree_of(kClaimFields);
  static const Node kStorageClassTree = tree_of(kStorageClassFields);
  static const Node kPodTree = tree_of(kPodFields);
  static const Node kVolumeTree = tree_of(kVolumeFields);
  const Node* tree = nullptr;
  switch (kind) {
    case Kind::StatefulSet:
      tree = &kStatefulSetTree;
      break;
    case Kind::PersistentVolumeClaim:
      tree = &kClaimTree;
      break;
    case Kind::StorageClass:
      tree = &kStorageClassTree;
      break;
    case Kind::Pod:
      tree = &kPodTree;
      break;
    case Kind::PersistentVolume:
      tree = &kVolumeTree;
      break;
    default:
      break;
  }
  if (tree != nullptr) object = kept(object, *tree);
  drop_unread_metadata(object);
  return object;
}

}  // namespace stsresize
