#include "adapters/controller/cached_reads.h"

#include <charconv>
#include <optional>

#include "adapters/runtime/informer.h"
#include "engine/k8s_objects.h"

namespace stsresize {

namespace {

std::string key_of(const ObjectRef& ref) {
  return std::string{to_string(ref.kind)} + "/" + ref.ns + "/" + ref.name;
}

// The keys of `kind` in `ns`; every namespace's when `ns` is empty (a list across namespaces).
std::string key_prefix(Kind kind, const std::string& ns) {
  return std::string{to_string(kind)} + "/" + (ns.empty() ? std::string{} : ns + "/");
}

// kube-apiserver's resourceVersions are etcd revisions written in decimal; nullopt for anything
// else (never met, only settled by agreement).
std::optional<std::uint64_t> revision(const Json& object) {
  const std::string text = k8s::resource_version(object).value_or("");
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string uid_of(const Json* object) {
  return object != nullptr ? k8s::uid(*object).value_or("") : std::string{};
}

bool same_state(const Json* a, const Json* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return uid_of(a) == uid_of(b) &&
         k8s::resource_version(*a).value_or("") == k8s::resource_version(*b).value_or("x");
}

KubeError not_found(const ObjectRef& ref) {
  return {KubeErrorCode::NotFound,
          std::string{kind_info(ref.kind).plural} + " \"" + ref.name + "\" not found (cache)",
          Duration{0}};
}

}  // namespace

struct CachedReads::Cache {
  const runtime::Store* store;
  std::function<bool()> synced;
  bool whole;
};

struct CachedReads::Copy {
  std::shared_ptr<const Json> object;
  std::uint64_t used = 0;  // copy_uses_ when last kept or given
};

// What a write through this port leaves on its key until the cache shows it.
struct CachedReads::Expectation {
  enum class Kind { Written, Deleted, Refused };
  Kind kind = Kind::Refused;
  // The key as the server last told it here (the write's own answer, or the last live read's
  // object or NotFound), and how many changes the cache had made before the server was asked.
  // While the cache has made none since, it has learnt nothing the answer does not hold, and the
  // answer is the fresher of the two: a read is answered with it rather than read live again.
  // Any change of that cache (any key: an object deleted and re-created between two looks
  // leaves it as it was) ends that; the expectation is then met, or the key read live again.
  struct Known {
    std::shared_ptr<const Json> object;  // null: NotFound
    std::uint64_t cache_changes;         // the cache's Store::changes() before it was asked
  };
  std::optional<Known> known;
  std::string uid;  // Written: the written object's; Deleted: the deleted one's ("" unknown)
  std::optional<std::uint64_t> revision;  // Written: the written one; else the cache's then
  bool cached_present = false;            // Deleted, Refused: what the cache held then
  std::string cached_uid;
  std::string cached_version;

  bool met_by(const Json* cached) const {
    switch (kind) {
      case Kind::Written: {
        if (cached == nullptr || uid_of(cached) != uid || !revision) return false;
        const auto seen = stsresize::revision(*cached);
        return seen && *seen >= *revision;
      }
      case Kind::Deleted: {
        if (cached == nullptr) return true;
        const std::string seen_uid = uid_of(cached);
        if (!uid.empty() && seen_uid != uid) return true;
        if (!cached_present) return false;  // it was not cached when deleted: wait for absence
        if (seen_uid != cached_uid) return true;
        const auto seen = stsresize::revision(*cached);
        return k8s::is_being_deleted(*cached).value_or(false) && seen && revision &&
               *seen > *revision;
      }
      case Kind::Refused:
        if ((cached != nullptr) != cached_present) return true;
        return cached != nullptr && (uid_of(cached) != cached_uid ||
                                     k8s::resource_version(*cached).value_or("") != cached_version);
    }
    return false;
  }
};

// live(): every read to the server but a Job's; writes recorded by the owner.
class CachedReads::Live final : public Kubernetes {
 public:
  explicit Live(CachedReads& owner) : owner_(owner) {}

