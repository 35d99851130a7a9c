// A bound service-account token is rotated the way the kubelet does it (a new token in the
// same file, swapped in atomically) and the old token's bound Secret is deleted: the old token
// is rejected from then on (401), while a client following the token file keeps working without
// a restart.
#include <fstream>
#include <thread>

#include "adapters/runtime/informer.h"
#include "tests/cluster/adapter/cluster_support.h"
#include "tests/support/scratch_dir.h"

namespace stsresize::cluster_test {
namespace {

class TokenRotationOnCluster : public OnFixtureCluster {
 protected:
  std::string namespace_prefix() const override { return "token"; }

  void SetUp() override {
    OnFixtureCluster::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string base = "/api/v1/namespaces/" + ns();
    ASSERT_OK(
        admin_->raw("POST", base + "/serviceaccounts", Json{{"metadata", {{"name", kAccount}}}}));
    ASSERT_OK(admin_->raw("POST",
                          "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns() + "/roles",
                          Json{{"metadata", {{"name", "read-configmaps"}}},
                               {"rules", Json::array({{{"apiGroups", {""}},
                                                       {"resources", {"configmaps"}},
                                                       {"verbs", {"get", "list", "watch"}}}})}}));
    ASSERT_OK(admin_->raw(
        "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns() + "/rolebindings",
        Json{{"metadata", {{"name", "read-configmaps"}}},
             {"roleRef",
              {{"apiGroup", "rbac.authorization.k8s.io"},
               {"kind", "Role"},
               {"name", "read-configmaps"}}},
             {"subjects",
              Json::array(
                  {{{"kind", "ServiceAccount"}, {"name", kAccount}, {"namespace", ns()}}})}}));
    ASSERT_OK(admin_->create(Kind::ConfigMap, config_map(ns(), "readable", {}, "seen")));
  }

  // A Secret to bind a token to; its uid.
  std::string create_secret(const std::string& name) {
    auto secret = admin_->raw("POST", "/api/v1/namespaces/" + ns() + "/secrets",
                              Json{{"metadata", {{"name", name}}}, {"type", "Opaque"}});
    EXPECT_TRUE(secret) << secret.error().message;
    return secret ? (*secret)["metadata"]["uid"].get<std::string>() : std::string{};
  }

  // TokenRequest bound to the Secret: valid only while that Secret exists.
  std::string token_bound_to(const std::string& secret, const std::string& uid) {
    auto token = admin_->raw(
        "POST", "/api/v1/namespaces/" + ns() + "/serviceaccounts/" + kAccount + "/token",
        Json{{"apiVersion", "authentication.k8s.io/v1"},
             {"kind", "TokenRequest"},
             {"spec",
              {{"expirationSeconds", 600},
               {"boundObjectRef",
                {{"apiVersion", "v1"}, {"kind", "Secret"}, {"name", secret}, {"uid", uid}}}}}});
    EXPECT_TRUE(token) << token.error().message;
    return token ? (*token)["status"]["token"].get<std::string>() : std::string{};
  }

  // As the kubelet does: write a temporary file and rename it over the token file.
  void install_token(const std::string& token) {
    const auto temporary = dir_.file("token.tmp");
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << token;
      ASSERT_TRUE(out.good());
    }
    std::filesystem::rename(temporary, token_file());
  }

  std::filesystem::path token_file() const { return dir_.file("token"); }

  std::shared_ptr<HttpKubernetes> client_with_static_token(const std::string& token) {
    KubeConfig config = without_credentials(admin_config_);
    config.token = token;
    return connect(config);
  }
  std::shared_ptr<HttpKubernetes> client_following_token_file() {
    KubeConfig config = without_credentials(admin_config_);
    config.token_file = token_file();
    return connect(config);
  }

