#include "adapters/controller/cached_reads.h"

#include <gtest/gtest.h>

#include <atomic>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/runtime/informer.h"
#include "engine/cached_fields.h"
#include "engine/k8s_objects.h"

namespace stsresize {
namespace {

constexpr const char* kNs = "shop";

// The live side, counting the reads that reach it.
class CountingReads final : public Kubernetes {
 public:
  explicit CountingReads(Kubernetes& inner) : inner_(inner) {}
  int gets = 0;
  int lists = 0;

  KubeResult<Json> get(const ObjectRef& ref) override {
    ++gets;
    return inner_.get(ref);
  }
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options) override {
    ++lists;
    return inner_.list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override {
    return inner_.create(kind, object);
  }
  KubeResult<Json> update(Kind kind, const Json& object) override {
    return inner_.update(kind, object);
  }
  KubeResult<Json> update_status(Kind kind, const Json& object) override {
    return inner_.update_status(kind, object);
  }
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override {
    return inner_.patch(ref, type, patch);
  }
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options) override {
    return inner_.remove(ref, options);
  }
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options) override {
    return inner_.evict(pod, options);
  }
  KubeResult<Json> get_scale(const ObjectRef& ref) override { return inner_.get_scale(ref); }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override {
    return inner_.update_scale(ref, replicas, resource_version);
  }
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return inner_.watch(kind, ns, options, std::move(stop), handler);
  }

 private:
  Kubernetes& inner_;
};

