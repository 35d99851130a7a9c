#include "engine/resize_request.h"

#include <gtest/gtest.h>

#include "engine/annotations.h"
#include "engine/fold.h"
#include "engine/k8s_objects.h"
#include "engine/naming.h"
#include "engine/operation_codec.h"
#include "states/machine.h"
#include "tests/support/operation_samples.h"

namespace stsresize {
namespace {

Json tmpl(const std::string& name, const std::string& size) {
  return Json{{"metadata", {{"name", name}}},
              {"spec",
               {{"accessModes", {"ReadWriteOnce"}},
                {"storageClassName", "standard"},
                {"resources", {{"requests", {{"storage", size}}}}}}}};
}

Json live_statefulset() {
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata",
               {{"name", "web"},
                {"namespace", "shop"},
                {"uid", "uid-old"},
                {"resourceVersion", "42"},
                {"generation", 3},
                {"creationTimestamp", "2027-01-15T08:00:00Z"},
                {"managedFields", Json::array()},
                {"labels", {{"app", "web"}}},
                {"annotations",
                 {{std::string{kResizeRequestAnnotation}, R"({"data":{"storage":"2Gi"}})"},
                  {std::string{kResizeStatusAnnotation}, "rejected: old news"},
                  {"team", "shop"}}}}},
              {"spec",
               {{"replicas", 3},
                {"selector", {{"matchLabels", {{"app", "web"}}}}},
                {"volumeClaimTemplates", Json::array({tmpl("data", "1Gi"), tmpl("logs", "1Gi")})}}},
              {"status", {{"replicas", 3}}}};
}

Operation updating_operation() {
  Operation op;
  op.id = "web-0123abcd";
  op.ns = "shop";
  op.statefulset = "web";
  op.sts_uid = "uid-old";
  op.phase = Phase::UpdatingTemplate;
  op.original_replicas = 3;
  op.template_changes = {TemplateChange{"data", *Quantity::parse("2Gi"), ""}};
  return op;
}

TEST(ResizeRequest, ParsesBothFieldsPerTemplateSortedByName) {
  auto changes = parse_resize_request(
      R"({"logs":{"storageClassName":"fast"},"data":{"storage":"20Gi","storageClassName":"x"}})");
  ASSERT_TRUE(changes) << changes.error();
  ASSERT_EQ(changes->size(), 2u);
  EXPECT_EQ((*changes)[0], (TemplateChange{"data", *Quantity::parse("20Gi"), "x"}));
  EXPECT_EQ((*changes)[1], (TemplateChange{"logs", std::nullopt, "fast"}));
}

TEST(ResizeRequest, RefusesWhatIsNotExactlyTheDocumentedShape) {
  for (const char* bad :
       {"", "[]", "\"2Gi\"", R"({"data":"2Gi"})", R"({"data":{"storage":2}})",
        R"({"data":{"storage":""}})", R"({"data":{"storage":"0"}})",
        R"({"data":{"storageClassName":""}})", R"({"data":{"storage":"-1Gi"}})"}) {
    EXPECT_FALSE(parse_resize_request(bad)) << bad;
  }
}

// Callers name the annotation ("annotation stsresize.dev/resize: ..." in the Warning, "its
// stsresize.dev/resize request is invalid: ..." in advance): the refusals do not, or it is said
// twice.
TEST(ResizeRequest, RefusalsSayWhatIsWrongWithoutNamingTheAnnotation) {
  const Json sts = live_statefulset();
  const auto refusal = [&](std::string_view request) {
    auto validated = validate_resize_request(sts, request, {}, std::vector<Json>{});
    return validated ? std::string{"(accepted)"} : validated.error();
  };
  EXPECT_EQ(refusal("data: 2Gi"), R"(not valid JSON (expected e.g. {"data":{"storage":"20Gi"}}))");
  EXPECT_EQ(refusal("[]"), "must be a JSON object of volumeClaimTemplate names");
  EXPECT_EQ(refusal("{}"),
            "an empty object asks for nothing: name a volumeClaimTemplate and its new storage or "
            "storageClassName");
  EXPECT_EQ(refusal(R"({"data":{}})"),
            R"(template "data": expected an object with "storage" and/or "storageClassName")");
  EXPECT_EQ(refusal(R"({"data":{"size":"2Gi"}})"),
            R"(template "data": unknown field "size" (only "storage" and "storageClassName"))");
  EXPECT_EQ(
      refusal(R"({"data":{"storage":"2Gx"}})"),
      R"(template "data": storage: quantity "2Gx" has an unknown suffix "Gx" (expected Ki Mi )"
      R"(Gi Ti Pi Ei, n u m k M G T P E, or e<exponent>))");
  EXPECT_EQ(refusal(R"({"cache":{"storage":"2Gi"}})"),
            R"(volumeClaimTemplate "cache" does not exist (templates: data, logs))");
}

