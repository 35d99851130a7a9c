#include "engine/cached_fields.h"

#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "engine/lost_volume.h"
#include "engine/timestamp.h"

namespace stsresize {
namespace {

// As a v1.31 API server returns them (kubectl apply, then the claim bound and the set Ready),
// with managedFields as the server keeps them.
const Json kManagedFields = Json::parse(R"([{"apiVersion":"v1","fieldsType":"FieldsV1",
  "fieldsV1":{"f:spec":{"f:replicas":{}}},"manager":"kubectl","operation":"Update",
  "time":"2026-11-26T11:41:28Z"}])");

Json full_statefulset() {
  Json sts = Json::parse(R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{
    "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"apps/v1\"}\n",
      "stsresize.dev/scaledown-claims":"delete-after=1h"},
    "creationTimestamp":"2026-11-26T11:41:28Z","generation":1,"labels":{"app":"web"},
    "finalizers":["statefulsets.kubernetes.io/scaledown"],
    "name":"web","namespace":"default","resourceVersion":"306",
    "uid":"db5b4b26-c50c-401a-9b59-915ef3275d9e"},
  "spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Retain"},
    "podManagementPolicy":"OrderedReady","replicas":3,"revisionHistoryLimit":10,
    "ordinals":{"start":0},
    "selector":{"matchLabels":{"app":"web"}},"serviceName":"web",
    "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A",
      "value":"1"}],"image":"registry.k8s.io/pause:3.10","imagePullPolicy":"IfNotPresent",
      "name":"main","resources":{},"terminationMessagePath":"/dev/termination-log",
      "terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/data","name":"data"}]}],
      "dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler",
      "securityContext":{},"terminationGracePeriodSeconds":30}},
    "updateStrategy":{"rollingUpdate":{"maxUnavailable":1,"partition":0},"type":"RollingUpdate"},
    "volumeClaimTemplates":[{"apiVersion":"v1","kind":"PersistentVolumeClaim",
      "metadata":{"labels":{"tier":"db"},"name":"data"},
      "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"},
        "limits":{"storage":"4Gi"}},"storageClassName":"sim-fixed","volumeMode":"Filesystem"},
      "status":{"phase":"Pending"}}]},
  "status":{"availableReplicas":1,"collisionCount":0,"currentReplicas":1,
    "currentRevision":"web-77669f669f","observedGeneration":1,"readyReplicas":1,"replicas":1,
    "updateRevision":"web-77669f669f","updatedReplicas":1,
    "conditions":[{"type":"Healthy","status":"True"}]}})");
  sts["metadata"]["managedFields"] = kManagedFields;
  return sts;
}

Json full_claim() {
  Json claim = Json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{
    "annotations":{"pv.kubernetes.io/bind-completed":"yes",
      "volume.kubernetes.io/storage-provisioner":"stsresize.dev/nodesim",
      "kubectl.kubernetes.io/last-applied-configuration":"{}"},
    "creationTimestamp":"2026-11-26T11:41:28Z","finalizers":["kubernetes.io/pvc-protection"],
    "labels":{"app":"web","tier":"db"},"name":"data-web-0","namespace":"default",
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web",
      "uid":"db5b4b26-c50c-401a-9b59-915ef3275d9e","controller":true}],
    "deletionTimestamp":"2026-11-26T12:00:00Z",
    "resourceVersion":"300","uid":"38930a9c-fec3-4109-8659-1c7ae29f54d8"},
  "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},
    "storageClassName":"sim-fixed","volumeMode":"Filesystem",
    "volumeName":"pvc-38930a9c-fec3-4109-8659-1c7ae29f54d8",
    "volumeAttributesClassName":"gold","selector":{"matchLabels":{"a":"b"}},
    "dataSource":{"kind":"PersistentVolumeClaim","name":"seed"}},
  "status":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},
    "allocatedResources":{"storage":"1Gi"},
    "conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-11-26T11:41:28Z",
      "message":"A pod is currently referencing this PVC","reason":"PodUsingPVC",
      "status":"False","type":"Unused"}],"phase":"Bound"}})");
  claim["metadata"]["managedFields"] = kManagedFields;
  return claim;
}

