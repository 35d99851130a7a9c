#pragma once
// A test hook: kill the controller at a transition boundary, so that the end-to-end tests can
// prove on the real control plane what tests/engine/crash_resume_test.cc proves on the fakes
// (a controller killed anywhere resumes from the cluster and the journal, same end state).
//
// Armed only by the environment (`stsresize run` reads it before anything starts):
//   STSRESIZE_FAILPOINT=after-journal:N     right after the N-th journal append that holds a
//                                           PhaseChanged record (the transition is journaled,
//                                           the StatefulSet's annotation not yet written)
//   STSRESIZE_FAILPOINT=after-annotation:N  right after the N-th StatefulSet write whose result
//                                           changes the stsresize.dev/phase annotation (the
//                                           transition is authoritative: the boundary proper)
//   STSRESIZE_FAILPOINT=after-write:N       right after the N-th successful mutating request
//                                           (create, update, update_status, patch, remove,
//                                           update_scale) on any object but an Event or a Lease:
//                                           every side effect, such as a drain's cleanup pod
//                                           created or its claim deleted, before the
//                                           controller has recorded it
// N counts from 1 in this process. Unset or empty: disarmed, and the ports are not wrapped.
//
// The decorators wrap the controller's Journal and Kubernetes ports; engine/ and states/ know
// nothing of them. Firing calls `Kill` (default: raise(SIGKILL) on the process itself, so
// nothing after the boundary runs, not even destructors); tests pass one that records.
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "engine/ports/journal.h"
#include "engine/ports/kubernetes.h"

namespace stsresize::failpoint {

inline constexpr std::string_view kEnvironmentVariable = "STSRESIZE_FAILPOINT";

enum class Position { AfterJournal, AfterAnnotation, AfterWrite };
// "after-journal", "after-annotation", "after-write"
std::string_view to_string(Position position);

struct Failpoint {
  Position position = Position::AfterAnnotation;
  std::int64_t boundary = 1;  // fire at the boundary-th one seen by this process (1-based)

  friend bool operator==(const Failpoint&, const Failpoint&) = default;
};
std::string to_string(const Failpoint& failpoint);  // "after-journal:3"

// Empty text: nullopt (disarmed). Otherwise exactly "<position>:<N>", N a decimal from 1 to
// 1000000; anything else is an error that quotes the text and shows the accepted syntax.
std::expected<std::optional<Failpoint>, std::string> parse(std::string_view text);

// Called when the failpoint fires, with what it fired on ("after-journal:1 operation <id>:
// Planning -> ScalingDown"). Must not return in production; a test's may.
using Kill = std::function<void(const std::string& what)>;
void kill_this_process(const std::string& what);  // raise(SIGKILL)

// Passes every call through to `inner`; an append that succeeded and holds a PhaseChanged
// record is a boundary, and the `fire_at`-th one calls `kill` before append returns.
class FailpointJournal final : public Journal {
 public:
  FailpointJournal(Journal& inner, std::int64_t fire_at, Kill kill = kill_this_process);

  JournalResult<void> append(std::span<const JournalRecord> records) override;
  JournalResult<std::int64_t> last_sequence(const std::string& operation_id) override;
  JournalResult<std::vector<JournalRecord>> read(const std::string& operation_id,
                                                 std::int64_t after = 0) override;
  JournalResult<std::vector<JournalRecord>> query(const JournalQuery& query) override;
  JournalResult<std::vector<OperationSummary>> operations() override;

  std::int64_t boundaries_seen() const;

 private:
  Journal& inner_;
  const std::int64_t fire_at_;
  Kill kill_;
  mutable std::mutex mutex_;
  std::int64_t seen_ = 0;
};

// Passes every call through to `inner`. It remembers the phase annotation of each StatefulSet
// it last read (get) or wrote (create, update, patch; a successful remove forgets it); an
// update or patch that succeeded and returned a different phase than remembered is a boundary
// (the annotation removed at Completed counts), and the `fire_at`-th one calls `kill` before
// the call returns. A write to a StatefulSet this process never read is not counted: the
// reconciler always reads before it writes. Creates never count (the re-create of an explicit
// request carries the phase it was deleted with). Lists and watches are not looked at: the
// informers run on other threads and would race the worker's own write.
class FailpointKubernetes final : public Kubernetes {
 public:
  FailpointKubernetes(Kubernetes& inner, std::int64_t fire_at, Kill kill = kill_this_process);

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

  std::int64_t boundaries_seen() const;

 private:
  void remember(const Json& statefulset);
  // After a successful update or patch: a boundary when the phase moved.
  void written(const Json& statefulset);

  Kubernetes& inner_;
  const std::int64_t fire_at_;
  Kill kill_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> phases_;  // "ns/name" -> phase annotation ("" when none)
  std::int64_t seen_ = 0;
};

// Passes every call through to `inner`; every mutating request that succeeded is a boundary,
// unless it was on an Event or a Lease (the Events this process records and its leader lease
// are no side effects on the user's objects, and their count depends on timing), and the
// `fire_at`-th one calls `kill` before the call returns. update_status counts like update: it is
// a write others see (no step makes one today; one added later is then a boundary too). A
// refused request (an error, AlreadyExists and NotFound included) changed nothing and is not
// counted. Reads, lists and watches are not looked at.
class FailpointWrites final : public Kubernetes {
 public:
  FailpointWrites(Kubernetes& inner, std::int64_t fire_at, Kill kill = kill_this_process);

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

  std::int64_t boundaries_seen() const;

 private:
  // After a successful write: "<verb> <Kind> <ns>/<name>", and for a StatefulSet written whole
  // (`result`) its phase annotation and finalizers as they are now.
  void written(std::string_view verb, const ObjectRef& ref, const Json* result);

  Kubernetes& inner_;
  const std::int64_t fire_at_;
  Kill kill_;
  mutable std::mutex mutex_;
  std::int64_t seen_ = 0;
};

}  // namespace stsresize::failpoint
