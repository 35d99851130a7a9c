#include "engine/copy_job.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace stsresize {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Summary format

const std::string kDigestA(64, 'a');
const std::string kDigestB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(CopySummary, FormatsTheOneLineShapeTheScriptWrites) {
  const CopySummary summary{{3, 100, kDigestA}, {3, 100, kDigestB}};
  EXPECT_EQ(format_copy_summary(summary),
            "{\"v\":1,\"source\":{\"files\":3,\"bytes\":100,\"digest\":\"" + kDigestA +
                "\"},\"destination\":{\"files\":3,\"bytes\":100,\"digest\":\"" + kDigestB + "\"}}");
}

TEST(CopySummary, ParsesWhatItFormats) {
  const CopySummary summary{{0, 0, kDigestA}, {9223372036854775807, 42, kDigestB}};
  const auto parsed = parse_copy_summary(format_copy_summary(summary));
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  EXPECT_EQ(parsed->source, summary.source);
  EXPECT_EQ(parsed->destination, summary.destination);
  EXPECT_EQ(parsed->hashed, std::nullopt);  // as a Job older than the figure writes it
  EXPECT_FALSE(parsed->matches());

  const CopySummary with_figure{{1, 2, kDigestA}, {1, 2, kDigestA}, 4};
  EXPECT_EQ(format_copy_summary(with_figure),
            "{\"v\":1,\"source\":" + std::string{"{\"files\":1,\"bytes\":2,\"digest\":\""} +
                kDigestA + "\"},\"destination\":{\"files\":1,\"bytes\":2,\"digest\":\"" + kDigestA +
                "\"},\"hashed\":4}");
  const auto figure = parse_copy_summary(format_copy_summary(with_figure));
  ASSERT_TRUE(figure.has_value()) << figure.error();
  EXPECT_EQ(figure->hashed, 4);
  EXPECT_TRUE(figure->matches());
}

TEST(CopySummary, MatchesOnlyWhenBothSidesAreEqual) {
  EXPECT_TRUE((CopySummary{{1, 2, kDigestA}, {1, 2, kDigestA}}).matches());
  EXPECT_FALSE((CopySummary{{1, 2, kDigestA}, {1, 3, kDigestA}}).matches());
  EXPECT_FALSE((CopySummary{{1, 2, kDigestA}, {2, 2, kDigestA}}).matches());
  EXPECT_FALSE((CopySummary{{1, 2, kDigestA}, {1, 2, kDigestB}}).matches());
}

std::string tree(const std::string& files, const std::string& bytes, const std::string& digest) {
  return "{\"files\":" + files + ",\"bytes\":" + bytes + ",\"digest\":\"" + digest + "\"}";
}

TEST(CopySummary, RefusesAnythingButTheExactShapeWithAClearMessage) {
  const std::string good = tree("1", "2", kDigestA);
  const struct {
    std::string message;
    std::string expected_error_part;
  } rows[] = {
      {"", "empty"},
      {"stsresize-copy: rsync failed with exit code 23", "not valid JSON"},
      {"stsresize-copy: summarising failed: exit code 0 on /source, 123 on /destination",
       "not valid JSON"},
      {"{\"v\":1,\"source\":" + good + ",\"destination\":" + good.substr(0, 20), "not valid JSON"},
      {"[]", "not a JSON object"},
      {"{\"v\":1,\"source\":" + good + "}", "has no \"destination\""},
      {"{\"v\":2,\"source\":" + good + ",\"destination\":" + good + "}", "unsupported version 2"},
      {"{\"v\":\"1\",\"source\":" + good + ",\"destination\":" + good + "}", "unsupported version"},
      {"{\"v\":1.0,\"source\":" + good + ",\"destination\":" + good + "}", "unsupported version"},
      {"{\"v\":1,\"source\":" + good + ",\"destination\":" + good + ",\"x\":0}",
       "unexpected key \"x\""},
      {"{\"v\":1,\"source\":" + good + ",\"destination\":" + good + ",\"hashed\":-1}",
       "hashed is negative"},
      {"{\"v\":1,\"source\":" + tree("-1", "2", kDigestA) + ",\"destination\":" + good + "}",
       "\"source\" files is negative"},
      {"{\"v\":1,\"source\":" + good + ",\"destination\":" + tree("1", "2.5", kDigestA) + "}",
       "\"destination\" bytes is not an integer"},
      {"{\"v\":1,\"source\":" + good + ",\"destination\":" + tree("1", "\"2\"", kDigestA) + "}",
       "\"destination\" bytes is not an integer"},
      {"{\"v\":1,\"source\":" + tree("18446744073709551615", "2", kDigestA) +
           ",\"destination\":" + good + "}",
       "out of range"},
      {"{\"v\":1,\"source\":" + tree("1", "2", std::string(63, 'a')) + ",\"destination\":" + good +
           "}",
       "64 lowercase hex"},
      {"{\"v\":1,\"source\":" + tree("1", "2", std::string(64, 'A')) + ",\"destination\":" + good +
           "}",
       "64 lowercase hex"},
      {"{\"v\":1,\"source\":" + tree("1", "2", std::string(64, 'g')) + ",\"destination\":" + good +
           "}",
       "64 lowercase hex"},
      {"{\"v\":1,\"source\":{\"files\":1,\"bytes\":2},\"destination\":" + good + "}",
       "\"source\" has no \"digest\""},
      {"{\"v\":1,\"source\":[],\"destination\":" + good + "}", "not a JSON object"},
  };
  for (const auto& row : rows) {
    const auto parsed = parse_copy_summary(row.message);
    ASSERT_FALSE(parsed.has_value()) << "accepted: " << row.message;
    EXPECT_NE(parsed.error().find(row.expected_error_part), std::string::npos)
        << row.message << "\n -> " << parsed.error();
  }
}

// ---------------------------------------------------------------------------------------------
// Job shape

CopyJobRequest backup_request() {
  return CopyJobRequest{.ns = "shop",
                        .job_name = "data-web-0-stsresize-backup",
                        .source_claim = "data-web-0",
                        .destination_claim = "data-web-0-stsresize-bak",
                        .operation_id = "op-1a2b3c4d",
                        .statefulset = "web",
                        .purpose = "backup"};
}

