#include "adapters/app/journal_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "adapters/app/exit_codes.h"
#include "adapters/app/text_table.h"
#include "adapters/app/version_command.h"
#include "adapters/journal/journal_export.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/replay.h"
#include "engine/timestamp.h"
#include "states/machine.h"

namespace stsresize::cli {

namespace {

constexpr std::string_view kSummary =
    "Export one operation's journal to a file, import it elsewhere, list operations";

constexpr std::string_view kFooter =
    "An export is one JSON document that holds everything needed to replay an operation on\n"
    "another machine: the format version, the stsresize version that wrote it, a summary of the\n"
    "operation (namespace, StatefulSet, final phase, path, times) and every journal record as\n"
    "stored (sequence, time, type, data). Attach it to a bug report; `stsresize replay --file`\n"
    "replays it without importing, `stsresize journal import` adds it to a journal file.\n"
    "\n"
    "The checksum (SHA-256 of the document without its checksum) proves that nothing in the file\n"
    "changed since the export: an edit, a truncation, a lost record are all found. It does NOT\n"
    "prove who wrote the file (it is not a signature: whoever edits the file can recompute it),\n"
    "nor that the journal was consistent when exported (replay checks that).\n"
    "\n"
    "Examples:\n"
    "  stsresize journal list --journal /var/lib/stsresize/journal.db\n"
    "  stsresize journal export --journal journal.db --operation web-5f0c2a91d3 -o web.json\n"
    "  stsresize replay --file web.json --step\n"
    "  stsresize journal import --journal copy.db web.json\n"
    "\n"
    "Exit codes:\n"
    "  0  done (an import of an operation already there with identical records does nothing)\n"
    "  2  usage error; a journal or export that cannot be read; an import refused (the message\n"
    "     says why and what to do instead)";

constexpr std::string_view kExportFooter =
    "Writes one operation's whole stream as a self-contained JSON document (see `stsresize\n"
    "journal --help` for what the checksum proves). An inconsistent stream is exported as it is\n"
    "(with a warning), so that the report shows what the journal held.\n"
    "\n"
    "Example:\n"
    "  stsresize journal export --journal journal.db --operation web-5f0c2a91d3 -o web.json";

constexpr std::string_view kImportFooter =
    "Validates the export (format, version, fields, checksum, sequences 1, 2, 3... in order) and\n"
    "appends its records through the journal's own rules. The journal file is created if it does\n"
    "not exist. An operation the journal already holds is refused unless its records are\n"
    "identical (then nothing is written). An inconsistent stream (one replay refuses) is\n"
    "imported as it is, with a warning, so that replay gives the same verdict on both sides.\n"
    "\n"
    "Example:\n"
    "  stsresize journal import --journal copy.db web.json && stsresize replay --journal copy.db";

constexpr std::string_view kListFooter =
    "One line per operation, oldest first: namespace, StatefulSet, the phase its records lead to\n"
    "(checked through the state machine), record count, first and last record time.\n"
    "\n"
    "Example:\n"
    "  stsresize journal list --journal journal.db -o json";

int usage_error(std::ostream& err, std::string_view command, const std::string& message) {
  err << "stsresize journal " << command << ": " << message << "\n";
  return kExitUsage;
}

std::string name_of(const JournalOptions& options) {
  return options.journal.empty() ? std::string{"journal"} : options.journal;
}

// Summary of one operation's stream, for the export and for list.
struct StreamCheck {
  Replay replay;
  const OperationOutcome& outcome() const { return replay.operations.front(); }
};

// `heads`: the journal's own count of the stream's records (none for an export), so that
// records deleted from the end are found too.
StreamCheck check(std::span<const JournalRecord> records,
                  std::span<const OperationSummary> heads = {}) {
  return StreamCheck{replay(records, PhaseMachine::rules(), {}, ReplayStates::Omitted, heads)};
}

Json summary_json(const StreamCheck& checked) {
  const OperationOutcome& op = checked.outcome();
  Json summary{{"records", op.events},
               {"firstTime", format_timestamp(op.first_time)},
               {"lastTime", format_timestamp(op.last_time)},
               {"finalPhase", to_string(op.final_phase)},
               {"path", to_string(op.path)},
               {"failure", op.failure},
               {"consistent", op.consistent}};
  if (checked.replay.inconsistency) {
    summary["inconsistentAt"] = checked.replay.inconsistency->sequence;
  }
  return summary;
}

std::string inconsistency_text(const Inconsistency& bad) {
  return "sequence " + std::to_string(bad.sequence) + " (" + bad.record.type + "): " + bad.reason;
}

// The first record where two streams differ, or nullopt when they are equal.
std::optional<std::int64_t> first_difference(const std::vector<JournalRecord>& a,
                                             const std::vector<JournalRecord>& b) {
  const std::size_t common = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (!(a[i] == b[i])) return a[i].sequence;
  }
  if (a.size() == b.size()) return std::nullopt;
  return static_cast<std::int64_t>(common) + 1;
}

}  // namespace

