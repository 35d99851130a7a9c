#include "adapters/events/kube_event_recorder.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "adapters/clock/rfc3339.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/fake/recording_event_recorder.h"

namespace stsresize {
namespace {

class KubeEventRecorderTest : public ::testing::Test {
 protected:
  ManualClock clock;
  FakeKubernetes kube{clock};
  std::vector<KubeError> reported;
  KubeEventRecorder recorder{kube,
                             clock,
                             {.host = "stsresize-7d9f"},
                             [this](const ObjectRef&, std::string_view, const KubeError& error) {
                               reported.push_back(error);
                             }};
  const ObjectRef web{Kind::StatefulSet, "shop", "web"};
  Json web_object;

  void SetUp() override {
    const Json labels = {{"app", "web"}};
    const Json containers = Json::array({{{"name", "c"}, {"image", "i"}}});
    Json statefulset;
    statefulset["metadata"] = {{"name", "web"}, {"namespace", "shop"}};
    statefulset["spec"]["selector"]["matchLabels"] = labels;
    statefulset["spec"]["template"]["metadata"]["labels"] = labels;
    statefulset["spec"]["template"]["spec"]["containers"] = containers;
    auto created = kube.system().create(Kind::StatefulSet, statefulset);
    ASSERT_TRUE(created) << created.error().message;
    web_object = *created;
  }

  std::vector<Json> events() { return kube.list_raw(Kind::Event); }
};

TEST_F(KubeEventRecorderTest, CreatesAnEventThatKubectlDescribeFinds) {
  recorder.record(web, EventSeverity::Warning, "BackupFailed", "copy Job failed: exit 23");
  const auto all = events();
  ASSERT_EQ(all.size(), 1u);
  const Json& event = all[0];
  EXPECT_EQ(event["metadata"]["namespace"], "shop");
  EXPECT_TRUE(event["metadata"]["name"].get<std::string>().starts_with("web."));
  EXPECT_EQ(event["involvedObject"]["kind"], "StatefulSet");
  EXPECT_EQ(event["involvedObject"]["namespace"], "shop");
  EXPECT_EQ(event["involvedObject"]["name"], "web");
  EXPECT_EQ(event["involvedObject"]["uid"], web_object["metadata"]["uid"]);
  EXPECT_EQ(event["involvedObject"]["apiVersion"], "apps/v1");
  EXPECT_EQ(event["reason"], "BackupFailed");
  EXPECT_EQ(event["message"], "copy Job failed: exit 23");
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["source"], (Json{{"component", "stsresize"}, {"host", "stsresize-7d9f"}}));
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], format_rfc3339(clock.now()));
  EXPECT_EQ(event["lastTimestamp"], format_rfc3339(clock.now()));
  EXPECT_EQ(recorder.failures(), 0);
}

TEST_F(KubeEventRecorderTest, TheInvolvedObjectIsReadThroughThePortItIsGiven) {
  FakeKubernetes reads{clock};
  Json elsewhere = web_object;
  elsewhere["metadata"].erase("resourceVersion");
  elsewhere["metadata"].erase("uid");
  auto held = reads.system().create(Kind::StatefulSet, elsewhere);
  ASSERT_TRUE(held) << held.error().message;
  recorder.read_objects_through(reads);
  recorder.record(web, EventSeverity::Normal, "PhaseChanged", "Planning -> ScalingDown");
  EXPECT_EQ(kube.calls(Verb::Get), 0);
  EXPECT_EQ(reads.calls(Verb::Get), 1);
  const auto all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["involvedObject"]["uid"], (*held)["metadata"]["uid"]);
  EXPECT_TRUE(reads.list_raw(Kind::Event).empty());
}

TEST_F(KubeEventRecorderTest, RepeatWithinTheWindowCountsOnTheSameEvent) {
  const std::string first = format_rfc3339(clock.now());
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting for pods");
  clock.advance(std::chrono::minutes{2});
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting for pods");
  clock.advance(std::chrono::minutes{2});
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting for pods");
  const auto all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["count"], 3);
  EXPECT_EQ(all[0]["firstTimestamp"], first);
  EXPECT_EQ(all[0]["lastTimestamp"], format_rfc3339(clock.now()));
}