Json full_storage_class() {
  Json sc = Json::parse(R"({"allowVolumeExpansion":false,"apiVersion":"storage.k8s.io/v1",
    "kind":"StorageClass","metadata":{"annotations":{
      "storageclass.kubernetes.io/is-default-class":"false"},
    "creationTimestamp":"2026-11-26T11:40:22Z","name":"sim-fixed","resourceVersion":"223",
    "uid":"d816a071-e327-4996-ba5b-5891498b6a98"},"provisioner":"stsresize.dev/nodesim",
    "parameters":{"type":"ssd"},"reclaimPolicy":"Delete","volumeBindingMode":"WaitForFirstConsumer"})");
  sc["metadata"]["managedFields"] = kManagedFields;
  return sc;
}

TEST(CachedFields, AStatefulSetKeepsExactlyTheFieldsTheControllerReads) {
  const Json expected = Json::parse(R"({"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{
    "annotations":{"stsresize.dev/scaledown-claims":"delete-after=1h"},
    "generation":1,"labels":{"app":"web"},"finalizers":["statefulsets.kubernetes.io/scaledown"],
    "name":"web","namespace":"default","resourceVersion":"306",
    "uid":"db5b4b26-c50c-401a-9b59-915ef3275d9e"},
  "spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Retain","whenScaled":"Retain"},
    "podManagementPolicy":"OrderedReady","replicas":3,"ordinals":{"start":0},
    "selector":{"matchLabels":{"app":"web"}},"serviceName":"web",
    "volumeClaimTemplates":[{"metadata":{"name":"data"},
      "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},
        "storageClassName":"sim-fixed"}}]},
  "status":{"availableReplicas":1,"currentReplicas":1,"observedGeneration":1,
    "readyReplicas":1,"replicas":1,"updatedReplicas":1}})");
  EXPECT_EQ(trim_for_cache(Kind::StatefulSet, full_statefulset()), expected)
      << trim_for_cache(Kind::StatefulSet, full_statefulset()).dump(2);
}

TEST(CachedFields, AClaimKeepsExactlyTheFieldsTheControllerReads) {
  const Json expected = Json::parse(R"({"apiVersion":"v1","kind":"PersistentVolumeClaim",
  "metadata":{"annotations":{"pv.kubernetes.io/bind-completed":"yes",
      "volume.kubernetes.io/storage-provisioner":"stsresize.dev/nodesim"},
    "labels":{"app":"web","tier":"db"},"name":"data-web-0","namespace":"default",
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web",
      "uid":"db5b4b26-c50c-401a-9b59-915ef3275d9e","controller":true}],
    "deletionTimestamp":"2026-11-26T12:00:00Z",
    "resourceVersion":"300","uid":"38930a9c-fec3-4109-8659-1c7ae29f54d8"},
  "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},
    "storageClassName":"sim-fixed","volumeMode":"Filesystem",
    "volumeName":"pvc-38930a9c-fec3-4109-8659-1c7ae29f54d8","volumeAttributesClassName":"gold"},
  "status":{"capacity":{"storage":"1Gi"},
    "conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-11-26T11:41:28Z",
      "message":"A pod is currently referencing this PVC","reason":"PodUsingPVC",
      "status":"False","type":"Unused"}],"phase":"Bound"}})");
  EXPECT_EQ(trim_for_cache(Kind::PersistentVolumeClaim, full_claim()), expected)
      << trim_for_cache(Kind::PersistentVolumeClaim, full_claim()).dump(2);
}

TEST(CachedFields, AStorageClassKeepsExactlyTheFieldsTheControllerReads) {
  const Json expected = Json::parse(R"({"allowVolumeExpansion":false,
    "apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"annotations":{
      "storageclass.kubernetes.io/is-default-class":"false"},"name":"sim-fixed",
    "resourceVersion":"223","uid":"d816a071-e327-4996-ba5b-5891498b6a98"},
    "provisioner":"stsresize.dev/nodesim"})");
  EXPECT_EQ(trim_for_cache(Kind::StorageClass, full_storage_class()), expected)
      << trim_for_cache(Kind::StorageClass, full_storage_class()).dump(2);
}

// Jobs and ConfigMaps are watched only when stsresize made them: kept whole but for what no
// kind's reader reads.
TEST(CachedFields, OwnedKindsLoseOnlyManagedFieldsAndTheLastAppliedCopy) {
  for (Kind kind : {Kind::Job, Kind::ConfigMap}) {
    Json object = Json::parse(R"({"apiVersion":"v1","kind":"X","metadata":{"name":"a",
      "namespace":"n","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}",
      "keep":"me"}},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"},
      "data":{"k":"v"}})");
    Json expected = object;
    expected["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
    object["metadata"]["managedFields"] = kManagedFields;
    EXPECT_EQ(trim_for_cache(kind, object), expected) << to_string(kind);
    EXPECT_TRUE(cached_fields(kind).empty()) << to_string(kind);
  }
}

