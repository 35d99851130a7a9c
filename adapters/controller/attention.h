#pragma once
// Which StatefulSets in the informer caches deserve a reconcile. A reconcile reads the live
// StatefulSet from the API server (and everything a destructive step decides on: cached_reads.h),
// so reconciling every StatefulSet on every change would cost requests on an idle cluster; this
// filter, run on cached objects, keeps idle StatefulSets free: only those with an operation
// under way, an explicit resize request, or claims smaller than their templates (or a resize
// the planner refuses, so that the refusal is reported) are reconciled.
#include <cstddef>
#include <string>
#include <vector>

#include "engine/json.h"

namespace stsresize {

enum class Attention {
  None,       // nothing to do
  Operation,  // an operation is under way (a state annotation that is not terminal, or no
              // state but backup claims of an operation that did not complete)
  Request,    // an explicit resize request annotation
  Detected,   // the planner finds claims to resize, or refuses the templates as they are; or
              // the StatefulSet opts in to the drain (template or claim policy) and has claims
              // outside its replicas, or its claim policy is invalid; or its template cannot
              // drain (whenScaled Delete) and that is not recorded yet, or no longer true; or
              // it opts in to lost-volume recovery (checked again at an interval)
  Invalid,    // the state annotation cannot be read: the reconciler reports it
};
std::string_view to_string(Attention attention);

// `claims_in_namespace` and `storage_classes` as cached; their staleness only delays work.
Attention needs_attention(const Json& statefulset, const std::vector<Json>& claims_in_namespace,
                          const std::vector<Json>& storage_classes);

// What a terminal reconcile result depended on: a refusal is not retried until the
// StatefulSet's spec (or generation), labels or annotations change (its status changes all
// the time).
std::size_t refusal_fingerprint(const Json& statefulset);

}  // namespace stsresize
