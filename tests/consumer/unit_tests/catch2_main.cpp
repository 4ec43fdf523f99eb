// SPDX-License-Identifier: MIT
// Fuzzing in a Catch2 test, as the README shows it; and a release test of the user's own scorer
// in two releases (user_release.hpp), which writes the release report when it fails.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#define STB_IMAGE_WRITE_IMPLEMENTATION  // stb_image_write (regression/png.hpp) compiled here, once
#include <nnfuzz/testing/catch2.hpp>

#include "user_model.hpp"
#include "user_release.hpp"

TEST_CASE("the user's model has no NaN near the seeds") {
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  auto fuzzer = nnfuzz::make_fuzzer(UserModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    nnfuzz::BruteForceCoverage(0.002f), nnfuzz::NonFiniteObjective(), options);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 20000;
  campaign.regression_dir = regression_dir();
  NNFUZZ_REQUIRE_NO_FINDING(fuzzer, seeds, campaign);
}

TEST_CASE("the candidate release agrees with release 1 near the seeds") {
  auto fuzzer = release_fuzzer();
  const nnfuzz::RowMatrix seeds = release_seeds();
  const nnfuzz::FuzzTestOptions campaign = release_campaign("candidate agrees");
  const nnfuzz::FuzzTestReport r = nnfuzz::fuzz_test(fuzzer, seeds, campaign);
  if (!r.passed) write_release_report(fuzzer, seeds, r, campaign);
  INFO(r.message);
  REQUIRE(r.passed);
}

TEST_CASE("the candidate release passes the gate") {
  auto fuzzer = release_fuzzer();
  nnfuzz::FuzzTestOptions campaign = release_campaign("");
  campaign.max_executions = 100;
  campaign.gate.min_sqnr_db = 30;
  NNFUZZ_REQUIRE_NO_FINDING(fuzzer, release_seeds(), campaign);
}
