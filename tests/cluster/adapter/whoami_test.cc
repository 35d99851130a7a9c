// authenticated_username against a real kube-apiserver: the name comes from the server, not from
// the kubeconfig's user entry, for a client certificate and for a service account's token.
#include "adapters/kube/whoami.h"
#include "tests/cluster/adapter/cluster_support.h"

namespace stsresize::cluster_test {
namespace {

class WhoamiOnCluster : public OnFixtureCluster {
 protected:
  std::string namespace_prefix() const override { return "whoami"; }
};

TEST_F(WhoamiOnCluster, NamesTheCertificatesSubjectWhateverTheKubeconfigCallsTheUser) {
  KubeConfig config = admin_config_;
  config.user = "a-local-nickname";  // the kubeconfig entry's name is not what the server sees
  auto kube = connect(config);
  ASSERT_NE(kube, nullptr);
  auto name = authenticated_username(*kube);
  ASSERT_TRUE(name) << name.error().message;
  // scripts/cluster signs the admin certificate with CN=admin.
  EXPECT_EQ(*name, "admin");
}

TEST_F(WhoamiOnCluster, NamesAServiceAccountByItsFullUserName) {
  ASSERT_OK(admin_->raw("POST", "/api/v1/namespaces/" + ns() + "/serviceaccounts",
                        Json{{"metadata", {{"name", "operator"}}}}));
  auto token = admin_->raw("POST", "/api/v1/namespaces/" + ns() + "/serviceaccounts/operator/token",
                           Json{{"apiVersion", "authentication.k8s.io/v1"},
                                {"kind", "TokenRequest"},
                                {"spec", {{"expirationSeconds", 600}}}});
  ASSERT_TRUE(token) << token.error().message;
  KubeConfig config = without_credentials(admin_config_);
  config.token = (*token)["status"]["token"].get<std::string>();
  auto kube = connect(config);
  ASSERT_NE(kube, nullptr);
  // Any authenticated user may review itself: no RBAC rule is needed for this.
  auto name = authenticated_username(*kube);
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(*name, "system:serviceaccount:" + ns() + ":operator");
}

}  // namespace
}  // namespace stsresize::cluster_test
