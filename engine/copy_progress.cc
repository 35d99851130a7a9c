#include "engine/copy_progress.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

#include "engine/measure_job.h"

namespace stsresize {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<std::int64_t> whole(std::string_view digits) {
  if (digits.empty()) return std::nullopt;
  std::int64_t value = 0;
  for (char c : digits) {
    if (c == ',') continue;  // rsync's thousands separator (--human-readable, its default)
    if (c < '0' || c > '9') return std::nullopt;
    if (value > (INT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// "58.38MB/s", "0.00kB/s", "1.02GB/s", "312B/s": rsync's units are of 1024.
std::optional<double> rate(std::string_view word) {
  if (!word.ends_with("B/s")) return std::nullopt;
  word.remove_suffix(3);
  double scale = 1;
  if (!word.empty()) {
    switch (word.back()) {
      case 'k':
        scale = 1024.0;
        break;
      case 'M':
        scale = 1024.0 * 1024;
        break;
      case 'G':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 'T':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        scale = 0;
    }
    if (scale != 0) word.remove_suffix(1);
    if (scale == 0) scale = 1;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc{} || end != word.data() + word.size() || value < 0) return std::nullopt;
  return value * scale;
}

bool is_clock(std::string_view word) {  // h:mm:ss, as rsync prints its times
  const auto first = word.find(':');
  if (first == std::string_view::npos || first == 0) return false;
  if (word.size() != first + 6 || word[first + 3] != ':') return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (i != first && i != first + 3 && (word[i] < '0' || word[i] > '9')) return false;
  }
  return true;
}

std::string clock_text(Duration duration) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(duration).count();
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", static_cast<long long>(seconds / 3600),
                static_cast<long long>(seconds / 60 % 60), static_cast<long long>(seconds % 60));
  return text;
}

// "1.0Gi", "420.5Mi", "812": human_bytes without its spaces and its "B", for a column.
std::string compact_bytes(std::int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes);
  std::string text = human_bytes(bytes);  // "420.5 MiB"
  std::erase(text, ' ');
  text.pop_back();
  return text;
}

std::string rate_text(double bytes_per_second) {
  return human_bytes(static_cast<std::int64_t>(std::llround(bytes_per_second))) + "/s";
}

}  // namespace

std::optional<std::int64_t> CopyProgress::bytes_total() const {
  if (total) return total;
  if (listing || percent <= 0) return std::nullopt;
  if (stage == Stage::Verifying || percent >= 100) return bytes_done;
  return static_cast<std::int64_t>(
      std::llround(static_cast<double>(bytes_done) * 100.0 / (percent + 0.5)));
}

std::optional<Duration> CopyProgress::eta() const {
  if (stage == Stage::Copying && !listing && rsync_eta) return rsync_eta;
  const auto total = bytes_total();
  if (stage != Stage::Copying || !total || bytes_per_second <= 0) return std::nullopt;
  const double left = static_cast<double>(std::max<std::int64_t>(*total - bytes_done, 0));
  return Duration{static_cast<Duration::rep>(std::llround(left / bytes_per_second * 1000.0))};
}

int CopyProgress::tenth() const {
  if (stage == Stage::Verifying) return 10;
  if (listing) return 0;
  return std::clamp(percent / 10, 0, 10);
}

std::optional<CopyProgress> parse_rsync_progress_line(std::string_view line) {
  const std::vector<std::string_view> w = words(line);
  if (w.size() < 4) return std::nullopt;
  const auto bytes = whole(w[0]);
  if (!bytes || !w[1].ends_with('%')) return std::nullopt;
  const auto percent = whole(w[1].substr(0, w[1].size() - 1));
  const auto speed = rate(w[2]);
  if (!percent || *percent > 100 || !speed || !is_clock(w[3])) return std::nullopt;
  CopyProgress progress;
  progress.bytes_done = *bytes;
  progress.percent = static_cast<int>(*percent);
  progress.bytes_per_second = *speed;
  // "(xfr#12, ir-chk=1000/5000)": incremental recursion still finding files. Without it the
  // time is rsync's estimate of what is left.
  for (std::size_t i = 4; i < w.size(); ++i) {
    if (w[i].starts_with("ir-chk=")) progress.listing = true;
  }
  if (w.size() == 4) {
    const std::string_view clock = w[3];
    const auto colon = clock.find(':');
    const auto hours = whole(clock.substr(0, colon));
    const auto minutes = whole(clock.substr(colon + 1, 2));
    const auto seconds = whole(clock.substr(colon + 4, 2));
    if (hours && minutes && seconds) {
      progress.rsync_eta = std::chrono::seconds{*hours * 3600 + *minutes * 60 + *seconds};
    }
  }
  return progress;
}

