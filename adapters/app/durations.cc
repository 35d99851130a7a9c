#include "adapters/app/durations.h"

#include <cctype>
#include <cstdint>
#include <limits>

namespace stsresize {

std::expected<Duration, std::string> parse_duration(std::string_view text) {
  auto refuse = [&](std::string_view why) {
    return std::unexpected("duration \"" + std::string{text} + "\": " + std::string{why} +
                           " (examples: 500ms, 15s, 1m30s, 2h)");
  };
  if (text == "0") return Duration{0};
  if (text.empty()) return refuse("empty");
  std::int64_t total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return refuse("expected a number");
    std::int64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (value > std::numeric_limits<std::int64_t>::max() / 10 / 3'600'000) {
        return refuse("too large");
      }
      value = value * 10 + (text[i++] - '0');
    }
    std::int64_t unit_ms = 0;
    if (text.substr(i).starts_with("ms")) {
      unit_ms = 1;
      i += 2;
    } else if (i < text.size() && text[i] == 's') {
      unit_ms = 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unit_ms = 60'000;
      ++i;
    } else if (i < text.size() && text[i] == 'h') {
      unit_ms = 3'600'000;
      ++i;
    } else {
      return refuse("a unit (ms, s, m, h) must follow each number");
    }
    total_ms += value * unit_ms;
    if (total_ms < 0) return refuse("too large");
  }
  return Duration{total_ms};
}

}  // namespace stsresize