  KubeResult<Json> get(const ObjectRef& ref) override {
    // A copy Job's outcome never goes back (a Job that completed stays so, its summary fixed in
    // its pod's termination message), and a step decides nothing destructive on a Job's absence
    // (it would create one: AlreadyExists, and the key is read live): the cache is as good.
    if (ref.kind == Kind::Job) return owner_.get(ref);
    const std::uint64_t changes_before = owner_.changes_of(ref.kind);
    auto result = owner_.live_.get(ref);
    owner_.keep_copy(ref, result);
    if (const Cache* cache = owner_.cache_for(ref.kind)) {
      const auto cached = owner_.cached(*cache, ref);
      owner_.agree(ref, result ? &*result : nullptr, cached.get());
      owner_.learn(ref, result, changes_before);
    }
    return result;
  }
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options) override {
    return owner_.live_.list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override {
    return owner_.create(kind, object);
  }
  KubeResult<Json> update(Kind kind, const Json& object) override {
    return owner_.update(kind, object);
  }
  KubeResult<Json> update_status(Kind kind, const Json& object) override {
    return owner_.update_status(kind, object);
  }
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override {
    return owner_.patch(ref, type, patch);
  }
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options) override {
    return owner_.remove(ref, options);
  }
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options) override {
    return owner_.evict(pod, options);
  }
  KubeResult<Json> get_scale(const ObjectRef& ref) override { return owner_.get_scale(ref); }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override {
    return owner_.update_scale(ref, replicas, resource_version);
  }
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return owner_.watch(kind, ns, options, std::move(stop), handler);
  }

 private:
  CachedReads& owner_;
};

CachedReads::CachedReads(Kubernetes& live)
    : live_(live), live_view_(std::make_unique<Live>(*this)) {}

CachedReads::~CachedReads() = default;

void CachedReads::serve(Kind kind, const runtime::Store& store, std::function<bool()> synced,
                        bool whole) {
  caches_[kind] = std::make_unique<Cache>(Cache{&store, std::move(synced), whole});
}

void CachedReads::serve_whole_copies(Kind kind, const runtime::Store& store,
                                     std::function<bool()> synced) {
  copy_sources_[kind] = std::make_unique<Cache>(Cache{&store, std::move(synced), false});
}

Kubernetes& CachedReads::live() {
  return *live_view_;
}

std::uint64_t CachedReads::cache_hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

std::uint64_t CachedReads::live_after_write() const {
  std::lock_guard lock(mutex_);
  return live_after_write_;
}

std::uint64_t CachedReads::changes_of(Kind kind) const {
  const Cache* cache = cache_for(kind);
  return cache != nullptr ? cache->store->changes() : 0;
}

const CachedReads::Cache* CachedReads::cache_for(Kind kind) const {
  auto found = caches_.find(kind);
  if (found == caches_.end() || !found->second->synced()) return nullptr;
  return found->second.get();
}

std::shared_ptr<const Json> CachedReads::cached(const Cache& cache, const ObjectRef& ref) const {
  return cache.store->get(is_namespaced(ref.kind) ? ref.ns : std::string{}, ref.name);
}

std::optional<Json> CachedReads::current_copy(const ObjectRef& ref) {
  const auto source = copy_sources_.find(ref.kind);
  if (source == copy_sources_.end() || !source->second->synced()) return std::nullopt;
  const auto cached = this->cached(*source->second, ref);
  if (!cached) return std::nullopt;
  std::lock_guard lock(mutex_);
  const auto found = copies_.find(key_of(ref));
  if (found == copies_.end()) return std::nullopt;
  const Json& copy = *found->second.object;
  if (uid_of(&copy) != uid_of(cached.get())) return std::nullopt;
  // The informer at the copy's version, or still before it (the copy is our own write, which
  // it has not shown yet). resourceVersions that are not integers must be equal.
  const auto copied = revision(copy);
  const auto seen = revision(*cached);
  const bool current = copied && seen ? *seen <= *copied
                                      : k8s::resource_version(copy).value_or("") ==
                                            k8s::resource_version(*cached).value_or("x");
  if (!current) return std::nullopt;
  found->second.used = ++copy_uses_;
  ++hits_;
  return copy;
}

void CachedReads::keep_copy(const ObjectRef& ref, const KubeResult<Json>& result) {
  if (!copy_sources_.contains(ref.kind)) return;
  if (!result) {
    forget_copy(ref);
    return;
  }
  std::lock_guard lock(mutex_);
  copies_.insert_or_assign(key_of(ref), Copy{std::make_shared<const Json>(*result), ++copy_uses_});
  if (copies_.size() <= kMaxWholeCopies) return;
  auto oldest = copies_.begin();
  for (auto it = copies_.begin(); it != copies_.end(); ++it) {
    if (it->second.used < oldest->second.used) oldest = it;
  }
  copies_.erase(oldest);
}

