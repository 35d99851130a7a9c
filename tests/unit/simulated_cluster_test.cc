// The simulated controllers around FakeKubernetes: StatefulSets, volumes, Jobs and the copy
// Job's content and summary.
#include "adapters/fake/simulated_cluster.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "engine/copy_job.h"
#include "tests/support/kube_assertions.h"

namespace stsresize {
namespace {

Json storage_class(const std::string& name, const std::string& reclaim = "Delete") {
  return Json{{"metadata", {{"name", name}}},
              {"provisioner", "fake.csi"},
              {"reclaimPolicy", reclaim},
              {"allowVolumeExpansion", true}};
}

Json statefulset(const std::string& name, int replicas,
                 const std::string& policy = "OrderedReady") {
  const Json labels = {{"app", name}};
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec",
               {{"replicas", replicas},
                {"serviceName", name},
                {"podManagementPolicy", policy},
                {"selector", {{"matchLabels", labels}}},
                {"template",
                 {{"metadata", {{"labels", labels}}},
                  {"spec", {{"containers", {{{"name", "db"}, {"image", "postgres"}}}}}}}},
                {"volumeClaimTemplates",
                 {{{"metadata", {{"name", "data"}, {"labels", {{"tier", "storage"}}}}},
                   {"spec",
                    {{"accessModes", {"ReadWriteOnce"}},
                     {"storageClassName", "standard"},
                     {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}}}}}};
}

Json claim(const std::string& name, const std::string& size,
           const std::string& storage_class = "standard") {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", storage_class},
                {"resources", {{"requests", {{"storage", size}}}}}}}};
}

Json job(const std::string& name, const std::string& source, const std::string& destination,
         int backoff_limit = 2) {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec",
               {{"backoffLimit", backoff_limit},
                {"template",
                 {{"spec",
                   {{"restartPolicy", "Never"},
                    {"containers", {{{"name", "copy"}, {"image", "rsync"}}}},
                    {"volumes",
                     {{{"name", "source"}, {"persistentVolumeClaim", {{"claimName", source}}}},
                      {{"name", "destination"},
                       {"persistentVolumeClaim", {{"claimName", destination}}}}}}}}}}}}};
}

class SimulatedClusterTest : public ::testing::Test {
 protected:
  ManualClock clock;
  FakeKubernetes kube{clock};
  SimulatedCluster cluster{kube};

  void SetUp() override { ASSERT_OK(kube.create(Kind::StorageClass, storage_class("standard"))); }

  std::optional<Json> pod(const std::string& name) { return kube.get_raw({Kind::Pod, "ns", name}); }
  std::optional<Json> pvc(const std::string& name) {
    return kube.get_raw({Kind::PersistentVolumeClaim, "ns", name});
  }
  std::optional<Json> sts(const std::string& name) {
    return kube.get_raw({Kind::StatefulSet, "ns", name});
  }
  bool ready(const std::string& name) {
    auto p = pod(name);
    return p && p->at("status")["phase"] == "Running";
  }
  void scale(const std::string& name, int replicas) {
    ASSERT_OK(kube.patch({Kind::StatefulSet, "ns", name}, PatchType::Merge,
                         Json{{"spec", {{"replicas", replicas}}}}));
  }
  std::vector<Json> job_pods(const std::string& job_name) {
    std::vector<Json> pods;
    for (Json& p : kube.list_raw(Kind::Pod, "ns")) {
      if (p["metadata"]["labels"].value("job-name", "") == job_name) pods.push_back(p);
    }
    return pods;
  }
  bool has_condition(const Json& object, const std::string& type) {
    for (const Json& c : object["status"].value("conditions", Json::array())) {
      if (c["type"] == type && c["status"] == "True") return true;
    }
    return false;
  }
  // Two bound claims, the source holding `files`.
  void prepare_copy(const VolumeFiles& files) {
    ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("src", "1Gi")));
    ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("dst", "2Gi")));
    cluster.tick();
    for (const auto& [path, bytes] : files) {
      ASSERT_TRUE(cluster.write_file({Kind::PersistentVolumeClaim, "ns", "src"}, path, bytes));
    }
    ASSERT_TRUE(cluster.write_file({Kind::PersistentVolumeClaim, "ns", "dst"}, "stale", "old"));
  }
};

