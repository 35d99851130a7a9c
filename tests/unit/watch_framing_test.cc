// LineFramer (watch stream lines out of arbitrary chunks) and decode_watch_event.
#include "adapters/kube/watch_framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stsresize {
namespace {

std::vector<std::string> feed_all(LineFramer& framer, const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  for (const std::string& chunk : chunks) {
    const auto fed = framer.feed(chunk, [&](std::string_view line) {
      lines.emplace_back(line);
      return true;
    });
    EXPECT_EQ(fed, LineFramer::Fed::Consumed);
  }
  return lines;
}

TEST(LineFramer, DeliversTheSameLinesWhereverTheChunksAreCut) {
  const std::string stream = "{\"a\":1}\n{\"b\":22}\n{\"c\":333}\n";
  const std::vector<std::string> expected = {"{\"a\":1}", "{\"b\":22}", "{\"c\":333}"};
  for (std::size_t first = 0; first <= stream.size(); ++first) {
    for (std::size_t second = first; second <= stream.size(); ++second) {
      LineFramer framer;
      const auto lines = feed_all(
          framer,
          {stream.substr(0, first), stream.substr(first, second - first), stream.substr(second)});
      ASSERT_EQ(lines, expected) << "cut at " << first << " and " << second;
      EXPECT_EQ(framer.pending(), 0u);
    }
  }
}

TEST(LineFramer, DeliversManyLinesOfOneChunkInOrderAndKeepsOnlyThePartialTail) {
  LineFramer framer;
  std::string chunk;
  std::vector<std::string> expected;
  for (int i = 0; i < 100; ++i) {
    expected.push_back("{\"n\":" + std::to_string(i) + "}");
    chunk += expected.back() + "\n";
  }
  chunk += "{\"partial\":";
  EXPECT_EQ(feed_all(framer, {chunk}), expected);
  EXPECT_EQ(framer.pending(), std::string{"{\"partial\":"}.size());
  EXPECT_EQ(feed_all(framer, {"true}\n"}), std::vector<std::string>{"{\"partial\":true}"});
  EXPECT_EQ(framer.pending(), 0u);
}

TEST(LineFramer, SkipsEmptyLinesAndDropsCarriageReturns) {
  LineFramer framer;
  EXPECT_EQ(feed_all(framer, {"\n\r\n{\"x\":1}\r\n", "\n", "{\"y\":2}\n"}),
            (std::vector<std::string>{"{\"x\":1}", "{\"y\":2}"}));
}

TEST(LineFramer, AssemblesAHugeLineFromSmallChunksOnce) {
  const std::string huge = "{\"data\":\"" + std::string(8u << 20, 'x') + "\"}";
  const std::string stream = huge + "\n{\"after\":1}\n";
  LineFramer framer;
  std::vector<std::size_t> sizes;
  bool huge_intact = false;
  constexpr std::size_t kChunk = 4096;
  for (std::size_t at = 0; at < stream.size(); at += kChunk) {
    framer.feed(std::string_view{stream}.substr(at, kChunk), [&](std::string_view line) {
      sizes.push_back(line.size());
      if (line.size() == huge.size()) huge_intact = line == huge;
      return true;
    });
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{huge.size(), std::string{"{\"after\":1}"}.size()}));
  EXPECT_TRUE(huge_intact);
  EXPECT_EQ(framer.pending(), 0u);
}

TEST(LineFramer, RefusesALineLongerThanItsLimit) {
  LineFramer framer{16};
  int delivered = 0;
  const auto count = [&](std::string_view) {
    ++delivered;
    return true;
  };
  EXPECT_EQ(framer.feed("{\"short\":1}\n{\"long\":", count), LineFramer::Fed::Consumed);
  EXPECT_EQ(framer.feed("\"0123456789\"", count), LineFramer::Fed::LineTooLong);
  EXPECT_EQ(delivered, 1);
}

TEST(LineFramer, StopsAtTheLineItsHandlerRefuses) {
  LineFramer framer;
  std::vector<std::string> lines;
  const auto fed = framer.feed("{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n", [&](std::string_view line) {
    lines.emplace_back(line);
    return lines.size() < 2;
  });
  EXPECT_EQ(fed, LineFramer::Fed::Stopped);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
}

TEST(DecodeWatchEvent, MapsEveryEventType) {
  const std::vector<std::pair<std::string, WatchEventType>> cases = {
      {"ADDED", WatchEventType::Added},
      {"MODIFIED", WatchEventType::Modified},
      {"DELETED", WatchEventType::Deleted},
      {"BOOKMARK", WatchEventType::Bookmark}};
  for (const auto& [name, type] : cases) {
    const std::string line =
        R"({"type":")" + name + R"(","object":{"kind":"ConfigMap","metadata":{"name":"x"}}})";
    auto event = decode_watch_event(line, "GET /w");
    ASSERT_TRUE(event) << name << ": " << event.error().message;
    EXPECT_EQ(event->type, type) << name;
    EXPECT_EQ(event->object["metadata"]["name"], "x");
  }
}

TEST(DecodeWatchEvent, AnErrorEventWithCode410IsGone) {
  const Json status = {{"kind", "Status"},    {"apiVersion", "v1"},
                       {"status", "Failure"}, {"message", "too old resource version: 1 (2345)"},
                       {"reason", "Expired"}, {"code", 410}};
  auto event = decode_watch_event(Json{{"type", "ERROR"}, {"object", status}}.dump(),
                                  "GET /api/v1/configmaps?watch=1");
  ASSERT_FALSE(event);
  EXPECT_EQ(event.error().code, KubeErrorCode::Gone);
  EXPECT_NE(event.error().message.find("too old resource version: 1 (2345)"), std::string::npos)
      << event.error().message;
  EXPECT_TRUE(event.error().message.starts_with("GET /api/v1/configmaps?watch=1"));
}

TEST(DecodeWatchEvent, AnErrorEventMapsLikeAResponse) {
  auto event = decode_watch_event(
      R"({"type":"ERROR","object":{"kind":"Status","message":"etcd gone","code":500}})", "GET /w");
  ASSERT_FALSE(event);
  EXPECT_EQ(event.error().code, KubeErrorCode::ServerError);
}

TEST(DecodeWatchEvent, AMalformedLineIsAnErrorNotACrash) {
  for (const std::string line :
       {"{not json", "[1,2]", "\"text\"", R"({"type":"ADDED"})", R"({"object":{}})",
        R"({"type":"ADDED","object":[]})", R"({"type":7,"object":{}})",
        R"({"type":"EXPLODED","object":{}})", R"({"type":"ERROR","object":{"code":"x"}})"}) {
    auto event = decode_watch_event(line, "GET /w");
    ASSERT_FALSE(event) << line;
    EXPECT_EQ(event.error().code, KubeErrorCode::ServerError) << line;
  }
}

}  // namespace
}  // namespace stsresize
