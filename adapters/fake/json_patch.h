#pragma once
// Patch application as the API server does it (k8s.io/apiserver endpoints/handlers/patch.go):
// a patch document that cannot be decoded is 400 BadRequest; a JSON patch that decodes but
// cannot be applied (failed "test", missing path) is 422 Invalid.
#include "engine/json.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::fake {

// RFC 7386: objects merge recursively, null deletes a key, anything else replaces.
KubeResult<Json> apply_merge_patch(const Json& target, const Json& patch);
// RFC 6902: add, remove, replace, move, copy, test; all or nothing.
KubeResult<Json> apply_json_patch(const Json& target, const Json& patch);

}  // namespace stsresize::fake
