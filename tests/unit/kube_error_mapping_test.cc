// HttpKubernetes against a scripted API server: how answers map to KubeError, and what the
// requests look like on the wire.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "adapters/kube/http_kubernetes.h"
#include "tests/unit/kube_test_support.h"

namespace stsresize {
namespace {

using testing::ScriptedAnswer;
using testing::StubApiServer;
using testing::TempDir;

std::unique_ptr<HttpKubernetes> client_for(const std::string& server,
                                           HttpKubernetesOptions options = {}) {
  KubeConfig config;
  config.server = server;
  config.token = "s3cret-token";
  config.source = "test";
  auto client = HttpKubernetes::create(config, options);
  if (!client) throw std::runtime_error(client.error());
  return std::move(*client);
}

std::string status_body(int code, const std::string& reason, const std::string& message,
                        Json details = nullptr) {
  Json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                 {"message", message}, {"reason", reason},   {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status.dump();
}

const ObjectRef kPvc{Kind::PersistentVolumeClaim, "db", "data-web-0"};

KubeError error_of(KubeResult<Json> result) {
  if (result) throw std::runtime_error("expected an error, got " + result->dump());
  return result.error();
}

class HttpKubernetesTest : public ::testing::Test {
 protected:
  StubApiServer server_;
  std::unique_ptr<HttpKubernetes> kube_ = client_for(server_.url());
};

// --- error mapping ---------------------------------------------------------------------------

TEST_F(HttpKubernetesTest, MapsNotFoundAndKeepsTheServerMessage) {
  server_.answer(404,
                 status_body(404, "NotFound", R"(persistentvolumeclaims "data-web-0" not found)"));
  const KubeError error = error_of(kube_->get(kPvc));
  EXPECT_EQ(error.code, KubeErrorCode::NotFound);
  EXPECT_NE(error.message.find(R"(persistentvolumeclaims "data-web-0" not found)"),
            std::string::npos)
      << error.message;
  EXPECT_NE(error.message.find("GET /api/v1/namespaces/db/persistentvolumeclaims/data-web-0"),
            std::string::npos)
      << error.message;
  EXPECT_FALSE(error.transient());
}

TEST_F(HttpKubernetesTest, Maps409WithReasonAlreadyExistsToAlreadyExists) {
  server_.answer(409, status_body(409, "AlreadyExists", R"(configmaps "x" already exists)"));
  const KubeError error = error_of(
      kube_->create(Kind::ConfigMap, Json{{"metadata", {{"name", "x"}, {"namespace", "db"}}}}));
  EXPECT_EQ(error.code, KubeErrorCode::AlreadyExists);
}

TEST_F(HttpKubernetesTest, Maps409WithReasonConflictToConflict) {
  server_.answer(409, status_body(409, "Conflict",
                                  "Operation cannot be fulfilled on configmaps \"x\": the object "
                                  "has been modified; please apply your changes to the latest "
                                  "version and try again"));
  const KubeError error = error_of(kube_->update(
      Kind::ConfigMap,
      Json{{"metadata", {{"name", "x"}, {"namespace", "db"}, {"resourceVersion", "1"}}}}));
  EXPECT_EQ(error.code, KubeErrorCode::Conflict);
  EXPECT_TRUE(error.transient());
}

TEST_F(HttpKubernetesTest, Maps409WithoutReasonToConflict) {
  server_.answer(409, "{}");
  EXPECT_EQ(error_of(kube_->get(kPvc)).code, KubeErrorCode::Conflict);
}

TEST_F(HttpKubernetesTest, Maps410ToGone) {
  server_.answer(410, status_body(410, "Expired", "too old resource version: 5 (42)"));
  auto result = kube_->list(Kind::Pod, "db");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, KubeErrorCode::Gone);
}

TEST_F(HttpKubernetesTest, Maps422ToInvalidWithEveryCauseInTheMessage) {
  const Json details = {{"name", "web"},
                        {"kind", "statefulsets"},
                        {"causes",
                         {{{"reason", "FieldValueInvalid"},
                           {"field", "spec.replicas"},
                           {"message", "must be greater than or equal to 0"}},
                          {{"reason", "FieldValueRequired"},
                           {"field", "spec.selector"},
                           {"message", "Required value"}}}}};
  server_.answer(422, status_body(422, "Invalid", R"(StatefulSet.apps "web" is invalid)", details));
  const KubeError error = error_of(
      kube_->update(Kind::StatefulSet, Json{{"metadata", {{"name", "web"}, {"namespace", "db"}}}}));
  EXPECT_EQ(error.code, KubeErrorCode::Invalid);
  EXPECT_NE(error.message.find("spec.replicas: must be greater than or equal to 0"),
            std::string::npos)
      << error.message;
  EXPECT_NE(error.message.find("spec.selector: Required value"), std::string::npos)
      << error.message;
}

TEST_F(HttpKubernetesTest, DoesNotRepeatCausesTheServerMessageAlreadyNames) {
  const Json details = {
      {"causes", {{{"field", "spec.replicas"}, {"message", "Invalid value: -1: must be >= 0"}}}}};
  server_.answer(422, status_body(422, "Invalid",
                                  R"(StatefulSet.apps "web" is invalid: spec.replicas: )"
                                  R"(Invalid value: -1: must be >= 0)",
                                  details));
  const KubeError error = error_of(kube_->get(kPvc));
  const std::string cause = "spec.replicas: Invalid value: -1: must be >= 0";
  const auto first = error.message.find(cause);
  ASSERT_NE(first, std::string::npos) << error.message;
  EXPECT_EQ(error.message.find(cause, first + 1), std::string::npos) << error.message;
}

TEST_F(HttpKubernetesTest, Maps400ToBadRequest) {
  server_.answer(400, status_body(400, "BadRequest", "the server rejected our request"));
  EXPECT_EQ(error_of(kube_->get(kPvc)).code, KubeErrorCode::BadRequest);
}

TEST_F(HttpKubernetesTest, MapsOther4xxToBadRequest) {
  server_.answer(415, status_body(415, "UnsupportedMediaType", "the body was not understood"));
  EXPECT_EQ(error_of(kube_->get(kPvc)).code, KubeErrorCode::BadRequest);
}

TEST_F(HttpKubernetesTest, Maps401ToUnauthorized) {
  server_.answer(401, status_body(401, "Unauthorized", "Unauthorized"));
  const KubeError error = error_of(kube_->get(kPvc));
  EXPECT_EQ(error.code, KubeErrorCode::Unauthorized);
  EXPECT_FALSE(error.transient());
}

TEST_F(HttpKubernetesTest, Maps403ToForbiddenNamingVerbAndResource) {
  const std::string denial =
      R"(persistentvolumeclaims "data-web-0" is forbidden: User "system:serviceaccount:ops:)"
      R"(stsresize" cannot delete resource "persistentvolumeclaims" in API group "" in the )"
      R"(namespace "db")";
  server_.answer(403, status_body(403, "Forbidden", denial));
  auto result = kube_->remove(kPvc);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, KubeErrorCode::Forbidden);
  EXPECT_NE(result.error().message.find(denial), std::string::npos) << result.error().message;
}

