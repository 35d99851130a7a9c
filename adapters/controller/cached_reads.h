#pragma once
// The Kubernetes port with reads answered from the controller's informer caches where a cache
// can answer them, as controller-runtime's cached client does: a reconcile that only looks
// (a copy still running, a claim not yet Bound) then costs no request at all. Writes go to the
// API server, unchanged.
//
// What a cache answers: a get of a kind it holds, and a list of a kind it holds whole (no
// selector on the informer) with no selector, limit or continue token in the request. A cache
// filtered by a label (Jobs, ConfigMaps labelled stsresize.dev/statefulset) does not hold every
// object: absent there means absent or not ours, and a step finds the difference by creating
// one (AlreadyExists), after which that key is read live (below). Anything else is read live:
// other kinds, selected lists, a cache not synced.
//
// A cache is a moment behind the server, which is harmless for a read that waits (it is woken
// again by the event that brings the change) but not for reading one's own writes: a step that
// created a Job and looks again must see it. So every write made through this port (or through
// live(), which reads live but records writes the same way) leaves an expectation on its key,
// and the key is read live until the cache shows it met:
//   created, updated or patched   the cache holds the written object (same uid) at a
//                                 resourceVersion at least the written one;
//   deleted                       the cache no longer holds the object deleted (absent, or
//                                 another uid), or holds it being deleted at a newer version;
//   refused (Conflict, AlreadyExists, NotFound)  the cache changed since: it was behind, or
//                                 the object lies outside what it holds.
// A live read that finds the same object at the same version as the cache (or both absent)
// also settles the key. Until it is settled, a key is answered with what the server last said
// of it through this port (the write's own answer, or the last live read of it: the object, or
// NotFound) while the cache holds what it held then: the cache has learnt nothing since, and
// that answer is the fresher of the two. So a step reading back the claim it just created, or
// the claim it deleted (held by its finalizer) three times in a reconcile, makes one request or
// none. The cache moving (an event for that key) ends the answer: met, or read live again.
// resourceVersions are compared as the integers kube-apiserver makes of etcd's revisions; one that
// is not an integer never counts as met, so such a key is settled only by agreement, reading live
// meanwhile.
//
// A kind whose informer keeps only part of each object (StatefulSets: not the pod template,
// which an update must carry) is answered from whole copies instead (serve_whole_copies): the
// object as this port last read it live or as the server returned it from a write through this
// port, given while the informer shows that object (same uid) at that resourceVersion or an
// older one. A newer one there means someone else wrote it: read live, and copied again. The
// copies are few (kMaxWholeCopies, the least recently used dropped first): the objects under
// operation, not every object watched.
//
// Reads that decide a destructive act are never made here: the Reconciler runs such a step
// again on live() (states/reconciler.cc) before it acts.
//
// Thread-safe: the controller's workers share one.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/ports/kubernetes.h"

namespace stsresize {

namespace runtime {
class Store;
}

class CachedReads final : public Kubernetes {
 public:
  explicit CachedReads(Kubernetes& live);
  ~CachedReads() override;

  // Reads of `kind` may come from `store` once `synced()` is true. `whole`: the cache holds
  // every object of the kind in the watched namespaces (no label selector), so that absence
  // and unselected lists can be answered from it.
  void serve(Kind kind, const runtime::Store& store, std::function<bool()> synced, bool whole);
  // Gets of `kind` may come from whole copies while `store` (trimmed objects) shows them current.
  void serve_whole_copies(Kind kind, const runtime::Store& store, std::function<bool()> synced);
  static constexpr std::size_t kMaxWholeCopies = 256;

  // The same port with every read live but a Job's (read as through this port: a Job's outcome
  // never goes back, and nothing destructive rests on its absence); its writes leave their
  // expectations here too.
  Kubernetes& live();

  // For tests and /metrics: reads answered from a cache, and read live because of a write.
  std::uint64_t cache_hits() const;
  std::uint64_t live_after_write() const;

  KubeResult<Json> get(const ObjectRef& ref) override;
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options = {}) override;
  KubeResult<Json> create(Kind kind, const Json& object) override;
  KubeResult<Json> update(Kind kind, const Json& object) override;
  KubeResult<Json> update_status(Kind kind, const Json& object) override;
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override;
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options = {}) override;
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options = {}) override;
  KubeResult<Json> get_scale(const ObjectRef& ref) override;
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override;
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override;

 private:
  struct Cache;
  struct Expectation;
  class Live;

  struct Copy;

  const Cache* cache_for(Kind kind) const;  // null: not served, or not synced
  // The whole copy of `ref` while its informer shows it current; nullopt otherwise.
  std::optional<Json> current_copy(const ObjectRef& ref);
  // After a live read or a write of `ref` (a kind served by copies): keep what the server
  // returned, or forget the copy when it returned nothing (a delete, a Scale, a refusal).
  void keep_copy(const ObjectRef& ref, const KubeResult<Json>& result);
  void forget_copy(const ObjectRef& ref);
  // The cached object of `ref` (null: absent).
  std::shared_ptr<const Json> cached(const Cache& cache, const ObjectRef& ref) const;
  // After a write to `ref`: `written` is the object the server returned (null for a delete or
  // a refusal), `error` the refusal, if any. `deleted_uid`: a delete's uid precondition.
  // `changes_before`: the cache's Store::changes() before the write was sent.
  void expect(const ObjectRef& ref, const Json* written, const KubeError* error,
              const std::string& deleted_uid = {}, std::uint64_t changes_before = 0);
  KubeResult<Json> recorded(const ObjectRef& ref, std::uint64_t changes_before,
                            KubeResult<Json> result);
  std::uint64_t changes_of(Kind kind) const;  // 0 when not served
  // True when no write to `ref` awaits the cache (settling met expectations on the way).
  bool settled(const ObjectRef& ref, const Json* cached);
  bool any_unsettled(Kind kind, const std::string& ns);
  // A live read's outcome agrees with the cache: the key's expectation is settled.
  void agree(const ObjectRef& ref, const Json* live_object, const Json* cached);
  // An unsettled key's answer from what the server last said of it here, while `cache` has
  // made no change since; nullopt: read it live.
  std::optional<KubeResult<Json>> known_answer(const ObjectRef& ref, const Cache& cache);
  // A live read of an unsettled key, asked when the cache had made `changes_before` changes:
  // its answer until the cache changes.
  void learn(const ObjectRef& ref, const KubeResult<Json>& read, std::uint64_t changes_before);

  Kubernetes& live_;
  std::unique_ptr<Live> live_view_;
  std::map<Kind, std::unique_ptr<Cache>> caches_;
  mutable std::mutex mutex_;
  std::map<std::string, Expectation> expectations_;  // by key_of(ref)
  std::map<Kind, std::unique_ptr<Cache>> copy_sources_;
  std::map<std::string, Copy> copies_;  // by key_of(ref)
  std::uint64_t copy_uses_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t live_after_write_ = 0;
};

}  // namespace stsresize
