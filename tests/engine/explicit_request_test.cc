// The explicit trigger (stsresize.dev/resize): every refusal touches nothing but the status
// annotation; an accepted request re-creates the StatefulSet with the new templates (pods
// orphaned and adopted, not restarted) and then resizes through the usual paths.
#include <gtest/gtest.h>

#include "engine/k8s_objects.h"
#include "engine/replay.h"
#include "engine/resize_request.h"
#include "states/machine.h"
#include "states/reconciler.h"
#include "tests/support/engine_harness.h"
#include "tests/support/resize_world.h"

namespace stsresize {
namespace {

using namespace testing;

std::map<std::string, std::string> pod_uids(const ResizeWorld& world) {
  std::map<std::string, std::string> uids;
  for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
    uids[pod["metadata"]["name"].get<std::string>()] = pod["metadata"]["uid"].get<std::string>();
  }
  return uids;
}

std::string annotation_or_empty(const Json& object, std::string_view key) {
  auto value = k8s::annotation(object, key);
  return value && value->has_value() ? **value : "";
}

class ExplicitRequest : public ::testing::Test {
 protected:
  ResizeWorld world;
  MemoryJournal journal;
  Reconciler reconciler{world.kube, journal, world.clock, world.events};

  ReconcileResult reconcile() { return reconciler.reconcile(kNs, kSts); }

  // Reconciles (and lets the cluster work) until the engine is idle.
  void run_to_idle() { reconcile_to_idle(reconciler, world, 300); }

  std::vector<std::string> journal_types() {
    auto operations = journal.operations();
    EXPECT_TRUE(operations && operations->size() == 1u);
    if (!operations || operations->size() != 1u) return {};
    auto records = journal.read(operations->front().operation_id);
    EXPECT_TRUE(records);
    auto folded = fold(*records, PhaseMachine::rules());
    EXPECT_TRUE(folded) << folded.error().message;
    std::vector<std::string> types;
    for (const JournalRecord& record : *records) types.push_back(record.type);
    return types;
  }

  void expect_resized_with_data_intact() {
    const Json sts = world.live_sts();
    auto templates = k8s::claim_templates(sts);
    ASSERT_TRUE(templates);
    for (const auto& tmpl : *templates) EXPECT_EQ(tmpl.storage, *Quantity::parse("2Gi"));
    EXPECT_FALSE(k8s::annotation(sts, kResizeRequestAnnotation)->has_value());
    EXPECT_EQ(sts["spec"]["replicas"], kReplicas);
    EXPECT_EQ(world.ready_replicas(), kReplicas);
    for (const std::string& name : world.claim_names()) {
      const auto pvc = world.kube.get_raw(world.claim(name));
      ASSERT_TRUE(pvc) << name;
      EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("2Gi")) << name;
      EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    }
    EXPECT_FALSE(world.kube.get_raw({Kind::ConfigMap, kNs, naming::definition_config_map(kSts)}));
    EXPECT_TRUE(k8s::annotation(sts, kLastOperationAnnotation)->has_value());
  }
};

struct Refusal {
  std::string name;
  std::string request;
  std::string reason;  // part of the message
};

class RefusedRequest : public ExplicitRequest, public ::testing::WithParamInterface<Refusal> {};

