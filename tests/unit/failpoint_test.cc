// The failpoint test hook (adapters/failpoint): its syntax, and that each decorator counts only
// transition boundaries and fires exactly once, after the inner port has done the write. The
// kill is a recorder here; tests/cluster/e2e/crash_at_each_boundary.sh uses the real SIGKILL.
#include "adapters/failpoint/failpoint.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/journal/memory_journal.h"
#include "engine/annotations.h"
#include "tests/support/kube_assertions.h"

namespace stsresize::failpoint {
namespace {

TEST(Failpoint_Parse, ReadsEveryPositionAndItsCount) {
  EXPECT_EQ(parse("after-journal:1"), (Failpoint{Position::AfterJournal, 1}));
  EXPECT_EQ(parse("after-annotation:12"), (Failpoint{Position::AfterAnnotation, 12}));
  EXPECT_EQ(parse("after-annotation:1000000"), (Failpoint{Position::AfterAnnotation, 1000000}));
  EXPECT_EQ(parse("after-write:7"), (Failpoint{Position::AfterWrite, 7}));
  EXPECT_EQ(to_string(Failpoint{Position::AfterJournal, 3}), "after-journal:3");
  EXPECT_EQ(to_string(Failpoint{Position::AfterAnnotation, 2}), "after-annotation:2");
  EXPECT_EQ(to_string(Failpoint{Position::AfterWrite, 5}), "after-write:5");
  // Every position reads back what it prints.
  for (Position position :
       {Position::AfterJournal, Position::AfterAnnotation, Position::AfterWrite}) {
    const Failpoint point{position, 4};
    EXPECT_EQ(parse(to_string(point)), point) << to_string(point);
  }
}

TEST(Failpoint_Parse, EmptyMeansDisarmed) {
  auto parsed = parse("");
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_FALSE(parsed->has_value());
}

TEST(Failpoint_Parse, RefusesMalformedValuesQuotingThemAndTheSyntax) {
  for (const char* text : {"after-journal",
                           "after-journal:",
                           "after-journal:0",
                           "after-journal:-1",
                           "after-journal:+1",
                           "after-journal:x",
                           "after-journal:1x",
                           "after-journal: 1",
                           "after-journal:1:2",
                           "after-journal:1000001",
                           "after-journal:99999999999999999999",
                           "before-journal:1",
                           "AFTER-JOURNAL:1",
                           ":1",
                           "1",
                           "after-write",
                           "after-write:0",
                           "after-write:x",
                           "after-writes:1",
                           "after-Write:1"}) {
    auto parsed = parse(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().find(std::string{"STSRESIZE_FAILPOINT='"} + text + "'"),
              std::string::npos)
        << parsed.error();
    EXPECT_NE(parsed.error().find("after-journal:N, after-annotation:N or after-write:N"),
              std::string::npos)
        << parsed.error();
  }
}

// ---- FailpointJournal

JournalRecord record(std::int64_t sequence, std::string type, Json data = Json::object()) {
  return JournalRecord{"op-1",         sequence, TimePoint{std::chrono::milliseconds{sequence}},
                       "shop",         "web",    std::move(type),
                       std::move(data)};
}

JournalRecord transition(std::int64_t sequence, std::string from, std::string to) {
  return record(sequence, "PhaseChanged", Json{{"from", from}, {"to", to}, {"event", "StepDone"}});
}

TEST(FailpointJournal, FiresOnceRightAfterTheNthTransitionIsAppended) {
  MemoryJournal inner;
  std::vector<std::string> fired;
  std::int64_t stored_when_fired = -1;
  FailpointJournal journal(inner, 2, [&](const std::string& what) {
    fired.push_back(what);
    stored_when_fired = *inner.last_sequence("op-1");
  });

  const std::vector<JournalRecord> first = {record(1, "OperationStarted"),
                                            transition(2, "Pending", "Planning")};
  ASSERT_OK(journal.append(first));
  ASSERT_OK(journal.append(std::vector{record(3, "ActionIntended")}));
  EXPECT_EQ(journal.boundaries_seen(), 1);
  EXPECT_TRUE(fired.empty());

  ASSERT_OK(journal.append(std::vector{transition(4, "Planning", "ScalingDown")}));
  ASSERT_EQ(fired, std::vector<std::string>{"after-journal:2 operation op-1: Planning -> "
                                            "ScalingDown"});
  EXPECT_EQ(stored_when_fired, 4) << "fired before the transition was stored";

  ASSERT_OK(journal.append(std::vector{transition(5, "ScalingDown", "BackingUp")}));
  EXPECT_EQ(fired.size(), 1u);
  EXPECT_EQ(journal.boundaries_seen(), 3);
}

TEST(FailpointJournal, ARefusedAppendIsNoBoundary) {
  MemoryJournal inner;
  int fired = 0;
  FailpointJournal journal(inner, 1, [&](const std::string&) { ++fired; });

  auto refused = journal.append(std::vector{transition(7, "Pending", "Planning")});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, JournalErrorCode::SequenceConflict);
  EXPECT_EQ(journal.boundaries_seen(), 0);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(*journal.last_sequence("op-1"), 0);
}

// ---- FailpointKubernetes

class FailpointKubernetesTest : public ::testing::Test {
 protected:
  ObjectRef web{Kind::StatefulSet, "shop", "web"};

