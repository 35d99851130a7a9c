#pragma once
// Kubernetes objects travel through the engine as JSON documents rather than a typed model:
// a read-modify-write then keeps every field this version does not know about.
#include <nlohmann/json.hpp>

namespace stsresize {
using Json = nlohmann::json;
}  // namespace stsresize
