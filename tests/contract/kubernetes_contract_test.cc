// The behaviour of kube-apiserver that stsresize relies on; see kubernetes_contract.h for how
// an implementation is added. Every expectation here was checked against the v1.37 sources.
#include <chrono>
#include <set>
#include <thread>

#include "tests/contract/kubernetes_contract.h"
#include "tests/support/kube_assertions.h"

namespace stsresize::contract {
namespace {

using test_support::rv;

constexpr const char* kMissingClass = "stsresize-contract-no-such-class";

Json config_map(const std::string& ns, const std::string& name, Json labels = Json::object()) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
              {"data", {{"key", "value"}}}};
}

Json claim(const std::string& ns, const std::string& name, const std::string& size) {
  return Json{{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", kMissingClass},
                {"resources", {{"requests", {{"storage", size}}}}}}}};
}

Json statefulset(const std::string& ns, const std::string& name) {
  const Json labels = {{"app", name}};
  return Json{
      {"apiVersion", "apps/v1"},
      {"kind", "StatefulSet"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"annotations", {{"team", "storage"}}}}},
      {"spec",
       {{"replicas", 0},
        {"serviceName", name},
        {"selector", {{"matchLabels", labels}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"terminationGracePeriodSeconds", 17},
            {"containers",
             {{{"name", "main"},
               {"image", "registry.k8s.io/pause:3.10"},
               {"volumeMounts", {{{"name", "data"}, {"mountPath", "/data"}}}}}}}}}}},
        {"volumeClaimTemplates",
         {{{"metadata", {{"name", "data"}}},
           {"spec",
            {{"accessModes", {"ReadWriteOnce"}},
             {"storageClassName", kMissingClass},
             {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}}}}}};
}

// (Designated initialisers of these structs trip -Wmissing-field-initializers on g++ 12.)
ListOptions by_labels(std::string selector, std::int64_t limit = 0) {
  ListOptions options;
  options.label_selector = std::move(selector);
  options.limit = limit;
  return options;
}
ListOptions by_fields(std::string selector) {
  ListOptions options;
  options.field_selector = std::move(selector);
  return options;
}
DeleteOptions preconditions(std::optional<std::string> uid, std::optional<std::string> version) {
  DeleteOptions options;
  options.uid = std::move(uid);
  options.resource_version = std::move(version);
  return options;
}

// Writes racing the cluster's own controllers (the StatefulSet controller updates status)
// are retried from a fresh read, as any client must.
KubeResult<Json> modify(Kubernetes& kube, const ObjectRef& ref, bool status,
                        const std::function<void(Json&)>& change) {
  for (int attempt = 0;; ++attempt) {
    auto live = kube.get(ref);
    if (!live) return live;
    change(*live);
    auto written = status ? kube.update_status(ref.kind, *live) : kube.update(ref.kind, *live);
    if (written || written.error().code != KubeErrorCode::Conflict || attempt == 5) return written;
  }
}

// The real garbage collector works asynchronously: poll. An implementation that is already
// there (the fake) passes on the first look, without sleeping.
bool eventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return true;
}

Json suspended_job(const std::string& ns, const std::string& name) {
  Json job{{"apiVersion", "batch/v1"},
           {"kind", "Job"},
           {"metadata", {{"name", name}, {"namespace", ns}}}};
  job["spec"]["suspend"] = true;  // no pod is ever created
  job["spec"]["template"]["spec"] = {
      {"restartPolicy", "Never"},
      {"containers", Json::array({{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}})}};
  return job;
}

TEST_P(KubernetesContract, CreateFillsSystemMetadataAndGetReturnsTheSameObject) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "round-trip"));
  ASSERT_OK(created);
  EXPECT_FALSE(created->at("metadata").value("uid", "").empty());
  EXPECT_FALSE(created->at("metadata").value("creationTimestamp", "").empty());
  EXPECT_FALSE(rv(*created).empty());
  auto read = kube().get({Kind::ConfigMap, ns(), "round-trip"});
  ASSERT_OK(read);
  EXPECT_EQ(read->at("metadata")["uid"], created->at("metadata")["uid"]);
  EXPECT_EQ(read->at("data"), (Json{{"key", "value"}}));
}

