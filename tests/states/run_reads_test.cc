// One run of a step on live reads reads each object once (states/run_reads.h).
#include "states/run_reads.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "engine/k8s_objects.h"

namespace stsresize {
namespace {

constexpr const char* kNs = "shop";

Json claim(const std::string& name) {
  return {
      {"apiVersion", "v1"},
      {"kind", "PersistentVolumeClaim"},
      {"metadata", {{"name", name}, {"namespace", kNs}}},
      {"spec",
       {{"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
}

struct RunWorld {
  ManualClock clock;
  FakeKubernetes server{clock};
  const ObjectRef web0{Kind::PersistentVolumeClaim, kNs, "data-web-0"};

  RunWorld() { EXPECT_TRUE(server.system().create(Kind::PersistentVolumeClaim, claim(web0.name))); }
  int gets() const { return server.calls(Verb::Get, Kind::PersistentVolumeClaim); }
  int lists() const { return server.calls(Verb::List, Kind::PersistentVolumeClaim); }
};

TEST(RunReads, ASecondReadOfAnObjectOrAListInOneRunIsTheFirstsAnswer) {
  RunWorld w;
  RunReads run{w.server};
  const ObjectRef missing{Kind::PersistentVolumeClaim, kNs, "data-web-0-stsresize-bak"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(run.get(w.web0));
    auto absent = run.get(missing);
    ASSERT_FALSE(absent);
    EXPECT_EQ(absent.error().code, KubeErrorCode::NotFound);
    ASSERT_TRUE(run.list(Kind::PersistentVolumeClaim, kNs, {}));
  }
  EXPECT_EQ(w.gets(), 2);
  EXPECT_EQ(w.lists(), 1);
  EXPECT_EQ(run.reads_made(), 3);
  EXPECT_EQ(run.reads_answered(), 6);
  // A list with another selector is another read.
  ListOptions selected;
  selected.label_selector = "app=web";
  ASSERT_TRUE(run.list(Kind::PersistentVolumeClaim, kNs, selected));
  EXPECT_EQ(w.lists(), 2);

  // A next run reads everything again: someone's change since is seen.
  ASSERT_TRUE(w.server.system().patch(w.web0, PatchType::Merge,
                                      {{"metadata", {{"annotations", {{"a", "1"}}}}}}));
  RunReads next{w.server};
  auto fresh = next.get(w.web0);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(k8s::annotation(*fresh, "a").value_or(std::nullopt).value_or(""), "1");
  EXPECT_EQ(w.gets(), 3);
}

TEST(RunReads, AWriteIsTheKeysAnswerAndForgetsTheListsOfItsKind) {
  RunWorld w;
  RunReads run{w.server};
  ASSERT_TRUE(run.list(Kind::PersistentVolumeClaim, kNs, {}));
  ASSERT_TRUE(run.get(w.web0));
  auto patched = run.patch(w.web0, PatchType::Merge, {{"metadata", {{"labels", {{"b", "2"}}}}}});
  ASSERT_TRUE(patched);
  auto after = run.get(w.web0);
  ASSERT_TRUE(after);
  EXPECT_EQ(k8s::label(*after, "b").value_or(std::nullopt).value_or(""), "2");
  EXPECT_EQ(w.gets(), 1) << "the patch's answer is the object as it now is";
  auto listed = run.list(Kind::PersistentVolumeClaim, kNs, {});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(k8s::label(listed->items[0], "b").value_or(std::nullopt).value_or(""), "2");
  EXPECT_EQ(w.lists(), 2) << "the list before the write is not the answer after it";

  // Created: its answer; a create refused (AlreadyExists): read again.
  ASSERT_TRUE(run.create(Kind::PersistentVolumeClaim, claim("data-web-1")));
  ASSERT_TRUE(run.get({Kind::PersistentVolumeClaim, kNs, "data-web-1"}));
  EXPECT_EQ(w.gets(), 1);
  ASSERT_FALSE(run.create(Kind::PersistentVolumeClaim, claim("data-web-1")));
  ASSERT_TRUE(run.get({Kind::PersistentVolumeClaim, kNs, "data-web-1"}));
  EXPECT_EQ(w.gets(), 2);
}

TEST(RunReads, AfterADeleteTheObjectIsReadAgain) {
  RunWorld w;
  Json held = claim("data-web-2");
  held["metadata"]["finalizers"] = {"kubernetes.io/pvc-protection"};
  ASSERT_TRUE(w.server.system().create(Kind::PersistentVolumeClaim, held));
  const ObjectRef ref{Kind::PersistentVolumeClaim, kNs, "data-web-2"};
  RunReads run{w.server};
  auto before = run.get(ref);
  ASSERT_TRUE(before);
  EXPECT_FALSE(k8s::is_being_deleted(*before).value_or(false));
  ASSERT_TRUE(run.remove(ref, {}));
  auto after = run.get(ref);
  ASSERT_TRUE(after);
  EXPECT_TRUE(k8s::is_being_deleted(*after).value_or(false)) << "not the read before the delete";
  EXPECT_EQ(w.gets(), 2);
}

TEST(RunReads, ErrorsOtherThanNotFoundAreNotKept) {
  RunWorld w;
  w.server.inject({.verb = Verb::Get,
                   .kind = Kind::PersistentVolumeClaim,
                   .error = KubeError{KubeErrorCode::ServerError, "etcd leader changed", {}}});
  RunReads run{w.server};
  ASSERT_FALSE(run.get(w.web0));
  ASSERT_TRUE(run.get(w.web0)) << "a failed read says nothing of the object: read again";
  EXPECT_EQ(w.gets(), 2);
}

}  // namespace
}  // namespace stsresize