TEST_F(SimulatedClusterTest, OrderedReadyCreatesOnePodPerTickOnlyAfterThePreviousIsReady) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 3)));
  cluster.tick();
  ASSERT_TRUE(pod("web-0"));
  EXPECT_EQ(pod("web-0")->at("status")["phase"], "Pending");
  EXPECT_FALSE(pod("web-1"));
  cluster.tick();
  EXPECT_TRUE(ready("web-0"));
  ASSERT_TRUE(pod("web-1"));
  EXPECT_FALSE(pod("web-2"));
  cluster.tick(2);
  EXPECT_TRUE(ready("web-2"));
  const Json status = sts("web")->at("status");
  EXPECT_EQ(status["replicas"], 3);
  EXPECT_EQ(status["readyReplicas"], 3);
  EXPECT_EQ(status["availableReplicas"], 3);
  EXPECT_EQ(status["updatedReplicas"], 3);
  EXPECT_EQ(status["observedGeneration"], 1);
  EXPECT_EQ(status["currentRevision"], status["updateRevision"]);
}

TEST_F(SimulatedClusterTest, ParallelCreatesEveryPodInOneTick) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 3, "Parallel")));
  cluster.tick();
  EXPECT_TRUE(pod("web-0") && pod("web-1") && pod("web-2"));
  cluster.tick();
  EXPECT_TRUE(ready("web-0") && ready("web-1") && ready("web-2"));
}

TEST_F(SimulatedClusterTest, PodsCarryIdentityLabelsOwnerAndTheirClaims) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 1)));
  cluster.tick();
  auto p = pod("web-0");
  ASSERT_TRUE(p);
  const Json labels = p->at("metadata")["labels"];
  EXPECT_EQ(labels["app"], "web");
  EXPECT_EQ(labels["statefulset.kubernetes.io/pod-name"], "web-0");
  EXPECT_EQ(labels["apps.kubernetes.io/pod-index"], "0");
  const Json owner = p->at("metadata")["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "StatefulSet");
  EXPECT_EQ(owner["uid"], sts("web")->at("metadata")["uid"]);
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(p->at("spec")["volumes"][0]["persistentVolumeClaim"]["claimName"], "data-web-0");
}

TEST_F(SimulatedClusterTest, ClaimsComeFromTemplatesBeforeTheirPodAndExistingOnesAreKept) {
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("data-web-1", "5Gi")));
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 2, "Parallel")));
  cluster.tick();
  auto created = pvc("data-web-0");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->at("metadata")["labels"], (Json{{"app", "web"}, {"tier", "storage"}}));
  EXPECT_EQ(created->at("spec")["resources"]["requests"]["storage"], "1Gi");
  EXPECT_EQ(pvc("data-web-1")->at("spec")["resources"]["requests"]["storage"], "5Gi");
  const auto history = kube.history();
  auto position = [&](const ObjectRef& ref) {
    return std::ranges::find_if(
               history, [&](const Mutation& m) { return m.ref == ref && m.verb == Verb::Create; }) -
           history.begin();
  };
  EXPECT_LT(position({Kind::PersistentVolumeClaim, "ns", "data-web-0"}),
            position({Kind::Pod, "ns", "web-0"}));
}

