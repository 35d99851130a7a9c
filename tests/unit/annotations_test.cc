#include "engine/annotations.h"

#include <gtest/gtest.h>

#include "engine/operation_codec.h"
#include "engine/timestamp.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

using testing::sample_claim;
using testing::sample_summary;

Operation full_operation() {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "sts-uid";
  op.phase = Phase::Recreating;
  op.path = Path::Copy;
  op.original_replicas = 3;
  op.claims = {sample_claim("data", 0), sample_claim("logs", 0)};
  op.claims[0].backup_verified = sample_summary(1);
  op.claims[0].source_deleted = true;
  op.claims[0].recreated_uid = "uid-new";
  op.claims[0].volume_mode = "Filesystem";
  op.claims[1].restore_verified = sample_summary(2);
  op.claims[1].expanded = true;
  op.failure = "";
  op.started = *parse_timestamp("2027-01-15T08:00:00.123Z");
  op.phase_since = *parse_timestamp("2027-01-15T08:05:00Z");
  op.last_sequence = 42;
  return op;
}

Json statefulset() {
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata",
               {{"name", "web"},
                {"namespace", "shop"},
                {"uid", "sts-uid"},
                {"resourceVersion", "77"},
                {"labels", {{"app", "web"}}},
                {"annotations", {{"team", "payments"}}}}},
              {"spec", {{"replicas", 3}}}};
}

TEST(Timestamp, FormatsWithMillisecondsAndParsesBack) {
  const TimePoint t = TimePoint{std::chrono::milliseconds{1'800'000'000'123}};
  EXPECT_EQ(format_timestamp(t), "2027-01-15T08:00:00.123Z");
  EXPECT_EQ(*parse_timestamp("2027-01-15T08:00:00.123Z"), t);
  EXPECT_EQ(*parse_timestamp("2027-01-15T08:00:00Z"),
            to_millis(t - std::chrono::milliseconds{123}));
  EXPECT_FALSE(parse_timestamp("2027-01-15 08:00:00Z"));
  EXPECT_FALSE(parse_timestamp("2027-02-30T08:00:00Z"));
  EXPECT_FALSE(parse_timestamp("2027-01-15T08:00:00.Z"));
}

TEST(StateAnnotation, EveryFieldSurvivesEncodeAndDecode) {
  const Operation op = full_operation();
  auto decoded = decode_state_annotation(encode_state_annotation(op));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, op);
}

// A Failed operation records the phase it failed in (what `advance --retry` resumes); an
// annotation written before that field existed still reads, as "not recorded".
TEST(StateAnnotation, FailedInSurvivesEncodeAndDecodeAndAnOldAnnotationReadsWithoutIt) {
  Operation op = full_operation();
  op.phase = Phase::Failed;
  op.failure = "copy Job data-web-0-stsresize-restore failed";
  op.failed_in = Phase::Restoring;
  const Json document = encode_operation(op);
  EXPECT_EQ(document.at("failedIn"), "Restoring");
  auto decoded = decode_state_annotation(document.dump());
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, op);

  Json old = document;
  old.erase("failedIn");
  auto read_old = decode_state_annotation(old.dump());
  ASSERT_TRUE(read_old) << read_old.error();
  EXPECT_EQ(read_old->failed_in, std::nullopt);
  EXPECT_EQ(read_old->phase, Phase::Failed);
  // Not Failed: nothing to record, and the field is left out.
  EXPECT_FALSE(encode_operation(full_operation()).contains("failedIn"));
}

void expect_refused(const Json& document, const std::string& fragment) {
  auto decoded = decode_state_annotation(document.dump());
  ASSERT_FALSE(decoded) << document.dump();
  EXPECT_NE(decoded.error().find(fragment), std::string::npos) << decoded.error();
  EXPECT_NE(decoded.error().find("stsresize.dev/state"), std::string::npos) << decoded.error();
}

TEST(StateAnnotation, RefusesAnUnknownVersion) {
  Json document = encode_operation(full_operation());
  document["v"] = 2;
  expect_refused(document, "unsupported format version 2");
  document.erase("v");
  expect_refused(document, "missing format version");
}

TEST(StateAnnotation, RefusesAnUnknownPhase) {
  Json document = encode_operation(full_operation());
  document["phase"] = "Teleporting";
  expect_refused(document, "unknown phase \"Teleporting\"");
}

TEST(StateAnnotation, RefusesMissingExtraAndMistypedFields) {
  Json missing = encode_operation(full_operation());
  missing.erase("originalReplicas");
  expect_refused(missing, "missing field \"originalReplicas\"");
  Json extra = encode_operation(full_operation());
  extra["claims"][0]["color"] = "blue";
  expect_refused(extra, "unknown field \"color\"");
  Json mistyped = encode_operation(full_operation());
  mistyped["claims"][1]["sourceDeleted"] = "no";
  expect_refused(mistyped, "\"sourceDeleted\" must be a boolean");
}

