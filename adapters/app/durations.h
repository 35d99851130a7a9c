#pragma once
// Durations on the command line: parse_duration and format_duration (engine/duration.h, the one
// parser, shared with the annotations), and the ages people read. Every duration the CLI prints
// is spelled here or there.
#include <expected>
#include <string>
#include <string_view>

#include "engine/duration.h"
#include "engine/time.h"

namespace stsresize {

// Rounded as kubectl shows an AGE: "45s", "3m12s", "17m", "2h5m", "26h", "3d4h", "12d". Not
// exact on purpose: two units at most, so a column of ages stays narrow.
std::string human_age(Duration age);

}  // namespace stsresize