TEST_F(SimulatedClusterTest, ScaleDownRemovesTheHighestOrdinalFirstOnePerTickAndKeepsClaims) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 3)));
  cluster.tick(4);
  scale("web", 1);
  cluster.tick();
  EXPECT_FALSE(pod("web-2"));
  EXPECT_TRUE(pod("web-1"));
  cluster.tick();
  EXPECT_FALSE(pod("web-1"));
  EXPECT_TRUE(pod("web-0"));
  EXPECT_TRUE(pvc("data-web-1") && pvc("data-web-2"));
  cluster.tick();
  EXPECT_EQ(sts("web")->at("status")["replicas"], 1);
  EXPECT_EQ(sts("web")->at("status")["observedGeneration"], 2);
}

TEST_F(SimulatedClusterTest, PodWaitsPendingUntilItsClaimIsBound) {
  cluster.fail_provisioning("standard");
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 1)));
  cluster.tick(3);
  EXPECT_EQ(pvc("data-web-0")->at("status")["phase"], "Pending");
  EXPECT_EQ(pod("web-0")->at("status")["phase"], "Pending");
  cluster.fail_provisioning("standard", false);
  cluster.tick();
  EXPECT_EQ(pvc("data-web-0")->at("status")["phase"], "Bound");
  EXPECT_TRUE(ready("web-0"));
}

TEST_F(SimulatedClusterTest, ClaimOfAMissingClassStaysPending) {
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("orphan", "1Gi", "nonexistent")));
  cluster.tick(2);
  EXPECT_EQ(pvc("orphan")->at("status")["phase"], "Pending");
  EXPECT_TRUE(kube.list_raw(Kind::PersistentVolume).empty());
}

TEST_F(SimulatedClusterTest, BindingProvisionsAVolumeOfTheRequestedSize) {
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("c", "3Gi")));
  cluster.tick();
  auto bound = pvc("c");
  const std::string volume_name = "pvc-" + bound->at("metadata")["uid"].get<std::string>();
  EXPECT_EQ(bound->at("spec")["volumeName"], volume_name);
  EXPECT_EQ(bound->at("status")["capacity"]["storage"], "3Gi");
  auto volume = kube.get_raw({Kind::PersistentVolume, "", volume_name});
  ASSERT_TRUE(volume);
  EXPECT_EQ(volume->at("status")["phase"], "Bound");
  EXPECT_EQ(volume->at("spec")["claimRef"]["name"], "c");
  EXPECT_EQ(volume->at("spec")["persistentVolumeReclaimPolicy"], "Delete");
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "c"}), VolumeFiles{});
}

TEST_F(SimulatedClusterTest, ClaimInUseIsKeptUntilItsPodIsGoneThenItsVolumeIsReclaimed) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 1)));
  cluster.tick(2);
  const ObjectRef claim_ref{Kind::PersistentVolumeClaim, "ns", "data-web-0"};
  ASSERT_TRUE(cluster.write_file(claim_ref, "db/table", "rows"));
  const std::string volume_name = pvc("data-web-0")->at("spec")["volumeName"];
  ASSERT_OK(kube.remove(claim_ref));
  cluster.tick(2);
  ASSERT_TRUE(pvc("data-web-0")) << "pvc-protection holds it while web-0 runs";
  EXPECT_TRUE(pvc("data-web-0")->at("metadata").contains("deletionTimestamp"));
  EXPECT_EQ(cluster.persistent_volume_files(volume_name), (VolumeFiles{{"db/table", "rows"}}));

  scale("web", 0);
  cluster.tick();  // the StatefulSet controller deletes web-0
  EXPECT_FALSE(pod("web-0"));
  cluster.tick();  // pvc-protection lets go; the Delete policy removes the volume
  EXPECT_FALSE(pvc("data-web-0"));
  EXPECT_FALSE(kube.get_raw({Kind::PersistentVolume, "", volume_name}));
  EXPECT_FALSE(cluster.persistent_volume_files(volume_name));
}

