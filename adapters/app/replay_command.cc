#include "adapters/app/replay_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "adapters/app/durations.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/namespaces.h"
#include "adapters/app/text_table.h"
#include "adapters/journal/journal_export.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/json.h"
#include "engine/operation_codec.h"
#include "engine/timestamp.h"
#include "states/machine.h"

namespace stsresize::cli {

namespace {

// The one line `stsresize --help` lists; CLI11 shows it atop `stsresize replay --help` too.
constexpr std::string_view kSummary =
    "Check a journal against the state machine and print its timeline";

constexpr std::string_view kFooter =
    "Replay reads the events of the selected operations (read-only), checks every one against\n"
    "the resize state machine, and prints the timeline with one summary line per operation.\n"
    "Use it to see what the controller did and in which order, and to check that a journal is\n"
    "consistent: sequences without gaps, every phase change one the machine allows, progress\n"
    "events in their phase, no claim deleted before its backup was verified, and (in a journal,\n"
    "not an export) each operation's records up to the last one the journal counted.\n"
    "\n"
    "Filters select operations (--operation, --namespace, --statefulset) and the records shown\n"
    "(--since inclusive, --until exclusive). An operation with a record in the window is checked\n"
    "from its first record to its last, whatever the window.\n"
    "\n"
    "--step prints every shown record on its own: the event and its data, the operation's state\n"
    "before and after it (phase, path, each claim's stage: planned, backed up, source deleted,\n"
    "recreated, restored, or expanded) and the fields it changed (\"phase: BackingUp ->\n"
    "Recreating\", \"claims[data-web-0].stage: backed up -> source deleted\"). With -o json it\n"
    "prints an array of {operation, sequence, time, event, data, before, after, changes}, before\n"
    "and after in the annotation's JSON form; a refused record comes last, with after null and\n"
    "\"refused\" saying why.\n"
    "\n"
    "--file replays an export written by `stsresize journal export` instead of a journal file,\n"
    "without importing it. Its checksum is verified first: a mismatch (the file was edited or\n"
    "truncated after the export) stops with exit code 1 unless --ignore-checksum is given, which\n"
    "replays the records as they are and names the first inconsistent one.\n"
    "\n"
    "Examples:\n"
    "  stsresize replay --journal /var/lib/stsresize/journal.db\n"
    "  stsresize replay --journal journal.db --namespace shop --statefulset web\n"
    "  stsresize replay --journal journal.db --operation web-5f0c2a91d3 -o json\n"
    "  stsresize replay --journal journal.db --since 2027-01-15T08:00:00Z "
    "--until 2027-01-15T09:00:00Z\n"
    "  stsresize replay --journal journal.db --operation web-5f0c2a91d3 --step\n"
    "  stsresize replay --file web-5f0c2a91d3.json --step -o json\n"
    "\n"
    "Exit codes:\n"
    "  0  the journal is consistent (also when no record matched the filters)\n"
    "  1  the journal is inconsistent: the message names the operation, the sequence, the event\n"
    "     and the reason; the timeline stops before that record. Also: an export whose checksum\n"
    "     does not match (without --ignore-checksum)\n"
    "  2  usage error (also an --operation the journal has never seen), or the journal or export\n"
    "     cannot be read (missing file, not a journal, written by a newer stsresize)";

// `shown`: the operation's rows in the timeline, fewer than its events under a time window.
std::string summary_line(const OperationOutcome& op, std::int64_t shown,
                         const std::optional<Inconsistency>& bad) {
  std::string line = "operation " + op.operation_id + " (" + op.ns + "/" + op.statefulset + "): ";
  if (!op.consistent && bad && bad->operation_id == op.operation_id) {
    line += "INCONSISTENT at sequence " + std::to_string(bad->sequence) + " (" + bad->record.type +
            "), last consistent phase " + std::string{to_string(op.final_phase)};
  } else {
    line += std::string{to_string(op.final_phase)};
  }
  line += ", " + std::to_string(op.events) + (op.events == 1 ? " event" : " events");
  if (shown < op.events && !(bad && bad->operation_id == op.operation_id)) {
    line += " (" + std::to_string(shown) + " shown)";
  }
  line += " in " + format_duration(op.duration());
  if (op.path != Path::Undecided) line += ", " + std::string{to_string(op.path)} + " path";
  if (!op.failure.empty()) line += "; failure: " + op.failure;
  return line;
}

std::string inconsistency_message(const Inconsistency& bad) {
  if (bad.record.type == kMissingRecordType) {
    return "inconsistent journal: operation " + bad.operation_id + ", sequence " +
           std::to_string(bad.sequence) + " is missing: " + bad.reason;
  }
  return "inconsistent journal: operation " + bad.operation_id + ", sequence " +
         std::to_string(bad.sequence) + ", event " + bad.record.type + " " +
         bad.record.data.dump(-1, ' ', false, Json::error_handler_t::replace) + ": " + bad.reason;
}

Json to_json(const Inconsistency& bad) {
  return Json{{"operation", bad.operation_id},
              {"sequence", bad.sequence},
              {"time", format_timestamp(bad.record.time)},
              {"event", bad.record.type},
              {"data", bad.record.data},
              {"reason", bad.reason},
              {"message", inconsistency_message(bad)}};
}

std::expected<std::optional<TimePoint>, std::string> parse_bound(const std::string& flag,
                                                                 const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto time = parse_timestamp(text);
  if (!time) return std::unexpected(flag + ": " + time.error());
  return *time;
}

int usage_error(std::ostream& err, const std::string& message) {
  err << "stsresize replay: " << message << "\n";
  return kExitUsage;
}

std::optional<std::string> given(const std::string& value) {
  if (value.empty()) return std::nullopt;
  return value;
}

// The records of every operation that has a record matching `filter`, each operation whole
// (its state can only be rebuilt from its first record), in the journal's order.
std::expected<std::vector<JournalRecord>, std::string> read_selected_streams(
    Journal& journal, const ReplayFilter& filter) {
  auto matching = journal.query(filter);
  if (!matching) return std::unexpected(matching.error().message);
  // Without a time window the matching records already are the whole streams.
  if (!filter.since && !filter.until) return std::move(*matching);
  std::vector<JournalRecord> records;
  std::set<std::string> read_already;
  for (const JournalRecord& record : *matching) {
    if (!read_already.insert(record.operation_id).second) continue;
    auto stream = journal.read(record.operation_id);
    if (!stream) return std::unexpected(stream.error().message);
    records.insert(records.end(), std::make_move_iterator(stream->begin()),
                   std::make_move_iterator(stream->end()));
  }
  return records;
}

}  // namespace

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options) {
  CLI::App* replay = app.add_subcommand("replay", std::string{kSummary});
  replay->footer(std::string{kFooter});
  CLI::Option* journal =
      replay->add_option("--journal", options.journal, "Journal file (SQLite), opened read-only")
          ->type_name("FILE");
  CLI::Option* file =
      replay
          ->add_option("--file", options.file,
                       "An export of `stsresize journal export`, instead of --journal")
          ->type_name("EXPORT");
  journal->excludes(file);
  file->excludes(journal);
  replay->add_option("--operation", options.operation, "Only this operation")->type_name("ID");
  replay->add_option("--namespace", options.ns, "Only operations in this namespace")
      ->type_name("NS");
  replay->add_option("--statefulset", options.statefulset, "Only operations on this StatefulSet")
      ->type_name("NAME");
  replay
      ->add_option("--since", options.since,
                   "Show records at or after this time (RFC 3339, UTC: 2027-01-15T08:00:00Z)")
      ->type_name("TIME");
  replay->add_option("--until", options.until, "Show records before this time (RFC 3339, UTC)")
      ->type_name("TIME");
  replay->add_flag("--step", options.step,
                   "Each record with the operation's state before and after it");
  replay->add_flag("--ignore-checksum", options.ignore_checksum,
                   "--file: replay an export whose checksum does not match");
  replay->add_option("-o,--output", options.output, "Output format: text (a table) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  return replay;
}

namespace {

std::expected<ReplayFilter, std::string> filter_of(const ReplayOptions& options) {
  if (options.output != "text" && options.output != "json") {
    return std::unexpected("--output must be text or json, not \"" + options.output + "\"");
  }
  if (!options.ns.empty()) {
    if (auto valid = check_namespace(options.ns); !valid) {
      return std::unexpected("--namespace: " + valid.error());
    }
  }
  auto since = parse_bound("--since", options.since);
  if (!since) return std::unexpected(since.error());
  auto until = parse_bound("--until", options.until);
  if (!until) return std::unexpected(until.error());
  return ReplayFilter{.operation_id = given(options.operation),
                      .ns = given(options.ns),
                      .statefulset = given(options.statefulset),
                      .since = *since,
                      .until = *until};
}

// Replays `records` (whole streams) and prints the report the options ask for.
// `heads`: where the journal says each stream ends (none for an export).
int report(std::span<const JournalRecord> records, const ReplayFilter& filter,
           const ReplayOptions& options, std::ostream& out, std::ostream& err,
           std::span<const OperationSummary> heads = {}) {
  const Replay result = replay(records, PhaseMachine::rules(), filter,
                               options.step ? ReplayStates::Kept : ReplayStates::Omitted, heads);
  const bool json = options.output == "json";
  if (options.step) {
    out << (json ? render_replay_steps_json(result) : render_replay_steps_text(result));
  } else {
    out << (json ? render_replay_json(result) : render_replay_text(result));
  }
  if (result.inconsistency) {
    err << "stsresize replay: " << inconsistency_message(*result.inconsistency) << "\n";
    return kExitInconsistent;
  }
  return kExitOk;
}

int replay_export(const ReplayOptions& options, const ReplayFilter& filter, std::ostream& out,
                  std::ostream& err) {
  std::ifstream file{options.file, std::ios::binary};
  if (!file) return usage_error(err, "cannot read export " + options.file + ": cannot open it");
  std::stringstream text;
  text << file.rdbuf();
  Json document;
  try {
    document = Json::parse(text.str());
  } catch (const Json::exception& error) {
    return usage_error(err, "cannot read export " + options.file + ": not JSON: " + error.what());
  }
  auto parsed = parse_journal_export(document);
  if (!parsed)
    return usage_error(err, "cannot read export " + options.file + ": " + parsed.error());
  if (!parsed->checksum_matches()) {
    const std::string mismatch =
        "export " + options.file + ": checksum mismatch: the file says sha256 " +
        parsed->stored_checksum + ", its content hashes to " + parsed->actual_checksum +
        "; it was changed after `stsresize journal export` wrote it";
    if (!options.ignore_checksum) {
      err << "stsresize replay: " << mismatch
          << " (--ignore-checksum replays it anyway and names the first inconsistent record)\n";
      return kExitInconsistent;
    }
    err << "stsresize replay: warning: " << mismatch << "; replaying it as it is\n";
  }
  if (filter.operation_id && *filter.operation_id != parsed->operation_id) {
    return usage_error(err, "no operation " + *filter.operation_id + " in " + options.file +
                                " (it holds " + parsed->operation_id + ")");
  }
  return report(parsed->records, filter, options, out, err);
}

}  // namespace

int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.journal.empty() && !options.file.empty()) {
    return usage_error(err, "give either --journal or --file, not both");
  }
  if (!options.file.empty()) {
    auto filter = filter_of(options);
    if (!filter) return usage_error(err, filter.error());
    return replay_export(options, *filter, out, err);
  }
  if (options.journal.empty()) {
    return usage_error(err, "--journal FILE (a journal) or --file EXPORT (an export) is required");
  }
  if (options.ignore_checksum) {
    return usage_error(err, "--ignore-checksum applies to --file only (a journal has no checksum)");
  }
  auto journal = SqliteJournal::open_read_only(options.journal);
  if (!journal) {
    return usage_error(err,
                       "cannot read journal " + options.journal + ": " + journal.error().message);
  }
  return run_replay(**journal, options, out, err);
}

