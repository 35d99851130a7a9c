#pragma once
// What the informer caches keep of an object: the fields stsresize reads from cached objects,
// and nothing else (controller-runtime's cache transform functions do the same). At 5,000
// StatefulSets and 15,000 claims the cache is most of the controller's memory, and most of an
// object is never read: a StatefulSet's pod template, its revisions, a claim's finalizers,
// every object's managedFields and kubectl's last-applied copy.
//
// The lists are explicit paths (cached_fields.cc), one list per kind. A path keeps its whole
// subtree; "*" stands for every element of an array. Whoever makes the controller read another
// field of a cached object adds its path there, next to the accessors that read it
// (engine/k8s_objects.h says which accessors the lists serve), and the per-kind tests in
// tests/unit/cached_fields_test.cc pin each list.
//
// A trimmed object is for reading only: it must never be the base of an update (a PUT of it
// would drop everything trimmed). Updates start from a live read, as they do today.
#include <span>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/ports/kubernetes.h"

namespace stsresize {

using FieldPath = std::vector<std::string_view>;

// The paths kept for `kind`; empty for a kind that is cached whole (less managedFields and the
// last-applied annotation): Jobs and ConfigMaps are watched only when stsresize made them
// (label stsresize.dev/statefulset), a few at a time, so trimming them would save nothing worth
// the risk of a read that finds its field gone. Pods are all watched (the fence reads every pod
// of the namespace), and trimmed.
std::span<const FieldPath> cached_fields(Kind kind);

// `object` with only `paths` kept. An object or array the paths go through is rebuilt with
// only the members they name; a path whose field is absent, or not of the shape the path
// expects (an object, an array for "*"), keeps nothing of it.
Json keep_fields(const Json& object, std::span<const FieldPath> paths);

// What the informer of `kind` stores: keep_fields with cached_fields(kind), less the
// last-applied annotation (kubectl.kubernetes.io/last-applied-configuration) and
// metadata.managedFields in every case.
Json trim_for_cache(Kind kind, Json object);

}  // namespace stsresize
