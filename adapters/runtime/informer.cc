#include "adapters/runtime/informer.h"

#include <algorithm>
#include <random>

namespace stsresize::runtime {

namespace {

std::string metadata_text(const Json& object, const char* field) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  const auto value = metadata->find(field);
  return value != metadata->end() && value->is_string() ? value->get<std::string>() : std::string{};
}

// A watch that ends sooner than this without delivering anything is treated like an error, so
// that a server closing streams at once cannot spin the loop.
constexpr std::chrono::seconds kShortestHealthyWatch{1};

}  // namespace

Json strip_managed_fields(Json object) {
  if (const auto metadata = object.find("metadata");
      metadata != object.end() && metadata->is_object()) {
    metadata->erase("managedFields");
  }
  return object;
}

std::string store_key(const Json& object) {
  const std::string ns = metadata_text(object, "namespace");
  const std::string name = metadata_text(object, "name");
  return ns.empty() ? name : ns + "/" + name;
}

// ---- Store ----

Store::Entry Store::pack(const Json& object) {
  auto packed = std::make_shared<Packed>();
  packed->resource_version = metadata_text(object, "resourceVersion");
  packed->bytes = Json::to_msgpack(object);
  packed->bytes.shrink_to_fit();
  return packed;
}

Store::Object Store::unpack(const Packed& packed) {
  // Bytes this process packed from a Json: they decode.
  return std::make_shared<const Json>(Json::from_msgpack(packed.bytes));
}

Store::Object Store::get(const std::string& ns, const std::string& name) const {
  return get(ns.empty() ? name : ns + "/" + name);
}

Store::Object Store::get(const std::string& key) const {
  Entry entry;
  {
    std::lock_guard lock(mutex_);
    const auto found = objects_.find(key);
    if (found == objects_.end()) return nullptr;
    entry = found->second;
  }
  return unpack(*entry);
}

std::vector<Store::Entry> Store::select(const std::string& ns,
                                        const std::function<bool(std::string_view)>* wanted) const {
  std::vector<Entry> result;
  std::lock_guard lock(mutex_);
  if (ns.empty()) {
    result.reserve(objects_.size());
    for (const auto& [key, entry] : objects_) {
      const std::string_view name =
          std::string_view{key}.substr(key.find('/') == std::string::npos ? 0 : key.find('/') + 1);
      if (wanted == nullptr || (*wanted)(name)) result.push_back(entry);
    }
    return result;
  }
  const std::string prefix = ns + "/";
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.starts_with(prefix); ++it) {
    if (wanted == nullptr || (*wanted)(std::string_view{it->first}.substr(prefix.size()))) {
      result.push_back(it->second);
    }
  }
  return result;
}

std::vector<Store::Object> Store::list(const std::string& ns) const {
  std::vector<Object> result;
  for (const Entry& entry : select(ns, nullptr)) result.push_back(unpack(*entry));
  return result;
}

std::vector<Store::Object> Store::list(
    const std::string& ns, const std::function<bool(std::string_view name)>& wanted) const {
  std::vector<Object> result;
  for (const Entry& entry : select(ns, &wanted)) result.push_back(unpack(*entry));
  return result;
}

void Store::visit(const std::string& ns, const std::function<void(const Json&)>& each) const {
  for (const Entry& entry : select(ns, nullptr)) each(*unpack(*entry));
}

std::vector<std::string> Store::keys() const {
  std::vector<std::string> result;
  std::lock_guard lock(mutex_);
  result.reserve(objects_.size());
  for (const auto& [key, object] : objects_) result.push_back(key);
  return result;
}

std::size_t Store::size() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

void Store::put(const std::string& key, const Json& object) {
  put(key, pack(object));
}

void Store::put(const std::string& key, Entry entry) {
  std::lock_guard lock(mutex_);
  objects_[key] = std::move(entry);
  ++changes_;
}

std::map<std::string, Store::Entry> Store::snapshot() const {
  std::lock_guard lock(mutex_);
  return objects_;
}

