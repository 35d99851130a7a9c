#pragma once
// An in-memory API server implementing the Kubernetes port, for unit and crash-resume tests.
//
// Modelled on kube-apiserver v1.37 (checked against its source; tests/contract holds both to
// the same suite):
// - one cluster-wide resourceVersion counter; every write bumps it, reads never do, and an
//   update or patch that changes nothing is not a write (same resourceVersion, no history);
// - create fills uid, creationTimestamp (from the Clock), generation 1 (StatefulSet, Job, Pod),
//   apiVersion/kind, the defaults stsresize meets, and refuses a body that carries a
//   resourceVersion (500, as the real server does); generateName is honoured;
// - update: a stale resourceVersion is Conflict; a missing one is an unconditional update
//   (except Lease: 422) — the real server's behaviour; generation bumps on spec changes only;
//   for kinds with a status subresource the main resource ignores status and update_status
//   ignores spec (and, for Pods only, metadata: other kinds really do persist metadata changes
//   sent to /status); update_status of a kind without /status is NotFound;
// - immutable fields (api_rules.h) are 422; growing a bound PVC whose StorageClass does not
//   allow expansion is 403 (admission), growing an unbound one is 422 (validation);
// - patch: merge (RFC 7386) and JSON (RFC 6902; failed test → 422); a resourceVersion in the
//   patch is a precondition; the result passes through the update rules;
// - remove: uid/resourceVersion preconditions → Conflict; finalizers keep the object with
//   deletionTimestamp until an update removes the last one; PVCs get the
//   kubernetes.io/pvc-protection finalizer at creation (admission), PVs
//   kubernetes.io/pv-protection;
// - propagation: Orphan strips the owner's ownerReferences from dependents at once (the real
//   server does it through the "orphan" finalizer and the garbage collector: same end state);
//   Background removes the owner now and leaves dependents to the garbage collector, which
//   runs in SimulatedCluster::tick(); Foreground is treated like Background (the real owner
//   would linger until dependents are gone). Default means what the kind's strategy says:
//   Orphan for batch/v1 Jobs (kept for backward compatibility upstream!), Background else;
// - list: label and field selectors (metadata.name, metadata.namespace for all kinds;
//   status.phase and spec.nodeName for Pods; involvedObject.*, reason, type for Events),
//   items sorted by namespace/name without kind/apiVersion (as the server sends them), paging with
//   an opaque continue token. Deviation: later pages read the current state, not a snapshot
//   at the first page's resourceVersion (they still report that resourceVersion).
// - watch: served from the write history. From a resourceVersion: every matching write after
//   it (Added for creates, Modified for updates and patches, Deleted with the last stored
//   state and the deletion's resourceVersion); with a selector, an object that starts matching
//   is Added and one that stops matching is Deleted, as the watch cache does. Without one:
//   synthetic Added events for the current objects first. A resourceVersion older than the
//   last compact() is Gone. Deviations: kube-apiserver sends bookmarks about every minute and
//   2 s before the timeout; the fake sends one, when the timeout ends the stream. A
//   resourceVersion newer than the current one is accepted (the server waits up to 3 s for
//   it, then fails with 504 "Too large resource version"). The timeout is real (steady) time.
// - scale: a StatefulSet's /scale is the Scale its ScaleREST builds (spec.replicas omitted
//   when 0, as autoscaling/v1's omitempty does); an update with a resourceVersion is
//   conditional, without one unconditional, and passes through the StatefulSet's update rules
//   (generation bumps); other kinds have no /scale (NotFound);
// Not modelled: managedFields / server-side apply, strategic merge patch, quantity
// canonicalisation, namespaces as objects (any namespace is accepted), graceful pod deletion
// (pods are removed at once), most validation outside what stsresize touches.
//
// Test controls: fault rules and a mutation budget (simulated crash), call counters, a history
// of every write, raw access for setting up states the API would not allow, watch compaction
// and broken watches. Thread-safe; watch handlers run without the fake's lock, so they may call
// back into it (but watch() itself must not be called from an on_mutation observer).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/ports/clock.h"
#include "engine/ports/kubernetes.h"

