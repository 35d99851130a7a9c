#include "engine/naming.h"

#include <algorithm>
#include <cstdint>

namespace stsresize::naming {
namespace {

constexpr std::size_t kHashChars = 8;

bool is_alnum_lower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Lowercase, every character outside [a-z0-9-] becomes '-', and the ends are trimmed to
// alphanumerics so the result can take a "-<hash>" suffix and still be a label.
std::string sanitised(std::string_view base) {
  std::string out;
  out.reserve(base.size());
  for (char c : base) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    out += is_alnum_lower(c) ? c : '-';
  }
  const auto first = out.find_first_not_of('-');
  if (first == std::string::npos) return {};
  out.erase(0, first);
  out.erase(out.find_last_not_of('-') + 1);
  return out;
}

std::uint64_t fnv1a64(std::string_view input) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : input) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace

bool is_dns1123_label(std::string_view name, std::size_t max) {
  if (name.empty() || name.size() > max) return false;
  if (!is_alnum_lower(name.front()) || !is_alnum_lower(name.back())) return false;
  return std::ranges::all_of(name, [](char c) { return is_alnum_lower(c) || c == '-'; });
}

std::string short_hash(std::string_view input, std::size_t hex_chars) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::uint64_t hash = fnv1a64(input);
  std::string out(16, '0');
  for (int i = 0; i < 16; ++i) out[i] = kHex[(hash >> (60 - 4 * i)) & 0xf];
  out.resize(std::min<std::size_t>(hex_chars, 16));
  return out;
}

std::string bounded(std::string_view base, std::size_t max) {
  if (is_dns1123_label(base, max)) return std::string{base};
  // Too short to hold a prefix and a separator: the hash alone (hex is a valid label).
  if (max <= kHashChars + 1) return short_hash(base, std::min(max, kHashChars));
  std::string prefix = sanitised(base);
  prefix.resize(std::min(prefix.size(), max - kHashChars - 1));
  prefix.erase(prefix.find_last_not_of('-') + 1);
  // The hash covers the original input, so inputs that sanitise to the same text stay distinct.
  const std::string hash = short_hash(base, kHashChars);
  return prefix.empty() ? hash : prefix + "-" + hash;
}

std::string label_value(std::string_view value) {
  if (value.empty()) return {};
  const auto alnum = [](char c) { return is_alnum_lower(c) || (c >= 'A' && c <= 'Z'); };
  const bool valid = value.size() <= 63 && alnum(value.front()) && alnum(value.back()) &&
                     std::ranges::all_of(value, [&](char c) {
                       return alnum(c) || c == '-' || c == '_' || c == '.';
                     });
  return valid ? std::string{value} : bounded(value);
}

std::string claim_name(std::string_view template_name, std::string_view sts, int ordinal) {
  std::string out{template_name};
  out += '-';
  out += sts;
  out += '-';
  out += std::to_string(ordinal);
  return out;
}

std::string backup_claim(std::string_view source_claim) {
  return bounded(std::string{source_claim} + "-stsresize-bak");
}

std::string backup_job(std::string_view source_claim) {
  return bounded(std::string{source_claim} + "-stsresize-backup");
}

std::string measure_job(std::string_view claim) {
  return bounded(std::string{claim} + "-stsresize-measure");
}

std::string reseed_pod(std::string_view sts, int ordinal) {
  return bounded(std::string{sts} + "-" + std::to_string(ordinal) + "-stsresize-reseed");
}

std::string pre_copy_job(std::string_view source_claim) {
  return bounded(std::string{source_claim} + "-stsresize-precopy");
}

std::string restore_job(std::string_view source_claim) {
  return bounded(std::string{source_claim} + "-stsresize-restore");
}

std::string definition_config_map(std::string_view sts) {
  return bounded("stsresize-" + std::string{sts} + "-definition");
}

}  // namespace stsresize::naming
