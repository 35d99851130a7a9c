#include "adapters/app/text_table.h"

#include <algorithm>

namespace stsresize::cli {

namespace {

std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string text_table(const std::vector<Cells>& rows, const TableStyle& style) {
  std::vector<std::size_t> widths;
  for (const Cells& cells : rows) {
    if (widths.size() < cells.size()) widths.resize(cells.size(), 0);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(cells[i]));
    }
  }
  std::string out;
  for (const Cells& cells : rows) {
    std::string line{style.indent};
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const bool last = i + 1 == cells.size();
      const std::size_t padding = widths[i] - display_width(cells[i]);
      if (std::ranges::find(style.right_aligned, i) != style.right_aligned.end()) {
        line.append(padding, ' ');
        line += cells[i];
      } else {
        line += cells[i];
        if (!last) line.append(padding, ' ');
      }
      if (!last) line.append(style.gap, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace stsresize::cli