TEST_P(KubernetesContract, ReadModifyWriteKeepsFieldsTheWriterDidNotTouch) {
  ASSERT_OK(kube().create(Kind::StatefulSet, statefulset(ns(), "keep")));
  auto updated = modify(kube(), {Kind::StatefulSet, ns(), "keep"}, false,
                        [](Json& sts) { sts["metadata"]["labels"]["touched"] = "yes"; });
  ASSERT_OK(updated);
  auto read = kube().get({Kind::StatefulSet, ns(), "keep"});
  ASSERT_OK(read);
  EXPECT_EQ(read->at("metadata")["labels"]["touched"], "yes");
  EXPECT_EQ(read->at("metadata")["annotations"]["team"], "storage");
  EXPECT_EQ(read->at("spec")["template"]["spec"]["terminationGracePeriodSeconds"], 17);
  EXPECT_EQ(read->at("spec")["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
            "1Gi");
}

TEST_P(KubernetesContract, CreatingAnExistingObjectIsAlreadyExists) {
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "twice")));
  auto again = kube().create(Kind::ConfigMap, config_map(ns(), "twice"));
  EXPECT_CODE(again, KubeErrorCode::AlreadyExists);
}

TEST_P(KubernetesContract, CreatingWithAResourceVersionIsRefused) {
  Json body = config_map(ns(), "with-rv");
  body["metadata"]["resourceVersion"] = "12345";
  // etcd3's ErrResourceVersionSetOnCreate surfaces as a 500, not as a 4xx.
  EXPECT_CODE(kube().create(Kind::ConfigMap, body), KubeErrorCode::ServerError);
  EXPECT_CODE(kube().get({Kind::ConfigMap, ns(), "with-rv"}), KubeErrorCode::NotFound);
}

TEST_P(KubernetesContract, StaleUpdateIsConflictAndLeavesTheObjectUnchanged) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "stale"));
  ASSERT_OK(created);
  Json first = *created;
  first["data"]["key"] = "first";
  ASSERT_OK(kube().update(Kind::ConfigMap, first));
  Json second = *created;  // still carries the original resourceVersion
  second["data"]["key"] = "second";
  EXPECT_CODE(kube().update(Kind::ConfigMap, second), KubeErrorCode::Conflict);
  auto read = kube().get({Kind::ConfigMap, ns(), "stale"});
  ASSERT_OK(read);
  EXPECT_EQ(read->at("data")["key"], "first");
}

TEST_P(KubernetesContract, UpdateWithoutResourceVersionIsUnconditional) {
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "unconditional")));
  Json body = config_map(ns(), "unconditional");
  body["data"]["key"] = "overwritten";
  ASSERT_OK(kube().update(Kind::ConfigMap, body));
  auto read = kube().get({Kind::ConfigMap, ns(), "unconditional"});
  ASSERT_OK(read);
  EXPECT_EQ(read->at("data")["key"], "overwritten");
}

TEST_P(KubernetesContract, ResourceVersionChangesOnEveryWriteAndNeverOnReads) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "versions"));
  ASSERT_OK(created);
  const ObjectRef ref{Kind::ConfigMap, ns(), "versions"};
  auto read1 = kube().get(ref);
  auto read2 = kube().get(ref);
  ASSERT_OK(read1);
  ASSERT_OK(read2);
  EXPECT_EQ(rv(*read1), rv(*created));
  EXPECT_EQ(rv(*read2), rv(*created));

  std::set<std::string> seen{rv(*created)};
  Json object = *created;
  for (int i = 0; i < 3; ++i) {
    object["data"]["key"] = "v" + std::to_string(i);
    auto written = kube().update(Kind::ConfigMap, object);
    ASSERT_OK(written);
    EXPECT_TRUE(seen.insert(rv(*written)).second) << "resourceVersion reused: " << rv(*written);
    object = *written;
  }
  auto patched = kube().patch(ref, PatchType::Merge, Json{{"data", {{"key", "patched"}}}});
  ASSERT_OK(patched);
  EXPECT_TRUE(seen.insert(rv(*patched)).second);
}

