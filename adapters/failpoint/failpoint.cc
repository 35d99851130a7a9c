#include "adapters/failpoint/failpoint.h"

#include <charconv>
#include <csignal>

#include "engine/annotations.h"
#include "engine/k8s_objects.h"

namespace stsresize::failpoint {

std::string_view to_string(Position position) {
  switch (position) {
    case Position::AfterJournal:
      return "after-journal";
    case Position::AfterAnnotation:
      return "after-annotation";
    case Position::AfterWrite:
      return "after-write";
  }
  return "unknown";
}

std::string to_string(const Failpoint& failpoint) {
  return std::string{to_string(failpoint.position)} + ":" + std::to_string(failpoint.boundary);
}

std::expected<std::optional<Failpoint>, std::string> parse(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto refuse = [&](std::string_view why) {
    return std::unexpected(
        std::string{kEnvironmentVariable} + "='" + std::string{text} + "': " + std::string{why} +
        " (expected after-journal:N, after-annotation:N or after-write:N, N from 1)");
  };
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return refuse("no ':N'");
  const std::string_view name = text.substr(0, colon);
  const std::string_view number = text.substr(colon + 1);
  Failpoint failpoint;
  if (name == to_string(Position::AfterJournal)) {
    failpoint.position = Position::AfterJournal;
  } else if (name == to_string(Position::AfterAnnotation)) {
    failpoint.position = Position::AfterAnnotation;
  } else if (name == to_string(Position::AfterWrite)) {
    failpoint.position = Position::AfterWrite;
  } else {
    return refuse("unknown position '" + std::string{name} + "'");
  }
  constexpr std::int64_t kMaxBoundary = 1'000'000;
  const char* end = number.data() + number.size();
  auto [stop, error] = std::from_chars(number.data(), end, failpoint.boundary);
  if (number.empty() || number.front() == '+' || error != std::errc{} || stop != end) {
    return refuse("N is not a whole number");
  }
  if (failpoint.boundary < 1 || failpoint.boundary > kMaxBoundary) {
    return refuse("N must be from 1 to 1000000");
  }
  return failpoint;
}

void kill_this_process(const std::string&) {
  std::raise(SIGKILL);
}

// ---- FailpointJournal

FailpointJournal::FailpointJournal(Journal& inner, std::int64_t fire_at, Kill kill)
    : inner_(inner), fire_at_(fire_at), kill_(std::move(kill)) {}

JournalResult<void> FailpointJournal::append(std::span<const JournalRecord> records) {
  auto appended = inner_.append(records);
  if (!appended) return appended;
  const JournalRecord* transition = nullptr;
  for (const JournalRecord& record : records) {
    if (record.type == "PhaseChanged") transition = &record;
  }
  if (transition == nullptr) return appended;
  bool fire = false;
  {
    std::lock_guard lock(mutex_);
    fire = ++seen_ == fire_at_;
  }
  if (fire) {
    const Json& data = transition->data;
    kill_(to_string(Failpoint{Position::AfterJournal, fire_at_}) + " operation " +
          transition->operation_id + ": " + data.value("from", std::string{"?"}) + " -> " +
          data.value("to", std::string{"?"}));
  }
  return appended;
}

JournalResult<std::int64_t> FailpointJournal::last_sequence(const std::string& operation_id) {
  return inner_.last_sequence(operation_id);
}

JournalResult<std::vector<JournalRecord>> FailpointJournal::read(const std::string& operation_id,
                                                                 std::int64_t after) {
  return inner_.read(operation_id, after);
}

JournalResult<std::vector<JournalRecord>> FailpointJournal::query(const JournalQuery& query) {
  return inner_.query(query);
}

JournalResult<std::vector<OperationSummary>> FailpointJournal::operations() {
  return inner_.operations();
}

std::int64_t FailpointJournal::boundaries_seen() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

// ---- FailpointKubernetes

namespace {

std::string key_of(const Json& object) {
  const Json& metadata = object.value("metadata", Json::object());
  return metadata.value("namespace", std::string{}) + "/" + metadata.value("name", std::string{});
}

std::string phase_of(const Json& statefulset) {
  auto phase = k8s::annotation(statefulset, kPhaseAnnotation);
  return phase && phase->has_value() ? **phase : std::string{};
}

std::string shown(const std::string& phase) {
  return phase.empty() ? "(none)" : phase;
}

}  // namespace

FailpointKubernetes::FailpointKubernetes(Kubernetes& inner, std::int64_t fire_at, Kill kill)
    : inner_(inner), fire_at_(fire_at), kill_(std::move(kill)) {}

void FailpointKubernetes::remember(const Json& statefulset) {
  std::lock_guard lock(mutex_);
  phases_[key_of(statefulset)] = phase_of(statefulset);
}

void FailpointKubernetes::written(const Json& statefulset) {
  const std::string key = key_of(statefulset);
  const std::string now = phase_of(statefulset);
  std::string before;
  bool fire = false;
  {
    std::lock_guard lock(mutex_);
    auto known = phases_.find(key);
    if (known == phases_.end()) {
      phases_[key] = now;
      return;
    }
    before = std::exchange(known->second, now);
    if (before == now) return;
    fire = ++seen_ == fire_at_;
  }
  if (fire) {
    kill_(to_string(Failpoint{Position::AfterAnnotation, fire_at_}) + " StatefulSet " + key + ": " +
          shown(before) + " -> " + shown(now));
  }
}

KubeResult<Json> FailpointKubernetes::get(const ObjectRef& ref) {
  auto result = inner_.get(ref);
  if (ref.kind != Kind::StatefulSet) return result;
  if (result) {
    remember(*result);
  } else if (result.error().code == KubeErrorCode::NotFound) {
    std::lock_guard lock(mutex_);
    phases_.erase(ref.ns + "/" + ref.name);
  }
  return result;
}

KubeResult<ObjectList> FailpointKubernetes::list(Kind kind, const std::string& ns,
                                                 const ListOptions& options) {
  return inner_.list(kind, ns, options);
}

KubeResult<Json> FailpointKubernetes::create(Kind kind, const Json& object) {
  auto result = inner_.create(kind, object);
  if (kind == Kind::StatefulSet && result) remember(*result);
  return result;
}

KubeResult<Json> FailpointKubernetes::update(Kind kind, const Json& object) {
  auto result = inner_.update(kind, object);
  if (kind == Kind::StatefulSet && result) written(*result);
  return result;
}

KubeResult<Json> FailpointKubernetes::update_status(Kind kind, const Json& object) {
  return inner_.update_status(kind, object);
}

KubeResult<Json> FailpointKubernetes::patch(const ObjectRef& ref, PatchType type,
                                            const Json& patch) {
  auto result = inner_.patch(ref, type, patch);
  if (ref.kind == Kind::StatefulSet && result) written(*result);
  return result;
}

KubeResult<void> FailpointKubernetes::remove(const ObjectRef& ref, const DeleteOptions& options) {
  auto result = inner_.remove(ref, options);
  if (ref.kind == Kind::StatefulSet && result) {
    std::lock_guard lock(mutex_);
    phases_.erase(ref.ns + "/" + ref.name);
  }
  return result;
}

KubeResult<void> FailpointKubernetes::evict(const ObjectRef& pod, const EvictOptions& options) {
  return inner_.evict(pod, options);
}

KubeResult<Json> FailpointKubernetes::get_scale(const ObjectRef& ref) {
  return inner_.get_scale(ref);
}

KubeResult<Json> FailpointKubernetes::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                                   const std::string& resource_version) {
  return inner_.update_scale(ref, replicas, resource_version);
}

