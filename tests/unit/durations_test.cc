#include "adapters/app/durations.h"

#include <gtest/gtest.h>

namespace stsresize {
namespace {

using std::chrono::milliseconds;

TEST(Durations_ReadsGoSpellings, SingleAndCompoundUnits) {
  EXPECT_EQ(parse_duration("15s"), milliseconds{15'000});
  EXPECT_EQ(parse_duration("500ms"), milliseconds{500});
  EXPECT_EQ(parse_duration("1m30s"), milliseconds{90'000});
  EXPECT_EQ(parse_duration("2h"), milliseconds{7'200'000});
  EXPECT_EQ(parse_duration("1h2m3s4ms"), milliseconds{3'723'004});
  EXPECT_EQ(parse_duration("0"), milliseconds{0});
}

TEST(Durations_RefusesWithAReason, BareNumbersUnknownUnitsAndJunk) {
  for (const char* text : {"", "15", "15x", "s", "1.5s", "-1s", "1m30", "10 s"}) {
    auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().find("examples"), std::string::npos) << parsed.error();
  }
  EXPECT_FALSE(parse_duration("99999999999999999h"));
}

TEST(Durations_Formats, ExactLargestUnitsFirstZeroUnitsLeftOut) {
  EXPECT_EQ(format_duration(milliseconds{-5}), "0ms");
  EXPECT_EQ(format_duration(milliseconds{450}), "450ms");
  EXPECT_EQ(format_duration(milliseconds{15'000}), "15s");
  EXPECT_EQ(format_duration(milliseconds{90'000}), "1m30s");
  EXPECT_EQ(format_duration(milliseconds{133'500}), "2m13.5s");
  EXPECT_EQ(format_duration(milliseconds{1'800'000}), "30m");
  EXPECT_EQ(format_duration(milliseconds{3'720'000}), "1h2m");
  EXPECT_EQ(format_duration(milliseconds{3'600'250}), "1h0.25s");
}

TEST(Durations_Formats, WholeValuesReadBackAsTheSameDuration) {
  for (const char* text : {"15s", "1m30s", "30m", "2h", "1h2m3s", "500ms"}) {
    auto parsed = parse_duration(text);
    ASSERT_TRUE(parsed) << text;
    EXPECT_EQ(format_duration(*parsed), text);
  }
}

}  // namespace
}  // namespace stsresize
