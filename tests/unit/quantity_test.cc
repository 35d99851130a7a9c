#include "engine/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace stsresize {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

struct Valid {
  const char* text;
  std::int64_t bytes;
};

// Expected byte counts computed independently (Python integer arithmetic).
constexpr Valid kValid[] = {
    {"0", 0},
    {"00", 0},
    {"-0", 0},
    {"+0", 0},
    {"0Gi", 0},
    {"0.0", 0},
    {"0.000m", 0},
    {"0e999999999999999999999", 0},
    {"0e-999999999999999999999", 0},
    {"1", 1},
    {"+1", 1},
    {"2048", 2048},
    {"007", 7},
    {"1.", 1},
    {"1.000", 1},
    {"1Ki", 1024},
    {"1Mi", 1048576},
    {"20Gi", 21474836480},
    {"1Ti", 1099511627776},
    {"1Pi", 1125899906842624},
    {"1Ei", 1152921504606846976},
    {"7Ei", 8070450532247928832},
    {"1k", 1000},
    {"1M", 1000000},
    {"1G", 1000000000},
    {"1500M", 1500000000},
    {"1T", 1000000000000},
    {"1P", 1000000000000000},
    {"1E", 1000000000000000000},
    {"9E", 9000000000000000000},
    {"1e9", 1000000000},
    {"1E9", 1000000000},
    {"1e+3", 1000},
    {"1e0", 1},
    {"1e00018", 1000000000000000000},
    {"1234567890000000000000000000000e-21", 1234567890},
    {"1.5Gi", 1610612736},
    {"0.5Ki", 512},
    {".5Ki", 512},
    {"1.5k", 1500},
    {"2.5M", 2500000},
    {"2.5e3", 2500},
    {"0.0009765625Mi", 1024},
    {"0.00000000000000000000000000000000001e35", 1},
    {"1000m", 1},
    {"1500000m", 1500},
    {"1000000u", 1},
    {"1000000000n", 1},
    {"9223372036854775807", kMax},
    {"+9223372036854775807", kMax},
    {"9223372036854775807000m", kMax},
    {"9223372036854775807.000", kMax},
    {"922337203685477580.7e1", kMax},
    {"9.223372036854775807E", kMax},
    {"9.223372036854775807e18", kMax},
    {"8191.9999999999990905052982270717620849609375Pi", 9223372036854774784},  // 2^63 - 1024
    {"7.999999999999999999132638262011596452794037759304046630859375Ei", kMax},
};

TEST(Quantity, ParsesValidQuantitiesToExactBytes) {
  for (const Valid& row : kValid) {
    const auto q = Quantity::parse(row.text);
    ASSERT_TRUE(q.has_value()) << row.text << ": " << q.error();
    EXPECT_EQ(q->bytes(), row.bytes) << row.text;
  }
}

struct Invalid {
  const char* text;
  const char* message_part;  // the error must say why
};

constexpr Invalid kInvalid[] = {
    {"", "empty"},
    {"Gi", "does not start with a number"},
    {".", "does not start with a number"},
    {"+", "does not start with a number"},
    {"-", "does not start with a number"},
    {"--1", "does not start with a number"},
    {" 1", "does not start with a number"},
    {"-1", "negative"},
    {"-1Gi", "negative"},
    {"-0.5", "negative"},
    {"0.5", "not a whole number of bytes"},
    {"1.5", "not a whole number of bytes"},
    {"1m", "not a whole number of bytes"},
    {"1500m", "not a whole number of bytes"},
    {"1u", "not a whole number of bytes"},
    {"1n", "not a whole number of bytes"},
    {"1.1Ki", "not a whole number of bytes"},
    {"0.1Ki", "not a whole number of bytes"},
    {"1e-1", "not a whole number of bytes"},
    {"12345678901234567890e-10", "not a whole number of bytes"},
    {"1.0000000000000000000000000001", "not a whole number of bytes"},
    {"1e-999999999999999999999", "not a whole number of bytes"},
    // One digit short of (2^63-1)/2^60: no longer a whole number of bytes.
    {"7.99999999999999999913263826201159645279403775930404663085937Ei",
     "not a whole number of bytes"},
    {"9223372036854775808", "larger than"},
    {"9223372036854775807001m", "not a whole number of bytes"},
    {"9223372036854775808000m", "larger than"},
    {"8Ei", "larger than"},
    {"9.223372036854775808E", "larger than"},
    {"10E", "larger than"},
    {"1e19", "larger than"},
    {"1e999999999999999999999", "larger than"},
    {"99999999999999999999999999999999999999999", "larger than"},
    {"8192Pi", "larger than"},
    {"1 Gi", "unknown suffix"},
    {"1Gi ", "unknown suffix"},
    {"1gi", "unknown suffix"},
    {"1K", "unknown suffix"},
    {"1KiB", "unknown suffix"},
    {"1Gi1", "unknown suffix"},
    {"1e", "unknown suffix"},
    {"1.5.5", "unknown suffix"},
    {"1,5", "unknown suffix"},
    {"0x10", "unknown suffix"},
    {"abc", "does not start with a number"},
    {"1ee3", "malformed exponent"},
    {"1e1.5", "malformed exponent"},
    {"1e+", "malformed exponent"},
    {"1e3Gi", "malformed exponent"},
    {"1E-", "malformed exponent"},
};