Json claim(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolumeClaim"},
      {"metadata", {{"name", name}, {"namespace", kNs}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
}

// A ConfigMap stands for every kind cached only when labelled (Jobs, ConfigMaps): the fake
// validates it least.
Json labelled(const std::string& name, bool ours) {
  Json object = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", name}, {"namespace", kNs}}},
                 {"data", {{"k", "v"}}}};
  if (ours) object["metadata"]["labels"] = {{"stsresize.dev/statefulset", "web"}};
  return object;
}

// A cache the test moves by hand: what an informer would hold, a moment behind the server.
struct World {
  ManualClock clock;
  FakeKubernetes server{clock};
  CountingReads live{server};
  runtime::Store claims;
  runtime::Store ours;  // filtered by the label
  std::atomic<bool> synced{true};
  CachedReads reads{live};

  World() {
    reads.serve(
        Kind::PersistentVolumeClaim, claims, [this] { return synced.load(); }, true);
    reads.serve(
        Kind::ConfigMap, ours, [this] { return synced.load(); }, false);
  }
  // The informer catches up on `ref` (or learns it is gone).
  void catch_up(runtime::Store& store, const ObjectRef& ref) {
    const std::string key = ref.ns + "/" + ref.name;
    if (auto now = server.get_raw(ref)) {
      store.put(key, *now);
    } else {
      store.erase(key);
    }
  }
};

TEST(CachedReads, ReadsOfACaughtUpCacheCostNoRequest) {
  World w;
  ASSERT_TRUE(w.server.create(Kind::PersistentVolumeClaim, claim("data-web-0")));
  const ObjectRef ref{Kind::PersistentVolumeClaim, kNs, "data-web-0"};
  w.catch_up(w.claims, ref);

  auto got = w.reads.get(ref);
  ASSERT_TRUE(got);
  EXPECT_EQ(k8s::name(*got).value_or(""), "data-web-0");
  auto missing = w.reads.get({Kind::PersistentVolumeClaim, kNs, "data-web-9"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, KubeErrorCode::NotFound);
  auto listed = w.reads.list(Kind::PersistentVolumeClaim, kNs, {});
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(w.live.gets + w.live.lists, 0);
  EXPECT_EQ(w.reads.cache_hits(), 3u);
}

TEST(CachedReads, SelectedListsUnsyncedCachesAndUncachedKindsAreReadLive) {
  World w;
  ListOptions selected;
  selected.label_selector = "app=web";
  ASSERT_TRUE(w.reads.list(Kind::PersistentVolumeClaim, kNs, selected));
  ASSERT_TRUE(w.reads.list(Kind::ConfigMap, kNs, {}));  // a filtered cache is not every one
  (void)w.reads.get({Kind::Pod, kNs, "web-0"});
  w.synced = false;
  (void)w.reads.get({Kind::PersistentVolumeClaim, kNs, "data-web-0"});
  EXPECT_EQ(w.live.lists, 2);
  EXPECT_EQ(w.live.gets, 2);
  EXPECT_EQ(w.reads.cache_hits(), 0u);
}

TEST(CachedReads, AnObjectWrittenHereIsAnsweredWithTheWritesAnswerUntilTheCacheShowsIt) {
  World w;
  const ObjectRef ref{Kind::ConfigMap, kNs, "stsresize-web-definition"};
  ASSERT_TRUE(w.reads.create(Kind::ConfigMap, labelled(ref.name, true)));

  // The cache has not seen the create: a cached read would say NotFound, and the step would
  // create it again. The create's own answer is what the server holds.
  for (int i = 0; i < 2; ++i) {
    auto got = w.reads.get(ref);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(k8s::label(*got, "stsresize.dev/statefulset").value_or(std::nullopt), "web");
  }
  EXPECT_EQ(w.live.gets, 0);

  w.catch_up(w.ours, ref);
  ASSERT_TRUE(w.reads.get(ref));
  ASSERT_TRUE(w.reads.get(ref));
  EXPECT_EQ(w.live.gets, 0) << "the cache holds the write: read from it";

  // Deleted here: read live once (NotFound), that answer kept until the cache changes.
  ASSERT_TRUE(w.reads.remove(ref, {}));
  for (int i = 0; i < 3; ++i) {
    auto gone = w.reads.get(ref);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code, KubeErrorCode::NotFound);
  }
  EXPECT_EQ(w.live.gets, 1);
  w.catch_up(w.ours, ref);
  ASSERT_FALSE(w.reads.get(ref));
  EXPECT_EQ(w.live.gets, 1);
}

TEST(CachedReads, AnUpdateIsMetOnlyByTheWrittenVersionOrANewerOne) {
  World w;
  const ObjectRef ref{Kind::PersistentVolumeClaim, kNs, "data-web-0"};
  ASSERT_TRUE(w.server.create(Kind::PersistentVolumeClaim, claim(ref.name)));
  w.catch_up(w.claims, ref);
  const Json patch = {{"metadata", {{"annotations", {{"a", "1"}}}}}};
  ASSERT_TRUE(w.reads.patch(ref, PatchType::Merge, patch));

  auto got = w.reads.get(ref);  // the patch's answer
  ASSERT_TRUE(got);
  EXPECT_EQ(k8s::annotation(*got, "a").value_or(std::nullopt).value_or(""), "1");
  EXPECT_EQ(w.live.gets, 0);
  // A list sees the write too while the cache is behind: read live.
  auto listed = w.reads.list(Kind::PersistentVolumeClaim, kNs, {});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(k8s::annotation(listed->items[0], "a").value_or(std::nullopt).value_or(""), "1");
  EXPECT_EQ(w.live.lists, 1);

  // A list across every namespace sees it too.
  ASSERT_TRUE(w.reads.list(Kind::PersistentVolumeClaim, "", {}));
  EXPECT_EQ(w.live.lists, 2);

  // The cache changes, but not to the written version (another claim's event): the patch's
  // answer no longer stands for the server, so the key is read live, once.
  ASSERT_TRUE(w.server.create(Kind::PersistentVolumeClaim, claim("data-web-1")));
  w.catch_up(w.claims, {Kind::PersistentVolumeClaim, kNs, "data-web-1"});
  for (int i = 0; i < 2; ++i) {
    auto again = w.reads.get(ref);
    ASSERT_TRUE(again);
    EXPECT_EQ(k8s::annotation(*again, "a").value_or(std::nullopt).value_or(""), "1");
  }
  EXPECT_EQ(w.live.gets, 1);

  w.catch_up(w.claims, ref);
  ASSERT_TRUE(w.reads.get(ref));
  ASSERT_TRUE(w.reads.list(Kind::PersistentVolumeClaim, kNs, {}));
  ASSERT_TRUE(w.reads.list(Kind::PersistentVolumeClaim, "", {}));
  EXPECT_EQ(w.live.gets, 1);
  EXPECT_EQ(w.live.lists, 2);
}

TEST(CachedReads, ADeleteIsNotMetByTheSameObjectStillCachedUnlessBeingDeletedSince) {
  World w;
  const ObjectRef ref{Kind::PersistentVolumeClaim, kNs, "data-web-0"};
  Json with_finalizer = claim(ref.name);
  with_finalizer["metadata"]["finalizers"] = {"kubernetes.io/pvc-protection"};
  ASSERT_TRUE(w.server.create(Kind::PersistentVolumeClaim, with_finalizer));
  w.catch_up(w.claims, ref);
  const std::string uid = k8s::uid(*w.server.get_raw(ref)).value_or("");
  DeleteOptions options;
  options.uid = uid;
  ASSERT_TRUE(w.reads.remove(ref, options));

  // Live once: being deleted, held by its finalizer; that answer again while the cache has not
  // changed (a step reads its claim back several times a reconcile).
  for (int i = 0; i < 3; ++i) {
    auto got = w.reads.get(ref);
    ASSERT_TRUE(got);
    EXPECT_TRUE(k8s::is_being_deleted(*got).value_or(false));
  }
  EXPECT_EQ(w.live.gets, 1);

  w.catch_up(w.claims, ref);  // the cache shows it being deleted
  auto cached = w.reads.get(ref);
  ASSERT_TRUE(cached);
  EXPECT_TRUE(k8s::is_being_deleted(*cached).value_or(false));
  EXPECT_EQ(w.live.gets, 1);
}

TEST(CachedReads, ACreateRefusedForAnObjectTheCacheDoesNotHoldReadsThatKeyLive) {
  World w;
  // Someone else's object of our name, without our label: the filtered cache never holds it.
  const ObjectRef ref{Kind::ConfigMap, kNs, "stsresize-web-definition"};
  ASSERT_TRUE(w.server.create(Kind::ConfigMap, labelled(ref.name, false)));
  auto first = w.reads.get(ref);
  ASSERT_FALSE(first);  // absent from the cache: not ours
  EXPECT_EQ(w.live.gets, 0);

  auto created = w.reads.create(Kind::ConfigMap, labelled(ref.name, true));
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, KubeErrorCode::AlreadyExists);
  for (int i = 0; i < 2; ++i) {
    auto seen = w.reads.get(ref);
    ASSERT_TRUE(seen) << "the step must see the object it collided with";
    EXPECT_FALSE(k8s::label(*seen, "stsresize.dev/statefulset").value_or(std::nullopt));
  }
  EXPECT_EQ(w.live.gets, 1) << "read live once, then that answer while the cache is unchanged";

  // Someone changes it: the filtered cache does not see that, but any event of its kind ends
  // the answer kept.
  ASSERT_TRUE(w.server.patch(ref, PatchType::Merge, {{"data", {{"k", "w"}}}}));
  (void)w.reads.get(ref);
  EXPECT_EQ(w.live.gets, 1) << "the cache has not changed: the answer kept";
  w.ours.put(kNs + std::string{"/other"}, labelled("other", true));
  auto changed = w.reads.get(ref);
  ASSERT_TRUE(changed);
  EXPECT_EQ((*changed)["data"]["k"], "w");
  EXPECT_EQ(w.live.gets, 2);
}

