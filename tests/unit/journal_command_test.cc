#include "adapters/app/journal_command.h"

#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/app/cli.h"
#include "adapters/app/exit_codes.h"
#include "adapters/app/replay_command.h"
#include "adapters/app/version_command.h"
#include "adapters/journal/journal_export.h"
#include "adapters/journal/memory_journal.h"
#include "adapters/journal/sqlite_journal.h"
#include "engine/json.h"
#include "tests/support/golden.h"
#include "tests/support/replay_samples.h"
#include "tests/support/scratch_dir.h"

namespace stsresize::cli {
namespace {

using stsresize::testing::one_claim_copy;
using testing_support::expect_matches_golden;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome run_command_line(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file{path, std::ios::binary};
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream{path, std::ios::binary | std::ios::trunc} << text;
}

// Replaces every occurrence of the scratch directory, so that messages can be golden.
std::string without(std::string text, const std::string& dir) {
  for (std::size_t at = text.find(dir); at != std::string::npos; at = text.find(dir)) {
    text.replace(at, dir.size(), "<dir>");
  }
  return text;
}

class JournalCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto journal = SqliteJournal::open(db);
    ASSERT_TRUE(journal) << journal.error().message;
    for (const auto& records :
         {one_claim_copy(), one_claim_copy("db-89abcdef", "db", std::chrono::hours{1})}) {
      auto appended = (*journal)->append(records);
      ASSERT_TRUE(appended) << appended.error().message;
    }
  }

  Outcome export_web() {
    return run_command_line({"journal", "export", "--journal", db.string(), "--operation",
                             "web-0123abcd", "-o", exported.string()});
  }

  Outcome import(const std::filesystem::path& into, const std::filesystem::path& file) {
    return run_command_line({"journal", "import", "--journal", into.string(), file.string()});
  }

  testing_support::ScratchDir dir;
  std::filesystem::path db = dir.file("journal.db");
  std::filesystem::path exported = dir.file("web.json");
  std::filesystem::path fresh = dir.file("fresh.db");
};

// The format itself, with a fixed tool version so that a version bump does not change it.
TEST(JournalExport, JournalExport_FormatIsStable) {
  const auto records = one_claim_copy();
  const Json document = make_journal_export(records, "0.0.0-test",
                                            Json{{"finalPhase", "Completed"}, {"records", 16}});
  expect_matches_golden("journal_export_web.json", render_journal_export(document));
  EXPECT_EQ(Json::parse(render_journal_export(document)), document);

  auto parsed = parse_journal_export(document);
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_TRUE(parsed->checksum_matches());
  EXPECT_EQ(parsed->records, records);
  EXPECT_EQ(parsed->tool_version, "0.0.0-test");
}

TEST(JournalExport, JournalExport_ChecksumCoversRecordsAndIdentity) {
  const Json document = make_journal_export(one_claim_copy(), "0.0.0-test", Json::object());
  for (const char* pointer : {"/records/6/data/summary/files", "/records/3/sequence",
                              "/operation/namespace", "/exportedBy/version"}) {
    Json edited = document;
    const Json::json_pointer at{pointer};
    edited[at] = edited[at].is_string() ? Json("x") : Json(7);
    auto parsed = parse_journal_export(edited);
    ASSERT_TRUE(parsed) << pointer << ": " << parsed.error();
    EXPECT_FALSE(parsed->checksum_matches()) << pointer;
  }
  Json fewer = document;
  fewer["records"].erase(fewer["records"].end() - 1);
  EXPECT_FALSE(parse_journal_export(fewer)->checksum_matches());
}

