#include "engine/k8s_objects.h"

#include <gtest/gtest.h>

#include <string>

namespace stsresize::k8s {
namespace {

// Shapes as the API server returns them (trimmed managedFields, real field names and types).
const Json kStatefulSet = Json::parse(R"({
  "apiVersion": "apps/v1",
  "kind": "StatefulSet",
  "metadata": {
    "name": "web", "namespace": "shop", "uid": "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11",
    "resourceVersion": "48213", "generation": 3,
    "creationTimestamp": "2026-11-20T09:14:02Z",
    "labels": {"app": "web"},
    "annotations": {"stsresize.dev/state": "Idle"},
    "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update",
                       "apiVersion": "apps/v1", "time": "2026-11-20T09:14:02Z",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
  },
  "spec": {
    "replicas": 3,
    "selector": {"matchLabels": {"app": "web"}},
    "serviceName": "web",
    "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
    "volumeClaimTemplates": [
      {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "data"},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
       "status": {"phase": "Pending"}},
      {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "logs"},
       "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "500M"}}}}
    ],
    "podManagementPolicy": "OrderedReady",
    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
    "revisionHistoryLimit": 10,
    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}
  },
  "status": {
    "observedGeneration": 3, "replicas": 3, "readyReplicas": 2, "currentReplicas": 3,
    "updatedReplicas": 3, "availableReplicas": 2, "currentRevision": "web-7d9f8c6b5",
    "updateRevision": "web-7d9f8c6b5", "collisionCount": 0
  }
})");

const Json kBoundClaim = Json::parse(R"({
  "apiVersion": "v1",
  "kind": "PersistentVolumeClaim",
  "metadata": {
    "name": "data-web-0", "namespace": "shop", "uid": "a3c1f7de-0c3b-4a8e-9d59-8f6b7d0e2c44",
    "resourceVersion": "48190", "creationTimestamp": "2026-11-20T09:14:03Z",
    "labels": {"app": "web"},
    "annotations": {
      "pv.kubernetes.io/bind-completed": "yes",
      "pv.kubernetes.io/bound-by-controller": "yes",
      "volume.beta.kubernetes.io/storage-provisioner": "rancher.io/local-path",
      "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path",
      "volume.kubernetes.io/selected-node": "node-1",
      "backup.example.com/policy": "nightly"
    },
    "finalizers": ["kubernetes.io/pvc-protection"],
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                         "uid": "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11", "controller": true,
                         "blockOwnerDeletion": true}],
    "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                       "apiVersion": "v1", "time": "2026-11-20T09:14:05Z"}]
  },
  "spec": {
    "accessModes": ["ReadWriteOnce"],
    "resources": {"requests": {"storage": "1Gi"}},
    "storageClassName": "standard",
    "volumeMode": "Filesystem",
    "volumeName": "pvc-a3c1f7de-0c3b-4a8e-9d59-8f6b7d0e2c44",
    "selector": {"matchLabels": {"tier": "fast"}},
    "dataSource": {"kind": "PersistentVolumeClaim", "name": "seed"}
  },
  "status": {
    "phase": "Bound",
    "accessModes": ["ReadWriteOnce"],
    "capacity": {"storage": "1Gi"},
    "conditions": [{"type": "Resizing", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-11-21T10:00:00Z"}]
  }
})");

TEST(K8sObjects, ReadsMetadataOfARealStatefulSet) {
  EXPECT_EQ(name(kStatefulSet).value(), "web");
  EXPECT_EQ(namespace_of(kStatefulSet).value(), "shop");
  EXPECT_EQ(uid(kStatefulSet).value(), "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11");
  EXPECT_EQ(resource_version(kStatefulSet).value(), "48213");
  EXPECT_EQ(generation(kStatefulSet).value(), 3);
  EXPECT_EQ(labels(kStatefulSet).value(), (StringMap{{"app", "web"}}));
  EXPECT_EQ(annotation(kStatefulSet, "stsresize.dev/state").value(), "Idle");
  EXPECT_EQ(annotation(kStatefulSet, "stsresize.dev/other").value(), std::nullopt);
  EXPECT_EQ(label(kStatefulSet, "app").value(), "web");
  EXPECT_FALSE(is_being_deleted(kStatefulSet).value());
  EXPECT_EQ(describe(kStatefulSet), "StatefulSet shop/web");
}

