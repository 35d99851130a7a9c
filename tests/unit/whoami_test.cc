// authenticated_username against a scripted API server: the request it sends and how it reads
// (or refuses) the answer.
#include "adapters/kube/whoami.h"

#include <gtest/gtest.h>

#include "tests/unit/kube_test_support.h"

namespace stsresize {
namespace {

using testing::StubApiServer;

class WhoamiTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpKubernetes> client() {
    KubeConfig config;
    config.server = server_.url();
    config.token = "t0ken";
    config.user = "kubeconfig-nickname";
    config.source = "test";
    auto kube = HttpKubernetes::create(config);
    if (!kube) throw std::runtime_error(kube.error());
    return std::move(*kube);
  }
  StubApiServer server_;
};

TEST_F(WhoamiTest, PostsASelfSubjectReviewAndReturnsTheUserTheServerNames) {
  server_.answer(201, R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview",
    "status":{"userInfo":{"username":"alice@example.com","groups":["ops"]}}})");
  auto name = authenticated_username(*client());
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(*name, "alice@example.com");
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/apis/authentication.k8s.io/v1/selfsubjectreviews");
  const Json body = Json::parse(requests[0].body);
  EXPECT_EQ(body.at("kind"), "SelfSubjectReview");
  EXPECT_EQ(body.at("apiVersion"), "authentication.k8s.io/v1");
}

TEST_F(WhoamiTest, AnOlderServerWithoutTheApiIsNotFound) {
  server_.answer(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound",
    "code":404,"message":"the server could not find the requested resource"})");
  auto name = authenticated_username(*client());
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, KubeErrorCode::NotFound);
}

TEST_F(WhoamiTest, AnAnswerWithoutAUserNameIsAnError) {
  for (const char* body :
       {R"({"status":{"userInfo":{"username":""}}})", R"({"status":{"userInfo":{"uid":"x"}}})",
        R"({"status":{}})", R"({"status":{"userInfo":{"username":7}}})", R"([])"}) {
    server_.answer(201, body);
    auto name = authenticated_username(*client());
    ASSERT_FALSE(name) << body;
    EXPECT_EQ(name.error().code, KubeErrorCode::ServerError) << body;
    EXPECT_NE(name.error().message.find("userInfo.username"), std::string::npos) << body;
  }
}

}  // namespace
}  // namespace stsresize