int run_replay(Journal& journal, const ReplayOptions& options, std::ostream& out,
               std::ostream& err) {
  auto checked = filter_of(options);
  if (!checked) return usage_error(err, checked.error());
  const ReplayFilter& filter = *checked;
  const std::string journal_name = options.journal.empty() ? "journal" : options.journal;

  // A named operation that the journal has never seen is most likely a typo: say so, rather
  // than "nothing matches" as for the other filters.
  if (filter.operation_id) {
    auto last = journal.last_sequence(*filter.operation_id);
    if (!last) {
      return usage_error(err, "cannot read journal " + journal_name + ": " + last.error().message);
    }
    if (*last == 0) {
      return usage_error(err, "no operation " + *filter.operation_id + " in " + journal_name);
    }
  }

  auto records = read_selected_streams(journal, filter);
  if (!records) {
    return usage_error(err, "cannot read journal " + journal_name + ": " + records.error());
  }
  auto heads = journal.operations();
  if (!heads) {
    return usage_error(err, "cannot read journal " + journal_name + ": " + heads.error().message);
  }
  return report(*records, filter, options, out, err, *heads);
}

std::string render_replay_text(const Replay& replay) {
  if (replay.operations.empty()) return "No journal records match.\n";

  std::vector<Cells> table{{"TIME", "OPERATION", "SEQ", "PHASE", "EVENT", "DETAILS"}};
  for (const TimelineRow& row : replay.rows) {
    table.push_back({format_timestamp(row.time), row.operation_id, std::to_string(row.sequence),
                     std::string{to_string(row.phase_after)}, row.event_type, row.details});
  }
  constexpr std::size_t kSequenceColumn = 2;
  std::string out = text_table(table, TableStyle{.gap = 2, .right_aligned = {kSequenceColumn}});
  out += "\n";
  for (const OperationOutcome& op : replay.operations) {
    const auto shown = std::count_if(replay.rows.begin(), replay.rows.end(), [&](const auto& row) {
      return row.operation_id == op.operation_id;
    });
    out += summary_line(op, shown, replay.inconsistency) + "\n";
  }
  return out;
}

