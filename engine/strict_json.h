#pragma once
// Strict reading of the JSON documents stsresize itself writes (annotation state, journal
// payloads): every field must be present with the right type and nothing else may appear.
// A document written by a different version is refused with a message naming the field,
// never half-understood. The first problem wins; later reads return defaults.
#include <cstdint>
#include <expected>
#include <set>
#include <string>
#include <string_view>

#include "engine/json.h"

namespace stsresize {

class StrictObject {
 public:
  // `where` names the document in messages, e.g. "annotation stsresize.dev/state".
  StrictObject(const Json& object, std::string where);

  std::string string(std::string_view key);
  std::int64_t integer(std::string_view key);
  bool boolean(std::string_view key);
  // Must be an object / array; returns null Json on error.
  const Json& object(std::string_view key);
  const Json& array(std::string_view key);
  // Present and null: false. Present and an object: true (read it with object()).
  bool non_null(std::string_view key);
  // Whether the document has `key`: for the optional fields that later versions added.
  bool has(std::string_view key) const;

  void fail(std::string message);
  bool ok() const { return error_.empty(); }
  const std::string& where() const { return where_; }
  // Also refuses any key that was never read.
  std::expected<void, std::string> finish();

 private:
  const Json* field(std::string_view key, Json::value_t type, std::string_view type_name);

  const Json& object_;
  std::string where_;
  std::set<std::string, std::less<>> read_;
  std::string error_;
};

}  // namespace stsresize
