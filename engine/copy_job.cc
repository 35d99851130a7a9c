#include "engine/copy_job.h"

#include <algorithm>
#include <limits>

#include "engine/naming.h"
#include "engine/vocabulary.h"

namespace stsresize {
namespace {

// Single-quoted for POSIX sh: the only character that needs care inside '...' is ' itself.
std::string shell_quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

// The script is kept to what busybox ash (the Alpine image) and dash/bash (the local node
// simulator runs the command on the host) share: no pipefail, no arrays, no `local`.
//
// Why the summary cannot be fooled by a failing stage even without pipefail: no stage of a
// summary is a pipeline whose status would be lost. Each writes a file in the side's scratch
// directory (/tmp, an emptyDir) and its own exit status is checked, so a stage that fails, or a
// tool missing from the image, fails that side's summary instead of dropping lines from it — a
// failure on both sides alike (sort spilling to a full /tmp, a missing find) would otherwise
// drop the same lines on both and read as a match. A summary that failed is reported as such
// and never compared. Failures only ever turn into "not proven copied".
//
// Digest lines are the tool's own output, so their exact bytes depend on the implementation
// for names containing '\', newline (and, for GNU coreutils 9, carriage return): GNU escapes
// them with a leading '\', busybox prints them raw, OpenSSL 3 escapes a newline only. Both
// sides are always summarised by the same tool in the same container, so the comparison is
// sound; a busybox digest of a name
// containing a newline followed by a forged "<64 hex>  ./" line is the one theoretical
// ambiguity, and it needs a deliberately crafted file name on the source.
constexpr std::string_view kScriptIntro = R"sh(set -eu
# stsresize copy Job: copy /source/ to /destination/, then prove it (see engine/copy_job.h).
)sh";

// Both Jobs' digest lines (the pre-copy's manifests, the copy's summaries), made alike.
constexpr std::string_view kDigestLines =
    R"sh(# The sha256 of each file, as sha256sum prints it ("<hex>  ./path"): OpenSSL's where the image
# has it (it uses the CPU's SHA instructions: four times as fast as coreutils' sha256sum), else
# sha256sum. Both sides of a Job use the same one.
if openssl version > /dev/null 2>&1; then digest_tool=openssl; else digest_tool=sha256sum; fi
# digest_lines NAMES LINES: the digest line of each file NAMES lists (NUL-separated), into LINES;
# on a failure its status, with the lines of the files that were read.
digest_lines() {
  if [ "$digest_tool" = openssl ]; then
    digest_status=0
    xargs -0 -r openssl dgst -sha256 -r < "$1" > "$2.raw" || digest_status=$?
    sed 's/^\(\\\{0,1\}[0-9a-f]\{64\}\) \*/\1  /' "$2.raw" > "$2" || return
    rm -f "$2.raw"
    return "$digest_status"
  else
    xargs -0 -r sha256sum < "$1" > "$2" || return
  fi
}
)sh";

// rsync --info=progress2 rewrites one record in place with '\r'. Written as is, a copy's whole
// progress is one "line" of the log, which `kubectl logs --tail` and the progress reads
// (adapters/controller/copy_progress.h) cannot cut; so each record becomes a line as it comes.
// The tool must not hold it back: busybox tr writes what it reads at once, coreutils tr only
// once its buffer fills (and mawk reads a whole buffer before it splits records), so coreutils
// tr runs with its output unbuffered (stdbuf, from coreutils too) where stdbuf is there.
constexpr std::string_view kProgressLines =
    R"sh(# progress_lines: rsync's progress records from stdin as lines, each as it comes.
progress_lines() {
  if command -v stdbuf > /dev/null 2>&1; then stdbuf -o0 tr '\r' '\n'; else tr '\r' '\n'; fi
}
)sh";

constexpr std::string_view kScriptHead =
    R"sh(# summarise TREE SCRATCH [MANIFEST]: print TREE's summary as one JSON object. Every stage is