TEST(CopyJob, HasTheIdentifyingMetadata) {
  const Json job = build_copy_job(backup_request(), CopyJobSettings{});
  EXPECT_EQ(job.at("apiVersion"), "batch/v1");
  EXPECT_EQ(job.at("kind"), "Job");
  const Json& meta = job.at("metadata");
  EXPECT_EQ(meta.at("name"), "data-web-0-stsresize-backup");
  EXPECT_EQ(meta.at("namespace"), "shop");
  const Json expected_labels = {{"app.kubernetes.io/managed-by", "stsresize"},
                                {"stsresize.dev/operation", "op-1a2b3c4d"},
                                {"stsresize.dev/statefulset", "web"},
                                {"stsresize.dev/purpose", "backup"}};
  EXPECT_EQ(meta.at("labels"), expected_labels);
  EXPECT_EQ(meta.at("annotations").at("stsresize.dev/source-claim"), "data-web-0");
  EXPECT_EQ(meta.at("annotations").at("stsresize.dev/destination-claim"),
            "data-web-0-stsresize-bak");
  EXPECT_EQ(job.at("spec").at("template").at("metadata").at("labels"), expected_labels);
}

TEST(CopyJob, SpecRunsOnceMountsSourceReadOnlyAndKeepsTheResult) {
  CopyJobSettings settings;
  settings.backoff_limit = 4;
  const Json job = build_copy_job(backup_request(), settings);
  const Json& spec = job.at("spec");
  EXPECT_EQ(spec.at("backoffLimit"), 4);
  EXPECT_FALSE(spec.contains("activeDeadlineSeconds"));
  EXPECT_FALSE(spec.contains("ttlSecondsAfterFinished"));
  const Json& pod = spec.at("template").at("spec");
  EXPECT_EQ(pod.at("restartPolicy"), "Never");
  const Json expected_volumes = Json::parse(R"([
    {"name":"source","persistentVolumeClaim":{"claimName":"data-web-0","readOnly":true}},
    {"name":"destination","persistentVolumeClaim":{"claimName":"data-web-0-stsresize-bak"}},
    {"name":"tmp","emptyDir":{}}
  ])");
  EXPECT_EQ(pod.at("volumes"), expected_volumes);
  ASSERT_EQ(pod.at("containers").size(), 1u);
  const Json& c = pod.at("containers").at(0);
  EXPECT_EQ(c.at("name"), "copy");
  EXPECT_EQ(c.at("image"), settings.image);
  EXPECT_EQ(c.at("command"), Json::array({"/bin/sh", "-c", copy_script(settings)}));
  const Json expected_mounts = Json::parse(R"([
    {"name":"source","mountPath":"/source","readOnly":true},
    {"name":"destination","mountPath":"/destination"},
    {"name":"tmp","mountPath":"/tmp"}
  ])");
  EXPECT_EQ(c.at("volumeMounts"), expected_mounts);
  EXPECT_EQ(c.at("terminationMessagePath"), "/dev/termination-log");
  EXPECT_EQ(c.at("terminationMessagePolicy"), "File");
  EXPECT_EQ(pod.at("automountServiceAccountToken"), false);
  for (const char* absent : {"securityContext", "nodeSelector", "tolerations"}) {
    EXPECT_FALSE(pod.contains(absent)) << absent;
  }
}

TEST(CopyJob, RequestsAndLimitsByDefault) {
  const Json job = build_copy_job(backup_request(), CopyJobSettings{});
  const Json& c = job.at("spec").at("template").at("spec").at("containers").at(0);
  EXPECT_EQ(c.at("resources"), Json::parse(R"({"requests":{"cpu":"100m","memory":"128Mi"},
                                              "limits":{"memory":"2Gi"}})"));
}

// Baseline Pod Security, not restricted: root, to keep owners (see copy_job.h). Every
// capability added is in the baseline level's allowed list and needed by rsync -aHAX.
TEST(CopyJob, RunsAsRootWithOnlyWhatACopyNeeds) {
  const Json job = build_copy_job(backup_request(), CopyJobSettings{});
  const Json& c = job.at("spec").at("template").at("spec").at("containers").at(0);
  EXPECT_EQ(c.at("securityContext"), Json::parse(R"({
    "allowPrivilegeEscalation": false,
    "readOnlyRootFilesystem": true,
    "capabilities": {
      "drop": ["ALL"],
      "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "MKNOD", "SETFCAP"]
    },
    "seccompProfile": {"type": "RuntimeDefault"}
  })"));
}

TEST(CopyJob, ResourcesLeaveOutWhatIsNotSet) {
  CopyJobSettings settings;
  settings.resources = {
      .cpu_request = "", .memory_request = "1Gi", .cpu_limit = "", .memory_limit = ""};
  const Json job = build_copy_job(backup_request(), settings);
  const Json& c = job.at("spec").at("template").at("spec").at("containers").at(0);
  EXPECT_EQ(c.at("resources"), Json::parse(R"({"requests":{"memory":"1Gi"}})"));
  settings.resources = {
      .cpu_request = "", .memory_request = "", .cpu_limit = "", .memory_limit = ""};
  const Json bare = build_copy_job(backup_request(), settings);
  EXPECT_FALSE(
      bare.at("spec").at("template").at("spec").at("containers").at(0).contains("resources"));
}