std::string render_replay_json(const Replay& replay) {
  Json rows = Json::array();
  for (const TimelineRow& row : replay.rows) {
    rows.push_back(
        Json{{"time", format_timestamp(row.time)},
             {"operation", row.operation_id},
             {"sequence", row.sequence},
             {"phaseBefore",
              row.phase_before ? Json(std::string{to_string(*row.phase_before)}) : Json(nullptr)},
             {"phaseAfter", to_string(row.phase_after)},
             {"event", row.event_type},
             {"details", row.details}});
  }
  Json operations = Json::array();
  for (const OperationOutcome& op : replay.operations) {
    operations.push_back(Json{{"operation", op.operation_id},
                              {"namespace", op.ns},
                              {"statefulset", op.statefulset},
                              {"finalPhase", to_string(op.final_phase)},
                              {"path", to_string(op.path)},
                              {"events", op.events},
                              {"firstTime", format_timestamp(op.first_time)},
                              {"lastTime", format_timestamp(op.last_time)},
                              {"durationMs", op.duration().count()},
                              {"failure", op.failure},
                              {"consistent", op.consistent}});
  }
  const Json document{
      {"consistent", replay.consistent()},
      {"rows", std::move(rows)},
      {"operations", std::move(operations)},
      {"inconsistency", replay.inconsistency ? to_json(*replay.inconsistency) : Json(nullptr)}};
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

constexpr std::size_t kClaimsListed = 4;

// "BackingUp, Copy path; data-web-0 backed up, data-web-1 planned".
std::string state_line(const std::optional<Operation>& state) {
  if (!state) return "(no state yet)";
  std::string line =
      std::string{to_string(state->phase)} + ", " + std::string{to_string(state->path)} + " path; ";
  if (state->claims.empty()) {
    line += "no claims";
  } else if (state->claims.size() <= kClaimsListed) {
    for (std::size_t i = 0; i < state->claims.size(); ++i) {
      line += (i == 0 ? "" : ", ") + state->claims[i].claim + " " + claim_stage(state->claims[i]);
    }
  } else {
    // Many claims: how many are at each stage, in the order of the stages.
    std::vector<std::pair<std::string, int>> counts;
    for (const ClaimPlan& claim : state->claims) {
      const std::string stage = claim_stage(claim);
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& count) { return count.first == stage; });
      if (it == counts.end()) {
        counts.emplace_back(stage, 1);
      } else {
        ++it->second;
      }
    }
    line += std::to_string(state->claims.size()) + " claims: ";
    for (std::size_t i = 0; i < counts.size(); ++i) {
      line += (i == 0 ? "" : ", ") + std::to_string(counts[i].second) + " " + counts[i].first;
    }
  }
  if (!state->failure.empty()) line += "; failure: " + state->failure;
  if (!state->warning.empty()) line += "; warning: " + state->warning;
  return line;
}