TEST_F(KubeEventRecorderTest, DifferentMessageOrSeverityStartsANewSeries) {
  recorder.record(web, EventSeverity::Normal, "Phase", "scaling down");
  recorder.record(web, EventSeverity::Normal, "Phase", "backing up");
  recorder.record(web, EventSeverity::Warning, "Phase", "backing up");
  EXPECT_EQ(events().size(), 3u);
}

TEST_F(KubeEventRecorderTest, RepeatAfterTheWindowStartsANewEvent) {
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting");
  clock.advance(std::chrono::minutes{11});
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting");
  const auto all = events();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]["count"], 1);
  EXPECT_EQ(all[1]["count"], 1);
}

TEST_F(KubeEventRecorderTest, ExpiredEventIsRecreated) {
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting");
  ASSERT_TRUE(kube.system().remove(ref_of(Kind::Event, events()[0])));
  recorder.record(web, EventSeverity::Normal, "Waiting", "waiting");
  const auto all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["count"], 1);
  EXPECT_EQ(recorder.failures(), 0);
}

TEST_F(KubeEventRecorderTest, FailuresAreSwallowedCountedAndReported) {
  kube.inject({.verb = Verb::Create,
               .kind = Kind::Event,
               .error = KubeError{KubeErrorCode::Forbidden, "RBAC: cannot create events"}});
  recorder.record(web, EventSeverity::Normal, "Phase", "scaling down");
  EXPECT_TRUE(events().empty());
  EXPECT_EQ(recorder.failures(), 1);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].code, KubeErrorCode::Forbidden);

  kube.inject({.verb = Verb::Patch, .error = KubeError{KubeErrorCode::ServerError, "etcd"}});
  recorder.record(web, EventSeverity::Normal, "Phase", "scaling down");
  recorder.record(web, EventSeverity::Normal, "Phase", "scaling down");
  EXPECT_EQ(recorder.failures(), 2);
  ASSERT_EQ(events().size(), 1u);
  EXPECT_EQ(events()[0]["count"], 1) << "the failed patch did not count";
}

TEST_F(KubeEventRecorderTest, EventsOfAClusterScopedObjectGoToTheDefaultNamespace) {
  recorder.record({Kind::PersistentVolume, "", "pvc-1234"}, EventSeverity::Normal, "Kept", "x");
  const auto all = events();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["metadata"]["namespace"], "default");
  EXPECT_FALSE(all[0]["involvedObject"].contains("namespace"));
  EXPECT_FALSE(all[0]["involvedObject"].contains("uid")) << "the volume does not exist";
}

TEST_F(KubeEventRecorderTest, LongMessagesAreCutAt1024Bytes) {
  recorder.record(web, EventSeverity::Normal, "Long", std::string(5000, 'x'));
  ASSERT_EQ(events().size(), 1u);
  EXPECT_EQ(events()[0]["message"].get<std::string>().size(), 1024u);
}

TEST(RecordingEventRecorder, KeepsEventsInOrderForAssertions) {
  RecordingEventRecorder recorder;
  const ObjectRef web{Kind::StatefulSet, "shop", "web"};
  recorder.record(web, EventSeverity::Normal, "Started", "a");
  recorder.record(web, EventSeverity::Warning, "Failed", "b");
  recorder.record(web, EventSeverity::Normal, "Started", "c");
  EXPECT_EQ(recorder.events().size(), 3u);
  ASSERT_EQ(recorder.with_reason("Started").size(), 2u);
  EXPECT_EQ(recorder.with_reason("Started")[1].message, "c");
  EXPECT_TRUE(recorder.contains("Failed"));
  EXPECT_FALSE(recorder.contains("Done"));
  recorder.clear();
  EXPECT_TRUE(recorder.events().empty());
}

}  // namespace
}  // namespace stsresize
