// `stsresize run`'s flags as resolve_run_flags checks them and hands them to the engine.
#include "adapters/app/run_command.h"

#include <gtest/gtest.h>

#include "adapters/clock/manual_clock.h"
#include "adapters/fake/fake_kubernetes.h"
#include "tests/unit/kube_test_support.h"

namespace stsresize::cli {
namespace {

class RunFlagsTest : public ::testing::Test {
 protected:
  RunFlags flags() const {
    RunFlags given;
    given.kubeconfig = kubeconfig.string();
    return given;
  }

  testing::TempDir dir;
  const std::filesystem::path kubeconfig =
      dir.write("kubeconfig",
                "current-context: c\n"
                "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: shop}\n"
                "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\n"
                "users:\n- name: u\n  user:\n    token: t\n");
};

TEST_F(RunFlagsTest, CopyJobResourcesHaveDefaultsAndTheFlagsReplaceOrRemoveThem) {
  auto defaults = resolve_run_flags(flags());
  ASSERT_TRUE(defaults) << defaults.error();
  const CopyJobResources& engine_default = CopyJobResources{};
  const CopyJobResources& resolved = defaults->engine.copy_job.resources;
  EXPECT_EQ(resolved.cpu_request, engine_default.cpu_request);
  EXPECT_EQ(resolved.memory_request, engine_default.memory_request);
  EXPECT_EQ(resolved.cpu_limit, engine_default.cpu_limit);
  EXPECT_EQ(resolved.memory_limit, engine_default.memory_limit);

  RunFlags given = flags();
  given.copy_job.cpu_request = "250m";
  given.copy_job.memory_request = "none";
  given.copy_job.cpu_limit = "1.5";
  given.copy_job.memory_limit = "4Gi";
  auto set = resolve_run_flags(given);
  ASSERT_TRUE(set) << set.error();
  EXPECT_EQ(set->engine.copy_job.resources.cpu_request, "250m");
  EXPECT_EQ(set->engine.copy_job.resources.memory_request, "");
  EXPECT_EQ(set->engine.copy_job.resources.cpu_limit, "1.5");
  EXPECT_EQ(set->engine.copy_job.resources.memory_limit, "4Gi");

  // A request above the default limit is refused until the limit is raised or removed.
  given = flags();
  given.copy_job.memory_request = "3Gi";
  auto above = resolve_run_flags(given);
  ASSERT_FALSE(above);
  EXPECT_EQ(above.error(),
            "--copy-job-memory-request: 3Gi is more than the limit 2Gi (--copy-job-memory-limit; "
            "none for no limit)");
  given.copy_job.memory_limit = "none";
  EXPECT_TRUE(resolve_run_flags(given));
}

TEST_F(RunFlagsTest, CopiesRunForEveryClaimAtOnceUnlessABoundIsGiven) {
  auto defaults = resolve_run_flags(flags());
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_EQ(defaults->engine.max_parallel_copies, 0);
  EXPECT_TRUE(defaults->engine.may_start_copy(100));

  RunFlags given = flags();
  given.max_parallel_copies = 2;
  auto bounded = resolve_run_flags(given);
  ASSERT_TRUE(bounded) << bounded.error();
  EXPECT_TRUE(bounded->engine.may_start_copy(1));
  EXPECT_FALSE(bounded->engine.may_start_copy(2));

  for (const int refused : {-1, 65}) {
    given.max_parallel_copies = refused;
    auto out = resolve_run_flags(given);
    ASSERT_FALSE(out) << refused;
    EXPECT_EQ(out.error(), "--max-parallel-copies: must be from 0 (no bound) to 64");
  }
}

// A cluster-scoped controller watches volumes when it may list them; a ClusterRole of an older
// release (get and patch only) keeps them read live rather than an informer refused for ever.
TEST(MayListVolumes, OnlyAForbiddenListSaysNo) {
  ManualClock clock;
  FakeKubernetes kube{clock};
  EXPECT_TRUE(may_list_volumes(kube));
  kube.inject({.verb = Verb::List,
               .kind = Kind::PersistentVolume,
               .error = KubeError{KubeErrorCode::Forbidden, "cannot list persistentvolumes", {}}});
  EXPECT_FALSE(may_list_volumes(kube));
  kube.inject({.verb = Verb::List,
               .kind = Kind::PersistentVolume,
               .error = KubeError{KubeErrorCode::ServerError, "etcd leader changed", {}}});
  EXPECT_TRUE(may_list_volumes(kube)) << "the informer retries and reports anything else";
  EXPECT_EQ(kube.calls(Verb::List, Kind::PersistentVolume), 3);
}

}  // namespace
}  // namespace stsresize::cli