TEST_F(HttpKubernetesTest, Maps429ToTooManyRequestsWithRetryAfterFromTheHeader) {
  server_.answer(429, status_body(429, "TooManyRequests", "too many requests"),
                 {{"Retry-After", "7"}});
  const KubeError error = error_of(kube_->get(kPvc));
  EXPECT_EQ(error.code, KubeErrorCode::TooManyRequests);
  EXPECT_EQ(error.retry_after, std::chrono::seconds{7});
  EXPECT_TRUE(error.transient());
}

TEST_F(HttpKubernetesTest, TakesRetryAfterFromStatusDetailsWhenTheHeaderIsMissing) {
  server_.answer(429,
                 status_body(429, "TooManyRequests", "slow down", Json{{"retryAfterSeconds", 3}}));
  EXPECT_EQ(error_of(kube_->get(kPvc)).retry_after, std::chrono::seconds{3});
}

TEST_F(HttpKubernetesTest, Maps5xxToServerError) {
  for (const int status : {500, 503, 504}) {
    server_.answer(status, status_body(status, "InternalError", "etcdserver: request timed out"));
    const KubeError error = error_of(kube_->get(kPvc));
    EXPECT_EQ(error.code, KubeErrorCode::ServerError) << status;
    EXPECT_NE(error.message.find("HTTP " + std::to_string(status)), std::string::npos)
        << error.message;
  }
}