TEST_F(SimulatedClusterTest, RetainedVolumeKeepsItsContentAndCanBeBoundAgain) {
  ASSERT_OK(kube.create(Kind::StorageClass, storage_class("keep", "Retain")));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("old", "1Gi", "keep")));
  cluster.tick();
  ASSERT_TRUE(cluster.write_file({Kind::PersistentVolumeClaim, "ns", "old"}, "f", "data"));
  const std::string volume_name = pvc("old")->at("spec")["volumeName"];
  ASSERT_OK(kube.remove({Kind::PersistentVolumeClaim, "ns", "old"}));
  cluster.tick();
  auto released = kube.get_raw({Kind::PersistentVolume, "", volume_name});
  ASSERT_TRUE(released);
  EXPECT_EQ(released->at("status")["phase"], "Released");

  // An administrator frees the volume for a new claim that names it.
  ASSERT_TRUE(kube.mutate_raw({Kind::PersistentVolume, "", volume_name},
                              [](Json& pv) { pv["spec"].erase("claimRef"); }));
  Json again = claim("new", "1Gi", "keep");
  again["spec"]["volumeName"] = volume_name;
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, again));
  cluster.tick();
  EXPECT_EQ(pvc("new")->at("status")["phase"], "Bound");
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "new"}),
            (VolumeFiles{{"f", "data"}}));
}

TEST_F(SimulatedClusterTest, ExpansionGrowsCapacityAndKeepsContent) {
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("c", "1Gi")));
  cluster.tick();
  ASSERT_TRUE(cluster.write_file({Kind::PersistentVolumeClaim, "ns", "c"}, "f", "data"));
  ASSERT_OK(kube.patch({Kind::PersistentVolumeClaim, "ns", "c"}, PatchType::Merge,
                       Json{{"spec", {{"resources", {{"requests", {{"storage", "4Gi"}}}}}}}}));
  EXPECT_EQ(pvc("c")->at("status")["capacity"]["storage"], "1Gi");
  cluster.tick();
  EXPECT_EQ(pvc("c")->at("status")["capacity"]["storage"], "4Gi");
  auto volume = kube.get_raw({Kind::PersistentVolume, "", pvc("c")->at("spec")["volumeName"]});
  EXPECT_EQ(volume->at("spec")["capacity"]["storage"], "4Gi");
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "c"}),
            (VolumeFiles{{"f", "data"}}));
}

TEST_F(SimulatedClusterTest, GarbageCollectorRemovesPodsOfADeletedStatefulSet) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 2, "Parallel")));
  cluster.tick(2);
  ASSERT_OK(kube.remove({Kind::StatefulSet, "ns", "web"}));
  EXPECT_TRUE(pod("web-0")) << "dependents outlive the owner until the collector runs";
  cluster.tick();
  EXPECT_FALSE(pod("web-0"));
  EXPECT_FALSE(pod("web-1"));
  EXPECT_TRUE(pvc("data-web-0")) << "claims are not owned under the Retain policy";
}

TEST_F(SimulatedClusterTest, SummaryFollowsTheSha256sumFormatOfTheCopyScript) {
  // Pinned with: find . -type f -print0 | xargs -0 sha256sum | LC_ALL=C sort | sha256sum
  const TreeSummary tree = summarise_tree({{"a", "hello\n"}, {"d/b", "xyz"}});
  EXPECT_EQ(tree.files, 2);
  EXPECT_EQ(tree.bytes, 9);
  EXPECT_EQ(tree.digest, "099105d42dfd3106ba9aa58053431e6a894a773d2d46667d92f6ca9ac4792ee5");
  EXPECT_EQ(summarise_tree({}).digest,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(SimulatedClusterTest, CopyJobMakesTheDestinationEqualAndReportsMatchingSummaries) {
  const VolumeFiles files{{"pg/base/1", std::string(1000, 'x')}, {"pg/wal/2", "log"}};
  prepare_copy(files);
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst")));
  cluster.tick();  // the Job controller creates the pod
  ASSERT_EQ(job_pods("backup").size(), 1u);
  EXPECT_TRUE(job_pods("backup")[0]["metadata"]["name"].get<std::string>().starts_with("backup-"));
  cluster.tick();  // the kubelet runs it; the Job controller sees it succeed
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "dst"}), files);

  const Json finished = job_pods("backup")[0];
  EXPECT_EQ(finished["status"]["phase"], "Succeeded");
  const Json terminated = finished["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 0);
  auto summary = parse_copy_summary(terminated["message"]);
  ASSERT_TRUE(summary) << summary.error();
  EXPECT_TRUE(summary->matches());
  EXPECT_EQ(summary->source, summarise_tree(files));

  auto done = kube.get_raw({Kind::Job, "ns", "backup"});
  EXPECT_TRUE(has_condition(*done, "SuccessCriteriaMet"));
  EXPECT_TRUE(has_condition(*done, "Complete"));
  EXPECT_EQ(done->at("status")["succeeded"], 1);
  EXPECT_TRUE(done->at("status").contains("completionTime"));
}