TEST_P(KubernetesContract, UpdateThatChangesNothingKeepsTheResourceVersion) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "no-op"));
  ASSERT_OK(created);
  auto written = kube().update(Kind::ConfigMap, *created);
  ASSERT_OK(written);
  EXPECT_EQ(rv(*written), rv(*created));
}

TEST_P(KubernetesContract, GenerationBumpsOnSpecChangesOnly) {
  auto created = kube().create(Kind::StatefulSet, statefulset(ns(), "gen"));
  ASSERT_OK(created);
  EXPECT_EQ(created->at("metadata")["generation"], 1);
  const ObjectRef ref{Kind::StatefulSet, ns(), "gen"};
  auto labelled =
      modify(kube(), ref, false, [](Json& sts) { sts["metadata"]["labels"]["only"] = "metadata"; });
  ASSERT_OK(labelled);
  EXPECT_EQ(labelled->at("metadata")["generation"], 1);
  auto respecced =
      modify(kube(), ref, false, [](Json& sts) { sts["spec"]["minReadySeconds"] = 5; });
  ASSERT_OK(respecced);
  EXPECT_EQ(respecced->at("metadata")["generation"], 2);
}

TEST_P(KubernetesContract, MainResourceIgnoresStatusAndStatusIgnoresSpec) {
  ASSERT_OK(kube().create(Kind::StatefulSet, statefulset(ns(), "split")));
  const ObjectRef ref{Kind::StatefulSet, ns(), "split"};

  auto status_written = modify(kube(), ref, true, [](Json& sts) {
    sts["status"]["collisionCount"] = 7;
    sts["spec"]["replicas"] = 3;
  });
  ASSERT_OK(status_written);
  EXPECT_EQ(status_written->at("status")["collisionCount"], 7);
  EXPECT_EQ(status_written->at("spec")["replicas"], 0);
  EXPECT_EQ(status_written->at("metadata")["generation"], 1);

  auto spec_written = modify(kube(), ref, false, [](Json& sts) {
    sts["status"]["collisionCount"] = 9;
    sts["spec"]["minReadySeconds"] = 3;
  });
  ASSERT_OK(spec_written);
  EXPECT_EQ(spec_written->at("status")["collisionCount"], 7);
  EXPECT_EQ(spec_written->at("spec")["minReadySeconds"], 3);
}

TEST_P(KubernetesContract, StatusOfAKindWithoutStatusSubresourceIsNotFound) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "no-status"));
  ASSERT_OK(created);
  EXPECT_CODE(kube().update_status(Kind::ConfigMap, *created), KubeErrorCode::NotFound);
}

TEST_P(KubernetesContract, MergePatchWithNullRemovesALabel) {
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "merge", {{"a", "1"}, {"b", "2"}})));
  auto patched = kube().patch({Kind::ConfigMap, ns(), "merge"}, PatchType::Merge,
                              Json{{"metadata", {{"labels", {{"a", nullptr}, {"c", "3"}}}}}});
  ASSERT_OK(patched);
  EXPECT_EQ(patched->at("metadata")["labels"], (Json{{"b", "2"}, {"c", "3"}}));
}

TEST_P(KubernetesContract, MergePatchWithStaleResourceVersionIsConflict) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "patch-rv"));
  ASSERT_OK(created);
  ASSERT_OK(kube().patch({Kind::ConfigMap, ns(), "patch-rv"}, PatchType::Merge,
                         Json{{"data", {{"key", "moved on"}}}}));
  auto stale = kube().patch(
      {Kind::ConfigMap, ns(), "patch-rv"}, PatchType::Merge,
      Json{{"metadata", {{"resourceVersion", rv(*created)}}}, {"data", {{"key", "stale"}}}});
  EXPECT_CODE(stale, KubeErrorCode::Conflict);
}