TEST(ResizeRequest, DefinitionKeepsTheObjectDropsServerFieldsAndCarriesTheState) {
  const Operation op = updating_operation();
  auto definition = statefulset_definition(live_statefulset(), op);
  ASSERT_TRUE(definition) << definition.error();
  const Json& metadata = (*definition)["metadata"];
  for (const char* gone :
       {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}) {
    EXPECT_FALSE(metadata.contains(gone)) << gone;
  }
  EXPECT_FALSE(definition->contains("status"));
  EXPECT_EQ(metadata["labels"], (Json{{"app", "web"}}));
  EXPECT_EQ(metadata["annotations"]["team"], "shop");
  EXPECT_FALSE(metadata["annotations"].contains(std::string{kResizeRequestAnnotation}));
  EXPECT_FALSE(metadata["annotations"].contains(std::string{kResizeStatusAnnotation}));
  auto data = k8s::claim_template(*definition, "data");
  auto logs = k8s::claim_template(*definition, "logs");
  ASSERT_TRUE(data && logs);
  EXPECT_EQ(data->storage, *Quantity::parse("2Gi"));
  EXPECT_EQ(logs->storage, *Quantity::parse("1Gi"));
  // The state rides along; the created object has a new uid, which read_operation accepts in
  // this phase only.
  Json created = *definition;
  created["metadata"]["uid"] = "uid-new";
  auto carried = read_operation(created);
  ASSERT_TRUE(carried && carried->has_value()) << (carried ? "" : carried.error());
  EXPECT_TRUE(same_state(**carried, op));
  Operation recreated = op;
  recreated.statefulset_recreated = true;
  EXPECT_FALSE(read_operation(with_operation(created, recreated)));
  Operation planning = op;
  planning.phase = Phase::Planning;
  EXPECT_FALSE(read_operation(with_operation(created, planning)));
}

TEST(ResizeRequest, ConfigMapRoundTripsTheDefinitionAndRefusesAnotherStatefulSets) {
  const Operation op = updating_operation();
  const Json definition = *statefulset_definition(live_statefulset(), op);
  const Json config_map = definition_config_map(op, definition);
  EXPECT_EQ(config_map["metadata"]["name"], naming::definition_config_map("web"));
  auto back = definition_from_config_map(config_map, "shop", "web");
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, definition);
  EXPECT_FALSE(definition_from_config_map(config_map, "shop", "db"));
  EXPECT_FALSE(definition_from_config_map(config_map, "other", "web"));
  Json garbled = config_map;
  garbled["data"][std::string{kDefinitionKey}] = "{not json";
  EXPECT_FALSE(definition_from_config_map(garbled, "shop", "web"));
}

TEST(ResizeRequest, OperationWithTemplateChangesSurvivesTheCodecAndOthersAreUnchanged) {
  Operation op = updating_operation();
  op.statefulset_recreated = true;
  auto decoded = decode_operation(Json::parse(encode_operation(op).dump()), "test");
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(*decoded, op);
  Operation plain = op;
  plain.template_changes.clear();
  plain.statefulset_recreated = false;
  EXPECT_FALSE(encode_operation(plain).contains("templateUpdate"));
}

TEST(ResizeRequest, FoldFollowsTheNewUidOnceAndRefusesTemplateEventsElsewhere) {
  testing::JournalBuilder b;
  b.add(entries::OperationStarted{"requested", "uid-old", 3});
  b.to(Phase::Pending, Phase::UpdatingTemplate, Trigger::StartTemplateUpdate);
  b.add(entries::TemplateUpdateRequested{updating_operation().template_changes});
  b.add(entries::DefinitionSaved{"stsresize-web-definition", Json{{"kind", "StatefulSet"}}});
  b.add(entries::StatefulSetRecreated{"uid-new"});
  auto folded = fold(b.records(), PhaseMachine::rules());
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->sts_uid, "uid-new");
  EXPECT_TRUE(folded->statefulset_recreated);

  testing::JournalBuilder twice = b;
  twice.add(entries::StatefulSetRecreated{"uid-newer"});
  EXPECT_FALSE(fold(twice.records(), PhaseMachine::rules()));

  testing::JournalBuilder elsewhere;
  elsewhere.add(entries::OperationStarted{"grew", "uid-old", 3});
  elsewhere.to(Phase::Pending, Phase::Planning, Trigger::StartPlanning);
  elsewhere.add(entries::StatefulSetRecreated{"uid-new"});
  auto refused = fold(elsewhere.records(), PhaseMachine::rules());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("belongs to UpdatingTemplate"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace stsresize