std::optional<CopyProgress> parse_copy_progress(std::string_view log) {
  // From the end: the proof's line comes after rsync's last one; a pre-copy's pass line
  // before its progress.
  bool verifying = false;
  std::optional<CopyProgress> found;
  std::size_t end = log.size();
  while (end > 0) {
    std::size_t start = log.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    std::string_view line = log.substr(start, end - start);
    end = start == 0 ? 0 : start - 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!found) {
      if (line.starts_with("stsresize-copy: summarising /destination")) verifying = true;
      if (auto progress = parse_rsync_progress_line(line)) {
        found = progress;
        if (verifying) found->stage = CopyProgress::Stage::Verifying;
      }
      continue;
    }
    // "stsresize-precopy: pass 2: rsync /source/ /destination/"
    constexpr std::string_view kPass = "stsresize-precopy: pass ";
    if (line.starts_with(kPass)) {
      const std::string_view rest = line.substr(kPass.size());
      const auto number = whole(rest.substr(0, rest.find(':')));
      if (number && *number < 1000) found->pre_copy_pass = static_cast<int>(*number);
      break;
    }
    if (line.starts_with("stsresize-copy: ")) break;  // the copy's own lines: no pass
  }
  if (!found && verifying) {
    found = CopyProgress{};
    found->stage = CopyProgress::Stage::Verifying;
    found->percent = 100;
  }
  return found;
}

std::string format_copy_progress(const CopyProgress& progress) {
  std::string text;
  // The first pass is the copy itself; a later one says so.
  if (progress.pre_copy_pass > 1) text = "pass " + std::to_string(progress.pre_copy_pass) + ": ";
  if (progress.stage == CopyProgress::Stage::Verifying) {
    return text + "copied " + human_bytes(progress.bytes_done) + ", verifying";
  }
  if (progress.listing) {
    return text + "listing the source, " + human_bytes(progress.bytes_done) + " so far at " +
           rate_text(progress.bytes_per_second);
  }
  text += std::to_string(progress.percent) + "% (" + human_bytes(progress.bytes_done);
  if (const auto total = progress.bytes_total()) text += " of " + human_bytes(*total);
  text += ") at " + rate_text(progress.bytes_per_second);
  if (const auto eta = progress.eta()) text += ", about " + clock_text(*eta) + " left";
  return text;
}

std::string format_copy_progress_short(const CopyProgress& progress) {
  if (progress.stage == CopyProgress::Stage::Verifying) return "verifying";
  if (progress.listing) return "listing," + compact_bytes(progress.bytes_done);
  std::string text = std::to_string(progress.percent) + "%";
  if (const auto total = progress.bytes_total()) text += "/" + compact_bytes(*total);
  if (const auto eta = progress.eta()) text += ",ETA:" + clock_text(*eta);
  return text;
}

std::optional<CopyProgress> combine_copy_progress(const std::vector<CopyProgress>& copies) {
  if (copies.empty()) return std::nullopt;
  if (copies.size() == 1) return copies.front();
  CopyProgress all;
  all.stage = CopyProgress::Stage::Verifying;
  std::int64_t total = 0;
  bool totals = true;
  for (const CopyProgress& copy : copies) {
    if (copy.stage == CopyProgress::Stage::Copying) all.stage = CopyProgress::Stage::Copying;
    all.listing = all.listing || copy.listing;
    all.bytes_done += copy.bytes_done;
    all.bytes_per_second += copy.bytes_per_second;
    const auto known = copy.bytes_total();
    if (known)
      total += *known;
    else
      totals = false;
  }
  all.percent = totals && total > 0 ? static_cast<int>(all.bytes_done * 100 / total) : 0;
  if (totals) all.total = total;
  // They run at once: what is left is the longest of what each has left, when each says.
  std::optional<Duration> longest = Duration{0};
  for (const CopyProgress& copy : copies) {
    const auto eta = copy.eta();
    if (!eta || copy.stage != CopyProgress::Stage::Copying) {
      if (copy.stage == CopyProgress::Stage::Copying) longest.reset();
      continue;
    }
    if (longest) longest = std::max(*longest, *eta);
  }
  if (longest && all.stage == CopyProgress::Stage::Copying && *longest > Duration{0}) {
    all.rsync_eta = longest;
  }
  if (!totals && !all.listing) all.listing = true;  // some total unknown: no percentage yet
  return all;
}

}  // namespace stsresize