TEST_P(KubernetesContract, JsonPatchAppliesAllOperationsOrFailsInvalidOnAFailedTest) {
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "json-patch", {{"a", "1"}})));
  const ObjectRef ref{Kind::ConfigMap, ns(), "json-patch"};
  auto failed =
      kube().patch(ref, PatchType::Json,
                   Json::array({{{"op", "replace"}, {"path", "/data/key"}, {"value", "x"}},
                                {{"op", "test"}, {"path", "/metadata/labels/a"}, {"value", "2"}}}));
  EXPECT_CODE(failed, KubeErrorCode::Invalid);
  auto unchanged = kube().get(ref);
  ASSERT_OK(unchanged);
  EXPECT_EQ(unchanged->at("data")["key"], "value");

  auto applied =
      kube().patch(ref, PatchType::Json,
                   Json::array({{{"op", "test"}, {"path", "/metadata/labels/a"}, {"value", "1"}},
                                {{"op", "replace"}, {"path", "/data/key"}, {"value", "y"}},
                                {{"op", "remove"}, {"path", "/metadata/labels/a"}}}));
  ASSERT_OK(applied);
  EXPECT_EQ(applied->at("data")["key"], "y");
  EXPECT_FALSE(applied->at("metadata").value("labels", Json::object()).contains("a"));
}

TEST_P(KubernetesContract, DeleteWithMismatchedPreconditionIsConflictAndKeepsTheObject) {
  auto created = kube().create(Kind::ConfigMap, config_map(ns(), "guarded"));
  ASSERT_OK(created);
  const ObjectRef ref{Kind::ConfigMap, ns(), "guarded"};
  EXPECT_CODE(
      kube().remove(ref, preconditions("00000000-0000-4000-8000-000000000000", std::nullopt)),
      KubeErrorCode::Conflict);
  EXPECT_CODE(kube().remove(ref, preconditions(std::nullopt, "1")), KubeErrorCode::Conflict);
  ASSERT_OK(kube().get(ref));
  ASSERT_OK(kube().remove(
      ref, preconditions(created->at("metadata")["uid"].get<std::string>(), rv(*created))));
  EXPECT_CODE(kube().get(ref), KubeErrorCode::NotFound);
}

TEST_P(KubernetesContract, FinalizerKeepsADeletedObjectUntilTheLastOneIsRemoved) {
  Json body = config_map(ns(), "finalized");
  body["metadata"]["finalizers"] = {"stsresize.dev/contract-test"};
  ASSERT_OK(kube().create(Kind::ConfigMap, body));
  const ObjectRef ref{Kind::ConfigMap, ns(), "finalized"};
  ASSERT_OK(kube().remove(ref));

  auto deleting = kube().get(ref);
  ASSERT_OK(deleting);
  EXPECT_TRUE(deleting->at("metadata").contains("deletionTimestamp"));
  Json more = *deleting;
  more["metadata"]["finalizers"].push_back("stsresize.dev/another");
  EXPECT_CODE(kube().update(Kind::ConfigMap, more), KubeErrorCode::Invalid);

  Json released = *deleting;
  released["metadata"]["finalizers"] = Json::array();
  ASSERT_OK(kube().update(Kind::ConfigMap, released));
  EXPECT_CODE(kube().get(ref), KubeErrorCode::NotFound);
}

TEST_P(KubernetesContract, MissingObjectsAreNotFoundForEveryVerb) {
  const ObjectRef ref{Kind::ConfigMap, ns(), "missing"};
  EXPECT_CODE(kube().get(ref), KubeErrorCode::NotFound);
  Json body = config_map(ns(), "missing");
  body["metadata"]["resourceVersion"] = "1";
  EXPECT_CODE(kube().update(Kind::ConfigMap, body), KubeErrorCode::NotFound);
  EXPECT_CODE(kube().patch(ref, PatchType::Merge, Json{{"data", {{"k", "v"}}}}),
              KubeErrorCode::NotFound);
  EXPECT_CODE(kube().remove(ref), KubeErrorCode::NotFound);
}

std::set<std::string> names(const ObjectList& list) {
  std::set<std::string> out;
  for (const Json& item : list.items) out.insert(item["metadata"]["name"].get<std::string>());
  return out;
}

