// The PodLogs contract (pod_logs_contract.h): the cases every implementation passes.
#include "tests/contract/pod_logs_contract.h"

namespace stsresize::contract {
namespace {

TEST_P(PodLogsContract, TailIsTheLastLinesTheContainerPrinted) {
  under_test_->print("printer", "main", "one\ntwo\nthree\n");
  if (HasFatalFailure()) return;
  const ObjectRef pod{Kind::Pod, under_test_->ns, "printer"};
  auto two = under_test_->logs->tail(pod, "main", 2);
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(*two, "two\nthree\n");
  auto all = under_test_->logs->tail(pod, "main", 10);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(*all, "one\ntwo\nthree\n");
}

TEST_P(PodLogsContract, ALastLineWithoutItsNewlineCounts) {
  under_test_->print("progress", "main", "1%\n2%\n3%");
  if (HasFatalFailure()) return;
  auto last = under_test_->logs->tail({Kind::Pod, under_test_->ns, "progress"}, "main", 2);
  ASSERT_TRUE(last) << last.error().message;
  EXPECT_EQ(*last, "2%\n3%");
}

TEST_P(PodLogsContract, AMissingPodIsNotFound) {
  auto missing = under_test_->logs->tail({Kind::Pod, under_test_->ns, "nobody"}, "main", 5);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, KubeErrorCode::NotFound) << missing.error().message;
}

TEST_P(PodLogsContract, AContainerThePodDoesNotHaveIsABadRequest) {
  under_test_->print("printer", "main", "hello\n");
  if (HasFatalFailure()) return;
  auto other = under_test_->logs->tail({Kind::Pod, under_test_->ns, "printer"}, "sidecar", 5);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, KubeErrorCode::BadRequest) << other.error().message;
}

}  // namespace
}  // namespace stsresize::contract