TEST(CopyJob, CarriesThePlatformSettingsWhenGiven) {
  CopyJobSettings settings;
  settings.image = "registry.local/rsync:1";
  settings.active_deadline_seconds = 3600;
  settings.resources = {
      .cpu_request = "250m", .memory_request = "256Mi", .cpu_limit = "1", .memory_limit = "256Mi"};
  settings.security_context = {{"readOnlyRootFilesystem", true}};
  settings.pod_security_context = {{"runAsUser", 0}};
  settings.node_selector = {{"disk", "ssd"}};
  settings.tolerations = Json::array({{{"key", "storage"}, {"operator", "Exists"}}});
  const Json job = build_copy_job(backup_request(), settings);
  EXPECT_EQ(job.at("spec").at("activeDeadlineSeconds"), 3600);
  const Json& pod = job.at("spec").at("template").at("spec");
  const Json& c = pod.at("containers").at(0);
  EXPECT_EQ(c.at("image"), "registry.local/rsync:1");
  EXPECT_EQ(c.at("resources"), Json::parse(R"({"requests":{"cpu":"250m","memory":"256Mi"},
                                              "limits":{"cpu":"1","memory":"256Mi"}})"));
  EXPECT_EQ(c.at("securityContext"), settings.security_context);
  EXPECT_EQ(pod.at("securityContext"), settings.pod_security_context);
  EXPECT_EQ(pod.at("nodeSelector"), settings.node_selector);
  EXPECT_EQ(pod.at("tolerations"), settings.tolerations);
}

TEST(CopyJob, KeepsLabelValuesValidForLongStatefulSetNames) {
  CopyJobRequest request = backup_request();
  request.statefulset = std::string(253, 'w');
  const Json job = build_copy_job(request, CopyJobSettings{});
  const std::string label = job.at("metadata").at("labels").at("stsresize.dev/statefulset");
  EXPECT_LE(label.size(), 63u);
  EXPECT_NE(label, request.statefulset);
  EXPECT_EQ(job.at("metadata").at("annotations").at("stsresize.dev/statefulset"),
            request.statefulset);
}

TEST(CopyJob, ScriptQuotesEveryRsyncFlag) {
  CopyJobSettings settings;
  settings.rsync_flags = {"-a", "--exclude=it's here", "--bwlimit=10m"};
  const std::string script = copy_script(settings);
  EXPECT_NE(script.find("rsync --info=progress2 '-a' '--exclude=it'\\''s here' '--bwlimit=10m' "
                        "/source/ /destination/"),
            std::string::npos)
      << script;
  EXPECT_EQ(script.rfind("set -eu", 0), 0u) << "must start with set -eu";
}

// ---------------------------------------------------------------------------------------------
// Running the real script: on the host's /bin/sh (dash) and under busybox, inside bubblewrap
// with the Job's paths, exactly as the local node simulator runs it.

// FIPS 180-4 SHA-256, written here so the expected digest does not come from the tools the
// script uses.
class Sha256 {
 public:
  void update(std::string_view data) {
    for (unsigned char c : data) {
      block_[block_len_++] = c;
      if (block_len_ == 64) {
        compress();
        block_len_ = 0;
      }
    }
    length_ += data.size();
  }
  std::string hex() {
    const std::uint64_t bits = length_ * 8;
    update(std::string_view{"\x80", 1});
    while (block_len_ != 56) update(std::string_view{"\0", 1});
    for (int i = 7; i >= 0; --i) block_[block_len_++] = static_cast<unsigned char>(bits >> (8 * i));
    compress();
    std::string out;
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::uint32_t word : h_) {
      for (int i = 28; i >= 0; i -= 4) out += kHex[(word >> i) & 0xf];
    }
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress() {
    static constexpr std::array<std::uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::array<std::uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i) {
      w[i] = (std::uint32_t{block_[4 * i]} << 24) | (std::uint32_t{block_[4 * i + 1]} << 16) |
             (std::uint32_t{block_[4 * i + 2]} << 8) | std::uint32_t{block_[4 * i + 3]};
    }
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = h_;
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 =
          (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    const std::array<std::uint32_t, 8> add = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) h_[i] += add[i];
  }

  std::array<std::uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t block_len_ = 0;
  std::uint64_t length_ = 0;
};

std::string sha256(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

TEST(CopyJobTestSupport, Sha256MatchesTheStandardTestVectors) {
  EXPECT_EQ(sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& path, std::string_view content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << content;
}

enum class Tool { Gnu, Busybox };
// Which program hashes: sha256sum (GNU's or busybox's), or OpenSSL where the image has it.
enum class Digest { Sha256sum, OpenSsl };

// The summary the script must produce, computed from the files themselves: sha256sum lines
// ("<hex>  ./<path>"; GNU escapes names holding '\' or a newline behind a leading '\', busybox
// prints them raw, OpenSSL 3 escapes only names holding a newline), split into lines, sorted
// bytewise, hashed.
TreeSummary expected_summary(const fs::path& root, Tool tool, Digest digest = Digest::Sha256sum) {
  TreeSummary out;
  std::string listing;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_symlink() || !entry.is_regular_file()) continue;
    const std::string content = read_file(entry.path());
    ++out.files;
    out.bytes += static_cast<std::int64_t>(content.size());
    const std::string name = "./" + fs::relative(entry.path(), root).string();
    const bool escape = digest == Digest::OpenSsl
                            ? name.find('\n') != std::string::npos
                            : tool == Tool::Gnu && name.find_first_of("\\\n") != std::string::npos;
    std::string printed;
    for (char c : name) {
      if (escape && c == '\\' && digest == Digest::Sha256sum) {
        printed += "\\\\";
      } else if (escape && c == '\n') {
        printed += "\\n";
      } else {
        printed += c;
      }
    }
    listing += (escape ? "\\" : "") + sha256(content) + "  " + printed + "\n";
  }
  std::vector<std::string> lines;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  std::ranges::sort(lines);
  std::string sorted;
  for (const std::string& line : lines) sorted += line;
  out.digest = sha256(sorted);
  return out;
}

// Everything under root: relative path -> kind and content (symlinks by target).
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(entry.path(), root).string();
    if (entry.is_symlink()) {
      out[rel] = "link:" + fs::read_symlink(entry.path()).string();
    } else if (entry.is_directory()) {
      out[rel] = "dir";
    } else if (entry.is_regular_file()) {
      out[rel] = "file:" + read_file(entry.path());
    } else {
      out[rel] = "other";
    }
  }
  return out;
}

std::vector<std::string> busybox_applets() {
  std::vector<std::string> out;
  FILE* list = popen("/usr/bin/busybox --list", "r");
  if (list == nullptr) return out;
  std::string current;
  for (int c = fgetc(list); c != EOF; c = fgetc(list)) {
    if (c == '\n') {
      if (!current.empty()) out.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(c);
    }
  }
  pclose(list);
  return out;
}

