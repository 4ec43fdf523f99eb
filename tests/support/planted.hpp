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

}  // namespace nnfuzz_test
