// SPDX-License-Identifier: MIT
// nnfuzz's smallest complete example: a hand-written model with a planted bug (a NaN that
// appears only when the mean of the input lands in a narrow band far from the seeds), found by
// coverage-guided fuzzing and missed by random search with the same budget.
//
//   01_planted_bug [seed]
#include <nnfuzz/nnfuzz.hpp>

#include <cstdlib>
#include <iostream>

// 1. The model: any type with an Output (holding `coverage`), input_dim() and evaluate().
struct PlantedModel {
  struct Output {
    nnfuzz::RowMatrix coverage;  // one coverage vector per input: here the input's mean
    nnfuzz::RowMatrix y;         // the model's result
    // NonFiniteObjective looks at every tensor listed here.
    template <class F>
    void for_each_tensor(F&& f) const {
      f("mean", coverage);
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    // sqrt of a negative number: NaN exactly when the mean is in (0.80, 0.83).
    out.y = ((out.coverage.array() - 0.80f) * (out.coverage.array() - 0.83f)).sqrt().matrix();
  }
};

template <typename Coverage>
nnfuzz::FuzzResult fuzz(Coverage coverage, std::uint64_t seed, bool verbose) {
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  options.max_executions = 100000;
  options.seed = seed;
  // 2. Compose the policies: sampler, mutator, coverage, objective.
  auto fuzzer = nnfuzz::make_fuzzer(PlantedModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    std::move(coverage), nnfuzz::NonFiniteObjective(), options);
  // 3. Run from seeds (one per row), with a libFuzzer-style progress printer.
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
  nnfuzz::ProgressPrinter progress(std::cout, 1.0, 0.05);
  return verbose ? fuzzer.run(seeds, progress) : fuzzer.run(seeds);
}

int main(int argc, char** argv) {
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  std::cout << "coverage-guided fuzzing (KdTreeCoverage):\n";
  const auto cgf = fuzz(nnfuzz::KdTreeCoverage(0.005f), seed, true);
  std::cout << "random search (NoCoverage), same budget:\n";
  const auto rnd = fuzz(nnfuzz::NoCoverage(), seed, false);
  std::cout << "\nCGF: " << (cgf.found() ? "found the NaN" : "nothing") << " after " << cgf.stats.executions
            << " executions (corpus " << cgf.stats.corpus_size << ")";
  if (cgf.found())
    std::cout << ", input mean " << cgf.findings[0].input.mean() << ", " << cgf.findings[0].depth
              << " mutations from seed " << cgf.findings[0].root;
  std::cout << "\nrandom search: " << (rnd.found() ? "found the NaN" : "nothing") << " in " << rnd.stats.executions
            << " executions\n";
  return cgf.found() ? 0 : 1;
}
