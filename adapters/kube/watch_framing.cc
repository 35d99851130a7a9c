#include "adapters/kube/watch_framing.h"

#include "adapters/kube/http_kubernetes.h"

namespace stsresize {
namespace {

KubeError malformed(std::string_view request, std::string_view why) {
  return KubeError{KubeErrorCode::ServerError,
                   std::string{request} + ": watch stream: " + std::string{why}, Duration{0}};
}

std::string_view without_carriage_return(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  return line;
}

}  // namespace

LineFramer::Fed LineFramer::feed(std::string_view chunk, const LineHandler& on_line) {
  std::size_t start = 0;
  for (std::size_t newline = chunk.find('\n'); newline != std::string_view::npos;
       newline = chunk.find('\n', start)) {
    std::string_view piece = chunk.substr(start, newline - start);
    start = newline + 1;
    std::string_view line = piece;
    if (!partial_.empty()) {
      if (partial_.size() + piece.size() > max_line_bytes_) return Fed::LineTooLong;
      partial_.append(piece);
      line = partial_;
    }
    line = without_carriage_return(line);
    const bool go_on = line.empty() || on_line(line);
    partial_.clear();
    if (!go_on) return Fed::Stopped;
  }
  const std::string_view tail = chunk.substr(start);
  if (partial_.size() + tail.size() > max_line_bytes_) return Fed::LineTooLong;
  partial_.append(tail);
  return Fed::Consumed;
}

std::expected<WatchEvent, KubeError> decode_watch_event(std::string_view line,
                                                        std::string_view request) {
  Json parsed = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    constexpr std::size_t kShown = 100;
    std::string shown{line.substr(0, kShown)};
    if (line.size() > kShown) shown += "...";
    return std::unexpected(malformed(request, "not a JSON object: " + shown));
  }
  const auto type = parsed.find("type");
  const auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string() || object == parsed.end() ||
      !object->is_object()) {
    return std::unexpected(malformed(request, "an event without type or object"));
  }
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ERROR") {
    // A Status object; its code is what the HTTP status would have been.
    const auto code = object->find("code");
    const int status = code != object->end() && code->is_number_integer() ? code->get<int>() : 500;
    return std::unexpected(error_from_response(status, object->dump(), "", request));
  }
  WatchEventType event_type;
  if (name == "ADDED") {
    event_type = WatchEventType::Added;
  } else if (name == "MODIFIED") {
    event_type = WatchEventType::Modified;
  } else if (name == "DELETED") {
    event_type = WatchEventType::Deleted;
  } else if (name == "BOOKMARK") {
    event_type = WatchEventType::Bookmark;
  } else {
    return std::unexpected(malformed(request, "unknown event type \"" + name + "\""));
  }
  return WatchEvent{event_type, std::move(*object)};
}

}  // namespace stsresize
