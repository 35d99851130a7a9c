// SimulatedCluster: the kubelet, the Job controller and the StatefulSet controller. See
// simulated_cluster.h for what is and is not modelled.
#include <algorithm>
#include <charconv>
#include <set>

#include "adapters/clock/rfc3339.h"
#include "adapters/fake/simulated_cluster.h"
#include "adapters/fake/simulation_support.h"

namespace stsresize {
namespace {

std::vector<Json> owned_pods(FakeKubernetes& kube, const Json& owner) {
  std::vector<Json> pods;
  const std::string uid = sim::text(owner, {"metadata", "uid"});
  for (Json& pod : kube.list_raw(Kind::Pod, sim::text(owner, {"metadata", "namespace"}))) {
    if (sim::has_owner(pod, uid)) pods.push_back(std::move(pod));
  }
  return pods;
}

bool has_condition(const Json& object, const std::string& type) {
  const Json& conditions = sim::at(object, {"status", "conditions"});
  return conditions.is_array() && std::ranges::any_of(conditions, [&](const Json& condition) {
           return condition.value("type", "") == type && condition.value("status", "") == "True";
         });
}

std::string container_name(const Json& pod) {
  const Json& containers = sim::at(pod, {"spec", "containers"});
  return containers.is_array() && !containers.empty() ? sim::text(containers[0], {"name"}) : "";
}

// FNV-1a 32 in hex: a stand-in for the controller-revision hash of a pod template.
std::string revision_hash(const Json& pod_template) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char c : pod_template.dump()) {
    hash ^= c;
    hash *= 16777619u;
  }
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%08x", hash);
  return buffer;
}

std::optional<int> ordinal_of(const std::string& pod_name, const std::string& set_name) {
  if (!pod_name.starts_with(set_name + "-")) return std::nullopt;
  const std::string suffix = pod_name.substr(set_name.size() + 1);
  int ordinal = 0;
  auto [end, error] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), ordinal);
  if (error != std::errc{} || end != suffix.data() + suffix.size() || ordinal < 0) {
    return std::nullopt;
  }
  return ordinal;
}

}  // namespace

// ---- kubelet ----

void SimulatedCluster::run_kubelet() {
  const std::string now = format_rfc3339(kube_.clock().now());
  for (const Json& pod : kube_.list_raw(Kind::Pod)) {
    if (sim::text(pod, {"status", "phase"}) == "Running" && !sim::is_deleting(pod) &&
        running_bare_pods_.contains(sim::text(pod, {"metadata", "uid"}))) {
      run_bare_pod(pod);
    }
  }
  for (const Json& pod : kube_.list_raw(Kind::Pod)) {
    if (sim::text(pod, {"status", "phase"}) != "Pending" || sim::is_deleting(pod)) continue;
    const std::string ns = sim::text(pod, {"metadata", "namespace"});
    const auto claims = sim::pod_claims(pod);
    const bool volumes_ready = std::ranges::all_of(
        claims, [&](const auto& entry) { return bound_volume(ns, entry.second).has_value(); });
    if (!volumes_ready) continue;

    const Json& owners = sim::at(pod, {"metadata", "ownerReferences"});
    const bool job_pod = owners.is_array() && std::ranges::any_of(owners, [](const Json& owner) {
                           return owner.value("kind", "") == "Job";
                         });
    if (job_pod) {
      run_job_pod(pod);
      continue;
    }
    const std::string restart_policy = sim::text(pod, {"spec", "restartPolicy"});
    const bool bare = !owners.is_array() || owners.empty();
    if (pod_runner_ && bare && (restart_policy == "OnFailure" || restart_policy == "Never")) {
      run_bare_pod(pod);
      continue;
    }
    Json running = pod;
    running["status"] = Json{
        {"phase", "Running"},
        {"startTime", now},
        {"conditions", Json::array({sim::condition("PodScheduled", "", "", now),
                                    sim::condition("Initialized", "", "", now),
                                    sim::condition("ContainersReady", "", "", now),
                                    sim::condition("Ready", "", "", now)})},
        {"containerStatuses", Json::array({{{"name", container_name(pod)},
                                            {"ready", true},
                                            {"started", true},
                                            {"restartCount", 0},
                                            {"state", {{"running", {{"startedAt", now}}}}}}})}};
    (void)kube_.system().update_status(Kind::Pod, running);
  }
}

