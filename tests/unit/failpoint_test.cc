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

TEST(Failpoint_Parse, ReadsBothPositionsAndTheirCount) {
  EXPECT_EQ(parse("after-journal:1"), (Failpoint{Position::AfterJournal, 1}));
  EXPECT_EQ(parse("after-annotation:12"), (Failpoint{Position::AfterAnnotation, 12}));
  EXPECT_EQ(parse("after-annotation:1000000"), (Failpoint{Position::AfterAnnotation, 1000000}));
  EXPECT_EQ(to_string(Failpoint{Position::AfterJournal, 3}), "after-journal:3");
}

TEST(Failpoint_Parse, EmptyMeansDisarmed) {
  auto parsed = parse("");
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_FALSE(parsed->has_value());
}

TEST(Failpoint_Parse, RefusesMalformedValuesQuotingThemAndTheSyntax) {
  for (const char* text :
       {"after-journal", "after-journal:", "after-journal:0", "after-journal:-1",
        "after-journal:+1", "after-journal:x", "after-journal:1x", "after-journal: 1",
        "after-journal:1:2", "after-journal:1000001", "after-journal:99999999999999999999",
        "before-journal:1", "AFTER-JOURNAL:1", ":1", "1"}) {
    auto parsed = parse(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().find(std::string{"STSRESIZE_FAILPOINT='"} + text + "'"),
              std::string::npos)
        << parsed.error();
    EXPECT_NE(parsed.error().find("after-journal:N or after-annotation:N"), std::string::npos)
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