struct RunResult {
  int exit_code = -1;
  std::string output;
  std::string termination_message;
};

class CopyScriptRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "bubblewrap is not installed";
    char pattern[] = "/tmp/stsresize-copy-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    source_ = dir_ / "source";
    destination_ = dir_ / "destination";
    fs::create_directories(source_);
    fs::create_directories(destination_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void populate_awkward_tree() {
    write_file(source_ / "plain.txt", "hello\n");
    write_file(source_ / "with space.txt", "spaces in the name");
    write_file(source_ / "new\nline", "a newline in the name");
    write_file(source_ / "back\\slash", "a backslash in the name");
    write_file(source_ / "empty", "");
    write_file(source_ / ".hidden", "hidden");
    std::string binary;
    for (int i = 0; i < 200000; ++i) binary += static_cast<char>((i * 7919) % 256);
    write_file(source_ / "nested" / "dir" / "deep.bin", binary);
    fs::create_directories(source_ / "empty-dir");
    fs::create_symlink("plain.txt", source_ / "link");
  }

  // shims: a directory whose programs come first on PATH (tools that fail on purpose).
  // digest: Sha256sum hides the host's openssl from the script (a shim that is not there), as
  // in an image without OpenSSL.
  RunResult run(const std::string& script, Tool tool, bool destination_read_only = false,
                fs::path shims = {}, Digest digest = Digest::Sha256sum) {
    if (digest == Digest::Sha256sum) {
      if (shims.empty()) {
        shims = dir_ / "shims";
        fs::remove_all(shims);
        fs::create_directories(shims);
      }
      write_file(shims / "openssl", "#!/bin/sh\nexit 127\n");
      fs::permissions(shims / "openssl", fs::perms::owner_all);
    }
    const fs::path log = dir_ / "termination-log";
    const fs::path output = dir_ / "output";
    write_file(log, "");
    std::vector<std::string> args = {"bwrap", "--die-with-parent", "--ro-bind", "/usr", "/usr"};
    for (const char* top : {"/bin", "/sbin", "/lib", "/lib64", "/lib32"}) {
      if (fs::is_symlink(top)) {
        args.insert(args.end(), {"--symlink", fs::read_symlink(top).string(), top});
      } else if (fs::exists(top)) {
        args.insert(args.end(), {"--ro-bind", top, top});
      }
    }
    args.insert(args.end(), {"--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc",
                             "--tmpfs", "/tmp", "--ro-bind", source_.string(), "/source",
                             destination_read_only ? "--ro-bind" : "--bind", destination_.string(),
                             "/destination", "--bind", log.string(), "/dev/termination-log"});
    std::string shell = "/bin/sh";
    std::string path_head;
    if (!shims.empty()) {
      args.insert(args.end(), {"--ro-bind", shims.string(), "/shims"});
      path_head = "/shims:";
    }
    if (tool == Tool::Busybox) {
      const fs::path applets = dir_ / "busybox";
      fs::create_directories(applets);
      // Every applet busybox has, so nothing the script calls silently falls back to GNU.
      for (const std::string& applet : busybox_applets()) {
        if (!fs::exists(applets / applet)) fs::create_symlink("/usr/bin/busybox", applets / applet);
      }
      args.insert(args.end(), {"--ro-bind", applets.string(), "/busybox", "--setenv", "PATH",
                               path_head + "/busybox:/usr/bin:/bin"});
      shell = "/busybox/sh";
    } else {
      args.insert(args.end(), {"--setenv", "PATH", path_head + "/usr/bin:/bin"});
    }
    args.insert(args.end(), {shell, "-c", script});

    RunResult result;
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.output = read_file(output);
    result.termination_message = read_file(log);
    return result;
  }

  bool busybox_available() const { return access("/usr/bin/busybox", X_OK) == 0; }

  std::vector<Tool> tools() const {
    if (busybox_available()) return {Tool::Gnu, Tool::Busybox};
    return {Tool::Gnu};
  }

  // A directory of one program, `name`, for run(..., shims): a POSIX sh script running `body`,
  // in which "$real" is the tool it stands in for (GNU's, or busybox's applet).
  fs::path shim(const std::string& name, Tool tool, const std::string& body) {
    const fs::path shims = dir_ / "shims";
    fs::remove_all(shims);
    fs::create_directories(shims);
    return add_shim(name, tool, body);
  }
  // One more program in shim()'s directory. openssl, rsync: the host's under busybox too.
  fs::path add_shim(const std::string& name, Tool tool, const std::string& body) {
    const fs::path shims = dir_ / "shims";
    fs::create_directories(shims);
    const bool host = tool == Tool::Gnu || name == "openssl" || name == "rsync";
    const std::string real = host ? "/usr/bin/" + name : "/usr/bin/busybox " + name;
    write_file(shims / name, "#!/bin/sh\nreal=\"" + real + "\"\n" + body);
    fs::permissions(shims / name, fs::perms::owner_all);
    return shims;
  }
  bool openssl_available() const { return access("/usr/bin/openssl", X_OK) == 0; }

  // Copy, then check everything the controller relies on.
  void expect_faithful_copy(Tool tool) {
    populate_awkward_tree();
    const RunResult r = run(copy_script(CopyJobSettings{}), tool);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(snapshot(destination_), snapshot(source_));
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << summary.error() << "\n" << r.output;
    EXPECT_TRUE(summary->matches());
    const TreeSummary expected = expected_summary(source_, tool);
    EXPECT_EQ(expected.files, 7);  // the symlink and directories are not regular files
    EXPECT_EQ(summary->source, expected);
    EXPECT_EQ(summary->destination, expected);
    EXPECT_EQ(summary->hashed, 2 * expected.bytes);  // no manifest: both trees read whole
  }

  fs::path dir_;
  fs::path source_;
  fs::path destination_;
};

TEST_F(CopyScriptRun, CopiesAnAwkwardTreeFaithfullyUnderTheHostShell) {
  expect_faithful_copy(Tool::Gnu);
}

