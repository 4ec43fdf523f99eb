// SPDX-License-Identifier: MIT
// nnfuzz: NonFiniteObjective, a NaN or an infinity in any tensor a model reports.
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace nnfuzz {

/// Finds inputs for which any tensor the model reports holds a NaN or an infinity.
///
/// The model's Output must provide
///     template <class F> void for_each_tensor(F&& f) const;
/// calling f(const char* name, const M& m) for each tensor, rows = inputs, in the order the
/// network computes them; the first tensor with a non-finite value in a row names the finding.
class NonFiniteObjective {
 public:
  /// Sets hits(r) when row r of any tensor is not all finite.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) const {
    static_assert(has_tensors<Output>::value,
                  "nnfuzz: NonFiniteObjective needs the model's Output to provide "
                  "`template <class F> void for_each_tensor(F&& f) const` (see objectives.hpp)");
    hits.setConstant(batch.rows(), false);
    out.for_each_tensor([&](const char*, const auto& m) {
      // The common case in one vectorised pass over the exponent bits (exact, -ffast-math-proof).
      if (detail::all_finite(m)) return;
      for (Index r = 0; r < m.rows() && r < hits.rows(); ++r)
        if (!detail::row_all_finite(m, r)) hits(r) = true;
    });
  }
  /// "non-finite in 'NAME'", NAME being the first tensor with a NaN/Inf in that row.
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    std::string first;
    out.for_each_tensor([&](const char* name, const auto& m) {
      if (first.empty() && row < m.rows() && !detail::row_all_finite(m, row)) first = name;
    });
    return "non-finite in '" + first + "'";
  }
  /// The name of the first tensor with a NaN/Inf in that row (Finding::fired).
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    std::string first;
    out.for_each_tensor([&](const char* name, const auto& m) {
      if (first.empty() && row < m.rows() && !detail::row_all_finite(m, row)) first = name;
    });
    return first;
  }

 private:
  struct Probe {
    template <typename M>
    void operator()(const char*, const M&) const {}
  };
  template <typename T, typename = void>
  struct has_tensors : std::false_type {};
  template <typename T>
  struct has_tensors<T, detail::void_t<decltype(std::declval<const T&>().for_each_tensor(Probe{}))>> : std::true_type {
  };
};

}  // namespace nnfuzz
