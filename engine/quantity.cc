#include "engine/quantity.h"

#include <array>
#include <cstddef>
#include <limits>
#include <optional>

#include "engine/text.h"

namespace stsresize {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// The value of a quantity is digits × 10^decimal_exponent × 2^binary_exponent, with `digits`
// a decimal string without leading or trailing zeros (empty means zero). Keeping the mantissa
// as text lets "1.00000000000000000000001Gi" be judged exactly instead of through a double.
struct Decomposed {
  std::string digits;
  std::int64_t decimal_exponent = 0;
  int binary_exponent = 0;
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string quantity_quoted(std::string_view text) {
  return "quantity " + stsresize::quote(text);
}

struct Suffix {
  std::string_view text;
  int decimal_exponent;
  int binary_exponent;
};

// resource.Quantity's suffixer: binary SI, decimal SI (including the sub-unit n, u, m).
constexpr std::array<Suffix, 15> kSuffixes{{
    {"Ki", 0, 10},
    {"Mi", 0, 20},
    {"Gi", 0, 30},
    {"Ti", 0, 40},
    {"Pi", 0, 50},
    {"Ei", 0, 60},
    {"n", -9, 0},
    {"u", -6, 0},
    {"m", -3, 0},
    {"k", 3, 0},
    {"M", 6, 0},
    {"G", 9, 0},
    {"T", 12, 0},
    {"P", 15, 0},
    {"E", 18, 0},
}};

// Exponents beyond this cannot describe a whole int64 byte count with a mantissa of sane
// length; saturating keeps the exponent arithmetic free of overflow without changing the verdict
// (too large stays too large, too small stays a fraction).
constexpr std::int64_t kExponentClamp = 1'000'000'000;

std::optional<std::int64_t> parse_exponent(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    if (value < kExponentClamp) value = value * 10 + (c - '0');
  }
  if (value > kExponentClamp) value = kExponentClamp;
  return negative ? -value : value;
}

// Exact division of a decimal digit string by a small divisor; false if there is a remainder.
bool divide_exactly(std::string& digits, int divisor) {
  std::string quotient;
  quotient.reserve(digits.size());
  int remainder = 0;
  for (char c : digits) {
    const int current = remainder * 10 + (c - '0');
    const int q = current / divisor;
    remainder = current % divisor;
    if (!quotient.empty() || q != 0) quotient += static_cast<char>('0' + q);
  }
  if (remainder != 0) return false;
  digits = std::move(quotient);
  return true;
}

// The digit string as an integer if it is at most `limit`.
std::optional<unsigned __int128> to_integer(const std::string& digits, unsigned __int128 limit) {
  if (digits.size() > 38) return std::nullopt;
  unsigned __int128 value = 0;
  for (char c : digits) {
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > limit) return std::nullopt;
  }
  return value;
}

// What a value is counted in, as its refusals say it (after "quantity \"...\" ").
struct Unit {
  std::string too_large;
  std::string fraction;
};
Unit bytes_unit() {
  return {"is larger than the largest supported size (" + std::to_string(kMax) + " bytes)",
          "is not a whole number of bytes"};
}
Unit thousandths_unit() {
  return {"is larger than the largest supported value", "is finer than 1m (a thousandth)"};
}

// The value as a whole number of units, where `d` is already scaled to the unit.
std::expected<std::int64_t, std::string> to_whole(Decomposed d, std::string_view text,
                                                  const Unit& unit) {
  if (d.digits.empty()) return 0;
  const auto too_large = [&] {
    return std::unexpected(quantity_quoted(text) + " " + unit.too_large);
  };
  const auto fraction = [&] {
    return std::unexpected(quantity_quoted(text) + " " + unit.fraction);
  };

  if (d.decimal_exponent >= 0) {
    // digits ≥ 10^(size-1), so the value is at least 10^(size-1+exponent); int64 < 10^19.
    if (static_cast<std::int64_t>(d.digits.size()) - 1 + d.decimal_exponent >= 19) {
      return too_large();
    }
    auto value = to_integer(d.digits, kMax);
    if (!value) return too_large();
    for (std::int64_t i = 0; i < d.decimal_exponent; ++i) *value *= 10;
    if (*value > static_cast<unsigned __int128>(kMax) >> d.binary_exponent) return too_large();
    return static_cast<std::int64_t>(*value << d.binary_exponent);
  }

  // value = digits × 2^b / (2^k × 5^k): the 5^k must divide the digits, and 2^(k-b) too when
  // the binary suffix does not cover it. Each exact division shrinks the digits, so a large k
  // ends at the first remainder.
  const std::int64_t k = -d.decimal_exponent;
  for (std::int64_t i = 0; i < k; ++i) {
    if (!divide_exactly(d.digits, 5)) return fraction();
  }
  int shift = d.binary_exponent;
  std::int64_t twos = k;
  while (twos > 0 && shift > 0) {
    --twos;
    --shift;
  }
  for (std::int64_t i = 0; i < twos; ++i) {
    if (!divide_exactly(d.digits, 2)) return fraction();
  }
  auto value = to_integer(d.digits, kMax);
  if (!value) return too_large();
  if (*value > static_cast<unsigned __int128>(kMax) >> shift) return too_large();
  return static_cast<std::int64_t>(*value << shift);
}

