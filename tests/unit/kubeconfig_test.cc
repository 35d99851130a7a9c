// Kubeconfig and in-cluster loading, and the TLS setup they feed (against an HTTPS stub server
// with a PKI made at test time).
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "adapters/kube/config.h"
#include "adapters/kube/http_kubernetes.h"
#include "tests/unit/kube_test_support.h"

namespace stsresize {
namespace {

using testing::StubApiServer;
using testing::TempDir;
using testing::TestPki;

std::string base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int size = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                   reinterpret_cast<const unsigned char*>(data.data()),
                                   static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(size));
  return out;
}

// Two clusters, two users, two contexts; "dev" is current.
std::string two_context_kubeconfig() {
  return R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: )" +
         base64("DEV CA PEM") + R"(
- name: prod-cluster
  cluster:
    server: https://[fd00::10]:443
    certificate-authority: pki/prod-ca.crt
users:
- name: dev-user
  user:
    client-certificate-data: )" +
         base64("DEV CERT PEM") + R"(
    client-key-data: )" +
         base64("DEV KEY PEM") + R"(
- name: prod-user
  user:
    token: prod-token
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: databases
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
)";
}

TEST(Kubeconfig, LoadsTheCurrentContextWithInlineData) {
  TempDir dir;
  const auto path = dir.write("config", two_context_kubeconfig());
  auto config = load_kubeconfig(path);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "DEV CA PEM");
  EXPECT_EQ(config->client_cert_pem, "DEV CERT PEM");
  EXPECT_EQ(config->client_key_pem, "DEV KEY PEM");
  EXPECT_EQ(config->ns, "databases");
  EXPECT_EQ(config->user, "dev-user");  // who `stsresize advance` says approved
  EXPECT_TRUE(config->token.empty());
  EXPECT_FALSE(config->insecure_skip_tls_verify);
  EXPECT_NE(config->source.find(path.string()), std::string::npos) << config->source;
}

TEST(Kubeconfig, LoadsANamedContextWithFilesRelativeToTheKubeconfig) {
  TempDir dir;
  dir.write("pki/prod-ca.crt", "PROD CA PEM");
  const auto path = dir.write("config", two_context_kubeconfig());
  auto config = load_kubeconfig(path, "prod");
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://[fd00::10]:443");
  EXPECT_EQ(config->ca_pem, "PROD CA PEM");
  EXPECT_EQ(config->token, "prod-token");
  EXPECT_TRUE(config->client_cert_pem.empty());
  EXPECT_EQ(config->ns, "default");
  EXPECT_EQ(config->user, "prod-user");
}

TEST(Kubeconfig, NamesTheKeyAndFileOfAMissingReference) {
  TempDir dir;
  const auto path = dir.write("config", two_context_kubeconfig());
  auto config = load_kubeconfig(path, "prod");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("cluster \"prod-cluster\""), std::string::npos) << config.error();
  EXPECT_NE(config.error().find("certificate-authority"), std::string::npos) << config.error();
  EXPECT_NE(config.error().find((dir.path() / "pki/prod-ca.crt").string()), std::string::npos)
      << config.error();
}

TEST(Kubeconfig, NamesAnUnknownContextAndTheKnownOnes) {
  TempDir dir;
  auto config = load_kubeconfig(dir.write("config", two_context_kubeconfig()), "staging");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("\"staging\""), std::string::npos) << config.error();
  EXPECT_NE(config.error().find("dev, prod"), std::string::npos) << config.error();
}

TEST(Kubeconfig, NeedsAContextWhenCurrentContextIsUnset) {
  TempDir dir;
  auto config = load_kubeconfig(dir.write("config", "apiVersion: v1\nkind: Config\n"));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("current-context"), std::string::npos) << config.error();
}

TEST(Kubeconfig, NamesAnUnreadableKubeconfig) {
  TempDir dir;
  auto config = load_kubeconfig(dir.path() / "absent");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find((dir.path() / "absent").string()), std::string::npos)
      << config.error();
}

