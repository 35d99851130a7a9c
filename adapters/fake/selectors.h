#pragma once
// Label and field selectors with the grammar of k8s.io/apimachinery (labels.Parse,
// fields.ParseSelector), for the in-memory API server. A parse error is what the API server
// answers 400 BadRequest to.
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"

namespace stsresize::fake {

class LabelSelector {
 public:
  enum class Operator { Equals, NotEquals, In, NotIn, Exists, DoesNotExist };
  struct Requirement {
    std::string key;
    Operator op = Operator::Exists;
    std::vector<std::string> values;
  };

  // "a=b,c!=d,e in (x,y),f notin (z),g,!h"; empty text selects everything.
  static std::expected<LabelSelector, std::string> parse(std::string_view text);
  // A metav1.LabelSelector object ({matchLabels, matchExpressions}); an empty object selects
  // everything, as it does for StatefulSets and Jobs.
  static std::expected<LabelSelector, std::string> from_json(const Json& selector);
  // `labels` is metadata.labels (absent/null means no labels).
  bool matches(const Json& labels) const;
  // As labels.Selector's String() writes it (a Scale's status.selector): requirements sorted by
  // key, "k=v", "k!=v", "k in (a,b)", "k notin (a,b)", "k", "!k", set values sorted.
  std::string to_string() const;

 private:
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  struct Requirement {
    std::string field;
    bool equals = true;  // false: !=
    std::string value;
  };

  // "metadata.name=x,status.phase!=Running"; empty text selects everything.
  static std::expected<FieldSelector, std::string> parse(std::string_view text);
  const std::vector<Requirement>& requirements() const { return requirements_; }
  // `value_of` returns the object's value of a field, or nullopt when the kind does not
  // support selecting on that field (the caller decides how to refuse, before matching).
  bool matches(const std::function<std::optional<std::string>(const std::string&)>& value_of) const;

 private:
  std::vector<Requirement> requirements_;
};

}  // namespace stsresize::fake
