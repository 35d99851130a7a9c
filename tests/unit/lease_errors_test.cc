// What `run --leader-elect` says when its Lease cannot be read or written: once per cause at
// error level with what to grant, repeats at debug, the end at info.
#include "adapters/app/lease_errors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stsresize::cli {
namespace {

struct Line {
  logging::Level level;
  std::string message;
};

TEST(LeaseErrorLog, SaysEachCauseOnceWithWhatToGrantAndItsEnd) {
  std::vector<Line> lines;
  LeaseErrorLog log{
      "stsresize-system", "stsresize-leader",
      [&](logging::Level level, std::string_view message, std::initializer_list<logging::Field>) {
        lines.push_back({level, std::string{message}});
      }};
  const KubeError forbidden{KubeErrorCode::Forbidden, "leases is forbidden"};
  log.failed("get", forbidden);
  log.failed("get", forbidden);
  log.failed("get", forbidden);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].level, logging::Level::Error);
  EXPECT_EQ(lines[0].message,
            "leader election: get of Lease stsresize-system/stsresize-leader failed (Forbidden): "
            "grant get, create and update on leases (apiGroup coordination.k8s.io) in namespace "
            "stsresize-system (a Role and RoleBinding there), or choose with "
            "--leader-elect-namespace a namespace where it has them; this replica cannot lead "
            "until then");
  EXPECT_EQ(lines[1].level, logging::Level::Debug);
  EXPECT_EQ(lines[2].level, logging::Level::Debug);
  log.failed("update", forbidden);  // another cause: said again
  EXPECT_EQ(lines.back().level, logging::Level::Error);
  log.recovered();
  EXPECT_EQ(lines.back().level, logging::Level::Info);
  log.failed("update", forbidden);  // after its end, a cause is new again
  EXPECT_EQ(lines.back().level, logging::Level::Error);
}

}  // namespace
}  // namespace stsresize::cli