TEST(Kubeconfig, ReportsMalformedYamlWithTheFile) {
  TempDir dir;
  const auto path = dir.write("config", "clusters: [unclosed\n");
  auto config = load_kubeconfig(path);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find(path.string()), std::string::npos) << config.error();
}

std::string single_context(const std::string& cluster_body, const std::string& user_body) {
  return "current-context: c\n"
         "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
         "clusters:\n- name: k\n  cluster:\n" +
         cluster_body + "users:\n- name: u\n  user:\n" + user_body;
}

TEST(Kubeconfig, RequiresAServer) {
  TempDir dir;
  auto config = load_kubeconfig(dir.write(
      "config", single_context("    insecure-skip-tls-verify: true\n", "    token: t\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("cluster \"k\": server is not set"), std::string::npos)
      << config.error();
}

TEST(Kubeconfig, NamesTheKeyThatIsNotBase64) {
  TempDir dir;
  auto config =
      load_kubeconfig(dir.write("config", single_context("    server: https://h\n",
                                                         "    client-certificate-data: '***'\n"
                                                         "    client-key-data: a2V5\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("user \"u\": client-certificate-data is not valid base64"),
            std::string::npos)
      << config.error();
}

TEST(Kubeconfig, RefusesACertificateWithoutKey) {
  TempDir dir;
  auto config = load_kubeconfig(dir.write(
      "config",
      single_context("    server: https://h\n", "    client-certificate-data: Y2VydA==\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("client-certificate is set without client-key"), std::string::npos)
      << config.error();
}

TEST(Kubeconfig, SaysThatExecPluginsAreNotSupported) {
  TempDir dir;
  auto config = load_kubeconfig(
      dir.write("config", single_context("    server: https://h\n",
                                         "    exec:\n      command: aws\n      apiVersion: "
                                         "client.authentication.k8s.io/v1beta1\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("exec"), std::string::npos) << config.error();
}

TEST(Kubeconfig, HonoursAnExplicitInsecureSkipTlsVerify) {
  TempDir dir;
  auto config = load_kubeconfig(dir.write(
      "config", single_context("    server: https://h\n    insecure-skip-tls-verify: true\n",
                               "    token: t\n")));
  ASSERT_TRUE(config) << config.error();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
}

TEST(Kubeconfig, RefusesInsecureSkipTlsVerifyTogetherWithACa) {
  TempDir dir;
  auto config = load_kubeconfig(
      dir.write("config", single_context("    server: https://h\n    insecure-skip-tls-verify: "
                                         "true\n    certificate-authority-data: Y2E=\n",
                                         "    token: t\n")));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("insecure-skip-tls-verify"), std::string::npos) << config.error();
}

TEST(Kubeconfig, ResolvesTokenFileRelativeToTheKubeconfig) {
  TempDir dir;
  dir.write("secrets/token", "abc\n");
  auto config = load_kubeconfig(dir.write(
      "config", single_context("    server: https://h\n", "    tokenFile: secrets/token\n")));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->token_file, dir.path() / "secrets/token");
}

TEST(KubeconfigPath, PrefersTheFlagThenKubeconfigThenHome) {
  EXPECT_EQ(*kubeconfig_path("/flag/config", "/env/a:/env/b", "/home/me"), "/flag/config");
  EXPECT_EQ(*kubeconfig_path("", "/env/a:/env/b", "/home/me"), "/env/a");
  EXPECT_EQ(*kubeconfig_path("", ":/env/b", "/home/me"), "/env/b");
  EXPECT_EQ(*kubeconfig_path("", nullptr, "/home/me"), "/home/me/.kube/config");
  EXPECT_EQ(*kubeconfig_path("", "", "/home/me"), "/home/me/.kube/config");
  EXPECT_FALSE(kubeconfig_path("", nullptr, nullptr));
}

// --- in-cluster --------------------------------------------------------------------------------

InClusterEnvironment pod_environment(const TempDir& dir, std::string host) {
  dir.write("sa/token", "pod-token\n");
  dir.write("sa/ca.crt", "CLUSTER CA PEM");
  InClusterEnvironment env;
  env.service_host = std::move(host);
  env.service_port = "443";
  env.secrets_dir = dir.path() / "sa";
  return env;
}

TEST(InCluster, LoadsTheServiceAccount) {
  TempDir dir;
  auto env = pod_environment(dir, "10.96.0.1");
  dir.write("sa/namespace", "ops");
  auto config = load_in_cluster(env);
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, "CLUSTER CA PEM");
  EXPECT_EQ(config->token_file, dir.path() / "sa/token");
  EXPECT_EQ(config->ns, "ops");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

TEST(InCluster, BracketsAnIpv6ServiceHost) {
  TempDir dir;
  auto config = load_in_cluster(pod_environment(dir, "fd00:10:96::1"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->server, "https://[fd00:10:96::1]:443");
  auto address = parse_server_url(config->server);
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->host, "fd00:10:96::1");
}

TEST(InCluster, DefaultsTheNamespaceWhenTheFileIsAbsent) {
  TempDir dir;
  auto config = load_in_cluster(pod_environment(dir, "10.96.0.1"));
  ASSERT_TRUE(config) << config.error();
  EXPECT_EQ(config->ns, "default");
}

// A namespace becomes a segment of request paths: one that cannot be a namespace is refused
// where it is read, naming where it came from.
TEST(Kubeconfig, RefusesAContextNamespaceThatIsNotANamespaceName) {
  TempDir dir;
  std::string text = two_context_kubeconfig();
  text.replace(text.find("namespace: databases"), 20, "namespace: ../kube-system");
  auto config = load_kubeconfig(dir.write("config", text));
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("context \"dev\": namespace \"../kube-system\" is not a "
                                "namespace name"),
            std::string::npos)
      << config.error();
}

TEST(InCluster, RefusesANamespaceFileThatIsNotANamespaceName) {
  TempDir dir;
  auto env = pod_environment(dir, "10.96.0.1");
  dir.write("sa/namespace", "Ops/x");
  auto config = load_in_cluster(env);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("holds \"Ops/x\", not a namespace name"), std::string::npos)
      << config.error();
}

TEST(InCluster, NamesTheMissingTokenFile) {
  TempDir dir;
  auto env = pod_environment(dir, "10.96.0.1");
  std::filesystem::remove(dir.path() / "sa/token");
  auto config = load_in_cluster(env);
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find((dir.path() / "sa/token").string()), std::string::npos)
      << config.error();
}

TEST(InCluster, SaysWhenNotInAPod) {
  auto config = load_in_cluster(InClusterEnvironment{});
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().find("KUBERNETES_SERVICE_HOST"), std::string::npos) << config.error();
}

TEST(BearerTokenFile, FollowsRotationAndKeepsTheLastTokenWhenTheFileVanishes) {
  TempDir dir;
  const auto file = dir.write("token", "one\n");
  BearerToken token{"", file};
  EXPECT_EQ(*token.current(), "one");
  dir.write("token", "two-rotated");
  EXPECT_EQ(*token.current(), "two-rotated");
  std::filesystem::remove(file);
  EXPECT_EQ(*token.current(), "two-rotated");
}

TEST(BearerTokenFile, FailsWhenTheFileWasNeverReadable) {
  TempDir dir;
  BearerToken token{"", dir.path() / "absent"};
  auto current = token.current();
  ASSERT_FALSE(current);
  EXPECT_NE(current.error().find("absent"), std::string::npos) << current.error();
}

// --- TLS -------------------------------------------------------------------------------------

// An HTTPS stub that demands a client certificate signed by the same test CA.
std::unique_ptr<httplib::Server> tls_server(const TestPki& pki) {
  const auto issued = pki.server();
  return std::make_unique<httplib::SSLServer>(issued.cert.get(), issued.key.get(), pki.new_store());
}

std::string kubeconfig_for(const std::string& server, const TestPki& pki,
                           const TestPki::Issued& client) {
  return single_context("    server: " + server +
                            "\n    certificate-authority-data: " + base64(pki.ca().cert_pem) + "\n",
                        "    client-certificate-data: " + base64(client.cert_pem) +
                            "\n    client-key-data: " + base64(client.key_pem) + "\n");
}

TEST(KubeTls, TalksToAServerVerifiedByTheKubeconfigCaWithAClientCertificate) {
  TestPki pki;
  StubApiServer server{tls_server(pki)};
  server.answer(200, R"({"kind":"Pod","metadata":{"name":"web-0"}})");
  TempDir dir;
  auto config = load_kubeconfig(
      dir.write("config", kubeconfig_for(server.url(true), pki, pki.client("admin"))));
  ASSERT_TRUE(config) << config.error();
  auto kube = HttpKubernetes::create(*config);
  ASSERT_TRUE(kube) << kube.error();
  auto pod = (*kube)->get(ObjectRef{Kind::Pod, "db", "web-0"});
  ASSERT_TRUE(pod) << pod.error().message;
  EXPECT_EQ((*pod)["metadata"]["name"], "web-0");
}

TEST(KubeTls, RefusesAServerSignedByAnotherCa) {
  TestPki pki;
  TestPki other{"someone-else"};
  StubApiServer server{tls_server(pki)};
  TempDir dir;
  // Trusts `other`, presents a client certificate the server would accept.
  KubeConfig config;
  config.server = server.url(true);
  config.ca_pem = other.ca().cert_pem;
  const auto client = pki.client("admin");
  config.client_cert_pem = client.cert_pem;
  config.client_key_pem = client.key_pem;
  auto kube = HttpKubernetes::create(config);
  ASSERT_TRUE(kube) << kube.error();
  auto pod = (*kube)->get(ObjectRef{Kind::Pod, "db", "web-0"});
  ASSERT_FALSE(pod);
  EXPECT_EQ(pod.error().code, KubeErrorCode::Unreachable);
  EXPECT_NE(pod.error().message.find(httplib::to_string(httplib::Error::SSLServerVerification)),
            std::string::npos)
      << pod.error().message;
  EXPECT_TRUE(server.requests().empty());
}

TEST(KubeTls, SkipsVerificationOnlyWhenToldTo) {
  TestPki pki;
  StubApiServer server{tls_server(pki)};
  const auto client = pki.client("admin");
  KubeConfig config;
  config.server = server.url(true);
  config.client_cert_pem = client.cert_pem;
  config.client_key_pem = client.key_pem;
  config.insecure_skip_tls_verify = true;  // the test CA is in no trust store
  auto kube = HttpKubernetes::create(config);
  ASSERT_TRUE(kube) << kube.error();
  EXPECT_TRUE((*kube)->get(ObjectRef{Kind::Pod, "db", "web-0"}));
}

TEST(KubeTls, ReportsAKeyThatDoesNotMatchTheCertificate) {
  TestPki pki;
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.client_cert_pem = pki.client("a").cert_pem;
  config.client_key_pem = pki.client("b").key_pem;
  auto kube = HttpKubernetes::create(config);
  ASSERT_FALSE(kube);
  EXPECT_NE(kube.error().find("does not match"), std::string::npos) << kube.error();
}

TEST(KubeTls, ReportsACaThatIsNotPem) {
  KubeConfig config;
  config.server = "https://127.0.0.1:1";
  config.ca_pem = "DEV CA PEM";
  auto kube = HttpKubernetes::create(config);
  ASSERT_FALSE(kube);
  EXPECT_NE(kube.error().find("CA"), std::string::npos) << kube.error();
}

}  // namespace
}  // namespace stsresize
