#pragma once
// The copy Job: the one place that knows what command copies a volume and how its result is
// reported. The Job mounts the source claim at /source and the destination at /destination,
// runs rsync, then writes a JSON summary of both trees to its termination message:
//   {"v":1,"source":{"files":N,"bytes":B,"digest":"<sha256 hex>"},"destination":{...},
//    "hashed":H}
// where digest = sha256 of the sorted "sha256  ./relative/path" lines of every regular file
// (sha256sum's format, made by `openssl dgst -sha256` where the image has OpenSSL). The
// controller deletes a source only when both sides are equal. H, the bytes read to make both
// summaries, is a figure only (ARCHITECTURE.md, "The manifests").
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"

namespace stsresize {

struct TreeSummary {
  std::int64_t files = 0;
  std::int64_t bytes = 0;
  std::string digest;

  friend bool operator==(const TreeSummary&, const TreeSummary&) = default;
};

struct CopySummary {
  TreeSummary source;
  TreeSummary destination;
  // The bytes read to summarise both sides: all of both trees, or, after a pre-copy's
  // manifests, only the files changed since it. A figure, never part of the proof.
  std::optional<std::int64_t> hashed = std::nullopt;

  bool matches() const { return source == destination; }
};

// Strict parse of a termination message; a clear error on anything else (the message may be
// truncated to 4096 bytes by the kubelet: that is an error too, never a partial match).
std::expected<CopySummary, std::string> parse_copy_summary(const std::string& message);
std::string format_copy_summary(const CopySummary& summary);

// The copy container's requests and limits, as Kubernetes quantities (CPU: "100m", "0.5";
// memory: "128Mi"); empty: not set. Flags of `stsresize run`, which checks them.
struct CopyJobResources {
  // Enough to be scheduled next to busy pods; rsync and the hashing use more on an idle node.
  std::string cpu_request = "100m";
  std::string memory_request = "128Mi";
  // None: a CPU limit only throttles a copy the application is waiting for.
  std::string cpu_limit = {};
  // rsync holds the file list (about 100 bytes a file, more with -H), sort the digest lines
  // until it spills to /tmp: a bound for a runaway, far above what millions of files need.
  std::string memory_limit = "2Gi";
};

// {"requests":{...},"limits":{...}} with the values that are set; {} when none is.
Json container_resources(const CopyJobResources& resources);

// Settings a platform engineer may change (flags of `stsresize run`).
struct CopyJobSettings {
  // A tag, which may move: where the registry is reachable, give --sync-image IMAGE@sha256:...
  std::string image = "docker.io/instrumentisto/rsync-ssh:alpine3.20";
  std::vector<std::string> rsync_flags = {"-aHAX", "--delete", "--numeric-ids"};
  std::int32_t backoff_limit = 2;
  std::optional<std::int64_t> active_deadline_seconds;
  CopyJobResources resources;
  // Container securityContext. The copy must run as root to keep every file's owner, mode,
  // ACLs and extended attributes (rsync -aHAX --numeric-ids over volumes written by any uid),
  // so it cannot meet the "restricted" Pod Security level; the default meets "baseline" and
  // keeps only what a copy needs: no privilege escalation, the runtime's seccomp profile, a
  // read-only root filesystem (the script writes only to the volumes, /tmp — an emptyDir,
  // where sort(1) may spill — and the termination message), and of root's powers only chown
  // (CHOWN), reading and writing any file and setting its times and mode (DAC_OVERRIDE,
  // FOWNER), keeping set-id bits (FSETID), device nodes (MKNOD, -D of -a) and file
  // capabilities (SETFCAP: -X copies the security.capability attribute as root). Not SETUID or
  // SETGID: rsync never changes its own ids here (no daemon, no --chroot, no remote shell).
  Json security_context = Json{
      {"allowPrivilegeEscalation", false},
      {"readOnlyRootFilesystem", true},
      {"capabilities",
       {{"drop", Json::array({"ALL"})},
        {"add", Json::array({"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD", "SETFCAP"})}}},
      {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  Json pod_security_context = Json::object();
  Json node_selector = Json::object();
  Json tolerations = Json::array();
};

struct CopyJobRequest {
  std::string ns;
  std::string job_name;
  std::string source_claim;
  std::string destination_claim;
  std::string operation_id;
  std::string statefulset;
  std::string purpose;  // "backup" or "restore"
  // The destination claim's requested size when it is smaller than the source claim's (a
  // shrink): the script checks that the data fits before it copies (0: not checked; a copy into
  // a claim at least as large fails in rsync if the data does not fit after all).
  std::int64_t destination_bytes = 0;
};

// Where a Job that mounts a claim beside its replica runs: that replica's node ("" when none
// runs: the scheduler places it) and its tolerations (the node may have taints only the
// application tolerates).
struct Placement {
  std::string node;
  Json tolerations = Json::array();
};

// The copy script's exit status when the destination cannot hold the source's data.
inline constexpr int kDoesNotFitExitCode = 5;

// The shell script the container runs (POSIX sh as in busybox ash and dash; rsync, find,
// xargs -0, stat, sort, sed, and openssl or else sha256sum): rsync --info=progress2 <flags>
// /source/ /destination/ while the source is summarised, then the destination once rsync is
// done (each tree read once more, its lists in /tmp), and the summary written to
// /dev/termination-log. A pre-copy's manifests in /destination/.stsresize-pre-copy are taken
// out first, and each side's files unchanged since (same inode, size, mtime and ctime) are not
// read again but take the manifest's sha256. Exit status:
//   0      summary written, both sides equal;
//   3      summary written, the sides differ (the Job fails, and its retries fail the same way);
//   4      a side's summary failed (any of its stages, each checked on its own): no summary,
//          the termination message is "stsresize-copy: summarising failed: exit code S on
//          /source, D on /destination" (parse_copy_summary refuses it);
//   5      (kDoesNotFitExitCode) before rsync: the source's data (the larger of its file bytes
//          and its disk usage) is more than STSRESIZE_DESTINATION_BYTES or than the
//          destination's filesystem can take; the termination message is "stsresize-copy: does
//          not fit: ..." and the Job's podFailurePolicy fails it without a retry;
//   rsync's status when rsync failed: no summary, the termination message is
//          "stsresize-copy: rsync failed with exit code N" (parse_copy_summary refuses it);
//   other  the script could not go on (no scratch directory in /tmp...): no summary.
// Only regular files are summarised (symlinks, directories and metadata are rsync's job). The
// digest lines are the tool's own output (OpenSSL's with its "*" turned into sha256sum's
// second space), so the digest depends on the tool for names containing '\' or a newline; both
// sides are always summarised by the same one, so only the comparison of the two sides (and of
// two Jobs run from one image) is meaningful.
std::string copy_script(const CopyJobSettings& settings);

// The pre-copy's rsync passes: at most this many (the first copies everything, each later one
// what was written meanwhile), fewer once a pass moves at most a sixteenth of the first's bytes.
inline constexpr std::int64_t kMaxPreCopyPasses = 3;

// What a pre-copy Job writes to its termination message: {"v":1,"passes":N,"bytes":B}, the
// passes it ran and the bytes rsync transferred in all of them.
struct PreCopyResult {
  std::int64_t passes = 0;
  std::int64_t bytes = 0;
  friend bool operator==(const PreCopyResult&, const PreCopyResult&) = default;
};
std::expected<PreCopyResult, std::string> parse_pre_copy_result(const std::string& message);
std::string format_pre_copy_result(const PreCopyResult& result);

// The pre-copy Job's script (same shell subset as copy_script): rsync --stats passes of
// /source/ into /destination/ with settings.rsync_flags while the application still writes
// to /source (exit status 24, files vanished meanwhile, is not a failure), until a pass moves
// at most a sixteenth of the first pass's bytes or kMaxPreCopyPasses ran; then the
// PreCopyResult. Any other rsync failure: its exit status and "stsresize-precopy: rsync failed
// with exit code N in pass P" as the termination message. Before the result (and before that
// failure), every destination file whose modification time is from 3 s before the first pass
// began on is given time 0, so that the copy after it (rsync's quick check: size and time in
// whole seconds) copies again any file written in the same second as a pass copied it. Then, 3 s
// later, the manifests of both trees (sha256, inode, size, mtime, ctime of each file whose ctime is
// 2 s old and that did not change while it was hashed) into /destination/.stsresize-pre-copy,
// unless /source has an entry of that name; a failure there costs the copy after it a full read,
// never the result. It verifies nothing.
std::string pre_copy_script(const CopyJobSettings& settings);

// Pins a Job's pod to `node` by name (with `node_tolerations` added to the settings' own), or,
// when `node` is empty, gives it the settings' nodeSelector; the settings' tolerations always.
void place_beside(Json& pod_spec, const std::string& node, const Json& node_tolerations,
                  const CopyJobSettings& settings);

// A batch/v1 Job: labels stsresize.dev/operation=<id>, stsresize.dev/statefulset=<sts>,
// stsresize.dev/purpose=<purpose>; restartPolicy Never; the source mounted read-only, an
// emptyDir at /tmp; no service account token; command ["/bin/sh","-c",copy_script(settings)];
// the requests and limits of settings.resources that are set.
Json build_copy_job(const CopyJobRequest& request, const CopyJobSettings& settings);
// The pre-copy Job (Phase::PreCopying): build_copy_job's, running pre_copy_script, never retried
// (backoffLimit 0: BackingUp copies anyway), placed beside the replica (place_beside).
Json build_pre_copy_job(const CopyJobRequest& request, const Placement& placement,
                        const CopyJobSettings& settings);

}  // namespace stsresize