TEST_F(HttpKubernetesTest, ShowsTheBodyOfAnAnswerThatIsNotAStatus) {
  server_.answer(502, "<html>bad gateway from the proxy</html>");
  const KubeError error = error_of(kube_->get(kPvc));
  EXPECT_EQ(error.code, KubeErrorCode::ServerError);
  EXPECT_NE(error.message.find("bad gateway from the proxy"), std::string::npos) << error.message;
}

TEST_F(HttpKubernetesTest, TreatsA2xxBodyThatIsNotJsonAsServerError) {
  server_.answer(200, "this is not json");
  EXPECT_EQ(error_of(kube_->get(kPvc)).code, KubeErrorCode::ServerError);
}

TEST(HttpKubernetes, MapsRefusedConnectionToUnreachableNamingTheTransportError) {
  std::string url;
  {
    StubApiServer gone;
    url = gone.url();
  }  // nothing listens on that port any more
  auto kube = client_for(url);
  const KubeError error = error_of(kube->get(kPvc));
  EXPECT_EQ(error.code, KubeErrorCode::Unreachable);
  EXPECT_NE(error.message.find(httplib::to_string(httplib::Error::Connection)), std::string::npos)
      << error.message;
  EXPECT_TRUE(error.transient());
  EXPECT_EQ(kube->counters().count("get", 0), 1u);
}

TEST(HttpKubernetes, MapsReadTimeoutToUnreachable) {
  StubApiServer server;
  HttpKubernetesOptions options;
  options.read_timeout = std::chrono::milliseconds{200};
  auto kube = client_for(server.url(), options);
  server.hold();
  const KubeError error = error_of(kube->get(kPvc));
  server.release();
  EXPECT_EQ(error.code, KubeErrorCode::Unreachable);
  EXPECT_NE(error.message.find(httplib::to_string(httplib::Error::Read)), std::string::npos)
      << error.message;
}

TEST(KubeErrorMapping, ParsesStatusWithoutAnyTransport) {
  const KubeError error =
      error_from_response(409, status_body(409, "AlreadyExists", "exists"), "", "POST /x");
  EXPECT_EQ(error.code, KubeErrorCode::AlreadyExists);
  EXPECT_EQ(error.message, "POST /x: HTTP 409 Conflict: exists");
  EXPECT_EQ(error.retry_after, Duration{0});
}

TEST(KubeErrorMapping, IgnoresARetryAfterThatIsNotSeconds) {
  const KubeError error = error_from_response(429, "{}", "Wed, 21 Oct 2015 07:28:00 GMT", "GET /");
  EXPECT_EQ(error.code, KubeErrorCode::TooManyRequests);
  EXPECT_EQ(error.retry_after, Duration{0});
}

// --- request shapes ------------------------------------------------------------------------

TEST_F(HttpKubernetesTest, GetsANamespacedObjectWithBearerTokenAndJsonAccept) {
  server_.answer(200, R"({"kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0"}})");
  auto result = kube_->get(kPvc);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ((*result)["metadata"]["name"], "data-web-0");
  const auto request = server_.last();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/api/v1/namespaces/db/persistentvolumeclaims/data-web-0");
  EXPECT_EQ(request.header("Authorization"), "Bearer s3cret-token");
  EXPECT_EQ(request.header("Accept"), "application/json");
}

TEST_F(HttpKubernetesTest, BuildsThePathOfEveryKind) {
  const std::vector<std::pair<ObjectRef, std::string>> cases = {
      {{Kind::StatefulSet, "db", "web"}, "/apis/apps/v1/namespaces/db/statefulsets/web"},
      {{Kind::PersistentVolumeClaim, "db", "c"}, "/api/v1/namespaces/db/persistentvolumeclaims/c"},
      {{Kind::PersistentVolume, "", "pv-1"}, "/api/v1/persistentvolumes/pv-1"},
      {{Kind::Job, "db", "copy"}, "/apis/batch/v1/namespaces/db/jobs/copy"},
      {{Kind::Pod, "db", "web-0"}, "/api/v1/namespaces/db/pods/web-0"},
      {{Kind::StorageClass, "", "fast"}, "/apis/storage.k8s.io/v1/storageclasses/fast"},
      {{Kind::Event, "db", "e.1"}, "/api/v1/namespaces/db/events/e.1"},
      {{Kind::ConfigMap, "db", "cm"}, "/api/v1/namespaces/db/configmaps/cm"},
      {{Kind::Lease, "ops", "stsresize"},
       "/apis/coordination.k8s.io/v1/namespaces/ops/leases/stsresize"},
  };
  for (const auto& [ref, path] : cases) {
    ASSERT_TRUE(kube_->get(ref)) << to_string(ref);
    EXPECT_EQ(server_.last().target, path) << to_string(ref);
  }
}