KubeResult<void> FailpointKubernetes::watch(Kind kind, const std::string& ns,
                                            const WatchOptions& options, std::stop_token stop,
                                            const WatchHandler& handler) {
  return inner_.watch(kind, ns, options, std::move(stop), handler);
}

std::int64_t FailpointKubernetes::boundaries_seen() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

// ---- FailpointWrites

namespace {

bool is_side_effect(Kind kind) {
  return kind != Kind::Event && kind != Kind::Lease;
}

std::string finalizers_of(const Json& object) {
  std::string text;
  const Json& metadata = object.value("metadata", Json::object());
  for (const Json& finalizer : metadata.value("finalizers", Json::array())) {
    if (!finalizer.is_string()) continue;
    text += (text.empty() ? "" : ",") + finalizer.get<std::string>();
  }
  return text.empty() ? "(none)" : text;
}

}  // namespace

FailpointWrites::FailpointWrites(Kubernetes& inner, std::int64_t fire_at, Kill kill)
    : inner_(inner), fire_at_(fire_at), kill_(std::move(kill)) {}

void FailpointWrites::written(std::string_view verb, const ObjectRef& ref, const Json* result) {
  if (!is_side_effect(ref.kind)) return;
  bool fire = false;
  {
    std::lock_guard lock(mutex_);
    fire = ++seen_ == fire_at_;
  }
  if (!fire) return;
  std::string what = to_string(Failpoint{Position::AfterWrite, fire_at_}) + " " +
                     std::string{verb} + " " + to_string(ref);
  if (ref.kind == Kind::StatefulSet && result != nullptr) {
    what += " (phase " + shown(phase_of(*result)) + ", finalizers " + finalizers_of(*result) + ")";
  }
  kill_(what);
}

