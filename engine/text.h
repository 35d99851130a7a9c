#pragma once
// Text made for people from values people wrote: a request annotation can be 256 KiB, and a
// message that quotes it whole buries what is wrong with it (and outgrows an Event's 1 KiB or
// the annotations' 256 KiB). Messages quote such values through quote(); whatever must fit a
// limit is cut by bounded(), never in the middle of a UTF-8 sequence.
#include <cstddef>
#include <string>
#include <string_view>

namespace stsresize {

// The longest prefix of `text` of at most `max_bytes` that ends on a UTF-8 character boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

// `text` if it has at most `max_bytes`; else a prefix and `marker`, `max_bytes` in all.
std::string bounded(std::string_view text, std::size_t max_bytes, std::string_view marker);

// "\"text\"", or for a text over 64 bytes "\"<its first 48 bytes>...\" (N bytes)".
std::string quote(std::string_view text);

}  // namespace stsresize
