#pragma once
// The copy Jobs' requests and limits as flags (--copy-job-{cpu,memory}-{request,limit}), and
// the bandwidth a copy may use (--copy-bandwidth-limit), the
// same for `run` and for `advance --apply-locally`, whose engine makes copy Jobs too: each a
// quantity (CPU in whole millicores, memory in whole bytes) or "none", checked before anything
// is sent, so that a Job the API server would refuse (422) is a usage error instead of a failed
// resize; a request above its limit likewise.
#include <expected>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/copy_job.h"

namespace stsresize::cli {

struct CopyJobFlags {
  // Quantities; empty: the engine's default (CopyJobResources), "none": not set.
  std::string cpu_request{};
  std::string memory_request{};
  std::string cpu_limit{};
  std::string memory_limit{};
  // Bytes a second each copy may move (rsync --bwlimit), a quantity; empty or "none": no limit.
  std::string bandwidth_limit{};
};

// The four options, added to `command`; returned for a caller that ties them to another flag.
std::vector<CLI::Option*> add_copy_job_flags(CLI::App& command, CopyJobFlags& flags);

std::expected<CopyJobResources, std::string> copy_job_resources(const CopyJobFlags& flags);
// The copy Jobs' rsync flags: the engine's, with --bwlimit when a bandwidth limit is given.
std::expected<std::vector<std::string>, std::string> copy_rsync_flags(const CopyJobFlags& flags);

}  // namespace stsresize::cli