TEST(Quantity, RefusesInvalidQuantitiesQuotingTheInputAndTheReason) {
  for (const Invalid& row : kInvalid) {
    const auto q = Quantity::parse(row.text);
    ASSERT_FALSE(q.has_value()) << "accepted \"" << row.text << "\" as " << q->bytes();
    EXPECT_NE(q.error().find(row.message_part), std::string::npos)
        << row.text << " -> " << q.error();
    if (*row.text != '\0') {
      EXPECT_NE(q.error().find(std::string{"\""} + row.text + "\""), std::string::npos)
          << "message does not quote the input: " << q.error();
    }
  }
}

TEST(Quantity, RefusesEmbeddedNulAndNonAsciiDigits) {
  EXPECT_FALSE(Quantity::parse(std::string_view{"1\0", 2}).has_value());
  EXPECT_FALSE(Quantity::parse("\xd9\xa1").has_value());  // ARABIC-INDIC DIGIT ONE
}

struct Canonical {
  const char* text;
  const char* canonical;
};

constexpr Canonical kCanonical[] = {
    {"20Gi", "20Gi"},     {"1G", "1G"},
    {"1500M", "1500M"},   {"1e9", "1G"},
    {"1.5Gi", "1536Mi"},  {"0", "0"},
    {"0Gi", "0"},         {"1", "1"},
    {"1023", "1023"},     {"1000", "1k"},
    {"1024", "1Ki"},      {"21474836480", "20Gi"},
    {"1T", "1T"},  // not "976562500Ki"
    {"100G", "100G"},     {"1E", "1E"},
    {"7Ei", "7Ei"},       {"1048576k", "1000Mi"},
    {"1024000", "1024k"},  // shorter than "1000Ki"
    {"1536Ki", "1536Ki"}, {"9223372036854775807", "9223372036854775807"},
    {"8191Pi", "8191Pi"},
};

TEST(Quantity, PrintsTheShortestExactCanonicalForm) {
  for (const Canonical& row : kCanonical) {
    const auto q = Quantity::parse(row.text);
    ASSERT_TRUE(q.has_value()) << row.text << ": " << q.error();
    EXPECT_EQ(q->to_string(), row.canonical) << row.text;
  }
}

TEST(Quantity, CanonicalFormParsesBackToTheSameValue) {
  // Values around every suffix boundary and the int64 edge.
  std::vector<std::int64_t> values = {0, 1, 999, 1000, 1001, 1023, 1024, 1025, kMax, kMax - 1};
  for (int shift = 10; shift <= 62; shift += 1) {
    const std::int64_t p = std::int64_t{1} << shift;
    values.insert(values.end(), {p - 1, p, p + 1});
    if (shift < 62) values.push_back(p + p / 2);
  }
  std::int64_t ten = 1;
  for (int e = 1; e <= 18; ++e) {
    ten *= 10;
    values.insert(values.end(), {ten - 1, ten, ten + 1, ten * 7});
  }
  for (std::int64_t v : values) {
    const std::string text = Quantity::from_bytes(v).to_string();
    const auto back = Quantity::parse(text);
    ASSERT_TRUE(back.has_value()) << v << " -> " << text << ": " << back.error();
    EXPECT_EQ(back->bytes(), v) << text;
  }
}

TEST(Quantity, OrdersByByteCountRegardlessOfSuffix) {
  const auto gi = Quantity::parse("1Gi");
  const auto g = Quantity::parse("1G");
  const auto m = Quantity::parse("1024Mi");
  ASSERT_TRUE(gi && g && m);
  EXPECT_LT(*g, *gi);
  EXPECT_EQ(*gi, *m);
  EXPECT_GT(*gi, Quantity::from_bytes(1073741823));
}

TEST(MilliQuantity, CpuQuantitiesAreWholeMillicores) {
  const std::pair<const char*, std::int64_t> cases[] = {
      {"100m", 100},   {"0.5", 500},     {"2", 2000}, {"1.5", 1500}, {"0", 0},
      {"1k", 1000000}, {"250000u", 250}, {"1e-3", 1}, {"+3", 3000}};
  for (const auto& [text, millicores] : cases) {
    const auto parsed = parse_milli_quantity(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error();
    EXPECT_EQ(*parsed, millicores) << text;
  }
  EXPECT_EQ(parse_milli_quantity("0.0001").error(),
            "quantity \"0.0001\" is finer than 1m (a thousandth)");
  EXPECT_EQ(parse_milli_quantity("-1").error(), "quantity \"-1\" is negative");
  EXPECT_EQ(parse_milli_quantity("").error(), "empty quantity");
  EXPECT_EQ(parse_milli_quantity("1E").error(),
            "quantity \"1E\" is larger than the largest supported value");
  EXPECT_FALSE(parse_milli_quantity("two"));
  // Bytes are unchanged by the shared grammar.
  EXPECT_EQ(Quantity::parse("100m").error(), "quantity \"100m\" is not a whole number of bytes");
}

}  // namespace
}  // namespace stsresize
