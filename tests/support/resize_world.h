#pragma once
// A whole simulated cluster with one StatefulSet to resize: "shop/web", 3 replicas, templates
// `data` and `logs`, pods Ready, every claim with its own file contents; then the templates
// raised (as a user's orphan-delete + re-create with bigger templates would leave it), or, with
// ResizeTrigger::Request, the stsresize.dev/resize annotation asking for the bigger size.
#include <map>
#include <memory>
#include <string>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "adapters/fake/recording_event_recorder.h"
#include "adapters/fake/simulated_cluster.h"
#include "adapters/journal/memory_journal.h"
#include "engine/annotations.h"
#include "engine/naming.h"

namespace stsresize::testing {

inline constexpr const char* kNs = "shop";
inline constexpr const char* kSts = "web";
inline constexpr int kReplicas = 3;

enum class ResizeTrigger { Template, Request };

struct ResizeWorld {
  ManualClock clock;
  FakeKubernetes kube{clock};
  SimulatedCluster cluster{kube};
  RecordingEventRecorder events;
  std::map<std::string, VolumeFiles> original_files;  // by claim name

  std::vector<std::string> claim_names() const {
    std::vector<std::string> names;
    for (const char* tmpl : {"data", "logs"}) {
      for (int i = 0; i < kReplicas; ++i) names.push_back(naming::claim_name(tmpl, kSts, i));
    }
    return names;
  }
  ObjectRef claim(const std::string& name) const {
    return ObjectRef{Kind::PersistentVolumeClaim, kNs, name};
  }
  ObjectRef sts() const { return ObjectRef{Kind::StatefulSet, kNs, kSts}; }
  Json live_sts() const { return *kube.get_raw(sts()); }

  static Json claim_template(const std::string& name, const std::string& size,
                             const std::string& storage_class) {
    return Json{{"metadata", {{"name", name}}},
                {"spec",
                 {{"accessModes", {"ReadWriteOnce"}},
                  {"storageClassName", storage_class},
                  {"resources", {{"requests", {{"storage", size}}}}}}}};
  }

  // Builds the cluster; the templates (or the request annotation) ask for `to_size` afterwards.
  void seed(bool expandable, const std::string& to_size = "2Gi",
            ResizeTrigger trigger = ResizeTrigger::Template) {
    kube.system().create(Kind::StorageClass, Json{{"apiVersion", "storage.k8s.io/v1"},
                                                  {"kind", "StorageClass"},
                                                  {"metadata", {{"name", "standard"}}},
                                                  {"provisioner", "csi.example.com"},
                                                  {"reclaimPolicy", "Delete"},
                                                  {"allowVolumeExpansion", expandable}});
    Json sts = {
        {"apiVersion", "apps/v1"},
        {"kind", "StatefulSet"},
        {"metadata", {{"name", kSts}, {"namespace", kNs}, {"labels", {{"app", "web"}}}}},
        {"spec",
         {{"replicas", kReplicas},
          {"serviceName", kSts},
          {"podManagementPolicy", "Parallel"},
          {"selector", {{"matchLabels", {{"app", "web"}}}}},
          {"template",
           {{"metadata", {{"labels", {{"app", "web"}}}}},
            {"spec",
             {{"containers",
               Json::array({{{"name", "app"},
                             {"image", "nginx"},
                             {"volumeMounts",
                              Json::array({{{"name", "data"}, {"mountPath", "/data"}},
                                           {{"name", "logs"}, {"mountPath", "/logs"}}})}}})}}}}},
          {"volumeClaimTemplates", Json::array({claim_template("data", "1Gi", "standard"),
                                                claim_template("logs", "1Gi", "standard")})}}}};
    kube.system().create(Kind::StatefulSet, sts);
    settle(10);
    for (const std::string& name : claim_names()) {
      VolumeFiles files{{"app/" + name + ".db", "rows of " + name},
                        {"README", "volume " + name},
                        {"nested/deep/file.bin", std::string(100 + name.size(), 'x')}};
      for (const auto& [path, bytes] : files) cluster.write_file(claim(name), path, bytes);
      original_files[name] = files;
    }
    if (trigger == ResizeTrigger::Request) {
      request(Json{{"data", {{"storage", to_size}}}, {"logs", {{"storage", to_size}}}}.dump());
      return;
    }
    kube.mutate_raw(sts_ref(), [&](Json& live) {
      for (Json& tmpl : live["spec"]["volumeClaimTemplates"]) {
        tmpl["spec"]["resources"]["requests"]["storage"] = to_size;
      }
    });
  }

  // The user sets the stsresize.dev/resize annotation to `text`.
  void request(const std::string& text) {
    kube.mutate_raw(sts_ref(), [&](Json& live) {
      live["metadata"]["annotations"]["stsresize.dev/resize"] = text;
    });
  }
  ObjectRef sts_ref() const { return sts(); }

  void settle(int ticks) {
    for (int i = 0; i < ticks; ++i) {
      cluster.tick();
      clock.advance(std::chrono::seconds{1});
    }
  }

  int ready_replicas() const {
    const Json s = live_sts();
    return s.contains("status") ? s["status"].value("readyReplicas", 0) : 0;
  }
};

}  // namespace stsresize::testing