TEST(K8sObjects, AbsentMetadataFieldsReadAsKubernetesDefaults) {
  const Json fresh = {{"kind", "PersistentVolume"}, {"metadata", {{"name", "pv-1"}}}};
  EXPECT_EQ(namespace_of(fresh).value(), "");
  EXPECT_EQ(uid(fresh).value(), "");
  EXPECT_EQ(resource_version(fresh).value(), "");
  EXPECT_EQ(generation(fresh).value(), 0);
  EXPECT_TRUE(labels(fresh).value().empty());
  EXPECT_TRUE(annotations(fresh).value().empty());
  EXPECT_TRUE(owner_references(fresh).value().empty());
  EXPECT_TRUE(conditions(fresh).value().empty());
  EXPECT_EQ(describe(fresh), "PersistentVolume pv-1");
}

TEST(K8sObjects, MalformedMetadataIsAnErrorNamingObjectAndField) {
  Json sts = kStatefulSet;
  sts["metadata"]["generation"] = "3";
  EXPECT_EQ(generation(sts).error(), "StatefulSet shop/web: metadata.generation is not an integer");
  sts = kStatefulSet;
  sts["metadata"]["labels"]["app"] = 7;
  EXPECT_EQ(labels(sts).error(), "StatefulSet shop/web: metadata.labels.app is not a string");
  EXPECT_FALSE(label(sts, "app").has_value());
  sts = kStatefulSet;
  sts["metadata"]["annotations"] = Json::array();
  EXPECT_EQ(annotation(sts, "x").error(),
            "StatefulSet shop/web: metadata.annotations is not an object");
  sts = kStatefulSet;
  sts["metadata"].erase("name");
  EXPECT_EQ(name(sts).error(), "StatefulSet shop/<unnamed>: metadata.name is missing");
  EXPECT_EQ(name(Json::array()).error(), "object: object is not an object");
  Json not_object_metadata = {{"kind", "Pod"}, {"metadata", "x"}};
  EXPECT_EQ(uid(not_object_metadata).error(), "Pod: metadata is not an object");
}

TEST(K8sObjects, SetAnnotationKeepsEveryOtherField) {
  Json sts = kStatefulSet;
  ASSERT_TRUE(set_annotation(sts, "stsresize.dev/state", "ScalingDown").has_value());
  ASSERT_TRUE(set_annotation(sts, "stsresize.dev/operation", "op-1").has_value());
  ASSERT_TRUE(set_label(sts, "stsresize.dev/busy", "true").has_value());
  Json expected = kStatefulSet;
  expected["metadata"]["annotations"] = {{"stsresize.dev/state", "ScalingDown"},
                                         {"stsresize.dev/operation", "op-1"}};
  expected["metadata"]["labels"]["stsresize.dev/busy"] = "true";
  EXPECT_EQ(sts, expected);
  ASSERT_TRUE(remove_annotation(sts, "stsresize.dev/operation").has_value());
  ASSERT_TRUE(remove_annotation(sts, "never-there").has_value());
  expected["metadata"]["annotations"].erase("stsresize.dev/operation");
  EXPECT_EQ(sts, expected);
}

