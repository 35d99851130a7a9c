#include "adapters/fake/fake_kubernetes.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <set>
#include <utility>

#include "adapters/clock/rfc3339.h"
#include "adapters/fake/api_rules.h"
#include "adapters/fake/json_patch.h"
#include "adapters/fake/selectors.h"
#include "adapters/fake/simulation_support.h"

namespace stsresize {

using fake::FieldErrors;

namespace {

constexpr std::string_view kPvcProtection = "kubernetes.io/pvc-protection";
constexpr std::string_view kPvProtection = "kubernetes.io/pv-protection";
constexpr std::string_view kDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

std::unexpected<KubeError> fail(KubeErrorCode code, std::string message) {
  return std::unexpected(KubeError{code, std::move(message)});
}

std::string not_found_message(const ObjectRef& ref) {
  return fake::qualified_resource(ref.kind) + " \"" + ref.name + "\" not found";
}

std::string conflict_message(Kind kind, const std::string& name) {
  return "Operation cannot be fulfilled on " + fake::qualified_resource(kind) + " \"" + name +
         "\": the object has been modified; please apply your changes to the latest version "
         "and try again";
}

std::string text_at(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The value of a selectable field, or nullopt when the kind cannot be selected on it
// (the API server's GetAttrs / field label conversion functions).
std::optional<std::string> field_value(Kind kind, const Json& object, const std::string& field) {
  const Json metadata = object.value("metadata", Json::object());
  if (field == "metadata.name") return text_at(metadata, "name");
  if (field == "metadata.namespace") return text_at(metadata, "namespace");
  if (kind == Kind::Pod) {
    if (field == "status.phase") return text_at(object.value("status", Json::object()), "phase");
    if (field == "spec.nodeName") return text_at(object.value("spec", Json::object()), "nodeName");
  }
  if (kind == Kind::Event) {
    const std::string prefix = "involvedObject.";
    if (field.starts_with(prefix)) {
      const std::string key = field.substr(prefix.size());
      static const std::vector<std::string> keys = {
          "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"};
      if (std::ranges::find(keys, key) == keys.end()) return std::nullopt;
      return text_at(object.value("involvedObject", Json::object()), key.c_str());
    }
    if (field == "reason" || field == "type") return text_at(object, field.c_str());
    if (field == "source") {
      return text_at(object.value("source", Json::object()), "component");
    }
  }
  return std::nullopt;
}

std::string hex_encode(std::string_view text) {
  std::string out;
  char buffer[3];
  for (unsigned char c : text) {
    std::snprintf(buffer, sizeof buffer, "%02x", c);
    out += buffer;
  }
  return out;
}

std::optional<std::string> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    if (std::sscanf(std::string{hex.substr(i, 2)}.c_str(), "%2x", &value) != 1) return std::nullopt;
    out += static_cast<char>(value);
  }
  return out;
}

// Opaque to callers: where the previous page ended, and the resourceVersion of the first page.
struct ContinueToken {
  std::string resource_version;
  std::string ns;
  std::string name;
};

std::string encode(const ContinueToken& token) {
  return hex_encode(
      Json{{"v", 1}, {"rv", token.resource_version}, {"ns", token.ns}, {"start", token.name}}
          .dump());
}

std::optional<ContinueToken> decode(std::string_view text) {
  auto decoded = hex_decode(text);
  if (!decoded) return std::nullopt;
  Json json = Json::parse(*decoded, nullptr, false);
  if (!json.is_object() || json.value("v", 0) != 1) return std::nullopt;
  return ContinueToken{json.value("rv", ""), json.value("ns", ""), json.value("start", "")};
}

bool has_finalizers(const Json& object) {
  const Json& metadata = object["metadata"];
  return metadata.contains("finalizers") && metadata["finalizers"].is_array() &&
         !metadata["finalizers"].empty();
}

void add_finalizer(Json& object, std::string_view finalizer) {
  Json& finalizers = object["metadata"]["finalizers"];
  if (!finalizers.is_array()) finalizers = Json::array();
  if (std::ranges::find(finalizers, Json(finalizer)) == finalizers.end()) {
    finalizers.push_back(finalizer);
  }
}

// The body checks every write shares: a JSON object with a metadata object, of the kind
// the call is for.
std::optional<KubeError> check_body(Kind kind, const Json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
    return KubeError{KubeErrorCode::BadRequest, "the body must be an object with metadata"};
  }
  const std::string body_kind = text_at(object, "kind");
  if (!body_kind.empty() && body_kind != to_string(kind)) {
    return KubeError{KubeErrorCode::BadRequest, "the kind of the object (" + body_kind +
                                                    ") does not match the request (" +
                                                    std::string{to_string(kind)} + ")"};
  }
  const std::string api_version = text_at(object, "apiVersion");
  if (!api_version.empty() && api_version != api_version_of(kind)) {
    return KubeError{KubeErrorCode::BadRequest,
                     "apiVersion " + api_version + " is not served for " +
                         std::string{to_string(kind)} + " by this server"};
  }
  return std::nullopt;
}

void set_type_meta(Kind kind, Json& object) {
  object["apiVersion"] = api_version_of(kind);
  object["kind"] = to_string(kind);
}

// Keeps `key` of metadata as it was in `old` (or absent, as in `old`).
void keep_metadata(Json& object, const Json& old, const char* key) {
  if (old["metadata"].contains(key)) {
    object["metadata"][key] = old["metadata"][key];
  } else {
    object["metadata"].erase(key);
  }
}

struct WatchFilter {
  Kind kind;
  std::string ns;  // empty: every namespace
  fake::LabelSelector labels;
  fake::FieldSelector fields;

  bool selects(const Json& object) const {
    if (!object.is_object()) return false;  // no such state (before a create)
    const Json metadata = object.value("metadata", Json::object());
    if (!ns.empty() && text_at(metadata, "namespace") != ns) return false;
    return labels.matches(metadata.value("labels", Json::object())) &&
           fields.matches(
               [&](const std::string& field) { return field_value(kind, object, field); });
  }
};