# checked on its own (no pipefail in ash/dash); its lists go to the directory SCRATCH (a few
# hundred bytes a file, each removed once read, as sort's own spill files would take).
# With a MANIFEST (the pre-copy's, see manifest below), a file whose inode, size, mtime and
# ctime are those of a MANIFEST line takes that line's digest instead of being read again: the
# work with the replicas stopped grows with what changed since the pre-copy, not with the
# volume. Only for trees without '\', newline or carriage return in any name, whose digest
# lines and stat lines are then one line a file, in the same form. SCRATCH/hashed gets the
# bytes that were read.
summarise() (
  cd "$1" || exit
  find . -type f -print0 > "$2/names" || exit
  xargs -0 -r stat -c %s < "$2/names" > "$2/sizes" || exit
  hashed=
  if [ -n "${3:-}" ] && [ "$(tr -dc '\n\r\\' < "$2/names" | wc -c)" -eq 0 ]; then
    xargs -0 -r stat -c '%i %s %Y %Z %n' < "$2/names" > "$2/stats" || exit
    : > "$2/cached" || exit
    : > "$2/rest" || exit
    awk -v manifest="$3" -v cached="$2/cached" -v rest="$2/rest" '
      FILENAME == manifest { digest[substr($0, 66)] = substr($0, 1, 64); next }
      { name = $0; for (i = 0; i < 4; i++) name = substr(name, index(name, " ") + 1) }
      $0 in digest { print digest[$0] "  " name > cached; next }
      { print name > rest; bytes += $2 }
      END { printf "%.0f\n", bytes }' "$3" "$2/stats" > "$2/hashed" || exit
    hashed=$(cat "$2/hashed") || exit
    tr '\n' '\000' < "$2/rest" > "$2/names" || exit
    digest_lines "$2/names" "$2/lines" || exit
    cat "$2/cached" >> "$2/lines" || exit
    rm -f "$2/stats" "$2/cached" "$2/rest"
  else
    digest_lines "$2/names" "$2/lines" || exit
  fi
  rm -f "$2/names"
  LC_ALL=C sort -o "$2/sorted" "$2/lines" || exit
  rm -f "$2/lines"
  if [ "$digest_tool" = openssl ]; then
    digest=$(openssl dgst -sha256 -r < "$2/sorted") || exit
  else
    digest=$(sha256sum < "$2/sorted") || exit
  fi
  files=0
  bytes=0
  while read -r size; do
    files=$((files + 1))
    bytes=$((bytes + size))
  done < "$2/sizes"
  if [ -z "$hashed" ]; then echo "$bytes" > "$2/hashed" || exit; fi
  printf '{"files":%s,"bytes":%s,"digest":"%s"}' "$files" "$bytes" "${digest%% *}"
)
# A destination too small for the data (a shrink whose source grew since it was measured) fails
# here, before rsync writes anything: exit 5 (see engine/copy_job.h).
if [ -n "${STSRESIZE_DESTINATION_BYTES:-}" ]; then
  need=$(cd /source && du -s -k .)
  need=$((${need%%[!0-9]*} * 1024))
  apparent=$(cd /source && find . -type f -print0 | xargs -0 -r stat -c %s | {
    bytes=0
    while read -r size; do bytes=$((bytes + size)); done
    echo "$bytes"
  })
  if [ "$apparent" -gt "$need" ]; then need=$apparent; fi
  room=$STSRESIZE_DESTINATION_BYTES
  # What the filesystem under /destination can still take (root may use its reserved blocks),
  # plus what rsync --delete may replace there.
  free=$(df -P -k /destination | { read -r header; read -r fs blocks used rest; echo $(((blocks - used) * 1024)); })
  held=$(cd /destination && du -s -k .)
  held=$((${held%%[!0-9]*} * 1024))
  if [ $((free + held)) -lt "$room" ]; then room=$((free + held)); fi
  if [ "$need" -gt "$room" ]; then
    message="stsresize-copy: does not fit: /source holds $need bytes, /destination has room for $room"
    printf '%s' "$message" > /dev/termination-log
    echo "$message" >&2
    exit 5
  fi
