#include "adapters/clock/rfc3339.h"

#include <chrono>
#include <cstdio>

namespace stsresize {

std::string format_rfc3339(TimePoint time) {
  using namespace std::chrono;
  const auto seconds = floor<std::chrono::seconds>(time);
  const auto days = floor<std::chrono::days>(seconds);
  const year_month_day date{days};
  const hh_mm_ss clock{seconds - days};
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<long>(clock.hours().count()),
                static_cast<long>(clock.minutes().count()),
                static_cast<long>(clock.seconds().count()));
  return buffer;
}

std::optional<TimePoint> parse_rfc3339(std::string_view text) {
  using namespace std::chrono;
  int y = 0;
  unsigned mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char zone = 0;
  int consumed = 0;
  const std::string copy{text};
  if (std::sscanf(copy.c_str(), "%4d-%2u-%2uT%2u:%2u:%2u%c%n", &y, &mo, &d, &h, &mi, &s, &zone,
                  &consumed) != 7 ||
      zone != 'Z' || static_cast<std::size_t>(consumed) != copy.size()) {
    return std::nullopt;
  }
  const year_month_day date{year{y}, month{mo}, day{d}};
  if (!date.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  return TimePoint{sys_days{date}} + hours{h} + minutes{mi} + seconds{s};
}

}  // namespace stsresize