// The watch cache's rule (cacheWatcher.convertToWatchEvent): what a watcher sees of a write
// depends on whether the object matched its filter before and after.
std::optional<WatchEvent> watch_event(const WatchFilter& filter, const Mutation& mutation,
                                      const Json& previous) {
  if (mutation.ref.kind != filter.kind) return std::nullopt;
  const bool now_selected = !mutation.deleted && filter.selects(mutation.object);
  const bool was_selected = filter.selects(previous);
  if (now_selected) {
    return WatchEvent{was_selected ? WatchEventType::Modified : WatchEventType::Added,
                      mutation.object};
  }
  if (!was_selected) return std::nullopt;
  // The last state the watcher could see, at the version of the write that took it away.
  Json last = previous;
  last["metadata"]["resourceVersion"] = std::to_string(mutation.resource_version);
  return WatchEvent{WatchEventType::Deleted, std::move(last)};
}

std::optional<std::int64_t> parse_resource_version(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// kube-apiserver's scaleFromStatefulSet, in autoscaling/v1 JSON.
Json scale_of(const Json& statefulset) {
  const Json metadata = statefulset.value("metadata", Json::object());
  Json scale_metadata = Json::object();
  for (const char* key : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    if (metadata.contains(key)) scale_metadata[key] = metadata[key];
  }
  const Json spec = statefulset.value("spec", Json::object());
  Json scale_spec = Json::object();
  const auto replicas = spec.value("replicas", 1);
  if (replicas != 0) scale_spec["replicas"] = replicas;  // omitempty
  Json status = {{"replicas", statefulset.value("status", Json::object()).value("replicas", 0)}};
  if (auto selector = fake::LabelSelector::from_json(spec.value("selector", Json::object()))) {
    if (std::string text = selector->to_string(); !text.empty()) status["selector"] = text;
  }
  return Json{{"apiVersion", "autoscaling/v1"},
              {"kind", "Scale"},
              {"metadata", std::move(scale_metadata)},
              {"spec", std::move(scale_spec)},
              {"status", std::move(status)}};
}

Propagation effective_propagation(Kind kind, Propagation requested) {
  if (requested != Propagation::Default) return requested;
  // batch/v1 Job's DefaultGarbageCollectionPolicy is OrphanDependents.
  return kind == Kind::Job ? Propagation::Orphan : Propagation::Background;
}

}  // namespace

std::string_view to_string(Verb verb) {
  switch (verb) {
    case Verb::Get:
      return "get";
    case Verb::List:
      return "list";
    case Verb::Create:
      return "create";
    case Verb::Update:
      return "update";
    case Verb::UpdateStatus:
      return "update_status";
    case Verb::Patch:
      return "patch";
    case Verb::Remove:
      return "remove";
    case Verb::Watch:
      return "watch";
    case Verb::GetScale:
      return "get_scale";
    case Verb::UpdateScale:
      return "update_scale";
    case Verb::Evict:
      return "evict";
  }
  return "unknown";
}

bool is_mutating(Verb verb) {
  return verb != Verb::Get && verb != Verb::List && verb != Verb::Watch && verb != Verb::GetScale;
}

// The port for the cluster's own components: the same rules, none of the test controls.
class FakeKubernetes::SystemClient final : public Kubernetes {
 public:
  explicit SystemClient(FakeKubernetes& fake) : fake_(fake) {}
  KubeResult<Json> get(const ObjectRef& ref) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_get(ref);
  }
  KubeResult<ObjectList> list(Kind kind, const std::string& ns,
                              const ListOptions& options) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_list(kind, ns, options);
  }
  KubeResult<Json> create(Kind kind, const Json& object) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_create(Actor::System, kind, object);
  }
  KubeResult<Json> update(Kind kind, const Json& object) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_update(Actor::System, Verb::Update, kind, object);
  }
  KubeResult<Json> update_status(Kind kind, const Json& object) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_update(Actor::System, Verb::UpdateStatus, kind, object);
  }
  KubeResult<Json> patch(const ObjectRef& ref, PatchType type, const Json& patch) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_patch(Actor::System, ref, type, patch);
  }
  KubeResult<void> remove(const ObjectRef& ref, const DeleteOptions& options) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_remove(Actor::System, ref, options);
  }
  KubeResult<void> evict(const ObjectRef& pod, const EvictOptions& options) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_evict(Actor::System, pod, options);
  }
  KubeResult<void> watch(Kind kind, const std::string& ns, const WatchOptions& options,
                         std::stop_token stop, const WatchHandler& handler) override {
    return fake_.serve_watch(kind, ns, options, std::move(stop), handler);
  }
  KubeResult<Json> get_scale(const ObjectRef& ref) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_get_scale(ref);
  }
  KubeResult<Json> update_scale(const ObjectRef& ref, std::int32_t replicas,
                                const std::string& resource_version) override {
    std::lock_guard lock{fake_.mutex_};
    return fake_.do_update_scale(Actor::System, ref, replicas, resource_version);
  }

 private:
  FakeKubernetes& fake_;
};

FakeKubernetes::FakeKubernetes(const Clock& clock, std::uint64_t seed)
    : clock_(clock),
      random_state_(seed * 0x9E3779B97F4A7C15ULL + 1),
      system_(std::make_unique<SystemClient>(*this)) {
  // The history starts here: older versions were never seen, as if compacted.
  compacted_resource_version_ = resource_version_;
}

FakeKubernetes::~FakeKubernetes() = default;

Kubernetes& FakeKubernetes::system() {
  return *system_;
}

// ---- The port, with the test controls in front ----