bool Store::erase(const std::string& key) {
  std::lock_guard lock(mutex_);
  ++changes_;
  return objects_.erase(key) > 0;
}

std::uint64_t Store::changes() const {
  std::lock_guard lock(mutex_);
  return changes_;
}

std::map<std::string, Store::Entry> Store::replace(std::map<std::string, Entry> entries) {
  std::lock_guard lock(mutex_);
  std::swap(objects_, entries);
  ++changes_;
  return entries;
}

// ---- Informer ----

Informer::Informer(Kubernetes& kube, InformerOptions options)
    : kube_(kube), options_(std::move(options)), random_(std::random_device{}()) {}

Informer::~Informer() {
  stop();
}

void Informer::add_handler(Handler handler) {
  handlers_.push_back(std::move(handler));
}

void Informer::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Informer::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

bool Informer::wait_for_sync(Duration limit) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, limit, [this] { return synced_.load() || stopped_; });
  return synced_.load();
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::string Informer::last_resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

void Informer::run(std::stop_token stop) {
  bool need_list = true;
  bool first_watch = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      if (!list_and_replace(stop)) {
        if (!back_off(stop)) return;
        continue;
      }
      need_list = false;
      first_watch = true;
    }
    const WatchEnd end = watch_once(stop, !first_watch);
    first_watch = false;
    if (end == WatchEnd::Stopped) return;
    need_list = end == WatchEnd::Relist;
  }
}

bool Informer::list_and_replace(std::stop_token stop) {
  ListOptions request;
  request.label_selector = options_.label_selector;
  request.limit = options_.page_size;
  std::map<std::string, Store::Entry> fresh;
  std::string list_version;
  bool first_page = true;
  do {
    if (stop.stop_requested()) return false;
    auto page = kube_.list(options_.kind, options_.ns, request);
    if (!page) {
      count_error("list", page.error());
      return false;
    }
    {
      std::lock_guard lock(mutex_);
      ++stats_.list_pages;
    }
    if (first_page) {
      list_version = page->resource_version;
      first_page = false;
    }
    for (Json& item : page->items) {
      const Json object =
          options_.transform ? options_.transform(std::move(item)) : std::move(item);
      fresh.emplace(store_key(object), Store::pack(object));
    }
    page->items.clear();
    page->items.shrink_to_fit();
    request.continue_token = page->continue_token;
  } while (!request.continue_token.empty());

  // Unchanged objects keep their old entry: no event for them.
  const std::map<std::string, Store::Entry> current = store_.snapshot();
  for (auto& [key, entry] : fresh) {
    const auto old = current.find(key);
    if (old != current.end() && old->second->resource_version == entry->resource_version) {
      entry = old->second;
    }
  }
  const std::map<std::string, Store::Entry> previous = store_.replace(fresh);
  {
    std::lock_guard lock(mutex_);
    ++stats_.lists;
    resource_version_ = list_version;
  }
  // A list that works does not make a refused watch work (RBAC can grant list without watch):
  // that cause stays open, and its back-off grows, until a watch proves itself.
  if (!watch_failing_) {
    reset_backoff();
    succeeded();
  }
  // Handlers get objects decoded one at a time, so that the list is never held as Json trees.
  for (const auto& [key, entry] : previous) {
    if (!fresh.contains(key)) notify(WatchEventType::Deleted, Store::unpack(*entry));
  }
  for (const auto& [key, entry] : fresh) {
    const auto old = previous.find(key);
    if (old == previous.end()) {
      notify(WatchEventType::Added, Store::unpack(*entry));
    } else if (old->second != entry) {
      notify(WatchEventType::Modified, Store::unpack(*entry));
    }
  }
  if (!synced_.exchange(true)) {
    {
      std::lock_guard lock(mutex_);  // a waiter cannot miss the change
    }
    changed_.notify_all();
  }
  return true;
}