TEST(CachedReads, AWriteAnsweredByTheCacheChangingIsReadLiveThenSettled) {
  World w;
  const ObjectRef ref{Kind::ConfigMap, kNs, "stsresize-web-definition"};
  ASSERT_TRUE(w.reads.create(Kind::ConfigMap, labelled(ref.name, true)));
  // Deleted by someone else before the cache saw it: the informer shows the create and the
  // delete, and ends as it began (absent). Its changes, not its content, end the answer.
  ASSERT_TRUE(w.server.remove(ref, {}));
  w.ours.put(ref.ns + "/" + ref.name, labelled(ref.name, true));
  w.ours.erase(ref.ns + "/" + ref.name);
  ASSERT_FALSE(w.reads.get(ref));
  EXPECT_EQ(w.live.gets, 1);
  ASSERT_FALSE(w.reads.get(ref));
  EXPECT_EQ(w.live.gets, 1) << "live and cache agreed (both absent): settled";
}

TEST(CachedReads, LiveReadsAlwaysGoToTheServerAndTheirWritesAreExpectedToo) {
  World w;
  const ObjectRef ref{Kind::PersistentVolumeClaim, kNs, "data-web-0"};
  ASSERT_TRUE(w.reads.live().create(Kind::PersistentVolumeClaim, claim(ref.name)));
  ASSERT_TRUE(w.reads.get(ref)) << "written through live(): its answer until cached";
  EXPECT_EQ(w.live.gets, 0);
  ASSERT_TRUE(w.reads.live().get(ref));
  ASSERT_TRUE(w.reads.live().get(ref));
  EXPECT_EQ(w.live.gets, 2) << "live() reads live every time";
  w.catch_up(w.claims, ref);
  ASSERT_TRUE(w.reads.live().get(ref));
  EXPECT_EQ(w.live.gets, 3);
  ASSERT_TRUE(w.reads.get(ref));
  EXPECT_EQ(w.live.gets, 3);
}