TEST(StateAnnotation, RefusesAnUnknownFailedInOrOneOutsideFailed) {
  Operation op = full_operation();
  op.phase = Phase::Failed;
  op.failed_in = Phase::Restoring;
  Json unknown = encode_operation(op);
  unknown["failedIn"] = "Teleporting";
  expect_refused(unknown, "unknown phase \"Teleporting\" in \"failedIn\"");
  Json running = encode_operation(op);
  running["phase"] = "Restoring";
  expect_refused(running, "\"failedIn\" in phase Restoring");
  Json mistyped = encode_operation(op);
  mistyped["failedIn"] = 7;
  expect_refused(mistyped, "failedIn");
}

TEST(StateAnnotation, RefusesABadQuantityAndBadTimestamp) {
  Json quantity = encode_operation(full_operation());
  quantity["claims"][0]["toSize"] = "2 gigs";
  expect_refused(quantity, "toSize");
  Json time = encode_operation(full_operation());
  time["started"] = "yesterday";
  expect_refused(time, "started");
}

TEST(StateAnnotation, RefusesText_ThatIsNotJson) {
  auto decoded = decode_state_annotation("{\"v\":1,");
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().find("not valid JSON"), std::string::npos);
}

TEST(ReadOperation, AbsentAnnotationMeansNoOperation) {
  auto read = read_operation(statefulset());
  ASSERT_TRUE(read);
  EXPECT_FALSE(read->has_value());
}

TEST(ReadOperation, ReadsBackWhatWithOperationWrote) {
  const Operation op = full_operation();
  auto read = read_operation(with_operation(statefulset(), op));
  ASSERT_TRUE(read) << read.error();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, op);
}

TEST(ReadOperation, RefusesAStateThatDescribesAnotherStatefulSet) {
  Json sts = with_operation(statefulset(), full_operation());
  sts["metadata"]["uid"] = "recreated-uid";
  auto read = read_operation(sts);
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().find("recreated-uid"), std::string::npos);
}

TEST(WithOperation, KeepsEveryOtherFieldAndTheResourceVersion) {
  Json sts = with_operation(statefulset(), full_operation());
  EXPECT_EQ(sts["metadata"]["resourceVersion"], "77");
  EXPECT_EQ(sts["metadata"]["annotations"]["team"], "payments");
  EXPECT_EQ(sts["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(sts["spec"]["replicas"], 3);
  EXPECT_EQ(sts["metadata"]["annotations"]["stsresize.dev/phase"], "Recreating");
  EXPECT_FALSE(is_marked_failed(sts));
}

TEST(WithOperation, CompletedRemovesTheStateAndLeavesASummary) {
  Operation op = full_operation();
  Json sts = with_operation(statefulset(), op);
  op.phase = Phase::Completed;
  sts = with_operation(sts, op);
  const Json& annotations = sts["metadata"]["annotations"];
  EXPECT_FALSE(annotations.contains("stsresize.dev/state"));
  EXPECT_FALSE(annotations.contains("stsresize.dev/phase"));
  const Json summary = Json::parse(annotations["stsresize.dev/last-operation"].get<std::string>());
  EXPECT_EQ(summary["id"], op.id);
  EXPECT_EQ(summary["outcome"], "Completed");
  EXPECT_EQ(annotations["team"], "payments");
}

TEST(WithOperation, FailedKeepsTheStateAndMarksTheStatefulSet) {
  Operation op = full_operation();
  op.phase = Phase::Failed;
  op.failure = "copy job failed";
  Json sts = with_operation(statefulset(), op);
  EXPECT_TRUE(is_marked_failed(sts));
  auto read = read_operation(sts);
  ASSERT_TRUE(read && read->has_value());
  EXPECT_EQ((*read)->failure, "copy job failed");
}

TEST(OperationId, IsBoundedStableAndDependsOnTheStartTime) {
  const TimePoint t{std::chrono::seconds{1'800'000'000}};
  const std::string id = make_operation_id("shop", "web", "uid", t);
  EXPECT_EQ(id, make_operation_id("shop", "web", "uid", t));
  EXPECT_NE(id, make_operation_id("shop", "web", "uid", t + std::chrono::seconds{1}));
  EXPECT_EQ(id.rfind("web-", 0), 0u);
  const std::string long_id = make_operation_id("shop", std::string(80, 'a'), "uid", t);
  EXPECT_LE(long_id.size(), 63u);
}

}  // namespace
}  // namespace stsresize