TEST_P(RefusedRequest, WarnsWritesTheStatusAndChangesNothingElse) {
  world.seed(/*expandable=*/false, "2Gi", ResizeTrigger::Request);
  world.request(GetParam().request);
  const Json before = world.live_sts();
  const auto pods_before = pod_uids(world);

  const ReconcileResult result = reconcile();
  EXPECT_TRUE(result.is(ReconcileResult::Kind::Terminal));
  EXPECT_NE(result.message.find(GetParam().reason), std::string::npos) << result.message;
  const auto warnings = world.events.with_reason("InvalidResizeRequest");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].severity, EventSeverity::Warning);
  EXPECT_NE(warnings[0].message.find(GetParam().reason), std::string::npos);

  // The one write: the status annotation on the StatefulSet.
  EXPECT_EQ(world.kube.mutations(), 1);
  const Json after = world.live_sts();
  EXPECT_EQ(annotation_or_empty(after, kResizeStatusAnnotation), "rejected: " + result.message);
  Json without_status = after;
  without_status["metadata"]["annotations"].erase(std::string{kResizeStatusAnnotation});
  without_status["metadata"].erase("resourceVersion");
  Json expected = before;
  expected["metadata"].erase("resourceVersion");
  EXPECT_EQ(without_status, expected);
  EXPECT_EQ(pod_uids(world), pods_before);
  EXPECT_TRUE(world.kube.list_raw(Kind::ConfigMap, kNs).empty());
  auto operations = journal.operations();
  EXPECT_TRUE(operations && operations->empty());

  // Unchanged request, unchanged answer: no second write, no second Warning.
  EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Terminal));
  EXPECT_EQ(world.kube.mutations(), 1);
  EXPECT_EQ(world.events.with_reason("InvalidResizeRequest").size(), 1u);

  // Corrected, it proceeds, and the refusal is cleared.
  world.request(R"({"data":{"storage":"2Gi"},"logs":{"storage":"2Gi"}})");
  const ReconcileResult accepted = reconcile();
  EXPECT_FALSE(accepted.is(ReconcileResult::Kind::Terminal)) << accepted.message;
  EXPECT_TRUE(world.events.contains("ResizeStarted"));
  EXPECT_EQ(annotation_or_empty(world.live_sts(), kResizeStatusAnnotation), "");
}

INSTANTIATE_TEST_SUITE_P(
    Validation, RefusedRequest,
    ::testing::Values(
        Refusal{"NotJson", "data: 2Gi", "not valid JSON"},
        Refusal{"BadQuantity", R"({"data":{"storage":"2Gx"}})", "2Gx"},
        Refusal{"UnknownTemplate", R"({"cache":{"storage":"2Gi"}})",
                "volumeClaimTemplate \"cache\" does not exist"},
        Refusal{"MissingStorageClass", R"({"data":{"storage":"2Gi","storageClassName":"gold"}})",
                "StorageClass \"gold\" does not exist"},
        Refusal{"EmptyRequest", "{}", "asks for nothing"},
        Refusal{"EmptyTemplateRequest", R"({"data":{}})", "expected an object"},
        Refusal{"UnknownField", R"({"data":{"size":"2Gi"}})", "unknown field \"size\""},
        Refusal{"NothingChanges", R"({"data":{"storage":"1Gi"}})", "nothing to change"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return info.param.name; });

// The Warning names the annotation once, whichever check refused the request.
TEST_F(ExplicitRequest, TheWarningNamesTheAnnotationOnce) {
  world.seed(/*expandable=*/false, "2Gi", ResizeTrigger::Request);
  world.request("data: 2Gi");
  const ReconcileResult result = reconcile();
  EXPECT_EQ(result.message, R"(not valid JSON (expected e.g. {"data":{"storage":"20Gi"}}))");
  const auto warnings = world.events.with_reason("InvalidResizeRequest");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].message,
            R"(annotation stsresize.dev/resize: not valid JSON (expected e.g. )"
            R"({"data":{"storage":"20Gi"}}); nothing was changed)");
  EXPECT_EQ(annotation_or_empty(world.live_sts(), kResizeStatusAnnotation),
            R"(rejected: not valid JSON (expected e.g. {"data":{"storage":"20Gi"}}))");

  world.request(R"({"data":{"size":"2Gi"}})");
  EXPECT_EQ(reconcile().message,
            R"(template "data": unknown field "size" (only "storage" and "storageClassName"))");
  EXPECT_EQ(world.events.with_reason("InvalidResizeRequest").back().message,
            R"(annotation stsresize.dev/resize: template "data": unknown field "size" (only )"
            R"("storage" and "storageClassName"); nothing was changed)");
}

TEST_F(ExplicitRequest, ExpandPathRecreatesTheStatefulSetWithoutRestartingAPod) {
  world.seed(/*expandable=*/true, "2Gi", ResizeTrigger::Request);
  const std::string old_uid = *k8s::uid(world.live_sts());
  const auto pods_before = pod_uids(world);
  run_to_idle();
  expect_resized_with_data_intact();
  EXPECT_NE(*k8s::uid(world.live_sts()), old_uid);
  EXPECT_EQ(pod_uids(world), pods_before);
  for (const Json& pod : world.kube.list_raw(Kind::Pod, kNs)) {
    auto owners = k8s::owner_references(pod);
    ASSERT_TRUE(owners && owners->size() == 1u);
    EXPECT_EQ(owners->front().uid, *k8s::uid(world.live_sts())) << "pod not adopted";
  }
  for (const char* reason : {"ResizeStarted", "DefinitionSaved", "StatefulSetDeleted",
                             "StatefulSetRecreated", "PhaseChanged", "ResizeCompleted"}) {
    EXPECT_TRUE(world.events.contains(reason)) << reason;
  }
  const auto types = journal_types();
  for (const char* type : {"TemplateUpdateRequested", "DefinitionSaved", "StatefulSetRecreated",
                           "ClaimExpanded", "OperationFinished"}) {
    EXPECT_NE(std::ranges::find(types, type), types.end()) << type;
  }
}