TEST(K8sObjects, SetAnnotationCreatesMissingMapsAndRefusesMalformedOnesUntouched) {
  Json bare = {{"kind", "StatefulSet"}, {"metadata", {{"name", "db"}}}};
  ASSERT_TRUE(set_annotation(bare, "k", "v").has_value());
  EXPECT_EQ(bare["metadata"]["annotations"], (Json{{"k", "v"}}));
  Json no_metadata = {{"kind", "StatefulSet"}};
  ASSERT_TRUE(set_label(no_metadata, "k", "v").has_value());
  EXPECT_EQ(no_metadata["metadata"]["labels"], (Json{{"k", "v"}}));

  Json broken = {{"kind", "StatefulSet"}, {"metadata", {{"name", "db"}, {"annotations", "x"}}}};
  const Json before = broken;
  EXPECT_FALSE(set_annotation(broken, "k", "v").has_value());
  EXPECT_FALSE(remove_annotation(broken, "k").has_value());
  EXPECT_EQ(broken, before);
}

TEST(K8sObjects, DetectsDeletionTimestamp) {
  Json pvc = kBoundClaim;
  pvc["metadata"]["deletionTimestamp"] = "2026-11-23T06:00:00Z";
  EXPECT_TRUE(is_being_deleted(pvc).value());
  EXPECT_FALSE(is_being_deleted(kBoundClaim).value());
}

TEST(K8sObjects, ReadsOwnerReferences) {
  const auto refs = owner_references(kBoundClaim);
  ASSERT_TRUE(refs.has_value()) << refs.error();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ(refs->at(0), (OwnerReference{"apps/v1", "StatefulSet", "web",
                                         "5f0c2b5e-9a8e-4a43-b3f7-0d3c1c0f6a11", true}));
  Json pvc = kBoundClaim;
  pvc["metadata"]["ownerReferences"][0].erase("uid");
  EXPECT_EQ(owner_references(pvc).error(),
            "PersistentVolumeClaim shop/data-web-0: metadata.ownerReferences[0].uid is missing");
}

TEST(K8sObjects, ReadsStatefulSetSpecAndStatus) {
  EXPECT_EQ(spec_replicas(kStatefulSet).value(), 3);
  const auto status = statefulset_status(kStatefulSet);
  ASSERT_TRUE(status.has_value()) << status.error();
  EXPECT_EQ(status->observed_generation, 3);
  EXPECT_EQ(status->replicas, 3);
  EXPECT_EQ(status->ready_replicas, 2);
  EXPECT_EQ(status->current_replicas, 3);
  EXPECT_EQ(status->updated_replicas, 3);
  EXPECT_EQ(status->available_replicas, 2);
  EXPECT_EQ(selector_match_labels(kStatefulSet).value(), (StringMap{{"app", "web"}}));
}

TEST(K8sObjects, StatefulSetScaledToZeroOmitsCountersThatReadAsZero) {
  // What the API server returns after scaling to 0: zero counters are omitted (omitempty).
  Json sts = kStatefulSet;
  sts["spec"]["replicas"] = 0;
  sts["status"] = {{"observedGeneration", 4}, {"replicas", 0}, {"availableReplicas", 0}};
  EXPECT_EQ(spec_replicas(sts).value(), 0);
  const auto status = statefulset_status(sts).value();
  EXPECT_EQ(status.ready_replicas, 0);
  EXPECT_EQ(status.current_replicas, 0);
  EXPECT_EQ(status.observed_generation, 4);
  sts.erase("status");
  EXPECT_EQ(statefulset_status(sts).value().observed_generation, 0);
}

TEST(K8sObjects, SpecReplicasDefaultsToOneAndRefusesNonsense) {
  Json sts = kStatefulSet;
  sts["spec"].erase("replicas");
  EXPECT_EQ(spec_replicas(sts).value(), 1);
  sts["spec"]["replicas"] = nullptr;
  EXPECT_EQ(spec_replicas(sts).value(), 1);
  sts["spec"]["replicas"] = -1;
  EXPECT_EQ(spec_replicas(sts).error(), "StatefulSet shop/web: spec.replicas is out of range");
  sts["spec"]["replicas"] = 2147483648LL;
  EXPECT_EQ(spec_replicas(sts).error(), "StatefulSet shop/web: spec.replicas is out of range");
  sts["spec"]["replicas"] = 1.5;
  EXPECT_EQ(spec_replicas(sts).error(), "StatefulSet shop/web: spec.replicas is not an integer");
  sts["spec"] = "oops";
  EXPECT_EQ(spec_replicas(sts).error(), "StatefulSet shop/web: spec is not an object");
}