// What each reader of a cached object answers is what it answers on the full object.
TEST(CachedFields, ReadersAnswerTheSameOnTrimmedObjects) {
  const Json sts = full_statefulset();
  const Json cached_sts = trim_for_cache(Kind::StatefulSet, sts);
  EXPECT_EQ(k8s::describe(cached_sts), k8s::describe(sts));
  EXPECT_EQ(k8s::name(cached_sts), k8s::name(sts));
  EXPECT_EQ(k8s::namespace_of(cached_sts), k8s::namespace_of(sts));
  EXPECT_EQ(k8s::uid(cached_sts), k8s::uid(sts));
  EXPECT_EQ(k8s::resource_version(cached_sts), k8s::resource_version(sts));
  EXPECT_EQ(k8s::generation(cached_sts), k8s::generation(sts));
  EXPECT_EQ(k8s::labels(cached_sts), k8s::labels(sts));
  EXPECT_EQ(k8s::annotation(cached_sts, "stsresize.dev/scaledown-claims"),
            k8s::annotation(sts, "stsresize.dev/scaledown-claims"));
  EXPECT_EQ(k8s::is_being_deleted(cached_sts), k8s::is_being_deleted(sts));
  EXPECT_EQ(k8s::spec_replicas(cached_sts), k8s::spec_replicas(sts));
  const auto status = k8s::statefulset_status(sts);
  const auto cached_status = k8s::statefulset_status(cached_sts);
  ASSERT_TRUE(status && cached_status);
  EXPECT_EQ(cached_status->observed_generation, status->observed_generation);
  EXPECT_EQ(cached_status->replicas, status->replicas);
  EXPECT_EQ(cached_status->ready_replicas, status->ready_replicas);
  EXPECT_EQ(cached_status->current_replicas, status->current_replicas);
  EXPECT_EQ(cached_status->updated_replicas, status->updated_replicas);
  EXPECT_EQ(cached_status->available_replicas, status->available_replicas);
  const auto templates = k8s::claim_templates(sts);
  const auto cached_templates = k8s::claim_templates(cached_sts);
  ASSERT_TRUE(templates && cached_templates);
  ASSERT_EQ(cached_templates->size(), templates->size());
  EXPECT_EQ(cached_templates->at(0).name, templates->at(0).name);
  EXPECT_EQ(cached_templates->at(0).storage, templates->at(0).storage);
  EXPECT_EQ(cached_templates->at(0).storage_class, templates->at(0).storage_class);
  EXPECT_EQ(cached_templates->at(0).access_modes, templates->at(0).access_modes);
  EXPECT_EQ(k8s::selector_match_labels(cached_sts), k8s::selector_match_labels(sts));

  const Json claim = full_claim();
  const Json cached_claim = trim_for_cache(Kind::PersistentVolumeClaim, claim);
  EXPECT_EQ(k8s::requested_storage(cached_claim), k8s::requested_storage(claim));
  EXPECT_EQ(k8s::capacity(cached_claim), k8s::capacity(claim));
  EXPECT_EQ(k8s::pvc_phase(cached_claim), k8s::pvc_phase(claim));
  EXPECT_EQ(k8s::storage_class_name(cached_claim), k8s::storage_class_name(claim));
  EXPECT_EQ(k8s::volume_name(cached_claim), k8s::volume_name(claim));
  EXPECT_EQ(k8s::access_modes(cached_claim), k8s::access_modes(claim));
  EXPECT_EQ(k8s::owner_references(cached_claim), k8s::owner_references(claim));
  EXPECT_EQ(k8s::conditions(cached_claim), k8s::conditions(claim));
  EXPECT_EQ(k8s::is_being_deleted(cached_claim), k8s::is_being_deleted(claim));

  const Json sc = full_storage_class();
  const Json cached_sc = trim_for_cache(Kind::StorageClass, sc);
  EXPECT_EQ(k8s::allows_volume_expansion(cached_sc), k8s::allows_volume_expansion(sc));
  EXPECT_EQ(k8s::provisioner(cached_sc), k8s::provisioner(sc));
}

