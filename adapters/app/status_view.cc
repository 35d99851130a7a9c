#include "adapters/app/status_view.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "adapters/app/durations.h"
#include "adapters/app/text_table.h"
#include "engine/actions/explain.h"
#include "engine/actions/rules.h"
#include "engine/annotations.h"
#include "engine/duration.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/operation_codec.h"
#include "engine/replay.h"
#include "engine/resize_request.h"
#include "engine/timestamp.h"
#include "states/machine.h"

namespace stsresize::cli {

namespace {

constexpr std::string_view kRejectedPrefix = "rejected: ";
// describe shows this many Events, the most recent ones.
constexpr std::size_t kMaxEvents = 20;

// Left-aligned columns, three spaces apart as kubectl prints them; every line starts with
// `indent`.
std::string columns(const std::vector<Cells>& table, std::string_view indent = "") {
  return text_table(table, TableStyle{.indent = indent});
}

std::string or_dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

std::string string_at(const Json& object, std::initializer_list<std::string_view> path) {
  const Json* at = &object;
  for (std::string_view key : path) {
    if (!at->is_object()) return {};
    auto next = at->find(key);
    if (next == at->end()) return {};
    at = &*next;
  }
  return at->is_string() ? at->get<std::string>() : std::string{};
}

std::optional<TimePoint> time_at(const Json& object, std::initializer_list<std::string_view> path) {
  const std::string text = string_at(object, path);
  if (text.empty()) return std::nullopt;
  auto time = parse_timestamp(text);
  if (!time) return std::nullopt;
  return *time;
}

std::string label_or_empty(const Json& object, std::string_view key) {
  auto value = k8s::label(object, key);
  return value && *value ? **value : std::string{};
}

std::string annotation_or_empty(const Json& object, std::string_view key) {
  auto value = k8s::annotation(object, key);
  return value && *value ? **value : std::string{};
}

std::string lower(std::string_view text) {
  std::string out{text};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string path_name(Path path) {
  return path == Path::Undecided ? "" : lower(to_string(path));
}

// Objects labelled stsresize.dev/statefulset=<name> in the StatefulSet's namespace and, when
// `operation_id` is set, stsresize.dev/operation=<id>.
std::vector<const Json*> belonging(std::span<const Json> objects, const std::string& ns,
                                   const std::string& name, const std::string& operation_id) {
  std::vector<const Json*> out;
  for (const Json& object : objects) {
    if (string_at(object, {"metadata", "namespace"}) != ns) continue;
    if (label_or_empty(object, kStatefulSetLabel) != naming::label_value(name)) continue;
    if (!operation_id.empty() &&
        label_or_empty(object, kOperationLabel) != naming::label_value(operation_id)) {
      continue;
    }
    out.push_back(&object);
  }
  std::sort(out.begin(), out.end(), [](const Json* a, const Json* b) {
    return string_at(*a, {"metadata", "name"}) < string_at(*b, {"metadata", "name"});
  });
  return out;
}

std::string plural(std::int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string{n == 1 ? one : many};
}

JobView job_view(const Json& job) {
  JobView view;
  view.name = string_at(job, {"metadata", "name"});
  view.purpose = label_or_empty(job, kPurposeLabel);
  view.created = time_at(job, {"metadata", "creationTimestamp"});
  auto status = k8s::job_status(job);
  if (!status) {
    view.state = "Unknown";
    view.detail = status.error();
    return view;
  }
  std::vector<std::string> details;
  if (status->outcome == k8s::JobOutcome::Failed) {
    view.state = "Failed";
    if (!status->reason.empty()) details.push_back(status->reason);
  } else if (status->outcome == k8s::JobOutcome::Complete) {
    view.state = "Succeeded";
  } else {
    view.state = status->active > 0 ? "Running" : "Pending";
  }
  if (status->failed > 0)
    details.push_back(plural(status->failed, "failed attempt", "failed attempts"));
  for (std::size_t i = 0; i < details.size(); ++i) view.detail += (i ? ", " : "") + details[i];
  return view;
}

int done_in_phase(const Operation& op) {
  auto count = [&op](auto predicate) {
    return static_cast<int>(std::count_if(op.claims.begin(), op.claims.end(), predicate));
  };
  switch (op.phase) {
    case Phase::PreCopying:
      return count([](const ClaimPlan& c) { return c.pre_copied; });
    case Phase::BackingUp:
      return count([](const ClaimPlan& c) { return c.backup_verified.has_value(); });
    case Phase::Recreating:
      return count([](const ClaimPlan& c) { return !c.recreated_uid.empty(); });
    case Phase::Restoring:
    case Phase::ScalingUp:
    case Phase::CleaningUp:
    case Phase::StoppingReplica:  // rolling: the ordinals before are restored
    case Phase::StartingReplica:
      return count([](const ClaimPlan& c) { return c.restore_verified.has_value(); });
    case Phase::Expanding:
      return count([](const ClaimPlan& c) { return c.expanded; });
    case Phase::ScalingBack:
    case Phase::Failed:
      return count([](const ClaimPlan& c) { return c.restore_verified.has_value() || c.expanded; });
    case Phase::Completed:
      return static_cast<int>(op.claims.size());
    case Phase::Pending:
    case Phase::Measuring:
    case Phase::UpdatingTemplate:
    case Phase::Planning:
    case Phase::ScalingDown:
    case Phase::Draining:  // a drain counts its claims itself (fill_from_operation)
    case Phase::DeletingClaims:
    case Phase::StoppingDrain:
    case Phase::AwaitingNode:  // a recovery counts its claims itself (fill_from_operation)
    case Phase::ReplacingVolume:
    case Phase::Reseeding:
    case Phase::MarkingReplica:
      return 0;
  }
  return 0;
}

std::string target_of(const Operation& op) {
  // template -> "2Gi" or "2Gi(fast)", from the plan when there is one, else from the request.
  std::map<std::string, std::string> targets;
  for (const ClaimPlan& claim : op.claims) {
    std::string text = claim.to_size.to_string();
    if (claim.to_class != claim.from_class && !claim.to_class.empty()) {
      text += "(" + claim.to_class + ")";
    }
    targets.emplace(claim.template_name, text);
  }
  if (targets.empty()) {
    for (const TemplateChange& change : op.template_changes) {
      std::string text = change.storage ? change.storage->to_string() : "";
      if (!change.storage_class.empty()) text += "(" + change.storage_class + ")";
      targets.emplace(change.template_name, text);
    }
  }
  std::string out;
  for (const auto& [name, text] : targets) out += (out.empty() ? "" : ",") + name + ":" + text;
  return out;
}

std::string trigger_of(const Operation& op) {
  if (op.kind == OperationKind::Drain) return "scale-down";
  if (op.kind == OperationKind::Recovery) return "lost-volume";
  return op.template_changes.empty() ? "template" : "request";
}

void fill_from_operation(StatusRow& row, const Operation& op) {
  row.operation_id = op.id;
  row.phase = std::string{to_string(op.phase)};
  // A rolling resize says which ordinal its copy phases are at: "BackingUp (ordinal 2)".
  if (auto ordinal = op.rolling_ordinal(); ordinal && !is_terminal(op.phase) &&
                                           op.phase != Phase::Planning &&
                                           op.phase != Phase::PreCopying) {
    row.phase += " (ordinal " + std::to_string(*ordinal) + ")";
  }
  row.path = op.path;
  if (!op.claims.empty()) {
    row.claims_total = static_cast<int>(op.claims.size());
    row.claims_done = done_in_phase(op);
  }
  if (op.kind == OperationKind::Drain) {
    // CLAIMS: the drained claims deleted, of those of every ordinal; TARGET: the ordinals.
    int total = 0;
    int deleted = 0;
    std::string ordinals;
    for (const OrdinalDrain& d : op.drains) {
      total += static_cast<int>(d.claims.size());
      deleted += static_cast<int>(
          std::ranges::count_if(d.claims, [](const OrdinalClaim& c) { return c.deleted; }));
      ordinals += (ordinals.empty() ? "" : ",") + std::to_string(d.ordinal);
    }
    row.claims_total = total;
    row.claims_done = deleted;
    row.since = op.phase_since;
    row.trigger = trigger_of(op);
    row.target = "drain " + ordinals;
    row.original_replicas = op.original_replicas;
    row.operation = op;
    return;
  }
  if (op.kind == OperationKind::Recovery && op.lost) {
    // CLAIMS: the lost claims deleted, of the replica's lost ones; TARGET: the replica.
    row.claims_total = static_cast<int>(op.lost->claims.size());
    row.claims_done = static_cast<int>(
        std::ranges::count_if(op.lost->claims, [](const LostClaim& c) { return c.deleted; }));
    row.since = op.phase_since;
    row.trigger = trigger_of(op);
    row.target = "recover " + std::to_string(op.lost->ordinal) + " (node " + op.lost->node + " " +
                 op.lost->gone + ")";
    row.original_replicas = op.original_replicas;
    row.operation = op;
    return;
  }
  row.since = op.phase_since;
  row.trigger = trigger_of(op);
  row.target = target_of(op);
  row.original_replicas = op.original_replicas;
  row.operation = op;
}

// The last drain's ordinals as its last-operation records them ("drained", "cancelled"): empty
// for a resize, or a last-operation written before they were recorded.
std::string last_drain_result(const Json& summary) {
  DrainResult result;
  for (auto [key, list] :
       {std::pair{"drained", &result.drained}, std::pair{"cancelled", &result.cancelled}}) {
    const Json& ordinals = summary.value(key, Json::array());
    if (!ordinals.is_array()) continue;
    for (const Json& ordinal : ordinals) {
      if (ordinal.is_number_integer()) list->push_back(ordinal.get<int>());
    }
  }
  return to_string(result);
}

}  // namespace

std::string_view to_string(StatusKind kind) {
  switch (kind) {
    case StatusKind::InProgress:
      return "InProgress";
    case StatusKind::Failed:
      return "Failed";
    case StatusKind::Completed:
      return "Completed";
    case StatusKind::Refused:
      return "Refused";
    case StatusKind::Invalid:
      return "Invalid";
  }
  return "Invalid";
}

std::optional<StatusRow> status_row(const Json& statefulset, std::span<const Json> claims,
                                    std::span<const Json> jobs) {
  StatusRow row;
  row.ns = string_at(statefulset, {"metadata", "namespace"});
  row.name = string_at(statefulset, {"metadata", "name"});

  auto operation = read_operation(statefulset);
  const std::string refusal = annotation_or_empty(statefulset, kResizeStatusAnnotation);
  const std::string last = annotation_or_empty(statefulset, kLastOperationAnnotation);
  if (!operation) {
    row.kind = StatusKind::Invalid;
    row.phase = "Invalid";
    row.message = operation.error();
  } else if (*operation) {
    const Operation& op = **operation;
    fill_from_operation(row, op);
    if (op.phase == Phase::Failed) {
      row.kind = StatusKind::Failed;
      row.message = op.failure;
    } else {
      row.kind = StatusKind::InProgress;
      row.message = op.warning;
      if (op.awaiting) {
        row.awaiting_approval = std::string{to_string(op.awaiting->from)} + " -> " +
                                std::string{to_string(op.awaiting->to)};
        const std::string waiting = "awaiting approval of " + row.awaiting_approval + ": run `" +
                                    advance_command_line(Action::Approve, row.ns, row.name) + "`";
        row.message = row.message.empty() ? waiting : waiting + "; " + row.message;
      }
    }
  } else if (!refusal.empty()) {
    row.kind = StatusKind::Refused;
    row.phase = "Refused";
    row.message =
        refusal.starts_with(kRejectedPrefix) ? refusal.substr(kRejectedPrefix.size()) : refusal;
  } else if (!last.empty()) {
    row.kind = StatusKind::Completed;
    const Json summary = Json::parse(last, nullptr, /*allow_exceptions=*/false);
    if (summary.is_object()) {
      row.operation_id = string_at(summary, {"id"});
      row.phase = or_dash(string_at(summary, {"outcome"}));
      row.since = time_at(summary, {"finished"});
      row.message = last_drain_result(summary);
    } else {
      row.phase = "Completed";
      row.message = "annotation " + std::string{kLastOperationAnnotation} + " is not JSON: " + last;
    }
  } else if (is_marked_failed(statefulset)) {
    // The label without a state: someone removed the annotation but not the label.
    row.kind = StatusKind::Failed;
    row.phase = "Failed";
    row.message = "label " + std::string{kFailedLabel} +
                  " is set but no operation is recorded: remove the label to allow resizes";
  } else {
    return std::nullopt;
  }

  if (row.kind == StatusKind::InProgress || row.kind == StatusKind::Failed) {
    for (const Json* job : belonging(jobs, row.ns, row.name, row.operation_id)) {
      row.jobs.push_back(job_view(*job));
    }
    for (const Json* claim : belonging(claims, row.ns, row.name, row.operation_id)) {
      if (label_or_empty(*claim, kPurposeLabel) != kBackupPurpose) continue;
      row.backup_claims.push_back(string_at(*claim, {"metadata", "name"}));
    }
    if (row.message.empty()) {
      for (const JobView& job : row.jobs) {
        if (job.state == "Failed" || !job.detail.empty()) {
          row.message = "Job " + job.name + ": " + job.state +
                        (job.detail.empty() ? "" : " (" + job.detail + ")");
          break;
        }
      }
    }
  }
  return row;
}

std::optional<StatusRow> status_row_from_definition(const Json& config_map,
                                                    std::span<const Json> claims,
                                                    std::span<const Json> jobs) {
  const std::string ns = string_at(config_map, {"metadata", "namespace"});
  const std::string name = annotation_or_empty(config_map, kStatefulSetLabel);
  if (name.empty()) return std::nullopt;
  auto definition = definition_from_config_map(config_map, ns, name);
  if (!definition) return std::nullopt;
  auto row = status_row(*definition, claims, jobs);
  if (!row) return std::nullopt;
  const std::string note = "StatefulSet absent while it is re-created from ConfigMap " +
                           string_at(config_map, {"metadata", "name"});
  row->message = row->message.empty() ? note : note + "; " + row->message;
  return row;
}

std::vector<StatusRow> status_rows(std::span<const Json> statefulsets, std::span<const Json> claims,
                                   std::span<const Json> jobs, std::span<const Json> config_maps) {
  std::vector<StatusRow> rows;
  std::set<std::pair<std::string, std::string>> present;
  for (const Json& statefulset : statefulsets) {
    present.emplace(string_at(statefulset, {"metadata", "namespace"}),
                    string_at(statefulset, {"metadata", "name"}));
    if (auto row = status_row(statefulset, claims, jobs)) rows.push_back(std::move(*row));
  }
  for (const Json& config_map : config_maps) {
    auto row = status_row_from_definition(config_map, claims, jobs);
    if (row && !present.contains({row->ns, row->name})) rows.push_back(std::move(*row));
  }
  std::sort(rows.begin(), rows.end(), [](const StatusRow& a, const StatusRow& b) {
    return std::tie(a.ns, a.name) < std::tie(b.ns, b.name);
  });
  return rows;
}

namespace {

// The running copies of a row as one: its StatefulSet's claims are copied at once.
std::optional<CopyProgress> row_progress(const StatusRow& row) {
  std::vector<CopyProgress> copies;
  for (const JobView& job : row.jobs) {
    if (job.progress) copies.push_back(*job.progress);
  }
  return combine_copy_progress(copies);
}

Json progress_json(const std::optional<CopyProgress>& progress) {
  if (!progress) return Json(nullptr);
  const auto total = progress->bytes_total();
  const auto eta = progress->eta();
  return Json{
      {"stage", progress->stage == CopyProgress::Stage::Verifying ? "Verifying" : "Copying"},
      {"bytesDone", progress->bytes_done},
      {"bytesTotal", total ? Json(*total) : Json(nullptr)},
      {"percent", progress->listing ? Json(nullptr) : Json(progress->percent)},
      {"bytesPerSecond", static_cast<std::int64_t>(progress->bytes_per_second)},
      {"etaSeconds",
       eta ? Json(std::chrono::duration_cast<std::chrono::seconds>(*eta).count()) : Json(nullptr)},
      {"listing", progress->listing},
      {"preCopyPass", progress->pre_copy_pass > 0 ? Json(progress->pre_copy_pass) : Json(nullptr)},
      {"text", format_copy_progress(*progress)},
  };
}

}  // namespace

std::string render_status_table(std::span<const StatusRow> rows, TimePoint now,
                                const StatusRenderOptions& options) {
  std::vector<Cells> table;
  Cells header;
  if (options.all_namespaces) header.push_back("NAMESPACE");
  header.insert(header.end(), {"NAME", "PATH", "PHASE", "CLAIMS", "PROGRESS", "STEP AGE"});
  if (options.wide) header.insert(header.end(), {"OPERATION", "TRIGGER", "TARGET", "REPLICAS"});
  header.push_back("MESSAGE");
  table.push_back(header);
  for (const StatusRow& row : rows) {
    Cells cells;
    if (options.all_namespaces) cells.push_back(row.ns);
    cells.push_back(row.name);
    cells.push_back(or_dash(path_name(row.path)));
    cells.push_back(or_dash(row.phase));
    cells.push_back(row.claims_total ? std::to_string(row.claims_done.value_or(0)) + "/" +
                                           std::to_string(*row.claims_total)
                                     : "-");
    const auto progress = row_progress(row);
    cells.push_back(progress ? format_copy_progress_short(*progress) : "-");
    cells.push_back(row.since ? human_age(std::chrono::duration_cast<Duration>(now - *row.since))
                              : "-");
    if (options.wide) {
      cells.push_back(or_dash(row.operation_id));
      cells.push_back(or_dash(row.trigger));
      cells.push_back(or_dash(row.target));
      cells.push_back(row.original_replicas ? std::to_string(*row.original_replicas) : "-");
    }
    cells.push_back(row.message);
    table.push_back(std::move(cells));
  }
  return columns(table);
}

namespace {

Json optional_json(const std::optional<int>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json measured_json(const StatusRow& row) {
  if (!row.operation || row.operation->measured.empty()) return Json(nullptr);
  Json out = Json::array();
  for (const MeasuredClaim& m : row.operation->measured) {
    out.push_back(Json{{"claim", m.claim},
                       {"files", m.usage.files},
                       {"bytes", m.usage.bytes},
                       {"used", m.usage.used},
                       {"smallestSize", smallest_size(m.usage)}});
  }
  return out;
}

Json status_item(const StatusRow& row, TimePoint now) {
  Json item{
      {"namespace", row.ns},
      {"name", row.name},
      {"status", to_string(row.kind)},
      {"operation", row.operation_id.empty() ? Json(nullptr) : Json(row.operation_id)},
      {"phase", row.phase},
      {"path", row.path == Path::Undecided ? Json(nullptr) : Json(path_name(row.path))},
      // Why a copy path took two copies (no rights on PersistentVolumes, --no-rebind, ...).
      {"rebindUnavailable", row.operation && !row.operation->rebind_unavailable.empty()
                                ? Json(row.operation->rebind_unavailable)
                                : Json(nullptr)},
      // A shrink's figures (Measuring), claim by claim; null when nothing was measured.
      {"measured", measured_json(row)},
      {"claims", row.claims_total
                     ? Json{{"done", optional_json(row.claims_done)}, {"total", *row.claims_total}}
                     : Json(nullptr)},
      {"since", row.since ? Json(format_timestamp(*row.since)) : Json(nullptr)},
      {"stepAgeSeconds",
       row.since ? Json(std::chrono::duration_cast<std::chrono::seconds>(now - *row.since).count())
                 : Json(nullptr)},
      {"message", row.message},
      {"awaitingApproval",
       row.awaiting_approval.empty() ? Json(nullptr) : Json(row.awaiting_approval)},
      {"trigger", row.trigger.empty() ? Json(nullptr) : Json(row.trigger)},
      {"originalReplicas", row.original_replicas ? Json(*row.original_replicas) : Json(nullptr)},
  };
  Json targets = Json::array();
  Json claims = Json::array();
  if (row.operation) {
    const Operation& op = *row.operation;
    item["started"] = format_timestamp(op.started);
    item["failure"] = op.failure;
    item["warning"] = op.warning;
    std::set<std::string> seen;
    for (const ClaimPlan& claim : op.claims) {
      if (seen.insert(claim.template_name).second) {
        targets.push_back(Json{{"template", claim.template_name},
                               {"storage", claim.to_size.to_string()},
                               {"storageClassName", claim.to_class}});
      }
      claims.push_back(Json{
          {"claim", claim.claim},
          {"template", claim.template_name},
          {"ordinal", claim.ordinal},
          {"from",
           {{"storage", claim.from_size.to_string()}, {"storageClassName", claim.from_class}}},
          {"to", {{"storage", claim.to_size.to_string()}, {"storageClassName", claim.to_class}}},
          {"backupVerified", claim.backup_verified.has_value()},
          {"sourceDeleted", claim.source_deleted},
          {"recreated", !claim.recreated_uid.empty()},
          {"restoreVerified", claim.restore_verified.has_value()},
          {"expanded", claim.expanded}});
    }
    if (op.claims.empty()) {
      for (const TemplateChange& change : op.template_changes) {
        targets.push_back(
            Json{{"template", change.template_name},
                 {"storage", change.storage ? Json(change.storage->to_string()) : Json(nullptr)},
                 {"storageClassName", change.storage_class}});
      }
    }
  }
  item["target"] = std::move(targets);
  item["claimProgress"] = std::move(claims);
  Json jobs = Json::array();
  for (const JobView& job : row.jobs) {
    jobs.push_back(Json{{"name", job.name},
                        {"purpose", job.purpose},
                        {"state", job.state},
                        {"detail", job.detail},
                        {"progress", progress_json(job.progress)}});
  }
  item["jobs"] = std::move(jobs);
  item["progress"] = progress_json(row_progress(row));
  item["backupClaims"] = row.backup_claims;
  return item;
}

void emit_yaml(YAML::Emitter& out, const Json& value) {
  // Strings YAML 1.1/1.2 would read as a number, boolean or null are double-quoted.
  static const std::regex kAmbiguous{
      R"(^$|^(true|false|yes|no|on|off|y|n|null|~)$|^[-+.]?[0-9].*$|^[-+]?\.(inf|nan)$)",
      std::regex::icase};
  if ((value.is_object() || value.is_array()) && value.empty()) {
    out << YAML::Flow << (value.is_object() ? YAML::BeginMap : YAML::BeginSeq)
        << (value.is_object() ? YAML::EndMap : YAML::EndSeq);
  } else if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, member] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      emit_yaml(out, member);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const Json& element : value) emit_yaml(out, element);
    out << YAML::EndSeq;
  } else if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (std::regex_match(text, kAmbiguous)) out << YAML::DoubleQuoted;
    out << text;
  } else if (value.is_boolean()) {
    out << value.get<bool>();
  } else if (value.is_number_integer()) {
    out << value.get<std::int64_t>();
  } else if (value.is_number()) {
    out << value.get<double>();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

Json status_document(std::span<const StatusRow> rows, TimePoint now) {
  Json items = Json::array();
  for (const StatusRow& row : rows) items.push_back(status_item(row, now));
  return Json{{"now", format_timestamp(now)}, {"items", std::move(items)}};
}

std::string render_status_json(std::span<const StatusRow> rows, TimePoint now) {
  return status_document(rows, now).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string to_yaml(const Json& document) {
  YAML::Emitter out;
  out.SetBoolFormat(YAML::TrueFalseBool);
  out.SetNullFormat(YAML::LowerNull);
  emit_yaml(out, document);
  return std::string{out.c_str()} + "\n";
}

std::string render_status_yaml(std::span<const StatusRow> rows, TimePoint now) {
  return to_yaml(status_document(rows, now));
}

// ---- describe ------------------------------------------------------------------------------

namespace {

std::string at_and_ago(TimePoint time, TimePoint now) {
  return format_timestamp(time) + " (" +
         human_age(std::chrono::duration_cast<Duration>(now - time)) + " ago)";
}

std::string age_since(const std::optional<TimePoint>& time, TimePoint now) {
  return time ? human_age(std::chrono::duration_cast<Duration>(now - *time)) : "-";
}

std::string summary_text(const std::optional<TreeSummary>& summary) {
  return summary ? "verified" : "-";
}

void field(std::string& out, std::string_view name, const std::string& value) {
  std::string line = std::string{name} + ":";
  line.append(line.size() < 20 ? 20 - line.size() : 1, ' ');
  out += line + value + "\n";
}

std::optional<TimePoint> event_time(const Json& event) {
  for (auto path : {std::initializer_list<std::string_view>{"lastTimestamp"},
                    std::initializer_list<std::string_view>{"eventTime"},
                    std::initializer_list<std::string_view>{"firstTimestamp"},
                    std::initializer_list<std::string_view>{"metadata", "creationTimestamp"}}) {
    if (auto time = time_at(event, path)) return time;
  }
  return std::nullopt;
}

// A source claim not recorded deleted: "kept" only while it is there, the planned object and
// not being deleted (Recreating asks for the delete before it records it).
// Without the live claims (nullopt: not read), "kept" as the state says.
std::string source_text(const ClaimPlan& claim, const std::optional<std::vector<Json>>& sources) {
  if (claim.source_deleted) return "deleted";
  if (!sources) return "kept";
  for (const Json& source : *sources) {
    if (string_at(source, {"metadata", "name"}) != claim.claim) continue;
    if (string_at(source, {"metadata", "uid"}) != claim.source_uid) return "replaced";
    const Json* metadata = source.contains("metadata") ? &source.at("metadata") : nullptr;
    if (metadata != nullptr && metadata->contains("deletionTimestamp") &&
        !metadata->at("deletionTimestamp").is_null()) {
      return "deleting";
    }
    return "kept";
  }
  return "gone";
}

void describe_operation(std::string& out, const StatusRow& row,
                        const std::optional<std::vector<Json>>& sources, TimePoint now) {
  const Operation& op = *row.operation;
  field(out, "Operation", op.id);
  field(out, "Phase",
        row.phase + " (for " + age_since(op.phase_since, now) + ", since " +
            format_timestamp(op.phase_since) + ")");
  field(out, "Path",
        or_dash(path_name(op.path)) +
            (op.rebind_unavailable.empty() ? "" : " (two copies: " + op.rebind_unavailable + ")"));
  field(out, "Trigger", row.trigger + (row.target.empty() ? "" : " (" + row.target + ")"));
  field(out, "Started", at_and_ago(op.started, now));
  field(out, "Original replicas", std::to_string(op.original_replicas));
  if (row.claims_total) {
    const std::string of =
        std::to_string(row.claims_done.value_or(0)) + "/" + std::to_string(*row.claims_total);
    if (op.kind == OperationKind::Drain) {
      field(out, "Claims deleted", of);
    } else {
      field(out, "Claims done", of + " in this phase");
    }
  }
  // A shrink's figures: what each claim held while the application ran.
  for (const MeasuredClaim& m : op.measured) {
    field(out, "Measured " + m.claim,
          human_bytes(data_bytes(m.usage)) + " (" + std::to_string(m.usage.files) + " files, " +
              std::to_string(m.usage.bytes) + " bytes, " + std::to_string(m.usage.used) +
              " bytes on disk); a new size of at least " + human_bytes(smallest_size(m.usage)));
  }
  if (!op.failure.empty()) field(out, "Failure", op.failure);
  if (!op.warning.empty()) field(out, "Warning", op.warning);
  if (!row.awaiting_approval.empty()) {
    field(out, "Awaiting approval",
          row.awaiting_approval + " (run `" +
              advance_command_line(Action::Approve, op.ns, op.statefulset) + "`)");
  }
  if (!row.message.empty() && row.message != op.failure && row.message != op.warning &&
      row.awaiting_approval.empty()) {
    field(out, "Message", row.message);
  }
  if (op.phase == Phase::Failed && op.kind == OperationKind::Drain) {
    out +=
        "\nEvery claim not drained is kept. stsresize will not drain this StatefulSet again "
        "on its\nown (label " +
        std::string{kFailedLabel} +
        "). Once the cause is fixed, drain what is left as a new operation:\n  " +
        advance_command_line(Action::Retry, op.ns, op.statefulset) + "\n";
  } else if (op.phase == Phase::Failed && op.kind == OperationKind::Recovery) {
    out += "\n" + std::string{op.sources_intact() ? "No lost claim was deleted. " : ""} +
           "stsresize will not recover a replica of this StatefulSet again on its own\n(label " +
           std::string{kFailedLabel} + "). Once the cause is fixed:\n  " +
           advance_command_line(Action::Retry, op.ns, op.statefulset) + "\n";
  } else if (op.phase == Phase::Failed) {
    out += "\n";
    if (!op.sources_intact()) {
      out +=
          "Source claims were replaced: the data of every claim not yet restored is in its\n"
          "backup claim:\n  " +
          backups_hint(op) + "\n";
    }
    out += "stsresize will not resize this StatefulSet again on its own (label\n" +
           std::string{kFailedLabel} + ").";
    const std::vector<Phase> resumable_in = resumable_phases(PhaseMachine::rules());
    const bool resumable =
        op.failed_in && std::ranges::find(resumable_in, *op.failed_in) != resumable_in.end();
    if (op.sources_intact()) {
      out += " Once the cause is fixed, start it again as a new operation:\n  " +
             advance_command_line(Action::Retry, op.ns, op.statefulset) + "\n";
    } else if (resumable) {
      out += " Once the cause is fixed, resume it in " + std::string{to_string(*op.failed_in)} +
             ", where it failed\n(backup claims kept "
             "until the data is verified restored):\n  " +
             advance_command_line(Action::Retry, op.ns, op.statefulset) + "\n";
    } else if (op.failed_in) {
      out += " It failed in " + std::string{to_string(*op.failed_in)} +
             ", which is not resumed in place: copy\nthe data back from the backup claims.\n";
    } else {
      out +=
          " The phase it failed in is not recorded (an older\nstsresize wrote this state), so "
          "it is not resumed in place: copy the data back from\nthe backup claims.\n";
    }
  }

  if (!op.claims.empty()) {
    out += "\nClaims:\n";
    std::vector<Cells> table{
        {"CLAIM", "FROM", "TO", "BACKUP", "SOURCE", "RECREATED", "RESTORE", "EXPANDED"}};
    for (const ClaimPlan& claim : op.claims) {
      auto size_class = [](const Quantity& size, const std::string& cls) {
        return size.to_string() + (cls.empty() ? "" : " " + cls);
      };
      table.push_back({claim.claim, size_class(claim.from_size, claim.from_class),
                       size_class(claim.to_size, claim.to_class),
                       summary_text(claim.backup_verified), source_text(claim, sources),
                       claim.recreated_uid.empty() ? "-" : "yes",
                       summary_text(claim.restore_verified), claim.expanded ? "yes" : "-"});
    }
    out += columns(table, "  ");
  }

  if (op.lost) {
    const LostReplica& lost = *op.lost;
    out += "\nLost replica: " + op.statefulset + "-" + std::to_string(lost.ordinal) + ", node " +
           lost.node + " " + lost.gone + " (grace " + format_duration(lost.grace) + ")" +
           (lost.cancelled.empty() ? "" : "; cancelled: " + lost.cancelled) + "\n";
    std::vector<Cells> table{{"CLAIM", "LOST VOLUME", "KEPT", "CLAIM DELETED", "NEW CLAIM"}};
    std::string kept;
    for (const LostClaim& c : lost.claims) {
      table.push_back({c.claim, c.volume, c.policy.empty() ? "-" : "Retain (was " + c.policy + ")",
                       c.deleted ? "yes" : "-", c.new_uid.empty() ? "-" : "uid " + c.new_uid});
      if (!c.policy.empty()) kept += " " + c.volume;
    }
    out += columns(table, "  ");
    if (lost.reseed) {
      const std::string pod = naming::reseed_pod(op.statefulset, lost.ordinal);
      out += "  Re-seed pod " + pod + " (annotation " +
             std::string{kRecoveryPodTemplateAnnotation} + "): " +
             (!lost.reseed_ended ? (lost.reseed_pod_uid.empty() ? "not created yet" : "running")
              : lost.reseed_failure.empty() ? "succeeded"
                                            : "FAILED: " + lost.reseed_failure) +
             "\n";
      if (lost.reseed_ended && !lost.reseed_failure.empty()) {
        out +=
            "  The replica started on its new claims as they are. Its pod is kept for its logs:\n"
            "    kubectl logs -n " +
            op.ns + " " + pod + "\n    kubectl delete pod -n " + op.ns + " " + pod + "\n";
      }
    }
    if (!kept.empty()) {
      out +=
          "  The lost volumes are kept (Retain) in case the node comes back with the data; once\n"
          "  nothing is to be salvaged from them, delete them:\n    kubectl delete pv" +
          kept + "\n";
    }
  }

  if (!op.drains.empty()) {
    out += "\nOrdinals:\n";
    std::vector<Cells> table{{"ORDINAL", "CLAIMS", "CLEANUP POD", "STATE"}};
    for (const OrdinalDrain& d : op.drains) {
      std::string claims;
      bool all_deleted = !d.claims.empty();
      for (const OrdinalClaim& c : d.claims) {
        claims += (claims.empty() ? "" : ",") + c.claim;
        all_deleted = all_deleted && c.deleted;
      }
      const std::string state = !d.cancelled.empty() ? "cancelled: " + d.cancelled
                                : all_deleted        ? "drained, claims deleted"
                                : d.succeeded        ? "cleanup Succeeded"
                                : !d.pod_uid.empty() ? "cleanup running"
                                                     : "waiting";
      table.push_back({std::to_string(d.ordinal), claims,
                       op.statefulset + "-" + std::to_string(d.ordinal), state});
    }
    out += columns(table, "  ");
  }

  out += "\nPhase history (annotation):\n";
  std::vector<Cells> history{{"TIME", "PHASE"}};
  history.push_back({format_timestamp(op.started), "operation started"});
  history.push_back({format_timestamp(op.phase_since), row.phase + " (current)"});
  out += columns(history, "  ");
  out +=
      "  The annotation keeps only the start and the current phase; add --journal FILE (the\n"
      "  file given to `stsresize run --journal`) for every step.\n";
}

void describe_related(std::string& out, const DescribeInput& input, const StatusRow& row,
                      TimePoint now) {
  // A drain has no copy Jobs nor backup claims: its cleanup pods are in its Ordinals.
  if (row.operation && row.operation->kind == OperationKind::Drain) return;
  const std::string ns = row.ns;
  const std::vector<const Json*> jobs = belonging(input.jobs, ns, row.name, "");
  out += "\nCopy Jobs:";
  if (jobs.empty()) {
    out += " <none>\n";
  } else {
    out += "\n";
    // PROGRESS only while a copy runs that said where it is.
    const bool progress_known = !input.progress.empty();
    std::vector<Cells> table{{"NAME", "PURPOSE", "OPERATION", "STATE", "DETAIL", "AGE"}};
    if (progress_known) table.front().push_back("PROGRESS");
    for (const Json* job : jobs) {
      const JobView view = job_view(*job);
      table.push_back({view.name, or_dash(view.purpose),
                       or_dash(label_or_empty(*job, kOperationLabel)), view.state,
                       or_dash(view.detail), age_since(view.created, now)});
      if (progress_known) {
        const auto progress = input.progress.find(view.name);
        table.back().push_back(
            progress == input.progress.end() ? "-" : format_copy_progress(progress->second));
      }
    }
    out += columns(table, "  ");
  }

  std::vector<const Json*> backups;
  for (const Json* claim : belonging(input.claims, ns, row.name, "")) {
    if (label_or_empty(*claim, kPurposeLabel) == kBackupPurpose) backups.push_back(claim);
  }
  out += "\nBackup claims:";
  if (backups.empty()) {
    out += " <none>\n";
  } else {
    out += "\n";
    std::vector<Cells> table{{"NAME", "SOURCE", "OPERATION", "STATUS", "CAPACITY", "AGE"}};
    for (const Json* claim : backups) {
      auto capacity = k8s::capacity(*claim);
      auto phase = k8s::pvc_phase(*claim);
      table.push_back({string_at(*claim, {"metadata", "name"}),
                       or_dash(annotation_or_empty(*claim, kSourceClaimAnnotation)),
                       or_dash(label_or_empty(*claim, kOperationLabel)), phase ? *phase : "-",
                       capacity && *capacity ? (*capacity)->to_string() : "-",
                       age_since(time_at(*claim, {"metadata", "creationTimestamp"}), now)});
    }
    out += columns(table, "  ");
  }
}

// What lost-volume recoveries left: the lost volumes, kept (Retain) for a person to salvage or
// delete; the new claims carry their names.
void describe_recovered(std::string& out, const DescribeInput& input) {
  if (input.recovered.empty()) return;
  out +=
      "\nRecovered replicas (new, empty claims; the data was on volumes lost with their node):\n";
  std::vector<Cells> table{{"CLAIM", "LOST VOLUME"}};
  std::string volumes;
  for (const Json& claim : input.recovered) {
    const std::string volume = annotation_or_empty(claim, kRecoveredFromAnnotation);
    table.push_back({string_at(claim, {"metadata", "name"}), or_dash(volume)});
    if (!volume.empty()) volumes += " " + volume;
  }
  out += columns(table, "  ");
  out +=
      "  The lost volumes were kept (Retain) in case their node came back; once nothing is to be\n"
      "  salvaged from them (if they are still there):\n    kubectl delete pv" +
      volumes + "\n";
}

void describe_journal(std::string& out, const DescribeInput& input, TimePoint now) {
  if (!input.journal) return;
  out += "\nJournal " + *input.journal + ":";
  if (input.journal_records.empty()) {
    out += " no records of this StatefulSet\n";
    return;
  }
  out += "\n";
  const Replay replayed = replay(input.journal_records, PhaseMachine::rules());
  for (const OperationOutcome& op : replayed.operations) {
    out += "  Operation " + op.operation_id + ": " + std::string{to_string(op.final_phase)} +
           (op.path == Path::Undecided ? "" : ", " + path_name(op.path) + " path") + ", " +
           plural(op.events, "event", "events") + ", started " + at_and_ago(op.first_time, now) +
           "\n";
    std::vector<Cells> phases{{"PHASE", "FROM", "DURATION"}};
    const TimelineRow* entered = nullptr;
    auto close = [&](const TimelineRow* row, const std::optional<TimePoint>& until) {
      if (!row) return;
      phases.push_back(
          {std::string{to_string(row->phase_after)}, format_timestamp(row->time),
           until ? human_age(std::chrono::duration_cast<Duration>(*until - row->time)) : "-"});
    };
    for (const TimelineRow& row : replayed.rows) {
      if (row.operation_id != op.operation_id) continue;
      if (row.phase_before && *row.phase_before == row.phase_after) continue;
      if (!row.phase_before && row.phase_after == Phase::Pending) continue;
      close(entered, row.time);
      entered = &row;
    }
    if (entered) {
      close(entered,
            is_terminal(entered->phase_after) ? std::nullopt : std::optional<TimePoint>{now});
      out += columns(phases, "    ");
    }
  }
  out += "\n";
  std::vector<Cells> table{{"TIME", "OPERATION", "SEQ", "PHASE", "EVENT", "DETAILS"}};
  for (const TimelineRow& row : replayed.rows) {
    table.push_back({format_timestamp(row.time), row.operation_id, std::to_string(row.sequence),
                     std::string{to_string(row.phase_after)}, row.event_type, row.details});
  }
  out += columns(table, "  ");
  if (replayed.inconsistency) {
    const Inconsistency& bad = *replayed.inconsistency;
    out += "  INCONSISTENT at operation " + bad.operation_id + ", sequence " +
           std::to_string(bad.sequence) + " (" + bad.record.type + "): " + bad.reason +
           "; the annotation is authoritative (`stsresize replay --journal " + *input.journal +
           "` for the details)\n";
  }
}

void describe_events(std::string& out, const DescribeInput& input, TimePoint now) {
  std::vector<const Json*> events;
  for (const Json& event : input.events) events.push_back(&event);
  std::stable_sort(events.begin(), events.end(), [](const Json* a, const Json* b) {
    return event_time(*a).value_or(TimePoint{}) < event_time(*b).value_or(TimePoint{});
  });
  out += "\nEvents:";
  if (events.empty()) {
    out += " <none>\n";
    return;
  }
  out += "\n";
  if (events.size() > kMaxEvents) {
    out += "  (the last " + std::to_string(kMaxEvents) + " of " + std::to_string(events.size()) +
           "; all: kubectl get events --field-selector involvedObject.name=" +
           string_at(input.statefulset, {"metadata", "name"}) + ")\n";
    events.erase(events.begin(), events.end() - kMaxEvents);
  }
  std::vector<Cells> table{{"TYPE", "REASON", "AGE", "MESSAGE"}};
  for (const Json* event : events) {
    std::string age = age_since(event_time(*event), now);
    const auto count = event->contains("count") && (*event)["count"].is_number_integer()
                           ? (*event)["count"].get<std::int64_t>()
                           : 1;
    if (count > 1) {
      age += " (x" + std::to_string(count) + " over " +
             age_since(time_at(*event, {"firstTimestamp"}), now) + ")";
    }
    table.push_back({string_at(*event, {"type"}), string_at(*event, {"reason"}), age,
                     string_at(*event, {"message"})});
  }
  out += columns(table, "  ");
}

}  // namespace

std::string render_describe(const DescribeInput& input, TimePoint now) {
  std::string out;
  const std::string ns = string_at(input.statefulset, {"metadata", "namespace"});
  const std::string name = string_at(input.statefulset, {"metadata", "name"});
  field(out, "Name", name);
  field(out, "Namespace", ns);
  if (input.definition_config_map) {
    field(out, "StatefulSet",
          "absent: being re-created from its definition in ConfigMap " +
              *input.definition_config_map);
  }
  std::optional<StatusRow> row = status_row(input.statefulset, input.claims, input.jobs);
  if (!row) {
    field(out, "Status", "no resize operation");
    StatusRow empty;
    empty.ns = ns;
    empty.name = name;
    row = empty;
  } else {
    field(out, "Status", std::string{to_string(row->kind)});
  }

  switch (row->kind) {
    case StatusKind::InProgress:
    case StatusKind::Failed:
      if (row->operation) {
        describe_operation(out, *row, input.sources, now);
      } else {
        field(out, "Message", row->message);
      }
      break;
    case StatusKind::Completed:
      field(out, "Last operation", or_dash(row->operation_id));
      field(out, "Outcome", row->phase);
      if (row->since) field(out, "Finished", at_and_ago(*row->since, now));
      if (!row->message.empty()) field(out, "Message", row->message);
      if (!input.journal) {
        field(out, "History",
              "in the journal only: add --journal FILE (given to `stsresize run --journal`)");
      }
      if (!row->operation_id.empty()) {
        // A cleanup skipped (`stsresize advance --skip-step`) keeps them, labelled.
        const auto claims = belonging(input.claims, ns, name, row->operation_id);
        const auto jobs = belonging(input.jobs, ns, name, row->operation_id);
        if (!claims.empty() || !jobs.empty()) {
          const std::string label =
              std::string{kOperationLabel} + "=" + naming::label_value(row->operation_id);
          out += "\nKept by operation " + row->operation_id + " (its cleanup was skipped): " +
                 plural(static_cast<std::int64_t>(claims.size()), "claim", "claims") + " and " +
                 plural(static_cast<std::int64_t>(jobs.size()), "Job", "Jobs") +
                 ", listed below.\nThey are extra copies of data already restored: delete them "
                 "once no longer needed, and\nbefore the next resize (its backups take the same "
                 "names):\n  kubectl -n " +
                 ns + " delete pvc,job -l " + label + "\n";
        }
      }
      break;
    case StatusKind::Refused:
      field(out, "Request", annotation_or_empty(input.statefulset, kResizeRequestAnnotation));
      field(out, "Refused", row->message);
      out += "\nNothing was changed. Correct the request (kubectl -n " + ns +
             " annotate statefulset " + name + " --overwrite '" +
             std::string{kResizeRequestAnnotation} +
             "={\"<template>\":{\"storage\":\"<size>\"}}'),\nor remove it (kubectl -n " + ns +
             " annotate statefulset " + name + " " + std::string{kResizeRequestAnnotation} +
             "-).\n";
      break;
    case StatusKind::Invalid:
      field(out, "Problem", row->message);
      out += "\nThe controller leaves this StatefulSet alone until the annotation " +
             std::string{kStateAnnotation} +
             " is readable again;\nthe journal (`stsresize replay --journal FILE --namespace " +
             ns + " --statefulset " + name + "`) has the operation's history.\n";
      break;
  }
  describe_related(out, input, *row, now);
  describe_recovered(out, input);
  describe_journal(out, input, now);
  describe_events(out, input, now);
  return out;
}

}  // namespace stsresize::cli
