// SPDX-License-Identifier: MIT
// An objective of your own: "the output exceeds a safety limit", written in the batch shape
// check(batch, out, hits) with a describe(), on a model that is your own float* function.
//
//   02_custom_objective [seed]
#include <nnfuzz/nnfuzz.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

// Your inference code: n rows of 8 sensor readings in [0, 1] in, one dose per row out. By
// design the dose stays below 8; a planted bug overdoses when readings 0-3 are all above 0.85.
void dose_forward(const float* x, long n, float* dose) {
  for (long i = 0; i < n; ++i, x += 8) {
    float d = 0;
    for (int k = 0; k < 8; ++k) d += (k < 4 ? 1.5f : 0.5f) * x[k];
    const float low = std::min({x[0], x[1], x[2], x[3]});
    dose[i] = low > 0.85f ? d + 40.0f * (low - 0.85f) + 2.5f : d;
  }
}

struct DoseModel {
  struct Output {
    nnfuzz::RowMatrix dose;      // B x 1
    nnfuzz::RowMatrix coverage;  // B x 1: the dose itself is the behaviour to explore
  };
  nnfuzz::Index input_dim() const { return 8; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.dose.resize(batch.rows(), 1);  // batch is contiguous and row-major: pass its data() on
    dose_forward(batch.data(), static_cast<long>(batch.rows()), out.dose.data());
    out.coverage = out.dose;
  }
};

// The objective: a hit when the dose exceeds `limit`. The library sizes `hits` to the batch and
// clears it before each call, so check() sets only the rows that fire.
struct DoseAboveLimit {
  float limit = 10.0f;
  void check(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, const DoseModel::Output& out, nnfuzz::Mask& hits) const {
    for (nnfuzz::Index r = 0; r < batch.rows(); ++r)
      if (out.dose(r, 0) > limit) hits(r) = true;
  }
  // Becomes Finding::what; called for hit rows only.
  std::string describe(const DoseModel::Output& out, nnfuzz::Index row) const {
    char text[64];
    std::snprintf(text, sizeof text, "dose %.2f above the limit %.2f", out.dose(row, 0), limit);
    return text;
  }
};

int main(int argc, char** argv) {
  nnfuzz::FuzzOptions options;
  options.batch_size = 100;
  options.max_executions = 300000;
  options.seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const DoseAboveLimit objective{10.0f};
  auto fuzzer = nnfuzz::make_fuzzer(DoseModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    nnfuzz::CalibratedCoverage(), objective, options);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 8, 0.3f);  // normal readings: dose 2.4
  nnfuzz::ProgressPrinter progress(std::cout, 1.0, 0.05);
  const nnfuzz::FuzzResult result = fuzzer.run(seeds, progress);
  if (!result.found()) {
    std::cout << "no overdose in " << result.stats.executions << " executions\n";
    return 1;
  }
  const nnfuzz::Finding& f = result.findings[0];
  float dose = 0;  // check the finding with your own code, outside nnfuzz
  dose_forward(f.input.data(), 1, &dose);
  std::cout << "\nfound: " << f.what << " at execution " << f.execution << ", " << f.depth << " mutations from seed "
            << f.root << "\ninput:";
  for (nnfuzz::Index k = 0; k < f.input.cols(); ++k) std::cout << ' ' << f.input(k);
  const bool replayed = fuzzer.replay(f.input);
  std::cout << "\ndose_forward() on it: " << dose << "; replay: " << (replayed ? "fires again" : "does NOT fire")
            << '\n';
  return dose > objective.limit && replayed ? 0 : 1;
}