TEST(K8sObjects, ReadsVolumeClaimTemplates) {
  const auto templates = claim_templates(kStatefulSet);
  ASSERT_TRUE(templates.has_value()) << templates.error();
  ASSERT_EQ(templates->size(), 2u);
  EXPECT_EQ(templates->at(0).name, "data");
  EXPECT_EQ(templates->at(0).storage, Quantity::from_bytes(1073741824));
  EXPECT_EQ(templates->at(0).storage_class, "standard");
  EXPECT_EQ(templates->at(0).access_modes, std::vector<std::string>{"ReadWriteOnce"});
  const auto logs = claim_template(kStatefulSet, "logs");
  ASSERT_TRUE(logs.has_value()) << logs.error();
  EXPECT_EQ(logs->storage, Quantity::from_bytes(500000000));
  EXPECT_EQ(logs->storage_class, std::nullopt);
  EXPECT_EQ(claim_template(kStatefulSet, "cache").error(),
            "StatefulSet shop/web: spec.volumeClaimTemplates has no template named \"cache\"");
}

TEST(K8sObjects, MalformedClaimTemplateStorageIsAnError) {
  Json sts = kStatefulSet;
  sts["spec"]["volumeClaimTemplates"][1]["spec"]["resources"]["requests"]["storage"] = "0.5";
  const auto templates = claim_templates(sts);
  ASSERT_FALSE(templates.has_value());
  EXPECT_NE(templates.error().find("spec.volumeClaimTemplates[1].spec.resources.requests.storage "
                                   "is invalid: quantity \"0.5\" is not a whole number of bytes"),
            std::string::npos)
      << templates.error();
  sts = kStatefulSet;
  sts["spec"]["volumeClaimTemplates"][0]["metadata"].erase("name");
  EXPECT_FALSE(claim_templates(sts).has_value());
}

TEST(K8sObjects, ReadsABoundClaim) {
  EXPECT_EQ(requested_storage(kBoundClaim).value(), Quantity::from_bytes(1073741824));
  EXPECT_EQ(capacity(kBoundClaim).value(), Quantity::from_bytes(1073741824));
  EXPECT_EQ(pvc_phase(kBoundClaim).value(), "Bound");
  EXPECT_EQ(storage_class_name(kBoundClaim).value(), "standard");
  EXPECT_EQ(volume_name(kBoundClaim).value(), "pvc-a3c1f7de-0c3b-4a8e-9d59-8f6b7d0e2c44");
  EXPECT_EQ(access_modes(kBoundClaim).value(), std::vector<std::string>{"ReadWriteOnce"});
  const auto resizing = condition(kBoundClaim, "Resizing");
  ASSERT_TRUE(resizing.has_value()) << resizing.error();
  EXPECT_EQ(resizing->value_or(Condition{}).status, "True");
  EXPECT_EQ(condition(kBoundClaim, "FileSystemResizePending").value(), std::nullopt);
}

TEST(K8sObjects, PendingClaimHasNoCapacityOrVolume) {
  const Json pending = Json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data-web-1", "namespace": "shop",
                 "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}},
    "status": {}
  })");
  EXPECT_EQ(capacity(pending).value(), std::nullopt);
  EXPECT_EQ(volume_name(pending).value(), "");
  EXPECT_EQ(pvc_phase(pending).value(), "Pending");
  EXPECT_EQ(storage_class_name(pending).value(), "legacy");  // the pre-1.6 annotation
  Json no_class = pending;
  no_class["metadata"].erase("annotations");
  EXPECT_EQ(storage_class_name(no_class).value(), std::nullopt);
  no_class["spec"]["storageClassName"] = "";
  EXPECT_EQ(storage_class_name(no_class).value(), "");
}

