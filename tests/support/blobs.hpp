// SPDX-License-Identifier: MIT
// A small classification set for training tests: three classes, two Gaussian blobs each, in 8
// dimensions (learnable, not linearly trivial).
#pragma once

#include <nnfuzz/nnfuzz.hpp>

namespace nnfuzz_test {

inline void blobs(nnfuzz::RowMatrix& x, Eigen::VectorXi& y, nnfuzz::Index n, std::uint64_t seed) {
  nnfuzz::Rng rng(seed);
  x.resize(n, 8);
  y.resize(n);
  rng.fill_normal(x.data(), x.size());
  x *= 0.3f;
  for (nnfuzz::Index i = 0; i < n; ++i) {
    const int c = static_cast<int>(rng.uniform_index(3));
    y(i) = c;
    x(i, c) += 1.5f;
    x(i, (c + 4) % 8) -= 1.0f;
  }
}

}  // namespace nnfuzz_test
