// HttpKubernetes against a real API server, for what the contract cannot ask of the fake:
// authentication and authorization answers, and a rotated token file. Skipped without
// $STSRESIZE_KUBECONFIG (see http_cluster_support.h).
#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/contract/http_cluster_support.h"
#include "tests/support/scratch_dir.h"

namespace stsresize {
namespace {

using testing::TestNamespace;

class HttpKubernetesOnCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = testing::cluster_config();
    if (!config) {
      if (!HasFailure()) GTEST_SKIP() << testing::kNoClusterReason;
      return;
    }
    admin_config_ = *config;
    auto admin = HttpKubernetes::create(admin_config_);
    ASSERT_TRUE(admin) << admin.error();
    admin_ = std::move(*admin);
    ns_ = std::make_unique<TestNamespace>(admin_);
    ASSERT_FALSE(ns_->name().empty());
  }

  // A ServiceAccount without any role, and a token for it from the TokenRequest API.
  std::string token_of_new_service_account(const std::string& name) {
    const std::string base = "/api/v1/namespaces/" + ns_->name() + "/serviceaccounts";
    auto account = admin_->raw("POST", base, Json{{"metadata", {{"name", name}}}});
    EXPECT_TRUE(account) << account.error().message;
    auto token = admin_->raw("POST", base + "/" + name + "/token",
                             Json{{"apiVersion", "authentication.k8s.io/v1"},
                                  {"kind", "TokenRequest"},
                                  {"spec", {{"expirationSeconds", 600}}}});
    EXPECT_TRUE(token) << token.error().message;
    return token ? (*token)["status"]["token"].get<std::string>() : std::string{};
  }

  // The cluster's server and CA, but authenticating with the token in `token_file` only.
  std::unique_ptr<HttpKubernetes> client_with_token_file(const std::filesystem::path& token_file) {
    KubeConfig config = admin_config_;
    config.client_cert_pem.clear();
    config.client_key_pem.clear();
    config.token.clear();
    config.token_file = token_file;
    auto client = HttpKubernetes::create(config);
    if (!client) ADD_FAILURE() << client.error();
    return client ? std::move(*client) : nullptr;
  }

  static void write(const std::filesystem::path& file, const std::string& content) {
    std::ofstream out(file, std::ios::trunc);
    out << content;
    ASSERT_TRUE(out.good()) << file;
  }

  KubeConfig admin_config_;
  std::shared_ptr<HttpKubernetes> admin_;
  std::unique_ptr<TestNamespace> ns_;
  testing_support::ScratchDir dir_;
};

TEST_F(HttpKubernetesOnCluster, ForbiddenNamesTheVerbTheResourceAndWhoAsked) {
  const auto token_file = dir_.file("token");
  write(token_file, token_of_new_service_account("no-rights"));
  auto kube = client_with_token_file(token_file);
  ASSERT_NE(kube, nullptr);

  auto got = kube->get({Kind::ConfigMap, ns_->name(), "anything"});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, KubeErrorCode::Forbidden) << got.error().message;
  EXPECT_NE(got.error().message.find(R"(cannot get resource "configmaps")"), std::string::npos)
      << got.error().message;
  EXPECT_NE(got.error().message.find("system:serviceaccount:" + ns_->name() + ":no-rights"),
            std::string::npos)
      << got.error().message;

  auto removed = kube->remove({Kind::StatefulSet, ns_->name(), "web"});
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code, KubeErrorCode::Forbidden);
  EXPECT_NE(
      removed.error().message.find(R"(cannot delete resource "statefulsets" in API group "apps")"),
      std::string::npos)
      << removed.error().message;
}

TEST_F(HttpKubernetesOnCluster, UnknownTokenIsUnauthorized) {
  const auto token_file = dir_.file("token");
  write(token_file, "not-a-token-this-cluster-issued");
  auto kube = client_with_token_file(token_file);
  ASSERT_NE(kube, nullptr);
  auto got = kube->get({Kind::ConfigMap, ns_->name(), "anything"});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, KubeErrorCode::Unauthorized) << got.error().message;
}

TEST_F(HttpKubernetesOnCluster, FollowsARotatedTokenFileOnTheNextRequest) {
  const auto token_file = dir_.file("token");
  write(token_file, token_of_new_service_account("first"));
  auto kube = client_with_token_file(token_file);
  ASSERT_NE(kube, nullptr);
  const ObjectRef ref{Kind::ConfigMap, ns_->name(), "anything"};

  auto as_first = kube->get(ref);
  ASSERT_FALSE(as_first);
  EXPECT_NE(as_first.error().message.find(":first\""), std::string::npos)
      << as_first.error().message;

  write(token_file, token_of_new_service_account("second"));
  auto as_second = kube->get(ref);
  ASSERT_FALSE(as_second);
  EXPECT_NE(as_second.error().message.find(":second\""), std::string::npos)
      << as_second.error().message;
}

TEST_F(HttpKubernetesOnCluster, InvalidNamesTheFieldAtFault) {
  auto created = admin_->create(
      Kind::ConfigMap,
      Json{{"metadata", {{"name", "Not_A_Valid_Name"}, {"namespace", ns_->name()}}}});
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, KubeErrorCode::Invalid) << created.error().message;
  EXPECT_NE(created.error().message.find("metadata.name"), std::string::npos)
      << created.error().message;
}

// Controller workers share one client: pooled TLS connections (one CA store, one client key)
// must serve them at once.
TEST_F(HttpKubernetesOnCluster, ServesConcurrentWorkersOverTls) {
  constexpr int kWorkers = 4;
  constexpr int kWritesEach = 10;
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      const std::string name = "worker-" + std::to_string(w);
      if (!admin_->create(Kind::ConfigMap,
                          Json{{"metadata", {{"name", name}, {"namespace", ns_->name()}}}})) {
        ++failures;
        return;
      }
      for (int i = 0; i < kWritesEach; ++i) {
        auto patched = admin_->patch({Kind::ConfigMap, ns_->name(), name}, PatchType::Merge,
                                     Json{{"data", {{"count", std::to_string(i)}}}});
        if (!patched) ++failures;
      }
    });
  }
  for (auto& worker : workers) worker.join();
  EXPECT_EQ(failures.load(), 0);
  for (int w = 0; w < kWorkers; ++w) {
    auto read = admin_->get({Kind::ConfigMap, ns_->name(), "worker-" + std::to_string(w)});
    ASSERT_TRUE(read) << read.error().message;
    EXPECT_EQ(read->at("data")["count"], std::to_string(kWritesEach - 1));
  }
  EXPECT_EQ(admin_->counters().count("patch", 200), std::uint64_t{kWorkers * kWritesEach});
}

}  // namespace
}  // namespace stsresize
