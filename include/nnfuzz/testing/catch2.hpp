// SPDX-License-Identifier: MIT
// nnfuzz: fuzzing as a Catch2 test (v2 or v3: include your Catch2 header first).
//
//     #include <catch2/catch.hpp>
//     #include <nnfuzz/testing/catch2.hpp>
//     TEST_CASE("my model has no NaN near the test images") {
//       auto fuzzer = nnfuzz::make_fuzzer(MyModel{}, nnfuzz::FuzzOptions{});
//       NNFUZZ_REQUIRE_NO_FINDING(fuzzer, seeds);                       // default campaign
//       NNFUZZ_REQUIRE_NO_FINDING(fuzzer, seeds, {7, 50000, 0, "tests/regressions"});
//     }
//
// On failure Catch2 prints the report's message: what fired, the lineage, the saved and
// minimised files and how to replay them (see nnfuzz::fuzz_test in testing/fuzz_test.hpp).
// The macros fill two options left empty: `name` with the test case's name (each test keeps its
// findings in regression_dir/<name>/) and `base_dir` with the directory of the test's source
// file (a relative regression_dir is relative to it, unless NNFUZZ_REGRESSION_ROOT is set).
#pragma once

#include "fuzz_test.hpp"

/// Runs nnfuzz::fuzz_test(fuzzer, seeds[, options]) (name and base_dir filled as above) and
/// REQUIREs that it found nothing.
#define NNFUZZ_REQUIRE_NO_FINDING(...)                                                                           \
 do {                                                                                                            \
  const ::nnfuzz::FuzzTestReport nnfuzz_report_ =                                                                \
      ::nnfuzz::detail::fuzz_test_from(__FILE__, ::Catch::getResultCapture().getCurrentTestName(), __VA_ARGS__); \
  INFO(nnfuzz_report_.message);                                                                                  \
  REQUIRE(nnfuzz_report_.passed);                                                                                \
 } while (false)

/// The same with CHECK: the test goes on after a finding.
#define NNFUZZ_CHECK_NO_FINDING(...)                                                                             \
 do {                                                                                                            \
  const ::nnfuzz::FuzzTestReport nnfuzz_report_ =                                                                \
      ::nnfuzz::detail::fuzz_test_from(__FILE__, ::Catch::getResultCapture().getCurrentTestName(), __VA_ARGS__); \
  INFO(nnfuzz_report_.message);                                                                                  \
  CHECK(nnfuzz_report_.passed);                                                                                  \
 } while (false)
