// SPDX-License-Identifier: MIT
// nnfuzz: fuzzing as a GoogleTest test.
//
//     #include <nnfuzz/testing/gtest.hpp>
//     TEST(MyModel, NoNaNNearTestImages) {
//       auto fuzzer = nnfuzz::make_fuzzer(MyModel{}, nnfuzz::FuzzOptions{});
//       nnfuzz::FuzzTestOptions campaign;
//       campaign.regression_dir = "regressions";     // next to this file (NNFUZZ_EXPECT_NO_FINDING)
//       NNFUZZ_EXPECT_NO_FINDING(fuzzer, seeds, campaign);
//       // or EXPECT_TRUE(nnfuzz::finds_nothing(fuzzer, seeds, campaign)) with an absolute directory
//     }
//
// On failure GoogleTest prints what fired, the lineage, the saved and minimised files and how
// to replay them (see nnfuzz::fuzz_test in testing/fuzz_test.hpp). Both fill an empty `name`
// with "Suite.Test" (each test keeps its findings in regression_dir/<name>/); the macros also
// fill an empty `base_dir` with the directory of the test's source file.
#pragma once

#include <gtest/gtest.h>

#include "fuzz_test.hpp"

#include <string>

namespace nnfuzz {

namespace detail {
/// "Suite.Test" of the running GoogleTest test, or "" outside one.
inline std::string gtest_name() {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return t ? std::string(t->test_suite_name()) + "." + t->name() : std::string();
}
/// finds_nothing() with the caller's source file (for the macros).
template <typename FuzzerT, typename Seeds>
::testing::AssertionResult finds_nothing_from(const char* file, FuzzerT& fuzzer, const Seeds& seeds,
                                              const FuzzTestOptions& options = {}) {
  const FuzzTestReport r = fuzz_test_from(file, gtest_name(), fuzzer, seeds, options);
  if (r.passed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message;
}
}  // namespace detail

/// nnfuzz::fuzz_test() as a GoogleTest assertion result: success when nothing fired, else a
/// failure carrying the report's message. An empty options.name becomes "Suite.Test"; a
/// relative regression_dir needs options.base_dir (NNFUZZ_SOURCE_DIR) or NNFUZZ_REGRESSION_ROOT.
template <typename FuzzerT, typename Seeds>
::testing::AssertionResult finds_nothing(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options = {}) {
  return detail::finds_nothing_from(nullptr, fuzzer, seeds, options);
}

}  // namespace nnfuzz

/// EXPECT_TRUE(finds_nothing(fuzzer, seeds[, options])), with base_dir = this source's directory.
#define NNFUZZ_EXPECT_NO_FINDING(...) EXPECT_TRUE(::nnfuzz::detail::finds_nothing_from(__FILE__, __VA_ARGS__))
/// ASSERT_TRUE(finds_nothing(fuzzer, seeds[, options])), with base_dir = this source's directory.
#define NNFUZZ_ASSERT_NO_FINDING(...) ASSERT_TRUE(::nnfuzz::detail::finds_nothing_from(__FILE__, __VA_ARGS__))
