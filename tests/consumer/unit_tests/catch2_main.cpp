// SPDX-License-Identifier: MIT
// Fuzzing in a Catch2 test, as the README shows it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <nnfuzz/testing/catch2.hpp>

#include "user_model.hpp"

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