// A replica as the kubelet reports it: most of it is its containers, never read from a cache.
Json full_pod() {
  Json pod = Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{
    "annotations":{"statefulsets.kubernetes.io/scaledown-pod-owner":"web"},
    "creationTimestamp":"2026-11-26T11:41:30Z","generateName":"web-",
    "labels":{"app":"web","apps.kubernetes.io/pod-index":"0","stsresize.dev/operation":"op-1"},
    "name":"web-0","namespace":"shop",
    "ownerReferences":[{"apiVersion":"apps/v1","blockOwnerDeletion":true,"controller":true,
      "kind":"StatefulSet","name":"web","uid":"8c3e"}],
    "resourceVersion":"1187","uid":"0a1b","deletionTimestamp":"2026-11-26T11:50:00Z"},
    "spec":{"containers":[{"name":"app","image":"busybox:1.36","command":["sh","-c","sleep 1d"],
      "env":[{"name":"A","value":"b"}],"resources":{"requests":{"cpu":"100m"}},
      "volumeMounts":[{"mountPath":"/data","name":"data"}]}],
      "hostname":"web-0","nodeName":"node-1","restartPolicy":"Always",
      "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists"}],
      "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-web-0"}},
        {"name":"kube-api-access","projected":{"sources":[]}}]},
    "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],
      "containerStatuses":[{"name":"app","restartCount":2,"ready":true,
        "state":{"terminated":{"exitCode":0,"reason":"Completed","message":"summary"}}}]}})");
  pod["metadata"]["managedFields"] = kManagedFields;
  return pod;
}

// Every pod is watched (the fence reads them all): each keeps what the fence, the measure Jobs'
// placement and the drain read, and none of its containers.
TEST(CachedFields, APodKeepsWhatTheFenceTheMeasureAndTheDrainRead) {
  const Json pod = full_pod();
  const Json cached = trim_for_cache(Kind::Pod, pod);
  EXPECT_FALSE(cached["spec"].contains("containers"));
  EXPECT_FALSE(cached["spec"].contains("hostname"));
  EXPECT_FALSE(cached["metadata"].contains("managedFields"));
  EXPECT_EQ(k8s::name(cached), k8s::name(pod));
  EXPECT_EQ(k8s::uid(cached), k8s::uid(pod));
  EXPECT_EQ(k8s::labels(cached), k8s::labels(pod));
  EXPECT_EQ(k8s::annotation(cached, "statefulsets.kubernetes.io/scaledown-pod-owner"),
            k8s::annotation(pod, "statefulsets.kubernetes.io/scaledown-pod-owner"));
  EXPECT_EQ(k8s::owner_references(cached), k8s::owner_references(pod));
  EXPECT_EQ(k8s::is_being_deleted(cached), k8s::is_being_deleted(pod));
  EXPECT_EQ(k8s::mounted_claims(cached), k8s::mounted_claims(pod));
  EXPECT_EQ(k8s::pod_phase(cached), k8s::pod_phase(pod));
  EXPECT_EQ(k8s::pod_ready(cached), k8s::pod_ready(pod));
  const auto terminated = k8s::terminated_container(pod, "app");
  const auto cached_terminated = k8s::terminated_container(cached, "app");
  ASSERT_TRUE(terminated && *terminated && cached_terminated && *cached_terminated);
  EXPECT_EQ((*cached_terminated)->message, (*terminated)->message);
  EXPECT_EQ(cached["metadata"]["creationTimestamp"], pod["metadata"]["creationTimestamp"]);
  EXPECT_EQ(cached["spec"]["nodeName"], pod["spec"]["nodeName"]);
  EXPECT_EQ(cached["spec"]["tolerations"], pod["spec"]["tolerations"]);
  EXPECT_EQ(cached["status"], pod["status"]);
}

