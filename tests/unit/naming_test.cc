#include "engine/naming.h"

#include <gtest/gtest.h>

#include <string>

namespace stsresize::naming {
namespace {

bool is_dns1123_label(const std::string& s, std::size_t max = 63) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

// Expected hashes pinned from an independent implementation:
//   python3 -c "h=0xcbf29ce484222325
//   for b in s.encode(): h=((h^b)*0x100000001b3)&(2**64-1)
//   print('%016x'%h)"
TEST(Naming, ShortHashIsFnv1a64InLowercaseHex) {
  EXPECT_EQ(short_hash("", 16), "cbf29ce484222325");  // the FNV-1a 64 offset basis
  EXPECT_EQ(short_hash("a", 16), "af63dc4c8601ec8c");
  EXPECT_EQ(short_hash("hello", 16), "a430d84680aabd0b");
  EXPECT_EQ(short_hash("data-web-0-stsresize-bak"), "9a3bfc71");
  EXPECT_EQ(short_hash("hello", 4), "a430");
  EXPECT_EQ(short_hash("hello", 40), "a430d84680aabd0b");  // at most the 16 digits there are
}

TEST(Naming, BoundedReturnsAValidShortNameUnchanged) {
  EXPECT_EQ(bounded("data-web-0"), "data-web-0");
  const std::string exactly63(63, 'a');
  EXPECT_EQ(bounded(exactly63), exactly63);
  EXPECT_EQ(bounded("0abc"), "0abc");
}

TEST(Naming, BoundedCutsLongNamesAndSuffixesAHashOfTheWholeInput) {
  const std::string a = std::string(100, 'x') + "a";
  const std::string b = std::string(100, 'x') + "b";
  EXPECT_EQ(bounded(a), std::string(54, 'x') + "-0be1a245");
  EXPECT_EQ(bounded(b), std::string(54, 'x') + "-0be1a545");
  EXPECT_NE(bounded(a), bounded(b));
  const std::string exactly64(64, 'a');
  EXPECT_EQ(bounded(exactly64).size(), 63u);
  EXPECT_TRUE(is_dns1123_label(bounded(exactly64)));
}

TEST(Naming, BoundedSanitisesInvalidCharactersAndStillDistinguishesTheOriginal) {
  // Sanitising alone would map "Data_Volume.Web" and "data-volume-web" to the same text; the
  // hash of the original keeps them apart.
  EXPECT_EQ(bounded("Data_Volume.Web"), "data-volume-web-c4e472ab");
  EXPECT_EQ(bounded("data-volume-web"), "data-volume-web");
  EXPECT_EQ(bounded("-Foo-"), "foo-1bde8a51");
  EXPECT_EQ(bounded("___"), "b8c3741a");  // nothing usable is left: the hash alone
  EXPECT_EQ(bounded(""), "cbf29ce4");
}

TEST(Naming, BoundedNeverEndsThePrefixWithADash) {
  // The cut falls right after a '-': it must be trimmed, not doubled into "--".
  const std::string base = std::string(53, 'a') + "-" + std::string(20, 'b');
  const std::string name = bounded(base);
  EXPECT_TRUE(is_dns1123_label(name)) << name;
  EXPECT_EQ(name.substr(0, 54), std::string(53, 'a') + "-");
  EXPECT_EQ(name.find("--"), std::string::npos) << name;
  EXPECT_EQ(name.size(), 62u);
}

TEST(Naming, BoundedHonoursASmallerMaximum) {
  const std::string name = bounded("a-fairly-long-name-for-a-volume", 20);
  EXPECT_EQ(name.size(), 20u);
  EXPECT_TRUE(is_dns1123_label(name, 20)) << name;
  EXPECT_EQ(name.substr(0, 11), "a-fairly-lo");
  EXPECT_EQ(bounded("anything-long", 8).size(), 8u);
  EXPECT_TRUE(is_dns1123_label(bounded("anything-long", 8), 8));
}

TEST(Naming, Dns1123LabelIsWhatANamespaceMayBe) {
  for (const std::string& good :
       std::vector<std::string>{"shop", "a", "kube-system", "0ab9", std::string(63, 'a')}) {
    EXPECT_TRUE(is_dns1123_label(good)) << good;
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "..", ".", "a/b", "UPPER", "a.b", "-shop", "shop-", "a_b", std::string(64, 'a')}) {
    EXPECT_FALSE(is_dns1123_label(bad)) << bad;
  }
}

TEST(Naming, LabelValueKeepsValidValuesIncludingUpperCaseAndDots) {
  EXPECT_EQ(label_value("web"), "web");
  EXPECT_EQ(label_value("My_App.v2"), "My_App.v2");
  EXPECT_EQ(label_value(""), "");
  EXPECT_EQ(label_value(std::string(63, 'w')), std::string(63, 'w'));
}

TEST(Naming, LabelValueBoundsLongOrInvalidValues) {
  const std::string sts(253, 's');
  EXPECT_EQ(label_value(sts), bounded(sts));
  EXPECT_EQ(label_value(sts).size(), 63u);
  EXPECT_EQ(label_value("_leading"), bounded("_leading"));
  EXPECT_EQ(label_value("has space"), bounded("has space"));
}

TEST(Naming, ClaimNameFollowsTheStatefulSetControllerConvention) {
  EXPECT_EQ(claim_name("data", "web", 0), "data-web-0");
  EXPECT_EQ(claim_name("www", "my-app", 12), "www-my-app-12");
}

TEST(Naming, DerivedNamesForA253CharacterStatefulSetAreValidAndPinned) {
  const std::string sts(253, 's');
  const std::string claim = claim_name("data", sts, 0);
  ASSERT_EQ(claim.size(), 260u);
  const std::string prefix = "data-" + std::string(49, 's');
  EXPECT_EQ(backup_claim(claim), prefix + "-947b87dd");
  EXPECT_EQ(backup_job(claim), prefix + "-5075c369");
  EXPECT_EQ(restore_job(claim), prefix + "-1e312701");
  for (const std::string& name : {backup_claim(claim), backup_job(claim), restore_job(claim)}) {
    EXPECT_TRUE(is_dns1123_label(name)) << name;
  }
}

TEST(Naming, DerivedNamesForShortClaimsAreReadable) {
  EXPECT_EQ(backup_claim("data-web-0"), "data-web-0-stsresize-bak");
  EXPECT_EQ(backup_job("data-web-0"), "data-web-0-stsresize-backup");
  EXPECT_EQ(restore_job("data-web-0"), "data-web-0-stsresize-restore");
}

TEST(Naming, LongClaimsDifferingOnlyAtTheEndGetDistinctDerivedNames) {
  const std::string sts(240, 'q');
  const std::string first = claim_name("data", sts, 1);
  const std::string second = claim_name("data", sts, 2);
  EXPECT_NE(backup_claim(first), backup_claim(second));
  EXPECT_NE(backup_job(first), backup_job(second));
  EXPECT_NE(restore_job(first), restore_job(second));
  EXPECT_NE(backup_job(first), restore_job(first));
  // Same input, same output: the controller finds its own objects again after a restart.
  EXPECT_EQ(backup_job(first), backup_job(std::string{first}));
}

}  // namespace
}  // namespace stsresize::naming
