// CopyProgressWatcher over the fake: which pods it reads (running copy pods only), what it
// makes of their logs (metrics per claim, an Event per tenth), and forgetting a copy once its pod
// runs no more.
#include "adapters/controller/copy_progress.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/fake/fake_pod_logs.h"
#include "adapters/fake/recording_event_recorder.h"
#include "engine/vocabulary.h"

namespace stsresize {
namespace {

Json copy_pod(const std::string& name, const std::string& job, const std::string& purpose,
              const std::string& claim, const std::string& phase) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", "shop"},
                {"labels",
                 {{"job-name", job},
                  {std::string{kPurposeLabel}, purpose},
                  {std::string{kStatefulSetLabel}, "web"}}}}},
              {"spec",
               {{"containers", {{{"name", "copy"}, {"image", "rsync"}}}},
                {"volumes",
                 {{{"name", "source"}, {"persistentVolumeClaim", {{"claimName", claim}}}},
                  {{"name", "destination"},
                   {"persistentVolumeClaim", {{"claimName", claim + "-copy"}}}}}}}},
              {"status", {{"phase", phase}}}};
}

Json copy_job(const std::string& name) {
  return Json{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", name},
                {"namespace", "shop"},
                {"annotations", {{std::string{kStatefulSetLabel}, "web"}}}}},
              {"spec",
               {{"template",
                 {{"spec",
                   {{"restartPolicy", "Never"},
                    {"containers", {{{"name", "copy"}, {"image", "rsync"}}}}}}}}}}};
}

class CopyProgressWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& [pod, job, claim] :
         {std::tuple{"backup-0-x", "data-web-0-stsresize-backup", "data-web-0"},
          std::tuple{"backup-1-x", "data-web-1-stsresize-backup", "data-web-1"}}) {
      auto made = kube_.create(Kind::Job, copy_job(job));
      ASSERT_TRUE(made) << made.error().message;
      run_pod(copy_pod(pod, job, "backup", claim, "Running"));
    }
    // Neither a copy's nor running: never read.
    run_pod(copy_pod("measure-x", "m", "measure", "data-web-0", "Running"));
    run_pod(copy_pod("done-x", "d", "restore", "data-web-0", "Succeeded"));
  }
  // Created, then its status written (a create drops the status, as the API server does).
  void run_pod(const Json& pod) {
    auto made = kube_.create(Kind::Pod, pod);
    ASSERT_TRUE(made) << made.error().message;
    Json with_status = *made;
    with_status["status"] = pod.at("status");
    auto updated = kube_.update_status(Kind::Pod, with_status);
    ASSERT_TRUE(updated) << updated.error().message;
  }
  void say(const std::string& pod, const std::string& text) {
    logs_.print({Kind::Pod, "shop", pod}, "copy", text);
  }

  ManualClock clock_;
  FakeKubernetes kube_{clock_};
  FakePodLogs logs_{kube_};
  RecordingEventRecorder events_;
  CopyProgressWatcher watcher_{kube_, logs_, events_, {.ns = "shop"}};
};