TEST(CachedReads, LiveReadsOfAJobComeFromTheCacheAsItsOutcomeNeverGoesBack) {
  World w;
  runtime::Store jobs;
  w.reads.serve(
      Kind::Job, jobs, [] { return true; }, false);
  const ObjectRef ref{Kind::Job, kNs, "data-web-0-stsresize-backup"};
  jobs.put(ref.ns + "/" + ref.name,
           Json{{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", ref.name}, {"namespace", kNs}, {"uid", "u1"}}},
                {"status", {{"succeeded", 1}}}});
  auto got = w.reads.live().get(ref);
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)["status"]["succeeded"], 1);
  auto missing = w.reads.live().get({Kind::Job, kNs, "data-web-0-stsresize-restore"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, KubeErrorCode::NotFound);
  EXPECT_EQ(w.live.gets, 0);
  // Any other kind: live.
  (void)w.reads.live().get({Kind::PersistentVolumeClaim, kNs, "data-web-0"});
  EXPECT_EQ(w.live.gets, 1);
}

// StatefulSets: the informer keeps them without the pod template, which an update must carry.
Json statefulset(const std::string& name) {
  return Json::parse(R"({"apiVersion":"apps/v1","kind":"StatefulSet",
    "metadata":{"name":")" +
                     name + R"(","namespace":"shop"},
    "spec":{"replicas":3,"serviceName":"web","selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"labels":{"app":"web"}},
        "spec":{"containers":[{"name":"app","image":"busybox"}]}}}})");
}

struct CopiesWorld : World {
  runtime::Store statefulsets;  // trimmed, as the informer keeps them
  const ObjectRef ref{Kind::StatefulSet, kNs, "web"};

  CopiesWorld() {
    reads.serve_whole_copies(Kind::StatefulSet, statefulsets, [this] { return synced.load(); });
  }
  void informer_catches_up() {
    const std::string key = ref.ns + "/" + ref.name;
    if (auto now = server.get_raw(ref)) {
      statefulsets.put(key, trim_for_cache(Kind::StatefulSet, *now));
    } else {
      statefulsets.erase(key);
    }
  }
};

TEST(CachedReadsWholeCopies, AnObjectUnchangedSinceItWasLastReadIsNotReadAgainAndIsWhole) {
  CopiesWorld w;
  ASSERT_TRUE(w.server.create(Kind::StatefulSet, statefulset("web")));
  w.informer_catches_up();

  auto first = w.reads.get(w.ref);  // nothing copied yet: live
  ASSERT_TRUE(first);
  EXPECT_EQ(w.live.gets, 1);
  auto again = w.reads.get(w.ref);
  ASSERT_TRUE(again);
  EXPECT_EQ(w.live.gets, 1) << "the informer shows it unchanged: the copy";
  EXPECT_EQ(*again, *first);
  EXPECT_TRUE((*again)["spec"].contains("template")) << "whole, not the informer's trimmed one";
  EXPECT_EQ(w.reads.cache_hits(), 1u);

  // Someone else changes it: the informer shows a newer version, and it is read live again.
  Json changed = *w.server.get_raw(w.ref);
  changed["metadata"]["labels"] = {{"team", "db"}};
  ASSERT_TRUE(w.server.update(Kind::StatefulSet, changed));
  w.informer_catches_up();
  auto fresh = w.reads.get(w.ref);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(w.live.gets, 2);
  EXPECT_EQ((*fresh)["metadata"]["labels"]["team"], "db");
}

