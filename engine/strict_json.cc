#include "engine/strict_json.h"

namespace stsresize {

namespace {
const Json kNull;
}

StrictObject::StrictObject(const Json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) fail(where_ + ": expected a JSON object");
}

bool StrictObject::has(std::string_view key) const {
  return object_.is_object() && object_.contains(key);
}

void StrictObject::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

const Json* StrictObject::field(std::string_view key, Json::value_t type,
                                std::string_view type_name) {
  if (!ok()) return nullptr;
  read_.emplace(key);
  auto it = object_.find(key);
  if (it == object_.end()) {
    fail(where_ + ": missing field \"" + std::string{key} + "\"");
    return nullptr;
  }
  const bool matches = it->type() == type || (type == Json::value_t::number_integer &&
                                              it->type() == Json::value_t::number_unsigned);
  if (!matches) {
    fail(where_ + ": field \"" + std::string{key} + "\" must be " + std::string{type_name});
    return nullptr;
  }
  return &*it;
}

std::string StrictObject::string(std::string_view key) {
  const Json* value = field(key, Json::value_t::string, "a string");
  return value ? value->get<std::string>() : std::string{};
}

std::int64_t StrictObject::integer(std::string_view key) {
  const Json* value = field(key, Json::value_t::number_integer, "an integer");
  if (!value) return 0;
  if (value->is_number_unsigned() &&
      value->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    fail(where_ + ": field \"" + std::string{key} + "\" is out of range");
    return 0;
  }
  return value->get<std::int64_t>();
}

bool StrictObject::boolean(std::string_view key) {
  const Json* value = field(key, Json::value_t::boolean, "a boolean");
  return value ? value->get<bool>() : false;
}

const Json& StrictObject::object(std::string_view key) {
  const Json* value = field(key, Json::value_t::object, "an object");
  return value ? *value : kNull;
}

const Json& StrictObject::array(std::string_view key) {
  const Json* value = field(key, Json::value_t::array, "an array");
  return value ? *value : kNull;
}

bool StrictObject::non_null(std::string_view key) {
  if (!ok()) return false;
  auto it = object_.find(key);
  if (it == object_.end()) {
    read_.emplace(key);
    fail(where_ + ": missing field \"" + std::string{key} + "\"");
    return false;
  }
  if (it->is_null()) {
    read_.emplace(key);
    return false;
  }
  return true;
}

std::expected<void, std::string> StrictObject::finish() {
  if (ok()) {
    for (const auto& [key, value] : object_.items()) {
      if (!read_.contains(key)) {
        fail(where_ + ": unknown field \"" + key + "\"");
        break;
      }
    }
  }
  if (!ok()) return std::unexpected(error_);
  return {};
}

}  // namespace stsresize
