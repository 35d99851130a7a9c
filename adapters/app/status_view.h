#pragma once
// What `stsresize status` and `stsresize describe` show, computed from objects already read
// (StatefulSets, the claims and Jobs labelled stsresize.dev/statefulset, Events, journal
// records): pure, no I/O, so that every rendering is tested on sample objects
// (tests/unit/status_view_test.cc). The commands that read the cluster are status_command.h.
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/copy_progress.h"
#include "engine/json.h"
#include "engine/operation.h"
#include "engine/ports/journal.h"
#include "engine/time.h"

namespace stsresize::cli {

// What a StatefulSet's annotations say about resizing it.
enum class StatusKind {
  InProgress,  // stsresize.dev/state, a phase that is not terminal
  Failed,      // stsresize.dev/state in Failed (label stsresize.dev/failed)
  Completed,   // no state; stsresize.dev/last-operation says how the last one ended
  Refused,     // stsresize.dev/resize-status: the request was rejected, nothing was touched
  Invalid,     // stsresize.dev/state cannot be read: the controller does nothing either
};
std::string_view to_string(StatusKind kind);

// One copy Job of an operation, as `status` and `describe` summarise it.
struct JobView {
  std::string name;
  std::string purpose;  // label stsresize.dev/purpose: "backup" or "restore"
  std::string claim;    // the claim it copies, from the name (<claim>-stsresize-<purpose>)
  std::string state;    // "Running", "Succeeded", "Failed" or "Pending"
  std::string detail;   // "1 active, 1 failed attempt", the Failed condition's reason...
  std::optional<TimePoint> created;
  // A running copy's, from the end of its pod's log (status_command.cc); nullopt: not read.
  std::optional<CopyProgress> progress;
};

// One line of `stsresize status`. Empty strings and nullopt are unknown ("-" in the table).
struct StatusRow {
  std::string ns;
  std::string name;
  StatusKind kind = StatusKind::InProgress;
  std::string operation_id;
  std::string phase;  // the phase, or "Completed" / "Refused" / "Invalid"
  Path path = Path::Undecided;
  // Claims through the current phase's per-claim step (StatusRow::claims_meaning), out of the
  // claims planned; nullopt before the plan exists.
  std::optional<int> claims_done;
  std::optional<int> claims_total;
  std::optional<TimePoint> since;  // the current phase's start; Completed: when it finished
  std::string message;             // failure, warning, refusal, a failing Job, a bad state
  // "BackingUp -> Recreating" while that transition waits for `stsresize advance --approve`
  // (stsresize.dev/mode manual or step); empty otherwise.
  std::string awaiting_approval;
  // -o wide
  std::string trigger;  // "request" (stsresize.dev/resize) or "template" (templates grew)
  std::string target;   // "data:2Gi", "data:2Gi(fast)", several joined by ","
  std::optional<std::int32_t> original_replicas;
  // -o json / yaml, and describe
  std::optional<Operation> operation;
  std::vector<JobView> jobs;
  std::vector<std::string> backup_claims;  // names of the operation's backup claims
};

// The row of one StatefulSet, or nullopt when no stsresize annotation is on it. `claims` and
// `jobs` may hold objects of other StatefulSets: only those labelled with this one's name
// (and, when an operation is known, its id) are used.
std::optional<StatusRow> status_row(const Json& statefulset, std::span<const Json> claims,
                                    std::span<const Json> jobs);
// While an explicit request re-creates a StatefulSet, the object is absent for a moment and its
// definition, state annotation included, is in a ConfigMap (engine/resize_request.h): the row
// of that definition, saying so; nullopt if `config_map` holds no readable definition.
std::optional<StatusRow> status_row_from_definition(const Json& config_map,
                                                    std::span<const Json> claims,
                                                    std::span<const Json> jobs);
// The rows of every StatefulSet that has one, and of every definition ConfigMap (labelled
// stsresize.dev/statefulset) whose StatefulSet is not among `statefulsets`, sorted by
// namespace and name.
std::vector<StatusRow> status_rows(std::span<const Json> statefulsets, std::span<const Json> claims,
                                   std::span<const Json> jobs,
                                   std::span<const Json> config_maps = {});

struct StatusRenderOptions {
  bool all_namespaces = false;  // NAMESPACE column
  bool wide = false;            // OPERATION, TRIGGER, TARGET, REPLICAS columns
};

// kubectl's table: columns padded, MESSAGE last. Needs at least one row.
std::string render_status_table(std::span<const StatusRow> rows, TimePoint now,
                                const StatusRenderOptions& options);
// The machine schema: {"items": [...], "now": time} (see status_document_item for the fields).
Json status_document(std::span<const StatusRow> rows, TimePoint now);
std::string render_status_json(std::span<const StatusRow> rows, TimePoint now);
std::string render_status_yaml(std::span<const StatusRow> rows, TimePoint now);
// Any JSON document as block YAML; strings YAML would read as something else are quoted.
std::string to_yaml(const Json& document);

// `stsresize describe`: everything known about one StatefulSet's resizes.
struct DescribeInput {
  Json statefulset;  // or the definition kept in `definition_config_map`
  // Set when the StatefulSet is absent and `statefulset` is its definition (the request is
  // re-creating it): the ConfigMap's name.
  std::optional<std::string> definition_config_map;
  std::vector<Json> claims;  // labelled stsresize.dev/statefulset=<name>
  std::vector<Json> jobs;    // labelled stsresize.dev/statefulset=<name>
  std::vector<Json> events;  // Events whose involvedObject is the StatefulSet
  // The StatefulSet's claims a lost-volume recovery created afresh (annotated
  // stsresize.dev/recovered-from: the lost volume, kept Retain until a person deletes it).
  std::vector<Json> recovered;
  // The planned source claims the operation has not recorded deleted, as read (absent ones
  // left out): SOURCE says "kept" only of one that is there, the same object and not going
  // ("deleting", "replaced", "gone" otherwise). nullopt: not read, SOURCE as the state says.
  std::optional<std::vector<Json>> sources;
  // With --journal: the journal's name and the records of this StatefulSet's operations.
  std::optional<std::string> journal;
  std::vector<JournalRecord> journal_records;
  // The running copies' progress, by Job name (read from their pods' logs).
  std::map<std::string, CopyProgress> progress;
};
std::string render_describe(const DescribeInput& input, TimePoint now);

}  // namespace stsresize::cli