TEST_F(JournalCommandTest, JournalExport_WritesTheWholeStreamWithSummaryAndVersion) {
  const Outcome result = export_web();

  ASSERT_EQ(result.code, kExitOk) << result.err;
  EXPECT_EQ(result.out, "exported operation web-0123abcd (shop/web, 16 records, Completed) to " +
                            exported.string() + "\n");
  const Json document = Json::parse(read_text(exported));
  EXPECT_EQ(document.at("format"), "stsresize-journal-export");
  EXPECT_EQ(document.at("formatVersion"), 1);
  EXPECT_EQ(document.at("exportedBy").at("version"), std::string{version()});
  EXPECT_EQ(document.at("operation").at("finalPhase"), "Completed");
  EXPECT_EQ(document.at("operation").at("path"), "Copy");
  EXPECT_EQ(document.at("operation").at("consistent"), true);
  EXPECT_EQ(document.at("records").size(), 16u);
  EXPECT_EQ(document.at("records").at(0).at("time"), "2027-01-15T08:00:01.000Z");
  EXPECT_EQ(document.at("checksum").at("value"), journal_export_checksum(document));
}

TEST_F(JournalCommandTest, JournalExport_UnknownOperationSaysHowToListThem) {
  const Outcome result =
      run_command_line({"journal", "export", "--journal", db.string(), "--operation", "web-nope"});

  EXPECT_EQ(result.code, kExitUsage);
  EXPECT_EQ(without(result.err, dir.path().string()),
            "stsresize journal export: no operation web-nope in <dir>/journal.db (`stsresize "
            "journal list --journal <dir>/journal.db` lists them)\n");
}

TEST_F(JournalCommandTest, JournalExportImport_RoundTripReplaysIdentically) {
  ASSERT_EQ(export_web().code, kExitOk);
  const Outcome imported = import(fresh, exported);
  ASSERT_EQ(imported.code, kExitOk) << imported.err;
  EXPECT_EQ(imported.out,
            "imported operation web-0123abcd (shop/web, 16 records, Completed) into " +
                fresh.string() + "\n");

  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, {"--step"}, {"-o", "json"}, {"--step", "-o", "json"}}) {
    std::vector<std::string> original{"replay", "--journal", db.string(), "--operation",
                                      "web-0123abcd"};
    std::vector<std::string> copy{"replay", "--journal", fresh.string()};
    std::vector<std::string> file{"replay", "--file", exported.string()};
    for (auto* args : {&original, &copy, &file})
      args->insert(args->end(), flags.begin(), flags.end());
    const Outcome a = run_command_line(original);
    const Outcome b = run_command_line(copy);
    const Outcome c = run_command_line(file);
    ASSERT_EQ(a.code, kExitOk) << a.err;
    EXPECT_EQ(b.code, kExitOk) << b.err;
    EXPECT_EQ(c.code, kExitOk) << c.err;
    EXPECT_EQ(a.out, b.out) << "flags: " << ::testing::PrintToString(flags);
    EXPECT_EQ(a.out, c.out) << "flags: " << ::testing::PrintToString(flags);
  }
}

TEST_F(JournalCommandTest, JournalImport_IdenticalOperationImportsNothing) {
  ASSERT_EQ(export_web().code, kExitOk);
  const Outcome again = import(db, exported);

  EXPECT_EQ(again.code, kExitOk) << again.err;
  EXPECT_EQ(again.out, "operation web-0123abcd is already in " + db.string() +
                           " with identical records: nothing imported\n");
}

TEST_F(JournalCommandTest, ReplayFile_EditedExportIsAChecksumMismatchThenIgnoredNamesTheEvent) {
  ASSERT_EQ(export_web().code, kExitOk);
  Json document = Json::parse(read_text(exported));
  // ScalingDown -> Recreating skips the backup.
  document["records"][4]["data"]["to"] = "Recreating";
  write_text(exported, document.dump(2));

  const Outcome strict = run_command_line({"replay", "--file", exported.string()});
  EXPECT_EQ(strict.code, kExitInconsistent);
  EXPECT_EQ(strict.out, "");
  EXPECT_TRUE(contains(strict.err, "checksum mismatch")) << strict.err;
  EXPECT_TRUE(contains(strict.err, "--ignore-checksum")) << strict.err;

  const Outcome ignored =
      run_command_line({"replay", "--file", exported.string(), "--ignore-checksum"});
  EXPECT_EQ(ignored.code, kExitInconsistent);
  EXPECT_TRUE(contains(ignored.err, "warning: export")) << ignored.err;
  EXPECT_TRUE(contains(ignored.err,
                       "inconsistent journal: operation web-0123abcd, sequence 5, "
                       "event PhaseChanged"))
      << ignored.err;
  EXPECT_TRUE(contains(ignored.err, "ScalingDown -> Recreating on StepDone is refused"))
      << ignored.err;
}