fi
scratch=/tmp/stsresize-copy.$$
mkdir "$scratch" "$scratch/source" "$scratch/destination"
# The source is summarised while rsync copies it: nothing else writes to it (the fence), both
# read it (its pages cached for the other), and its hashing overlaps the copy instead of
# following it. The destination's is made once rsync is done.
# The pre-copy's manifests, taken out of /destination before anything reads or copies it (a
# copy tried again finds none and reads everything). A source that has an entry of either name
# keeps it: it is the application's, copied like the rest, and no manifest is used.
source_manifest=
destination_manifest=
if [ -e /source/.stsresize-pre-copy ] || [ -L /source/.stsresize-pre-copy ] ||
  [ -e /source/.stsresize-pre-copy.new ] || [ -L /source/.stsresize-pre-copy.new ]; then
  echo "stsresize-copy: /source has its own .stsresize-pre-copy: no manifest is used"
else
  if [ "$(cat /destination/.stsresize-pre-copy/format 2> /dev/null)" = "stsresize-manifest v1" ] &&
    cp /destination/.stsresize-pre-copy/source "$scratch/source.manifest" 2> /dev/null &&
    cp /destination/.stsresize-pre-copy/destination "$scratch/destination.manifest" 2> /dev/null; then
    source_manifest=$scratch/source.manifest
    destination_manifest=$scratch/destination.manifest
    echo "stsresize-copy: the pre-copy's manifests: files unchanged since it are not read again"
  fi
  rm -rf /destination/.stsresize-pre-copy /destination/.stsresize-pre-copy.new
fi
summarise /source "$scratch/source" "$source_manifest" > "$scratch/source.json" &
source_pid=$!
echo "stsresize-copy: rsync /source/ /destination/, summarising /source meanwhile"
status=0
)sh";

constexpr std::string_view kScriptTail =
    R"sh( /source/ /destination/ || status=$?; echo "$status" > "$scratch/rsync-status"; } |
  progress_lines
status=$(cat "$scratch/rsync-status")
if [ "$status" -ne 0 ]; then
  wait "$source_pid" || true
  message="stsresize-copy: rsync failed with exit code $status"
  printf '%s' "$message" > /dev/termination-log
  echo "$message" >&2
  exit "$status"
fi
# A side whose summary failed is never compared: the Job reports the failure instead of a
# summary.
echo "stsresize-copy: summarising /destination"
summarise /destination "$scratch/destination" "$destination_manifest" > "$scratch/destination.json" &
destination_pid=$!
source_status=0
wait "$source_pid" || source_status=$?
destination_status=0
wait "$destination_pid" || destination_status=$?
if [ "$source_status" -ne 0 ] || [ "$destination_status" -ne 0 ]; then
  message="stsresize-copy: summarising failed: exit code $source_status on /source, $destination_status on /destination"
  printf '%s' "$message" > /dev/termination-log
  echo "$message" >&2
  exit 4
fi
source_summary=$(cat "$scratch/source.json")
destination_summary=$(cat "$scratch/destination.json")
hashed=$(($(cat "$scratch/source/hashed") + $(cat "$scratch/destination/hashed")))
rm -rf "$scratch"
summary="{\"v\":1,\"source\":$source_summary,\"destination\":$destination_summary,\"hashed\":$hashed}"
printf '%s' "$summary" > /dev/termination-log
echo "stsresize-copy: $summary"
if [ "$source_summary" != "$destination_summary" ]; then
  echo "stsresize-copy: destination differs from source" >&2
  exit 3
fi
)sh";

// The pre-copy (Phase::PreCopying): rsync passes while the replica still writes to /source.
// Nothing it does is trusted: BackingUp copies again with the replicas stopped and proves the
// result. rsync's output goes to the log through tee (progress for people) and to a file for
// its --stats; its own status is kept in a file, as a pipeline's would be lost without pipefail.
constexpr std::string_view kPreCopyIntro = R"sh(set -eu
# stsresize pre-copy Job: copy /source/ to /destination/ while the replica still runs (see
# engine/copy_job.h). Proves nothing: the copy Job copies again with the replica stopped.
)sh";

