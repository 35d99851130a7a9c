#pragma once
// The body of a kube-apiserver watch response (application/json): one JSON object per line,
// {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}, arriving in chunks cut
// anywhere (mid-line, several lines at once) by the transfer encoding and the network.
#include <cstddef>
#include <expected>
#include <functional>
#include <string>
#include <string_view>

#include "engine/ports/kubernetes.h"

namespace stsresize {

// Cuts a byte stream into lines. Each byte is scanned once: a line inside one chunk is handed
// out in place, only a line split across chunks is copied (into the kept partial tail).
class LineFramer {
 public:
  // Returning false stops the stream: the rest of the chunk is dropped.
  using LineHandler = std::function<bool(std::string_view line)>;
  enum class Fed { Consumed, Stopped, LineTooLong };

  // A line longer than `max_line_bytes` is refused rather than buffered without bound.
  explicit LineFramer(std::size_t max_line_bytes = kDefaultMaxLine)
      : max_line_bytes_(max_line_bytes) {}

  // Hands every complete, non-empty line of `chunk` (without "\n" or "\r\n") to `on_line`.
  Fed feed(std::string_view chunk, const LineHandler& on_line);
  // Bytes of the incomplete last line, kept for the next chunk.
  std::size_t pending() const { return partial_.size(); }

  // etcd refuses objects over 1.5 MiB; anything near this is not a watch event.
  static constexpr std::size_t kDefaultMaxLine = std::size_t{64} << 20;

 private:
  std::size_t max_line_bytes_;
  std::string partial_;
};

// One line of a watch stream. An ERROR event becomes the KubeError its Status object maps to
// (code 410 → Gone), as error_from_response maps a response; a line that is not a watch event
// (bad JSON, unknown type, no object) is a ServerError. `request` prefixes messages.
std::expected<WatchEvent, KubeError> decode_watch_event(std::string_view line,
                                                        std::string_view request);

}  // namespace stsresize