void SimulatedCluster::run_job_pod(const Json& pod) {
  const std::string ns = sim::text(pod, {"metadata", "namespace"});
  std::map<std::string, VolumeFiles*> volumes;
  for (const auto& [volume_name, claim] : sim::pod_claims(pod)) {
    volumes[volume_name] = &volumes_.at(*bound_volume(ns, claim));
  }
  const JobRun result = run(pod, volumes);
  const std::string now = format_rfc3339(kube_.clock().now());
  Json finished = pod;
  finished["status"] =
      Json{{"phase", result.exit_code == 0 ? "Succeeded" : "Failed"},
           {"startTime", now},
           {"conditions", Json::array({sim::condition("PodScheduled", "", "", now)})},
           {"containerStatuses",
            Json::array({{{"name", container_name(pod)},
                          {"ready", false},
                          {"started", false},
                          {"restartCount", 0},
                          {"state",
                           {{"terminated",
                             {{"exitCode", result.exit_code},
                              {"reason", result.exit_code == 0 ? "Completed" : "Error"},
                              {"message", result.termination_message},
                              {"startedAt", now},
                              {"finishedAt", now}}}}}}})}};
  (void)kube_.system().update_status(Kind::Pod, finished);
}

void SimulatedCluster::run_bare_pod(const Json& pod) {
  const std::string ns = sim::text(pod, {"metadata", "namespace"});
  const std::string uid = sim::text(pod, {"metadata", "uid"});
  std::map<std::string, VolumeFiles*> volumes;
  for (const auto& [volume_name, claim] : sim::pod_claims(pod)) {
    volumes[volume_name] = &volumes_.at(*bound_volume(ns, claim));
  }
  const std::optional<JobRun> result = pod_runner_(pod, volumes);
  const std::string now = format_rfc3339(kube_.clock().now());
  const Json& statuses = sim::at(pod, {"status", "containerStatuses"});
  int restarts =
      statuses.is_array() && !statuses.empty() ? statuses[0].value("restartCount", 0) : 0;
  const bool never = sim::text(pod, {"spec", "restartPolicy"}) == "Never";
  std::string phase = "Running";
  Json state = {{"running", {{"startedAt", now}}}};
  if (result && (result->exit_code == 0 || never)) {
    phase = result->exit_code == 0 ? "Succeeded" : "Failed";
    state = {{"terminated",
              {{"exitCode", result->exit_code},
               {"reason", result->exit_code == 0 ? "Completed" : "Error"},
               {"message", result->termination_message},
               {"startedAt", now},
               {"finishedAt", now}}}};
    running_bare_pods_.erase(uid);
  } else {
    if (result) ++restarts;  // OnFailure: the kubelet starts the container again
    running_bare_pods_.insert(uid);
  }
  Json updated = pod;
  updated["status"] =
      Json{{"phase", phase},
           {"startTime", now},
           {"conditions", Json::array({sim::condition("PodScheduled", "", "", now)})},
           {"containerStatuses", Json::array({{{"name", container_name(pod)},
                                               {"ready", phase == "Running"},
                                               {"started", phase == "Running"},
                                               {"restartCount", restarts},
                                               {"state", state}}})}};
  (void)kube_.system().update_status(Kind::Pod, updated);
}

// ---- Job controller ----

void SimulatedCluster::sync_jobs() {
  for (const Json& job : kube_.list_raw(Kind::Job)) sync_job(job);
}