TEST_F(SimulatedClusterTest, CorruptedCopyReportsDifferentSummariesAndFails) {
  prepare_copy({{"f", "payload"}});
  cluster.corrupt_next_copy();
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst", 0)));
  cluster.tick(2);
  const Json pod_status = job_pods("backup")[0]["status"];
  EXPECT_EQ(pod_status["phase"], "Failed");
  const Json terminated = pod_status["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 3);
  auto summary = parse_copy_summary(terminated["message"]);
  ASSERT_TRUE(summary) << summary.error();
  EXPECT_FALSE(summary->matches());
  EXPECT_NE(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "dst"}),
            cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "src"}));
}

TEST_F(SimulatedClusterTest, FailingPodsAreRetriedUntilBackoffLimitThenTheJobFails) {
  prepare_copy({{"f", "payload"}});
  cluster.fail_next_job_pods(10, 23);
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst", 1)));
  cluster.tick(6);
  const auto pods = job_pods("backup");
  ASSERT_EQ(pods.size(), 2u) << "backoffLimit 1: the first try and one retry";
  for (const Json& p : pods) {
    EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 23);
  }
  auto failed = kube.get_raw({Kind::Job, "ns", "backup"});
  EXPECT_TRUE(has_condition(*failed, "Failed"));
  EXPECT_EQ(failed->at("status")["failed"], 2);
  for (const Json& c : failed->at("status")["conditions"]) {
    EXPECT_EQ(c["reason"], "BackoffLimitExceeded");
  }
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "dst"}),
            (VolumeFiles{{"stale", "old"}}))
      << "a failed pod copied nothing";
}

TEST_F(SimulatedClusterTest, JobSucceedsOnARetryAfterAFailure) {
  prepare_copy({{"f", "payload"}});
  cluster.fail_next_job_pods(1);
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst", 2)));
  cluster.tick(4);
  auto done = kube.get_raw({Kind::Job, "ns", "backup"});
  EXPECT_TRUE(has_condition(*done, "Complete"));
  EXPECT_EQ(done->at("status")["failed"], 1);
  EXPECT_EQ(done->at("status")["succeeded"], 1);
}

TEST_F(SimulatedClusterTest, JobPodWaitsForItsClaimsToBind) {
  cluster.fail_provisioning("standard");
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("src", "1Gi")));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("dst", "1Gi")));
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst")));
  cluster.tick(3);
  ASSERT_EQ(job_pods("backup").size(), 1u);
  EXPECT_EQ(job_pods("backup")[0]["status"]["phase"], "Pending");
  EXPECT_EQ(kube.get_raw({Kind::Job, "ns", "backup"})->at("status")["active"], 1);
}