TEST_F(JournalCommandTest, ReplayFile_RemovedRecordWithChecksumIgnoredIsAGap) {
  ASSERT_EQ(export_web().code, kExitOk);
  Json document = Json::parse(read_text(exported));
  document["records"].erase(document["records"].begin() + 8);  // sequence 9
  write_text(exported, document.dump(2));

  const Outcome result =
      run_command_line({"replay", "--file", exported.string(), "--ignore-checksum"});
  EXPECT_EQ(result.code, kExitInconsistent);
  EXPECT_TRUE(contains(result.err, "sequence 10, event ClaimRecreated")) << result.err;
  EXPECT_TRUE(contains(result.err, "sequence 10 where 9 was expected")) << result.err;
}

TEST_F(JournalCommandTest, ReplayFile_UsageErrors) {
  ASSERT_EQ(export_web().code, kExitOk);
  EXPECT_EQ(
      run_command_line({"replay", "--file", exported.string(), "--journal", db.string()}).code,
      kExitUsage);
  EXPECT_EQ(run_command_line({"replay", "--journal", db.string(), "--ignore-checksum"}).code,
            kExitUsage);
  const Outcome other =
      run_command_line({"replay", "--file", exported.string(), "--operation", "db-89abcdef"});
  EXPECT_EQ(other.code, kExitUsage);
  EXPECT_TRUE(contains(other.err, "no operation db-89abcdef in")) << other.err;
  EXPECT_EQ(run_command_line({"replay", "--file", dir.file("missing.json").string()}).code,
            kExitUsage);
}

// Every refusal of import, each with its message (golden, the scratch directory as <dir>).
TEST_F(JournalCommandTest, JournalImport_RefusalsSayWhyAndWhatToDo) {
  ASSERT_EQ(export_web().code, kExitOk);
  const Json good = Json::parse(read_text(exported));
  std::string report;
  auto refused = [&](const std::string& label, const std::string& content,
                     const std::filesystem::path& into) {
    const std::filesystem::path file = dir.file(label + ".json");
    write_text(file, content);
    const Outcome result = import(into, file);
    EXPECT_EQ(result.code, kExitUsage) << label << ": " << result.out << result.err;
    EXPECT_EQ(result.out, "") << label;
    report += "== " + label + "\n" + without(result.err, dir.path().string());
  };
  auto with = [&](auto change) {
    Json document = good;
    change(document);
    document["checksum"]["value"] = journal_export_checksum(document);
    return document.dump(2);
  };

  refused("not-json", "{\"format\": ", fresh);
  refused("not-an-export", R"({"kind": "List"})", fresh);
  refused("newer-format", with([](Json& d) { d["formatVersion"] = 2; }), fresh);
  refused("missing-field", with([](Json& d) { d["records"][2].erase("type"); }), fresh);
  refused("bad-time", with([](Json& d) { d["records"][0]["time"] = "yesterday"; }), fresh);
  refused("unknown-field", with([](Json& d) { d["records"][0]["note"] = "hi"; }), fresh);
  refused("no-records", with([](Json& d) { d["records"] = Json::array(); }), fresh);
  refused(
      "checksum-mismatch",
      [&] {
        Json d = good;
        d["records"][6]["data"]["summary"]["files"] = 1203;
        return d.dump(2);
      }(),
      fresh);
  refused("gap", with([](Json& d) { d["records"].erase(d["records"].begin() + 8); }), fresh);
  refused("reordered", with([](Json& d) { std::swap(d["records"][3], d["records"][4]); }), fresh);
  refused("existing-different",
          with([](Json& d) { d["records"][0]["data"]["trigger"] = "someone else's"; }), db);
  expect_matches_golden("journal_import_refusals.txt", report);

  // Nothing was written by any refusal.
  auto journal = SqliteJournal::open_read_only(fresh);
  if (journal) {
    EXPECT_EQ((*journal)->operations()->size(), 0u);
  }
  auto original = SqliteJournal::open_read_only(db);
  ASSERT_TRUE(original);
  EXPECT_EQ((*original)->read("web-0123abcd")->front().data.at("trigger"), "template grew");
}