  // Installs token B (bound to secret-b) in the file, deletes secret-a, and waits until
  // `holding_a` (a client with token A) is refused.
  void rotate_and_revoke(HttpKubernetes& holding_a, const ObjectRef& readable) {
    const std::string token_b = token_bound_to("secret-b", create_secret("secret-b"));
    ASSERT_FALSE(token_b.empty());
    ASSERT_NO_FATAL_FAILURE(install_token(token_b));
    ASSERT_OK(admin_->raw("DELETE", "/api/v1/namespaces/" + ns() + "/secrets/secret-a"));
    // The apiserver caches successful token reviews briefly: poll for the rejection.
    KubeResult<Json> as_a = holding_a.get(readable);
    const bool rejected = eventually(
        [&] {
          as_a = holding_a.get(readable);
          return !as_a && as_a.error().code == KubeErrorCode::Unauthorized;
        },
        std::chrono::seconds{60}, std::chrono::milliseconds{250});
    ASSERT_TRUE(rejected) << "token A still accepted after its Secret was deleted: "
                          << (as_a ? "200" : as_a.error().message);
  }

  static constexpr const char* kAccount = "rotating";
  testing_support::ScratchDir dir_;
};

TEST_F(TokenRotationOnCluster, OldTokenIsRejectedOnceItsSecretIsGoneAndTheFileClientCarriesOn) {
  const ObjectRef readable{Kind::ConfigMap, ns(), "readable"};
  const std::string token_a = token_bound_to("secret-a", create_secret("secret-a"));
  ASSERT_FALSE(token_a.empty());
  ASSERT_NO_FATAL_FAILURE(install_token(token_a));
  auto following = client_following_token_file();
  auto holding_a = client_with_static_token(token_a);
  ASSERT_TRUE(following && holding_a);

  // RBAC for the new binding is eventually consistent: wait until the account can read.
  ASSERT_TRUE(eventually([&] { return following->get(readable).has_value(); }));
  ASSERT_OK(holding_a->get(readable));

  ASSERT_NO_FATAL_FAILURE(rotate_and_revoke(*holding_a, readable));

  // The same client object as before the rotation: it read the new file on its own.
  auto as_file = following->get(readable);
  ASSERT_OK(as_file);
  EXPECT_EQ((*as_file)["data"]["key"], "seen");
  auto listed = following->list(Kind::ConfigMap, ns());
  ASSERT_OK(listed);
  EXPECT_FALSE(listed->items.empty());
  EXPECT_EQ(following->counters().count("get", 401), 0u)
      << "the file-following client was never refused";
  EXPECT_GE(holding_a->counters().count("get", 401), 1u);
}

// A watch authenticates when it starts: one open across the rotation keeps streaming, and the
// ones it reconnects with (every 2 s here) carry the new token.
TEST_F(TokenRotationOnCluster, WatchCarriesOnAcrossTheRotationAndReconnectsWithTheNewToken) {
  const ObjectRef readable{Kind::ConfigMap, ns(), "readable"};
  const std::string token_a = token_bound_to("secret-a", create_secret("secret-a"));
  ASSERT_FALSE(token_a.empty());
  ASSERT_NO_FATAL_FAILURE(install_token(token_a));
  auto following = client_following_token_file();
  auto holding_a = client_with_static_token(token_a);
  ASSERT_TRUE(following && holding_a);
  ASSERT_TRUE(eventually([&] { return following->get(readable).has_value(); }));

  runtime::InformerOptions options;
  options.kind = Kind::ConfigMap;
  options.ns = ns();
  options.min_watch_timeout = std::chrono::seconds{1};
  runtime::Informer informer(*following, options);
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(std::chrono::seconds{30}));
  ASSERT_NE(informer.store().get(ns(), "readable"), nullptr);

  ASSERT_NO_FATAL_FAILURE(rotate_and_revoke(*holding_a, readable));
  const runtime::InformerStats at_revocation = informer.stats();
  ASSERT_OK(admin_->create(Kind::ConfigMap, config_map(ns(), "after-rotation")));
  EXPECT_TRUE(eventually([&] { return informer.store().get(ns(), "after-rotation") != nullptr; }));
  // Two more watch requests: at least one was made entirely after token A stopped working.
  EXPECT_TRUE(eventually(
      [&] { return informer.stats().watches_started >= at_revocation.watches_started + 2; }));
  informer.stop();
  const runtime::InformerStats after = informer.stats();
  EXPECT_EQ(after.errors, at_revocation.errors) << "a list or watch failed after the rotation";
  EXPECT_EQ(after.lists, 1u) << "the informer never had to start over";
  EXPECT_EQ(following->counters().count("watch", 401), 0u);
  EXPECT_GE(following->counters().count("watch", 200), after.watches_started - 1);
}

}  // namespace
}  // namespace stsresize::cluster_test