TEST_F(CopyScriptRun, CopiesAnAwkwardTreeFaithfullyUnderBusybox) {
  if (!busybox_available()) GTEST_SKIP() << "busybox is not installed";
  expect_faithful_copy(Tool::Busybox);
}

TEST_F(CopyScriptRun, SummarisesEmptyVolumes) {
  const RunResult r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = parse_copy_summary(r.termination_message);
  ASSERT_TRUE(summary.has_value()) << summary.error();
  const TreeSummary empty{0, 0, sha256("")};
  EXPECT_EQ(summary->source, empty);
  EXPECT_EQ(summary->destination, empty);
}

TEST_F(CopyScriptRun, DeletesWhatTheDestinationHadThatTheSourceDoesNot) {
  populate_awkward_tree();
  write_file(destination_ / "stale" / "leftover", "from an earlier attempt");
  const RunResult r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(destination_ / "stale"));
  EXPECT_EQ(snapshot(destination_), snapshot(source_));
}

TEST_F(CopyScriptRun, DetectsADestinationCorruptedBehindRsyncsBack) {
  populate_awkward_tree();
  ASSERT_EQ(run(copy_script(CopyJobSettings{}), Tool::Gnu).exit_code, 0);
  // Same size and mtime: rsync's quick check skips the file, only the summary can notice.
  const fs::path victim = destination_ / "nested" / "dir" / "deep.bin";
  const auto mtime = fs::last_write_time(victim);
  std::string content = read_file(victim);
  content[1000] = static_cast<char>(content[1000] ^ 0x01);
  write_file(victim, content);
  fs::last_write_time(victim, mtime);

  const RunResult r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto summary = parse_copy_summary(r.termination_message);
  ASSERT_TRUE(summary.has_value()) << summary.error();
  EXPECT_FALSE(summary->matches());
  EXPECT_EQ(summary->source, expected_summary(source_, Tool::Gnu));
  EXPECT_EQ(summary->destination, expected_summary(destination_, Tool::Gnu));
  EXPECT_EQ(summary->destination.files, summary->source.files);
  EXPECT_EQ(summary->destination.bytes, summary->source.bytes);
  EXPECT_NE(summary->destination.digest, summary->source.digest);
}

TEST_F(CopyScriptRun, ReportsRsyncFailureWithoutASummary) {
  populate_awkward_tree();
  const RunResult r = run(copy_script(CopyJobSettings{}), Tool::Gnu,
                          /*destination_read_only=*/true);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.termination_message,
            "stsresize-copy: rsync failed with exit code " + std::to_string(r.exit_code));
  EXPECT_FALSE(parse_copy_summary(r.termination_message).has_value());
}

// The ways a stage of a summary can fail. Without pipefail a pipeline reports its last
// command's status only, and the same failure on both sides drops the same lines from both:
// each of these must fail the Job, never read as a match.
struct StageFailure {
  std::string tool;
  std::string body;
  std::string what;
};

// Runs the tool without its last argument (a file of the list), then fails: a stage that did
// part of its work.
constexpr std::string_view kDropLastFileAndFail = R"(n=$#
i=0
for a; do
  i=$((i + 1))
  [ "$i" -eq 1 ] && set --
  [ "$i" -lt "$n" ] && set -- "$@" "$a"
done
$real "$@"
exit 1
)";

std::vector<StageFailure> stage_failures() {
  std::vector<StageFailure> out;
  for (const char* tool : {"find", "xargs", "stat", "sha256sum", "sort"}) {
    // As the shell reports a program missing from the image.
    out.push_back({tool, "exit 127\n", std::string{tool} + " missing"});
  }
  // A directory it could not read: the rest listed, and a failure.
  out.push_back({"find", "$real . -type f ! -path './nested/*' -print0\nexit 1\n", "find partial"});
  out.push_back({"stat", std::string{kDropLastFileAndFail}, "stat partial"});
  // The hashing of the files (with arguments, under xargs) fails partway; the digest of the
  // sorted lines (sha256sum reading its input) works.
  out.push_back({"sha256sum",
                 "if [ \"$#\" -eq 0 ]; then exec $real; fi\n" + std::string{kDropLastFileAndFail},
                 "sha256sum of the files partial"});
  // Out of space after one line ("sort -o OUTPUT INPUT", as the script calls it).
  out.push_back({"sort",
                 "$real \"$@\"\nhead -n 1 \"$2\" > \"$2.part\"\nmv \"$2.part\" \"$2\"\n"
                 "exit 2\n",
                 "sort partial"});
  return out;
}

TEST_F(CopyScriptRun, AStageFailingOnBothSidesIsNeverAMatch) {
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    for (const StageFailure& failure : stage_failures()) {
      SCOPED_TRACE((tool == Tool::Gnu ? "host shell, " : "busybox, ") + failure.what);
      const RunResult r =
          run(copy_script(CopyJobSettings{}), tool, false, shim(failure.tool, tool, failure.body));
      EXPECT_EQ(r.exit_code, 4) << r.output;
      EXPECT_TRUE(r.termination_message.starts_with("stsresize-copy: summarising failed"))
          << r.termination_message;
      EXPECT_FALSE(parse_copy_summary(r.termination_message).has_value());
    }
  }
}

TEST_F(CopyScriptRun, AStageFailingOnOneSideIsNeverAMatch) {
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    for (const std::string side : {"source", "destination"}) {
      SCOPED_TRACE((tool == Tool::Gnu ? "host shell, " : "busybox, ") + side);
      // Fails reading the files of one side only, as a volume with a bad block would.
      const fs::path shims = shim("sha256sum", tool,
                                  "case $(pwd) in /" + side + "*) [ \"$#\" -gt 0 ] && exit 1 ;; " +
                                      "esac\nexec $real \"$@\"\n");
      const RunResult r = run(copy_script(CopyJobSettings{}), tool, false, shims);
      EXPECT_EQ(r.exit_code, 4) << r.output;
      // xargs reports a command that failed as 123.
      EXPECT_EQ(r.termination_message,
                side == "source"
                    ? "stsresize-copy: summarising failed: exit code 123 on /source, 0 on "
                      "/destination"
                    : "stsresize-copy: summarising failed: exit code 0 on /source, 123 on "
                      "/destination")
          << r.output;
      EXPECT_FALSE(parse_copy_summary(r.termination_message).has_value());
    }
  }
}