TEST_F(CopyProgressWatcherTest, ReadsRunningCopiesAndSaysEachTenthOnce) {
  say("backup-0-x",
      "stsresize-copy: rsync /source/ /destination/\n   100,000,000  10%   10.00MB/s    0:01:25  "
      "\n");
  say("backup-1-x", "stsresize-copy: rsync /source/ /destination/\n");  // nothing from rsync yet
  watcher_.poll_once();
  EXPECT_EQ(logs_.reads(), 2);  // the running copies' only
  auto copies = watcher_.copies();
  ASSERT_EQ(copies.size(), 1u);
  const auto& copy = copies.at("shop/backup-0-x");
  EXPECT_EQ(copy.claim, "data-web-0");
  EXPECT_EQ(copy.statefulset, "web");
  EXPECT_EQ(copy.progress.percent, 10);
  ASSERT_EQ(events_.with_reason("CopyProgress").size(), 1u);
  EXPECT_EQ(events_.with_reason("CopyProgress")[0].message,
            "backup data-web-0: 10% (95.4 MiB of 908.3 MiB) at 10.0 MiB/s, about 0:01:25 left");
  EXPECT_EQ(events_.with_reason("CopyProgress")[0].about,
            (ObjectRef{Kind::StatefulSet, "shop", "web"}));

  // The same tenth again: no Event; the next ones: one each, the proof too.
  say("backup-0-x", "   150,000,000  15%   10.00MB/s    0:01:20  \n");
  watcher_.poll_once();
  EXPECT_EQ(events_.with_reason("CopyProgress").size(), 1u);
  say("backup-0-x", "   350,000,000  35%   10.00MB/s    0:01:00  \n");
  say("backup-1-x", "   500,000,000  50%   10.00MB/s    0:00:50  \n");
  watcher_.poll_once();
  EXPECT_EQ(events_.with_reason("CopyProgress").size(), 3u);
  say("backup-0-x",
      "  1,000,000,000 100%   10.00MB/s    0:01:35 (xfr#1, to-chk=0/2)\n"
      "stsresize-copy: summarising /destination\n");
  watcher_.poll_once();
  ASSERT_EQ(events_.with_reason("CopyProgress").size(), 4u);
  EXPECT_EQ(events_.with_reason("CopyProgress")[3].message,
            "backup data-web-0: copied 953.7 MiB, verifying");

  // The first pod done: forgotten, its series gone.
  auto done = kube_.get({Kind::Pod, "shop", "backup-0-x"});
  ASSERT_TRUE(done);
  (*done)["status"]["phase"] = "Succeeded";
  ASSERT_TRUE(kube_.update_status(Kind::Pod, *done));
  watcher_.poll_once();
  copies = watcher_.copies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_TRUE(copies.contains("shop/backup-1-x"));

  ControllerMetrics metrics;
  watcher_.export_metrics(metrics);
  const std::string scraped = metrics.scrape();
  EXPECT_NE(scraped.find("stsresize_copy_progress_bytes{"), std::string::npos) << scraped;
  EXPECT_NE(scraped.find("claim=\"data-web-1\""), std::string::npos) << scraped;
  EXPECT_EQ(scraped.find("claim=\"data-web-0\""), std::string::npos) << scraped;
}

TEST_F(CopyProgressWatcherTest, APassOfThePreCopyStartsItsTenthsAgain) {
  ASSERT_TRUE(kube_.create(Kind::Job, copy_job("data-web-2-stsresize-pre-copy")));
  run_pod(
      copy_pod("pre-2-x", "data-web-2-stsresize-pre-copy", "pre-copy", "data-web-2", "Running"));
  say("pre-2-x",
      "stsresize-precopy: pass 1: rsync /source/ /destination/\n"
      "   900,000,000  90%   10.00MB/s    0:00:10  \n");
  watcher_.poll_once();
  say("pre-2-x",
      "stsresize-precopy: pass 2: rsync /source/ /destination/\n"
      "   200,000,000  20%   10.00MB/s    0:00:10  \n");
  watcher_.poll_once();
  std::vector<std::string> said;
  for (const RecordedEvent& event : events_.with_reason("CopyProgress")) {
    if (event.message.starts_with("pre-copy data-web-2: ")) said.push_back(event.message);
  }
  ASSERT_EQ(said.size(), 2u);
  EXPECT_TRUE(said[1].starts_with("pre-copy data-web-2: pass 2: 20%")) << said[1];
}

TEST(RunningCopies, TakesTheClaimFromTheSourceVolume) {
  const auto copies =
      running_copies({copy_pod("p", "j", "restore", "data-web-5-stsresize-backup", "Running"),
                      copy_pod("q", "j", "restore", "x", "Pending")});
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].claim, "data-web-5-stsresize-backup");
  EXPECT_EQ(copies[0].job, "j");
  EXPECT_EQ(copies[0].purpose, "restore");
}

}  // namespace
}  // namespace stsresize
