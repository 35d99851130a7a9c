// Writes against a real kube-apiserver beyond tests/contract: concurrent writers (who wins,
// and what the others are told), 409 AlreadyExists versus 409 Conflict by reason, a 422 naming
// every invalid field, a uid precondition against an object recreated under the same name, and
// fields this code never reads surviving a read-modify-write.
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "tests/cluster/adapter/cluster_support.h"

namespace stsresize::cluster_test {
namespace {

using ConflictsOnCluster = OnFixtureCluster;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `write` from kWriters threads released at once; returns each one's outcome.
template <class Write>
std::vector<KubeResult<Json>> race(int writers, Write write) {
  std::vector<std::optional<KubeResult<Json>>> outcomes(static_cast<std::size_t>(writers));
  std::barrier start(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      start.arrive_and_wait();
      outcomes[static_cast<std::size_t>(w)] = write(w);
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<KubeResult<Json>> results;
  for (auto& outcome : outcomes) results.push_back(std::move(*outcome));
  return results;
}

TEST_F(ConflictsOnCluster, RacingCreatesOfOneNameHaveOneWinnerAndTheOthersAreAlreadyExists) {
  constexpr int kWriters = 6;
  auto outcomes = race(kWriters, [&](int w) {
    return admin_->create(Kind::ConfigMap,
                          config_map(ns(), "contested", {}, "writer-" + std::to_string(w)));
  });
  int winners = 0;
  std::string winning_value;
  for (const auto& outcome : outcomes) {
    if (outcome) {
      ++winners;
      winning_value = (*outcome)["data"]["key"];
      continue;
    }
    EXPECT_EQ(outcome.error().code, KubeErrorCode::AlreadyExists) << outcome.error().message;
    EXPECT_TRUE(contains(outcome.error().message, R"(configmaps "contested" already exists)"))
        << outcome.error().message;
  }
  EXPECT_EQ(winners, 1);
  auto stored = admin_->get({Kind::ConfigMap, ns(), "contested"});
  ASSERT_OK(stored);
  EXPECT_EQ((*stored)["data"]["key"], winning_value) << "the stored object is the winner's";
}

TEST_F(ConflictsOnCluster, RacingUpdatesFromOneReadHaveOneWinnerAndTheOthersAreConflict) {
  constexpr int kWriters = 6;
  auto created = admin_->create(Kind::ConfigMap, config_map(ns(), "counter", {}, "0"));
  ASSERT_OK(created);
  auto outcomes = race(kWriters, [&](int w) {
    Json mine = *created;  // every writer read the same version
    mine["data"]["key"] = "writer-" + std::to_string(w);
    return admin_->update(Kind::ConfigMap, mine);
  });
  int winners = 0;
  for (const auto& outcome : outcomes) {
    if (outcome) {
      ++winners;
      EXPECT_NE(resource_version_of(*outcome), resource_version_of(*created));
      continue;
    }
    // Both are HTTP 409: only the Status reason tells a lost race from a duplicate name.
    EXPECT_EQ(outcome.error().code, KubeErrorCode::Conflict) << outcome.error().message;
    EXPECT_TRUE(contains(outcome.error().message, "the object has been modified"))
        << outcome.error().message;
  }
  EXPECT_EQ(winners, 1);
}

TEST_F(ConflictsOnCluster, InvalidStatefulSetNamesEveryFieldAtFault) {
  const Json labels = {{"app", "db"}};
  Json sts = {{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata", {{"name", "broken"}, {"namespace", ns()}}},
              {"spec",
               {{"replicas", -1},
                {"serviceName", "broken"},
                {"selector", {{"matchLabels", labels}}},
                {"template",
                 {{"metadata", {{"labels", {{"app", "something-else"}}}}},
                  {"spec",
                   {{"containers", Json::array({{{"name", "Not_A_DNS_Label"},
                                                 {"image", "registry.k8s.io/pause:3.10"}}})}}}}}}}};
  auto created = admin_->create(Kind::StatefulSet, sts);
  EXPECT_CODE(created, KubeErrorCode::Invalid);
  const std::string& message = created.error().message;
  for (const char* field :
       {"spec.replicas", "spec.template.metadata.labels", "spec.template.spec.containers[0].name"})
    EXPECT_TRUE(contains(message, field)) << "no " << field << " in: " << message;
  EXPECT_CODE(admin_->get({Kind::StatefulSet, ns(), "broken"}), KubeErrorCode::NotFound);
}

// The uid precondition protects against deleting a successor: a controller that decided to
// delete "claim" must not delete a new object someone created under that name meanwhile.
TEST_F(ConflictsOnCluster, DeleteWithTheUidOfARecreatedObjectsPredecessorIsConflict) {
  auto first = admin_->create(Kind::ConfigMap, config_map(ns(), "reborn", {}, "first"));
  ASSERT_OK(first);
  const std::string first_uid = (*first)["metadata"]["uid"];
  ASSERT_OK(admin_->remove({Kind::ConfigMap, ns(), "reborn"}));
  auto second = admin_->create(Kind::ConfigMap, config_map(ns(), "reborn", {}, "second"));
  ASSERT_OK(second);
  ASSERT_NE((*second)["metadata"]["uid"], first_uid);

  DeleteOptions stale;
  stale.uid = first_uid;
  auto removed = admin_->remove({Kind::ConfigMap, ns(), "reborn"}, stale);
  EXPECT_CODE(removed, KubeErrorCode::Conflict);
  const std::string second_uid = (*second)["metadata"]["uid"];
  EXPECT_TRUE(contains(removed.error().message, "the UID in the precondition (" + first_uid +
                                                    ") does not match the UID in record (" +
                                                    second_uid + ")"))
      << removed.error().message;
  auto survivor = admin_->get({Kind::ConfigMap, ns(), "reborn"});
  ASSERT_OK(survivor);
  EXPECT_EQ((*survivor)["data"]["key"], "second");

  DeleteOptions current;
  current.uid = second_uid;
  ASSERT_OK(admin_->remove({Kind::ConfigMap, ns(), "reborn"}, current));
  EXPECT_CODE(admin_->get({Kind::ConfigMap, ns(), "reborn"}), KubeErrorCode::NotFound);
}

// spec.persistentVolumeClaimRetentionPolicy and spec.ordinals are fields stsresize never reads.
// Non-default values: were they dropped on the way through, the server would default them
// (Retain/Retain, start 0) and the difference would show.
TEST_F(ConflictsOnCluster, FieldsThisCodeNeverReadsSurviveReadModifyWrite) {
  const Json labels = {{"app", "keeper"}};
  const Json retention = {{"whenDeleted", "Delete"}, {"whenScaled", "Delete"}};
  const Json ordinals = {{"start", 5}};
  Json sts = {
      {"apiVersion", "apps/v1"},
      {"kind", "StatefulSet"},
      {"metadata", {{"name", "keeper"}, {"namespace", ns()}}},
      {"spec",
       {{"replicas", 0},
        {"serviceName", "keeper"},
        {"selector", {{"matchLabels", labels}}},
        {"persistentVolumeClaimRetentionPolicy", retention},
        {"ordinals", ordinals},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"containers",
             Json::array({{{"name", "main"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}}}}}};
  ASSERT_OK(admin_->create(Kind::StatefulSet, sts));
  const ObjectRef ref{Kind::StatefulSet, ns(), "keeper"};

  // Read, change one thing this code does care about, write the whole object back; retried
  // because the StatefulSet controller writes status meanwhile.
  KubeResult<Json> written = std::unexpected(KubeError{KubeErrorCode::Conflict, "not tried"});
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto live = admin_->get(ref);
    ASSERT_OK(live);
    (*live)["metadata"]["annotations"]["stsresize.dev/state"] = "Detected";
    written = admin_->update(Kind::StatefulSet, *live);
    if (written || written.error().code != KubeErrorCode::Conflict) break;
  }
  ASSERT_OK(written);
  auto read = admin_->get(ref);
  ASSERT_OK(read);
  EXPECT_EQ((*read)["metadata"]["annotations"]["stsresize.dev/state"], "Detected");
  EXPECT_EQ((*read)["spec"]["persistentVolumeClaimRetentionPolicy"], retention);
  EXPECT_EQ((*read)["spec"]["ordinals"], ordinals);

  // And through a merge patch of an unrelated field.
  auto patched = admin_->patch(ref, PatchType::Merge, Json{{"spec", {{"minReadySeconds", 4}}}});
  ASSERT_OK(patched);
  EXPECT_EQ((*patched)["spec"]["persistentVolumeClaimRetentionPolicy"], retention);
  EXPECT_EQ((*patched)["spec"]["ordinals"], ordinals);
}

}  // namespace
}  // namespace stsresize::cluster_test