TEST(K8sObjects, ClaimWithoutARequestIsAnError) {
  Json pvc = kBoundClaim;
  pvc["spec"]["resources"].erase("requests");
  EXPECT_EQ(requested_storage(pvc).error(),
            "PersistentVolumeClaim shop/data-web-0: spec.resources.requests.storage is missing");
  pvc["spec"]["resources"]["requests"]["storage"] = 1024;
  EXPECT_EQ(requested_storage(pvc).error(),
            "PersistentVolumeClaim shop/data-web-0: spec.resources.requests.storage is not a "
            "string");
}

TEST(K8sObjects, StripForRecreateKeepsUserIntentAndDropsServerState) {
  const auto fresh = strip_for_recreate(kBoundClaim, Quantity::from_bytes(int64_t{20} << 30));
  ASSERT_TRUE(fresh.has_value()) << fresh.error();
  const Json expected = Json::parse(R"({
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {
      "name": "data-web-0", "namespace": "shop",
      "labels": {"app": "web"},
      "annotations": {"backup.example.com/policy": "nightly"}
    },
    "spec": {
      "accessModes": ["ReadWriteOnce"],
      "resources": {"requests": {"storage": "20Gi"}},
      "storageClassName": "standard",
      "volumeMode": "Filesystem"
    }
  })");
  EXPECT_EQ(*fresh, expected) << fresh->dump(2);
}

TEST(K8sObjects, StripForRecreateCanChangeTheStorageClassAndKeepsLimits) {
  Json pvc = kBoundClaim;
  pvc["spec"]["resources"]["limits"] = {{"storage", "50Gi"}};
  pvc["spec"]["volumeAttributesClassName"] = "gold";
  const auto fresh = strip_for_recreate(pvc, Quantity::from_bytes(int64_t{20} << 30), "fast");
  ASSERT_TRUE(fresh.has_value()) << fresh.error();
  EXPECT_EQ(fresh->at("spec").at("storageClassName"), "fast");
  EXPECT_EQ(fresh->at("spec").at("volumeAttributesClassName"), "gold");
  EXPECT_EQ(fresh->at("spec").at("resources"),
            (Json{{"limits", {{"storage", "50Gi"}}}, {"requests", {{"storage", "20Gi"}}}}));
}

TEST(K8sObjects, StripForRecreateRefusesALimitBelowTheNewRequest) {
  Json pvc = kBoundClaim;
  pvc["spec"]["resources"]["limits"] = {{"storage", "10Gi"}};
  const auto fresh = strip_for_recreate(pvc, Quantity::from_bytes(int64_t{20} << 30));
  ASSERT_FALSE(fresh.has_value());
  EXPECT_EQ(fresh.error(),
            "PersistentVolumeClaim shop/data-web-0: spec.resources.limits.storage (10Gi) is "
            "below the new request 20Gi");
}

TEST(K8sObjects, StripForRecreateLeavesTheClassUnsetWhenTheOldClaimHadNone) {
  Json pvc = kBoundClaim;
  pvc["spec"].erase("storageClassName");
  const auto fresh = strip_for_recreate(pvc, Quantity::from_bytes(4096));
  ASSERT_TRUE(fresh.has_value()) << fresh.error();
  EXPECT_FALSE(fresh->at("spec").contains("storageClassName"));
  EXPECT_EQ(fresh->at("spec").at("resources").at("requests").at("storage"), "4Ki");
}