TEST_F(HttpKubernetesTest, IgnoresTheNamespaceOfAClusterScopedRef) {
  ASSERT_TRUE(kube_->get(ObjectRef{Kind::PersistentVolume, "db", "pv-1"}));
  EXPECT_EQ(server_.last().target, "/api/v1/persistentvolumes/pv-1");
}

TEST_F(HttpKubernetesTest, AnswersANamelessRefOrBodyWithoutListingTheCollection) {
  EXPECT_EQ(error_of(kube_->get(ObjectRef{Kind::Pod, "db", ""})).code, KubeErrorCode::NotFound);
  EXPECT_EQ(error_of(kube_->update(Kind::Pod, Json{{"metadata", {{"namespace", "db"}}}})).code,
            KubeErrorCode::BadRequest);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(HttpKubernetesTest, ListsWithEncodedSelectorsPagingAndReturnsListMetadata) {
  server_.answer(200, R"({"kind":"PodList","apiVersion":"v1",
      "metadata":{"resourceVersion":"4711","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ=="},
      "items":[{"metadata":{"name":"web-0"}},{"metadata":{"name":"web-1"}}]})");
  ListOptions options;
  options.label_selector = "app in (web,db),stsresize.dev/operation";
  options.field_selector = "status.phase!=Running";
  options.limit = 2;
  options.continue_token = "abc+/=";
  auto list = kube_->list(Kind::Pod, "db", options);
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_EQ(list->resource_version, "4711");
  EXPECT_EQ(list->continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==");
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[1]["metadata"]["name"], "web-1");
  EXPECT_FALSE(list->items[0].contains("kind")) << "items are passed on as the server sent them";

  const auto request = server_.last();
  EXPECT_EQ(request.target,
            "/api/v1/namespaces/db/pods"
            "?labelSelector=app%20in%20%28web%2Cdb%29%2Cstsresize.dev%2Foperation"
            "&fieldSelector=status.phase%21%3DRunning&limit=2&continue=abc%2B%2F%3D");
  // And the server decodes back exactly what was asked for.
  EXPECT_EQ(request.params.find("labelSelector")->second, options.label_selector);
  EXPECT_EQ(request.params.find("continue")->second, options.continue_token);
}

TEST_F(HttpKubernetesTest, ListsAcrossAllNamespacesWhenNamespaceIsEmpty) {
  server_.answer(200, R"({"metadata":{"resourceVersion":"1"},"items":[]})");
  auto list = kube_->list(Kind::StatefulSet, "");
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_TRUE(list->items.empty());
  EXPECT_TRUE(list->continue_token.empty());
  EXPECT_EQ(server_.last().target, "/apis/apps/v1/statefulsets");
}

TEST_F(HttpKubernetesTest, CreatesByPostingToTheCollectionOfTheObjectsNamespace) {
  const Json job = {{"apiVersion", "batch/v1"},
                    {"kind", "Job"},
                    {"metadata", {{"name", "copy-web-0"}, {"namespace", "db"}}}};
  server_.answer(201, job.dump());
  auto created = kube_->create(Kind::Job, job);
  ASSERT_TRUE(created) << created.error().message;
  const auto request = server_.last();
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.target, "/apis/batch/v1/namespaces/db/jobs");
  EXPECT_EQ(request.header("Content-Type"), "application/json");
  EXPECT_EQ(Json::parse(request.body), job);
}

TEST_F(HttpKubernetesTest, CreatesAClusterScopedObjectWithoutNamespaceInThePath) {
  ASSERT_TRUE(kube_->create(Kind::PersistentVolume, Json{{"metadata", {{"name", "pv-9"}}}}));
  EXPECT_EQ(server_.last().target, "/api/v1/persistentvolumes");
}

