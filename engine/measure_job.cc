#include "engine/measure_job.h"

#include <cstdio>
#include <limits>

#include "engine/naming.h"
#include "engine/vocabulary.h"

namespace stsresize {

namespace {

// A failing stage of the file count drops lines and so counts less; du's status is checked
// (set -e on the assignment): the disk space is the figure that cannot come out low.
constexpr std::string_view kScript = R"sh(set -eu
# stsresize measure Job: what /source holds before a shrink (see engine/measure_job.h).
cd /source
counts=$(find . -type f -print0 | xargs -0 -r stat -c %s | {
  files=0
  bytes=0
  while read -r size; do
    files=$((files + 1))
    bytes=$((bytes + size))
  done
  echo "$files $bytes"
})
usage=$(du -s -k .)
kib=${usage%%[!0-9]*}
[ -n "$kib" ]
result=$(printf '{"v":1,"files":%s,"bytes":%s,"used":%s}' "${counts% *}" "${counts#* }" "$((kib * 1024))")
printf '%s' "$result" > /dev/termination-log
echo "stsresize-measure: $result"
)sh";

std::expected<std::int64_t, std::string> count(const Json& document, const char* key) {
  const auto found = document.find(key);
  if (found == document.end()) {
    return std::unexpected("volume usage has no \"" + std::string{key} + "\"");
  }
  if (!found->is_number_unsigned()) {
    return std::unexpected("volume usage \"" + std::string{key} + "\" is not a count");
  }
  const auto n = found->get<std::uint64_t>();
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::unexpected("volume usage \"" + std::string{key} + "\" is out of range");
  }
  return static_cast<std::int64_t>(n);
}

}  // namespace

std::int64_t data_bytes(const VolumeUsage& usage) {
  return std::max(usage.bytes, usage.used);
}

std::int64_t smallest_size(const VolumeUsage& usage) {
  // data / (1 - headroom), rounded up: the headroom is a share of the new size.
  const std::int64_t data = data_bytes(usage);
  const std::int64_t keep = 100 - kShrinkHeadroomPercent;
  return data / keep * 100 + (data % keep * 100 + keep - 1) / keep;
}

std::expected<VolumeUsage, std::string> parse_volume_usage(const std::string& message) {
  if (message.empty()) return std::unexpected(std::string{"volume usage is empty"});
  const Json document = Json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) {
    return std::unexpected("volume usage is not a JSON object: " + message.substr(0, 200));
  }
  if (document.size() != 4 || document.value("v", Json()) != Json(1)) {
    return std::unexpected("volume usage is not {\"v\":1,\"files\",\"bytes\",\"used\"}: " +
                           message.substr(0, 200));
  }
  VolumeUsage usage;
  for (auto [key, field] :
       {std::pair{"files", &VolumeUsage::files}, std::pair{"bytes", &VolumeUsage::bytes},
        std::pair{"used", &VolumeUsage::used}}) {
    auto n = count(document, key);
    if (!n) return std::unexpected(n.error());
    usage.*field = *n;
  }
  return usage;
}

std::string format_volume_usage(const VolumeUsage& usage) {
  return "{\"v\":1,\"files\":" + std::to_string(usage.files) +
         ",\"bytes\":" + std::to_string(usage.bytes) + ",\"used\":" + std::to_string(usage.used) +
         "}";
}

std::string human_bytes(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string measure_script() {
  return std::string{kScript};
}

Json build_measure_job(const MeasureJobRequest& request, const CopyJobSettings& settings) {
  const Json labels = {
      {"app.kubernetes.io/managed-by", "stsresize"},
      {std::string{kOperationLabel}, naming::label_value(request.operation_id)},
      {std::string{kStatefulSetLabel}, naming::label_value(request.statefulset)},
      {std::string{kPurposeLabel}, std::string{kMeasurePurpose}},
  };
  const Json annotations = {
      {std::string{kOperationLabel}, request.operation_id},
      {std::string{kStatefulSetLabel}, request.statefulset},
      {std::string{kSourceClaimAnnotation}, request.claim},
  };
  Json container = {
      {"name", "measure"},
      {"image", settings.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", Json::array({"/bin/sh", "-c", measure_script()})},
      {"volumeMounts",
       Json::array({{{"name", "source"}, {"mountPath", "/source"}, {"readOnly", true}}})},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
  };
  if (Json resources = container_resources(settings.resources); !resources.empty()) {
    container["resources"] = std::move(resources);
  }
  if (!settings.security_context.empty()) container["securityContext"] = settings.security_context;

  Json pod_spec = {
      {"restartPolicy", "Never"},
      {"automountServiceAccountToken", false},
      {"containers", Json::array({container})},
      {"volumes", Json::array({{{"name", "source"},
                                {"persistentVolumeClaim",
                                 {{"claimName", request.claim}, {"readOnly", true}}}}})},
  };
  if (!settings.pod_security_context.empty()) {
    pod_spec["securityContext"] = settings.pod_security_context;
  }
  place_beside(pod_spec, request.node, request.tolerations, settings);

  Json job_spec = {
      {"backoffLimit", settings.backoff_limit},
      {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}},
  };
  if (settings.active_deadline_seconds) {
    job_spec["activeDeadlineSeconds"] = *settings.active_deadline_seconds;
  }
  return Json{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", request.job_name},
                {"namespace", request.ns},
                {"labels", labels},
                {"annotations", annotations}}},
              {"spec", job_spec}};
}

}  // namespace stsresize