namespace stsresize {

enum class Verb {
  Get,
  List,
  Create,
  Update,
  UpdateStatus,
  Patch,
  Remove,
  Watch,
  GetScale,
  UpdateScale,
  Evict
};
std::string_view to_string(Verb verb);
bool is_mutating(Verb verb);

// Who wrote: the code under test through the port, or the simulated cluster (controllers,
// garbage collector, test setup through system()).
enum class Actor { Client, System };

struct Mutation {
  std::int64_t sequence = 0;  // 1, 2, 3... over all actors
  Actor actor = Actor::Client;
  Verb verb = Verb::Update;
  ObjectRef ref;
  Json object;           // as stored after the write; for a deletion, the last stored state
  bool deleted = false;  // the object no longer exists after this write
  TimePoint time;
  std::int64_t resource_version = 0;  // the cluster's resourceVersion this write produced
};

struct FaultRule {
  static constexpr int kForever = -1;

  // Every member has an initialiser so that designated initialisers compile warning-free:
  //   kube.inject({.verb = Verb::Get, .kind = Kind::Pod, .error = KubeError{...}});
  std::optional<Verb> verb = {};  // nullopt: any verb
  std::optional<Kind> kind = {};
  std::optional<std::string> name = {};  // never matches list and watch calls
  int times = 1;                         // matching calls affected, or kForever
  // Fail instead of executing...
  std::optional<KubeError> error = {};
  // ...or, when set, execute the call and then answer `error` anyway: the write happened but
  // the client never heard of it (a lost response).
  bool fail_after_applying = false;
  // Runs before the call, outside the lock: advance a ManualClock (latency), or write the
  // object concurrently (through system()) to provoke a conflict.
  std::function<void()> action = {};
};

class FakeKubernetes final : public Kubernetes {
 public:
  explicit FakeKubernetes(const Clock& clock, std::uint64_t seed = 1);
  ~FakeKubernetes() override;

  // The port, as the code under test sees it: faults, budget and counters apply.
  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override;
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override;
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override;
  KubeResult<Json> get_scale(const ObjectRef& ref) override;
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override;
  // The eviction subresource with the disruption controller's arithmetic done at the moment of
  // the request (no PodDisruptionBudget status is kept): a budget's desired healthy count from
  // minAvailable, or from maxUnavailable and the replicas of each selected pod's controller (a
  // pod without one makes such a budget allow nothing, as the real controller's UnmanagedPods).
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override;

  // The same API rules as the cluster's own components use them: no faults, no budget, not
  // counted, recorded in history as Actor::System. For test setup and simulated controllers.
  Kubernetes& system();

  // ---- Faults ----
  void inject(FaultRule rule);
  void clear_faults();
  // After `n` more successful mutating client calls, every client call fails with
  // Unreachable("injected crash") until the budget is reset; nullopt lifts it.
  void set_mutation_budget(std::optional<int> n);
  // As etcd compaction: a watch from a resourceVersion older than the current one gets Gone.
  void compact();
  // Every open watch returns `error` at once (an API server restart, a broken connection).
  void break_watches(KubeError error);

  // ---- Observation ----
  // Client calls attempted (including failed and injected ones), by verb and optionally kind.
  int calls(Verb verb, std::optional<Kind> kind = std::nullopt) const;
  // Successful mutating client calls, including those that changed nothing.
  int mutations() const;
  std::vector<Mutation> history() const;
  // Called synchronously after every write (any actor); it may call back into this object.
  void on_mutation(std::function<void(const Mutation&)> observer);
  std::string current_resource_version() const;

  // ---- Raw access: bypasses every API rule. Never for code under test. ----
  // Stores the object as given (filling apiVersion/kind, uid and creationTimestamp when
  // missing), replacing any existing one; bumps the resourceVersion.
  Json put_raw(Kind kind, Json object);
  // Edits a stored object in place; nullopt when missing. The one rule kept: an object with a
  // deletionTimestamp and no finalizers left is gone (and nullopt is returned).
  std::optional<Json> mutate_raw(const ObjectRef& ref, const std::function<void(Json&)>& change);
  std::optional<Json> get_raw(const ObjectRef& ref) const;
  // Sorted by namespace/name, with kind/apiVersion; `ns` empty: all namespaces.
  std::vector<Json> list_raw(Kind kind, const std::string& ns = "") const;