TEST_F(HttpKubernetesTest, RefusesToCreateANamespacedObjectWithoutNamespaceAsInvalid) {
  const KubeError error =
      error_of(kube_->create(Kind::ConfigMap, Json{{"metadata", {{"name", "x"}}}}));
  EXPECT_EQ(error.code, KubeErrorCode::Invalid);
  EXPECT_NE(error.message.find("metadata.namespace: Required value"), std::string::npos)
      << error.message;
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(HttpKubernetesTest, UpdatesWithPutAndStatusWithPutOnTheStatusSubresource) {
  const Json sts = {{"metadata", {{"name", "web"}, {"namespace", "db"}, {"resourceVersion", "9"}}},
                    {"spec", {{"replicas", 0}}}};
  ASSERT_TRUE(kube_->update(Kind::StatefulSet, sts));
  auto request = server_.last();
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.target, "/apis/apps/v1/namespaces/db/statefulsets/web");
  EXPECT_EQ(Json::parse(request.body), sts);

  ASSERT_TRUE(kube_->update_status(Kind::StatefulSet, sts));
  request = server_.last();
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.target, "/apis/apps/v1/namespaces/db/statefulsets/web/status");
}

TEST_F(HttpKubernetesTest, PatchesWithTheContentTypeOfThePatchType) {
  const Json merge = {{"metadata", {{"annotations", {{"stsresize.dev/phase", "ScalingDown"}}}}}};
  ASSERT_TRUE(kube_->patch(ObjectRef{Kind::StatefulSet, "db", "web"}, PatchType::Merge, merge));
  auto request = server_.last();
  EXPECT_EQ(request.method, "PATCH");
  EXPECT_EQ(request.target, "/apis/apps/v1/namespaces/db/statefulsets/web");
  EXPECT_EQ(request.header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(Json::parse(request.body), merge);

  const Json ops = Json::array({{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 0}}});
  ASSERT_TRUE(kube_->patch(ObjectRef{Kind::StatefulSet, "db", "web"}, PatchType::Json, ops));
  request = server_.last();
  EXPECT_EQ(request.header("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(Json::parse(request.body), ops);
}

TEST_F(HttpKubernetesTest, DeletesWithDeleteOptionsCarryingPolicyPreconditionsAndGracePeriod) {
  server_.answer(200, status_body(200, "", ""));
  DeleteOptions options;
  options.propagation = Propagation::Foreground;
  options.uid = "4f1c-uid";
  options.resource_version = "77";
  options.grace_period_seconds = 0;
  ASSERT_TRUE(kube_->remove(kPvc, options));
  const auto request = server_.last();
  EXPECT_EQ(request.method, "DELETE");
  EXPECT_EQ(request.target, "/api/v1/namespaces/db/persistentvolumeclaims/data-web-0");
  EXPECT_EQ(request.header("Content-Type"), "application/json");
  EXPECT_EQ(Json::parse(request.body),
            (Json{{"apiVersion", "v1"},
                  {"kind", "DeleteOptions"},
                  {"propagationPolicy", "Foreground"},
                  {"preconditions", {{"uid", "4f1c-uid"}, {"resourceVersion", "77"}}},
                  {"gracePeriodSeconds", 0}}));
}

TEST_F(HttpKubernetesTest, DeletesWithDefaultOptionsLeavingPolicyToTheServer) {
  server_.answer(202, R"({"kind":"PersistentVolumeClaim"})");
  ASSERT_TRUE(kube_->remove(kPvc));
  EXPECT_EQ(Json::parse(server_.last().body),
            (Json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}}));
}

TEST(HttpKubernetes, PrefixesThePathOfTheServerUrl) {
  StubApiServer server;
  auto kube = client_for(server.url() + "/k8s/clusters/c-1/");
  ASSERT_TRUE(kube->get(kPvc));
  EXPECT_EQ(server.last().target,
            "/k8s/clusters/c-1/api/v1/namespaces/db/persistentvolumeclaims/data-web-0");
}