// The pre-copy's manifests: what lets the copy after it read only what changed. Each line is
// "<sha256 hex> <inode> <size> <mtime> <ctime> ./path" for a file whose stat line was the same
// before and after it was hashed and whose ctime (whole seconds) is before SINCE, at least 2 s
// before the first stat. Why that proves a later match unchanged: any change to a file's data
// or times sets its ctime to the time of the change, later than the recorded one, and ctime
// cannot be set by a program; a file changed while it was hashed has a different stat line
// after, and one changed in the second its recorded ctime names was changed before the
// manifest began. What it trusts: the kernel (or the file server) keeping ctime, from a clock
// within 2 s of this node's that is not set back, and an inode number naming one file while it
// exists. A file that fails any of this is left out and read again by the copy.
constexpr std::string_view kManifest =
    R"sh(# manifest TREE SCRATCH SINCE: print TREE's manifest (see above); nothing for a tree with '\',
# newline or carriage return in a name. Files that vanish or fail to hash are left out.
manifest() (
  cd "$1" || exit
  find . -type f -print0 > "$2/names" || exit
  if [ "$(tr -dc '\n\r\\' < "$2/names" | wc -c)" -ne 0 ]; then exit 0; fi
  xargs -0 -r stat -c '%i %s %Y %Z %n' < "$2/names" > "$2/before" 2> /dev/null || true
  digest_lines "$2/names" "$2/lines" 2> /dev/null || true
  xargs -0 -r stat -c '%i %s %Y %Z %n' < "$2/names" > "$2/after" 2> /dev/null || true
  touch "$2/lines" || exit
  awk -v since="$3" -v before="$2/before" -v after="$2/after" '
    FILENAME == after { same[$0] = 1; next }
    FILENAME == before {
      if (!($0 in same) || $4 >= since) next
      name = $0
      for (i = 0; i < 4; i++) name = substr(name, index(name, " ") + 1)
      entry[name] = $0
      next
    }
    substr($0, 65, 2) == "  " && substr($0, 1, 64) ~ /^[0-9a-f]+$/ && (substr($0, 67) in entry) {
      print substr($0, 1, 64) " " entry[substr($0, 67)]
    }' "$2/after" "$2/before" "$2/lines"
)
)sh";

constexpr std::string_view kPreCopyHead = R"sh(scratch=/tmp/stsresize-precopy.$$
mkdir "$scratch"
# rsync's quick check compares sizes and modification times in whole seconds: a file the
# application changed in the same second as a pass copied it passes for unchanged in every later
# pass. So every destination file whose time is from 3 s before the first pass began on gets
# time 0, and the copy with the replicas stopped copies it again; any older file changed since
# has a time at least 3 s newer than any pass. Done also when a pass fails: what it copied is in
# the destination. (A volume whose times run more than 3 s behind this node's clock can still
# hide a change; the summaries of that copy then differ and the resize stops with its sources
# intact.)
mark_recent() {
  touch -d "@$((first_started - 3))" "$scratch/since" &&
    find /destination -type f -newer "$scratch/since" -print0 > "$scratch/recent" &&
    xargs -0 -r touch -c -d @0 < "$scratch/recent"
}
passes=0
copied=0
first=
first_started=$(date +%s)
while :; do
  passes=$((passes + 1))
  echo "stsresize-precopy: pass $passes: rsync /source/ /destination/"
  { status=0; )sh";