template <class T, class Operation>
KubeResult<T> FakeKubernetes::intercept(Verb verb, Kind kind, const std::string& name,
                                        Operation operation) {
  FaultDecision decision;
  {
    std::lock_guard lock{mutex_};
    ++calls_[{verb, kind}];
    if (mutation_budget_ && mutations_ - mutations_at_budget_ >= *mutation_budget_) {
      return fail(KubeErrorCode::Unreachable, "injected crash: mutation budget spent");
    }
    decision = decide_faults(verb, kind, name);
  }
  for (const auto& action : decision.actions) action();
  if (decision.before) return std::unexpected(*decision.before);
  std::lock_guard lock{mutex_};
  KubeResult<T> result = operation();
  if (result && is_mutating(verb)) ++mutations_;
  if (result && decision.after) return std::unexpected(*decision.after);
  return result;
}

KubeResult<Json> FakeKubernetes::get(const ObjectRef& ref) {
  return intercept<Json>(Verb::Get, ref.kind, ref.name, [&] { return do_get(ref); });
}

KubeResult<ObjectList> FakeKubernetes::list(Kind kind, const std::string& ns,
                                            const ListOptions& options) {
  return intercept<ObjectList>(Verb::List, kind, "", [&] { return do_list(kind, ns, options); });
}

KubeResult<Json> FakeKubernetes::create(Kind kind, const Json& object) {
  const std::string name = ref_of(kind, object.is_object() ? object : Json::object()).name;
  return intercept<Json>(Verb::Create, kind, name,
                         [&] { return do_create(Actor::Client, kind, object); });
}

KubeResult<Json> FakeKubernetes::update(Kind kind, const Json& object) {
  const std::string name = ref_of(kind, object.is_object() ? object : Json::object()).name;
  return intercept<Json>(Verb::Update, kind, name,
                         [&] { return do_update(Actor::Client, Verb::Update, kind, object); });
}

KubeResult<Json> FakeKubernetes::update_status(Kind kind, const Json& object) {
  const std::string name = ref_of(kind, object.is_object() ? object : Json::object()).name;
  return intercept<Json>(Verb::UpdateStatus, kind, name, [&] {
    return do_update(Actor::Client, Verb::UpdateStatus, kind, object);
  });
}

KubeResult<Json> FakeKubernetes::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  return intercept<Json>(Verb::Patch, ref.kind, ref.name,
                         [&] { return do_patch(Actor::Client, ref, type, patch); });
}

KubeResult<void> FakeKubernetes::remove(const ObjectRef& ref, const DeleteOptions& options) {
  return intercept<void>(Verb::Remove, ref.kind, ref.name,
                         [&] { return do_remove(Actor::Client, ref, options); });
}

KubeResult<void> FakeKubernetes::evict(const ObjectRef& pod, const EvictOptions& options) {
  return intercept<void>(Verb::Evict, pod.kind, pod.name,
                         [&] { return do_evict(Actor::Client, pod, options); });
}

KubeResult<Json> FakeKubernetes::get_scale(const ObjectRef& ref) {
  return intercept<Json>(Verb::GetScale, ref.kind, ref.name, [&] { return do_get_scale(ref); });
}

KubeResult<Json> FakeKubernetes::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                              const std::string& resource_version) {
  return intercept<Json>(Verb::UpdateScale, ref.kind, ref.name, [&] {
    return do_update_scale(Actor::Client, ref, replicas, resource_version);
  });
}

struct FakeKubernetes::WatchStart {
  WatchFilter filter;
  std::size_t position = 0;         // the first history entry the watch has not considered
  std::vector<WatchEvent> initial;  // synthetic Added events (no resourceVersion given)
};

KubeResult<FakeKubernetes::WatchStart> FakeKubernetes::start_watch(
    Kind kind, const std::string& ns, const WatchOptions& options) const {
  auto labels = fake::LabelSelector::parse(options.label_selector);
  if (!labels) return fail(KubeErrorCode::BadRequest, labels.error());
  auto fields = fake::FieldSelector::parse(options.field_selector);
  if (!fields) return fail(KubeErrorCode::BadRequest, fields.error());
  for (const auto& requirement : fields->requirements()) {
    if (!field_value(kind, Json::object(), requirement.field)) {
      return fail(KubeErrorCode::BadRequest, "field label not supported: " + requirement.field);
    }
  }
  WatchStart start{
      .filter = {kind, is_namespaced(kind) ? ns : "", std::move(*labels), std::move(*fields)},
      .position = history_.size(),
      .initial = {},
  };
  // "0" is "any version" to the server; it too starts with the current state.
  if (options.resource_version.empty() || options.resource_version == "0") {
    for (const Json& object : list_raw(kind, start.filter.ns)) {
      if (start.filter.selects(object)) {
        start.initial.push_back(WatchEvent{WatchEventType::Added, object});
      }
    }
    return start;
  }
  const auto version = parse_resource_version(options.resource_version);
  if (!version) {
    return fail(KubeErrorCode::BadRequest,
                "invalid resource version \"" + options.resource_version + "\"");
  }
  if (*version < compacted_resource_version_) {
    return fail(KubeErrorCode::Gone, "too old resource version: " + options.resource_version +
                                         " (" + std::to_string(compacted_resource_version_) + ")");
  }
  const auto first_after =
      std::ranges::upper_bound(history_, *version, {}, &Mutation::resource_version);
  start.position = static_cast<std::size_t>(first_after - history_.begin());
  return start;
}

KubeResult<void> FakeKubernetes::watch(Kind kind, const std::string& ns,
                                       const WatchOptions& options, std::stop_token stop,
                                       const WatchHandler& handler) {
  FaultDecision decision;
  {
    std::lock_guard lock{mutex_};
    ++calls_[{Verb::Watch, kind}];
    if (mutation_budget_ && mutations_ - mutations_at_budget_ >= *mutation_budget_) {
      return fail(KubeErrorCode::Unreachable, "injected crash: mutation budget spent");
    }
    decision = decide_faults(Verb::Watch, kind, "");
  }
  for (const auto& action : decision.actions) action();
  if (decision.before) return std::unexpected(*decision.before);
  auto result = serve_watch(kind, ns, options, stop, handler);
  if (result && decision.after) return std::unexpected(*decision.after);
  return result;
}