void CachedReads::forget_copy(const ObjectRef& ref) {
  if (!copy_sources_.contains(ref.kind)) return;
  std::lock_guard lock(mutex_);
  copies_.erase(key_of(ref));
}

bool CachedReads::settled(const ObjectRef& ref, const Json* cached) {
  std::lock_guard lock(mutex_);
  auto found = expectations_.find(key_of(ref));
  if (found == expectations_.end()) return true;
  if (!found->second.met_by(cached)) return false;
  expectations_.erase(found);
  return true;
}

bool CachedReads::any_unsettled(Kind kind, const std::string& ns) {
  std::lock_guard lock(mutex_);
  const std::string prefix = key_prefix(kind, ns);
  auto it = expectations_.lower_bound(prefix);
  return it != expectations_.end() && it->first.starts_with(prefix);
}

void CachedReads::agree(const ObjectRef& ref, const Json* live_object, const Json* cached) {
  if (!same_state(live_object, cached)) return;
  std::lock_guard lock(mutex_);
  expectations_.erase(key_of(ref));
}

std::optional<KubeResult<Json>> CachedReads::known_answer(const ObjectRef& ref,
                                                          const Cache& cache) {
  const std::uint64_t changes = cache.store->changes();
  std::lock_guard lock(mutex_);
  const auto found = expectations_.find(key_of(ref));
  if (found == expectations_.end() || !found->second.known) return std::nullopt;
  const auto& known = *found->second.known;
  if (known.cache_changes != changes) return std::nullopt;
  ++hits_;
  if (!known.object) return std::unexpected(not_found(ref));
  return *known.object;
}

void CachedReads::learn(const ObjectRef& ref, const KubeResult<Json>& read,
                        std::uint64_t changes_before) {
  if (!read && read.error().code != KubeErrorCode::NotFound) return;  // it said nothing of it
  std::lock_guard lock(mutex_);
  const auto found = expectations_.find(key_of(ref));
  if (found == expectations_.end()) return;  // settled: the cache answers
  found->second.known =
      Expectation::Known{read ? std::make_shared<const Json>(*read) : nullptr, changes_before};
}

void CachedReads::expect(const ObjectRef& ref, const Json* written, const KubeError* error,
                         const std::string& deleted_uid, std::uint64_t changes_before) {
  const Cache* cache = cache_for(ref.kind);
  if (cache == nullptr) return;  // read live anyway
  if (error != nullptr && error->code != KubeErrorCode::Conflict &&
      error->code != KubeErrorCode::AlreadyExists && error->code != KubeErrorCode::NotFound) {
    return;  // nothing happened, and nothing says the cache is behind
  }
  const auto now = cached(*cache, ref);
  Expectation expectation;
  if (written != nullptr) {
    expectation.kind = Expectation::Kind::Written;
    expectation.uid = uid_of(written);
    expectation.revision = revision(*written);
    expectation.known = Expectation::Known{std::make_shared<const Json>(*written), changes_before};
  } else {
    expectation.kind = error == nullptr ? Expectation::Kind::Deleted : Expectation::Kind::Refused;
    expectation.uid = deleted_uid.empty() ? uid_of(now.get()) : deleted_uid;
    expectation.cached_present = now != nullptr;
    expectation.cached_uid = uid_of(now.get());
    if (now) {
      expectation.revision = revision(*now);
      expectation.cached_version = k8s::resource_version(*now).value_or("");
    }
  }
  std::lock_guard lock(mutex_);
  expectations_.insert_or_assign(key_of(ref), std::move(expectation));
}

KubeResult<Json> CachedReads::recorded(const ObjectRef& ref, std::uint64_t changes_before,
                                       KubeResult<Json> result) {
  keep_copy(ref, result);
  if (result) {
    expect(ref, &*result, nullptr, {}, changes_before);
  } else {
    expect(ref, nullptr, &result.error());
  }
  return result;
}

