#include "adapters/app/copy_job_flags.h"

#include <optional>
#include <string_view>
#include <tuple>

#include "engine/quantity.h"

namespace stsresize::cli {

std::vector<CLI::Option*> add_copy_job_flags(CLI::App& command, CopyJobFlags& flags) {
  std::vector<CLI::Option*> options;
  const CopyJobResources defaults;
  const auto or_none = [](const std::string& value) { return value.empty() ? "none" : value; };
  options.push_back(command.add_option(
      "--copy-job-cpu-request", flags.cpu_request,
      "CPU request of the copy Jobs, or none (default: " + or_none(defaults.cpu_request) + ")"));
  options.push_back(command.add_option("--copy-job-memory-request", flags.memory_request,
                                       "Memory request of the copy Jobs, or none (default: " +
                                           or_none(defaults.memory_request) + ")"));
  options.push_back(command.add_option(
      "--copy-job-cpu-limit", flags.cpu_limit,
      "CPU limit of the copy Jobs, or none (default: " + or_none(defaults.cpu_limit) + ")"));
  options.push_back(command.add_option(
      "--copy-job-memory-limit", flags.memory_limit,
      "Memory limit of the copy Jobs, or none (default: " + or_none(defaults.memory_limit) + ")"));
  options.push_back(command.add_option(
      "--copy-bandwidth-limit", flags.bandwidth_limit,
      "Bytes a second each copy may read and write (rsync --bwlimit), e.g. 100Mi, to spare "
      "storage the application uses meanwhile; or none (default: none)"));
  return options;
}

std::expected<std::vector<std::string>, std::string> copy_rsync_flags(const CopyJobFlags& flags) {
  std::vector<std::string> rsync = CopyJobSettings{}.rsync_flags;
  if (flags.bandwidth_limit.empty() || flags.bandwidth_limit == "none") return rsync;
  auto bytes = Quantity::parse(flags.bandwidth_limit);
  if (!bytes) {
    return std::unexpected("--copy-bandwidth-limit: " + bytes.error() +
                           " (bytes a second, e.g. 100Mi, or none)");
  }
  // rsync counts in units of 1024 bytes a second; 0 would mean no limit.
  if (bytes->bytes() < 1024) {
    return std::unexpected("--copy-bandwidth-limit: " + flags.bandwidth_limit +
                           " is less than 1Ki a second, the least rsync can keep to");
  }
  rsync.push_back("--bwlimit=" + std::to_string(bytes->bytes() / 1024));
  return rsync;
}

std::expected<CopyJobResources, std::string> copy_job_resources(const CopyJobFlags& flags) {
  CopyJobResources resources;
  struct Flag {
    std::string_view name;
    const std::string& text;
    std::string* target;
    bool cpu;
  };
  const Flag given[] = {
      {"copy-job-cpu-request", flags.cpu_request, &resources.cpu_request, true},
      {"copy-job-memory-request", flags.memory_request, &resources.memory_request, false},
      {"copy-job-cpu-limit", flags.cpu_limit, &resources.cpu_limit, true},
      {"copy-job-memory-limit", flags.memory_limit, &resources.memory_limit, false},
  };
  const auto refusal = [](const std::string& text, bool cpu) -> std::optional<std::string> {
    if (cpu) {
      auto millicores = parse_milli_quantity(text);
      return millicores ? std::nullopt : std::optional{millicores.error()};
    }
    auto bytes = Quantity::parse(text);
    return bytes ? std::nullopt : std::optional{bytes.error()};
  };
  for (const Flag& flag : given) {
    if (flag.text.empty()) continue;
    if (flag.text == "none") {
      flag.target->clear();
      continue;
    }
    if (auto why = refusal(flag.text, flag.cpu)) {
      return std::unexpected("--" + std::string{flag.name} + ": " + *why +
                             (flag.cpu ? " (a CPU quantity, e.g. 500m or 2, or none)"
                                       : " (a memory quantity, e.g. 512Mi or 2Gi, or none)"));
    }
    *flag.target = flag.text;
  }
  const auto above = [](const std::string& request, const std::string& limit, bool cpu) {
    if (request.empty() || limit.empty()) return false;
    if (cpu) return *parse_milli_quantity(request) > *parse_milli_quantity(limit);
    return *Quantity::parse(request) > *Quantity::parse(limit);
  };
  for (const auto& [resource, request, limit, cpu] :
       {std::tuple{"cpu", resources.cpu_request, resources.cpu_limit, true},
        std::tuple{"memory", resources.memory_request, resources.memory_limit, false}}) {
    if (above(request, limit, cpu)) {
      return std::unexpected("--copy-job-" + std::string{resource} + "-request: " + request +
                             " is more than the limit " + limit + " (--copy-job-" + resource +
                             "-limit; none for no limit)");
    }
  }
  return resources;
}

}  // namespace stsresize::cli
