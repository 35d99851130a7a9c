#pragma once
// Copy progress, for people. The copy Job has no API rights: it only writes rsync's progress to
// its log (engine/copy_job.cc progress_lines), which is read through the API server
// (pods/log, the last lines only) and parsed (engine/copy_progress.h).
//
// Every `interval` the leader reads each running copy pod's log. Then:
//   - /metrics: stsresize_copy_progress_* gauges, one set per copy running;
//   - an Event CopyProgress on the StatefulSet at each tenth of a copy reached, and when it goes
//     on to its proof.
// Cost: per copy running, one GET of its log per interval (6 requests a minute at the default
// 10 s), and at most 11 Events per copy; the pods and Jobs come from the controller's caches.
// `stsresize status` and `describe` read the same logs themselves when they are run
// (running_copies and read_copy_progress below), with the rights of whoever runs them. Nothing
// here decides anything: a log that cannot be read is skipped (logged at debug).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/metrics/metrics.h"
#include "engine/copy_progress.h"
#include "engine/ports/event_recorder.h"
#include "engine/ports/kubernetes.h"
#include "engine/ports/pod_logs.h"

namespace stsresize {

// A copy Job's pod that runs, as its labels and volumes say.
struct RunningCopy {
  std::string ns;
  std::string pod;
  std::string job;                // label job-name
  std::string statefulset_label;  // label stsresize.dev/statefulset (may be shortened)
  std::string purpose;            // "backup", "restore" or "pre-copy"
  std::string claim;              // the claim it copies: its volume "source"
};
// The running copy pods among `pods` (a list's items), in their order.
std::vector<RunningCopy> running_copies(const std::vector<Json>& pods);
// Its progress from the end of its log; nullopt when rsync has said nothing yet.
KubeResult<std::optional<CopyProgress>> read_copy_progress(PodLogs& logs, const RunningCopy& copy,
                                                           int tail_lines = 32);

struct CopyProgressOptions {
  std::string ns;  // "" every namespace
  Duration interval = std::chrono::seconds{10};
  // The last progress line is among them: after it come at most the proof's lines, or the
  // pre-copy's --stats (about 20 lines).
  int tail_lines = 32;
};

class CopyProgressWatcher {
 public:
  // `reads`: pods and Jobs (the controller's caches); `active`: whether to read at all (the
  // controller works: it leads).
  CopyProgressWatcher(
      Kubernetes& reads, PodLogs& logs, EventRecorder& events, CopyProgressOptions options,
      std::function<bool()> active = [] { return true; });
  ~CopyProgressWatcher();  // stop()

  // One round, as the thread does it every interval.
  void poll_once();
  void start();
  void stop();
  void export_metrics(ControllerMetrics& metrics);

  struct Copy {
    std::string ns, statefulset, job, claim, purpose;
    CopyProgress progress;
    int tenth_reported = -1;  // the last tenth an Event said (per pass)
    int pass_reported = -1;
  };
  std::map<std::string, Copy> copies() const;  // by pod uid, for tests

 private:
  Kubernetes& reads_;
  PodLogs& logs_;
  EventRecorder& events_;
  CopyProgressOptions options_;
  std::function<bool()> active_;

  mutable std::mutex mutex_;
  std::map<std::string, Copy> copies_;  // pod uid → the copy it runs
  std::jthread thread_;
  std::condition_variable_any wake_;
};

}  // namespace stsresize
