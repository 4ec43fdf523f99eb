// SPDX-License-Identifier: MIT
// Fuzzing a user's own token model: sequences of ids in, engine-ready batches (ids + lengths).
// The model tracks bracket nesting in a fixed stack of 8 slots; at depth 9 it overflows (here:
// a NaN, in real code a buffer overrun). Coverage is the deepest nesting reached, so CGF climbs
// one level at a time; random search with the same budget stays near the seeds' depth.
//
//   05_token_model [seed]
#include <nnfuzz/nnfuzz.hpp>

#include <cstdlib>
#include <iostream>

enum : nnfuzz::TokenId { kOpen = 1, kClose = 2 };  // ids 3..19: other tokens

// The user's inference code: n sequences of ids, row-major, padded to max_len, with lengths.
void nesting_forward(const nnfuzz::TokenId* ids, const nnfuzz::TokenId* lengths, long n, long max_len, float* depth,
                     float* y) {
  for (long r = 0; r < n; ++r) {
    int d = 0, deepest = 0;
    float stack[8] = {0};
    bool overflow = false;
    for (long i = 0; i < lengths[r]; ++i) {
      const nnfuzz::TokenId t = ids[r * max_len + i];
      if (t == kOpen) overflow |= ++d > 8;
      if (t == kClose && d > 0) --d;
      if (d > 0 && d <= 8) stack[d - 1] += 1;
      deepest = std::max(deepest, d);
    }
    depth[r] = static_cast<float>(deepest);
    y[r] = overflow ? std::nanf("") : stack[0];
  }
}

struct NestingModel {
  struct Output {
    nnfuzz::RowMatrix coverage, y;  // B x 1 each
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::InputLayout input_layout() const { return nnfuzz::InputLayout().tokens("tokens", 20, 48); }
  void evaluate(const nnfuzz::InputBatch& batch, Output& out) const {
    out.coverage.resize(batch.rows(), 1);
    out.y.resize(batch.rows(), 1);
    nesting_forward(batch.ids(0).data(), batch.lengths(0).data(), static_cast<long>(batch.rows()), 48,
                    out.coverage.data(), out.y.data());
  }
};

nnfuzz::FuzzResult fuzz(bool cgf, std::uint64_t seed) {
  nnfuzz::FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 200000;
  o.seed = seed;
  nnfuzz::StructuredMutatorOptions edits;
  edits.max_edits = 2;
  const std::vector<nnfuzz::InputValue> seeds = {nnfuzz::token_input({3, kOpen, 4, 5, kClose, 6}),
                                                 nnfuzz::token_input({7, 8, kOpen, kClose})};
  if (cgf)
    return nnfuzz::make_fuzzer(NestingModel{}, nnfuzz::RecentSampler(), nnfuzz::StructuredMutator(edits),
                               nnfuzz::BruteForceCoverage(0.5f), nnfuzz::NonFiniteObjective(), o)
        .run(seeds);
  return nnfuzz::make_fuzzer(NestingModel{}, nnfuzz::RecentSampler(), nnfuzz::StructuredMutator(edits),
                             nnfuzz::NoCoverage(), nnfuzz::NonFiniteObjective(), o)
      .run(seeds);
}

int main(int argc, char** argv) {
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const nnfuzz::FuzzResult cgf = fuzz(true, seed), rnd = fuzz(false, seed);
  std::cout << "CGF: " << (cgf.found() ? "stack overflow found" : "nothing") << " after " << cgf.stats.executions
            << " executions (corpus " << cgf.stats.corpus_size << ")\n";
  if (cgf.found()) {
    std::cout << "  input:";
    for (nnfuzz::TokenId t : cgf.findings[0].value.tokens[0])
      std::cout << ' ' << (t == kOpen ? "(" : t == kClose ? ")" : "x");
    std::cout << "\n";
  }
  std::cout << "random search: " << (rnd.found() ? "found it" : "nothing") << " in " << rnd.stats.executions
            << " executions\n";
  return cgf.found() ? 0 : 1;
}
