#pragma once
// The Kubernetes port: the subset of the API that stsresize uses, in API-server terms.
// Implementations: adapters/kube (HTTP, the real thing) and adapters/fake (in memory, for tests).
// Both are held to the same contract suite (tests/contract).
#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/time.h"

namespace stsresize {

enum class Kind {
  StatefulSet,
  PersistentVolumeClaim,
  PersistentVolume,
  Job,
  Pod,
  StorageClass,
  Event,
  ConfigMap,
  Lease,
  PodDisruptionBudget,
  Node,
};

// How the API names a kind, in URLs, apiVersion fields, error texts and RBAC rules. The one
// place that says it: the HTTP adapter, the fake and the permission checks all read it.
struct KindInfo {
  std::string_view name;     // "StatefulSet", as in an object's `kind`
  std::string_view group;    // "apps"; "" for the core group
  std::string_view version;  // "v1"
  std::string_view plural;   // "statefulsets": the REST resource
  bool namespaced;           // false for PersistentVolume, StorageClass and Node
};

// No `default:` on purpose: -Wswitch (an error here) stops a Kind added without its row.
constexpr KindInfo kind_info(Kind kind) {
  switch (kind) {
    case Kind::StatefulSet:
      return {"StatefulSet", "apps", "v1", "statefulsets", true};
    case Kind::PersistentVolumeClaim:
      return {"PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", true};
    case Kind::PersistentVolume:
      return {"PersistentVolume", "", "v1", "persistentvolumes", false};
    case Kind::Job:
      return {"Job", "batch", "v1", "jobs", true};
    case Kind::Pod:
      return {"Pod", "", "v1", "pods", true};
    case Kind::StorageClass:
      return {"StorageClass", "storage.k8s.io", "v1", "storageclasses", false};
    case Kind::Event:
      return {"Event", "", "v1", "events", true};
    case Kind::ConfigMap:
      return {"ConfigMap", "", "v1", "configmaps", true};
    case Kind::Lease:
      return {"Lease", "coordination.k8s.io", "v1", "leases", true};
    case Kind::PodDisruptionBudget:
      return {"PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", true};
    case Kind::Node:
      return {"Node", "", "v1", "nodes", false};
  }
  // Only a value cast from outside the enumeration gets here.
  return {"Unknown", "", "v1", "unknown", true};
}

std::string_view to_string(Kind kind);  // kind_info(kind).name
bool is_namespaced(Kind kind);          // kind_info(kind).namespaced
// An object's apiVersion: "apps/v1", or "v1" for the core group.
std::string api_version_of(Kind kind);

// Names one object. `ns` is empty for cluster-scoped kinds (PersistentVolume, StorageClass).
struct ObjectRef {
  Kind kind;
  std::string ns;
  std::string name;

  friend bool operator==(const ObjectRef&, const ObjectRef&) = default;
};
std::string to_string(const ObjectRef& ref);  // "PersistentVolumeClaim ns/name"

// Built from an object's metadata (kind supplied by the caller).
ObjectRef ref_of(Kind kind, const Json& object);

struct ListOptions {
  std::string label_selector;  // e.g. "app=web,stsresize.dev/operation"
  std::string field_selector;
  std::int64_t limit = 0;  // 0: no paging requested
  std::string continue_token;
};

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;  // opaque; where a watch would start
  std::string continue_token;    // non-empty when more pages remain
};

enum class PatchType { Merge, Json };

enum class Propagation { Default, Background, Foreground, Orphan };

struct DeleteOptions {
  Propagation propagation = Propagation::Default;
  // Preconditions: the delete fails with Conflict unless the live object still has them.
  std::optional<std::string> uid;
  std::optional<std::string> resource_version;
  std::optional<std::int64_t> grace_period_seconds;
};

struct EvictOptions {
  // Precondition: the eviction fails with Conflict unless the live pod still has this uid.
  std::optional<std::string> uid;
  // Ask the API server whether it would evict (PodDisruptionBudgets checked), changing nothing.
  bool dry_run = false;
};