  void SetUp() override {
    const Json sts = Json::parse(R"({
      "apiVersion": "apps/v1", "kind": "StatefulSet",
      "metadata": {"name": "web", "namespace": "shop"},
      "spec": {"replicas": 3, "serviceName": "web",
               "selector": {"matchLabels": {"app": "web"}},
               "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}})");
    ASSERT_OK(inner.create(Kind::StatefulSet, sts));
  }

  // The live StatefulSet with the phase annotation set (nullopt: removed) and `other` as an
  // unrelated annotation, written through `kube`.
  KubeResult<Json> write_phase(Kubernetes& kube, std::optional<std::string> phase,
                               std::string other = "x") {
    Json sts = *inner.get(web);
    Json& annotations = sts["metadata"]["annotations"];
    if (!annotations.is_object()) annotations = Json::object();
    if (phase) {
      annotations[std::string{kPhaseAnnotation}] = *phase;
    } else {
      annotations.erase(std::string{kPhaseAnnotation});
    }
    annotations["other"] = other;
    return kube.update(Kind::StatefulSet, sts);
  }

  ManualClock clock;
  FakeKubernetes inner{clock};
};

TEST_F(FailpointKubernetesTest, FiresOnceRightAfterTheNthWriteThatMovesThePhase) {
  std::vector<std::string> fired;
  std::string live_phase_when_fired;
  FailpointKubernetes kube(inner, 2, [&](const std::string& what) {
    fired.push_back(what);
    live_phase_when_fired =
        inner.get(web)->at("metadata").at("annotations").at("stsresize.dev/phase");
  });
  ASSERT_OK(kube.get(web));

  ASSERT_OK(write_phase(kube, "UpdatingTemplate"));
  ASSERT_OK(write_phase(kube, "UpdatingTemplate", "same phase, another annotation"));
  EXPECT_EQ(kube.boundaries_seen(), 1);
  EXPECT_TRUE(fired.empty());

  ASSERT_OK(write_phase(kube, "Planning"));
  ASSERT_EQ(fired, std::vector<std::string>{
                       "after-annotation:2 StatefulSet shop/web: UpdatingTemplate -> Planning"});
  EXPECT_EQ(live_phase_when_fired, "Planning") << "fired before the annotation was written";

  ASSERT_OK(write_phase(kube, "ScalingDown"));
  EXPECT_EQ(fired.size(), 1u);
  EXPECT_EQ(kube.boundaries_seen(), 3);
}

TEST_F(FailpointKubernetesTest, RemovingThePhaseAtCompletionIsABoundary) {
  std::vector<std::string> fired;
  FailpointKubernetes kube(inner, 2, [&](const std::string& what) { fired.push_back(what); });
  ASSERT_OK(kube.get(web));
  ASSERT_OK(write_phase(kube, "CleaningUp"));
  ASSERT_OK(write_phase(kube, std::nullopt));
  EXPECT_EQ(fired, std::vector<std::string>{
                       "after-annotation:2 StatefulSet shop/web: CleaningUp -> (none)"});
}

TEST_F(FailpointKubernetesTest, PatchesCountLikeUpdates) {
  std::vector<std::string> fired;
  FailpointKubernetes kube(inner, 1, [&](const std::string& what) { fired.push_back(what); });
  ASSERT_OK(kube.get(web));
  ASSERT_OK(
      kube.patch(web, PatchType::Merge,
                 Json{{"metadata", {{"annotations", {{"stsresize.dev/phase", "Planning"}}}}}}));
  EXPECT_EQ(fired, std::vector<std::string>{"after-annotation:1 StatefulSet shop/web: (none) -> "
                                            "Planning"});
}

TEST_F(FailpointKubernetesTest, UnreadStatefulSetsCreatesFailedWritesAndOtherKindsAreNoBoundaries) {
  int fired = 0;
  FailpointKubernetes kube(inner, 1, [&](const std::string&) { ++fired; });

  // Never read by this process: the first write only teaches it the phase.
  ASSERT_OK(write_phase(kube, "Planning"));
  EXPECT_EQ(fired, 0);

  // A write the server refused changed nothing.
  Json stale = *inner.get(web);
  ASSERT_OK(write_phase(inner, "Planning", "someone else"));
  stale["metadata"]["annotations"]["stsresize.dev/phase"] = "ScalingDown";
  EXPECT_CODE(kube.update(Kind::StatefulSet, stale), KubeErrorCode::Conflict);
  EXPECT_EQ(fired, 0);

  // A re-create carries the phase it was deleted with; it is not a transition.
  ASSERT_OK(kube.remove(web, DeleteOptions{Propagation::Orphan, {}, {}, {}}));
  Json recreated = stale;
  recreated["metadata"].erase("resourceVersion");
  recreated["metadata"].erase("uid");
  recreated["metadata"].erase("creationTimestamp");
  recreated["metadata"]["annotations"]["stsresize.dev/phase"] = "UpdatingTemplate";
  ASSERT_OK(kube.create(Kind::StatefulSet, recreated));
  EXPECT_EQ(fired, 0);

  // Same annotation on another kind.
  Json config_map = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata",
                      {{"name", "web"},
                       {"namespace", "shop"},
                       {"annotations", {{"stsresize.dev/phase", "Planning"}}}}}};
  auto created = kube.create(Kind::ConfigMap, config_map);
  ASSERT_OK(created);
  ASSERT_OK(kube.get(ObjectRef{Kind::ConfigMap, "shop", "web"}));
  Json changed = *created;
  changed["metadata"]["annotations"]["stsresize.dev/phase"] = "ScalingDown";
  ASSERT_OK(kube.update(Kind::ConfigMap, changed));
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(kube.boundaries_seen(), 0);

