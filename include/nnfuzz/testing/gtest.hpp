// SPDX-License-Identifier: MIT
// nnfuzz: fuzzing as a GoogleTest test.
//
//     #include <nnfuzz/testing/gtest.hpp>
//     TEST(MyModel, NoNaNNearTestImages) {
//       auto fuzzer = nnfuzz::make_fuzzer(MyModel{}, nnfuzz::FuzzOptions{});
//       EXPECT_TRUE(nnfuzz::finds_nothing(fuzzer, seeds, {7, 50000, 0, "tests/regressions"}));
//     }
//
// On failure GoogleTest prints what fired, the lineage, the saved and minimised files and how
// to replay them (see nnfuzz::fuzz_test in testing.hpp).
#pragma once

#include <gtest/gtest.h>

#include "fuzz_test.hpp"

namespace nnfuzz {

/// nnfuzz::fuzz_test() as a GoogleTest assertion result: success when nothing fired, else a
/// failure carrying the report's message.
template <typename FuzzerT, typename Seeds>
::testing::AssertionResult finds_nothing(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options = {}) {
  const FuzzTestReport r = fuzz_test(fuzzer, seeds, options);
  if (r.passed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.message;
}

}  // namespace nnfuzz
