// parse_copy_progress on what the copy and pre-copy scripts log: rsync's progress2 lines (made
// lines by progress_lines), the scripts' own lines, and the proof after rsync.
#include "engine/copy_progress.h"

#include <gtest/gtest.h>

namespace stsresize {
namespace {

using namespace std::chrono_literals;

TEST(CopyProgress, ParsesRsyncProgressLinesWithAndWithoutSeparators) {
  // Real lines of rsync 3.2.7 (--info=progress2), then with --no-human-readable.
  auto line = parse_rsync_progress_line("     61,243,392  20%   58.38MB/s    0:00:04  ");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->bytes_done, 61243392);
  EXPECT_EQ(line->percent, 20);
  EXPECT_DOUBLE_EQ(line->bytes_per_second, 58.38 * 1024 * 1024);
  EXPECT_FALSE(line->listing);
  line = parse_rsync_progress_line(
      "      300000000  98%   59.30MB/s    0:00:04 (xfr#1, to-chk=50/52)");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->bytes_done, 300000000);
  EXPECT_EQ(line->percent, 98);
  line = parse_rsync_progress_line("         32,768   0%    0.00kB/s    0:00:00  ");
  ASSERT_TRUE(line);
  EXPECT_EQ(line->percent, 0);
  EXPECT_EQ(line->bytes_per_second, 0);
  line = parse_rsync_progress_line(
      "  1,234,567  45%  12.34GB/s  123:45:06 (xfr#12, ir-chk=1000/5000)");
  ASSERT_TRUE(line);
  EXPECT_TRUE(line->listing);
}

TEST(CopyProgress, RefusesWhatIsNotAProgressLine) {
  for (std::string_view text :
       {"", "stsresize-copy: rsync /source/ /destination/, summarising /source meanwhile",
        "Number of files: 52 (reg: 51, dir: 1)", "12 34% 5MB/s", "1,000 101% 1.00MB/s 0:00:01",
        "1,000 10% fastB/s 0:00:01", "1,000 10% 1.00MB/s 0:0:01", "x1,000 10% 1.00MB/s 0:00:01",
        "1,000 10 1.00MB/s 0:00:01", "99999999999999999999 10% 1.00MB/s 0:00:01"}) {
    EXPECT_FALSE(parse_rsync_progress_line(text)) << text;
  }
}

TEST(CopyProgress, TakesTheLastProgressLineOfTheLog) {
  const std::string log =
      "stsresize-copy: rsync /source/ /destination/, summarising /source meanwhile\n"
      "\n"
      "         32,768   0%    0.00kB/s    0:00:00  \n"
      "     61,243,392  20%   58.38MB/s    0:00:04  \n"
      "    124,878,848  40%   58.54MB/s    0:00:03  \n";
  const auto progress = parse_copy_progress(log);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->stage, CopyProgress::Stage::Copying);
  EXPECT_EQ(progress->bytes_done, 124878848);
  EXPECT_EQ(progress->percent, 40);
  EXPECT_EQ(progress->pre_copy_pass, 0);
  ASSERT_TRUE(progress->bytes_total());
  // rsync's percentage is rounded down: 40% is 40 to 41, the total taken at 40.5%.
  EXPECT_EQ(*progress->bytes_total(), 308342835);  // 124,878,848 * 100 / 40.5
  ASSERT_TRUE(progress->eta());
  EXPECT_EQ(*progress->eta(), 3s);  // rsync's own, written within the file
  EXPECT_EQ(progress->tenth(), 4);
  EXPECT_EQ(format_copy_progress(*progress),
            "40% (119.1 MiB of 294.1 MiB) at 58.5 MiB/s, about 0:00:03 left");
  EXPECT_EQ(format_copy_progress_short(*progress), "40%/294.1Mi,ETA:0:00:03");
  // A line written as a file completes shows the time taken: the ETA is computed instead.
  const auto completed =
      parse_copy_progress("   150,000,000  50%   10.00MB/s    0:00:15 (xfr#1, to-chk=1/3)\n");
  ASSERT_TRUE(completed && completed->eta());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(*completed->eta()).count(), 14);
}

