// SPDX-License-Identifier: MIT
// nnfuzz consumer test: the program every consumer project (find_package, add_subdirectory,
// Meson subproject) builds against the nnfuzz *core* (Eigen, nanoflann, threads: no zlib). It is
// written the way a user writes it: the model is the user's own inference code (a plain float*
// forward over contiguous rows) with a planted bug, fuzzed with the default policies
// (Fuzzer<Model>), the campaign saved to a directory and loaded back. Exits 0 only when the
// fuzzer finds the bug, the finding is on disk and replays.
#include <nnfuzz/nnfuzz.hpp>  // first, before Eigen (F16C for Eigen::half under GCC)
#include <nnfuzz/io/campaign.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#if NNFUZZ_VERSION < 0x000100
# error "nnfuzz consumer test: expected nnfuzz >= 0.1.0"
#endif

namespace {

// The user's inference code: n inputs of 16 floats, row after row. y is NaN exactly when the
// mean s of an input lies in the narrow band (0.80, 0.83), far from the seeds at 0.1.
void forward(const float* x, long n, float* mean, float* y) {
  for (long r = 0; r < n; ++r) {
    float s = 0;
    for (int c = 0; c < 16; ++c) s += x[r * 16 + c];
    s /= 16;
    mean[r] = s;
    y[r] = std::sqrt((s - 0.80f) * (s - 0.83f));
  }
}

struct BandModel {
  struct Output {
    nnfuzz::RowMatrix coverage;  // B x 1: s
    nnfuzz::RowMatrix y;         // B x 1
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.coverage.resize(batch.rows(), 1);
    out.y.resize(batch.rows(), 1);
    forward(batch.data(), static_cast<long>(batch.rows()), out.coverage.data(), out.y.data());  // contiguous rows
  }
};

}  // namespace

int main() {
  nnfuzz::FuzzOptions options;
  options.seed = 1;
  options.batch_size = 50;
  options.max_executions = 100000;
  nnfuzz::Fuzzer<BandModel> fuzzer(BandModel{});  // default policies
  fuzzer.set_options(options);

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("nnfuzz_consumer_" + std::to_string(::getpid()))).string();
  nnfuzz::FuzzResult result;
  {
    nnfuzz::CampaignSaver saver(dir, options.seed);
    result = fuzzer.run(nnfuzz::RowMatrix::Constant(4, 16, 0.1f), saver);
  }
  const nnfuzz::FuzzStats& st = result.stats;
  std::printf("nnfuzz %d.%d.%d consumer: %llu executions, corpus %lld, radius %g, %lld finding(s)\n",
              NNFUZZ_VERSION_MAJOR, NNFUZZ_VERSION_MINOR, NNFUZZ_VERSION_PATCH,
              static_cast<unsigned long long>(st.executions), static_cast<long long>(st.corpus_size),
              static_cast<double>(st.coverage_radius), static_cast<long long>(st.findings));
  const auto saved = nnfuzz::load_findings(dir);
  const nnfuzz::Corpus corpus = nnfuzz::load_corpus(dir);
  std::filesystem::remove_all(dir);
  if (!result.found() || saved.size() != result.findings.size() || corpus.size() != st.corpus_size) {
    std::printf("FAIL: expected a NaN in 'y', on disk (%zu findings, corpus %lld)\n", saved.size(),
                static_cast<long long>(corpus.size()));
    return 1;
  }
  const nnfuzz::Finding& f = saved.front().finding;
  const bool replays = fuzzer.replay(f.input);
  std::printf("finding: %s at execution %llu, depth %lld, input mean %.4f, replays: %s\n", f.what.c_str(),
              static_cast<unsigned long long>(f.execution), static_cast<long long>(f.depth),
              static_cast<double>(f.input.mean()), replays ? "yes" : "no");
  return replays ? 0 : 1;
}
