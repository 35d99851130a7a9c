#include "adapters/app/crash_handler.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace stsresize {
namespace {

// The process must still die of the signal itself (exit status, core dumps), with the
// signal and a backtrace on stderr first.
TEST(CrashHandlerDeathTest, SegmentationFaultPrintsTheSignalAndABacktraceThenDiesOfIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        crash::install_handler();
        raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "fatal signal SEGV \\(Segmentation fault\\); backtrace");
}

TEST(CrashHandlerDeathTest, AbortIsReportedToo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        crash::install_handler();
        std::abort();
      },
      testing::KilledBySignal(SIGABRT), "fatal signal ABRT");
}

}  // namespace
}  // namespace stsresize