TEST_F(CopyScriptRun, SummarisesBothTreesAtOnce) {
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    // Hashing on either side waits until the other side's hashing has begun too (a rendezvous
    // in the Job's /tmp): summarised one after the other, the first side gives up and fails.
    const fs::path shims = shim("sha256sum", tool, R"(if [ "$#" -gt 0 ]; then
  side=$(pwd)
  : > "/tmp/hashing.${side#/}"
  i=0
  until [ -e /tmp/hashing.source ] && [ -e /tmp/hashing.destination ]; do
    i=$((i + 1))
    [ "$i" -le 300 ] || exit 1
    sleep 0.1
  done
fi
exec $real "$@"
)");
    const RunResult r = run(copy_script(CopyJobSettings{}), tool, false, shims);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << summary.error();
    EXPECT_TRUE(summary->matches());
    EXPECT_EQ(summary->source, expected_summary(source_, tool));
  }
}

TEST_F(CopyScriptRun, HashesWithOpenSslWhereTheImageHasIt) {
  if (!openssl_available()) GTEST_SKIP() << "openssl is not installed";
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    const RunResult r = run(copy_script(CopyJobSettings{}), tool, false, {}, Digest::OpenSsl);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(snapshot(destination_), snapshot(source_));
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << summary.error() << "\n" << r.output;
    EXPECT_TRUE(summary->matches());
    // OpenSSL's lines, in sha256sum's shape: the same digest as sha256sum's for every name but
    // those sha256sum escapes differently (here GNU's backslash), which tells the tools apart.
    EXPECT_EQ(summary->source, expected_summary(source_, tool, Digest::OpenSsl));
    EXPECT_EQ(summary->destination, expected_summary(destination_, tool, Digest::OpenSsl));
    fs::remove_all(destination_);
    fs::create_directories(destination_);
  }
  EXPECT_NE(expected_summary(source_, Tool::Gnu, Digest::OpenSsl).digest,
            expected_summary(source_, Tool::Gnu, Digest::Sha256sum).digest);
}

TEST_F(CopyScriptRun, AnOpenSslStageFailingIsNeverAMatch) {
  if (!openssl_available()) GTEST_SKIP() << "openssl is not installed";
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    // Hashing the files fails partway on both sides (digest of the sorted lines still works).
    shim("openssl", tool,
         "case \"$*\" in version) exec $real version ;; esac\n"
         "if [ \"$#\" -le 3 ]; then exec $real \"$@\"; fi\n" +
             std::string{kDropLastFileAndFail});
    RunResult r = run(copy_script(CopyJobSettings{}), tool, false, dir_ / "shims", Digest::OpenSsl);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_FALSE(parse_copy_summary(r.termination_message).has_value());
    // Only the destination's files (a bad block there).
    shim("openssl", tool,
         "case $(pwd) in /destination*) [ \"$#\" -gt 3 ] && exit 1 ;; esac\n"
         "exec $real \"$@\"\n");
    r = run(copy_script(CopyJobSettings{}), tool, false, dir_ / "shims", Digest::OpenSsl);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_EQ(r.termination_message,
              "stsresize-copy: summarising failed: exit code 0 on /source, 123 on /destination")
        << r.output;
    // The turning of OpenSSL's lines into sha256sum's fails.
    shim("sed", tool, "exit 2\n");
    r = run(copy_script(CopyJobSettings{}), tool, false, dir_ / "shims", Digest::OpenSsl);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_FALSE(parse_copy_summary(r.termination_message).has_value());
    fs::remove_all(destination_);
    fs::create_directories(destination_);
  }
}

TEST_F(CopyScriptRun, SummarisesTheSourceWhileRsyncCopiesIt) {
  populate_awkward_tree();
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    // rsync starts only once the source's summary has begun listing it: summarised after the
    // copy, as it was, rsync gives up and the copy fails.
    shim("find", tool,
         "case $(pwd) in /source*) : > /tmp/listing.source ;; esac\nexec $real \"$@\"\n");
    add_shim("rsync", tool, R"(i=0
until [ -e /tmp/listing.source ]; do
  i=$((i + 1))
  [ "$i" -le 300 ] || exit 1
  sleep 0.1
done
exec $real "$@"
)");
    const RunResult r = run(copy_script(CopyJobSettings{}), tool, false, dir_ / "shims");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << summary.error();
    EXPECT_TRUE(summary->matches());
    EXPECT_EQ(summary->source, expected_summary(source_, tool));
    fs::remove_all(destination_);
    fs::create_directories(destination_);
  }
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

TEST(PreCopyResult, ParsesWhatItFormatsAndRefusesAnythingElse) {
  const PreCopyResult result{2, 1048576};
  EXPECT_EQ(format_pre_copy_result(result), R"({"v":1,"passes":2,"bytes":1048576})");
  EXPECT_EQ(parse_pre_copy_result(format_pre_copy_result(result)), result);
  for (const std::string bad :
       {"", "stsresize-precopy: rsync failed with exit code 23 in pass 1",
        R"({"v":2,"passes":1,"bytes":0})", R"({"v":1,"passes":0,"bytes":0})",
        R"({"v":1,"passes":4,"bytes":0})", R"({"v":1,"passes":1,"bytes":-1})",
        R"({"v":1,"passes":1})", R"({"v":1,"passes":1,"bytes":0,"x":1})"}) {
    EXPECT_FALSE(parse_pre_copy_result(bad)) << bad;
  }
}