  // And the re-created StatefulSet's next phase is one.
  ASSERT_OK(write_phase(kube, "Planning"));
  EXPECT_EQ(fired, 1);
}

// ---- FailpointWrites

class FailpointWritesTest : public FailpointKubernetesTest {
 protected:
  Json pod(const std::string& name) {
    return Json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "shop"}}},
                {"spec", {{"containers", Json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
  }
  Json claim(const std::string& name) {
    return Json{{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", name}, {"namespace", "shop"}}},
                {"spec",
                 {{"accessModes", Json::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  }
};

TEST_F(FailpointWritesTest, FiresOnceRightAfterTheNthSuccessfulWriteOfAnyKind) {
  std::vector<std::string> fired;
  bool pod_there_when_fired = false;
  FailpointWrites kube(inner, 3, [&](const std::string& what) {
    fired.push_back(what);
    pod_there_when_fired = inner.get(ObjectRef{Kind::Pod, "shop", "web-2"}).has_value();
  });
  // Reads are no writes.
  ASSERT_OK(kube.get(web));
  ASSERT_OK(kube.list(Kind::Pod, "shop"));
  ASSERT_OK(kube.get_scale(web));

  ASSERT_OK(kube.create(Kind::PersistentVolumeClaim, claim("data-web-2")));  // 1
  ASSERT_OK(write_phase(kube, "Draining"));                                  // 2
  EXPECT_TRUE(fired.empty());
  EXPECT_EQ(kube.boundaries_seen(), 2);
  ASSERT_OK(kube.create(Kind::Pod, pod("web-2")));  // 3
  ASSERT_EQ(fired, std::vector<std::string>{"after-write:3 create Pod shop/web-2"});
  EXPECT_TRUE(pod_there_when_fired) << "fired before the pod was created";

  ASSERT_OK(kube.remove(ObjectRef{Kind::Pod, "shop", "web-2"}));  // 4
  EXPECT_EQ(fired.size(), 1u);
  EXPECT_EQ(kube.boundaries_seen(), 4);
}

TEST_F(FailpointWritesTest, EachVerbIsOneWriteAndSaysWhatItWrote) {
  const ObjectRef claim_ref{Kind::PersistentVolumeClaim, "shop", "data-web-2"};
  ASSERT_OK(inner.create(Kind::PersistentVolumeClaim, claim("data-web-2")));
  std::vector<std::string> fired;
  auto at = [&](std::int64_t n) {
    return FailpointWrites(inner, n, [&](const std::string& what) { fired.push_back(what); });
  };
  {
    auto kube = at(1);
    ASSERT_OK(kube.remove(claim_ref));
  }
  {
    auto kube = at(1);
    Json sts = *inner.get(web);
    sts["metadata"]["finalizers"] = Json::array({"statefulsets.kubernetes.io/scaledown"});
    ASSERT_OK(kube.update(Kind::StatefulSet, sts));
  }
  {
    auto kube = at(1);
    ASSERT_OK(kube.patch(
        web, PatchType::Merge,
        Json{{"metadata", {{"annotations", {{"stsresize.dev/phase", "DeletingClaims"}}}}}}));
  }
  {
    auto kube = at(1);
    ASSERT_OK(kube.update_status(Kind::StatefulSet, *inner.get(web)));
  }
  {
    auto kube = at(1);
    ASSERT_OK(kube.update_scale(web, 1, ""));
  }
  EXPECT_EQ(fired, (std::vector<std::string>{
                       "after-write:1 delete PersistentVolumeClaim shop/data-web-2",
                       "after-write:1 update StatefulSet shop/web (phase (none), finalizers "
                       "statefulsets.kubernetes.io/scaledown)",
                       "after-write:1 patch StatefulSet shop/web (phase DeletingClaims, finalizers "
                       "statefulsets.kubernetes.io/scaledown)",
                       "after-write:1 update status of StatefulSet shop/web (phase DeletingClaims, "
                       "finalizers statefulsets.kubernetes.io/scaledown)",
                       "after-write:1 update scale of StatefulSet shop/web"}));
}

TEST_F(FailpointWritesTest, EventsLeasesAndRefusedWritesAreNoBoundaries) {
  int fired = 0;
  FailpointWrites kube(inner, 1, [&](const std::string&) { ++fired; });

  const Json event = {{"apiVersion", "v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", "web.1"}, {"namespace", "shop"}}},
                      {"reason", "DrainStarted"},
                      {"involvedObject", {{"kind", "StatefulSet"}, {"name", "web"}}}};
  auto created_event = kube.create(Kind::Event, event);
  ASSERT_OK(created_event);
  ASSERT_OK(
      kube.patch(ObjectRef{Kind::Event, "shop", "web.1"}, PatchType::Merge, Json{{"count", 2}}));
  ASSERT_OK(kube.remove(ObjectRef{Kind::Event, "shop", "web.1"}));
  const Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "stsresize"}, {"namespace", "shop"}}},
                      {"spec", {{"holderIdentity", "me"}}}};
  auto created_lease = kube.create(Kind::Lease, lease);
  ASSERT_OK(created_lease);
  Json renewed = *created_lease;
  renewed["spec"]["holderIdentity"] = "me again";
  ASSERT_OK(kube.update(Kind::Lease, renewed));
  EXPECT_EQ(fired, 0);

  // Refused: the server changed nothing (AlreadyExists, NotFound, Conflict).
  Json again = *inner.get(web);
  again["metadata"].erase("resourceVersion");
  EXPECT_CODE(kube.create(Kind::StatefulSet, again), KubeErrorCode::AlreadyExists);
  EXPECT_CODE(kube.remove(ObjectRef{Kind::Pod, "shop", "web-9"}), KubeErrorCode::NotFound);
  Json stale = *inner.get(web);
  ASSERT_OK(write_phase(inner, "Draining", "someone else"));
  EXPECT_CODE(kube.update(Kind::StatefulSet, stale), KubeErrorCode::Conflict);
  EXPECT_EQ(fired, 0);
  EXPECT_EQ(kube.boundaries_seen(), 0);

  ASSERT_OK(kube.create(Kind::Pod, pod("web-2")));
  EXPECT_EQ(fired, 1);
}

// ---- the real executable

TEST(FailpointBinary, MalformedValueExitsTwoBeforeAnythingStarts) {
  const std::string command = std::string{"STSRESIZE_FAILPOINT=after-journal:first '"} +
                              STSRESIZE_BINARY +
                              "' run --kubeconfig /nonexistent --journal /nonexistent/j.db 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  std::size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), read);
  }
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 2) << output;
  EXPECT_NE(output.find("STSRESIZE_FAILPOINT='after-journal:first': N is not a whole number"),
            std::string::npos)
      << output;
  // The failpoint is checked first: the kubeconfig was never looked at.
  EXPECT_EQ(output.find("nonexistent"), std::string::npos) << output;
}

}  // namespace
}  // namespace stsresize::failpoint