KubeResult<Json> CachedReads::get(const ObjectRef& ref) {
  if (copy_sources_.contains(ref.kind)) {
    if (auto copy = current_copy(ref)) return std::move(*copy);
    auto result = live_.get(ref);
    keep_copy(ref, result);
    return result;
  }
  const Cache* cache = cache_for(ref.kind);
  if (cache == nullptr) return live_.get(ref);
  const auto object = cached(*cache, ref);
  if (settled(ref, object.get())) {
    // Absent from a cache filtered by a label is absent or not ours: a create then meets the
    // object (AlreadyExists), and the key is read live from then on.
    std::lock_guard lock(mutex_);
    ++hits_;
    if (!object) return std::unexpected(not_found(ref));
    return *object;
  }
  if (auto answer = known_answer(ref, *cache)) return std::move(*answer);
  {
    std::lock_guard lock(mutex_);
    ++live_after_write_;
  }
  // Counted before the server is asked, and only here: a settled key, the common case, costs
  // no second look at the store.
  const std::uint64_t changes_before = cache->store->changes();
  auto result = live_.get(ref);
  agree(ref, result ? &*result : nullptr, object.get());
  learn(ref, result, changes_before);
  return result;
}

KubeResult<ObjectList> CachedReads::list(Kind kind, const std::string& ns,
                                         const ListOptions& options) {
  const Cache* cache = cache_for(kind);
  const bool answerable = cache != nullptr && cache->whole && options.label_selector.empty() &&
                          options.field_selector.empty() && options.limit == 0 &&
                          options.continue_token.empty();
  if (!answerable) return live_.list(kind, ns, options);
  if (any_unsettled(kind, ns)) {
    {
      std::lock_guard lock(mutex_);
      ++live_after_write_;
    }
    auto listed = live_.list(kind, ns, options);
    if (listed) {
      // Settle what the live list shows the cache agrees with, so that lists after it need not
      // go live again.
      for (const Json& item : listed->items) {
        const ObjectRef ref = ref_of(kind, item);
        const auto object = cached(*cache, ref);
        if (!settled(ref, object.get())) agree(ref, &item, object.get());
      }
    }
    return listed;
  }
  ObjectList result;
  cache->store->visit(is_namespaced(kind) ? ns : std::string{},
                      [&](const Json& object) { result.items.push_back(object); });
  std::lock_guard lock(mutex_);
  ++hits_;
  return result;
}

// Each write counts the cache's changes before it is sent: its answer is worth more than the
// cache only while the cache has shown nothing since, its own event for this write included.
KubeResult<Json> CachedReads::create(Kind kind, const Json& object) {
  const std::uint64_t before = changes_of(kind);
  return recorded(ref_of(kind, object), before, live_.create(kind, object));
}

KubeResult<Json> CachedReads::update(Kind kind, const Json& object) {
  const std::uint64_t before = changes_of(kind);
  return recorded(ref_of(kind, object), before, live_.update(kind, object));
}

KubeResult<Json> CachedReads::update_status(Kind kind, const Json& object) {
  const std::uint64_t before = changes_of(kind);
  return recorded(ref_of(kind, object), before, live_.update_status(kind, object));
}

KubeResult<Json> CachedReads::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  const std::uint64_t before = changes_of(ref.kind);
  return recorded(ref, before, live_.patch(ref, type, patch));
}

// An eviction is a delete of the pod: the cache's copy is forgotten the same way.
KubeResult<void> CachedReads::evict(const ObjectRef& pod, const EvictOptions& options) {
  auto result = live_.evict(pod, options);
  if (options.dry_run) return result;
  forget_copy(pod);
  if (result) {
    expect(pod, nullptr, nullptr, options.uid.value_or(""));
  } else {
    expect(pod, nullptr, &result.error());
  }
  return result;
}

KubeResult<void> CachedReads::remove(const ObjectRef& ref, const DeleteOptions& options) {
  auto result = live_.remove(ref, options);
  forget_copy(ref);
  if (result) {
    expect(ref, nullptr, nullptr, options.uid.value_or(""));
  } else {
    expect(ref, nullptr, &result.error());
  }
  return result;
}

KubeResult<Json> CachedReads::get_scale(const ObjectRef& ref) {
  return live_.get_scale(ref);
}

KubeResult<Json> CachedReads::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                           const std::string& resource_version) {
  auto result = live_.update_scale(ref, replicas, resource_version);
  forget_copy(ref);
  // A Scale is not the object it scales: wait for the cache to show any change.
  const KubeError changed{KubeErrorCode::Conflict, {}, Duration{0}};
  expect(ref, nullptr, result ? &changed : &result.error());
  return result;
}

KubeResult<void> CachedReads::watch(Kind kind, const std::string& ns, const WatchOptions& options,
                                    std::stop_token stop, const WatchHandler& handler) {
  return live_.watch(kind, ns, options, std::move(stop), handler);
}

}  // namespace stsresize
