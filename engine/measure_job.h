#pragma once
// The measure Job: before a shrink, what each source claim holds, measured while its replica
// still runs (nothing is scaled down before the shrink is known to fit). It mounts the claim
// read-only at /source, on the node of the pod that uses it (a ReadWriteOnce volume can be
// mounted by two pods on one node), and writes to its termination message:
//   {"v":1,"files":N,"bytes":B,"used":U}
// files and bytes: regular files and the sum of their sizes (what rsync writes, sparse files in
// full); used: the disk space the tree takes (du -s -k, times 1024: directories, symlinks and
// the blocks of each file).
//
// The figure is a guard against a shrink that cannot work, not the proof: the application keeps
// writing until ScalingDown, so the copy Job checks again (copy_job.h, exit status 5) and rsync
// fails on a full volume; either failure scales back with every source intact.
#include <cstdint>
#include <expected>
#include <string>

#include "engine/copy_job.h"
#include "engine/json.h"
#include "engine/quantity.h"

namespace stsresize {

struct VolumeUsage {
  std::int64_t files = 0;
  std::int64_t bytes = 0;
  std::int64_t used = 0;
  friend bool operator==(const VolumeUsage&, const VolumeUsage&) = default;
};

// What a new volume must hold of `usage`: the larger of the file bytes and the disk space.
std::int64_t data_bytes(const VolumeUsage& usage);

// The part of a shrunk claim's size left free for its filesystem's own overhead (journal, inode
// tables, reserved blocks: ext4 gives a 1 GiB volume about 95% of it) and for writes between
// the measure and the copy.
inline constexpr int kShrinkHeadroomPercent = 10;

// The smallest size a claim holding `usage` may be shrunk to: data_bytes plus the headroom.
std::int64_t smallest_size(const VolumeUsage& usage);

// Strict parse of a termination message; a clear error on anything else.
std::expected<VolumeUsage, std::string> parse_volume_usage(const std::string& message);
std::string format_volume_usage(const VolumeUsage& usage);

// "700.0 MiB", "1.5 GiB", "812 bytes": for people.
std::string human_bytes(std::int64_t bytes);

struct MeasureJobRequest {
  std::string ns;
  std::string job_name;
  std::string claim;
  std::string operation_id;
  std::string statefulset;
  // The node of the pod that uses the claim ("": none runs, the scheduler places the Job), and
  // that pod's tolerations (the node may have taints only the application tolerates).
  std::string node;
  Json tolerations = Json::array();
};

// The shell script (POSIX sh as busybox ash and dash run it: find, xargs -0, stat, du).
// Exit status 0 with the usage written, else nonzero (du failed: no usage).
std::string measure_script();

// A batch/v1 Job labelled like the copy Jobs (purpose "measure"), with the copy Jobs' image,
// security context and resources (settings); pinned to request.node with a node affinity on
// the node's name when it is set; no service account token; restartPolicy Never.
Json build_measure_job(const MeasureJobRequest& request, const CopyJobSettings& settings);

}  // namespace stsresize