TEST(K8sObjects, StripForRecreateRefusesMalformedClaims) {
  Json pvc = kBoundClaim;
  pvc["spec"]["accessModes"] = "ReadWriteOnce";
  EXPECT_FALSE(strip_for_recreate(pvc, Quantity::from_bytes(4096)).has_value());
  pvc = kBoundClaim;
  pvc.erase("spec");
  EXPECT_EQ(strip_for_recreate(pvc, Quantity::from_bytes(4096)).error(),
            "PersistentVolumeClaim shop/data-web-0: spec is missing");
  pvc = kBoundClaim;
  pvc["spec"]["resources"]["requests"] = "1Gi";
  EXPECT_FALSE(strip_for_recreate(pvc, Quantity::from_bytes(4096)).has_value());
}

TEST(K8sObjects, ReadsStorageClasses) {
  const Json expandable = Json::parse(R"({
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations":
                 {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true
  })");
  EXPECT_TRUE(allows_volume_expansion(expandable).value());
  EXPECT_EQ(provisioner(expandable).value(), "rancher.io/local-path");
  Json fixed = expandable;
  fixed.erase("allowVolumeExpansion");
  EXPECT_FALSE(allows_volume_expansion(fixed).value());
  fixed["allowVolumeExpansion"] = "true";
  EXPECT_EQ(allows_volume_expansion(fixed).error(),
            "StorageClass standard: allowVolumeExpansion is not a boolean");
  fixed.erase("provisioner");
  EXPECT_EQ(provisioner(fixed).error(), "StorageClass standard: provisioner is missing");
}

const Json kCompleteJob = Json::parse(R"({
  "apiVersion": "batch/v1", "kind": "Job",
  "metadata": {"name": "data-web-0-stsresize-backup", "namespace": "shop",
               "labels": {"stsresize.dev/operation": "op-1"}},
  "spec": {"backoffLimit": 2, "completions": 1, "parallelism": 1,
           "template": {"spec": {"restartPolicy": "Never", "containers": []}}},
  "status": {
    "startTime": "2026-11-23T06:00:00Z", "completionTime": "2026-11-23T06:01:10Z",
    "succeeded": 1, "ready": 0, "terminating": 0,
    "uncountedTerminatedPods": {},
    "conditions": [
      {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
       "message": "Reached expected number of succeeded pods",
       "lastProbeTime": "2026-11-23T06:01:10Z", "lastTransitionTime": "2026-11-23T06:01:10Z"},
      {"type": "Complete", "status": "True", "reason": "CompletionsReached",
       "message": "Reached expected number of succeeded pods",
       "lastProbeTime": "2026-11-23T06:01:10Z", "lastTransitionTime": "2026-11-23T06:01:10Z"}
    ]
  }
})");

TEST(K8sObjects, ReadsACompleteJob) {
  const auto status = job_status(kCompleteJob);
  ASSERT_TRUE(status.has_value()) << status.error();
  EXPECT_EQ(status->outcome, JobOutcome::Complete);
  EXPECT_EQ(status->succeeded, 1);
  EXPECT_EQ(status->failed, 0);
  EXPECT_EQ(status->active, 0);
  EXPECT_EQ(status->reason, "CompletionsReached");
  EXPECT_EQ(backoff_limit(kCompleteJob).value(), 2);
}

TEST(K8sObjects, ReadsAFailedJobWithItsReason) {
  Json job = kCompleteJob;
  job["status"] = Json::parse(R"({
    "failed": 3, "startTime": "2026-11-23T06:00:00Z",
    "conditions": [
      {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
       "message": "Job has reached the specified backoff limit"},
      {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
       "message": "Job has reached the specified backoff limit"}
    ]
  })");
  const auto status = job_status(job);
  ASSERT_TRUE(status.has_value()) << status.error();
  EXPECT_EQ(status->outcome, JobOutcome::Failed);
  EXPECT_EQ(status->failed, 3);
  EXPECT_EQ(status->reason, "BackoffLimitExceeded");
  EXPECT_EQ(status->message, "Job has reached the specified backoff limit");
}