// The grammar of resource.Quantity, decomposed exactly; refuses negative values.
std::expected<Decomposed, std::string> decompose(std::string_view text) {
  if (text.empty()) return std::unexpected(std::string{"empty quantity"});
  std::string_view rest = text;

  bool negative = false;
  if (rest.front() == '+' || rest.front() == '-') {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }

  std::size_t pos = 0;
  while (pos < rest.size() && is_digit(rest[pos])) ++pos;
  const std::string_view whole = rest.substr(0, pos);
  std::string_view fraction;
  if (pos < rest.size() && rest[pos] == '.') {
    const std::size_t start = ++pos;
    while (pos < rest.size() && is_digit(rest[pos])) ++pos;
    fraction = rest.substr(start, pos - start);
  }
  // The grammar allows "1." and ".5" but not a number without any digit ("", ".", "+").
  if (whole.empty() && fraction.empty()) {
    return std::unexpected(quantity_quoted(text) + " does not start with a number");
  }
  const std::string_view suffix = rest.substr(pos);

  Decomposed d;
  std::int64_t exponent = 0;
  // The table first, as resource.Quantity does: "Ei" is exa-binary, not an exponent.
  const Suffix* found = nullptr;
  for (const Suffix& s : kSuffixes) {
    if (s.text == suffix) found = &s;
  }
  if (found != nullptr) {
    exponent = found->decimal_exponent;
    d.binary_exponent = found->binary_exponent;
  } else if (suffix.size() > 1 && (suffix.front() == 'e' || suffix.front() == 'E')) {
    const auto parsed = parse_exponent(suffix.substr(1));
    if (!parsed) return std::unexpected(quantity_quoted(text) + " has a malformed exponent");
    exponent = *parsed;
  } else if (!suffix.empty()) {
    return std::unexpected(quantity_quoted(text) + " has an unknown suffix " + quote(suffix) +
                           " (expected Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or e<exponent>)");
  }

  d.digits.assign(whole);
  d.digits.append(fraction);
  d.decimal_exponent = exponent - static_cast<std::int64_t>(fraction.size());
  const std::size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) {
    d.digits.clear();
  } else {
    d.digits.erase(0, first);
    while (d.digits.back() == '0') {
      d.digits.pop_back();
      ++d.decimal_exponent;
    }
  }

  if (negative && !d.digits.empty()) {
    return std::unexpected(quantity_quoted(text) + " is negative");
  }
  return d;
}

}  // namespace

std::expected<Quantity, std::string> Quantity::parse(std::string_view text) {
  auto d = decompose(text);
  if (!d) return std::unexpected(d.error());
  auto bytes = to_whole(std::move(*d), text, bytes_unit());
  if (!bytes) return std::unexpected(bytes.error());
  return Quantity{*bytes};
}

std::expected<std::int64_t, std::string> parse_milli_quantity(std::string_view text) {
  auto d = decompose(text);
  if (!d) return std::unexpected(d.error());
  d->decimal_exponent += 3;
  return to_whole(std::move(*d), text, thousandths_unit());
}

std::string Quantity::to_string() const {
  if (bytes_ == 0) return "0";
  // Each family's candidate uses its largest suffix that divides the value exactly; the
  // shortest text wins, binary first on a tie ("1T" over "976562500Ki", "20Gi" over bytes).
  std::string best = std::to_string(bytes_);
  std::string decimal;
  static constexpr std::array<std::string_view, 6> kDecimal{"k", "M", "G", "T", "P", "E"};
  std::int64_t unit = 1;
  for (std::string_view suffix : kDecimal) {
    unit *= 1000;
    if (bytes_ % unit == 0) decimal = std::to_string(bytes_ / unit) + std::string{suffix};
  }
  if (!decimal.empty() && decimal.size() <= best.size()) best = decimal;
  static constexpr std::array<std::string_view, 6> kBinary{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  std::string binary;
  for (std::size_t i = 0; i < kBinary.size(); ++i) {
    const std::int64_t binary_unit = std::int64_t{1} << (10 * (i + 1));
    if (bytes_ % binary_unit == 0) {
      binary = std::to_string(bytes_ / binary_unit) + std::string{kBinary[i]};
    }
  }
  if (!binary.empty() && binary.size() <= best.size()) best = binary;
  return best;
}

}  // namespace stsresize
