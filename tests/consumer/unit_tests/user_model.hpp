// SPDX-License-Identifier: MIT
// The user's model for the unit-test consumer tests: plain inference code over contiguous rows.
// Version 1 is NaN only when an input's mean lies in (5.0, 5.1), out of reach. The next version,
// with a planted regression (run.sh sets PLANTED_REGRESSION=1 for it), moves that band to
// (0.13, 0.16), next to the seeds at 0.1. Each version keeps its own regression corpus.
#pragma once
#include <nnfuzz/nnfuzz.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

inline bool planted() { return std::getenv("PLANTED_REGRESSION") != nullptr; }
inline std::string regression_dir() { return std::string(REGRESSION_DIR) + (planted() ? "/planted" : "/good"); }

inline void user_forward(const float* x, long n, float* mean, float* y) {
  const float lo = planted() ? 0.13f : 5.0f, hi = planted() ? 0.16f : 5.1f;
  for (long r = 0; r < n; ++r) {
    float s = 0;
    for (int c = 0; c < 16; ++c) s += x[r * 16 + c];
    mean[r] = s / 16;
    y[r] = std::sqrt((mean[r] - lo) * (mean[r] - hi));
  }
}

struct UserModel {
  struct Output {
    nnfuzz::RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& b, Output& out) const {
    out.coverage.resize(b.rows(), 1);
    out.y.resize(b.rows(), 1);
    user_forward(b.data(), static_cast<long>(b.rows()), out.coverage.data(), out.y.data());
  }
};
