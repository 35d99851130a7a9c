#include "adapters/app/logging.h"

#include <gtest/gtest.h>

#include "engine/json.h"

namespace stsresize::logging {
namespace {

TEST(Logging_Text, FieldsAfterTheMessageQuotedWhenAmbiguous) {
  EXPECT_EQ(render(Format::Text, "reconciled", {{"statefulset", "db/web"}, {"result", "idle"}}),
            "reconciled statefulset=db/web result=idle");
  EXPECT_EQ(render(Format::Text, "failed", {{"error", "a \"b\" c=d"}, {"empty", ""}}),
            R"(failed error="a \"b\" c=d" empty="")");
}

TEST(Logging_Json, OneValidObjectWithMessageFirstAndFieldsInOrder) {
  const std::string line = render(Format::Json, "say \"hi\"\n", {{"zeta", "1"}, {"alpha", "x\ty"}});
  const Json parsed = Json::parse(line);
  EXPECT_EQ(parsed["msg"], "say \"hi\"\n");
  EXPECT_EQ(parsed["alpha"], "x\ty");
  EXPECT_LT(line.find("\"msg\""), line.find("\"zeta\""));
  EXPECT_LT(line.find("\"zeta\""), line.find("\"alpha\""));
}

TEST(Logging_Json, InvalidUtf8IsReplacedNotThrown) {
  const std::string line = render(Format::Json, "bytes", {{"value", std::string{"\xff\xfe"}}});
  EXPECT_NO_THROW(Json::parse(line));
}

TEST(Logging_Parse, LevelsAndFormatsWithClearRefusals) {
  EXPECT_EQ(parse_level("debug"), Level::Debug);
  EXPECT_EQ(parse_level("warning"), Level::Warn);
  EXPECT_EQ(parse_format("json"), Format::Json);
  ASSERT_FALSE(parse_level("verbose"));
  EXPECT_NE(parse_level("verbose").error().find("debug, info, warn, error"), std::string::npos);
  ASSERT_FALSE(parse_format("yaml"));
  EXPECT_NE(parse_format("yaml").error().find("text, json"), std::string::npos);
}

}  // namespace
}  // namespace stsresize::logging