TEST_P(KubernetesContract, ListFiltersByEveryLabelSelectorForm) {
  ASSERT_OK(kube().create(Kind::ConfigMap,
                          config_map(ns(), "sel-web", {{"suite", "sel"}, {"tier", "web"}})));
  ASSERT_OK(kube().create(
      Kind::ConfigMap,
      config_map(ns(), "sel-db", {{"suite", "sel"}, {"tier", "db"}, {"ssd", "yes"}})));
  ASSERT_OK(kube().create(Kind::ConfigMap,
                          config_map(ns(), "sel-cache", {{"suite", "sel"}, {"tier", "cache"}})));
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "sel-none", {{"suite", "sel"}})));

  auto select = [&](const std::string& selector) {
    auto list = kube().list(Kind::ConfigMap, ns(), by_labels("suite=sel," + selector));
    EXPECT_TRUE(list) << selector << ": " << list.error().message;
    return list ? names(*list) : std::set<std::string>{};
  };
  using Names = std::set<std::string>;
  EXPECT_EQ(select("tier=web"), (Names{"sel-web"}));
  EXPECT_EQ(select("tier==db"), (Names{"sel-db"}));
  EXPECT_EQ(select("tier!=web"), (Names{"sel-db", "sel-cache", "sel-none"}));
  EXPECT_EQ(select("ssd"), (Names{"sel-db"}));
  EXPECT_EQ(select("!tier"), (Names{"sel-none"}));
  EXPECT_EQ(select("tier in (web,cache)"), (Names{"sel-web", "sel-cache"}));
  EXPECT_EQ(select("tier notin (web)"), (Names{"sel-db", "sel-cache", "sel-none"}));
  EXPECT_EQ(select("tier,tier notin (db, cache)"), (Names{"sel-web"}));
}

TEST_P(KubernetesContract, ListFiltersByNameFieldAndRefusesBadSelectors) {
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "field-a")));
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "field-b")));
  auto list = kube().list(Kind::ConfigMap, ns(), by_fields("metadata.name=field-b"));
  ASSERT_OK(list);
  EXPECT_EQ(names(*list), (std::set<std::string>{"field-b"}));
  EXPECT_CODE(kube().list(Kind::ConfigMap, ns(), by_labels("tier in web")),
              KubeErrorCode::BadRequest);
  EXPECT_CODE(kube().list(Kind::ConfigMap, ns(), by_fields("data.key=value")),
              KubeErrorCode::BadRequest);
}

TEST_P(KubernetesContract, ListPagesThroughEveryObjectExactlyOnce) {
  std::set<std::string> expected;
  for (int i = 0; i < 25; ++i) {
    const std::string name = "page-" + std::to_string(i);
    ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), name, {{"suite", "paging"}})));
    expected.insert(name);
  }
  std::vector<std::size_t> page_sizes;
  std::multiset<std::string> seen;
  ListOptions options = by_labels("suite=paging", 10);
  do {
    auto page = kube().list(Kind::ConfigMap, ns(), options);
    ASSERT_OK(page);
    EXPECT_FALSE(page->resource_version.empty());
    page_sizes.push_back(page->items.size());
    for (const Json& item : page->items) seen.insert(item["metadata"]["name"].get<std::string>());
    options.continue_token = page->continue_token;
    ASSERT_LE(page_sizes.size(), 3u) << "more pages than objects allow";
  } while (!options.continue_token.empty());
  EXPECT_EQ(page_sizes, (std::vector<std::size_t>{10, 10, 5}));
  EXPECT_EQ(seen.size(), 25u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), expected);
}

TEST_P(KubernetesContract, ListResourceVersionMovesWithWrites) {
  auto before = kube().list(Kind::ConfigMap, ns());
  ASSERT_OK(before);
  ASSERT_OK(kube().create(Kind::ConfigMap, config_map(ns(), "list-rv")));
  auto after = kube().list(Kind::ConfigMap, ns());
  ASSERT_OK(after);
  EXPECT_NE(before->resource_version, after->resource_version);
  EXPECT_EQ(names(*after).count("list-rv"), 1u);
}

