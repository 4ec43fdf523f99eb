// SPDX-License-Identifier: MIT
// Regression testing between two releases of one model: your own `float*` scorer in release 1
// and release 2, where release 2 quietly changed its answer in a corner of the input space the
// test set never visits (the first feature above 0.95). VersionPair runs both on every batch; DisagreementObjective
// fires where their top-1 classes differ; the finding is re-checked, replayed and minimised towards its seed.
//
//   06_version_pair [seed]
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <cstdlib>
#include <iostream>

// Your inference code: n rows of 8 floats in [0, 1] in, 2 logits per row out. Release 2 adds a
// rule for rows whose first feature is above 0.95: it answers class 1 there.
void forward_v1(const float* x, long n, float* logits) {
  for (long i = 0; i < n; ++i, x += 8) {
    float s = 0;
    for (int c = 0; c < 8; ++c) s += x[c];
    logits[2 * i] = 4.0f - s;  // class 0 unless the row sums to more than 4
    logits[2 * i + 1] = s - 4.0f;
  }
}
void forward_v2(const float* x, long n, float* logits) {
  forward_v1(x, n, logits);
  for (long i = 0; i < n; ++i, x += 8)
    if (x[0] > 0.95f) logits[2 * i + 1] += 10.0f;  // the planted change
}

// 1. Each release as an nnfuzz model: the batch goes straight to the forward function.
template <void (*Forward)(const float*, long, float*)>
struct Release {
  struct Output {
    nnfuzz::RowMatrix logits;
  };
  nnfuzz::Index input_dim() const { return 8; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.logits.resize(batch.rows(), 2);
    Forward(batch.data(), static_cast<long>(batch.rows()), out.logits.data());
  }
};

int main(int argc, char** argv) {
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  // 2. The pair: coverage is the old release's logits (explore what users see today).
  nnfuzz::VersionPair pair(Release<forward_v1>{}, Release<forward_v2>{});
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  options.max_executions = 200000;
  options.seed = seed;
  // 3. Mutants stay in [0, 1] and within 0.8 (L-inf) of their seed.
  auto fuzzer = nnfuzz::make_fuzzer(pair, nnfuzz::RecentSampler(),
                                    nnfuzz::GaussianMutator(0.2f, nnfuzz::MutationBounds{0.0f, 1.0f, 0.8f}),
                                    nnfuzz::KdTreeCoverage(0.02f), nnfuzz::DisagreementObjective(), options);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 8, 0.3f);
  const nnfuzz::FuzzResult result = fuzzer.run(seeds);
  if (!result.found()) {
    std::cout << "no difference between the releases in " << result.stats.executions << " executions\n";
    return 1;
  }
  const nnfuzz::Finding& f = result.findings.front();
  std::cout << "releases differ after " << f.execution << " executions: " << f.what << "\n";
  std::cout << "input:";
  for (nnfuzz::Index c = 0; c < f.input.cols(); ++c) std::cout << ' ' << f.input(c);
  std::cout << "\nreplays: " << (fuzzer.replay(f.input) ? "yes" : "no") << "\n";
  // 4. The smallest change from the seed that still tells the releases apart.
  nnfuzz::DisagreementObjective objective;
  const nnfuzz::MinimizeResult m = nnfuzz::minimize(fuzzer.model(), objective, seeds.row(f.root), f.input);
  std::cout << "minimised: " << m.before.l0 << " -> " << m.after.l0 << " changed features (L-inf " << m.after.linf
            << ")\n";
  return fuzzer.replay(m.input) ? 0 : 1;
}
