#include "engine/ports/kubernetes.h"

namespace stsresize {

std::string_view to_string(Kind kind) {
  return kind_info(kind).name;
}

bool is_namespaced(Kind kind) {
  return kind_info(kind).namespaced;
}

std::string api_version_of(Kind kind) {
  const KindInfo info = kind_info(kind);
  if (info.group.empty()) return std::string{info.version};
  return std::string{info.group} + "/" + std::string{info.version};
}

std::string to_string(const ObjectRef& ref) {
  std::string out{to_string(ref.kind)};
  out += ' ';
  if (!ref.ns.empty()) out += ref.ns + "/";
  return out + ref.name;
}

ObjectRef ref_of(Kind kind, const Json& object) {
  const Json& meta = object.contains("metadata") ? object.at("metadata") : Json::object();
  return ObjectRef{kind, is_namespaced(kind) ? meta.value("namespace", std::string{}) : "",
                   meta.value("name", std::string{})};
}

std::string_view to_string(KubeErrorCode code) {
  switch (code) {
    case KubeErrorCode::NotFound:
      return "NotFound";
    case KubeErrorCode::AlreadyExists:
      return "AlreadyExists";
    case KubeErrorCode::Conflict:
      return "Conflict";
    case KubeErrorCode::Gone:
      return "Gone";
    case KubeErrorCode::Invalid:
      return "Invalid";
    case KubeErrorCode::BadRequest:
      return "BadRequest";
    case KubeErrorCode::Unauthorized:
      return "Unauthorized";
    case KubeErrorCode::Forbidden:
      return "Forbidden";
    case KubeErrorCode::TooManyRequests:
      return "TooManyRequests";
    case KubeErrorCode::ServerError:
      return "ServerError";
    case KubeErrorCode::Unreachable:
      return "Unreachable";
  }
  return "Unknown";
}

std::string_view to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "Added";
    case WatchEventType::Modified:
      return "Modified";
    case WatchEventType::Deleted:
      return "Deleted";
    case WatchEventType::Bookmark:
      return "Bookmark";
  }
  return "Unknown";
}

bool KubeError::transient() const {
  switch (code) {
    case KubeErrorCode::Conflict:  // re-read and try again
    case KubeErrorCode::TooManyRequests:
    case KubeErrorCode::ServerError:
    case KubeErrorCode::Unreachable:
    case KubeErrorCode::Gone:
      return true;
    default:
      return false;
  }
}

}  // namespace stsresize