constexpr std::string_view kPreCopyTail =
    R"sh( /source/ /destination/ || status=$?; echo "$status" > "$scratch/status"; } |
    progress_lines | tee "$scratch/out"
  status=$(cat "$scratch/status")
  # 24: files vanished while rsync read them, which a running application does.
  if [ "$status" -ne 0 ] && [ "$status" -ne 24 ]; then
    message="stsresize-precopy: rsync failed with exit code $status in pass $passes"
    printf '%s' "$message" > /dev/termination-log
    echo "$message" >&2
    mark_recent || true
    exit "$status"
  fi
  sent=$(sed -n 's/^Total transferred file size: \([0-9,]*\) bytes.*$/\1/p' "$scratch/out")
  sent=$(printf '%s' "$sent" | tr -d ,)
  case "$sent" in
    ''|*[!0-9]*)
      message="stsresize-precopy: no transferred size in rsync's statistics of pass $passes"
      printf '%s' "$message" > /dev/termination-log
      echo "$message" >&2
      mark_recent || true
      exit 4 ;;
  esac
  copied=$((copied + sent))
  if [ -z "$first" ]; then first=$sent; fi
  # Another pass only while the last one still moved more than a sixteenth of what the first
  # did, and at most MAX_PASSES in all: a pre-copy that cannot catch up with the writes still
  # ends, and BackingUp copies the rest.
  if [ "$passes" -ge MAX_PASSES ] || [ "$sent" -le $((first / 16)) ]; then break; fi
done
mark_recent
# The manifests of both trees, into /destination/.stsresize-pre-copy (written whole, then
# renamed), for the copy with the replicas stopped to read only what changed. Without them that
# copy reads everything, so any failure here only says so. 3 s first: the files this Job wrote
# last then have a ctime old enough to be recorded.
if [ -e /source/.stsresize-pre-copy ] || [ -L /source/.stsresize-pre-copy ] ||
  [ -e /source/.stsresize-pre-copy.new ] || [ -L /source/.stsresize-pre-copy.new ]; then
  echo "stsresize-precopy: /source has its own .stsresize-pre-copy: no manifest"
else
  sleep 3
  since=$(($(date +%s) - 2))
  echo "stsresize-precopy: hashing both trees for the manifests"
  mkdir "$scratch/source" "$scratch/destination"
  manifest /source "$scratch/source" "$since" > "$scratch/source.manifest" &
  source_pid=$!
  manifest_status=0
  manifest /destination "$scratch/destination" "$since" > "$scratch/destination.manifest" ||
    manifest_status=$?
  wait "$source_pid" || manifest_status=$?
  if [ "$manifest_status" -eq 0 ] &&
    rm -rf /destination/.stsresize-pre-copy.new /destination/.stsresize-pre-copy &&
    mkdir /destination/.stsresize-pre-copy.new &&
    cp "$scratch/source.manifest" /destination/.stsresize-pre-copy.new/source &&
    cp "$scratch/destination.manifest" /destination/.stsresize-pre-copy.new/destination &&
    echo "stsresize-manifest v1" > /destination/.stsresize-pre-copy.new/format &&
    mv /destination/.stsresize-pre-copy.new /destination/.stsresize-pre-copy; then
    echo "stsresize-precopy: manifests of $(wc -l < "$scratch/source.manifest") files on /source, $(wc -l < "$scratch/destination.manifest") on /destination"
  else
    echo "stsresize-precopy: no manifest (exit code $manifest_status): the copy reads everything" >&2
    rm -rf /destination/.stsresize-pre-copy.new || true
  fi
fi
rm -rf "$scratch"
result="{\"v\":1,\"passes\":$passes,\"bytes\":$copied}"
printf '%s' "$result" > /dev/termination-log
echo "stsresize-precopy: $result"
)sh";

std::string format_tree(const TreeSummary& tree) {
  return "{\"files\":" + std::to_string(tree.files) + ",\"bytes\":" + std::to_string(tree.bytes) +
         ",\"digest\":\"" + tree.digest + "\"}";
}

// `keys`, each of them, and of `optional` any; nothing else.
std::expected<void, std::string> has_exactly(
    const Json& object, std::initializer_list<std::string_view> keys, std::string_view what,
    std::initializer_list<std::string_view> optional = {}) {
  if (!object.is_object()) return std::unexpected(std::string{what} + " is not a JSON object");
  for (std::string_view key : keys) {
    if (!object.contains(key)) {
      return std::unexpected(std::string{what} + " has no \"" + std::string{key} + "\"");
    }
  }
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(keys, std::string_view{key}) == keys.end() &&
        std::ranges::find(optional, std::string_view{key}) == optional.end()) {
      return std::unexpected(std::string{what} + " has an unexpected key \"" + key + "\"");
    }
  }
  return {};
}

