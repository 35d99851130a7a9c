// Paged lists of 2,000 objects from a real kube-apiserver: pages of the requested size, every
// object exactly once, one resourceVersion for the whole walk (a consistent snapshot that writes
// made during the walk do not change), and full pages when a selector skips objects.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/cluster/adapter/cluster_support.h"

namespace stsresize::cluster_test {
namespace {

constexpr int kObjects = 2000;

// "page-0000".."page-1999": they sort after the namespace's kube-root-ca.crt, so a selected walk
// ends on its last object instead of with an empty page.
std::string object_name(int i) {
  std::string number = std::to_string(i);
  return "page-" + std::string(4 - std::min<std::size_t>(4, number.size()), '0') + number;
}

struct Walk {
  std::vector<std::size_t> page_sizes;
  std::vector<std::string> continue_tokens;
  std::set<std::string> resource_versions;
  std::multiset<std::string> names;
  std::vector<Json> items;
};

class PagingOnCluster : public ::testing::Test {
 protected:
  // One namespace with the 2,000 objects for the whole suite: creating them is the slow part.
  static void SetUpTestSuite() {
    const auto path = fixture_kubeconfig_path();
    if (!path) return;
    auto config = load_config(*path);
    if (!config) return;
    kube_ = connect(*config);
    if (!kube_) return;
    namespace_ = std::make_unique<ScopedNamespace>(kube_, "paging");
    if (namespace_->name().empty()) return;
    const auto started = std::chrono::steady_clock::now();
    setup_error_ = create_objects();
    std::printf("created %d ConfigMaps in %.1f s\n", kObjects,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  static void TearDownTestSuite() {
    namespace_.reset();
    kube_.reset();
  }
  void SetUp() override {
    if (!kube_) GTEST_SKIP() << kNoClusterReason;
    ASSERT_TRUE(namespace_ && !namespace_->name().empty());
    ASSERT_EQ(setup_error_, "");
  }

  // From a few threads sharing one client (HttpKubernetes is thread-safe); the first error.
  static std::string create_objects() {
    constexpr int kThreads = 6;
    std::atomic<int> next{0};
    std::mutex error_mutex;
    std::string first_error;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i; (i = next++) < kObjects;) {
          const Json labels = {{"suite", "paging"}, {"parity", i % 2 == 0 ? "even" : "odd"}};
          auto created =
              kube_->create(Kind::ConfigMap, config_map(ns(), object_name(i), labels, "original"));
          if (!created) {
            std::lock_guard lock(error_mutex);
            if (first_error.empty()) first_error = object_name(i) + ": " + created.error().message;
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    return first_error;
  }

  static const std::string& ns() { return namespace_->name(); }

  // Follows continue tokens to the end; `between_pages` runs after the first page.
  static Walk walk(ListOptions options, const std::function<void()>& between_pages = {}) {
    Walk walk;
    do {
      auto page = kube_->list(Kind::ConfigMap, ns(), options);
      EXPECT_TRUE(page) << page.error().message;
      if (!page) break;
      walk.page_sizes.push_back(page->items.size());
      walk.continue_tokens.push_back(page->continue_token);
      walk.resource_versions.insert(page->resource_version);
      for (Json& item : page->items) {
        walk.names.insert(name_of(item));
        walk.items.push_back(std::move(item));
      }
      options.continue_token = page->continue_token;
      if (walk.page_sizes.size() == 1 && between_pages) between_pages();
      if (walk.page_sizes.size() > kObjects) break;  // a server that never ends the walk
    } while (!options.continue_token.empty());
    return walk;
  }

  static std::set<std::string> names_where(const std::function<bool(int)>& wanted) {
    std::set<std::string> names;
    for (int i = 0; i < kObjects; ++i)
      if (wanted(i)) names.insert(object_name(i));
    return names;
  }

  static void expect_each_once(const Walk& walk, const std::set<std::string>& expected) {
    std::set<std::string> distinct(walk.names.begin(), walk.names.end());
    EXPECT_EQ(distinct.size(), walk.names.size()) << "some object came twice";
    EXPECT_EQ(distinct.size(), expected.size());
    EXPECT_EQ(distinct, expected);
  }

  static void expect_continue_only_between_pages(const Walk& walk) {
    ASSERT_FALSE(walk.continue_tokens.empty());
    for (std::size_t i = 0; i + 1 < walk.continue_tokens.size(); ++i)
      EXPECT_FALSE(walk.continue_tokens[i].empty()) << "page " << i << " has no continue token";
    EXPECT_EQ(walk.continue_tokens.back(), "") << "the last page has a continue token";
    const std::set<std::string> distinct(walk.continue_tokens.begin(),
                                         walk.continue_tokens.end() - 1);
    EXPECT_EQ(distinct.size(), walk.continue_tokens.size() - 1)
        << "two pages continue from the same place";
  }

  static inline std::shared_ptr<HttpKubernetes> kube_;
  static inline std::unique_ptr<ScopedNamespace> namespace_;
  static inline std::string setup_error_;
};

ListOptions paged(std::string selector, std::int64_t limit) {
  ListOptions options;
  options.label_selector = std::move(selector);
  options.limit = limit;
  return options;
}

TEST_F(PagingOnCluster, TwoThousandObjectsComeInFourPagesOfFiveHundredEachExactlyOnce) {
  const Walk walk = this->walk(paged("suite=paging", 500));
  EXPECT_EQ(walk.page_sizes, (std::vector<std::size_t>{500, 500, 500, 500}));
  expect_continue_only_between_pages(walk);
  EXPECT_EQ(walk.resource_versions.size(), 1u) << "the pages of one walk are one snapshot";
  expect_each_once(walk, names_where([](int) { return true; }));
}

TEST_F(PagingOnCluster, SelectorSkippingEveryOtherObjectStillFillsEachPage) {
  const Walk walk = this->walk(paged("suite=paging,parity=even", 300));
  EXPECT_EQ(walk.page_sizes, (std::vector<std::size_t>{300, 300, 300, 100}));
  expect_continue_only_between_pages(walk);
  EXPECT_EQ(walk.resource_versions.size(), 1u);
  expect_each_once(walk, names_where([](int i) { return i % 2 == 0; }));
}

// After the first page an object the walk has not reached yet is changed and a new one is
// created: the rest of the walk still shows the namespace as it was at the first page.
TEST_F(PagingOnCluster, WritesDuringAWalkDoNotShowInItsLaterPages) {
  const std::string changed = object_name(kObjects - 1);
  const std::string late = "zz-created-during-the-walk";
  const Walk walk = this->walk(paged("", 500), [&] {
    ASSERT_OK(kube_->patch({Kind::ConfigMap, ns(), changed}, PatchType::Merge,
                           Json{{"data", {{"key", "changed during the walk"}}}}));
    ASSERT_OK(kube_->create(Kind::ConfigMap, config_map(ns(), late)));
  });
  // Unselected, the walk also has the kube-root-ca.crt the controller-manager put there.
  EXPECT_EQ(walk.page_sizes, (std::vector<std::size_t>{500, 500, 500, 500, 1}));
  expect_continue_only_between_pages(walk);
  EXPECT_EQ(walk.resource_versions.size(), 1u);
  auto expected = names_where([](int) { return true; });
  expected.insert("kube-root-ca.crt");
  expect_each_once(walk, expected);
  for (const Json& item : walk.items) {
    if (name_of(item) == changed) {
      EXPECT_EQ(item["data"]["key"], "original");
    }
  }

  // A new walk sees both writes; clean up for the other tests of the suite.
  const Walk after = this->walk(paged("", 500));
  EXPECT_EQ(after.names.count(late), 1u);
  EXPECT_NE(after.resource_versions, walk.resource_versions);
  ASSERT_OK(kube_->remove({Kind::ConfigMap, ns(), late}));
}

}  // namespace
}  // namespace stsresize::cluster_test
