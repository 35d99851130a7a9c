#include "engine/text.h"

namespace stsresize {

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Back over continuation bytes (10xxxxxx) to the start of the character that was cut.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end);
}

std::string bounded(std::string_view text, std::size_t max_bytes, std::string_view marker) {
  if (text.size() <= max_bytes) return std::string{text};
  const std::size_t room = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  std::string out{utf8_prefix(text, room)};
  out += marker;
  return out;
}

std::string quote(std::string_view text) {
  constexpr std::size_t kWhole = 64;
  constexpr std::size_t kShown = 48;
  // Appended rather than `"\"" + std::string{...}`: g++ 12 at -O3 (Release) reports a false
  // -Werror=restrict inside operator+(const char*, std::string&&) (GCC bug 105651).
  std::string out{"\""};
  if (text.size() <= kWhole) {
    out += text;
    out += '"';
    return out;
  }
  out += utf8_prefix(text, kShown);
  out += "...\" (";
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

}  // namespace stsresize