// Reasons the API server gives, mapped from the HTTP status and the Status object.
enum class KubeErrorCode {
  NotFound,         // 404
  AlreadyExists,    // 409, reason AlreadyExists
  Conflict,         // 409, reason Conflict (stale resourceVersion or failed precondition)
  Gone,             // 410 (expired resourceVersion: relist)
  Invalid,          // 422, with causes in `message`
  BadRequest,       // 400
  Unauthorized,     // 401
  Forbidden,        // 403
  TooManyRequests,  // 429, `retry_after` set when the server said so
  ServerError,      // 5xx
  Unreachable,      // connection refused, TLS failure, timeout: no answer from the server
};
std::string_view to_string(KubeErrorCode code);

struct KubeError {
  KubeErrorCode code;
  std::string message;
  Duration retry_after{0};

  // Worth retrying with backoff, unchanged: the server may answer differently later.
  bool transient() const;
};

template <class T>
using KubeResult = std::expected<T, KubeError>;

enum class WatchEventType { Added, Modified, Deleted, Bookmark };
std::string_view to_string(WatchEventType type);

// One change, as kube-apiserver streams it. With a selector, an object that starts matching
// arrives as Added and one that stops matching as Deleted (its last matching state).
struct WatchEvent {
  WatchEventType type;
  Json object;  // the object after the change (Deleted: its last state); Bookmark: only
                // apiVersion/kind/metadata.resourceVersion
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  // Deliver changes after this version (an informer passes the list's resourceVersion). Empty
  // means what kube-apiserver does for an unset resourceVersion: synthetic Added events for
  // every existing object, then the changes.
  std::string resource_version;
  bool allow_bookmarks = true;
  Duration timeout =
      std::chrono::minutes{5};  // the server ends the stream after this (timeoutSeconds)
};

// Return false to stop watching.
using WatchHandler = std::function<bool(const WatchEvent&)>;

class Kubernetes {
 public:
  virtual ~Kubernetes() = default;

  virtual KubeResult<Json> get(const ObjectRef& ref) = 0;
  // `ns` empty lists across all namespaces (or a cluster-scoped kind).
  virtual KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                                      const ListOptions& options = {}) = 0;
  // Namespace and name come from the object's metadata. Returns the object as stored.
  virtual KubeResult<Json> create(Kind kind, const Json& object) = 0;
  // Optimistic concurrency: metadata.resourceVersion must be the live one, else Conflict.
  virtual KubeResult<Json> update(Kind kind, const Json& object) = 0;
  virtual KubeResult<Json> update_status(Kind kind, const Json& object) = 0;
  virtual KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) = 0;
  // Succeeds when deletion was accepted; the object may linger while finalizers run.
  virtual KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) = 0;
  // The pods/eviction subresource (a policy/v1 Eviction): deletes the pod as a DELETE would,
  // unless a PodDisruptionBudget selecting it allows no disruption now, which is TooManyRequests
  // with the server's reason (retry_after 0: it is not throttling, and waiting does not end it by
  // itself). Only Pods have it.
  virtual KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) = 0;
  // The /scale subresource (an autoscaling/v1 Scale): the object's name, namespace, uid,
  // resourceVersion and creationTimestamp, spec.replicas (omitted when 0), status.replicas and
  // status.selector (the selector as a string). Of the port's kinds only StatefulSets have it;
  // any other kind is NotFound.
  virtual KubeResult<Json> get_scale(const ObjectRef& ref) = 0;
  // Sets spec.replicas through /scale and returns the new Scale. A non-empty `resource_version`
  // is a precondition (Conflict unless it is the live one); empty updates unconditionally.
  // Negative replicas are Invalid.
  virtual KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                        const std::string& resource_version) = 0;
  // Streams changes until the server ends the stream (timeout), the handler returns false, or
  // `stop` is requested: all three return success. Errors: Gone when the resourceVersion is too
  // old (HTTP 410 or an in-stream ERROR event with code 410: relist), any mapped request error,
  // Unreachable when the stream breaks or stays silent past the idle timeout.
  virtual KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                                 std::stop_token stop, const WatchHandler& handler) = 0;
};

}  // namespace stsresize