void SimulatedCluster::sync_job(const Json& job) {
  if (sim::is_deleting(job) || has_condition(job, "Complete") || has_condition(job, "Failed")) {
    return;
  }
  const TimePoint now_time = kube_.clock().now();
  const std::string now = format_rfc3339(now_time);
  int active = 0, succeeded = 0, failed = 0;
  std::vector<Json> running;
  for (const Json& pod : owned_pods(kube_, job)) {
    const std::string phase = sim::text(pod, {"status", "phase"});
    if (phase == "Succeeded") {
      ++succeeded;
    } else if (phase == "Failed") {
      ++failed;
    } else if (!sim::is_deleting(pod)) {
      ++active;
      running.push_back(pod);
    }
  }
  Json status = sim::at(job, {"status"}).is_object() ? job["status"] : Json::object();
  if (!status.contains("startTime")) status["startTime"] = now;
  Json conditions = status.value("conditions", Json::array());

  auto finish = [&](const std::string& reason, const std::string& message) {
    conditions.push_back(sim::condition("FailureTarget", reason, message, now));
    conditions.push_back(sim::condition("Failed", reason, message, now));
    for (const Json& pod : running) (void)kube_.system().remove(ref_of(Kind::Pod, pod));
    active = 0;
  };
  const auto deadline = sim::at(job, {"spec", "activeDeadlineSeconds"});
  const auto started = parse_rfc3339(status["startTime"].get<std::string>());
  if (succeeded >= sim::integer(job, {"spec", "completions"}, 1)) {
    const std::string message = "Reached expected number of succeeded pods";
    conditions.push_back(sim::condition("SuccessCriteriaMet", "CompletionsReached", message, now));
    conditions.push_back(sim::condition("Complete", "CompletionsReached", message, now));
    status["completionTime"] = now;
  } else if (failed > sim::integer(job, {"spec", "backoffLimit"}, 6)) {
    finish("BackoffLimitExceeded", "Job has reached the specified backoff limit");
  } else if (deadline.is_number_integer() && started &&
             now_time - *started >= std::chrono::seconds{deadline.get<std::int64_t>()}) {
    finish("DeadlineExceeded", "Job was active longer than specified deadline");
  } else if (active == 0 && sim::at(job, {"spec", "suspend"}) != true) {
    const Json& pod_template = sim::at(job, {"spec", "template"});
    Json pod{{"metadata",
              {{"generateName", sim::text(job, {"metadata", "name"}) + "-"},
               {"namespace", sim::text(job, {"metadata", "namespace"})},
               {"labels", sim::at(pod_template, {"metadata", "labels"})},
               {"ownerReferences", Json::array({sim::controller_reference(Kind::Job, job)})}}},
             {"spec", sim::at(pod_template, {"spec"})}};
    if (pod["metadata"]["labels"].is_null()) pod["metadata"].erase("labels");
    if (kube_.system().create(Kind::Pod, pod)) active = 1;
  }
  status["active"] = active;
  status["succeeded"] = succeeded;
  status["failed"] = failed;
  status["ready"] = 0;
  status["terminating"] = 0;
  status["conditions"] = conditions;
  if (conditions.empty()) status.erase("conditions");
  if (status == job["status"]) return;
  Json updated = job;
  updated["status"] = status;
  (void)kube_.system().update_status(Kind::Job, updated);
}

// ---- StatefulSet controller ----

void SimulatedCluster::sync_statefulsets() {
  for (const Json& statefulset : kube_.list_raw(Kind::StatefulSet)) sync_statefulset(statefulset);
}

