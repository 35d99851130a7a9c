#pragma once
// The export file of one operation's journal stream (`stsresize journal export`): a
// self-contained JSON document that an operator attaches to a bug report and that
// `stsresize replay --file` and `stsresize journal import` read elsewhere.
//
//   {
//     "format": "stsresize-journal-export", "formatVersion": 1,
//     "exportedBy": {"tool": "stsresize", "version": "0.1.0"},
//     "operation": {"id", "namespace", "statefulset", ... summary for people ...},
//     "records": [{"sequence": 1, "time": "2027-01-15T08:00:01.000Z", "type": "...",
//                  "data": {...}}, ...],
//     "checksum": {"algorithm": "sha256", "value": "<64 hex digits>"}
//   }
//
// The checksum is the SHA-256 of the document without its "checksum" member, serialised as
// compact JSON with sorted keys (nlohmann::json's dump()). It detects any change made after
// the export (an edit, a truncation); it is not a signature: whoever edits the file can
// recompute it. The summary under "operation" beyond id/namespace/statefulset is for people
// and is never read back.
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/ports/journal.h"

namespace stsresize {

inline constexpr std::string_view kJournalExportFormat = "stsresize-journal-export";
inline constexpr int kJournalExportFormatVersion = 1;

// `records`: one operation's stream as the Journal returned it (non-empty, all of one
// operation). `summary` is merged into "operation" after id, namespace and statefulset.
Json make_journal_export(std::span<const JournalRecord> records, std::string_view tool_version,
                         const Json& summary);

// The document as text for people: members in the order shown above (records: sequence, time,
// type, data), indented. The checksum does not depend on this order.
std::string render_journal_export(const Json& document);

// The checksum value a document should carry (whatever "checksum" it carries now).
std::string journal_export_checksum(const Json& document);

struct ParsedJournalExport {
  std::string operation_id;
  std::string ns;
  std::string statefulset;
  std::string tool_version;
  // In file order, with the operation's id, namespace and StatefulSet.
  std::vector<JournalRecord> records;
  std::string stored_checksum;
  std::string actual_checksum;

  bool checksum_matches() const { return stored_checksum == actual_checksum; }
};

// Checks the structure (format, version, fields and their types); does not check the
// checksum (see checksum_matches()) nor the records' sequences or contents, which replay
// judges. The error names the offending field ("records[3].time: ...").
std::expected<ParsedJournalExport, std::string> parse_journal_export(const Json& document);

}  // namespace stsresize
