#include "adapters/fake/fake_pod_logs.h"

namespace stsresize {

void FakePodLogs::print(const ObjectRef& pod, const std::string& container, std::string_view text) {
  std::lock_guard lock(mutex_);
  logs_[{pod.ns, pod.name, container}] += text;
}

KubeResult<std::string> FakePodLogs::tail(const ObjectRef& pod, const std::string& container,
                                          int lines) {
  auto object = pods_.get(pod);
  if (!object) return std::unexpected(object.error());
  bool named = false;
  const Json& spec = object->contains("spec") ? object->at("spec") : Json::object();
  if (spec.contains("containers") && spec.at("containers").is_array()) {
    for (const Json& c : spec.at("containers")) {
      if (c.is_object() && c.value("name", "") == container) named = true;
    }
  }
  if (!named) {
    return std::unexpected(KubeError{
        KubeErrorCode::BadRequest, "container " + container + " is not valid for pod " + pod.name});
  }
  std::lock_guard lock(mutex_);
  ++reads_;
  const auto found = logs_.find({pod.ns, pod.name, container});
  if (found == logs_.end() || lines <= 0) return std::string{};
  const std::string& log = found->second;
  // The last `lines` lines; a last line without its newline counts, as with the kubelet.
  std::size_t start = log.size();
  if (start > 0 && log[start - 1] == '\n') --start;
  for (int seen = 0; start > 0; --start) {
    if (log[start - 1] == '\n' && ++seen == lines) break;
  }
  return log.substr(start);
}

int FakePodLogs::reads() const {
  std::lock_guard lock(mutex_);
  return reads_;
}

}  // namespace stsresize
