#include "adapters/app/replay_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "adapters/app/exit_codes.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/json.h"
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
    "events in their phase, no claim deleted before its backup was verified.\n"
    "\n"
    "Filters select operations (--operation, --namespace, --statefulset) and the records shown\n"
    "(--since inclusive, --until exclusive). An operation with a record in the window is checked\n"
    "from its first record to its last, whatever the window.\n"
    "\n"
    "Examples:\n"
    "  stsresize replay --journal /var/lib/stsresize/journal.db\n"
    "  stsresize replay --journal journal.db --namespace shop --statefulset web\n"
    "  stsresize replay --journal journal.db --operation web-5f0c2a91d3 -o json\n"
    "  stsresize replay --journal journal.db --since 2027-01-15T08:00:00Z "
    "--until 2027-01-15T09:00:00Z\n"
    "\n"
    "Exit codes:\n"
    "  0  the journal is consistent (also when no record matched the filters)\n"
    "  1  the journal is inconsistent: the message names the operation, the sequence, the event\n"
    "     and the reason; the timeline stops before that record\n"
    "  2  usage error (also an --operation the journal has never seen), or the journal cannot\n"
    "     be read (missing file, not a journal, written by a newer stsresize)";

// Columns are padded by what a terminal shows: UTF-8 continuation bytes take no column.
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string pad_right(std::string text, std::size_t width) {
  const std::size_t shown = display_width(text);
  if (shown < width) text.append(width - shown, ' ');
  return text;
}

std::string pad_left(const std::string& text, std::size_t width) {
  const std::size_t shown = display_width(text);
  return shown < width ? std::string(width - shown, ' ') + text : text;
}

// Go's style: "450ms", "15s", "2m13.5s", "1h2m0s".
std::string format_duration(Duration duration) {
  std::int64_t ms = duration.count();
  if (ms < 0) ms = 0;
  if (ms < 1000) return std::to_string(ms) + "ms";
  const std::int64_t hours = ms / 3'600'000;
  const std::int64_t minutes = ms / 60'000 % 60;
  const std::int64_t seconds = ms / 1000 % 60;
  const std::int64_t millis = ms % 1000;
  std::string out;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  out += std::to_string(seconds);
  if (millis > 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(millis));
    std::string text = fraction;
    while (text.back() == '0') text.pop_back();
    out += text;
  }
  return out + "s";
}

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
  replay->add_option("--journal", options.journal, "Journal file (SQLite), opened read-only")
      ->required()
      ->type_name("FILE");
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
  replay->add_option("-o,--output", options.output, "Output format: text (a table) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  return replay;
}

int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  if (options.journal.empty()) return usage_error(err, "--journal is required");
  auto journal = SqliteJournal::open_read_only(options.journal);
  if (!journal) {
    return usage_error(err,
                       "cannot read journal " + options.journal + ": " + journal.error().message);
  }
  return run_replay(**journal, options, out, err);
}

int run_replay(Journal& journal, const ReplayOptions& options, std::ostream& out,
               std::ostream& err) {
  if (options.output != "text" && options.output != "json") {
    return usage_error(err, "--output must be text or json, not \"" + options.output + "\"");
  }
  auto since = parse_bound("--since", options.since);
  if (!since) return usage_error(err, since.error());
  auto until = parse_bound("--until", options.until);
  if (!until) return usage_error(err, until.error());

  const ReplayFilter filter{.operation_id = given(options.operation),
                            .ns = given(options.ns),
                            .statefulset = given(options.statefulset),
                            .since = *since,
                            .until = *until};
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

  const Replay result = replay(*records, PhaseMachine::rules(), filter);
  out << (options.output == "json" ? render_replay_json(result) : render_replay_text(result));
  if (result.inconsistency) {
    err << "stsresize replay: " << inconsistency_message(*result.inconsistency) << "\n";
    return kExitInconsistent;
  }
  return kExitOk;
}

std::string render_replay_text(const Replay& replay) {
  if (replay.operations.empty()) return "No journal records match.\n";

  using Cells = std::vector<std::string>;
  std::vector<Cells> table{{"TIME", "OPERATION", "SEQ", "PHASE", "EVENT", "DETAILS"}};
  for (const TimelineRow& row : replay.rows) {
    table.push_back({format_timestamp(row.time), row.operation_id, std::to_string(row.sequence),
                     std::string{to_string(row.phase_after)}, row.event_type, row.details});
  }
  std::vector<std::size_t> widths(table.front().size(), 0);
  for (const Cells& cells : table) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(cells[i]));
    }
  }
  constexpr std::size_t kSequenceColumn = 2;
  std::string out;
  for (const Cells& cells : table) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const bool last = i + 1 == cells.size();
      if (last) {
        line += cells[i];
      } else if (i == kSequenceColumn) {
        line += pad_left(cells[i], widths[i]) + "  ";
      } else {
        line += pad_right(cells[i], widths[i]) + "  ";
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
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

}  // namespace stsresize::cli