TEST(PreCopyJob, RunsThePreCopyBesideTheReplicaNeverRetriedAndWithoutAFitCheck) {
  CopyJobRequest request{.ns = "shop",
                         .job_name = "data-web-0-stsresize-precopy",
                         .source_claim = "data-web-0",
                         .destination_claim = "data-web-0-stsresize-bak",
                         .operation_id = "web-1",
                         .statefulset = "web",
                         .purpose = "pre-copy",
                         .destination_bytes = 1024};
  CopyJobSettings settings;
  settings.tolerations = Json::array({{{"key", "copy"}, {"operator", "Exists"}}});
  const Json job = build_pre_copy_job(
      request, Placement{"node-2", Json::array({{{"key", "app"}, {"operator", "Exists"}}})},
      settings);
  const Json& pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_EQ(pod["containers"][0]["command"][2], pre_copy_script(settings));
  EXPECT_FALSE(pod["containers"][0].contains("env"));  // no STSRESIZE_DESTINATION_BYTES
  EXPECT_EQ(pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
               ["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            Json::array({"node-2"}));
  EXPECT_EQ(pod["tolerations"].size(), 2u);
  EXPECT_EQ(pod["volumes"][0]["persistentVolumeClaim"]["readOnly"], true);
  // Without a node (no replica runs): the settings' nodeSelector, as for a copy.
  settings.node_selector = {{"disk", "ssd"}};
  const Json placed = build_pre_copy_job(request, Placement{}, settings);
  EXPECT_EQ(placed["spec"]["template"]["spec"]["nodeSelector"], settings.node_selector);
  EXPECT_FALSE(placed["spec"]["template"]["spec"].contains("affinity"));
}

using PreCopyScriptRun = CopyScriptRun;

// Where the pre-copy leaves its manifests for the copy after it.
const fs::path kManifests = ".stsresize-pre-copy";

// The first pass copies everything, a second finds nothing left to move: the tree is copied,
// and the result says two passes and the bytes of the files.
TEST_F(PreCopyScriptRun, CopiesTheTreeInPassesAndReportsThem) {
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    fs::remove_all(source_);
    fs::remove_all(destination_);
    fs::create_directories(source_);
    fs::create_directories(destination_);
    populate_awkward_tree();
    const RunResult r = run(pre_copy_script(CopyJobSettings{}), tool);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Its manifests besides the copy: empty, as names with '\' or a newline are in the tree.
    EXPECT_EQ(read_file(destination_ / kManifests / "format"), "stsresize-manifest v1\n");
    EXPECT_EQ(read_file(destination_ / kManifests / "source"), "");
    fs::remove_all(destination_ / kManifests);
    EXPECT_EQ(snapshot(destination_), snapshot(source_));
    const auto result = parse_pre_copy_result(r.termination_message);
    ASSERT_TRUE(result) << result.error() << "\n" << r.output;
    EXPECT_EQ(result->passes, 2);
    std::int64_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(source_)) {
      if (entry.is_regular_file() && !entry.is_symlink()) {
        files += static_cast<std::int64_t>(entry.file_size());
      }
    }
    EXPECT_GE(result->bytes, files);
    EXPECT_LE(result->bytes, files + 64);  // and the symlink's target, at most
    EXPECT_NE(r.output.find("stsresize-precopy: pass 2"), std::string::npos) << r.output;
  }
}

// A source whose writes outpace the copy (every pass moves as much as the first) still ends:
// after kMaxPreCopyPasses passes.
TEST_F(PreCopyScriptRun, APreCopyThatCannotCatchUpEndsAfterItsLastPass) {
  const fs::path shims =
      shim("rsync", Tool::Gnu, "echo 'Total transferred file size: 4,096 bytes'\nexit 0\n");
  const RunResult r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu, false, shims);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(parse_pre_copy_result(r.termination_message),
            (PreCopyResult{kMaxPreCopyPasses, 4096 * kMaxPreCopyPasses}));
}

// Files that vanish while rsync reads them (exit 24) are what a running application does; any
// other rsync failure fails the pre-copy with its status, and no result.
TEST_F(PreCopyScriptRun, VanishedFilesAreNoFailureAndAnyOtherRsyncFailureIs) {
  fs::path shims =
      shim("rsync", Tool::Gnu, "echo 'Total transferred file size: 0 bytes'\nexit 24\n");
  RunResult r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu, false, shims);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(parse_pre_copy_result(r.termination_message), (PreCopyResult{1, 0}));

  shims = shim("rsync", Tool::Gnu, "echo 'Total transferred file size: 10 bytes'\nexit 23\n");
  r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu, false, shims);
  EXPECT_EQ(r.exit_code, 23) << r.output;
  EXPECT_EQ(r.termination_message, "stsresize-precopy: rsync failed with exit code 23 in pass 1");

  shims = shim("rsync", Tool::Gnu, "echo 'no statistics'\nexit 0\n");
  r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu, false, shims);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_FALSE(parse_pre_copy_result(r.termination_message));
}

// A file written just before the pre-copy (it may change again within the same second, after
// a pass copied it) gets time 0 on the destination, so that the copy with the replicas stopped
// copies it again; an older one keeps its own time.
TEST_F(PreCopyScriptRun, FilesWrittenJustBeforeThePreCopyAreMarkedForTheNextCopy) {
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    fs::remove_all(destination_);
    fs::create_directories(destination_);
    write_file(source_ / "old.txt", "written an hour ago");
    write_file(source_ / "new.txt", "written just now");
    const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours{1};
    fs::last_write_time(source_ / "old.txt", hour_ago);
    const RunResult r = run(pre_copy_script(CopyJobSettings{}), tool);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_file(destination_ / "new.txt"), "written just now");
    struct stat status {};
    ASSERT_EQ(stat((destination_ / "new.txt").c_str(), &status), 0);
    EXPECT_EQ(status.st_mtime, 0);
    ASSERT_EQ(stat((destination_ / "old.txt").c_str(), &status), 0);
    struct stat source {};
    ASSERT_EQ(stat((source_ / "old.txt").c_str(), &source), 0);
    EXPECT_EQ(status.st_mtime, source.st_mtime);
  }
}

// Files written an hour ago, as most of a volume is: the pre-copy does not mark them for the
// next copy, whose rsync then passes over them (same size and time).
void age_files(const fs::path& root) {
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours{1};
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && !entry.is_symlink()) fs::last_write_time(entry, hour_ago);
  }
}

