#include "adapters/app/durations.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace stsresize {

std::string human_age(Duration age) {
  const std::int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(age).count();
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const std::int64_t minutes = seconds / 60;
  auto two = [](std::int64_t big, std::string_view big_unit, std::int64_t small,
                std::string_view small_unit) {
    std::string out = std::to_string(big) + std::string{big_unit};
    if (small != 0) out += std::to_string(small) + std::string{small_unit};
    return out;
  };
  if (minutes < 10) return two(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return std::to_string(minutes) + "m";
  const std::int64_t hours = minutes / 60;
  if (hours < 8) return two(hours, "h", minutes % 60, "m");
  if (hours < 48) return std::to_string(hours) + "h";
  const std::int64_t days = hours / 24;
  if (days < 8) return two(days, "d", hours % 24, "h");
  if (days < 730) return std::to_string(days) + "d";
  return two(days / 365, "y", days % 365, "d");
}

}  // namespace stsresize
