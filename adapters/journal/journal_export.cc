#include "adapters/journal/journal_export.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>

#include "engine/strict_json.h"
#include "engine/timestamp.h"

namespace stsresize {

namespace {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    return "";  // never matches a stored value: reported as a checksum mismatch
  }
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    std::array<char, 3> byte{};
    std::snprintf(byte.data(), byte.size(), "%02x", digest[i]);
    hex += byte.data();
  }
  return hex;
}

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

Json make_journal_export(std::span<const JournalRecord> records, std::string_view tool_version,
                         const Json& summary) {
  Json operation = summary.is_object() ? summary : Json::object();
  if (!records.empty()) {
    operation["id"] = records.front().operation_id;
    operation["namespace"] = records.front().ns;
    operation["statefulset"] = records.front().statefulset;
  }
  Json list = Json::array();
  for (const JournalRecord& record : records) {
    list.push_back(Json{{"sequence", record.sequence},
                        {"time", format_timestamp(record.time)},
                        {"type", record.type},
                        {"data", record.data}});
  }
  Json document{{"format", kJournalExportFormat},
                {"formatVersion", kJournalExportFormatVersion},
                {"exportedBy", Json{{"tool", "stsresize"}, {"version", tool_version}}},
                {"operation", std::move(operation)},
                {"records", std::move(list)}};
  document["checksum"] =
      Json{{"algorithm", "sha256"}, {"value", journal_export_checksum(document)}};
  return document;
}

std::string render_journal_export(const Json& document) {
  using Ordered = nlohmann::ordered_json;
  auto ordered = [](const Json& value) {
    return Ordered::parse(value.dump(-1, ' ', false, Json::error_handler_t::replace));
  };
  Ordered out = Ordered::object();
  for (const char* key : {"format", "formatVersion", "exportedBy", "operation"}) {
    if (document.contains(key)) out[key] = ordered(document.at(key));
  }
  if (document.contains("records")) {
    Ordered records = Ordered::array();
    for (const Json& record : document.at("records")) {
      Ordered line = Ordered::object();
      for (const char* key : {"sequence", "time", "type", "data"}) {
        if (record.contains(key)) line[key] = ordered(record.at(key));
      }
      records.push_back(std::move(line));
    }
    out["records"] = std::move(records);
  }
  for (const auto& [key, value] : document.items()) {
    if (!out.contains(key)) out[key] = ordered(value);  // "checksum", and anything unexpected
  }
  return out.dump(2, ' ', false, Ordered::error_handler_t::replace) + "\n";
}

std::string journal_export_checksum(const Json& document) {
  Json covered = document;
  if (covered.is_object()) covered.erase("checksum");
  return sha256_hex(covered.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::expected<ParsedJournalExport, std::string> parse_journal_export(const Json& document) {
  if (!document.is_object()) return std::unexpected("not a JSON object");
  const auto format = document.find("format");
  if (format == document.end() || *format != kJournalExportFormat) {
    return std::unexpected("not a stsresize journal export (\"format\" is not \"" +
                           std::string{kJournalExportFormat} + "\")");
  }
  const auto version = document.find("formatVersion");
  if (version == document.end() || !version->is_number_integer()) {
    return std::unexpected("missing \"formatVersion\"");
  }
  if (*version != kJournalExportFormatVersion) {
    return std::unexpected("format version " + version->dump() +
                           " (a newer stsresize wrote it?); this stsresize reads version " +
                           std::to_string(kJournalExportFormatVersion));
  }

  ParsedJournalExport out;
  StrictObject top{document, "export"};
  top.string("format");
  top.integer("formatVersion");
  const Json& by = top.object("exportedBy");
  const Json& operation = top.object("operation");
  const Json& records = top.array("records");
  const Json& checksum = top.object("checksum");
  if (auto done = top.finish(); !done) return std::unexpected(done.error());

  StrictObject tool{by, "exportedBy"};
  tool.string("tool");
  out.tool_version = tool.string("version");
  if (auto done = tool.finish(); !done) return std::unexpected(done.error());

  // The summary's other fields are for people: only the identity is read (and covered by the
  // checksum like everything else).
  for (const char* key : {"id", "namespace", "statefulset"}) {
    const auto field = operation.find(key);
    if (field == operation.end() || !field->is_string() || field->get<std::string>().empty()) {
      return std::unexpected(std::string{"operation."} + key + ": a non-empty string is required");
    }
  }
  out.operation_id = operation.at("id");
  out.ns = operation.at("namespace");
  out.statefulset = operation.at("statefulset");

  if (records.empty()) return std::unexpected("records: the export holds no record");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string where = "records[" + std::to_string(i) + "]";
    if (!records[i].is_object()) return std::unexpected(where + ": expected a JSON object");
    // "data" is kept as it is, whatever JSON it holds: replay judges the contents.
    Json fields = records[i];
    fields.erase("data");
    if (!records[i].contains("data")) return std::unexpected(where + ": missing field \"data\"");
    StrictObject in{fields, where};
    JournalRecord record;
    record.operation_id = out.operation_id;
    record.ns = out.ns;
    record.statefulset = out.statefulset;
    record.sequence = in.integer("sequence");
    const std::string time = in.string("time");
    record.type = in.string("type");
    record.data = records[i].at("data");
    if (auto done = in.finish(); !done) return std::unexpected(done.error());
    if (record.type.empty()) return std::unexpected(where + ".type: empty");
    auto parsed_time = parse_timestamp(time);
    if (!parsed_time) return std::unexpected(where + ".time: " + parsed_time.error());
    record.time = *parsed_time;
    out.records.push_back(std::move(record));
  }

  StrictObject sum{checksum, "checksum"};
  const std::string algorithm = sum.string("algorithm");
  out.stored_checksum = sum.string("value");
  if (auto done = sum.finish(); !done) return std::unexpected(done.error());
  if (algorithm != "sha256") {
    return std::unexpected("checksum.algorithm: \"" + algorithm + "\" (only sha256 is known)");
  }
  if (!is_sha256_hex(out.stored_checksum)) {
    return std::unexpected("checksum.value: not 64 lowercase hex digits");
  }
  out.actual_checksum = journal_export_checksum(document);
  return out;
}

}  // namespace stsresize