std::expected<std::int64_t, std::string> count(const Json& value, std::string_view what) {
  if (value.is_number_unsigned()) {
    const auto n = value.get<std::uint64_t>();
    if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::unexpected(std::string{what} + " is out of range");
    }
    return static_cast<std::int64_t>(n);
  }
  if (value.is_number_integer()) {
    return std::unexpected(std::string{what} + " is negative");
  }
  return std::unexpected(std::string{what} + " is not an integer");
}

bool is_sha256_hex(const std::string& digest) {
  return digest.size() == 64 && std::ranges::all_of(digest, [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::expected<TreeSummary, std::string> parse_tree(const Json& tree, const std::string& side) {
  const std::string what = "copy summary \"" + side + "\"";
  if (auto ok = has_exactly(tree, {"files", "bytes", "digest"}, what); !ok) {
    return std::unexpected(ok.error());
  }
  TreeSummary out;
  auto files = count(tree.at("files"), what + " files");
  if (!files) return std::unexpected(files.error());
  auto bytes = count(tree.at("bytes"), what + " bytes");
  if (!bytes) return std::unexpected(bytes.error());
  const Json& digest = tree.at("digest");
  if (!digest.is_string() || !is_sha256_hex(digest.get<std::string>())) {
    return std::unexpected(what + " digest is not 64 lowercase hex digits");
  }
  out.files = *files;
  out.bytes = *bytes;
  out.digest = digest.get<std::string>();
  return out;
}

}  // namespace

std::expected<CopySummary, std::string> parse_copy_summary(const std::string& message) {
  if (message.empty()) return std::unexpected(std::string{"copy summary is empty"});
  const Json parsed = Json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    // Also the shape of a message the kubelet cut at 4096 bytes, or rsync's failure text.
    std::string excerpt = message.substr(0, 200);
    return std::unexpected("copy summary is not valid JSON (truncated or an error message?): " +
                           excerpt);
  }
  // "hashed": the bytes the Job read to summarise both sides (absent from Jobs older than it).
  if (auto ok = has_exactly(parsed, {"v", "source", "destination"}, "copy summary", {"hashed"});
      !ok) {
    return std::unexpected(ok.error());
  }
  const Json& version = parsed.at("v");
  if (!version.is_number_integer() || version.get<std::int64_t>() != 1) {
    return std::unexpected("copy summary has unsupported version " + version.dump() +
                           " (expected 1)");
  }
  auto source = parse_tree(parsed.at("source"), "source");
  if (!source) return std::unexpected(source.error());
  auto destination = parse_tree(parsed.at("destination"), "destination");
  if (!destination) return std::unexpected(destination.error());
  std::optional<std::int64_t> hashed;
  if (parsed.contains("hashed")) {
    auto n = count(parsed.at("hashed"), "copy summary hashed");
    if (!n) return std::unexpected(n.error());
    hashed = *n;
  }
  return CopySummary{std::move(*source), std::move(*destination), hashed};
}

std::string format_copy_summary(const CopySummary& summary) {
  return "{\"v\":1,\"source\":" + format_tree(summary.source) +
         ",\"destination\":" + format_tree(summary.destination) +
         (summary.hashed ? ",\"hashed\":" + std::to_string(*summary.hashed) : std::string{}) + "}";
}

std::string copy_script(const CopyJobSettings& settings) {
  std::string script{kScriptIntro};
  script += kDigestLines;
  script += kProgressLines;
  script += kScriptHead;
  // progress2: one overall progress record (bytes, %, rate), refreshed as each file completes
  // and every second or so within a large one, made a line by progress_lines, so that a long
  // copy is visibly moving in `kubectl logs` and its progress can be read from there. Per-file
  // listings (-v) are deliberately not used. rsync's status is kept in a file: a pipeline's would
  // be lost without pipefail.
  script += "{ rsync --info=progress2";
  for (const std::string& flag : settings.rsync_flags) {
    script += ' ';
    script += shell_quoted(flag);
  }
  script += kScriptTail;
  return script;
}

std::string pre_copy_script(const CopyJobSettings& settings) {
  std::string script{kPreCopyIntro};
  script += kDigestLines;
  script += kProgressLines;
  script += kManifest;
  script += kPreCopyHead;
  script += "rsync --info=progress2 --stats --no-human-readable";
  for (const std::string& flag : settings.rsync_flags) {
    script += ' ';
    script += shell_quoted(flag);
  }
  std::string tail{kPreCopyTail};
  const std::string placeholder = "MAX_PASSES";
  for (auto at = tail.find(placeholder); at != std::string::npos; at = tail.find(placeholder)) {
    tail.replace(at, placeholder.size(), std::to_string(kMaxPreCopyPasses));
  }
  script += tail;
  return script;
}

std::expected<PreCopyResult, std::string> parse_pre_copy_result(const std::string& message) {
  const Json parsed = Json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (message.empty() || parsed.is_discarded()) {
    return std::unexpected("pre-copy result is not valid JSON: " + message.substr(0, 200));
  }
  if (auto ok = has_exactly(parsed, {"v", "passes", "bytes"}, "pre-copy result"); !ok) {
    return std::unexpected(ok.error());
  }
  const Json& version = parsed.at("v");
  if (!version.is_number_integer() || version.get<std::int64_t>() != 1) {
    return std::unexpected("pre-copy result has unsupported version " + version.dump() +
                           " (expected 1)");
  }
  auto passes = count(parsed.at("passes"), "pre-copy result passes");
  if (!passes) return std::unexpected(passes.error());
  auto bytes = count(parsed.at("bytes"), "pre-copy result bytes");
  if (!bytes) return std::unexpected(bytes.error());
  if (*passes < 1 || *passes > kMaxPreCopyPasses) {
    return std::unexpected("pre-copy result has " + std::to_string(*passes) + " passes (1 to " +
                           std::to_string(kMaxPreCopyPasses) + " expected)");
  }
  return PreCopyResult{*passes, *bytes};
}

std::string format_pre_copy_result(const PreCopyResult& result) {
  return "{\"v\":1,\"passes\":" + std::to_string(result.passes) +
         ",\"bytes\":" + std::to_string(result.bytes) + "}";
}

void place_beside(Json& pod_spec, const std::string& node, const Json& node_tolerations,
                  const CopyJobSettings& settings) {
  Json tolerations = settings.tolerations.is_array() ? settings.tolerations : Json::array();
  if (!node.empty()) {
    // By the node's name, as a DaemonSet pins its pods: a hostname label may differ from it.
    pod_spec["affinity"] = {
        {"nodeAffinity",
         {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms",
             Json::array(
                 {{{"matchFields", Json::array({{{"key", "metadata.name"},
                                                 {"operator", "In"},
                                                 {"values", Json::array({node})}}})}}})}}}}}};
    if (node_tolerations.is_array()) {
      for (const Json& toleration : node_tolerations) tolerations.push_back(toleration);
    }
  } else if (!settings.node_selector.empty()) {
    pod_spec["nodeSelector"] = settings.node_selector;
  }
  if (!tolerations.empty()) pod_spec["tolerations"] = std::move(tolerations);
}

