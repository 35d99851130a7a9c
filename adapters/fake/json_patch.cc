#include "adapters/fake/json_patch.h"

#include <algorithm>

namespace stsresize::fake {

KubeResult<Json> apply_merge_patch(const Json& target, const Json& patch) {
  // A non-object patch would replace the whole object, which then fails to decode as one.
  if (!patch.is_object()) {
    return std::unexpected(KubeError{KubeErrorCode::BadRequest,
                                     "error decoding patch: a merge patch must be an object"});
  }
  Json result = target;
  result.merge_patch(patch);
  return result;
}

KubeResult<Json> apply_json_patch(const Json& target, const Json& patch) {
  const bool decodable = patch.is_array() && std::ranges::all_of(patch, [](const Json& op) {
                           return op.is_object() && op.contains("op") && op["op"].is_string() &&
                                  op.contains("path") && op["path"].is_string();
                         });
  if (!decodable) {
    return std::unexpected(
        KubeError{KubeErrorCode::BadRequest,
                  "error decoding patch: a JSON patch is an array of operations with op and path"});
  }
  try {
    return target.patch(patch);
  } catch (const Json::exception& error) {
    // Like evanphx/json-patch, operations are checked only when applied: an unknown op or a
    // missing value is an apply failure (422), not a decode failure.
    return std::unexpected(KubeError{KubeErrorCode::Invalid, error.what()});
  }
}

}  // namespace stsresize::fake