KubeResult<void> FakeKubernetes::serve_watch(Kind kind, const std::string& ns,
                                             const WatchOptions& options, std::stop_token stop,
                                             const WatchHandler& handler) {
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::unique_lock lock{mutex_};
  auto start = start_watch(kind, ns, options);
  if (!start) return std::unexpected(start.error());
  const std::uint64_t breaks_at_start = watch_breaks_;
  std::vector<WatchEvent> pending = std::move(start->initial);
  std::size_t position = start->position;
  for (;;) {
    if (watch_breaks_ != breaks_at_start) return std::unexpected(watch_break_error_);
    for (; position < history_.size(); ++position) {
      if (auto event = watch_event(start->filter, history_[position], previous_states_[position])) {
        pending.push_back(std::move(*event));
      }
    }
    if (!pending.empty()) {
      // The handler may call back into the fake, or take its time: never under the lock.
      lock.unlock();
      for (const WatchEvent& event : pending) {
        if (stop.stop_requested() || !handler(event)) return {};
      }
      pending.clear();
      lock.lock();
      continue;
    }
    const bool woken = history_changed_.wait_until(lock, stop, deadline, [&] {
      return position < history_.size() || watch_breaks_ != breaks_at_start;
    });
    if (watch_breaks_ != breaks_at_start) return std::unexpected(watch_break_error_);
    if (stop.stop_requested()) return {};
    if (!woken) break;  // the server's timeout
  }
  if (options.allow_bookmarks) {
    Json bookmark = {{"metadata", {{"resourceVersion", std::to_string(resource_version_)}}}};
    set_type_meta(kind, bookmark);
    lock.unlock();
    handler(WatchEvent{WatchEventType::Bookmark, std::move(bookmark)});
  }
  return {};
}

FakeKubernetes::FaultDecision FakeKubernetes::decide_faults(Verb verb, Kind kind,
                                                            const std::string& name) {
  FaultDecision decision;
  for (FaultRule& rule : faults_) {
    const bool matches =
        (!rule.verb || *rule.verb == verb) && (!rule.kind || *rule.kind == kind) &&
        (!rule.name || (verb != Verb::List && verb != Verb::Watch && *rule.name == name));
    if (!matches || rule.times == 0) continue;
    const bool decided = decision.before || decision.after;
    if (rule.error && decided && !rule.action) continue;  // one error per call
    if (rule.action) decision.actions.push_back(rule.action);
    if (rule.error && !decided) {
      (rule.fail_after_applying ? decision.after : decision.before) = rule.error;
    }
    if (rule.times != FaultRule::kForever) --rule.times;
  }
  std::erase_if(faults_, [](const FaultRule& rule) { return rule.times == 0; });
  return decision;
}

// ---- Test controls ----

void FakeKubernetes::inject(FaultRule rule) {
  std::lock_guard lock{mutex_};
  faults_.push_back(std::move(rule));
}

void FakeKubernetes::clear_faults() {
  std::lock_guard lock{mutex_};
  faults_.clear();
}

void FakeKubernetes::set_mutation_budget(std::optional<int> n) {
  std::lock_guard lock{mutex_};
  mutation_budget_ = n;
  mutations_at_budget_ = mutations_;
}

int FakeKubernetes::calls(Verb verb, std::optional<Kind> kind) const {
  std::lock_guard lock{mutex_};
  int total = 0;
  for (const auto& [key, count] : calls_) {
    if (key.first == verb && (!kind || key.second == *kind)) total += count;
  }
  return total;
}

int FakeKubernetes::mutations() const {
  std::lock_guard lock{mutex_};
  return mutations_;
}

void FakeKubernetes::compact() {
  std::lock_guard lock{mutex_};
  compacted_resource_version_ = resource_version_;
}

void FakeKubernetes::break_watches(KubeError error) {
  std::lock_guard lock{mutex_};
  watch_break_error_ = std::move(error);
  ++watch_breaks_;
  history_changed_.notify_all();
}

std::vector<Mutation> FakeKubernetes::history() const {
  std::lock_guard lock{mutex_};
  return history_;
}

void FakeKubernetes::on_mutation(std::function<void(const Mutation&)> observer) {
  std::lock_guard lock{mutex_};
  observers_.push_back(std::move(observer));
}

std::string FakeKubernetes::current_resource_version() const {
  std::lock_guard lock{mutex_};
  return std::to_string(resource_version_);
}

// ---- Raw access ----

Json FakeKubernetes::put_raw(Kind kind, Json object) {
  std::lock_guard lock{mutex_};
  set_type_meta(kind, object);
  Json& metadata = object["metadata"];
  if (!is_namespaced(kind)) metadata.erase("namespace");
  if (text_at(metadata, "uid").empty()) metadata["uid"] = new_uid();
  if (text_at(metadata, "creationTimestamp").empty()) {
    metadata["creationTimestamp"] = format_rfc3339(clock_.now());
  }
  const ObjectRef ref = ref_of(kind, object);
  const bool existed = objects_.contains(Key{kind, ref.ns, ref.name});
  return store(Actor::System, existed ? Verb::Update : Verb::Create, kind, std::move(object));
}

std::optional<Json> FakeKubernetes::mutate_raw(const ObjectRef& ref,
                                               const std::function<void(Json&)>& change) {
  std::lock_guard lock{mutex_};
  const Key key{ref.kind, ref.ns, ref.name};
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  Json object = it->second;
  change(object);
  if (object["metadata"].contains("deletionTimestamp") && !has_finalizers(object)) {
    erase(Actor::System, Verb::Update, key);
    return std::nullopt;
  }
  return store(Actor::System, Verb::Update, ref.kind, std::move(object));
}