CLI::App* add_journal_command(CLI::App& app, JournalOptions& options) {
  CLI::App* journal = app.add_subcommand("journal", std::string{kSummary});
  journal->footer(std::string{kFooter});
  journal->require_subcommand(1);

  CLI::App* exporter =
      journal->add_subcommand("export", "Write one operation's records to a JSON file");
  exporter->footer(std::string{kExportFooter});
  exporter->add_option("--journal", options.journal, "Journal file (SQLite), opened read-only")
      ->required()
      ->type_name("DB");
  exporter->add_option("--operation", options.operation, "The operation to export")
      ->required()
      ->type_name("ID");
  exporter->add_option("-o,--output", options.to, "File to write (default: standard output)")
      ->type_name("FILE");
  exporter->callback([&options] { options.action = JournalAction::Export; });

  CLI::App* importer =
      journal->add_subcommand("import", "Add an exported operation to a journal file");
  importer->footer(std::string{kImportFooter});
  importer
      ->add_option("--journal", options.journal,
                   "Journal file (SQLite) to write; created if missing")
      ->required()
      ->type_name("DB");
  importer->add_option("file", options.file, "The export to import")->required()->type_name("FILE");
  importer->callback([&options] { options.action = JournalAction::Import; });

  CLI::App* lister = journal->add_subcommand("list", "List the operations of a journal file");
  lister->footer(std::string{kListFooter});
  lister->add_option("--journal", options.journal, "Journal file (SQLite), opened read-only")
      ->required()
      ->type_name("DB");
  lister->add_option("-o,--output", options.output, "Output format: text (a table) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  lister->callback([&options] { options.action = JournalAction::List; });
  return journal;
}

int run_journal(const JournalOptions& options, std::ostream& out, std::ostream& err) {
  switch (options.action) {
    case JournalAction::Export:
    case JournalAction::List: {
      const std::string_view command = options.action == JournalAction::Export ? "export" : "list";
      auto journal = SqliteJournal::open_read_only(options.journal);
      if (!journal) {
        return usage_error(
            err, command,
            "cannot read journal " + options.journal + ": " + journal.error().message);
      }
      return options.action == JournalAction::Export
                 ? run_journal_export(**journal, options, out, err)
                 : run_journal_list(**journal, options, out, err);
    }
    case JournalAction::Import: {
      auto journal = SqliteJournal::open(options.journal);
      if (!journal) {
        return usage_error(
            err, "import",
            "cannot open journal " + options.journal + ": " + journal.error().message);
      }
      return run_journal_import(**journal, options, out, err);
    }
    case JournalAction::None:
      break;
  }
  err << "stsresize journal: name a subcommand: export, import or list (see --help)\n";
  return kExitUsage;
}

int run_journal_export(Journal& journal, const JournalOptions& options, std::ostream& out,
                       std::ostream& err) {
  if (options.operation.empty()) return usage_error(err, "export", "--operation is required");
  auto records = journal.read(options.operation);
  if (!records) {
    return usage_error(err, "export",
                       "cannot read journal " + name_of(options) + ": " + records.error().message);
  }
  if (records->empty()) {
    return usage_error(err, "export",
                       "no operation " + options.operation + " in " + name_of(options) +
                           " (`stsresize journal list --journal " + name_of(options) +
                           "` lists them)");
  }
  auto heads = journal.operations();
  if (!heads) {
    return usage_error(err, "export",
                       "cannot read journal " + name_of(options) + ": " + heads.error().message);
  }
  const StreamCheck checked = check(*records, *heads);
  const Json document = make_journal_export(*records, version(), summary_json(checked));
  const std::string text = render_journal_export(document);

  if (options.to.empty() || options.to == "-") {
    out << text;
  } else {
    std::ofstream file{options.to, std::ios::binary | std::ios::trunc};
    if (!(file << text) || !file.flush()) {
      return usage_error(err, "export", "cannot write " + options.to);
    }
    out << "exported operation " << options.operation << " (" << records->front().ns << "/"
        << records->front().statefulset << ", " << records->size() << " records, "
        << to_string(checked.outcome().final_phase) << ") to " << options.to << "\n";
  }
  if (const auto& bad = checked.replay.inconsistency) {
    err << "stsresize journal export: warning: the stream is inconsistent at "
        << inconsistency_text(*bad) << "; exported as it is\n";
  }
  return kExitOk;
}

int run_journal_import(Journal& journal, const JournalOptions& options, std::ostream& out,
                       std::ostream& err) {
  if (options.file.empty()) return usage_error(err, "import", "the export FILE is required");
  std::ifstream file{options.file, std::ios::binary};
  if (!file) return usage_error(err, "import", "cannot read " + options.file + ": cannot open it");
  std::stringstream text;
  text << file.rdbuf();
  Json document;
  try {
    document = Json::parse(text.str());
  } catch (const Json::exception& error) {
    return usage_error(err, "import", "refused " + options.file + ": not JSON: " + error.what());
  }
  auto parsed = parse_journal_export(document);
  if (!parsed) {
    return usage_error(err, "import", "refused " + options.file + ": " + parsed.error());
  }
  if (!parsed->checksum_matches()) {
    return usage_error(
        err, "import",
        "refused " + options.file + ": checksum mismatch (the file says sha256 " +
            parsed->stored_checksum + ", its content hashes to " + parsed->actual_checksum +
            "): it was changed after the export. Ask for the original export, or see what it "
            "holds with `stsresize replay --file " +
            options.file + " --ignore-checksum`");
  }
  for (std::size_t i = 0; i < parsed->records.size(); ++i) {
    const std::int64_t expected = static_cast<std::int64_t>(i) + 1;
    if (parsed->records[i].sequence != expected) {
      return usage_error(err, "import",
                         "refused " + options.file + ": records[" + std::to_string(i) +
                             "] has sequence " + std::to_string(parsed->records[i].sequence) +
                             " where " + std::to_string(expected) +
                             " was expected (a journal stream is 1, 2, 3... in order, without "
                             "gaps); `stsresize replay "
                             "--file " +
                             options.file + "` shows the stream");
    }
  }

  const std::string& id = parsed->operation_id;
  auto existing = journal.read(id);
  if (!existing) {
    return usage_error(err, "import",
                       "cannot read journal " + name_of(options) + ": " + existing.error().message);
  }
  if (!existing->empty()) {
    const auto difference = first_difference(*existing, parsed->records);
    if (!difference) {
      out << "operation " << id << " is already in " << name_of(options)
          << " with identical records: nothing imported\n";
      return kExitOk;
    }
    return usage_error(
        err, "import",
        "refused " + options.file + ": operation " + id + " already exists in " + name_of(options) +
            " with different records (" + std::to_string(existing->size()) + " there, " +
            std::to_string(parsed->records.size()) + " in the file; first difference at sequence " +
            std::to_string(*difference) +
            "). Import it into another journal file: stsresize journal import --journal "
            "<new.db> " +
            options.file);
  }

  if (auto appended = journal.append(parsed->records); !appended) {
    return usage_error(
        err, "import",
        "cannot write journal " + name_of(options) + ": " + appended.error().message);
  }
  const StreamCheck checked = check(parsed->records);
  out << "imported operation " << id << " (" << parsed->ns << "/" << parsed->statefulset << ", "
      << parsed->records.size() << " records, " << to_string(checked.outcome().final_phase)
      << ") into " << name_of(options) << "\n";
  if (const auto& bad = checked.replay.inconsistency) {
    err << "stsresize journal import: warning: the stream is inconsistent at "
        << inconsistency_text(*bad) << "; imported as it is (`stsresize replay` reports it)\n";
  }
  return kExitOk;
}

int run_journal_list(Journal& journal, const JournalOptions& options, std::ostream& out,
                     std::ostream& err) {
  if (options.output != "text" && options.output != "json") {
    return usage_error(err, "list",
                       "--output must be text or json, not \"" + options.output + "\"");
  }
  auto operations = journal.operations();
  if (!operations) {
    return usage_error(
        err, "list", "cannot read journal " + name_of(options) + ": " + operations.error().message);
  }
  Json rows = Json::array();
  std::vector<Cells> table{
      {"OPERATION", "NAMESPACE", "STATEFULSET", "PHASE", "EVENTS", "FIRST", "LAST", "CHECK"}};
  for (const OperationSummary& op : *operations) {
    auto records = journal.read(op.operation_id);
    if (!records) {
      return usage_error(
          err, "list", "cannot read journal " + name_of(options) + ": " + records.error().message);
    }
    if (records->empty()) continue;
    const StreamCheck checked = check(*records, std::span{&op, 1});
    const OperationOutcome& outcome = checked.outcome();
    const auto& bad = checked.replay.inconsistency;
    rows.push_back(Json{{"operation", op.operation_id},
                        {"namespace", op.ns},
                        {"statefulset", op.statefulset},
                        {"phase", to_string(outcome.final_phase)},
                        {"events", outcome.events},
                        {"firstTime", format_timestamp(op.first_time)},
                        {"lastTime", format_timestamp(op.last_time)},
                        {"consistent", outcome.consistent},
                        {"inconsistentAt", bad ? Json(bad->sequence) : Json(nullptr)}});
    table.push_back({op.operation_id, op.ns, op.statefulset,
                     std::string{to_string(outcome.final_phase)}, std::to_string(outcome.events),
                     format_timestamp(op.first_time), format_timestamp(op.last_time),
                     bad ? "inconsistent at " + std::to_string(bad->sequence) : "ok"});
  }
  if (options.output == "json") {
    out << rows.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (rows.empty()) {
    out << "No operations in " << name_of(options) << ".\n";
    return kExitOk;
  }
  out << text_table(table, TableStyle{.gap = 2});
  return kExitOk;
}

}  // namespace stsresize::cli
