// SPDX-License-Identifier: MIT
// Fuzzing in a GoogleTest test, as the README shows it.
#include <nnfuzz/testing/gtest.hpp>

#include "user_model.hpp"

TEST(UserModel, NoNaNNearTheSeeds) {
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  auto fuzzer = nnfuzz::make_fuzzer(UserModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    nnfuzz::BruteForceCoverage(0.002f), nnfuzz::NonFiniteObjective(), options);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 20000;
  campaign.regression_dir = regression_dir();
  EXPECT_TRUE(nnfuzz::finds_nothing(fuzzer, seeds, campaign));
}