KubeResult<Json> FailpointWrites::get(const ObjectRef& ref) {
  return inner_.get(ref);
}

KubeResult<ObjectList> FailpointWrites::list(Kind kind, const std::string& ns,
                                             const ListOptions& options) {
  return inner_.list(kind, ns, options);
}

KubeResult<Json> FailpointWrites::create(Kind kind, const Json& object) {
  auto result = inner_.create(kind, object);
  if (result) written("create", ref_of(kind, *result), &*result);
  return result;
}

KubeResult<Json> FailpointWrites::update(Kind kind, const Json& object) {
  auto result = inner_.update(kind, object);
  if (result) written("update", ref_of(kind, *result), &*result);
  return result;
}

KubeResult<Json> FailpointWrites::update_status(Kind kind, const Json& object) {
  auto result = inner_.update_status(kind, object);
  if (result) written("update status of", ref_of(kind, *result), &*result);
  return result;
}

KubeResult<Json> FailpointWrites::patch(const ObjectRef& ref, PatchType type, const Json& patch) {
  auto result = inner_.patch(ref, type, patch);
  if (result) written("patch", ref, &*result);
  return result;
}

KubeResult<void> FailpointWrites::remove(const ObjectRef& ref, const DeleteOptions& options) {
  auto result = inner_.remove(ref, options);
  if (result) written("delete", ref, nullptr);
  return result;
}

KubeResult<void> FailpointWrites::evict(const ObjectRef& pod, const EvictOptions& options) {
  auto result = inner_.evict(pod, options);
  if (result && !options.dry_run) written("evict", pod, nullptr);
  return result;
}

KubeResult<Json> FailpointWrites::get_scale(const ObjectRef& ref) {
  return inner_.get_scale(ref);
}

KubeResult<Json> FailpointWrites::update_scale(const ObjectRef& ref, std::int32_t replicas,
                                               const std::string& resource_version) {
  auto result = inner_.update_scale(ref, replicas, resource_version);
  // The Scale subresource's answer is a Scale, not the StatefulSet: no phase to show.
  if (result) written("update scale of", ref, nullptr);
  return result;
}

KubeResult<void> FailpointWrites::watch(Kind kind, const std::string& ns,
                                        const WatchOptions& options, std::stop_token stop,
                                        const WatchHandler& handler) {
  return inner_.watch(kind, ns, options, std::move(stop), handler);
}

std::int64_t FailpointWrites::boundaries_seen() const {
  std::lock_guard lock(mutex_);
  return seen_;
}

}  // namespace stsresize::failpoint
