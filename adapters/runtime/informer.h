#pragma once
// An informer, like client-go's: a reflector that keeps a local cache (the Store) of one kind
// in step with the API server, and tells handlers about every change.
//
// The reflector's loop, on its own thread:
//   list (all pages of page_size) → replace the store → synced → watch from the list's
//   resourceVersion, applying each event and remembering the newest resourceVersion (bookmarks
//   included) → when the watch ends normally (the server's timeout), watch again from there.
// Errors, as client-go handles them:
//   - Gone (410: the version was compacted away) → list again at once;
//   - Unreachable (connection refused, broken stream, idle timeout) and TooManyRequests →
//     jittered exponential backoff, then watch again from the last resourceVersion (no
//     events are lost or repeated: the server replays everything after it);
//   - any other watch error → backoff, then list again;
//   - a failed list → backoff, then list again;
//   - a watch that ends within a second without delivering anything (not even a bookmark) is
//     backed off like an error, so that a server closing streams at once cannot spin the loop.
// The backoff (initial_backoff doubling up to max_backoff, each wait jittered up to twice the
// step) starts again after a successful list or a watch that delivered something.
// Failed calls are counted (stats) and told to on_error, Gone excepted (a relist is routine);
// the first success after them (a complete list, a watch that delivered something or lasted
// its course) is told to on_recovered. Retrying for ever suits a server that restarts, but
// only these callbacks let a cause that needs a person (401, 403) reach the logs.
// A list replaces the store: objects that vanished are reported Deleted, new ones Added, and
// ones whose resourceVersion changed Modified (unchanged ones are not reported).
//
// Handlers run on the informer thread after the store has changed, one event at a time; they
// must be quick (typically: put a key on a WorkQueue) and must not call stop().
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/json.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::runtime {

// Drops metadata.managedFields: large, and never read by stsresize.
Json strip_managed_fields(Json object);

// A list or watch call that failed.
struct InformerError {
  Kind kind = Kind::StatefulSet;
  std::string ns = {};    // "": every namespace (or a cluster-scoped kind)
  std::string verb = {};  // "list" or "watch"
  KubeError error = {KubeErrorCode::ServerError, {}, Duration{0}};
};

// Every member has an initialiser, so that designated initialisers compile warning-free.
struct InformerOptions {
  Kind kind = Kind::StatefulSet;
  std::string ns = {};  // "" watches all namespaces
  std::string label_selector = {};
  std::int64_t page_size = 500;
  // Each watch asks the server to end it after a random time in [min, 2 * min), as client-go
  // does, so that many informers do not reconnect in lockstep.
  Duration min_watch_timeout = std::chrono::minutes{5};
  Duration initial_backoff = std::chrono::milliseconds{800};
  Duration max_backoff = std::chrono::seconds{30};
  // Applied to every object before it is stored and handed to handlers.
  std::function<Json(Json)> transform = strip_managed_fields;
  // On the informer thread, before the backoff: each failed call (Gone excepted), then once
  // the first success after failures. Quick, like handlers; must not call stop().
  std::function<void(const InformerError&)> on_error = {};
  std::function<void(Kind)> on_recovered = {};
};

// "ns/name", or "name" for cluster-scoped objects: the WorkQueue's key.
std::string store_key(const Json& object);

// The cache: objects by key. Thread-safe; readers get their own decoded copies.
//
// An object is kept as MessagePack bytes, not as a Json tree: nlohmann's tree costs a heap node
// per member and per string (a trimmed claim: about 6 KB as a tree, under 1 KB packed), and at
// 15,000 claims that was most of the controller's memory. A read decodes (a few microseconds
// per object), so a reader asks only for what it needs: one key, a namespace, or the names it
// selects (list with a name filter decodes only those).
class Store {
 public:
  using Object = std::shared_ptr<const Json>;
  // One stored object: its resourceVersion (what a relist compares) and its bytes.
  struct Packed {
    std::string resource_version;
    std::vector<std::uint8_t> bytes;
  };
  using Entry = std::shared_ptr<const Packed>;
  static Entry pack(const Json& object);
  static Object unpack(const Packed& packed);

  Object get(const std::string& ns, const std::string& name) const;
  Object get(const std::string& key) const;
  // Sorted by key; `ns` empty: every object.
  std::vector<Object> list(const std::string& ns = "") const;
  // Only those of `ns` whose name `wanted` accepts (only they are decoded); sorted by key.
  std::vector<Object> list(const std::string& ns,
                           const std::function<bool(std::string_view name)>& wanted) const;
  // Each object of `ns` ("": every one) in key order, decoded one at a time: a pass over a
  // whole cache that never holds more than one object as a Json tree.
  void visit(const std::string& ns, const std::function<void(const Json&)>& each) const;
  std::vector<std::string> keys() const;
  std::size_t size() const;
  // How many times the informer has written to it (put, erase, replace): equal at two moments,
  // it held the same objects at both.
  std::uint64_t changes() const;

  // The informer's writes.
  void put(const std::string& key, const Json& object);
  void put(const std::string& key, Entry entry);
  bool erase(const std::string& key);  // false when nothing was there
  // Swaps the whole content at once (a relist); returns the previous content.
  std::map<std::string, Entry> replace(std::map<std::string, Entry> entries);
  std::map<std::string, Entry> snapshot() const;

 private:
  // Entries of `ns` ("": all) whose name `wanted` accepts (null: every one), under the lock.
  std::vector<Entry> select(const std::string& ns,
                            const std::function<bool(std::string_view)>* wanted) const;

  mutable std::mutex mutex_;
  std::map<std::string, Entry> objects_;  // sorted, so a namespace is a contiguous range
  std::uint64_t changes_ = 0;
};

struct InformerStats {
  std::uint64_t lists = 0;            // complete lists (all pages)
  std::uint64_t list_pages = 0;       // list calls that succeeded
  std::uint64_t watches_started = 0;  // watch calls made
  std::uint64_t watch_restarts = 0;   // watches made after the first one following a list
  std::uint64_t relists_after_gone = 0;
  std::uint64_t events = 0;                       // watch events applied (bookmarks excluded)
  std::map<KubeErrorCode, std::uint64_t> errors;  // failed list and watch calls by code
};

class Informer {
 public:
  using Handler = std::function<void(WatchEventType, const Store::Object& object)>;

  Informer(Kubernetes& kube, InformerOptions options);
  ~Informer();  // stop()

  // Before start(). For Deleted, `object` is the last known state.
  void add_handler(Handler handler);
  // Starts the loop; once per informer (stop() is final).
  void start();
  // Ends the loop, interrupting a watch or a backoff; returns once the thread has ended.
  void stop();

  // The first list has been stored (stays true after).
  bool has_synced() const { return synced_.load(); }
  // Blocks until synced, stopped, or `limit` passed; returns has_synced().
  bool wait_for_sync(Duration limit) const;

  const Store& store() const { return store_; }
  InformerStats stats() const;
  // The resourceVersion the next watch would start from.
  std::string last_resource_version() const;

 private:
  enum class WatchEnd { Resume, Relist, Stopped };
  void run(std::stop_token stop);
  // All pages, then the store replaced and handlers told; false when a page failed.
  bool list_and_replace(std::stop_token stop);
  WatchEnd watch_once(std::stop_token stop, bool restart);
  void apply(WatchEventType type, const Json& event_object);
  void notify(WatchEventType type, const Store::Object& object);
  // Counts it and tells on_error; `verb` is "list" or "watch".
  void count_error(std::string_view verb, const KubeError& error);
  // A call succeeded: tells on_recovered if calls failed since the last success.
  void succeeded();
  // Sleeps the next backoff step (jittered); false when stopped meanwhile.
  bool back_off(std::stop_token stop, Duration at_least = Duration{0});
  void reset_backoff();
  void set_resource_version(const Json& object);

  Kubernetes& kube_;
  const InformerOptions options_;
  std::vector<Handler> handlers_;
  Store store_;
  std::atomic<bool> synced_{false};

  mutable std::mutex mutex_;  // stats, resourceVersion, sync waiters, backoff sleeps
  mutable std::condition_variable_any changed_;
  InformerStats stats_;
  std::string resource_version_;
  Duration next_backoff_{0};
  std::minstd_rand random_;  // watch timeouts and backoff jitter
  bool stopped_ = false;
  bool failing_ = false;  // informer thread only: a call failed since the last success
  // Informer thread only: the last watch was refused (not merely expired) and none has worked
  // since; a list that works then does not end the failure.
  bool watch_failing_ = false;
  std::jthread thread_;
};

}  // namespace stsresize::runtime
