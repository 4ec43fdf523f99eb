// SPDX-License-Identifier: MIT
// A user's token model with a planted bug, for the structured-input tests (libFuzzer style).
#pragma once

#include <nnfuzz/nnfuzz.hpp>

#include <algorithm>
#include <cmath>

namespace nnfuzz_test {

/// Sequences of up to 16 ids in [0, 10). y is NaN when the sequence holds three 7s in a row: a
/// "word" the model must never emit. Coverage: the longest run of 7s and the mean id, so that CGF
/// climbs towards longer runs. With `noise`, a second part of 4 floats in [0, 1) adds to the run
/// when its first element is above 0.5 (a model whose input has two parts).
struct TokenModel {
  struct Output {
    nnfuzz::RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  bool noise = false;
  nnfuzz::InputLayout input_layout() const {
    nnfuzz::InputLayout l;
    l.tokens("text", 10, 16);
    if (noise) l.floats("noise", 4);
    return l;
  }
  void evaluate(const nnfuzz::InputBatch& b, Output& out) const {
    out.coverage.resize(b.rows(), 2);
    out.y.resize(b.rows(), 1);
    for (nnfuzz::Index r = 0; r < b.rows(); ++r) {
      int run = 0, best = 0;
      float sum = 0;
      const nnfuzz::TokenId* ids = b.ids(0, r);  // engine-ready: contiguous ids of row r
      for (nnfuzz::Index i = 0; i < b.length(0, r); ++i) {
        run = ids[i] == 7 ? run + 1 : 0;
        best = std::max(best, run);
        sum += static_cast<float>(ids[i]);
      }
      if (noise && b.floats(1)(r, 0) > 0.5f && best > 0) ++best;
      out.coverage(r, 0) = static_cast<float>(best);
      out.coverage(r, 1) = sum / 16;
      out.y(r, 0) = best >= 3 ? std::nanf("") : 0.0f;
    }
  }
};

inline std::vector<nnfuzz::InputValue> token_seeds() {
  return {nnfuzz::token_input({1, 2, 3, 4, 5, 6}), nnfuzz::token_input({0, 9, 8})};
}

}  // namespace nnfuzz_test