  const Clock& clock() const { return clock_; }

 private:
  class SystemClient;
  using Key = std::tuple<Kind, std::string, std::string>;

  struct FaultDecision {
    std::optional<KubeError> before;
    std::optional<KubeError> after;
    std::vector<std::function<void()>> actions;
  };
  FaultDecision decide_faults(Verb verb, Kind kind, const std::string& name);
  template <class T, class Operation>
  KubeResult<T> intercept(Verb verb, Kind kind, const std::string& name, Operation operation);

  // The API rules; callers hold mutex_.
  KubeResult<Json> do_get(const ObjectRef& ref) const;
  KubeResult<ObjectList> do_list(Kind kind, const std::string& ns,
                                 const ListOptions& options) const;
  KubeResult<Json> do_create(Actor actor, Kind kind, const Json& object);
  KubeResult<Json> do_update(Actor actor, Verb verb, Kind kind, const Json& object);
  KubeResult<Json> do_patch(Actor actor, const ObjectRef& ref, PatchType type, const Json& patch);
  // `verb`: what the history records (an eviction deletes as a DELETE does).
  KubeResult<void> do_remove(Actor actor, const ObjectRef& ref, const DeleteOptions& options,
                             Verb verb = Verb::Remove);
  KubeResult<Json> do_get_scale(const ObjectRef& ref) const;
  KubeResult<void> do_evict(Actor actor, const ObjectRef& pod, const EvictOptions& options);
  // Why a PodDisruptionBudget selecting `pod` refuses its eviction now; nullopt: allowed.
  std::optional<KubeError> disruption_refusal(const Json& pod) const;
  KubeResult<Json> do_update_scale(Actor actor, const ObjectRef& ref, std::int32_t replicas,
                                   const std::string& resource_version);
  std::optional<KubeError> admit_claim_resize(const Json& claim, const Json& old) const;
  void orphan_dependents(const std::string& owner_uid);
  bool has_dependents(const std::string& owner_uid) const;
  Json store(Actor actor, Verb verb, Kind kind, Json object);
  void erase(Actor actor, Verb verb, const Key& key);
  // `previous`: the stored state before the write (null for a create).
  void record(Actor actor, Verb verb, const Key& key, const Json& object, Json previous,
              bool deleted);
  struct WatchStart;
  KubeResult<WatchStart> start_watch(Kind kind, const std::string& ns,
                                     const WatchOptions& options) const;
  // Takes mutex_ itself (and releases it while waiting and while the handler runs).
  KubeResult<void> serve_watch(Kind kind, const std::string& ns, const WatchOptions& options,
                               std::stop_token stop, const WatchHandler& handler);
  std::string next_resource_version();
  std::uint64_t next_random();  // deterministic per seed
  std::string new_uid();
  std::string random_suffix();

  const Clock& clock_;
  mutable std::recursive_mutex mutex_;
  std::map<Key, Json> objects_;
  std::int64_t resource_version_ = 1000;
  std::uint64_t random_state_;
  std::vector<FaultRule> faults_;
  std::optional<int> mutation_budget_;
  int mutations_ = 0;
  int mutations_at_budget_ = 0;
  std::map<std::pair<Verb, Kind>, int> calls_;
  std::vector<Mutation> history_;
  std::vector<Json> previous_states_;  // per history_ entry: the object before the write
  std::int64_t compacted_resource_version_ = 0;
  std::uint64_t watch_breaks_ = 0;  // bumped by break_watches()
  KubeError watch_break_error_{KubeErrorCode::Unreachable, {}, Duration{0}};
  std::condition_variable_any history_changed_;
  std::vector<std::function<void(const Mutation&)>> observers_;
  std::unique_ptr<SystemClient> system_;
};

}  // namespace stsresize