TEST(CopyProgress, AfterRsyncTheProofIsVerifying) {
  const std::string log =
      "    305,000,000 100%  963.04MB/s    0:00:00 (xfr#51, to-chk=0/52)\n"
      "stsresize-copy: summarising /destination\n";
  const auto progress = parse_copy_progress(log);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->stage, CopyProgress::Stage::Verifying);
  EXPECT_EQ(progress->bytes_done, 305000000);
  EXPECT_FALSE(progress->eta());
  EXPECT_EQ(progress->tenth(), 10);
  EXPECT_EQ(format_copy_progress(*progress), "copied 290.9 MiB, verifying");
  EXPECT_EQ(format_copy_progress_short(*progress), "verifying");
  // The end of the log cut after the proof began: verifying, bytes unknown.
  const auto cut = parse_copy_progress("stsresize-copy: summarising /destination\n");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->stage, CopyProgress::Stage::Verifying);
}

TEST(CopyProgress, NamesThePreCopyPass) {
  const std::string log =
      "stsresize-precopy: pass 1: rsync /source/ /destination/\n"
      "      300000000 100%   59.30MB/s    0:00:04 (xfr#1, to-chk=0/52)\n"
      "\n"
      "Number of files: 52 (reg: 51, dir: 1)\n"
      "stsresize-precopy: pass 2: rsync /source/ /destination/\n"
      "       12000000  4%   20.00MB/s    0:00:00 (xfr#1, ir-chk=40/52)\n";
  const auto progress = parse_copy_progress(log);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->pre_copy_pass, 2);
  EXPECT_TRUE(progress->listing);
  EXPECT_FALSE(progress->bytes_total());
  EXPECT_FALSE(progress->eta());
  EXPECT_EQ(progress->tenth(), 0);
  EXPECT_EQ(format_copy_progress(*progress),
            "pass 2: listing the source, 11.4 MiB so far at 20.0 MiB/s");
}

TEST(CopyProgress, NothingBeforeRsyncSaysAnything) {
  EXPECT_FALSE(parse_copy_progress(""));
  EXPECT_FALSE(parse_copy_progress(
      "stsresize-copy: rsync /source/ /destination/, summarising /source meanwhile\n"));
  // A line cut at the start of what the log returned is not mistaken for a whole one.
  EXPECT_FALSE(parse_copy_progress("0%    0.00kB/s    0:00:00  \n"));
}

}  // namespace
}  // namespace stsresize

namespace stsresize {
namespace {

TEST(CopyProgress, CombinesCopiesAtOnce) {
  CopyProgress a;
  a.bytes_done = 300;
  a.percent = 30;  // of 1000
  a.bytes_per_second = 10;
  CopyProgress b;
  b.bytes_done = 500;
  b.percent = 50;  // of 1000
  b.bytes_per_second = 20;
  const auto both = combine_copy_progress({a, b});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->bytes_done, 800);
  EXPECT_EQ(both->bytes_total(), 1974);  // 300 / 30.5% + 500 / 50.5%: 984 + 990
  EXPECT_EQ(both->percent, 40);
  EXPECT_EQ(both->bytes_per_second, 30);
  EXPECT_EQ(both->stage, CopyProgress::Stage::Copying);
  // At once: the longer of (984 - 300) / 10 and (990 - 500) / 20 seconds.
  EXPECT_EQ(both->eta(), Duration{68400});
  b.listing = true;  // its total is not known: neither is the sum's
  EXPECT_TRUE(combine_copy_progress({a, b})->listing);
  a.stage = CopyProgress::Stage::Verifying;
  b = a;
  EXPECT_EQ(combine_copy_progress({a, b})->stage, CopyProgress::Stage::Verifying);
  EXPECT_FALSE(combine_copy_progress({}));
}

}  // namespace
}  // namespace stsresize