// {"requests":{...},"limits":{...}} with the values that are set; {} when none is.
Json container_resources(const CopyJobResources& resources) {
  Json out = Json::object();
  const auto put = [&](const char* group, const char* name, const std::string& value) {
    if (!value.empty()) out[group][name] = value;
  };
  put("requests", "cpu", resources.cpu_request);
  put("requests", "memory", resources.memory_request);
  put("limits", "cpu", resources.cpu_limit);
  put("limits", "memory", resources.memory_limit);
  return out;
}

namespace {

Json build_job(const CopyJobRequest& request, const Placement* pre_copy,
               const CopyJobSettings& settings) {
  const Json labels = {
      {"app.kubernetes.io/managed-by", "stsresize"},
      {std::string{kOperationLabel}, naming::label_value(request.operation_id)},
      {std::string{kStatefulSetLabel}, naming::label_value(request.statefulset)},
      {std::string{kPurposeLabel}, naming::label_value(request.purpose)},
  };
  // Full values (labels may have been shortened) and the claims, for humans and for the
  // controller to check that a Job it finds is the one it meant to create.
  const Json annotations = {
      {std::string{kOperationLabel}, request.operation_id},
      {std::string{kStatefulSetLabel}, request.statefulset},
      {std::string{kSourceClaimAnnotation}, request.source_claim},
      {std::string{kDestinationClaimAnnotation}, request.destination_claim},
  };

  Json container = {
      {"name", "copy"},
      {"image", settings.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command",
       Json::array({"/bin/sh", "-c",
                    pre_copy != nullptr ? pre_copy_script(settings) : copy_script(settings)})},
      {"volumeMounts", Json::array({
                           {{"name", "source"}, {"mountPath", "/source"}, {"readOnly", true}},
                           {{"name", "destination"}, {"mountPath", "/destination"}},
                           {{"name", "tmp"}, {"mountPath", "/tmp"}},
                       })},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
  };
  if (request.destination_bytes > 0 && pre_copy == nullptr) {
    container["env"] = Json::array({{{"name", "STSRESIZE_DESTINATION_BYTES"},
                                     {"value", std::to_string(request.destination_bytes)}}});
  }
  if (Json resources = container_resources(settings.resources); !resources.empty()) {
    container["resources"] = std::move(resources);
  }
  if (!settings.security_context.empty()) {
    container["securityContext"] = settings.security_context;
  }

  Json pod_spec = {
      {"restartPolicy", "Never"},
      // The copy never talks to the API server.
      {"automountServiceAccountToken", false},
      {"containers", Json::array({container})},
      {"volumes",
       Json::array({
           {{"name", "source"},
            {"persistentVolumeClaim", {{"claimName", request.source_claim}, {"readOnly", true}}}},
           {{"name", "destination"},
            {"persistentVolumeClaim", {{"claimName", request.destination_claim}}}},
           // Where sort(1) spills the digest lines of a large tree: the root is read-only.
           {{"name", "tmp"}, {"emptyDir", Json::object()}},
       })},
  };
  if (!settings.pod_security_context.empty()) {
    pod_spec["securityContext"] = settings.pod_security_context;
  }
  if (pre_copy != nullptr) {
    place_beside(pod_spec, pre_copy->node, pre_copy->tolerations, settings);
  } else {
    place_beside(pod_spec, "", Json::array(), settings);
  }

  // No ttlSecondsAfterFinished: the controller reads the result, then deletes the Job itself.
  Json job_spec = {
      // A failed pre-copy is not tried again: BackingUp copies anyway.
      {"backoffLimit", pre_copy != nullptr ? 0 : settings.backoff_limit},
      {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod_spec}}},
      // A destination too small stays too small: no retry.
      {"podFailurePolicy",
       {{"rules", Json::array({{{"action", "FailJob"},
                                {"onExitCodes",
                                 {{"containerName", "copy"},
                                  {"operator", "In"},
                                  {"values", Json::array({kDoesNotFitExitCode})}}}}})}}},
  };
  if (settings.active_deadline_seconds) {
    job_spec["activeDeadlineSeconds"] = *settings.active_deadline_seconds;
  }

  return Json{
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", request.job_name},
        {"namespace", request.ns},
        {"labels", labels},
        {"annotations", annotations}}},
      {"spec", job_spec},
  };
}

}  // namespace

Json build_copy_job(const CopyJobRequest& request, const CopyJobSettings& settings) {
  return build_job(request, nullptr, settings);
}

Json build_pre_copy_job(const CopyJobRequest& request, const Placement& placement,
                        const CopyJobSettings& settings) {
  return build_job(request, &placement, settings);
}

}  // namespace stsresize