TEST(CachedReadsWholeCopies, AWriteHereIsTheCopyEvenBeforeTheInformerShowsIt) {
  CopiesWorld w;
  ASSERT_TRUE(w.server.create(Kind::StatefulSet, statefulset("web")));
  w.informer_catches_up();
  auto read = w.reads.get(w.ref);
  ASSERT_TRUE(read);
  Json mine = *read;
  mine["metadata"]["annotations"] = {{"stsresize.dev/state", "x"}};
  ASSERT_TRUE(w.reads.update(Kind::StatefulSet, mine));
  auto after = w.reads.get(w.ref);  // the informer is still at the version before the write
  ASSERT_TRUE(after);
  EXPECT_EQ((*after)["metadata"]["annotations"]["stsresize.dev/state"], "x");
  EXPECT_EQ(w.live.gets, 1);
  // Written through live() as well.
  mine = *after;
  mine["metadata"]["annotations"]["stsresize.dev/state"] = "y";
  ASSERT_TRUE(w.reads.live().update(Kind::StatefulSet, mine));
  auto later = w.reads.get(w.ref);
  ASSERT_TRUE(later);
  EXPECT_EQ((*later)["metadata"]["annotations"]["stsresize.dev/state"], "y");
  EXPECT_EQ(w.live.gets, 1);
}

TEST(CachedReadsWholeCopies, ADeleteAnotherUidAScaleOrAnUnsyncedInformerReadLive) {
  CopiesWorld w;
  ASSERT_TRUE(w.server.create(Kind::StatefulSet, statefulset("web")));
  w.informer_catches_up();
  ASSERT_TRUE(w.reads.get(w.ref));
  int gets = w.live.gets;

  w.synced = false;
  ASSERT_TRUE(w.reads.get(w.ref));
  EXPECT_EQ(w.live.gets, ++gets) << "informer not synced";
  w.synced = true;

  const std::string rv = k8s::resource_version(*w.server.get_raw(w.ref)).value_or("");
  ASSERT_TRUE(w.reads.update_scale(w.ref, 0, rv));
  ASSERT_TRUE(w.reads.get(w.ref));
  EXPECT_EQ(w.live.gets, ++gets) << "a Scale returns no StatefulSet: the copy is forgotten";

  // Deleted and made again (an explicit request re-creates it): the informer still holds the
  // old one, whose uid is not the copy's.
  ASSERT_TRUE(w.reads.remove(w.ref, {}));
  auto gone = w.reads.get(w.ref);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, KubeErrorCode::NotFound);
  EXPECT_EQ(w.live.gets, ++gets) << "never NotFound from a copy";
  ASSERT_TRUE(w.server.create(Kind::StatefulSet, statefulset("web")));
  ASSERT_TRUE(w.reads.live().get(w.ref));  // the new one copied
  gets = w.live.gets;
  ASSERT_TRUE(w.reads.get(w.ref));
  EXPECT_EQ(w.live.gets, ++gets) << "the informer still shows the old uid";
  w.informer_catches_up();
  ASSERT_TRUE(w.reads.get(w.ref));
  EXPECT_EQ(w.live.gets, gets);
}

TEST(CachedReadsWholeCopies, OnlyTheMostRecentlyUsedCopiesAreKept) {
  CopiesWorld w;
  const std::size_t count = CachedReads::kMaxWholeCopies + 1;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string name = "web-" + std::to_string(i);
    ASSERT_TRUE(w.server.create(Kind::StatefulSet, statefulset(name)));
    w.statefulsets.put(
        std::string{kNs} + "/" + name,
        trim_for_cache(Kind::StatefulSet, *w.server.get_raw({Kind::StatefulSet, kNs, name})));
    ASSERT_TRUE(w.reads.get({Kind::StatefulSet, kNs, name}));
  }
  const int gets = w.live.gets;
  ASSERT_TRUE(w.reads.get({Kind::StatefulSet, kNs, "web-" + std::to_string(count - 1)}));
  EXPECT_EQ(w.live.gets, gets);
  ASSERT_TRUE(w.reads.get({Kind::StatefulSet, kNs, "web-0"}));
  EXPECT_EQ(w.live.gets, gets + 1) << "the least recently used copy went";
}

}  // namespace
}  // namespace stsresize