// A volume as a CSI driver and the binder leave it: its source, mount options and finalizers
// are never read.
Json full_volume() {
  Json volume = Json::parse(R"({"apiVersion":"v1","kind":"PersistentVolume","metadata":{
    "annotations":{"pv.kubernetes.io/provisioned-by":"stsresize.dev/nodesim"},
    "creationTimestamp":"2026-11-26T11:41:28Z","finalizers":["kubernetes.io/pv-protection"],
    "name":"pvc-38930a9c","resourceVersion":"301","uid":"7d1e"},
    "spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},
      "claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data-web-0",
        "namespace":"shop","resourceVersion":"290","uid":"38930a9c"},
      "csi":{"driver":"stsresize.dev/nodesim","volumeHandle":"h-38930a9c",
        "volumeAttributes":{"path":"/var/lib/nodesim/volumes/h-38930a9c"}},
      "mountOptions":["noatime"],
      "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[
        {"key":"kubernetes.io/hostname","operator":"In","values":["sim-node-1"]}]}]}},
      "persistentVolumeReclaimPolicy":"Retain","storageClassName":"sim-fixed",
      "volumeMode":"Filesystem"},
    "status":{"lastPhaseTransitionTime":"2026-11-26T11:41:29Z","phase":"Bound"}})");
  volume["metadata"]["managedFields"] = kManagedFields;
  return volume;
}

// Volumes are cached when the controller may list and watch them: each keeps what the rebind
// path and the lost-volume recovery read.
TEST(CachedFields, AVolumeKeepsWhatTheRebindPathAndTheRecoveryRead) {
  const Json volume = full_volume();
  const Json cached = trim_for_cache(Kind::PersistentVolume, volume);
  EXPECT_FALSE(cached["spec"].contains("csi"));
  EXPECT_FALSE(cached["spec"].contains("mountOptions"));
  EXPECT_FALSE(cached["metadata"].contains("finalizers"));
  EXPECT_FALSE(cached["metadata"].contains("managedFields"));
  for (const char* field : {"persistentVolumeReclaimPolicy", "claimRef", "storageClassName",
                            "capacity", "accessModes", "volumeMode", "nodeAffinity"}) {
    EXPECT_EQ(cached["spec"][field], volume["spec"][field]) << field;
  }
  EXPECT_EQ(cached["status"], volume["status"]);
  EXPECT_EQ(k8s::name(cached), k8s::name(volume));
  EXPECT_EQ(k8s::uid(cached), k8s::uid(volume));
  EXPECT_EQ(k8s::annotations(cached), k8s::annotations(volume));
  EXPECT_EQ(pinned_node(cached), pinned_node(volume));
  ASSERT_EQ(pinned_node(cached), std::optional<std::string>{"sim-node-1"});
  const Json claim = full_claim();
  for (const char* at : {"2026-11-26T11:41:00Z", "2026-11-26T11:41:29Z", "2026-11-26T12:00:00Z"}) {
    const TimePoint lost_at = *parse_timestamp(at);
    EXPECT_EQ(bound_after_loss(claim, cached, lost_at), bound_after_loss(claim, volume, lost_at))
        << at;
  }
}

// A field of the wrong shape stays as it is, so that its reader reports it as on the full
// object instead of reading a default.
TEST(CachedFields, AFieldOfTheWrongShapeIsKeptForItsReaderToReport) {
  Json sts = full_statefulset();
  sts["spec"] = "not an object";
  const Json cached = trim_for_cache(Kind::StatefulSet, sts);
  EXPECT_EQ(cached.at("spec"), "not an object");
  EXPECT_FALSE(k8s::spec_replicas(cached).has_value());

  sts = full_statefulset();
  sts["spec"]["volumeClaimTemplates"] = Json{{"data", 1}};
  EXPECT_EQ(trim_for_cache(Kind::StatefulSet, sts)["spec"]["volumeClaimTemplates"],
            sts["spec"]["volumeClaimTemplates"]);
  sts["spec"]["volumeClaimTemplates"] = Json::array({"a string"});
  EXPECT_EQ(trim_for_cache(Kind::StatefulSet, sts)["spec"]["volumeClaimTemplates"],
            sts["spec"]["volumeClaimTemplates"]);
}

TEST(CachedFields, KeepFieldsAddsNothingThatWasAbsent) {
  const Json object = {{"a", {{"b", 1}, {"c", 2}}}, {"d", 3}};
  EXPECT_EQ(keep_fields(object, std::vector<FieldPath>{{"a", "b"}, {"x", "y"}, {"a", "z"}}),
            (Json{{"a", {{"b", 1}}}}));
  EXPECT_EQ(keep_fields(object, std::vector<FieldPath>{{"a"}, {"a", "b"}}),
            (Json{{"a", {{"b", 1}, {"c", 2}}}}));
  EXPECT_EQ(keep_fields(object, std::vector<FieldPath>{}), Json::object());
}

}  // namespace
}  // namespace stsresize