TEST_P(KubernetesContract, StatefulSetVolumeClaimTemplatesAreImmutable) {
  ASSERT_OK(kube().create(Kind::StatefulSet, statefulset(ns(), "vct")));
  auto changed = modify(kube(), {Kind::StatefulSet, ns(), "vct"}, false, [](Json& sts) {
    sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "2Gi";
  });
  EXPECT_CODE(changed, KubeErrorCode::Invalid);
  auto read = kube().get({Kind::StatefulSet, ns(), "vct"});
  ASSERT_OK(read);
  EXPECT_EQ(read->at("spec")["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
            "1Gi");
  auto scaled = modify(kube(), {Kind::StatefulSet, ns(), "vct"}, false, [](Json& sts) {
    sts["spec"]["replicas"] = 0;
    sts["spec"]["minReadySeconds"] = 1;
  });
  EXPECT_TRUE(scaled) << "mutable spec fields stay writable";
}

TEST_P(KubernetesContract, ClaimRequestCannotShrinkNorChangeWhileUnbound) {
  auto created = kube().create(Kind::PersistentVolumeClaim, claim(ns(), "pending", "2Gi"));
  ASSERT_OK(created);
  const ObjectRef ref{Kind::PersistentVolumeClaim, ns(), "pending"};
  for (const char* size : {"1Gi", "3Gi"}) {
    auto changed = modify(kube(), ref, false, [&](Json& pvc) {
      pvc["spec"]["resources"]["requests"]["storage"] = size;
    });
    EXPECT_CODE(changed, KubeErrorCode::Invalid);
  }
  auto read = kube().get(ref);
  ASSERT_OK(read);
  EXPECT_EQ(read->at("spec")["resources"]["requests"]["storage"], "2Gi");
}

TEST_P(KubernetesContract, ClaimsGetTheProtectionFinalizerAtCreation) {
  auto created = kube().create(Kind::PersistentVolumeClaim, claim(ns(), "protected", "1Gi"));
  ASSERT_OK(created);
  EXPECT_EQ(created->at("metadata")["finalizers"], Json::array({"kubernetes.io/pvc-protection"}));
  EXPECT_EQ(created->at("status")["phase"], "Pending");
}

// The API server puts kind/apiVersion on the list only; every implementation passes items on
// like that, so no caller comes to depend on a field one of them lacks.
TEST_P(KubernetesContract, ListItemsCarryNoKindOrApiVersion) {
  ASSERT_OK(kube().create(Kind::StatefulSet, statefulset(ns(), "typed")));
  auto list = kube().list(Kind::StatefulSet, ns());
  ASSERT_OK(list);
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_FALSE(list->items[0].contains("kind"));
  EXPECT_FALSE(list->items[0].contains("apiVersion"));
  EXPECT_EQ(list->items[0]["metadata"]["name"], "typed");
}

TEST_P(KubernetesContract, DeletingAnObjectAlreadyBeingDeletedSucceedsAndChangesNothing) {
  Json body = config_map(ns(), "twice-deleted");
  body["metadata"]["finalizers"] = {"stsresize.dev/contract-test"};
  ASSERT_OK(kube().create(Kind::ConfigMap, body));
  const ObjectRef ref{Kind::ConfigMap, ns(), "twice-deleted"};
  ASSERT_OK(kube().remove(ref));
  auto first = kube().get(ref);
  ASSERT_OK(first);
  ASSERT_OK(kube().remove(ref));
  auto second = kube().get(ref);
  ASSERT_OK(second);
  EXPECT_EQ(second->at("metadata")["deletionTimestamp"],
            first->at("metadata")["deletionTimestamp"]);
  Json released = *second;
  released["metadata"]["finalizers"] = Json::array();
  ASSERT_OK(kube().update(Kind::ConfigMap, released));
}

// A pod bound to a node no kubelet serves, marked Running and Ready through /status, so that a
// disruption budget counts it (a Pending pod is evicted without one); nothing overwrites it.
KubeResult<Json> running_pod(Kubernetes& kube, const std::string& ns, const std::string& name) {
  Json pod{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "evicted"}}}}},
      {"spec",
       {{"nodeName", "stsresize-contract-no-such-node"},
        {"containers", Json::array({{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}};
  auto created = kube.create(Kind::Pod, pod);
  if (!created) return created;
  return modify(kube, ref_of(Kind::Pod, *created), /*status=*/true, [](Json& live) {
    live["status"]["phase"] = "Running";
    live["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "True"}}});
  });
}

bool gone_or_going(Kubernetes& kube, const ObjectRef& ref) {
  auto live = kube.get(ref);
  if (!live) return live.error().code == KubeErrorCode::NotFound;
  return live->at("metadata").contains("deletionTimestamp");
}

TEST_P(KubernetesContract, EvictingAPodNoBudgetSelectsDeletesIt) {
  auto pod = running_pod(kube(), ns(), "evicted-free");
  ASSERT_OK(pod);
  const ObjectRef ref = ref_of(Kind::Pod, *pod);
  EvictOptions stale;
  stale.uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_CODE(kube().evict(ref, stale), KubeErrorCode::Conflict);
  EvictOptions dry_run;
  dry_run.dry_run = true;
  ASSERT_OK(kube().evict(ref, dry_run));
  auto after_dry_run = kube().get(ref);
  ASSERT_OK(after_dry_run);
  EXPECT_FALSE(after_dry_run->at("metadata").contains("deletionTimestamp"));
  EvictOptions exact;
  exact.uid = pod->at("metadata")["uid"].get<std::string>();
  ASSERT_OK(kube().evict(ref, exact));
  EXPECT_TRUE(eventually([&] { return gone_or_going(kube(), ref); }));
  EXPECT_CODE(kube().evict(ObjectRef{Kind::Pod, ns(), "no-such-pod"}), KubeErrorCode::NotFound);
}

// What a rolling resize waits on: the refusal is TooManyRequests, a dry run is refused the same
// way, and the pod is left as it was.
TEST_P(KubernetesContract, AnEvictionABudgetForbidsIsTooManyRequestsAndChangesNothing) {
  Json budget{
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", "all-needed"}, {"namespace", ns()}}},
      {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "evicted"}}}}}}}};
  ASSERT_OK(kube().create(Kind::PodDisruptionBudget, budget));
  auto pod = running_pod(kube(), ns(), "evicted-held");
  ASSERT_OK(pod);
  const ObjectRef ref = ref_of(Kind::Pod, *pod);
  EvictOptions dry_run;
  dry_run.dry_run = true;
  EXPECT_CODE(kube().evict(ref, dry_run), KubeErrorCode::TooManyRequests);
  auto refused = kube().evict(ref);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, KubeErrorCode::TooManyRequests);
  EXPECT_NE(refused.error().message.find("disruption budget"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(refused.error().retry_after, Duration{0});
  auto after = kube().get(ref);
  ASSERT_OK(after);
  EXPECT_FALSE(after->at("metadata").contains("deletionTimestamp"));
  ASSERT_OK(kube().remove(ref, preconditions(std::nullopt, std::nullopt)));
}

// How a rolling resize pauses a StatefulSet and later lets it go without its pods: deleted in
// the background while a finalizer holds it, its dependents keep their owner; a second delete
// asking for Orphan then makes the garbage collector orphan them, and once the finalizer is
// removed the owner goes and they stay.
TEST_P(KubernetesContract, AHeldBackgroundDeleteSwitchedToOrphanLetsTheDependentsStay) {
  Json owner = config_map(ns(), "held-owner");
  owner["metadata"]["finalizers"] = {"stsresize.dev/contract-test"};
  auto created_owner = kube().create(Kind::ConfigMap, owner);
  ASSERT_OK(created_owner);
  Json dependent = config_map(ns(), "held-dependent");
  dependent["metadata"]["ownerReferences"] =
      Json::array({{{"apiVersion", "v1"},
                    {"kind", "ConfigMap"},
                    {"name", "held-owner"},
                    {"uid", created_owner->at("metadata")["uid"]}}});
  ASSERT_OK(kube().create(Kind::ConfigMap, dependent));
  const ObjectRef owner_ref{Kind::ConfigMap, ns(), "held-owner"};
  const ObjectRef dependent_ref{Kind::ConfigMap, ns(), "held-dependent"};
  DeleteOptions background;
  background.propagation = Propagation::Background;
  ASSERT_OK(kube().remove(owner_ref, background));
  auto held = kube().get(dependent_ref);
  ASSERT_OK(held);
  EXPECT_EQ(held->at("metadata")["ownerReferences"].size(), 1u);
  DeleteOptions orphan;
  orphan.propagation = Propagation::Orphan;
  ASSERT_OK(kube().remove(owner_ref, orphan));
  EXPECT_TRUE(eventually([&] {
    auto live = kube().get(dependent_ref);
    return live && live->at("metadata").value("ownerReferences", Json::array()).empty();
  }));
  EXPECT_TRUE(eventually([&] {
    auto live = kube().get(owner_ref);
    if (!live) return false;
    const Json& finalizers = live->at("metadata").value("finalizers", Json::array());
    return finalizers.size() == 1;  // the collector's "orphan" removed
  }));
  ASSERT_OK(modify(kube(), owner_ref, false,
                   [](Json& live) { live["metadata"]["finalizers"] = Json::array(); }));
  EXPECT_TRUE(eventually([&] { return !kube().get(owner_ref); }));
  ASSERT_OK(kube().get(dependent_ref));
}

TEST_P(KubernetesContract, LeaseUpdateWithoutResourceVersionIsInvalid) {
  Json lease{{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", "leader"}, {"namespace", ns()}}},
             {"spec", {{"holderIdentity", "a"}}}};
  ASSERT_OK(kube().create(Kind::Lease, lease));
  lease["spec"]["holderIdentity"] = "b";
  EXPECT_CODE(kube().update(Kind::Lease, lease), KubeErrorCode::Invalid);
}

// Surprising but true: only Pods reset metadata on /status; a StatefulSet keeps label changes
// sent there. The fake must not be stricter than the server, or tests would pass that the
// cluster fails (and vice versa).
TEST_P(KubernetesContract, StatefulSetStatusUpdateKeepsMetadataChanges) {
  ASSERT_OK(kube().create(Kind::StatefulSet, statefulset(ns(), "status-meta")));
  auto written = modify(kube(), {Kind::StatefulSet, ns(), "status-meta"}, true,
                        [](Json& sts) { sts["metadata"]["labels"]["via-status"] = "yes"; });
  ASSERT_OK(written);
  EXPECT_EQ(written->at("metadata")["labels"]["via-status"], "yes");
}

// batch/v1 Job's default garbage collection policy is Orphan (kept upstream for backward
// compatibility): deleting a Job without a propagation policy leaves its pods behind.
TEST_P(KubernetesContract, JobDeletedWithDefaultPropagationOrphansItsDependents) {
  auto job = kube().create(Kind::Job, suspended_job(ns(), "orphaning"));
  ASSERT_OK(job);
  Json dependent = config_map(ns(), "job-dependent");
  dependent["metadata"]["ownerReferences"] = {{{"apiVersion", "batch/v1"},
                                               {"kind", "Job"},
                                               {"name", "orphaning"},
                                               {"uid", job->at("metadata")["uid"]}}};
  ASSERT_OK(kube().create(Kind::ConfigMap, dependent));
  ASSERT_OK(kube().remove({Kind::Job, ns(), "orphaning"}));
  EXPECT_TRUE(eventually([&] { return !kube().get({Kind::Job, ns(), "orphaning"}); }));
  auto kept = kube().get({Kind::ConfigMap, ns(), "job-dependent"});
  ASSERT_OK(kept);
  EXPECT_FALSE(kept->at("metadata").contains("ownerReferences"));
}

TEST_P(KubernetesContract, JobCreationGeneratesItsSelectorAndPodLabels) {
  auto job = kube().create(Kind::Job, suspended_job(ns(), "labelled"));
  ASSERT_OK(job);
  const Json uid = job->at("metadata")["uid"];
  EXPECT_EQ(job->at("spec")["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid);
  const Json labels = job->at("spec")["template"]["metadata"]["labels"];
  EXPECT_EQ(labels["batch.kubernetes.io/job-name"], "labelled");
  EXPECT_EQ(labels["job-name"], "labelled");
  EXPECT_EQ(labels["controller-uid"], uid);
  EXPECT_EQ(job->at("spec")["backoffLimit"], 6);
}

}  // namespace
}  // namespace stsresize::contract
