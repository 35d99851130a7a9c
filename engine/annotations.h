#pragma once
// The authoritative state of an in-flight operation: annotations on its StatefulSet.
//   stsresize.dev/state           versioned JSON of the Operation (engine/operation_codec.h)
//   stsresize.dev/phase           phase name for humans (`kubectl get sts -L`); never read back
//   stsresize.dev/last-operation  short summary left when an operation completed
//   stsresize.dev/original-replicas  the replica count the operation in flight started from,
//                                 apart from the state: a state removed by hand (and a journal
//                                 lost) must not make the next operation start from the 0 this
//                                 one scaled to
//   stsresize.dev/resize          an explicit request, written by the user (resize_request.h)
//   stsresize.dev/resize-status   why stsresize refused that request
//   stsresize.dev/awaiting-approval  "BackingUp -> Recreating" while a transition waits for
//                                 `stsresize advance --approve` (engine/actions/request.h)
//   label stsresize.dev/failed    "true" once an operation failed: never resized again
//                                 automatically until a person removes it
// A crashed or rescheduled controller rebuilds every operation from these alone.
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/operation.h"
#include "engine/vocabulary.h"

namespace stsresize {

std::string encode_state_annotation(const Operation& operation);
// Strict: malformed JSON, an unknown version or phase, a missing or mistyped field, a bad
// quantity: a clear error quoting the annotation name.
std::expected<Operation, std::string> decode_state_annotation(std::string_view text);

// The operation recorded on a StatefulSet; nullopt when none is. Also refuses a state that
// names another StatefulSet (namespace, name or uid differ: e.g. the set was re-created).
// One exception: in UpdatingTemplate, before StatefulSetRecreated, the uid may differ — that
// object is the one stsresize re-created from the stored definition (it carries the state).
std::expected<std::optional<Operation>, std::string> read_operation(const Json& statefulset);

// A copy of `statefulset` whose stsresize annotations and label describe `operation`; every
// other field is kept, including metadata.resourceVersion (the write is optimistic).
// Completed: state, phase and original-replicas removed, last-operation set. Failed: state
// kept, label added.
Json with_operation(Json statefulset, const Operation& operation);

// The original-replicas annotation: nullopt when absent; an error quoting it when it is not a
// replica count (a person edited it).
std::expected<std::optional<std::int32_t>, std::string> original_replicas_mark(
    const Json& statefulset);

bool is_marked_failed(const Json& statefulset);

// The backup claims among `claims` that stsresize made for `statefulset` (labels
// stsresize.dev/statefulset and stsresize.dev/purpose=backup) in an operation other than the one
// its last-operation annotation records as completed (whose backups `stsresize advance
// --skip-step` may have kept): the data of an operation that may not have ended. Names, sorted.
// With no state annotation on the StatefulSet, such an operation must not be forgotten.
std::vector<std::string> unfinished_backups(const Json& statefulset,
                                            const std::vector<Json>& claims);
// The id in the last-operation annotation; empty when there is none or it cannot be read.
std::string last_operation_id(const Json& statefulset);

}  // namespace stsresize
