#include "engine/timestamp.h"

#include <chrono>
#include <cstdio>

namespace stsresize {

namespace {

bool read_digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

}  // namespace

TimePoint to_millis(TimePoint time) {
  return std::chrono::floor<std::chrono::milliseconds>(time);
}

std::string format_timestamp(TimePoint time) {
  using namespace std::chrono;
  const auto millis = floor<milliseconds>(time);
  const auto days = floor<std::chrono::days>(millis);
  const year_month_day date{days};
  const hh_mm_ss clock{millis - days};
  char buffer[32];
  std::snprintf(
      buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(date.year()),
      static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
      static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
      static_cast<int>(clock.seconds().count()), static_cast<int>(clock.subseconds().count()));
  return buffer;
}

std::expected<TimePoint, std::string> parse_timestamp(std::string_view text) {
  using namespace std::chrono;
  auto fail = [&] {
    return std::unexpected("invalid timestamp \"" + std::string{text} +
                           "\": expected YYYY-MM-DDTHH:MM:SS[.fff]Z");
  };
  int y, mo, d, h, mi, s;
  if (text.size() < 20 || !read_digits(text, 0, 4, y) || text[4] != '-' ||
      !read_digits(text, 5, 2, mo) || text[7] != '-' || !read_digits(text, 8, 2, d) ||
      text[10] != 'T' || !read_digits(text, 11, 2, h) || text[13] != ':' ||
      !read_digits(text, 14, 2, mi) || text[16] != ':' || !read_digits(text, 17, 2, s)) {
    return fail();
  }
  std::size_t pos = 19;
  int millis = 0;
  if (text[pos] == '.') {
    ++pos;
    std::size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0 || digits > 9) return fail();
    for (std::size_t i = digits; i < 3; ++i) millis *= 10;
  }
  if (pos + 1 != text.size() || text[pos] != 'Z') return fail();
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok() || h > 23 || mi > 59 || s > 59) return fail();
  return TimePoint{sys_days{date}} + hours{h} + minutes{mi} + seconds{s} + milliseconds{millis};
}

}  // namespace stsresize