TEST_F(ExplicitRequest, CopyPathRecreatesTheStatefulSetThenCopiesEveryClaim) {
  world.seed(/*expandable=*/false, "2Gi", ResizeTrigger::Request);
  run_to_idle();
  expect_resized_with_data_intact();
  const auto types = journal_types();
  for (const char* type : {"TemplateUpdateRequested", "DefinitionSaved", "StatefulSetRecreated",
                           "BackupVerified", "RestoreVerified", "OperationFinished"}) {
    EXPECT_NE(std::ranges::find(types, type), types.end()) << type;
  }
}

TEST_F(ExplicitRequest, ReplayOfTheJournalShowsTheTemplateUpdateAndIsConsistent) {
  world.seed(/*expandable=*/true, "2Gi", ResizeTrigger::Request);
  run_to_idle();
  auto operations = journal.operations();
  ASSERT_TRUE(operations && operations->size() == 1u);
  auto records = journal.read(operations->front().operation_id);
  ASSERT_TRUE(records);
  const Replay replayed = replay(*records, PhaseMachine::rules());
  ASSERT_TRUE(replayed.consistent()) << replayed.inconsistency->reason;
  ASSERT_EQ(replayed.operations.size(), 1u);
  EXPECT_EQ(replayed.operations[0].final_phase, Phase::Completed);
  EXPECT_EQ(replayed.operations[0].path, Path::Expand);
  std::vector<std::string> updating;
  for (const TimelineRow& row : replayed.rows) {
    if (row.phase_after == Phase::UpdatingTemplate) updating.push_back(row.details);
  }
  const auto mentions = [&](const std::string& part) {
    return std::ranges::any_of(updating, [&](const std::string& details) {
      return details.find(part) != std::string::npos;
    });
  };
  EXPECT_TRUE(mentions("Pending → UpdatingTemplate (StartTemplateUpdate)"));
  EXPECT_TRUE(mentions("data: storage 2Gi, logs: storage 2Gi"));
  EXPECT_TRUE(mentions("ConfigMap " + naming::definition_config_map(kSts)));
  EXPECT_TRUE(mentions("propagation Orphan"));
  EXPECT_TRUE(mentions("new uid " + *k8s::uid(world.live_sts())));
}

TEST_F(ExplicitRequest, ClassChangeWithGrowthTakesTheCopyPathToTheNewClass) {
  world.seed(/*expandable=*/true, "2Gi", ResizeTrigger::Request);
  world.kube.system().create(Kind::StorageClass, Json{{"apiVersion", "storage.k8s.io/v1"},
                                                      {"kind", "StorageClass"},
                                                      {"metadata", {{"name", "fast"}}},
                                                      {"provisioner", "csi.example.com"},
                                                      {"allowVolumeExpansion", true}});
  world.request(R"({"data":{"storage":"2Gi","storageClassName":"fast"}})");
  run_to_idle();
  for (int i = 0; i < kReplicas; ++i) {
    const std::string name = naming::claim_name("data", kSts, i);
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc);
    EXPECT_EQ(*k8s::storage_class_name(*pvc), std::optional<std::string>{"fast"});
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
  }
  auto data = k8s::claim_template(world.live_sts(), "data");
  ASSERT_TRUE(data);
  EXPECT_EQ(data->storage_class, std::optional<std::string>{"fast"});
}