TEST_F(JournalCommandTest, JournalImport_InconsistentStreamIsImportedWithAWarning) {
  std::vector<JournalRecord> broken = one_claim_copy("web-77777777", "web");
  broken[4].data["to"] = "Recreating";
  const Json document = make_journal_export(broken, "0.0.0-test", Json::object());
  write_text(exported, document.dump());

  const Outcome result = import(fresh, exported);
  EXPECT_EQ(result.code, kExitOk) << result.err;
  EXPECT_TRUE(contains(result.err,
                       "warning: the stream is inconsistent at sequence 5 "
                       "(PhaseChanged)"))
      << result.err;
  const Outcome replayed = run_command_line({"replay", "--journal", fresh.string()});
  EXPECT_EQ(replayed.code, kExitInconsistent);
}

TEST_F(JournalCommandTest, JournalList_OneLinePerOperationWithPhaseAndCheck) {
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
    raw.exec(
        "UPDATE events SET data = '{\"from\":\"Planning\",\"to\":\"Restoring\",\"event\":"
        "\"PlannedCopy\"}' WHERE operation_id = 'db-89abcdef' AND sequence = 4");
  }
  const Outcome text = run_command_line({"journal", "list", "--journal", db.string()});
  EXPECT_EQ(text.code, kExitOk) << text.err;
  expect_matches_golden("journal_list.txt", text.out);

  const Outcome json =
      run_command_line({"journal", "list", "--journal", db.string(), "-o", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const Json rows = Json::parse(json.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.at(0).at("phase"), "Completed");
  EXPECT_EQ(rows.at(1).at("consistent"), false);
  EXPECT_EQ(rows.at(1).at("inconsistentAt"), 4);
}

TEST_F(JournalCommandTest, JournalListAndExport_RecordsDeletedFromTheEndAreInconsistent) {
  // web-0123abcd has 16 records; the journal's head keeps counting the two deleted ones.
  {
    SQLite::Database raw(db.string(), SQLite::OPEN_READWRITE);
    raw.exec("DELETE FROM events WHERE operation_id = 'web-0123abcd' AND sequence >= 15");
  }
  const Outcome json =
      run_command_line({"journal", "list", "--journal", db.string(), "-o", "json"});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const Json rows = Json::parse(json.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.at(0).at("operation"), "web-0123abcd");
  EXPECT_EQ(rows.at(0).at("consistent"), false);
  EXPECT_EQ(rows.at(0).at("inconsistentAt"), 15);
  EXPECT_EQ(rows.at(1).at("consistent"), true);

  const Outcome exported_web = export_web();
  ASSERT_EQ(exported_web.code, kExitOk) << exported_web.err;
  const Json document = Json::parse(read_text(exported));
  EXPECT_EQ(document.at("records").size(), 14u);
  EXPECT_EQ(document.at("operation").at("consistent"), false) << document.at("operation");
}

TEST(JournalCommand, CommandLine_JournalHelpSaysWhatTheChecksumProves) {
  const Outcome result = run_command_line({"journal", "--help"});

  EXPECT_EQ(result.code, kExitOk);
  EXPECT_TRUE(contains(result.out, "proves that nothing in the file")) << result.out;
  EXPECT_TRUE(contains(result.out, "It does NOT\nprove who wrote the file")) << result.out;
  EXPECT_TRUE(contains(result.out, "export")) << result.out;
  EXPECT_TRUE(contains(result.out, "import")) << result.out;
  EXPECT_TRUE(contains(result.out, "Exit codes:")) << result.out;
  EXPECT_EQ(run_command_line({"journal"}).code, kExitUsage);
  EXPECT_EQ(run_command_line({"journal", "export", "--journal", "j.db"}).code, kExitUsage);
  EXPECT_EQ(run_command_line({"journal", "import", "--journal", "j.db"}).code, kExitUsage);
}

}  // namespace
}  // namespace stsresize::cli