std::string compact(const Json& data) {
  return data.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::map<std::string, std::int64_t> events_per_operation(const Replay& replay) {
  std::map<std::string, std::int64_t> events;
  for (const OperationOutcome& op : replay.operations) events[op.operation_id] = op.events;
  return events;
}

std::string step_heading(const std::string& operation, std::int64_t sequence, std::int64_t events,
                         TimePoint time, const std::string& type, const std::string& what) {
  return operation + " #" + std::to_string(sequence) + "/" + std::to_string(events) + "  " +
         format_timestamp(time) + "  " + type + "  " + what + "\n";
}

Json changes_json(const std::vector<FieldChange>& changes) {
  Json out = Json::array();
  for (const FieldChange& change : changes) {
    out.push_back(
        Json{{"field", change.field}, {"before", change.before}, {"after", change.after}});
  }
  return out;
}

Json state_json(const std::optional<Operation>& state) {
  return state ? encode_operation(*state) : Json(nullptr);
}

}  // namespace

std::string render_replay_steps_text(const Replay& replay) {
  if (replay.operations.empty()) return "No journal records match.\n";
  const auto events = events_per_operation(replay);
  std::string out;
  for (const TimelineRow& row : replay.rows) {
    // Rows of one operation share its record list; the data shown is the record's own.
    out += step_heading(row.operation_id, row.sequence, events.at(row.operation_id), row.time,
                        row.event_type, row.details);
    if (row.state_after) {
      out += "  data:    " + compact(row.data) + "\n";
      out += "  before:  " + state_line(row.state_before) + "\n";
      out += "  after:   " + state_line(row.state_after) + "\n";
      const auto changes = operation_changes(row.state_before, *row.state_after);
      if (changes.empty()) {
        out += "  changed: nothing\n";
      } else {
        out += "  changed:\n";
        for (const FieldChange& change : changes) {
          out += "    " + change.field + ": " + change.before + " -> " + change.after + "\n";
        }
      }
    }
    out += "\n";
  }
  if (const auto& bad = replay.inconsistency) {
    out += step_heading(bad->operation_id, bad->sequence, events.at(bad->operation_id),
                        bad->record.time, bad->record.type, "REFUSED");
    out += "  data:    " + compact(bad->record.data) + "\n";
    out += "  before:  " + state_line(bad->state_before) + "\n";
    out += "  refused: " + bad->reason + "\n\n";
  }
  for (const OperationOutcome& op : replay.operations) {
    const auto shown = std::count_if(replay.rows.begin(), replay.rows.end(), [&](const auto& row) {
      return row.operation_id == op.operation_id;
    });
    out += summary_line(op, shown, replay.inconsistency) + "\n";
  }
  return out;
}

std::string render_replay_steps_json(const Replay& replay) {
  Json steps = Json::array();
  for (const TimelineRow& row : replay.rows) {
    steps.push_back(Json{{"operation", row.operation_id},
                         {"sequence", row.sequence},
                         {"time", format_timestamp(row.time)},
                         {"event", row.event_type},
                         {"details", row.details},
                         {"data", row.data},
                         {"before", state_json(row.state_before)},
                         {"after", state_json(row.state_after)},
                         {"changes", row.state_after ? changes_json(operation_changes(
                                                           row.state_before, *row.state_after))
                                                     : Json::array()}});
  }
  if (const auto& bad = replay.inconsistency) {
    steps.push_back(Json{{"operation", bad->operation_id},
                         {"sequence", bad->sequence},
                         {"time", format_timestamp(bad->record.time)},
                         {"event", bad->record.type},
                         {"data", bad->record.data},
                         {"before", state_json(bad->state_before)},
                         {"after", nullptr},
                         {"changes", Json::array()},
                         {"refused", bad->reason}});
  }
  return steps.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace stsresize::cli