TEST_F(SimulatedClusterTest, CustomRunnerSeesThePodAndVolumes) {
  prepare_copy({{"f", "payload"}});
  std::string seen_pod;
  cluster.set_job_runner([&](const Json& p, std::map<std::string, VolumeFiles*>& volumes) {
    seen_pod = p["metadata"]["name"];
    (*volumes.at("destination"))["marker"] = "written by runner";
    return JobRun{0, "custom"};
  });
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst")));
  cluster.tick(2);
  EXPECT_TRUE(seen_pod.starts_with("backup-"));
  EXPECT_EQ(cluster.volume_files({Kind::PersistentVolumeClaim, "ns", "dst"})->at("marker"),
            "written by runner");
}

TEST_F(SimulatedClusterTest, DeletingAJobInTheBackgroundRemovesItsPodsOnTheNextTick) {
  prepare_copy({{"f", "payload"}});
  ASSERT_OK(kube.create(Kind::Job, job("backup", "src", "dst")));
  cluster.tick(2);
  ASSERT_EQ(job_pods("backup").size(), 1u);
  DeleteOptions background;
  background.propagation = Propagation::Background;
  ASSERT_OK(kube.remove({Kind::Job, "ns", "backup"}, background));
  cluster.tick();
  EXPECT_TRUE(job_pods("backup").empty());
}

TEST_F(SimulatedClusterTest, ActiveDeadlineFailsAJobWhosePodCannotStart) {
  cluster.fail_provisioning("standard");
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("src", "1Gi")));
  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("dst", "1Gi")));
  Json deadline_job = job("backup", "src", "dst");
  deadline_job["spec"]["activeDeadlineSeconds"] = 60;
  ASSERT_OK(kube.create(Kind::Job, deadline_job));
  cluster.tick();
  clock.advance(std::chrono::seconds{61});
  cluster.tick();
  auto failed = kube.get_raw({Kind::Job, "ns", "backup"});
  EXPECT_TRUE(has_condition(*failed, "Failed"));
  EXPECT_EQ(failed->at("status")["conditions"][0]["reason"], "DeadlineExceeded");
  EXPECT_TRUE(job_pods("backup").empty());
}

TEST_F(SimulatedClusterTest, TemplateChangeRollsPodsFromTheHighestOrdinal) {
  ASSERT_OK(kube.create(Kind::StatefulSet, statefulset("web", 2)));
  cluster.tick(3);
  const std::string old_revision = sts("web")->at("status")["updateRevision"];
  ASSERT_OK(
      kube.patch({Kind::StatefulSet, "ns", "web"}, PatchType::Merge,
                 Json{{"spec", {{"template", {{"metadata", {{"annotations", {{"v", "2"}}}}}}}}}}));
  cluster.tick();
  EXPECT_FALSE(pod("web-1")) << "web-1 replaced first";
  EXPECT_TRUE(pod("web-0"));
  cluster.tick(5);
  const Json status = sts("web")->at("status");
  EXPECT_NE(status["updateRevision"], old_revision);
  EXPECT_EQ(status["updatedReplicas"], 2);
  EXPECT_EQ(status["currentRevision"], status["updateRevision"]);
  EXPECT_EQ(pod("web-0")->at("metadata")["annotations"]["v"], "2");
}

TEST_F(SimulatedClusterTest, ControllerWritesAreSystemActionsOutsideTheCrashBudget) {
  const int client_writes = kube.mutations();  // the fixture's StorageClass
  const std::size_t earlier = kube.history().size();
  kube.set_mutation_budget(0);
  ASSERT_OK(kube.system().create(Kind::StatefulSet, statefulset("web", 1)));
  cluster.tick(2);
  EXPECT_TRUE(ready("web-0"));
  EXPECT_EQ(kube.mutations(), client_writes);
  const auto history = kube.history();
  ASSERT_GT(history.size(), earlier);
  for (std::size_t i = earlier; i < history.size(); ++i) {
    EXPECT_TRUE(history[i].actor == Actor::System) << to_string(history[i].ref);
  }
}

}  // namespace
}  // namespace stsresize