// A file the application changed in the same second as the first pass copied it (here: that
// pass's copy made stale behind its back, size and time kept) passes for unchanged in the second
// pass, which begins more than 3 s later. It is marked all the same (its time is from 3 s before
// the first pass on), and the copy after the pre-copy copies it again and proves the copy.
TEST_F(PreCopyScriptRun, AFileChangedInTheSecondAnEarlierPassCopiedItIsMarked) {
  write_file(source_ / "hot.txt", "fresh");
  write_file(source_ / "cold.txt", "written an hour ago");
  age_files(source_);
  write_file(source_ / "hot.txt", "fresh");  // its time: now
  const fs::path shims = shim("rsync", Tool::Gnu,
                              "\"$real\" \"$@\"; status=$?\n"
                              "if [ ! -e /tmp/passed ]; then\n"
                              "  : > /tmp/passed\n"
                              "  printf stale > /destination/hot.txt\n"
                              "  touch -d \"@$(stat -c %Y /source/hot.txt)\" /destination/hot.txt\n"
                              "  sleep 4\n"
                              "fi\n"
                              "exit $status\n");
  RunResult r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu, false, shims);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(parse_pre_copy_result(r.termination_message)->passes, 2) << r.output;
  struct stat status {};
  ASSERT_EQ(stat((destination_ / "hot.txt").c_str(), &status), 0);
  EXPECT_EQ(status.st_mtime, 0);
  ASSERT_EQ(stat((destination_ / "cold.txt").c_str(), &status), 0);
  EXPECT_NE(status.st_mtime, 0);
  r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_file(destination_ / "hot.txt"), "fresh");
}

// The work with the replicas stopped grows with what changed, not with the volume: after a
// pre-copy, the copy reads again only the files changed since (on both sides), proves the same
// summaries as a copy that reads everything, and leaves no manifest in the destination.
TEST_F(PreCopyScriptRun, TheCopyAfterItReadsOnlyWhatChangedSince) {
  std::string block(256 * 1024, 'x');
  write_file(source_ / "a.bin", block);
  write_file(source_ / "nested" / "dir" / "b.bin", block + block);
  write_file(source_ / "with space.txt", "spaces in the name");
  write_file(source_ / "empty", "");
  fs::create_symlink("a.bin", source_ / "link");
  age_files(source_);
  // Files are recorded only once their ctime is 2 s old: as a volume's data mostly is.
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  int round = 0;
  for (const Tool tool : tools()) {
    SCOPED_TRACE(tool == Tool::Gnu ? "host shell" : "busybox");
    fs::remove_all(destination_);
    fs::create_directories(destination_);
    RunResult r = run(pre_copy_script(CopyJobSettings{}), tool);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(read_file(destination_ / kManifests / "format"), "stsresize-manifest v1\n");
    // Every file of each tree (the one the last round rewrote too: that was 3 s ago).
    const auto lines = [](const std::string& text) { return std::ranges::count(text, '\n'); };
    EXPECT_EQ(lines(read_file(destination_ / kManifests / "source")), 4) << r.output;
    EXPECT_EQ(lines(read_file(destination_ / kManifests / "destination")), 4) << r.output;

    // The application writes on after the pre-copy: a new file and one rewritten.
    const std::string changed = "rewritten in round " + std::to_string(round);
    write_file(source_ / "with space.txt", changed);
    write_file(source_ / "new.txt", "new");
    r = run(copy_script(CopyJobSettings{}), tool);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(fs::exists(destination_ / kManifests));
    EXPECT_EQ(snapshot(destination_), snapshot(source_));
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << summary.error() << "\n" << r.output;
    EXPECT_TRUE(summary->matches());
    EXPECT_EQ(summary->source, expected_summary(source_, tool));
    // Both sides of the two changed files, nothing else.
    EXPECT_EQ(summary->hashed, 2 * static_cast<std::int64_t>(changed.size() + 3)) << r.output;
    fs::remove(source_ / "new.txt");
    ++round;
  }
}

// What the manifests never hide: a file changed behind rsync's back with its size and mtime
// put back (rsync's quick check passes it over), on either side, is read again (its ctime
// moved) and the summaries differ: no copy is proven that is not one.
TEST_F(PreCopyScriptRun, AFileChangedWithItsSizeAndTimePutBackIsReadAgain) {
  write_file(source_ / "a.bin", std::string(4096, 'a'));
  write_file(source_ / "b.bin", std::string(4096, 'b'));
  age_files(source_);
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  const auto rewrite_keeping_time = [](const fs::path& file, char fill) {
    const auto time = fs::last_write_time(file);
    write_file(file, std::string(4096, fill));
    fs::last_write_time(file, time);
  };
  for (const std::string side : {"source", "destination"}) {
    SCOPED_TRACE(side);
    fs::remove_all(destination_);
    fs::create_directories(destination_);
    RunResult r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_NE(read_file(destination_ / kManifests / "destination"), "");
    rewrite_keeping_time((side == "source" ? source_ : destination_) / "a.bin", 'z');
    r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
    EXPECT_EQ(r.exit_code, 3) << r.output;
    const auto summary = parse_copy_summary(r.termination_message);
    ASSERT_TRUE(summary.has_value()) << r.output;
    EXPECT_FALSE(summary->matches());
    EXPECT_EQ(summary->hashed, 4096) << r.output;  // that side's file, read again
    if (side == "source") rewrite_keeping_time(source_ / "a.bin", 'a');
  }
}

// A source that has its own .stsresize-pre-copy keeps it: the pre-copy writes no manifest over
// the copy of it, and the copy reads everything and copies it like any other directory.
TEST_F(PreCopyScriptRun, TheApplicationsOwnEntryOfTheManifestsNameIsData) {
  write_file(source_ / kManifests / "format", "the application's\n");
  write_file(source_ / kManifests / "source", "its data");
  write_file(source_ / "a.bin", "a");
  RunResult r = run(pre_copy_script(CopyJobSettings{}), Tool::Gnu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(snapshot(destination_), snapshot(source_));
  r = run(copy_script(CopyJobSettings{}), Tool::Gnu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(snapshot(destination_), snapshot(source_));
  const auto summary = parse_copy_summary(r.termination_message);
  ASSERT_TRUE(summary.has_value()) << r.output;
  EXPECT_EQ(summary->hashed, 2 * summary->source.bytes);
}

}  // namespace
}  // namespace stsresize
