#pragma once
// The command line's text tables (status, describe, replay, journal list), laid out in one
// place so they all read alike: every column padded to its widest cell, counted as a terminal
// shows it (UTF-8 continuation bytes take no column); the last column never padded; no
// trailing spaces. Pure.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stsresize::cli {

using Cells = std::vector<std::string>;

// Every member has an initializer, so `TableStyle{.gap = 2}` names only what differs
// (-Wmissing-field-initializers stays quiet).
struct TableStyle {
  std::size_t gap = 3;                          // spaces between columns: three, as kubectl
  std::string_view indent = {};                 // starts every line (describe's sections)
  std::vector<std::size_t> right_aligned = {};  // columns padded on the left, as numbers are
};

// One line per row, each ending in "\n". Rows may have fewer cells than others.
std::string text_table(const std::vector<Cells>& rows, const TableStyle& style = {});

}  // namespace stsresize::cli