// Moving the volumes to another StorageClass at the same size (what migrating between storage
// backends is): the copy path, every claim recreated in the new class with its data.
TEST_F(ExplicitRequest, AClassChangeAloneMovesEveryClaimToTheNewClassWithItsData) {
  world.seed(/*expandable=*/true, "1Gi", ResizeTrigger::Request);
  world.kube.system().create(Kind::StorageClass, Json{{"apiVersion", "storage.k8s.io/v1"},
                                                      {"kind", "StorageClass"},
                                                      {"metadata", {{"name", "fast"}}},
                                                      {"provisioner", "csi.example.com"},
                                                      {"allowVolumeExpansion", true}});
  world.request(R"({"data":{"storageClassName":"fast"}})");
  run_to_idle();
  EXPECT_FALSE(world.events.contains("InvalidResizeRequest"));
  const auto started = world.events.with_reason("ResizeStarted");
  ASSERT_EQ(started.size(), 1u);
  EXPECT_NE(started[0].message.find("data class standard -> fast"), std::string::npos)
      << started[0].message;
  for (int i = 0; i < kReplicas; ++i) {
    const std::string name = naming::claim_name("data", kSts, i);
    const auto pvc = world.kube.get_raw(world.claim(name));
    ASSERT_TRUE(pvc);
    EXPECT_EQ(*k8s::storage_class_name(*pvc), std::optional<std::string>{"fast"});
    EXPECT_EQ(*k8s::requested_storage(*pvc), *Quantity::parse("1Gi"));
    EXPECT_EQ(world.cluster.volume_files(world.claim(name)), world.original_files.at(name));
    // The other template's claims were not asked to move.
    const std::string logs = naming::claim_name("logs", kSts, i);
    EXPECT_EQ(*k8s::storage_class_name(*world.kube.get_raw(world.claim(logs))),
              std::optional<std::string>{"standard"});
  }
  auto data = k8s::claim_template(world.live_sts(), "data");
  ASSERT_TRUE(data);
  EXPECT_EQ(data->storage_class, std::optional<std::string>{"fast"});
}

TEST_F(ExplicitRequest, AMissingStatefulSetWithoutStoredDefinitionIsLeftAlone) {
  world.seed(/*expandable=*/false);
  world.kube.system().remove(world.sts());
  EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Idle));
  EXPECT_EQ(world.kube.mutations(), 0);
}

TEST_F(ExplicitRequest, AForeignDefinitionConfigMapIsRefusedAndNotUsed) {
  world.seed(/*expandable=*/false);
  world.kube.system().remove(world.sts());
  world.kube.system().create(Kind::ConfigMap,
                             Json{{"apiVersion", "v1"},
                                  {"kind", "ConfigMap"},
                                  {"metadata",
                                   {{"name", naming::definition_config_map(kSts)},
                                    {"namespace", kNs},
                                    {"labels", {{std::string{kStatefulSetLabel}, "another"}}}}},
                                  {"data", {{std::string{kDefinitionKey}, "{}"}}}});
  EXPECT_TRUE(reconcile().is(ReconcileResult::Kind::Terminal));
  EXPECT_TRUE(world.events.contains("InvalidDefinition"));
  EXPECT_EQ(world.kube.mutations(), 0);
  EXPECT_FALSE(world.kube.get_raw(world.sts()));
}

TEST_F(ExplicitRequest, AStatefulSetDeletedBetweenDeleteAndCreateIsFinishedFromTheConfigMap) {
  world.seed(/*expandable=*/true, "2Gi", ResizeTrigger::Request);
  // Stop right after the delete (start annotation, ConfigMap, delete).
  world.kube.set_mutation_budget(3);
  EXPECT_FALSE(reconcile().is(ReconcileResult::Kind::Idle));
  world.kube.set_mutation_budget(std::nullopt);
  ASSERT_FALSE(world.kube.get_raw(world.sts()));
  ASSERT_TRUE(world.kube.get_raw({Kind::ConfigMap, kNs, naming::definition_config_map(kSts)}));
  MemoryJournal fresh_journal;  // and a new process without the journal
  Reconciler fresh{world.kube, fresh_journal, world.clock, world.events};
  EXPECT_FALSE(fresh.reconcile(kNs, kSts).is(ReconcileResult::Kind::Terminal));
  ASSERT_TRUE(world.kube.get_raw(world.sts()));
  auto templates = k8s::claim_templates(world.live_sts());
  ASSERT_TRUE(templates);
  EXPECT_EQ(templates->front().storage, *Quantity::parse("2Gi"));
}

}  // namespace
}  // namespace stsresize
