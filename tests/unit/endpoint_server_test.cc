#include "adapters/server/probe_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

namespace stsresize {
namespace {

TEST(ParseBindAddress, ControllerRuntimeSpellings) {
  auto any = parse_bind_address(":8080");
  ASSERT_TRUE(any && *any);
  EXPECT_EQ((*any)->host, "0.0.0.0");
  EXPECT_EQ((*any)->port, 8080);
  auto loopback = parse_bind_address("127.0.0.1:9");
  ASSERT_TRUE(loopback && *loopback);
  EXPECT_EQ((*loopback)->host, "127.0.0.1");
  auto v6 = parse_bind_address("[::1]:8443");
  ASSERT_TRUE(v6 && *v6);
  EXPECT_EQ((*v6)->host, "::1");
  EXPECT_EQ((*v6)->port, 8443);
  auto disabled = parse_bind_address("0");
  ASSERT_TRUE(disabled);
  EXPECT_FALSE(disabled->has_value());
}

TEST(ParseBindAddress, RefusesWithTheReason) {
  for (const char* text : {"8080", "host:", "host:http", ":70000", "::1:80", "[::1]80"}) {
    auto parsed = parse_bind_address(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_NE(parsed.error().find(text), std::string::npos) << parsed.error();
  }
}

TEST(EndpointServer, ServesChecksAndMetricsAndReportsNotReady) {
  std::atomic<bool> ready{false};
  auto server = EndpointServer::start(
      {"127.0.0.1", 0}, {.healthz = [] { return Check{}; },
                         .readyz =
                             [&] {
                               return Check{ready.load(), ready ? "" : "informers: 2/4 synced"};
                             },
                         .metrics = [] { return std::string{"stsresize_up 1\n"}; }});
  ASSERT_TRUE(server) << server.error();
  httplib::Client client("127.0.0.1", (*server)->port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto not_ready = client.Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  EXPECT_NE(not_ready->body.find("informers: 2/4 synced"), std::string::npos);
  ready = true;
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->body, "stsresize_up 1\n");
  EXPECT_NE(metrics->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_EQ(client.Get("/nothing")->status, 404);
}

TEST(EndpointServer, ATakenPortIsAnErrorAtStartAndStopFreesIt) {
  auto first = EndpointServer::start({"127.0.0.1", 0}, {.healthz = [] { return Check{}; }});
  ASSERT_TRUE(first);
  const int port = (*first)->port();
  auto second = EndpointServer::start({"127.0.0.1", port}, {});
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().find(std::to_string(port)), std::string::npos);
  (*first)->stop();
  first->reset();
  auto again = EndpointServer::start({"127.0.0.1", port}, {});
  EXPECT_TRUE(again) << (again ? "" : again.error());
}

TEST(EndpointServer, StopRightAfterStartDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    auto server = EndpointServer::start({"127.0.0.1", 0}, {});
    ASSERT_TRUE(server);
  }
}

}  // namespace
}  // namespace stsresize
