// More of the Kubernetes contract (same fixture, so every instantiation runs these too): what a
// namespaced object addressed without its namespace, or anything without a name, gets. Checked
// against kube-apiserver v1.37: GET/PUT/PATCH/DELETE /api/v1/configmaps/<name> answer 404 NotFound.
// A create has no such path (POST /api/v1/configmaps is 405), so the HTTP adapter answers Invalid
// itself, as the fake does.
#include "tests/contract/kubernetes_contract.h"

namespace stsresize::contract {
namespace {

Json named_config_map(const std::string& ns, const std::string& name) {
  Json metadata = {{"name", name}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", metadata},
              {"data", {{"key", "value"}}}};
}

TEST_P(KubernetesContract, NamespacedObjectAddressedWithoutNamespaceIsNotFound) {
  auto created = kube().create(Kind::ConfigMap, named_config_map(ns(), "placed"));
  ASSERT_TRUE(created) << created.error().message;
  const ObjectRef without_namespace{Kind::ConfigMap, "", "placed"};

  auto got = kube().get(without_namespace);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, KubeErrorCode::NotFound) << got.error().message;

  Json body = *created;
  body["metadata"].erase("namespace");
  auto updated = kube().update(Kind::ConfigMap, body);
  ASSERT_FALSE(updated);
  EXPECT_EQ(updated.error().code, KubeErrorCode::NotFound) << updated.error().message;

  auto patched =
      kube().patch(without_namespace, PatchType::Merge, Json{{"data", {{"key", "patched"}}}});
  ASSERT_FALSE(patched);
  EXPECT_EQ(patched.error().code, KubeErrorCode::NotFound) << patched.error().message;

  auto removed = kube().remove(without_namespace);
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code, KubeErrorCode::NotFound) << removed.error().message;

  auto still_there = kube().get({Kind::ConfigMap, ns(), "placed"});
  ASSERT_TRUE(still_there) << still_there.error().message;
  EXPECT_EQ(still_there->at("data")["key"], "value");
}

TEST_P(KubernetesContract, CreatingANamespacedObjectWithoutNamespaceIsInvalid) {
  auto created = kube().create(Kind::ConfigMap, named_config_map("", "nowhere"));
  ASSERT_FALSE(created);
  EXPECT_EQ(created.error().code, KubeErrorCode::Invalid) << created.error().message;
}

// No request can express this (the path would name the collection): the answer is the port's.
TEST_P(KubernetesContract, ANamelessRefIsNotFoundAndANamelessBodyIsBadRequest) {
  const ObjectRef nameless{Kind::ConfigMap, ns(), ""};
  auto got = kube().get(nameless);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, KubeErrorCode::NotFound) << got.error().message;
  auto patched = kube().patch(nameless, PatchType::Merge, Json{{"data", {{"key", "x"}}}});
  ASSERT_FALSE(patched);
  EXPECT_EQ(patched.error().code, KubeErrorCode::NotFound) << patched.error().message;
  auto removed = kube().remove(nameless);
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error().code, KubeErrorCode::NotFound) << removed.error().message;
  auto updated = kube().update(Kind::ConfigMap, named_config_map(ns(), ""));
  ASSERT_FALSE(updated);
  EXPECT_EQ(updated.error().code, KubeErrorCode::BadRequest) << updated.error().message;
}

}  // namespace
}  // namespace stsresize::contract
