// What people wrote, quoted in what they read: bounded, and never cut inside a character.
#include "engine/text.h"

#include <gtest/gtest.h>

#include "engine/json.h"
#include "engine/resize_request.h"

namespace stsresize {
namespace {

TEST(Text, Utf8PrefixEndsOnACharacterBoundary) {
  const std::string text =
      "ab\xC3\xA9"
      "cd";  // "abécd"
  EXPECT_EQ(utf8_prefix(text, 10), text);
  EXPECT_EQ(utf8_prefix(text, 4), "ab\xC3\xA9");
  EXPECT_EQ(utf8_prefix(text, 3), "ab");          // not half of é
  EXPECT_EQ(utf8_prefix("\xE2\x82\xAC", 2), "");  // not two thirds of €
  EXPECT_EQ(utf8_prefix("", 0), "");
}

TEST(Text, BoundedFitsItsLimitMarkerIncluded) {
  EXPECT_EQ(bounded("short", 10, "..."), "short");
  EXPECT_EQ(bounded("0123456789ab", 10, "..."), "0123456...");
  std::string accents;
  for (int i = 0; i < 2000; ++i) accents += "\xC3\xA9";
  const std::string cut = bounded(accents, 1024, "... (cut)");
  EXPECT_LE(cut.size(), 1024u);
  EXPECT_TRUE(cut.ends_with("\xC3\xA9... (cut)")) << cut.substr(cut.size() - 20);
  EXPECT_FALSE(Json::parse(Json(cut).dump(), nullptr, false).is_discarded());
}

TEST(Text, QuoteShowsTheBeginningAndTheSizeOfALongValue) {
  EXPECT_EQ(quote("data"), "\"data\"");
  EXPECT_EQ(quote(std::string(64, 'x')), "\"" + std::string(64, 'x') + "\"");
  EXPECT_EQ(quote(std::string(200000, 'x')), "\"" + std::string(48, 'x') + "...\" (200000 bytes)");
}

// The reason of a refusal comes after what it quotes: a 200 KB name must not push it out of
// the 1 KiB a status or an Event keeps.
TEST(Text, AnOversizedRequestIsRefusedWithItsReasonInAFewBytes) {
  const std::string name(200000, 'x');
  auto unknown_field = parse_resize_request(Json{{"data", {{name, "2Gi"}}}}.dump());
  ASSERT_FALSE(unknown_field);
  EXPECT_LT(unknown_field.error().size(), 300u) << unknown_field.error().substr(0, 300);
  EXPECT_NE(unknown_field.error().find("unknown field"), std::string::npos);
  auto quantity = parse_resize_request(Json{{"data", {{"storage", "2Gi" + name}}}}.dump());
  ASSERT_FALSE(quantity);
  EXPECT_LT(quantity.error().size(), 400u) << quantity.error().substr(0, 400);
  EXPECT_NE(quantity.error().find("unknown suffix"), std::string::npos) << quantity.error();
}

}  // namespace
}  // namespace stsresize
