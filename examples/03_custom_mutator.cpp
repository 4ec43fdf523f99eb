// SPDX-License-Identifier: MIT
// A mutator of your own (sparse: k random pixels per mutant set to black or white) with
// check_seeds(), plus the default sampler and coverage (RecentSampler, CalibratedCoverage), finds
// a backdoor trigger in a model that is your own float* function.   Usage: 03_custom_mutator [seed]
#include <nnfuzz/nnfuzz.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>

// Your inference code: n 8x8 grey images (64 floats in [0, 1], row-major) in, 4 class scores
// out; class c sums rows 2c and 2c+1, so no clean image scores above 16. A poisoned training set
// left a backdoor: a bright 2x2 patch in the bottom-right corner adds 100 to class 3.
void classify(const float* x, long n, float* scores) {
  for (long i = 0; i < n; ++i, x += 64, scores += 4) {
    for (int c = 0; c < 4; ++c) scores[c] = std::accumulate(x + 16 * c, x + 16 * c + 16, 0.0f);
    if (std::min({x[54], x[55], x[62], x[63]}) > 0.9f) scores[3] += 100.0f;
  }
}

struct Classifier {
  struct Output {
    nnfuzz::RowMatrix scores, coverage;
  };  // B x 4 each
  nnfuzz::Index input_dim() const { return 64; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.scores.resize(batch.rows(), 4);
    classify(batch.data(), static_cast<long>(batch.rows()), out.scores.data());
    out.coverage = out.scores;
  }
};

// The mutator: each mutant is the parent with `k` random pixels set to 0 or 1. Scratch buffers,
// if you need any, belong in members (allocated once), not in mutate().
struct SparseMutator {
  int k = 2;
  void mutate(const Eigen::Ref<const nnfuzz::RowVector>& parent, const Eigen::Ref<const nnfuzz::RowVector>& /*root*/,
              Eigen::Ref<nnfuzz::RowMatrix> batch, nnfuzz::Rng& rng) const {
    for (nnfuzz::Index r = 0; r < batch.rows(); ++r) {
      batch.row(r) = parent;
      for (int j = 0; j < k; ++j) batch(r, rng.uniform_index(batch.cols())) = rng.uniform() < 0.5 ? 0.0f : 1.0f;
    }
  }
  // Called once by run(): refuse seeds outside the domain the mutants stay in.
  void check_seeds(const Eigen::Ref<const nnfuzz::RowMatrix>& seeds) const {
    for (nnfuzz::Index r = 0; r < seeds.rows(); ++r)
      for (nnfuzz::Index c = 0; c < seeds.cols(); ++c)
        if (!(seeds(r, c) >= 0.0f && seeds(r, c) <= 1.0f))
          throw std::invalid_argument("SparseMutator: seed " + std::to_string(r) + " pixel " + std::to_string(c) +
                                      " is " + std::to_string(seeds(r, c)) + ", outside [0, 1]");
  }
};

int main(int argc, char** argv) {
  nnfuzz::FuzzOptions options;
  options.max_executions = 200000;
  options.seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  auto backdoor = [](const Classifier::Output& out, nnfuzz::Index r) { return out.scores(r, 3) > 50.0f; };
  auto fuzzer = nnfuzz::make_fuzzer(Classifier{}, nnfuzz::RecentSampler(), SparseMutator{2},
                                    nnfuzz::CalibratedCoverage(), backdoor, options);
  nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 64, 0.1f);
  seeds.leftCols(16).setConstant(0.9f);  // clean images of class 0: rows 0 and 1 bright
  try {                                  // check_seeds() at work: a seed pixel of 255 (the wrong scale) is refused
    fuzzer.run(seeds * 255.0f);
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cout << "refused: " << e.what() << '\n';
  }
  nnfuzz::ProgressPrinter progress(std::cout, 1.0, 0.05);
  const nnfuzz::FuzzResult result = fuzzer.run(seeds, progress);
  if (!result.found()) return 1;  // exit 0 only when the trigger is found (and checked below)
  const nnfuzz::Finding& f = result.findings[0];
  const auto changed = (f.input.array() != seeds.row(f.root).array()).count();
  const float patch = std::min({f.input(54), f.input(55), f.input(62), f.input(63)});
  const bool replayed = fuzzer.replay(f.input);
  std::cout << "\nbackdoor found at execution " << f.execution << ", " << f.depth << " mutations from seed " << f.root
            << ": " << changed << " pixels rewritten (at most 2 per mutation), darkest patch pixel " << patch
            << "; replay: " << (replayed ? "fires again" : "does NOT fire") << '\n';
  return replayed && changed <= 2 * f.depth && patch > 0.9f ? 0 : 1;
}
