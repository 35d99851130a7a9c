#pragma once
// Golden files live in tests/unit/golden/ and are compared byte for byte. After an intended
// change of the output, run the tests once with STSRESIZE_UPDATE_GOLDEN=1: every golden file
// is rewritten from the actual output (the test then fails once, so that a rewrite is never
// silent); review the diff and commit it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stsresize::testing_support {

inline std::filesystem::path golden_path(const std::string& name) {
  return std::filesystem::path{STSRESIZE_SOURCE_DIR} / "tests/unit/golden" / name;
}

inline void expect_matches_golden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = golden_path(name);
  const char* update = std::getenv("STSRESIZE_UPDATE_GOLDEN");
  if (update != nullptr && std::string{update} == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream{path, std::ios::binary} << actual;
    ADD_FAILURE() << "rewrote golden file " << path
                  << "; run again without STSRESIZE_UPDATE_GOLDEN";
    return;
  }
  std::ifstream file{path, std::ios::binary};
  ASSERT_TRUE(file) << "missing golden file " << path
                    << " (create it with STSRESIZE_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << file.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from golden file " << path;
}

}  // namespace stsresize::testing_support
