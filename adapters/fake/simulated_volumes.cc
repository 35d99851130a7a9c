// SimulatedCluster: the PV controller, the pvc/pv-protection controllers, a CSI provisioner
// and resizer. See simulated_cluster.h for what is and is not modelled.
#include <algorithm>

#include "adapters/clock/rfc3339.h"
#include "adapters/fake/api_rules.h"
#include "adapters/fake/simulated_cluster.h"
#include "adapters/fake/simulation_support.h"

namespace stsresize {
namespace {

const std::string kPvcProtection = "kubernetes.io/pvc-protection";
const std::string kPvProtection = "kubernetes.io/pv-protection";

// As kube-apiserver v1.37's pvc-protection controller behaves (seen on the local control
// plane): a pod that still exists keeps the claims it references, even once it has Succeeded;
// only deleting the pod (for a Job's pod: deleting the Job) releases them.
bool referenced_by_a_pod(const std::vector<Json>& pods, const std::string& ns,
                         const std::string& claim) {
  return std::ranges::any_of(pods, [&](const Json& pod) {
    if (sim::text(pod, {"metadata", "namespace"}) != ns) return false;
    const auto claims = sim::pod_claims(pod);
    return std::ranges::any_of(claims, [&](const auto& entry) { return entry.second == claim; });
  });
}

std::optional<std::int64_t> request_bytes(const Json& claim) {
  return fake::storage_bytes(sim::at(claim, {"spec", "resources", "requests"}));
}

}  // namespace

void SimulatedCluster::protect_and_reclaim_volumes() {
  const std::vector<Json> pods = kube_.list_raw(Kind::Pod);
  for (Json claim : kube_.list_raw(Kind::PersistentVolumeClaim)) {
    if (!sim::is_deleting(claim) || !sim::has_finalizer(claim, kPvcProtection)) continue;
    if (referenced_by_a_pod(pods, sim::text(claim, {"metadata", "namespace"}),
                            sim::text(claim, {"metadata", "name"}))) {
      continue;
    }
    sim::remove_finalizer(claim, kPvcProtection);
    (void)kube_.system().update(Kind::PersistentVolumeClaim, claim);
  }

  for (const Json& listed : kube_.list_raw(Kind::PersistentVolume)) {
    const std::string name = sim::text(listed, {"metadata", "name"});
    const ObjectRef ref{Kind::PersistentVolume, "", name};
    const Json& claim_ref = sim::at(listed, {"spec", "claimRef"});
    if (claim_ref.is_object() && !sim::text(claim_ref, {"name"}).empty()) {
      auto claim = kube_.get_raw({Kind::PersistentVolumeClaim, sim::text(claim_ref, {"namespace"}),
                                  sim::text(claim_ref, {"name"})});
      // A claimRef without uid only reserves the volume for a claim yet to come.
      const std::string bound_uid = sim::text(claim_ref, {"uid"});
      const bool claim_gone =
          !bound_uid.empty() && (!claim || sim::text(*claim, {"metadata", "uid"}) != bound_uid);
      const std::string phase = sim::text(listed, {"status", "phase"});

      if (claim_gone && phase == "Bound") {
        Json released = listed;
        released["status"]["phase"] = "Released";
        (void)kube_.system().update_status(Kind::PersistentVolume, released);
      }
      if (claim_gone && sim::text(listed, {"spec", "persistentVolumeReclaimPolicy"}) == "Delete") {
        (void)kube_.system().remove(ref);
      }
    }
    const std::string phase = sim::text(listed, {"status", "phase"});
    if (sim::text(claim_ref, {"uid"}).empty() && (phase == "Released" || phase == "Pending")) {
      Json available = listed;
      available["status"]["phase"] = "Available";
      (void)kube_.system().update_status(Kind::PersistentVolume, available);
    }
    // pv-protection: a deleting volume goes once nothing is bound to it.
    auto current = kube_.get_raw(ref);
    if (current && sim::is_deleting(*current) &&
        sim::text(*current, {"status", "phase"}) != "Bound" &&
        sim::has_finalizer(*current, kPvProtection)) {
      sim::remove_finalizer(*current, kPvProtection);
      (void)kube_.system().update(Kind::PersistentVolume, *current);
    }
    if (!kube_.get_raw(ref)) volumes_.erase(name);
  }
}

bool SimulatedCluster::bind(const Json& claim, const Json& volume) {
  const std::string volume_name = sim::text(volume, {"metadata", "name"});
  Json pv = volume;
  pv["spec"]["claimRef"] =
      Json{{"kind", "PersistentVolumeClaim"},
           {"apiVersion", "v1"},
           {"namespace", sim::text(claim, {"metadata", "namespace"})},
           {"name", sim::text(claim, {"metadata", "name"})},
           {"uid", sim::text(claim, {"metadata", "uid"})},
           {"resourceVersion", sim::text(claim, {"metadata", "resourceVersion"})}};
  auto updated_pv = kube_.system().update(Kind::PersistentVolume, pv);
  if (!updated_pv) return false;
  (*updated_pv)["status"] = Json{{"phase", "Bound"}};
  if (!kube_.system().update_status(Kind::PersistentVolume, *updated_pv)) return false;

  Json pvc = claim;
  pvc["spec"]["volumeName"] = volume_name;
  Json& annotations = pvc["metadata"]["annotations"];
  annotations["pv.kubernetes.io/bind-completed"] = "yes";
  annotations["pv.kubernetes.io/bound-by-controller"] = "yes";
  auto updated_pvc = kube_.system().update(Kind::PersistentVolumeClaim, pvc);
  if (!updated_pvc) return false;
  (*updated_pvc)["status"] = Json{{"phase", "Bound"},
                                  {"accessModes", sim::at(volume, {"spec", "accessModes"})},
                                  {"capacity", sim::at(volume, {"spec", "capacity"})}};
  if (!kube_.system().update_status(Kind::PersistentVolumeClaim, *updated_pvc)) return false;
  volumes_.try_emplace(volume_name);
  return true;
}

void SimulatedCluster::bind_claims() {
  for (const Json& claim : kube_.list_raw(Kind::PersistentVolumeClaim)) {
    if (sim::is_deleting(claim) || sim::text(claim, {"status", "phase"}) == "Bound") continue;
    const std::string ns = sim::text(claim, {"metadata", "namespace"});
    const std::string name = sim::text(claim, {"metadata", "name"});
    const std::string uid = sim::text(claim, {"metadata", "uid"});
    const std::string class_name = sim::text(claim, {"spec", "storageClassName"});

    // A volume already meant for this claim: named by the claim, or naming the claim.
    auto fits = [&](const Json& volume) {
      const Json& claim_ref = sim::at(volume, {"spec", "claimRef"});
      const std::string ref_uid = sim::text(claim_ref, {"uid"});
      const auto capacity = fake::storage_bytes(sim::at(volume, {"spec", "capacity"}));
      const auto request = request_bytes(claim);
      return !sim::is_deleting(volume) && sim::text(volume, {"status", "phase"}) != "Released" &&
             (claim_ref.is_null() ||
              (sim::text(claim_ref, {"namespace"}) == ns &&
               sim::text(claim_ref, {"name"}) == name && (ref_uid.empty() || ref_uid == uid))) &&
             sim::text(volume, {"spec", "storageClassName"}) == class_name && capacity && request &&
             *capacity >= *request;
    };
    const std::string wanted = sim::text(claim, {"spec", "volumeName"});
    if (!wanted.empty()) {
      auto volume = kube_.get_raw({Kind::PersistentVolume, "", wanted});
      if (volume && fits(*volume)) bind(claim, *volume);
      continue;  // a claim that names its volume waits for exactly that one
    }
    bool bound = false;
    for (const Json& volume : kube_.list_raw(Kind::PersistentVolume)) {
      if (!sim::at(volume, {"spec", "claimRef"}).is_null() && fits(volume)) {
        bound = bind(claim, volume);
        break;
      }
    }
    if (bound || class_name.empty() || failing_classes_.contains(class_name)) continue;
    auto storage_class = kube_.get_raw({Kind::StorageClass, "", class_name});
    if (!storage_class) continue;

    const std::string volume_name = "pvc-" + uid;
    Json volume{
        {"metadata",
         {{"name", volume_name},
          {"annotations",
           {{"pv.kubernetes.io/provisioned-by", sim::text(*storage_class, {"provisioner"})}}}}},
        {"spec",
         {{"capacity", {{"storage", sim::at(claim, {"spec", "resources", "requests", "storage"})}}},
          {"accessModes", sim::at(claim, {"spec", "accessModes"})},
          {"persistentVolumeReclaimPolicy",
           storage_class->value("reclaimPolicy", std::string{"Delete"})},
          {"storageClassName", class_name},
          {"volumeMode", sim::text(claim, {"spec", "volumeMode"}).empty()
                             ? std::string{"Filesystem"}
                             : sim::text(claim, {"spec", "volumeMode"})},
          {"csi",
           {{"driver", sim::text(*storage_class, {"provisioner"})},
            {"volumeHandle", volume_name}}}}}};
    auto created = kube_.system().create(Kind::PersistentVolume, volume);
    if (created) bind(claim, *created);
  }
}

void SimulatedCluster::expand_volumes() {
  for (const Json& claim : kube_.list_raw(Kind::PersistentVolumeClaim)) {
    if (sim::text(claim, {"status", "phase"}) != "Bound") continue;
    const auto request = request_bytes(claim);
    const auto capacity = fake::storage_bytes(sim::at(claim, {"status", "capacity"}));
    if (!request || !capacity || *request <= *capacity) continue;
    auto storage_class =
        kube_.get_raw({Kind::StorageClass, "", sim::text(claim, {"spec", "storageClassName"})});
    if (!storage_class || storage_class->value("allowVolumeExpansion", false) != true) continue;
    auto volume =
        kube_.get_raw({Kind::PersistentVolume, "", sim::text(claim, {"spec", "volumeName"})});
    if (!volume) continue;
    const Json size = sim::at(claim, {"spec", "resources", "requests", "storage"});
    (*volume)["spec"]["capacity"]["storage"] = size;
    if (!kube_.system().update(Kind::PersistentVolume, *volume)) continue;
    Json grown = claim;
    grown["status"]["capacity"]["storage"] = size;
    (void)kube_.system().update_status(Kind::PersistentVolumeClaim, grown);
  }
}

}  // namespace stsresize
