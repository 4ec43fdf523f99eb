// SPDX-License-Identifier: MIT
// The user's model for the unit-test consumer tests: plain inference code over contiguous rows.
// Version 1 is NaN only when an input's mean lies in (5.0, 5.1), out of reach; the planted
// regression (-DPLANTED_REGRESSION) moves that band to (0.13, 0.16), next to the seeds at 0.1.
#pragma once
#include <nnfuzz/nnfuzz.hpp>

#include <cmath>

#ifdef PLANTED_REGRESSION
constexpr float kLo = 0.13f, kHi = 0.16f;
#else
constexpr float kLo = 5.0f, kHi = 5.1f;
#endif

inline void user_forward(const float* x, long n, float* mean, float* y) {
  for (long r = 0; r < n; ++r) {
    float s = 0;
    for (int c = 0; c < 16; ++c) s += x[r * 16 + c];
    mean[r] = s / 16;
    y[r] = std::sqrt((mean[r] - kLo) * (mean[r] - kHi));
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
