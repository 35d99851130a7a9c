#include "adapters/fake/simulated_cluster.h"

#include <openssl/evp.h>

#include <algorithm>
#include <set>
#include <vector>

#include "adapters/fake/simulation_support.h"
#include "engine/measure_job.h"
#include "engine/vocabulary.h"

namespace stsresize {
namespace {

constexpr Kind kAllKinds[] = {Kind::StatefulSet,
                              Kind::PersistentVolumeClaim,
                              Kind::PersistentVolume,
                              Kind::Job,
                              Kind::Pod,
                              Kind::StorageClass,
                              Kind::Event,
                              Kind::ConfigMap,
                              Kind::Lease,
                              Kind::PodDisruptionBudget,
                              Kind::Node};

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

bool is_copy_pod(const std::map<std::string, VolumeFiles*>& volumes) {
  return volumes.contains("source") && volumes.contains("destination");
}

bool is_pre_copy_pod(const Json& pod) {
  return sim::text(pod, {"metadata", "labels", kPurposeLabel.data()}) == kPreCopyPurpose;
}

bool is_measure_pod(const Json& pod, const std::map<std::string, VolumeFiles*>& volumes) {
  return volumes.contains("source") && !volumes.contains("destination") &&
         sim::text(pod, {"metadata", "labels", kPurposeLabel.data()}) == kMeasurePurpose;
}

// Flips one bit of the first non-empty file, or adds a stray byte to an empty tree: either
// way the destination no longer equals the source.
void corrupt(VolumeFiles& files) {
  for (auto& [path, bytes] : files) {
    if (!bytes.empty()) {
      bytes[0] = static_cast<char>(bytes[0] ^ 0x01);
      return;
    }
  }
  files["stray"] = "x";
}

std::string container_env(const Json& pod, std::string_view name) {
  const Json& containers = sim::at(pod, {"spec", "containers"});
  if (!containers.is_array() || containers.empty()) return "";
  const Json& env = containers[0].value("env", Json::array());
  for (const Json& var : env) {
    if (var.value("name", "") == name) return var.value("value", "");
  }
  return "";
}

std::int64_t tree_bytes(const VolumeFiles& files) {
  std::int64_t bytes = 0;
  for (const auto& [path, content] : files) bytes += static_cast<std::int64_t>(content.size());
  return bytes;
}

// The measure Job (engine/measure_job.h): a simulated tree takes on disk what its files hold.
JobRun measure(const Json& pod, std::map<std::string, VolumeFiles*>& volumes) {
  const VolumeFiles& source = *volumes.at("source");
  const std::int64_t bytes = tree_bytes(source);
  (void)pod;
  return JobRun{
      0, format_volume_usage(VolumeUsage{static_cast<std::int64_t>(source.size()), bytes, bytes})};
}

JobRun copy(const Json& pod, std::map<std::string, VolumeFiles*>& volumes, bool corrupting) {
  if (is_measure_pod(pod, volumes)) return measure(pod, volumes);
  if (!is_copy_pod(volumes)) return JobRun{};
  const VolumeFiles& source = *volumes.at("source");
  VolumeFiles& destination = *volumes.at("destination");
  // The script's check before rsync (engine/copy_job.h): the destination claim's size.
  if (const std::string room = container_env(pod, "STSRESIZE_DESTINATION_BYTES"); !room.empty()) {
    if (tree_bytes(source) > std::stoll(room)) {
      return JobRun{kDoesNotFitExitCode, "stsresize-copy: does not fit: /source holds " +
                                             std::to_string(tree_bytes(source)) +
                                             " bytes, /destination has room for " + room};
    }
  }
  destination = source;  // rsync --delete: the destination becomes equal
  if (is_pre_copy_pod(pod)) {
    // One pass; the source does not change while a simulated Job runs.
    return JobRun{0, format_pre_copy_result(PreCopyResult{1, tree_bytes(source)})};
  }
  if (corrupting) corrupt(destination);
  const CopySummary summary{summarise_tree(source), summarise_tree(destination)};
  return JobRun{summary.matches() ? 0 : 3, format_copy_summary(summary)};
}

}  // namespace

TreeSummary summarise_tree(const VolumeFiles& files) {
  std::vector<std::string> lines;
  TreeSummary summary;
  for (const auto& [path, bytes] : files) {
    ++summary.files;
    summary.bytes += static_cast<std::int64_t>(bytes.size());
    const std::string relative = path.starts_with("/") ? path.substr(1) : path;
    lines.push_back(sha256_hex(bytes) + "  ./" + relative + "\n");
  }
  std::ranges::sort(lines);  // LC_ALL=C sort: bytewise
  std::string all;
  for (const std::string& line : lines) all += line;
  summary.digest = sha256_hex(all);
  return summary;
}

JobRun run_copy_job(const Json& pod, std::map<std::string, VolumeFiles*>& volumes) {
  return copy(pod, volumes, false);
}

SimulatedCluster::SimulatedCluster(FakeKubernetes& kube) : kube_(kube) {}

void SimulatedCluster::tick() {
  collect_garbage();
  protect_and_reclaim_volumes();
  bind_claims();
  expand_volumes();
  run_kubelet();
  sync_jobs();
  sync_statefulsets();
}

void SimulatedCluster::tick(int times) {
  for (int i = 0; i < times; ++i) tick();
}

// An owner being deleted with the API server's "orphan" finalizer loses it once its dependents
// no longer name it; one with "foregroundDeletion" once its dependents are gone (each deleted in
// the background here; blockOwnerDeletion is not told apart).
void SimulatedCluster::finish_propagation() {
  for (Kind kind : kAllKinds) {
    for (Json owner : kube_.list_raw(kind)) {
      if (!sim::is_deleting(owner)) continue;
      const bool orphan = sim::has_finalizer(owner, "orphan");
      const bool foreground = sim::has_finalizer(owner, "foregroundDeletion");
      if (!orphan && !foreground) continue;
      const std::string uid = sim::text(owner, {"metadata", "uid"});
      bool dependents_left = false;
      for (Kind dependent_kind : kAllKinds) {
        for (Json dependent : kube_.list_raw(dependent_kind)) {
          if (!sim::has_owner(dependent, uid)) continue;
          if (orphan) {
            Json kept = Json::array();
            for (const Json& ref : dependent["metadata"]["ownerReferences"]) {
              if (ref.value("uid", "") != uid) kept.push_back(ref);
            }
            dependent["metadata"]["ownerReferences"] = std::move(kept);
            (void)kube_.system().update(dependent_kind, dependent);
          } else {
            dependents_left = true;
            if (sim::is_deleting(dependent)) continue;
            DeleteOptions background;
            background.propagation = Propagation::Background;
            (void)kube_.system().remove(ref_of(dependent_kind, dependent), background);
          }
        }
      }
      if (dependents_left) continue;
      Json current = owner;
      sim::remove_finalizer(current, orphan ? "orphan" : "foregroundDeletion");
      (void)kube_.system().update(kind, current);
    }
  }
}

void SimulatedCluster::collect_garbage() {
  finish_propagation();
  std::set<std::string> live;
  for (Kind kind : kAllKinds) {
    for (const Json& object : kube_.list_raw(kind))
      live.insert(sim::text(object, {"metadata", "uid"}));
  }
  for (Kind kind : kAllKinds) {
    for (const Json& object : kube_.list_raw(kind)) {
      const Json& owners = sim::at(object, {"metadata", "ownerReferences"});
      if (!owners.is_array() || owners.empty() || sim::is_deleting(object)) continue;
      const bool orphaned = std::ranges::none_of(owners, [&](const Json& owner) {
        return owner.is_object() && live.contains(owner.value("uid", ""));
      });
      if (!orphaned) continue;
      DeleteOptions background;
      background.propagation = Propagation::Background;
      (void)kube_.system().remove(ref_of(kind, object), background);
    }
  }
}

std::optional<std::string> SimulatedCluster::bound_volume(const std::string& ns,
                                                          const std::string& claim) const {
  auto pvc = kube_.get_raw({Kind::PersistentVolumeClaim, ns, claim});
  if (!pvc || sim::text(*pvc, {"status", "phase"}) != "Bound") return std::nullopt;
  const std::string volume = sim::text(*pvc, {"spec", "volumeName"});
  if (volume.empty() || !volumes_.contains(volume)) return std::nullopt;
  return volume;
}

std::optional<VolumeFiles> SimulatedCluster::volume_files(const ObjectRef& claim) const {
  auto volume = bound_volume(claim.ns, claim.name);
  if (!volume) return std::nullopt;
  return volumes_.at(*volume);
}

bool SimulatedCluster::write_file(const ObjectRef& claim, const std::string& path,
                                  const std::string& bytes) {
  auto volume = bound_volume(claim.ns, claim.name);
  if (!volume) return false;
  volumes_[*volume][path] = bytes;
  return true;
}

std::optional<VolumeFiles> SimulatedCluster::persistent_volume_files(
    const std::string& pv_name) const {
  auto it = volumes_.find(pv_name);
  if (it == volumes_.end()) return std::nullopt;
  return it->second;
}

void SimulatedCluster::fail_provisioning(const std::string& storage_class, bool failing) {
  if (failing) {
    failing_classes_.insert(storage_class);
  } else {
    failing_classes_.erase(storage_class);
  }
}

void SimulatedCluster::fail_next_job_pods(int pods, int exit_code) {
  failing_job_pods_ = pods;
  failing_exit_code_ = exit_code;
}

void SimulatedCluster::fail_next_pre_copies(int pods) {
  failing_pre_copies_ = pods;
}

void SimulatedCluster::corrupt_next_copy() {
  ++corruptions_pending_;
}

void SimulatedCluster::set_job_runner(JobRunner runner) {
  job_runner_ = std::move(runner);
  custom_runner_ = true;
}

void SimulatedCluster::set_pod_runner(PodRunner runner) {
  pod_runner_ = std::move(runner);
}

JobRun SimulatedCluster::run(const Json& pod, std::map<std::string, VolumeFiles*>& volumes) {
  if (is_pre_copy_pod(pod)) {
    if (failing_pre_copies_ > 0) {
      --failing_pre_copies_;
      return JobRun{23, "stsresize-precopy: rsync failed with exit code 23 in pass 1"};
    }
    return custom_runner_ ? job_runner_(pod, volumes) : copy(pod, volumes, false);
  }
  if (failing_job_pods_ > 0) {
    --failing_job_pods_;
    if (!is_copy_pod(volumes)) return JobRun{failing_exit_code_, ""};
    return JobRun{failing_exit_code_, "stsresize-copy: rsync failed with exit code " +
                                          std::to_string(failing_exit_code_)};
  }
  if (!custom_runner_ && corruptions_pending_ > 0 && is_copy_pod(volumes)) {
    --corruptions_pending_;
    return copy(pod, volumes, true);
  }
  return job_runner_(pod, volumes);
}

}  // namespace stsresize