TEST(HttpKubernetes, SendsTheRotatedTokenAfterTheTokenFileChanges) {
  StubApiServer server;
  TempDir dir;
  const auto token_file = dir.write("token", "first-token\n");
  KubeConfig config;
  config.server = server.url();
  config.token_file = token_file;
  auto kube = HttpKubernetes::create(config);
  ASSERT_TRUE(kube) << kube.error();
  ASSERT_TRUE((*kube)->get(kPvc));
  EXPECT_EQ(server.last().header("Authorization"), "Bearer first-token");
  dir.write("token", "the-second-token\n");
  ASSERT_TRUE((*kube)->get(kPvc));
  EXPECT_EQ(server.last().header("Authorization"), "Bearer the-second-token");
}

TEST_F(HttpKubernetesTest, SendsRawRequestsAsGiven) {
  server_.answer(201, R"({"kind":"Namespace","metadata":{"name":"t-1"}})");
  auto created = kube_->raw("POST", "/api/v1/namespaces", Json{{"metadata", {{"name", "t-1"}}}});
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ((*created)["kind"], "Namespace");
  EXPECT_EQ(server_.last().target, "/api/v1/namespaces");
  EXPECT_EQ(kube_->counters().count("raw", 201), 1u);
}

TEST_F(HttpKubernetesTest, CountsRequestsByOperationAndStatus) {
  server_.answer(200, "{}");
  ASSERT_TRUE(kube_->get(kPvc));
  ASSERT_TRUE(kube_->get(kPvc));
  server_.answer(404, status_body(404, "NotFound", "gone"));
  ASSERT_FALSE(kube_->get(kPvc));
  ASSERT_FALSE(kube_->remove(kPvc));
  EXPECT_EQ(kube_->counters().count("get", 200), 2u);
  EXPECT_EQ(kube_->counters().count("get", 404), 1u);
  EXPECT_EQ(kube_->counters().count("delete", 404), 1u);
  EXPECT_EQ(kube_->counters().count("list", 200), 0u);
  EXPECT_EQ(kube_->counters().snapshot().size(), 3u);
}

TEST_F(HttpKubernetesTest, ServesConcurrentCallersWithoutLosingRequests) {
  server_.answer(200, R"({"metadata":{"name":"data-web-0"}})");
  constexpr int kThreads = 6;
  constexpr int kCallsEach = 25;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCallsEach; ++i) {
        if (!kube_->get(kPvc)) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server_.requests().size(), std::size_t{kThreads * kCallsEach});
  EXPECT_EQ(kube_->counters().count("get", 200), std::uint64_t{kThreads * kCallsEach});
}

// --- URLs ------------------------------------------------------------------------------------

TEST(ServerUrl, ParsesHostPortAndPathPrefix) {
  auto address = parse_server_url("https://api.example.com:6443/prefix/");
  ASSERT_TRUE(address) << address.error();
  EXPECT_TRUE(address->tls);
  EXPECT_EQ(address->host, "api.example.com");
  EXPECT_EQ(address->port, 6443);
  EXPECT_EQ(address->base_path, "/prefix");
}

TEST(ServerUrl, DefaultsThePortToTheScheme) {
  EXPECT_EQ(parse_server_url("https://10.0.0.1")->port, 443);
  EXPECT_EQ(parse_server_url("http://10.0.0.1")->port, 80);
  EXPECT_FALSE(parse_server_url("http://10.0.0.1")->tls);
}

TEST(ServerUrl, TakesIpv6HostsOutOfBrackets) {
  auto address = parse_server_url("https://[fd00::1]:6443");
  ASSERT_TRUE(address) << address.error();
  EXPECT_EQ(address->host, "fd00::1");
  EXPECT_EQ(address->port, 6443);
}

TEST(ServerUrl, RejectsWhatItCannotReach) {
  EXPECT_FALSE(parse_server_url("api.example.com:6443"));
  EXPECT_FALSE(parse_server_url("https://fd00::1:6443"));
  EXPECT_FALSE(parse_server_url("https://host:99999"));
  EXPECT_FALSE(parse_server_url("https://host:"));
  EXPECT_FALSE(parse_server_url("https://"));
  EXPECT_FALSE(parse_server_url("https://[fd00::1"));
}

TEST(UrlEncode, KeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(url_encode("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(url_encode("a=b,c d/é"), "a%3Db%2Cc%20d%2F%C3%A9");
}

}  // namespace
}  // namespace stsresize
