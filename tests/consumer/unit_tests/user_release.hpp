// SPDX-License-Identifier: MIT
// The user's own scorer in two releases, for the release tests of the unit-test consumer tests
// (gtest_main.cpp, catch2_main.cpp), written from docs/testing.md: plain float* code wrapped in a
// FunctionModel with its hidden layer, so that a failure names the first tensor where the
// releases part; and, after a failing test, the release report with the finding's picture.
//
// A 4 x 4 image; the hidden layer holds the mean brightness of its left and right halves; the
// logits say which half is brighter (class 0: left, class 1: right). Release 2 raises class 1's
// bias by 0.3: its hidden layer is release 1's, its logits are not. The candidate is release 1
// itself (the test passes), or release 2 when run.sh sets PLANTED_REGRESSION=1: near the seeds
// (the left half brighter by 0.2) the two releases' top-1 then part. Include
// <nnfuzz/regression/png.hpp>'s stb_image_write once: define STB_IMAGE_WRITE_IMPLEMENTATION in the
// one .cpp file that includes this header.
#pragma once
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/regression/png.hpp>
#include <nnfuzz/targets/version_pair.hpp>
#include <nnfuzz/testing/fuzz_test.hpp>

#include <string>

#include "user_model.hpp"

inline void user_scorer(int release, const float* x, nnfuzz::Index n, float* logits, float* hidden) {
  for (nnfuzz::Index r = 0; r < n; ++r) {
    float left = 0, right = 0;
    for (int i = 0; i < 16; ++i) (i % 4 < 2 ? left : right) += x[r * 16 + i] / 8;
    hidden[2 * r] = left;
    hidden[2 * r + 1] = right;
    logits[2 * r] = left - right;
    logits[2 * r + 1] = right - left + (release == 2 ? 0.3f : 0.0f);
  }
}

// One release as a model: 16 inputs, 2 logits, a hidden layer of 2 ("hidden", then "output").
inline auto user_release(int release) {
  return nnfuzz::FunctionModel([release](const float* x, nnfuzz::Index n, float* logits,
                                         float* hidden) { user_scorer(release, x, n, logits, hidden); },
                               16, 2, 2);
}

inline int candidate_release() { return planted() ? 2 : 1; }

// Release 1 and the candidate; DisagreementObjective fires where their top-1 differs.
inline auto release_fuzzer() {
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  return nnfuzz::make_fuzzer(nnfuzz::VersionPair(user_release(1), user_release(candidate_release())),
                             nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f, {0.0f, 1.0f}),
                             nnfuzz::KdTreeCoverage(0.01f), nnfuzz::DisagreementObjective(), options);
}

// Four images whose left half is brighter (0.3, 0.31, …) than the right (0.1).
inline nnfuzz::RowMatrix release_seeds() {
  nnfuzz::RowMatrix s(4, 16);
  for (nnfuzz::Index k = 0; k < 4; ++k)
    for (nnfuzz::Index i = 0; i < 16; ++i) s(k, i) = i % 4 < 2 ? 0.3f + 0.01f * static_cast<float>(k) : 0.1f;
  return s;
}

// The campaign of a release test: its own corpus under regression_dir(), float32 tolerances for
// localisation.
inline nnfuzz::FuzzTestOptions release_campaign(const std::string& test_name) {
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 5000;
  campaign.regression_dir = regression_dir();
  campaign.name = test_name;
  campaign.tolerances = nnfuzz::TensorTolerances(nnfuzz::Tolerance::float32(1e-5, 1e-4));
  return campaign;
}

// After a failing test: the release report (report.md, metrics.csv, layers.csv, the per-layer
// chart and the finding's picture: seed | found | minimised | difference) in REPORT_DIR.
template <typename Fuzzer>
nnfuzz::ReportFiles write_release_report(Fuzzer& fuzzer, const nnfuzz::RowMatrix& seeds,
                                         const nnfuzz::FuzzTestReport& report,
                                         const nnfuzz::FuzzTestOptions& campaign) {
  auto pair = fuzzer.model();
  nnfuzz::ReportOptions o;
  o.title = "Release " + std::to_string(candidate_release()) + " against release 1";
  o.image = {4, 4, 0.0f, 1.0f, 16};  // rows, cols, black, white, zoom
  o.write_png = nnfuzz::write_png;
  const std::string name = "release " + std::to_string(candidate_release());
  return nnfuzz::write_regression_report(REPORT_DIR, {nnfuzz::candidate_report(name, pair, seeds, report, campaign)},
                                         o);
}
