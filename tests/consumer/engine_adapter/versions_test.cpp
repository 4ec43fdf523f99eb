// SPDX-License-Identifier: MIT
// A user's GoogleTest test of two releases of an exported network: the released ONNX file and
// its successor, run by OpenCV DNN through nnfuzz's adapter, as one VersionPair whose versions
// name every layer (select.layers), so that a failure says where the two part, and writes the
// release report with the finding's picture when it fails. docs/engines.md shows this file.
//
// Environment: RELEASE_MODELS, the directory of release-v1.onnx and its candidate (tools/
// train_torch_mnist.py --test-models writes release-v1.onnx and release-v2.onnx);
// RELEASE_CANDIDATE, the candidate's file name (default release-v1.onnx: the release itself).
#define STB_IMAGE_WRITE_IMPLEMENTATION  // stb_image_write (regression/png.hpp) compiled here, once
#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/regression/png.hpp>
#include <nnfuzz/targets/version_pair.hpp>
#include <nnfuzz/testing/gtest.hpp>

#include <cstdlib>
#include <string>

namespace {

std::string env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// One release: the logits make the coverage; every layer is fetched, in the order computed.
nnfuzz::OpenCvDnnModel release(const std::string& file) {
  nnfuzz::OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  o.select.layers = {"dense1", "relu1", "dense2", "relu2", "logits"};
  return nnfuzz::OpenCvDnnModel(env("RELEASE_MODELS", ".") + "/" + file, o);
}

// The released version and the candidate; VersionPair reads each one's logits by name.
auto releases() {
  return nnfuzz::VersionPair(release("release-v1.onnx"), release(env("RELEASE_CANDIDATE", "release-v1.onnx")),
                             nnfuzz::OutputByName{"logits"});
}

auto fuzzer_of(std::size_t batch_size) {
  nnfuzz::FuzzOptions options;
  options.batch_size = static_cast<nnfuzz::Index>(batch_size);
  return nnfuzz::make_fuzzer(releases(), nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}),
                             nnfuzz::KdTreeCoverage(0.5f), nnfuzz::DisagreementObjective(), options);
}

nnfuzz::RowMatrix seed_images() {
  nnfuzz::RowMatrix x(8, 784);
  nnfuzz::Rng rng(7);
  rng.fill_uniform(x.data(), x.size(), 0.0f, 1.0f);
  return x;
}

}  // namespace

// No input near the seeds on which the candidate's top-1 differs from the release's; on a
// failure, the release report in REPORT_DIR (report.md, metrics.csv, layers.csv, the per-layer
// chart, the finding's picture: seed | found | minimised | difference).
TEST(Release, CandidateAgreesNearTheSeeds) {
  auto fuzzer = fuzzer_of(50);
  const nnfuzz::RowMatrix seeds = seed_images();
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 5000;
  campaign.regression_dir = std::string(REGRESSION_DIR) + "/" + env("RELEASE_CANDIDATE", "release-v1.onnx");
  campaign.name = "Release.CandidateAgreesNearTheSeeds";
  campaign.tolerances = nnfuzz::TensorTolerances(nnfuzz::Tolerance::float32(1e-5, 1e-4));  // where they part
  const nnfuzz::FuzzTestReport r = nnfuzz::fuzz_test(fuzzer, seeds, campaign);
  if (!r.passed) {
    nnfuzz::ReportOptions o;
    o.image = {28, 28, 0.0f, 1.0f};  // rows, cols, the values drawn black and white
    o.write_png = nnfuzz::write_png;
    const std::string candidate = env("RELEASE_CANDIDATE", "release-v1.onnx");
    nnfuzz::write_regression_report(REPORT_DIR,
                                    {nnfuzz::candidate_report(candidate, fuzzer.model(), seeds, r, campaign)}, o);
  }
  EXPECT_TRUE(r.passed) << r.message;
}

// The release gate over the seeds: the same top-1 everywhere and an SQNR of the logits >= 40 dB.
TEST(Release, CandidatePassesTheGate) {
  auto fuzzer = fuzzer_of(8);
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 16;  // the gate, then a batch or two
  campaign.gate.min_top1_agreement = 1.0;
  campaign.gate.min_sqnr_db = 40;
  campaign.regression_dir = std::string(REGRESSION_DIR) + "/" + env("RELEASE_CANDIDATE", "release-v1.onnx");
  NNFUZZ_EXPECT_NO_FINDING(fuzzer, seed_images(), campaign);
}
