#pragma once
// Kubernetes resource quantities ("20Gi", "1.5G", "500M", "1e9", "2048") as exact byte counts.
#include <compare>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace stsresize {

class Quantity {
 public:
  // Strict: the grammar of k8s.io/apimachinery resource.Quantity (binary suffixes Ki..Ei,
  // decimal k M G T P E, exponents e/E, optional sign). Refuses negative values, fractions
  // of a byte, overflow past int64, empty input and trailing garbage, with a message that
  // quotes the input.
  static std::expected<Quantity, std::string> parse(std::string_view text);
  static Quantity from_bytes(std::int64_t bytes) { return Quantity{bytes}; }

  std::int64_t bytes() const { return bytes_; }
  // Canonical, exact and stable: in each family (binary Ki..Ei, decimal k..E) the largest suffix
  // that divides the value exactly; the shortest of those and the plain byte count wins, binary
  // first on a tie: "20Gi", "1536Mi" (1.5Gi), "1G", "1500M", "1T" (never "976562500Ki"), "1023".
  // parse(to_string()) always gives the same value back.
  std::string to_string() const;

  friend auto operator<=>(const Quantity&, const Quantity&) = default;

 private:
  explicit Quantity(std::int64_t bytes) : bytes_(bytes) {}
  std::int64_t bytes_ = 0;
};

// The same grammar as a whole number of thousandths: CPU in millicores ("100m" is 100, "0.5"
// 500, "2" 2000). Refuses what Quantity::parse refuses, and values finer than 1m.
std::expected<std::int64_t, std::string> parse_milli_quantity(std::string_view text);

}  // namespace stsresize
