// HttpKubernetes::watch against a scripted stream (tests/unit/http_watch_stub.h): the query it
// sends, framing end to end, errors in and before the stream, stop, the idle timeout, the
// request hook and counters.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kube/http_kubernetes.h"
#include "tests/support/kube_assertions.h"
#include "tests/unit/http_watch_stub.h"
#include "tests/unit/kube_test_support.h"

namespace stsresize {
namespace {

using namespace std::chrono_literals;
using testing::StreamStep;
using testing::WatchScript;
using testing::WatchStubServer;

std::string event_line(std::string_view type, const std::string& name, int version) {
  return Json{{"type", type},
              {"object",
               {{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", name},
                  {"namespace", "ns"},
                  {"resourceVersion", std::to_string(version)}}}}}}
             .dump() +
         "\n";
}

// What kube-apiserver says about a resourceVersion its watch cache no longer holds.
Json expired() {
  return Json{{"kind", "Status"},    {"apiVersion", "v1"},
              {"status", "Failure"}, {"message", "too old resource version: 41 (50)"},
              {"reason", "Expired"}, {"code", 410}};
}

std::unique_ptr<HttpKubernetes> client_for(const std::string& url,
                                           HttpKubernetesOptions options = {},
                                           std::string token = "secret") {
  KubeConfig config;
  config.server = url;
  config.token = std::move(token);
  auto created = HttpKubernetes::create(config, std::move(options));
  if (!created) throw std::runtime_error(created.error());
  return std::move(*created);
}

WatchOptions watch_options(Duration timeout = 5s) {
  WatchOptions options;
  options.resource_version = "41";
  options.timeout = timeout;
  return options;
}

struct Seen {
  KubeResult<void> result;
  std::vector<std::string> events;  // "Added a@42"
};

std::string describe(const WatchEvent& event) {
  return std::string{to_string(event.type)} + " " + event.object["metadata"].value("name", "") +
         "@" + event.object["metadata"].value("resourceVersion", "");
}

Seen watch_all(HttpKubernetes& kube, const WatchOptions& options = watch_options()) {
  Seen seen;
  seen.result = kube.watch(Kind::ConfigMap, "ns", options, {}, [&](const WatchEvent& event) {
    seen.events.push_back(describe(event));
    return true;
  });
  return seen;
}

TEST(HttpKubernetesWatch, SendsTheWatchQueryAndTheBearerToken) {
  WatchStubServer server;
  server.play({.status = 200, .steps = {StreamStep::end()}, .body = {}});
  auto kube = client_for(server.url());
  WatchOptions options = watch_options(2500ms);
  options.label_selector = "app in (web,db)";
  options.field_selector = "metadata.name=x";
  ASSERT_OK(watch_all(*kube, options).result);

  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const httplib::Request& request = requests[0];
  EXPECT_EQ(request.path, "/api/v1/namespaces/ns/configmaps");
  EXPECT_EQ(request.get_param_value("watch"), "1");
  EXPECT_EQ(request.get_param_value("resourceVersion"), "41");
  EXPECT_EQ(request.get_param_value("allowWatchBookmarks"), "true");
  EXPECT_EQ(request.get_param_value("timeoutSeconds"), "3");  // rounded up
  EXPECT_EQ(request.get_param_value("labelSelector"), "app in (web,db)");
  EXPECT_EQ(request.get_param_value("fieldSelector"), "metadata.name=x");
  EXPECT_EQ(request.get_header_value("Authorization"), "Bearer secret");
}

TEST(HttpKubernetesWatch, LeavesOutWhatIsNotAsked) {
  WatchStubServer server;
  server.play({.status = 200, .steps = {StreamStep::end()}, .body = {}});
  auto kube = client_for(server.url());
  WatchOptions options;
  options.allow_bookmarks = false;
  ASSERT_OK(watch_all(*kube, options).result);
  const httplib::Request request = server.requests().at(0);
  EXPECT_FALSE(request.has_param("resourceVersion"));
  EXPECT_FALSE(request.has_param("allowWatchBookmarks"));
  EXPECT_FALSE(request.has_param("labelSelector"));
  EXPECT_EQ(request.get_param_value("timeoutSeconds"), "300");
}

TEST(HttpKubernetesWatch, DeliversEventsCutAtAnyByteInOrderAndSucceedsWhenTheServerEnds) {
  const std::string stream = event_line("ADDED", "a", 42) + event_line("MODIFIED", "a", 43) +
                             event_line("BOOKMARK", "", 44) + event_line("DELETED", "a", 45);
  std::vector<StreamStep> steps;
  for (std::size_t at = 0; at < stream.size(); at += 7) {
    steps.push_back(StreamStep::send(stream.substr(at, 7)));
  }
  steps.push_back(StreamStep::send(event_line("ADDED", "b", 46) + event_line("ADDED", "c", 47)));
  steps.push_back(StreamStep::end());
  WatchStubServer server;
  server.play({.status = 200, .steps = steps, .body = {}});
  auto kube = client_for(server.url());

  const Seen seen = watch_all(*kube);
  ASSERT_OK(seen.result);
  EXPECT_EQ(seen.events, (std::vector<std::string>{"Added a@42", "Modified a@43", "Bookmark @44",
                                                   "Deleted a@45", "Added b@46", "Added c@47"}));
}

TEST(HttpKubernetesWatch, AnInStreamErrorWithCode410IsGoneAfterTheEventsBeforeIt) {
  WatchStubServer server;
  server.play(
      {.status = 200,
       .steps = {StreamStep::send(event_line("ADDED", "a", 42)),
                 StreamStep::send(Json{{"type", "ERROR"}, {"object", expired()}}.dump() + "\n"),
                 StreamStep::end()},
       .body = {}});
  auto kube = client_for(server.url());
  const Seen seen = watch_all(*kube);
  ASSERT_FALSE(seen.result);
  EXPECT_EQ(seen.result.error().code, KubeErrorCode::Gone) << seen.result.error().message;
  EXPECT_NE(seen.result.error().message.find("too old resource version"), std::string::npos);
  EXPECT_EQ(seen.events, std::vector<std::string>{"Added a@42"});
}

TEST(HttpKubernetesWatch, AnHttp410AnswerIsGone) {
  WatchStubServer server;
  server.play({.status = 410, .steps = {}, .body = expired().dump()});
  auto kube = client_for(server.url());
  const Seen seen = watch_all(*kube);
  ASSERT_FALSE(seen.result);
  EXPECT_EQ(seen.result.error().code, KubeErrorCode::Gone);
  EXPECT_NE(seen.result.error().message.find("too old resource version: 41 (50)"),
            std::string::npos)
      << seen.result.error().message;
  EXPECT_TRUE(seen.events.empty());
}

TEST(HttpKubernetesWatch, AMalformedLineIsAServerErrorNotACrash) {
  WatchStubServer server;
  server.play({.status = 200,
               .steps = {StreamStep::send(event_line("ADDED", "a", 42) + "<html>oops</html>\n"),
                         StreamStep::end()},
               .body = {}});
  auto kube = client_for(server.url());
  const Seen seen = watch_all(*kube);
  ASSERT_FALSE(seen.result);
  EXPECT_EQ(seen.result.error().code, KubeErrorCode::ServerError) << seen.result.error().message;
  EXPECT_EQ(seen.events, std::vector<std::string>{"Added a@42"});
}

TEST(HttpKubernetesWatch, AConnectionDroppedMidEventIsUnreachable) {
  const std::string line = event_line("ADDED", "b", 43);
  WatchStubServer server;
  server.play({.status = 200,
               .steps = {StreamStep::send(event_line("ADDED", "a", 42) + line.substr(0, 20)),
                         StreamStep::drop()},
               .body = {}});
  auto kube = client_for(server.url());
  const Seen seen = watch_all(*kube);
  ASSERT_FALSE(seen.result);
  EXPECT_EQ(seen.result.error().code, KubeErrorCode::Unreachable) << seen.result.error().message;
  EXPECT_EQ(seen.events, std::vector<std::string>{"Added a@42"});
}

TEST(HttpKubernetesWatch, StopAbortsASilentStreamPromptlyAndSucceeds) {
  WatchStubServer server;
  server.play({.status = 200,
               .steps = {StreamStep::send(event_line("ADDED", "a", 42)),
                         StreamStep::silence_for(30s), StreamStep::end()},
               .body = {}});
  auto kube = client_for(server.url());
  std::stop_source stop;
  std::promise<void> first_event;
  auto watching = std::async(std::launch::async, [&] {
    return kube->watch(Kind::ConfigMap, "ns", watch_options(60s), stop.get_token(),
                       [&](const WatchEvent&) {
                         first_event.set_value();
                         return true;
                       });
  });
  ASSERT_EQ(first_event.get_future().wait_for(5s), std::future_status::ready);
  std::this_thread::sleep_for(100ms);  // now blocked in a read
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(watching.wait_for(2s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
  const auto result = watching.get();
  EXPECT_TRUE(result) << result.error().message;
}

TEST(HttpKubernetesWatch, AStopRequestedBeforehandSendsNothing) {
  WatchStubServer server;
  server.play({.status = 200, .steps = {StreamStep::silence_for(30s)}, .body = {}});
  auto kube = client_for(server.url());
  std::stop_source stop;
  stop.request_stop();
  const auto result = kube->watch(Kind::ConfigMap, "ns", watch_options(), stop.get_token(),
                                  [](const WatchEvent&) { return true; });
  EXPECT_TRUE(result);
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpKubernetesWatch, AStreamStillSilentAfterTheServersTimeoutIsUnreachable) {
  WatchStubServer server;
  server.play({.status = 200,
               .steps = {StreamStep::send(event_line("ADDED", "a", 42)),
                         StreamStep::silence_for(20s), StreamStep::end()},
               .body = {}});
  HttpKubernetesOptions options;
  options.watch_timeout_grace = 300ms;
  auto kube = client_for(server.url(), options);
  const auto begun = std::chrono::steady_clock::now();
  const Seen seen = watch_all(*kube, watch_options(1s));
  EXPECT_LT(std::chrono::steady_clock::now() - begun, 5s);
  ASSERT_FALSE(seen.result);
  EXPECT_EQ(seen.result.error().code, KubeErrorCode::Unreachable) << seen.result.error().message;
  EXPECT_EQ(seen.events, std::vector<std::string>{"Added a@42"});
}

TEST(HttpKubernetesWatch, AHandlerReturningFalseEndsTheWatchAtOnce) {
  WatchStubServer server;
  server.play(
      {.status = 200,
       .steps = {StreamStep::send(event_line("ADDED", "a", 42) + event_line("ADDED", "b", 43) +
                                  event_line("ADDED", "c", 44)),
                 StreamStep::silence_for(30s), StreamStep::end()},
       .body = {}});
  auto kube = client_for(server.url());
  std::vector<std::string> seen;
  const auto begun = std::chrono::steady_clock::now();
  const auto result =
      kube->watch(Kind::ConfigMap, "ns", watch_options(60s), {}, [&](const WatchEvent& event) {
        seen.push_back(describe(event));
        return seen.size() < 2;
      });
  EXPECT_LT(std::chrono::steady_clock::now() - begun, 5s);
  ASSERT_OK(result);
  EXPECT_EQ(seen, (std::vector<std::string>{"Added a@42", "Added b@43"}));
}

TEST(HttpKubernetesWatch, EveryRequestReachesTheHookAndTheCounters) {
  WatchStubServer server;
  server.play({.status = 200, .steps = {StreamStep::end()}, .body = {}});
  std::mutex mutex;
  std::vector<std::pair<std::string, int>> reported;
  std::vector<std::string> requests;
  HttpKubernetesOptions options;
  options.on_request = [&](std::string_view verb, std::string_view request, int status,
                           Duration latency) {
    std::lock_guard lock{mutex};
    EXPECT_GE(latency.count(), 0);
    reported.emplace_back(std::string{verb}, status);
    requests.emplace_back(request);
  };
  auto kube = client_for(server.url(), options);
  ASSERT_OK(watch_all(*kube).result);
  ASSERT_TRUE(kube->get({Kind::ConfigMap, "ns", "x"}));  // the stub answers 200 with no events

  server.play({.status = 503, .steps = {}, .body = "{}"});
  EXPECT_FALSE(watch_all(*kube).result);

  auto unreachable = client_for("http://127.0.0.1:1", options);
  const Seen refused = watch_all(*unreachable);
  ASSERT_FALSE(refused.result);
  EXPECT_EQ(refused.result.error().code, KubeErrorCode::Unreachable);

  std::lock_guard lock{mutex};
  EXPECT_EQ(reported, (std::vector<std::pair<std::string, int>>{
                          {"watch", 200}, {"get", 200}, {"watch", 503}, {"watch", 0}}));
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1], "GET /api/v1/namespaces/ns/configmaps/x");
  EXPECT_TRUE(requests[0].starts_with("GET /api/v1/namespaces/ns/configmaps?watch=1"))
      << requests[0];
  EXPECT_EQ(kube->counters().count("watch", 200), 1u);
  EXPECT_EQ(kube->counters().count("watch", 503), 1u);
  EXPECT_EQ(unreachable->counters().count("watch", 0), 1u);
}

TEST(HttpKubernetesWatch, EachWatchSendsTheCurrentTokenOfARotatedFile) {
  testing::TempDir dir;
  const auto token_file = dir.write("token", "first-token");
  WatchStubServer server;
  server.play({.status = 200, .steps = {StreamStep::end()}, .body = {}});
  KubeConfig config;
  config.server = server.url();
  config.token_file = token_file;
  auto created = HttpKubernetes::create(config);
  ASSERT_TRUE(created) << created.error();
  HttpKubernetes& kube = **created;

  ASSERT_OK(watch_all(kube).result);
  dir.write("token", "second-token-rotated");
  ASSERT_OK(watch_all(kube).result);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].get_header_value("Authorization"), "Bearer first-token");
  EXPECT_EQ(requests[1].get_header_value("Authorization"), "Bearer second-token-rotated");
}

}  // namespace
}  // namespace stsresize
