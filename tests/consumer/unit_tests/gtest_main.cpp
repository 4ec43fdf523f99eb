// SPDX-License-Identifier: MIT
// Fuzzing in a GoogleTest test, as the README shows it; and a release test of the user's own
// scorer in two releases (user_release.hpp), which writes the release report when it fails.
#define STB_IMAGE_WRITE_IMPLEMENTATION  // stb_image_write (regression/png.hpp) compiled here, once
#include <nnfuzz/testing/gtest.hpp>

#include "user_model.hpp"
#include "user_release.hpp"

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

// No input near the seeds on which the candidate's top-1 differs from release 1's; on a failure,
// the release report.
TEST(Release, CandidateAgreesNearTheSeeds) {
  auto fuzzer = release_fuzzer();
  const nnfuzz::RowMatrix seeds = release_seeds();
  const nnfuzz::FuzzTestOptions campaign = release_campaign("Release.CandidateAgreesNearTheSeeds");
  const nnfuzz::FuzzTestReport r = nnfuzz::fuzz_test(fuzzer, seeds, campaign);
  if (!r.passed) write_release_report(fuzzer, seeds, r, campaign);
  EXPECT_TRUE(r.passed) << r.message;
}

// The release gate over the seeds: an SQNR of the logits >= 30 dB.
TEST(Release, CandidatePassesTheGate) {
  auto fuzzer = release_fuzzer();
  nnfuzz::FuzzTestOptions campaign = release_campaign("");
  campaign.max_executions = 100;
  campaign.gate.min_sqnr_db = 30;
  NNFUZZ_EXPECT_NO_FINDING(fuzzer, release_seeds(), campaign);
}
