#include "adapters/app/text_table.h"

#include <gtest/gtest.h>

namespace stsresize::cli {
namespace {

TEST(TextTable_PadsColumns, ToTheWidestCellLastColumnUnpaddedNoTrailingSpaces) {
  EXPECT_EQ(text_table({{"NAME", "AGE", "NOTE"}, {"web", "5m", ""}, {"database", "12s", "x"}}),
            "NAME       AGE   NOTE\n"
            "web        5m\n"
            "database   12s   x\n");
}

TEST(TextTable_PadsColumns, ByWhatATerminalShowsForUtf8) {
  EXPECT_EQ(text_table({{"a→b", "1"}, {"abcd", "2"}}, TableStyle{.gap = 2}),
            "a→b   1\n"
            "abcd  2\n");
}

TEST(TextTable_Style, IndentRightAlignedColumnsAndRaggedRows) {
  EXPECT_EQ(text_table({{"SEQ", "EVENT"}, {"9", "Started"}, {"10"}},
                       TableStyle{.gap = 2, .indent = "  ", .right_aligned = {0}}),
            "  SEQ  EVENT\n"
            "    9  Started\n"
            "   10\n");
}

}  // namespace
}  // namespace stsresize::cli