Informer::WatchEnd Informer::watch_once(std::stop_token stop, bool restart) {
  WatchOptions request;
  request.label_selector = options_.label_selector;
  request.allow_bookmarks = true;
  {
    std::lock_guard lock(mutex_);
    ++stats_.watches_started;
    if (restart) ++stats_.watch_restarts;
    request.resource_version = resource_version_;
    const double factor = std::uniform_real_distribution<double>(1.0, 2.0)(random_);
    request.timeout = std::chrono::duration_cast<Duration>(options_.min_watch_timeout * factor);
  }
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t delivered = 0;
  const auto result =
      kube_.watch(options_.kind, options_.ns, request, stop, [&](const WatchEvent& event) {
        if (stop.stop_requested()) return false;
        if (delivered == 0) {
          watch_failing_ = false;
          succeeded();
        }
        apply(event.type, event.object);
        ++delivered;
        return !stop.stop_requested();
      });
  if (stop.stop_requested()) return WatchEnd::Stopped;
  if (result) {
    if (delivered > 0) {
      reset_backoff();
    } else if (std::chrono::steady_clock::now() - started < kShortestHealthyWatch) {
      if (!back_off(stop)) return WatchEnd::Stopped;
    } else {
      watch_failing_ = false;
      succeeded();  // it lasted until the server ended it: quiet, not failing
    }
    return WatchEnd::Resume;
  }
  count_error("watch", result.error());
  watch_failing_ = result.error().code != KubeErrorCode::Gone;
  switch (result.error().code) {
    case KubeErrorCode::Gone: {
      std::lock_guard lock(mutex_);
      ++stats_.relists_after_gone;
      return WatchEnd::Relist;
    }
    case KubeErrorCode::Unreachable:
    case KubeErrorCode::TooManyRequests:
      if (!back_off(stop, result.error().retry_after)) return WatchEnd::Stopped;
      return WatchEnd::Resume;
    default:
      if (!back_off(stop)) return WatchEnd::Stopped;
      return WatchEnd::Relist;
  }
}

void Informer::apply(WatchEventType type, const Json& event_object) {
  if (type == WatchEventType::Bookmark) {
    set_resource_version(event_object);
    return;
  }
  Json object = options_.transform ? options_.transform(event_object) : event_object;
  const std::string key = store_key(object);
  if (type == WatchEventType::Deleted) {
    store_.erase(key);
  } else {
    store_.put(key, object);
  }
  auto shared = std::make_shared<const Json>(std::move(object));
  set_resource_version(*shared);
  {
    std::lock_guard lock(mutex_);
    ++stats_.events;
  }
  notify(type, shared);
}

void Informer::set_resource_version(const Json& object) {
  std::string version = metadata_text(object, "resourceVersion");
  if (version.empty()) return;
  std::lock_guard lock(mutex_);
  resource_version_ = std::move(version);
}

void Informer::notify(WatchEventType type, const Store::Object& object) {
  for (const Handler& handler : handlers_) handler(type, object);
}

void Informer::count_error(std::string_view verb, const KubeError& error) {
  {
    std::lock_guard lock(mutex_);
    ++stats_.errors[error.code];
  }
  if (error.code == KubeErrorCode::Gone) return;  // the version expired: relisting is routine
  failing_ = true;
  if (options_.on_error) {
    options_.on_error(InformerError{options_.kind, options_.ns, std::string{verb}, error});
  }
}

void Informer::succeeded() {
  if (!failing_) return;
  failing_ = false;
  if (options_.on_recovered) options_.on_recovered(options_.kind);
}

bool Informer::back_off(std::stop_token stop, Duration at_least) {
  std::unique_lock lock(mutex_);
  if (next_backoff_ <= Duration{0}) next_backoff_ = options_.initial_backoff;
  const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  Duration delay = next_backoff_ + std::chrono::duration_cast<Duration>(next_backoff_ * jitter);
  delay = std::max(std::min(delay, options_.max_backoff), at_least);
  next_backoff_ = std::min(next_backoff_ * 2, options_.max_backoff);
  changed_.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

void Informer::reset_backoff() {
  std::lock_guard lock(mutex_);
  next_backoff_ = Duration{0};
}

}  // namespace stsresize::runtime
