#pragma once
// gtest assertions on KubeResult values (and any std::expected whose error has a `message` and
// a `code`), shared by the unit, contract and cluster tests. Each evaluates its argument once:
// it is usually a request, which must not be sent again to build a failure message.
#include <gtest/gtest.h>

#include <string>

#include "engine/json.h"

#define ASSERT_OK(expression)                                      \
  do {                                                             \
    const auto& checked_ = (expression);                           \
    ASSERT_TRUE(checked_.has_value()) << checked_.error().message; \
  } while (false)
#define EXPECT_OK(expression)                                      \
  do {                                                             \
    const auto& checked_ = (expression);                           \
    EXPECT_TRUE(checked_.has_value()) << checked_.error().message; \
  } while (false)
#define EXPECT_CODE(expression, expected_code)                                     \
  do {                                                                             \
    const auto& checked_ = (expression);                                           \
    ASSERT_FALSE(checked_.has_value()) << "expected " << to_string(expected_code); \
    EXPECT_EQ(checked_.error().code, expected_code) << checked_.error().message;   \
  } while (false)

namespace stsresize::test_support {

// metadata.resourceVersion, "" when absent.
inline std::string rv(const Json& object) {
  return object.value("metadata", Json::object()).value("resourceVersion", "");
}

}  // namespace stsresize::test_support
