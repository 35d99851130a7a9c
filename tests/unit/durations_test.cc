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

}  // namespace
}  // namespace stsresize