TEST(K8sObjects, RunningJobAndDefaultBackoffLimit) {
  Json job = kCompleteJob;
  job["status"] = {{"active", 1}, {"startTime", "2026-11-23T06:00:00Z"}};
  job["spec"].erase("backoffLimit");
  EXPECT_EQ(job_status(job).value().outcome, JobOutcome::Running);
  EXPECT_EQ(job_status(job).value().active, 1);
  EXPECT_EQ(backoff_limit(job).value(), 6);
  job["status"]["conditions"] = Json::array({{{"type", "Complete"}, {"status", "False"}}});
  EXPECT_EQ(job_status(job).value().outcome, JobOutcome::Running);
  job["status"]["conditions"] = Json::array({{{"status", "True"}}});
  EXPECT_EQ(job_status(job).error(),
            "Job shop/data-web-0-stsresize-backup: status.conditions[0].type is missing");
}

const Json kTerminatedPod = Json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "data-web-0-stsresize-backup-x7k2p", "namespace": "shop"},
  "spec": {"restartPolicy": "Never", "containers": [{"name": "copy", "image": "rsync"}]},
  "status": {
    "phase": "Succeeded",
    "conditions": [
      {"type": "Initialized", "status": "True", "reason": "PodCompleted"},
      {"type": "Ready", "status": "False", "reason": "PodCompleted"}
    ],
    "containerStatuses": [{
      "name": "copy", "ready": false, "restartCount": 0, "image": "rsync", "imageID": "",
      "containerID": "containerd://abc", "started": false,
      "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                               "message": "{\"v\":1}", "startedAt": "2026-11-23T06:00:01Z",
                               "finishedAt": "2026-11-23T06:01:09Z",
                               "containerID": "containerd://abc"}},
      "lastState": {}
    }]
  }
})");

TEST(K8sObjects, ReadsATerminatedContainer) {
  EXPECT_EQ(pod_phase(kTerminatedPod).value(), "Succeeded");
  EXPECT_FALSE(pod_ready(kTerminatedPod).value());
  const auto copy = terminated_container(kTerminatedPod, "copy");
  ASSERT_TRUE(copy.has_value()) << copy.error();
  ASSERT_TRUE(copy->has_value());
  EXPECT_EQ((*copy)->exit_code, 0);
  EXPECT_EQ((*copy)->reason, "Completed");
  EXPECT_EQ((*copy)->message, "{\"v\":1}");
  EXPECT_EQ(terminated_container(kTerminatedPod, "sidecar").value(), std::nullopt);
}

TEST(K8sObjects, RunningPodHasNoTerminatedContainerAndMayBeReady) {
  Json pod = kTerminatedPod;
  pod["status"]["phase"] = "Running";
  pod["status"]["conditions"][1] = {{"type", "Ready"}, {"status", "True"}};
  pod["status"]["containerStatuses"][0]["state"] =
      Json{{"running", {{"startedAt", "2026-11-23T06:00:01Z"}}}};
  EXPECT_TRUE(pod_ready(pod).value());
  EXPECT_EQ(terminated_container(pod, "copy").value(), std::nullopt);
  pod.erase("status");
  EXPECT_EQ(pod_phase(pod).value(), "Pending");
  EXPECT_FALSE(pod_ready(pod).value());
  EXPECT_EQ(terminated_container(pod, "copy").value(), std::nullopt);
}

TEST(K8sObjects, MalformedTerminationIsAnError) {
  Json pod = kTerminatedPod;
  pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = "0";
  EXPECT_EQ(terminated_container(pod, "copy").error(),
            "Pod shop/data-web-0-stsresize-backup-x7k2p: "
            "status.containerStatuses[0].state.terminated.exitCode is not an integer");
  pod["status"]["containerStatuses"][0]["state"]["terminated"].erase("exitCode");
  EXPECT_FALSE(terminated_container(pod, "copy").has_value());
  pod["status"]["containerStatuses"] = Json::object();
  EXPECT_FALSE(terminated_container(pod, "copy").has_value());
}

}  // namespace
}  // namespace stsresize::k8s
