// SPDX-License-Identifier: MIT
// A tiny model with a planted bug, for loop tests (libFuzzer style).
#pragma once

#include <nnfuzz/nnfuzz.hpp>

#include <cmath>

namespace nnfuzz_test {

using nnfuzz::Index;
using nnfuzz::RowMatrix;

/// s = mean of the input; the output y = sqrt((s - lo)(s - hi)) is NaN exactly when s lies in
/// the narrow band (lo, hi), far from seeds near 0.1. Coverage is s itself (one number).
/// Random search around a seed moves s by ~sigma/sqrt(dim): it never reaches the band.
/// CGF walks s up the corpus, generation after generation.
struct PlantedModel {
  struct Output {
    RowMatrix coverage;  // B x 1: s
    RowMatrix y;         // B x 1
    template <class F>
    void for_each_tensor(F&& f) const {
      f("coverage", coverage);
      f("y", y);
    }
  };
  Index dim = 16;
  float lo = 0.80f, hi = 0.83f;
  Index input_dim() const { return dim; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    out.y = ((out.coverage.array() - lo) * (out.coverage.array() - hi)).sqrt().matrix();
  }
};

inline RowMatrix planted_seeds(Index n = 4, Index dim = 16) { return RowMatrix::Constant(n, dim, 0.1f); }

/// planted_seeds() with seed 3 inside the NaN band: nearly every mutant of it fires, all one bug
/// ("non-finite in 'y'"), and every campaign from these seeds finds that seed's input first.
inline RowMatrix planted_nan_seeds() {
  RowMatrix s = planted_seeds();
  s.row(3).setConstant(0.815f);
  return s;
}

/// A fuzzer of PlantedModel that collects every finding of NonFiniteObjective (max_findings 0),
/// in batches of 50, with KdTreeCoverage(radius).
inline auto planted_nan_fuzzer(std::uint64_t seed, std::uint64_t executions, float radius = 0.005f) {
  nnfuzz::FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = seed;
  return nnfuzz::make_fuzzer(PlantedModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                             nnfuzz::KdTreeCoverage(radius), nnfuzz::NonFiniteObjective(), o);
}

}  // namespace nnfuzz_test
