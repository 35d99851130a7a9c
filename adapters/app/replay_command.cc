#include "adapters/app/replay_command.h"

#include <ostream>

#include "adapters/journal/sqlite_journal.h"
#include "engine/replay.h"
#include "states/machine.h"

namespace stsresize {

int run_replay(Journal& journal, const ReplayOptions& options, std::ostream& out,
               std::ostream& err) {
  if (options.output != "text" && options.output != "json") {
    err << "stsresize replay: unknown output format \"" << options.output << "\" (text or json)\n";
    return kReplayUsageError;
  }
  JournalQuery query;
  query.operation_id = options.operation_id;
  auto records = journal.query(query);
  if (!records) {
    err << "stsresize replay: reading the journal: " << records.error().message << "\n";
    return kReplayUsageError;
  }
  if (options.operation_id && records->empty()) {
    err << "stsresize replay: no operation " << *options.operation_id << " in the journal\n";
    return kReplayUsageError;
  }
  const std::vector<Timeline> timelines = replay_all(*records, PhaseMachine::rules());
  if (options.output == "json") {
    out << format_timeline_json(timelines).dump(2) << "\n";
  } else {
    out << format_timeline_text(timelines);
  }
  int status = kReplayConsistent;
  for (const Timeline& timeline : timelines) {
    if (timeline.inconsistency) {
      err << "stsresize replay: operation " << timeline.operation_id
          << " is inconsistent at sequence " << timeline.inconsistency->sequence << ": "
          << timeline.inconsistency->message << "\n";
      status = kReplayInconsistent;
    }
  }
  return status;
}

int run_replay_file(const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  auto journal = SqliteJournal::open_read_only(options.journal_path);
  if (!journal) {
    err << "stsresize replay: cannot open journal " << options.journal_path << ": "
        << journal.error().message << "\n";
    return kReplayUsageError;
  }
  return run_replay(**journal, options, out, err);
}

}  // namespace stsresize