bool SimulatedCluster::ensure_claims(const Json& statefulset, int ordinal) {
  const std::string set_name = sim::text(statefulset, {"metadata", "name"});
  const std::string ns = sim::text(statefulset, {"metadata", "namespace"});
  const Json& templates = sim::at(statefulset, {"spec", "volumeClaimTemplates"});
  if (!templates.is_array()) return true;
  for (const Json& claim_template : templates) {
    const std::string template_name = sim::text(claim_template, {"metadata", "name"});
    const std::string name = template_name + "-" + set_name + "-" + std::to_string(ordinal);
    if (auto existing = kube_.get_raw({Kind::PersistentVolumeClaim, ns, name})) {
      if (sim::is_deleting(*existing)) return false;  // "pvc is being deleted": wait
      continue;  // the real controller never updates an existing claim
    }
    Json labels = sim::at(claim_template, {"metadata", "labels"});
    if (!labels.is_object()) labels = Json::object();
    const Json& selector_labels = sim::at(statefulset, {"spec", "selector", "matchLabels"});
    if (selector_labels.is_object()) labels.update(selector_labels);
    Json claim{{"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
               {"spec", sim::at(claim_template, {"spec"})}};
    const Json& annotations = sim::at(claim_template, {"metadata", "annotations"});
    if (annotations.is_object()) claim["metadata"]["annotations"] = annotations;
    if (sim::text(statefulset, {"spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted"}) ==
        "Delete") {
      claim["metadata"]["ownerReferences"] =
          Json::array({sim::controller_reference(Kind::StatefulSet, statefulset)});
    }
    if (!kube_.system().create(Kind::PersistentVolumeClaim, claim)) return false;
  }
  return true;
}

// Like the real controller's ControllerRefManager: a pod named "<set>-<ordinal>" that matches
// the selector and has no controller (its StatefulSet was deleted with propagation Orphan) is
// adopted, so a StatefulSet created again with the same selector takes its pods over instead of
// replacing them.
void SimulatedCluster::adopt_orphans(const Json& statefulset) {
  const std::string set_name = sim::text(statefulset, {"metadata", "name"});
  const Json& selector = sim::at(statefulset, {"spec", "selector", "matchLabels"});
  if (!selector.is_object() || selector.empty()) return;
  for (Json& pod : kube_.list_raw(Kind::Pod, sim::text(statefulset, {"metadata", "namespace"}))) {
    if (sim::is_deleting(pod) || !ordinal_of(sim::text(pod, {"metadata", "name"}), set_name)) {
      continue;
    }
    const Json& owners = sim::at(pod, {"metadata", "ownerReferences"});
    const bool controlled = owners.is_array() && std::ranges::any_of(owners, [](const Json& o) {
                              return o.value("controller", false);
                            });
    const Json& labels = sim::at(pod, {"metadata", "labels"});
    bool matches = labels.is_object();
    for (const auto& [key, value] : selector.items()) {
      matches = matches && labels.value(key, Json()) == value;
    }
    if (controlled || !matches) continue;
    Json adopted = pod;
    if (!owners.is_array()) adopted["metadata"]["ownerReferences"] = Json::array();
    adopted["metadata"]["ownerReferences"].push_back(
        sim::controller_reference(Kind::StatefulSet, statefulset));
    (void)kube_.system().update(Kind::Pod, adopted);
  }
}

void SimulatedCluster::sync_statefulset(const Json& statefulset) {
  if (sim::is_deleting(statefulset)) return;
  adopt_orphans(statefulset);
  const std::string set_name = sim::text(statefulset, {"metadata", "name"});
  const std::string ns = sim::text(statefulset, {"metadata", "namespace"});
  const Json& spec = sim::at(statefulset, {"spec"});
  const int replicas = static_cast<int>(sim::integer(spec, {"replicas"}, 1));
  const bool ordered = sim::text(spec, {"podManagementPolicy"}) != "Parallel";
  const Json& pod_template = sim::at(spec, {"template"});
  const std::string update_revision = set_name + "-" + revision_hash(pod_template);

  auto pods_by_ordinal = [&] {
    std::map<int, Json> pods;
    for (Json& pod : owned_pods(kube_, statefulset)) {
      if (auto ordinal = ordinal_of(sim::text(pod, {"metadata", "name"}), set_name)) {
        pods[*ordinal] = std::move(pod);
      }
    }
    return pods;
  };
  std::map<int, Json> pods = pods_by_ordinal();

  auto create_pod = [&](int ordinal) {
    const std::string name = set_name + "-" + std::to_string(ordinal);
    Json labels = sim::at(pod_template, {"metadata", "labels"});
    if (!labels.is_object()) labels = Json::object();
    labels["statefulset.kubernetes.io/pod-name"] = name;
    labels["apps.kubernetes.io/pod-index"] = std::to_string(ordinal);
    labels["controller-revision-hash"] = update_revision;
    Json pod_spec = sim::at(pod_template, {"spec"});
    pod_spec["hostname"] = name;
    if (!sim::text(spec, {"serviceName"}).empty()) pod_spec["subdomain"] = spec["serviceName"];
    // Template volumes, with those named like a claim template replaced by that claim.
    const Json& templates = sim::at(spec, {"volumeClaimTemplates"});
    std::set<std::string> claimed;
    Json volumes = Json::array();
    for (const Json& claim_template : templates.is_array() ? templates : Json::array()) {
      const std::string volume = sim::text(claim_template, {"metadata", "name"});
      claimed.insert(volume);
      volumes.push_back(
          {{"name", volume}, {"persistentVolumeClaim", {{"claimName", volume + "-" + name}}}});
    }
    for (const Json& volume : pod_spec.value("volumes", Json::array())) {
      if (!claimed.contains(volume.value("name", ""))) volumes.push_back(volume);
    }
    if (!volumes.empty()) pod_spec["volumes"] = volumes;
    Json pod{{"metadata",
              {{"name", name},
               {"namespace", ns},
               {"labels", labels},
               {"ownerReferences",
                Json::array({sim::controller_reference(Kind::StatefulSet, statefulset)})}}},
             {"spec", pod_spec}};
    const Json& annotations = sim::at(pod_template, {"metadata", "annotations"});
    if (annotations.is_object()) pod["metadata"]["annotations"] = annotations;
    return kube_.system().create(Kind::Pod, pod).has_value();
  };

  // Create missing pods below `replicas`, claims first.
  bool waiting = false;
  for (int ordinal = 0; ordinal < replicas; ++ordinal) {
    auto existing = pods.find(ordinal);
    if (existing != pods.end()) {
      if (ordered && (!sim::pod_is_ready(existing->second) || sim::is_deleting(existing->second))) {
        waiting = true;
        break;
      }
      continue;
    }
    const bool created = ensure_claims(statefulset, ordinal) && create_pod(ordinal);
    if (ordered || !created) waiting = true;
    if (ordered) break;
  }

  // Condemned pods (ordinal >= replicas) go highest first.
  std::vector<int> condemned;
  for (const auto& [ordinal, pod] : pods) {
    if (ordinal >= replicas) condemned.push_back(ordinal);
  }
  std::ranges::sort(condemned, std::greater<>{});
  // whenScaled Delete: before a condemned pod goes, its claims get it as their owner, so that
  // the garbage collector deletes them after it (updateClaimOwnerRefForSetAndPod).
  const bool claims_go_with_pods =
      sim::text(spec, {"persistentVolumeClaimRetentionPolicy", "whenScaled"}) == "Delete";
  for (int ordinal : condemned) {
    if (ordered && waiting) break;
    if (claims_go_with_pods) {
      for (const auto& [volume, claim] : sim::pod_claims(pods[ordinal])) {
        (void)volume;
        auto live = kube_.get_raw({Kind::PersistentVolumeClaim, ns, claim});
        if (!live || sim::is_deleting(*live)) continue;
        Json owned = *live;
        owned["metadata"]["ownerReferences"] =
            Json::array({sim::controller_reference(Kind::Pod, pods[ordinal])});
        (void)kube_.system().update(Kind::PersistentVolumeClaim, owned);
      }
    }
    (void)kube_.system().remove(ref_of(Kind::Pod, pods[ordinal]));
    if (ordered) {
      waiting = true;
      break;
    }
  }

  // RollingUpdate: once every pod is Ready, replace the highest one of an old revision.
  const bool rolling = sim::text(spec, {"updateStrategy", "type"}) != "OnDelete";
  if (rolling && !waiting && condemned.empty()) {
    const auto partition = sim::integer(spec, {"updateStrategy", "rollingUpdate", "partition"}, 0);
    const bool all_ready = std::ranges::all_of(
        pods, [](const auto& entry) { return sim::pod_is_ready(entry.second); });
    for (int ordinal = replicas - 1; all_ready && ordinal >= partition; --ordinal) {
      auto pod = pods.find(ordinal);
      if (pod != pods.end() &&
          sim::text(pod->second, {"metadata", "labels", "controller-revision-hash"}) !=
              update_revision) {
        (void)kube_.system().remove(ref_of(Kind::Pod, pod->second));
        break;
      }
    }
  }

  // Status, from what exists now.
  auto live = kube_.get_raw({Kind::StatefulSet, ns, set_name});
  if (!live) return;
  pods = pods_by_ordinal();
  Json status = sim::at(*live, {"status"}).is_object() ? (*live)["status"] : Json::object();
  std::string current_revision = sim::text(status, {"currentRevision"});
  if (current_revision.empty()) current_revision = update_revision;
  int ready = 0, current = 0, updated = 0;
  for (const auto& [ordinal, pod] : pods) {
    const std::string revision = sim::text(pod, {"metadata", "labels", "controller-revision-hash"});
    ready += sim::pod_is_ready(pod) ? 1 : 0;
    current += revision == current_revision ? 1 : 0;
    updated += revision == update_revision ? 1 : 0;
  }
  if (updated == replicas && std::ssize(pods) == replicas) {
    current_revision = update_revision;
    current = updated;
  }
  status["observedGeneration"] = sim::integer(*live, {"metadata", "generation"}, 1);
  status["replicas"] = std::ssize(pods);
  status["readyReplicas"] = ready;
  status["availableReplicas"] = ready;
  status["currentReplicas"] = current;
  status["updatedReplicas"] = updated;
  status["currentRevision"] = current_revision;
  status["updateRevision"] = update_revision;
  if (!status.contains("collisionCount")) status["collisionCount"] = 0;
  if (status == (*live)["status"]) return;
  Json written = *live;
  written["status"] = status;
  (void)kube_.system().update_status(Kind::StatefulSet, written);
}

}  // namespace stsresize
