#pragma once
// Where a copy Job is, read from the end of its log: the last progress line rsync wrote
// (--info=progress2, each record made a line: engine/copy_job.cc progress_lines) and whether the
// script has gone on to its proof. What people see of a long copy (status, describe, /metrics,
// Events at each tenth); never part of a decision: the proof is the Job's summary.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/time.h"

namespace stsresize {

struct CopyProgress {
  enum class Stage {
    Copying,    // rsync runs
    Verifying,  // rsync is done, the Job summarises both trees
  };
  Stage stage = Stage::Copying;
  std::int64_t bytes_done = 0;  // of the files rsync has gone through, copied or found equal
  int percent = 0;              // rsync's, of the bytes of the files it knows of
  double bytes_per_second = 0;  // rsync's rate since it began
  // rsync is still listing the tree (ir-chk): the percentage is of what it has found so far.
  bool listing = false;
  // rsync's own estimate of the time left, on a line written within a file (one written as a
  // file completes shows the time taken instead).
  std::optional<Duration> rsync_eta = std::nullopt;
  // The pre-copy's pass, from its own line when the end of the log still holds it; 0: not
  // known (a copy, or a pass long enough that its line has left the end read).
  int pre_copy_pass = 0;
  // Several copies combined (combine_copy_progress): the sum of their totals, exact, rather
  // than one derived from a rounded percentage.
  std::optional<std::int64_t> total = std::nullopt;

  // `total`, else bytes_done / percent once rsync has listed the tree and a percent is there
  // (the percentage is rounded down: the middle of its interval).
  std::optional<std::int64_t> bytes_total() const;
  // rsync's estimate, else what is left at the current rate; none while listing, before a
  // rate, or once verifying.
  std::optional<Duration> eta() const;
  // The tenth of the copy reached, 0..10 (a verifying copy is at 10).
  int tenth() const;

  friend bool operator==(const CopyProgress&, const CopyProgress&) = default;
};

// The progress in LOG (the end of a copy or pre-copy Job's log); none when it holds no
// progress line and no sign of the proof. Lines that are not rsync's are skipped.
std::optional<CopyProgress> parse_copy_progress(std::string_view log);

// One rsync progress2 line: "  61,243,392  20%   58.38MB/s    0:00:04  (xfr#1, to-chk=50/52)",
// with or without the thousands separators (--no-human-readable).
std::optional<CopyProgress> parse_rsync_progress_line(std::string_view line);

// "41% (420Mi of 1.0Gi) at 58.4MiB/s, about 0:00:10 left", "verifying", "listing: 12Mi so far".
std::string format_copy_progress(const CopyProgress& progress);
// For a column, without spaces: "41%/1.0Gi,ETA:0:00:10", "listing,12.5Mi", "verifying".
std::string format_copy_progress_short(const CopyProgress& progress);

// Several copies as one (a StatefulSet's claims copied at once): bytes and rates added, the
// percentage of the sums, listing while any lists, verifying once all are; none for none.
std::optional<CopyProgress> combine_copy_progress(const std::vector<CopyProgress>& copies);

}  // namespace stsresize