std::optional<Json> FakeKubernetes::get_raw(const ObjectRef& ref) const {
  std::lock_guard lock{mutex_};
  auto it = objects_.find(Key{ref.kind, ref.ns, ref.name});
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> FakeKubernetes::list_raw(Kind kind, const std::string& ns) const {
  std::lock_guard lock{mutex_};
  std::vector<Json> items;
  for (auto it = objects_.lower_bound(Key{kind, ns, ""});
       it != objects_.end() && std::get<0>(it->first) == kind; ++it) {
    if (!ns.empty() && std::get<1>(it->first) != ns) break;
    items.push_back(it->second);
  }
  return items;
}

// ---- The API rules ----

KubeResult<Json> FakeKubernetes::do_get(const ObjectRef& ref) const {
  auto it = objects_.find(Key{ref.kind, is_namespaced(ref.kind) ? ref.ns : "", ref.name});
  if (it == objects_.end()) return fail(KubeErrorCode::NotFound, not_found_message(ref));
  return it->second;
}

KubeResult<ObjectList> FakeKubernetes::do_list(Kind kind, const std::string& requested_ns,
                                               const ListOptions& options) const {
  auto labels = fake::LabelSelector::parse(options.label_selector);
  if (!labels) return fail(KubeErrorCode::BadRequest, labels.error());
  auto fields = fake::FieldSelector::parse(options.field_selector);
  if (!fields) return fail(KubeErrorCode::BadRequest, fields.error());
  for (const auto& requirement : fields->requirements()) {
    if (!field_value(kind, Json::object(), requirement.field)) {
      return fail(KubeErrorCode::BadRequest, "field label not supported: " + requirement.field);
    }
  }
  if (options.limit < 0) return fail(KubeErrorCode::BadRequest, "limit must not be negative");

  ObjectList result;
  result.resource_version = std::to_string(resource_version_);
  std::optional<ContinueToken> after;
  if (!options.continue_token.empty()) {
    after = decode(options.continue_token);
    if (!after) return fail(KubeErrorCode::BadRequest, "continue key is not valid");
    result.resource_version = after->resource_version;
  }

  const std::string ns = is_namespaced(kind) ? requested_ns : "";
  for (auto it = objects_.lower_bound(Key{kind, ns, ""});
       it != objects_.end() && std::get<0>(it->first) == kind; ++it) {
    const auto& [item_kind, item_ns, item_name] = it->first;
    if (!ns.empty() && item_ns != ns) break;
    if (after && std::tie(item_ns, item_name) <= std::tie(after->ns, after->name)) continue;
    const Json& object = it->second;
    if (!labels->matches(object["metadata"].value("labels", Json::object()))) continue;
    if (!fields->matches(
            [&](const std::string& field) { return field_value(kind, object, field); })) {
      continue;
    }
    if (options.limit > 0 && std::ssize(result.items) == options.limit) {
      const Json& last = result.items.back()["metadata"];
      result.continue_token =
          encode({result.resource_version, text_at(last, "namespace"), text_at(last, "name")});
      break;
    }
    // As the API server sends them (and the HTTP adapter passes them on): kind and apiVersion
    // are on the list, not on each item.
    Json item = object;
    item.erase("kind");
    item.erase("apiVersion");
    result.items.push_back(std::move(item));
  }
  return result;
}

KubeResult<Json> FakeKubernetes::do_create(Actor actor, Kind kind, const Json& body) {
  if (auto error = check_body(kind, body)) return std::unexpected(*error);
  Json object = body;
  Json& metadata = object["metadata"];
  if (!text_at(metadata, "resourceVersion").empty()) {
    // etcd3 store: storage.ErrResourceVersionSetOnCreate, surfaced as an internal error.
    return fail(KubeErrorCode::ServerError,
                "resourceVersion should not be set on objects to be created");
  }
  if (text_at(metadata, "name").empty() && !text_at(metadata, "generateName").empty()) {
    metadata["name"] = text_at(metadata, "generateName") + random_suffix();
  }
  if (!is_namespaced(kind)) metadata.erase("namespace");
  set_type_meta(kind, object);
  for (const char* system_field : {"deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                                   "selfLink", "managedFields"}) {
    metadata.erase(system_field);
  }
  metadata["uid"] = new_uid();
  metadata["creationTimestamp"] = format_rfc3339(clock_.now());

  if (kind == Kind::PersistentVolumeClaim) {
    // Admission: DefaultStorageClass, then StorageObjectInUseProtection.
    Json& spec = object["spec"];
    if (spec.is_object() && !spec.contains("storageClassName")) {
      for (const Json& storage_class : list_raw(Kind::StorageClass)) {
        if (storage_class["metadata"]
                .value("annotations", Json::object())
                .value(std::string{kDefaultClassAnnotation}, "") == "true") {
          spec["storageClassName"] = storage_class["metadata"]["name"];
        }
      }
    }
    add_finalizer(object, kPvcProtection);
  }
  if (kind == Kind::PersistentVolume) add_finalizer(object, kPvProtection);

  fake::prepare_for_create(kind, object);
  const std::string name = text_at(metadata, "name");
  if (FieldErrors errors = fake::validate_create(kind, object); !errors.empty()) {
    return std::unexpected(fake::invalid(kind, name, errors));
  }
  const ObjectRef ref = ref_of(kind, object);
  if (objects_.contains(Key{kind, ref.ns, ref.name})) {
    return fail(KubeErrorCode::AlreadyExists,
                fake::qualified_resource(kind) + " \"" + name + "\" already exists");
  }
  return store(actor, Verb::Create, kind, std::move(object));
}

KubeResult<Json> FakeKubernetes::do_update(Actor actor, Verb verb, Kind kind, const Json& body) {
  if (auto error = check_body(kind, body)) return std::unexpected(*error);
  const bool status_update = verb == Verb::UpdateStatus;
  if (status_update && !fake::has_status_subresource(kind)) {
    return fail(KubeErrorCode::NotFound, "the server could not find the requested resource");
  }
  const ObjectRef ref = ref_of(kind, body);
  if (ref.name.empty()) return fail(KubeErrorCode::BadRequest, "the object has no name");
  const Key key{kind, ref.ns, ref.name};
  auto it = objects_.find(key);
  const std::string sent_version = text_at(body["metadata"], "resourceVersion");
  if (it == objects_.end()) {
    if (!status_update && fake::allows_create_on_update(kind) && sent_version.empty()) {
      return do_create(actor, kind, body);
    }
    return fail(KubeErrorCode::NotFound, not_found_message(ref));
  }
  const Json old = it->second;
  const std::string live_version = text_at(old["metadata"], "resourceVersion");
  if (sent_version.empty() && !fake::allows_unconditional_update(kind)) {
    return std::unexpected(fake::invalid(
        kind, ref.name,
        {"metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"}));
  }
  if (!sent_version.empty() && sent_version != live_version) {
    return fail(KubeErrorCode::Conflict, conflict_message(kind, ref.name));
  }

  Json object = body;
  set_type_meta(kind, object);
  Json& metadata = object["metadata"];
  if (!is_namespaced(kind)) metadata.erase("namespace");
  if (text_at(metadata, "uid").empty()) metadata["uid"] = old["metadata"]["uid"];
  keep_metadata(object, old, "creationTimestamp");
  keep_metadata(object, old, "generation");
  keep_metadata(object, old, "deletionTimestamp");
  if (old["metadata"].contains("deletionGracePeriodSeconds")) {
    keep_metadata(object, old, "deletionGracePeriodSeconds");
  }
  metadata["resourceVersion"] = live_version;

  if (status_update) {
    fake::prepare_for_status_update(kind, object, old);
  } else {
    fake::prepare_for_update(kind, object, old);
  }
  if (FieldErrors errors = fake::validate_update(kind, object, old, status_update);
      !errors.empty()) {
    return std::unexpected(fake::invalid(kind, ref.name, errors));
  }
  if (kind == Kind::PersistentVolumeClaim && !status_update) {
    if (auto refused = admit_claim_resize(object, old)) return std::unexpected(*refused);
  }
  if (object == old) return old;  // nothing changed: etcd is not written
  if (object["metadata"].contains("deletionTimestamp") && !has_finalizers(object)) {
    // The store deletes instead of writing; etcd's delete event carries the last stored state.
    objects_.erase(key);
    ++resource_version_;
    record(actor, verb, key, object, old, true);
    return object;
  }
  return store(actor, verb, kind, std::move(object));
}

std::optional<KubeError> FakeKubernetes::admit_claim_resize(const Json& claim,
                                                            const Json& old) const {
  const auto new_size =
      fake::storage_bytes(claim["spec"]["resources"].value("requests", Json::object()));
  const auto old_size =
      fake::storage_bytes(old["spec"]["resources"].value("requests", Json::object()));
  if (!new_size || !old_size || *new_size <= *old_size) return std::nullopt;
  const std::string name = text_at(claim["metadata"], "name");
  const std::string prefix = "persistentvolumeclaims \"" + name + "\" is forbidden: ";
  if (old.value("status", Json::object()).value("phase", "") != "Bound") {
    return KubeError{KubeErrorCode::Forbidden,
                     prefix + "Only bound persistent volume claims can be expanded"};
  }
  const std::string class_name = text_at(claim["spec"], "storageClassName");
  bool allowed = false;
  if (!class_name.empty() && class_name == text_at(old["spec"], "storageClassName")) {
    auto storage_class = objects_.find(Key{Kind::StorageClass, "", class_name});
    allowed = storage_class != objects_.end() &&
              storage_class->second.value("allowVolumeExpansion", false) == true;
  }
  if (allowed) return std::nullopt;
  return KubeError{KubeErrorCode::Forbidden,
                   prefix +
                       "only dynamically provisioned pvc can be resized and the storageclass "
                       "that provisions the pvc must support resize"};
}

KubeResult<Json> FakeKubernetes::do_patch(Actor actor, const ObjectRef& ref, PatchType type,
                                          const Json& patch) {
  auto current = do_get(ref);
  if (!current) return current;
  auto patched = type == PatchType::Merge ? fake::apply_merge_patch(*current, patch)
                                          : fake::apply_json_patch(*current, patch);
  if (!patched) return patched;
  if (!patched->is_object() || !patched->contains("metadata") ||
      !(*patched)["metadata"].is_object()) {
    return fail(KubeErrorCode::BadRequest, "the patched object has no metadata");
  }
  const ObjectRef patched_ref = ref_of(ref.kind, *patched);
  if (patched_ref.name != ref.name || patched_ref.ns != ref.ns) {
    return fail(KubeErrorCode::BadRequest, "the name of the object (" + patched_ref.name +
                                               ") does not match the name on the URL (" + ref.name +
                                               ")");
  }
  // A resourceVersion the patch carries stays in the patched object and is checked by the
  // update as a precondition; otherwise the live one is there and the update is unconditional.
  return do_update(actor, Verb::Patch, ref.kind, *patched);
}

KubeResult<void> FakeKubernetes::do_remove(Actor actor, const ObjectRef& ref,
                                           const DeleteOptions& options, Verb verb) {
  const Key key{ref.kind, is_namespaced(ref.kind) ? ref.ns : "", ref.name};
  auto it = objects_.find(key);
  if (it == objects_.end()) return fail(KubeErrorCode::NotFound, not_found_message(ref));
  Json object = it->second;
  Json& metadata = object["metadata"];
  const std::string uid = text_at(metadata, "uid");
  const std::string version = text_at(metadata, "resourceVersion");
  if (options.uid && *options.uid != uid) {
    return fail(KubeErrorCode::Conflict, "Precondition failed: UID in precondition: " +
                                             *options.uid + ", UID in object meta: " + uid);
  }
  if (options.resource_version && *options.resource_version != version) {
    return fail(KubeErrorCode::Conflict, "Precondition failed: ResourceVersion in precondition: " +
                                             *options.resource_version +
                                             ", ResourceVersion in object meta: " + version);
  }
  if (metadata.contains("deletionTimestamp")) {
    // Already being deleted: a delete asking for Orphan still switches the propagation (the
    // registry updates the garbage collector's finalizers on every delete), which is how an
    // object held by a finalizer after a Background delete lets its dependents go. The
    // orphaning is done here at once, as for a first delete that no dependents hold.
    if (options.propagation == Propagation::Orphan && !sim::has_finalizer(object, "orphan") &&
        !sim::has_finalizer(object, "foregroundDeletion")) {
      orphan_dependents(uid);
    }
    return {};
  }

  const Propagation propagation = effective_propagation(ref.kind, options.propagation);
  // Held by a finalizer and owning dependents, the object keeps the API server's finalizer of
  // the propagation asked for ("orphan", "foregroundDeletion") until the garbage collector
  // (SimulatedCluster) orphaned or deleted its dependents and removed it, as a real cluster
  // does. Otherwise the orphaning is done here at once (the collector's moment is not modelled).
  const bool held_with_dependents = has_finalizers(object) && has_dependents(uid);
  if (held_with_dependents && propagation == Propagation::Orphan) {
    add_finalizer(object, "orphan");
  } else if (held_with_dependents && propagation == Propagation::Foreground) {
    add_finalizer(object, "foregroundDeletion");
  } else if (propagation == Propagation::Orphan) {
    orphan_dependents(uid);
  }
  if (has_finalizers(object)) {
    // The registry's markAsDeleting: a kind that has no graceful deletion of its own gets its
    // generation bumped with the deletionTimestamp (a controller that does not sync objects
    // being deleted never observes it).
    if (ref.kind != Kind::Pod && metadata.contains("generation") &&
        metadata["generation"].is_number_integer() &&
        metadata["generation"].get<std::int64_t>() > 0) {
      metadata["generation"] = metadata["generation"].get<std::int64_t>() + 1;
    }
    metadata["deletionTimestamp"] = format_rfc3339(clock_.now());
    metadata["deletionGracePeriodSeconds"] = 0;
    store(actor, verb, ref.kind, std::move(object));
    return {};
  }
  erase(actor, verb, key);
  return {};
}

KubeResult<Json> FakeKubernetes::do_get_scale(const ObjectRef& ref) const {
  if (ref.kind != Kind::StatefulSet) {
    return fail(KubeErrorCode::NotFound, "the server could not find the requested resource");
  }
  auto object = do_get(ref);
  if (!object) return object;
  return scale_of(*object);
}

KubeResult<Json> FakeKubernetes::do_update_scale(Actor actor, const ObjectRef& ref,
                                                 std::int32_t replicas,
                                                 const std::string& resource_version) {
  auto current = do_get_scale(ref);  // NotFound for kinds without /scale and missing objects
  if (!current) return current;
  if (replicas < 0) {
    return fail(KubeErrorCode::Invalid,
                "Scale.autoscaling \"" + ref.name +
                    "\" is invalid: spec.replicas: Invalid value: " + std::to_string(replicas) +
                    ": must be greater than or equal to 0");
  }
  // ScaleREST copies the Scale's resourceVersion into the StatefulSet it updates: empty is an
  // unconditional update, anything else a precondition.
  Json object = objects_.at(Key{ref.kind, ref.ns, ref.name});
  object["spec"]["replicas"] = replicas;
  if (resource_version.empty()) {
    object["metadata"].erase("resourceVersion");
  } else {
    object["metadata"]["resourceVersion"] = resource_version;
  }
  auto updated = do_update(actor, Verb::UpdateScale, ref.kind, object);
  if (!updated) return updated;
  return scale_of(*updated);
}

std::optional<KubeError> FakeKubernetes::disruption_refusal(const Json& pod) const {
  const std::string ns = text_at(pod["metadata"], "namespace");
  const Json& labels = pod["metadata"].value("labels", Json::object());
  std::vector<const Json*> budgets;
  for (const auto& [key, object] : objects_) {
    if (std::get<0>(key) != Kind::PodDisruptionBudget || std::get<1>(key) != ns) continue;
    auto selector = fake::LabelSelector::from_json(
        object.value("spec", Json::object()).value("selector", Json::object()));
    if (selector && selector->matches(labels)) budgets.push_back(&object);
  }
  if (budgets.empty()) return std::nullopt;
  if (budgets.size() > 1) {
    return KubeError{KubeErrorCode::ServerError,
                     "This pod has more than one PodDisruptionBudget, which the eviction "
                     "subresource does not support."};
  }
  const Json& budget = *budgets.front();
  const Json& spec = budget.value("spec", Json::object());
  auto selector = fake::LabelSelector::from_json(spec.value("selector", Json::object()));
  // Healthy: selected, Ready and not being deleted. Expected: the replicas of each selected
  // pod's controller (StatefulSets only here), counted once per controller.
  std::int64_t healthy = 0;
  std::int64_t expected = 0;
  bool unmanaged = false;
  std::set<std::string> controllers;
  for (const auto& [key, object] : objects_) {
    if (std::get<0>(key) != Kind::Pod || std::get<1>(key) != ns) continue;
    if (!selector->matches(object["metadata"].value("labels", Json::object()))) continue;
    if (!object["metadata"].contains("deletionTimestamp") && sim::pod_is_ready(object)) ++healthy;
    const Json& owners = object["metadata"].value("ownerReferences", Json::array());
    auto controller = std::ranges::find_if(
        owners, [](const Json& owner) { return owner.value("controller", false); });
    if (controller == owners.end() || controller->value("kind", "") != "StatefulSet") {
      unmanaged = true;
      continue;
    }
    const std::string name = controller->value("name", "");
    if (!controllers.insert(name).second) continue;
    auto owner = objects_.find(Key{Kind::StatefulSet, ns, name});
    if (owner == objects_.end()) {
      unmanaged = true;
      continue;
    }
    expected += owner->second.value("spec", Json::object()).value("replicas", std::int64_t{1});
  }
  std::int64_t desired = 0;
  if (spec.contains("minAvailable") && spec["minAvailable"].is_number_integer()) {
    desired = spec["minAvailable"].get<std::int64_t>();
  } else if (spec.contains("maxUnavailable") && spec["maxUnavailable"].is_number_integer() &&
             !unmanaged) {
    desired = std::max<std::int64_t>(0, expected - spec["maxUnavailable"].get<std::int64_t>());
  } else {
    desired = healthy + 1;  // percentages are not modelled; unmanaged pods allow nothing
  }
  const bool ready = sim::pod_is_ready(pod);
  // An unhealthy pod may go while the budget holds (IfHealthyBudget, the default); a healthy
  // one only while a disruption is left.
  const bool allowed = ready ? healthy - desired > 0 : healthy >= desired;
  if (allowed) return std::nullopt;
  return KubeError{KubeErrorCode::TooManyRequests,
                   "Cannot evict pod as it would violate the pod's disruption budget. [causes: "
                   "The disruption budget " +
                       text_at(budget["metadata"], "name") + " needs " + std::to_string(desired) +
                       " healthy pods and has " + std::to_string(healthy) + " currently]"};
}

KubeResult<void> FakeKubernetes::do_evict(Actor actor, const ObjectRef& ref,
                                          const EvictOptions& options) {
  if (ref.kind != Kind::Pod) {
    return fail(KubeErrorCode::NotFound, "the server could not find the requested resource");
  }
  auto it = objects_.find(Key{ref.kind, ref.ns, ref.name});
  if (it == objects_.end()) return fail(KubeErrorCode::NotFound, not_found_message(ref));
  const Json& pod = it->second;
  const std::string uid = text_at(pod["metadata"], "uid");
  if (options.uid && *options.uid != uid) {
    return fail(KubeErrorCode::Conflict, "Precondition failed: UID in precondition: " +
                                             *options.uid + ", UID in object meta: " + uid);
  }
  // The registry's canIgnorePDB: a pod that is already gone, terminal or not yet running costs
  // no disruption.
  const std::string phase = pod.value("status", Json::object()).value("phase", "");
  const bool ignores_budget = pod["metadata"].contains("deletionTimestamp") ||
                              phase == "Succeeded" || phase == "Failed" || phase == "Pending";
  if (!ignores_budget) {
    if (auto refusal = disruption_refusal(pod)) return std::unexpected(*refusal);
  }
  if (options.dry_run) return {};
  DeleteOptions remove;
  remove.uid = uid;
  return do_remove(actor, ref, remove, Verb::Evict);
}

bool FakeKubernetes::has_dependents(const std::string& owner_uid) const {
  return std::ranges::any_of(objects_, [&](const auto& entry) {
    const Json& owners = entry.second["metadata"].value("ownerReferences", Json::array());
    return std::ranges::any_of(
        owners, [&](const Json& owner) { return owner.value("uid", "") == owner_uid; });
  });
}

void FakeKubernetes::orphan_dependents(const std::string& owner_uid) {
  std::vector<std::pair<Kind, Json>> orphaned;
  for (const auto& [key, object] : objects_) {
    const Json& owners = object["metadata"].value("ownerReferences", Json::array());
    if (std::ranges::none_of(
            owners, [&](const Json& owner) { return owner.value("uid", "") == owner_uid; })) {
      continue;
    }
    Json copy = object;
    Json kept = Json::array();
    for (const Json& owner : owners) {
      if (owner.value("uid", "") != owner_uid) kept.push_back(owner);
    }
    if (kept.empty()) {
      copy["metadata"].erase("ownerReferences");
    } else {
      copy["metadata"]["ownerReferences"] = kept;
    }
    orphaned.emplace_back(std::get<0>(key), std::move(copy));
  }
  for (auto& [kind, object] : orphaned) store(Actor::System, Verb::Update, kind, std::move(object));
}

Json FakeKubernetes::store(Actor actor, Verb verb, Kind kind, Json object) {
  object["metadata"]["resourceVersion"] = next_resource_version();
  const ObjectRef ref = ref_of(kind, object);
  const Key key{kind, ref.ns, ref.name};
  Json& stored = objects_[key];
  Json previous = std::exchange(stored, object);
  record(actor, verb, key, object, std::move(previous), false);
  return object;
}

void FakeKubernetes::erase(Actor actor, Verb verb, const Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  const Json last = it->second;
  objects_.erase(it);
  ++resource_version_;
  record(actor, verb, key, last, last, true);
}

void FakeKubernetes::record(Actor actor, Verb verb, const Key& key, const Json& object,
                            Json previous, bool deleted) {
  Mutation mutation{
      .sequence = std::ssize(history_) + 1,
      .actor = actor,
      .verb = verb,
      .ref = ObjectRef{std::get<0>(key), std::get<1>(key), std::get<2>(key)},
      .object = object,
      .deleted = deleted,
      .time = clock_.now(),
      .resource_version = resource_version_,
  };
  history_.push_back(mutation);
  previous_states_.push_back(std::move(previous));
  history_changed_.notify_all();
  const auto observers = observers_;  // an observer may register another
  for (const auto& observer : observers) observer(mutation);
}

std::string FakeKubernetes::next_resource_version() {
  return std::to_string(++resource_version_);
}

std::uint64_t FakeKubernetes::next_random() {
  std::uint64_t z = (random_state_ += 0x9E3779B97F4A7C15ULL);  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::string FakeKubernetes::new_uid() {
  const std::uint64_t high = next_random();
  const std::uint64_t low = next_random();
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%08x-%04x-4%03x-%04x-%012llx",
                static_cast<unsigned>(high >> 32), static_cast<unsigned>((high >> 16) & 0xffff),
                static_cast<unsigned>(high & 0xfff),
                static_cast<unsigned>(0x8000 | ((low >> 48) & 0x3fff)),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return buffer;
}

std::string FakeKubernetes::random_suffix() {
  // The alphabet of k8s.io/apimachinery/pkg/util/rand.String (no vowels, no confusables).
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string suffix;
  std::uint64_t bits = next_random();
  for (int i = 0; i < 5; ++i) {
    suffix += alphabet[bits % alphabet.size()];
    bits /= alphabet.size();
  }
  return suffix;
}

}  // namespace stsresize
