#include "adapters/fake/selectors.h"

#include <algorithm>
#include <cctype>

namespace stsresize::fake {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
         c == '/';
}

// A cursor over selector text. Tokens: names ([A-Za-z0-9._/-]+), and the punctuation
// "!", "!=", "=", "==", ",", "(", ")".
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_spaces();
    return pos_ >= text_.size();
  }
  bool take(std::string_view punctuation) {
    skip_spaces();
    if (text_.substr(pos_, punctuation.size()) != punctuation) return false;
    pos_ += punctuation.size();
    return true;
  }
  bool peek(std::string_view punctuation) {
    skip_spaces();
    return text_.substr(pos_, punctuation.size()) == punctuation;
  }
  std::string name() {
    skip_spaces();
    std::size_t start = pos_;
    while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
    return std::string{text_.substr(start, pos_ - start)};
  }
  std::size_t position() const { return pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::string error_at(std::string_view text, const Scanner& scanner, std::string_view what) {
  return "unable to parse requirement: " + std::string{what} + " at position " +
         std::to_string(scanner.position()) + " in \"" + std::string{text} + "\"";
}

bool valid_value(const std::string& value) {
  if (value.empty()) return true;
  if (value.size() > 63 || value.find('/') != std::string::npos) return false;
  return std::isalnum(static_cast<unsigned char>(value.front())) &&
         std::isalnum(static_cast<unsigned char>(value.back()));
}

std::optional<std::string> label_value(const Json& labels, const std::string& key) {
  if (!labels.is_object()) return std::nullopt;
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

std::expected<LabelSelector, std::string> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  Scanner scanner{text};
  if (scanner.at_end()) return selector;
  while (true) {
    Requirement requirement;
    if (scanner.take("!") && !scanner.peek("=")) {
      requirement.op = Operator::DoesNotExist;
      requirement.key = scanner.name();
      if (requirement.key.empty()) return std::unexpected(error_at(text, scanner, "missing key"));
    } else {
      requirement.key = scanner.name();
      if (requirement.key.empty()) return std::unexpected(error_at(text, scanner, "missing key"));
      if (scanner.at_end() || scanner.peek(",")) {
        requirement.op = Operator::Exists;
      } else if (scanner.take("!=")) {
        requirement.op = Operator::NotEquals;
      } else if (scanner.take("==") || scanner.take("=")) {
        requirement.op = Operator::Equals;
      } else {
        std::string word = scanner.name();
        if (word == "in") {
          requirement.op = Operator::In;
        } else if (word == "notin") {
          requirement.op = Operator::NotIn;
        } else {
          return std::unexpected(error_at(text, scanner, "unknown operator"));
        }
        if (!scanner.take("(")) return std::unexpected(error_at(text, scanner, "expected '('"));
        while (true) {
          std::string value = scanner.name();
          if (!valid_value(value)) return std::unexpected(error_at(text, scanner, "bad value"));
          requirement.values.push_back(std::move(value));
          if (scanner.take(")")) break;
          if (!scanner.take(",")) return std::unexpected(error_at(text, scanner, "expected ','"));
        }
      }
      if (requirement.op == Operator::Equals || requirement.op == Operator::NotEquals) {
        std::string value = scanner.name();
        if (!valid_value(value)) return std::unexpected(error_at(text, scanner, "bad value"));
        requirement.values.push_back(std::move(value));
      }
    }
    selector.requirements_.push_back(std::move(requirement));
    if (scanner.at_end()) return selector;
    if (!scanner.take(",")) return std::unexpected(error_at(text, scanner, "expected ','"));
  }
}

std::expected<LabelSelector, std::string> LabelSelector::from_json(const Json& selector) {
  LabelSelector result;
  if (!selector.is_object()) return std::unexpected("a label selector must be an object");
  const Json match_labels = selector.value("matchLabels", Json::object());
  for (const auto& [key, value] : match_labels.items()) {
    if (!value.is_string()) return std::unexpected("matchLabels values must be strings");
    result.requirements_.push_back({key, Operator::Equals, {value.get<std::string>()}});
  }
  for (const Json& expression : selector.value("matchExpressions", Json::array())) {
    Requirement requirement;
    requirement.key = expression.value("key", "");
    const std::string op = expression.value("operator", "");
    if (op == "In") {
      requirement.op = Operator::In;
    } else if (op == "NotIn") {
      requirement.op = Operator::NotIn;
    } else if (op == "Exists") {
      requirement.op = Operator::Exists;
    } else if (op == "DoesNotExist") {
      requirement.op = Operator::DoesNotExist;
    } else {
      return std::unexpected("\"" + op + "\" is not a valid label selector operator");
    }
    for (const Json& value : expression.value("values", Json::array())) {
      if (!value.is_string()) return std::unexpected("matchExpressions values must be strings");
      requirement.values.push_back(value.get<std::string>());
    }
    result.requirements_.push_back(std::move(requirement));
  }
  return result;
}

std::string LabelSelector::to_string() const {
  std::vector<const Requirement*> sorted;
  for (const Requirement& requirement : requirements_) sorted.push_back(&requirement);
  std::ranges::stable_sort(sorted, {}, &Requirement::key);
  std::string text;
  for (const Requirement* requirement : sorted) {
    if (!text.empty()) text += ',';
    std::vector<std::string> values = requirement->values;
    std::ranges::sort(values);
    values.erase(std::unique(values.begin(), values.end()), values.end());
    std::string listed;
    for (const std::string& value : values) listed += (listed.empty() ? "" : ",") + value;
    const std::string& key = requirement->key;
    const std::string first = values.empty() ? "" : values.front();
    switch (requirement->op) {
      case Operator::Equals:
        text += key + "=" + first;
        break;
      case Operator::NotEquals:
        text += key + "!=" + first;
        break;
      case Operator::In:
        text += key + " in (" + listed + ")";
        break;
      case Operator::NotIn:
        text += key + " notin (" + listed + ")";
        break;
      case Operator::Exists:
        text += key;
        break;
      case Operator::DoesNotExist:
        text += "!" + key;
        break;
    }
  }
  return text;
}

bool LabelSelector::matches(const Json& labels) const {
  return std::ranges::all_of(requirements_, [&](const Requirement& requirement) {
    std::optional<std::string> value = label_value(labels, requirement.key);
    auto listed = [&] {
      return std::ranges::find(requirement.values, *value) != requirement.values.end();
    };
    switch (requirement.op) {
      case Operator::Exists:
        return value.has_value();
      case Operator::DoesNotExist:
        return !value.has_value();
      case Operator::Equals:
        return value.has_value() && listed();
      case Operator::In:
        return value.has_value() && listed();
      // As in apimachinery: a missing label satisfies != and notin.
      case Operator::NotEquals:
        return !value.has_value() || !listed();
      case Operator::NotIn:
        return !value.has_value() || !listed();
    }
    return false;
  });
}

std::expected<FieldSelector, std::string> FieldSelector::parse(std::string_view text) {
  FieldSelector selector;
  Scanner scanner{text};
  if (scanner.at_end()) return selector;
  while (true) {
    Requirement requirement;
    requirement.field = scanner.name();
    if (requirement.field.empty()) {
      return std::unexpected("invalid field selector \"" + std::string{text} + "\"");
    }
    if (scanner.take("!=")) {
      requirement.equals = false;
    } else if (!(scanner.take("==") || scanner.take("="))) {
      return std::unexpected("invalid field selector \"" + std::string{text} + "\"");
    }
    requirement.value = scanner.name();
    selector.requirements_.push_back(std::move(requirement));
    if (scanner.at_end()) return selector;
    if (!scanner.take(",")) {
      return std::unexpected("invalid field selector \"" + std::string{text} + "\"");
    }
  }
}

bool FieldSelector::matches(
    const std::function<std::optional<std::string>(const std::string&)>& value_of) const {
  return std::ranges::all_of(requirements_, [&](const Requirement& requirement) {
    std::optional<std::string> value = value_of(requirement.field);
    return value.has_value() && ((*value == requirement.value) == requirement.equals);
  });
}

}  // namespace stsresize::fake
