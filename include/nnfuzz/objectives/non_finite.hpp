// SPDX-License-Identifier: MIT
// nnfuzz: NonFiniteObjective, a NaN or an infinity in any tensor a model reports.
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace nnfuzz {

namespace detail {
// Float rows stored contiguously (a row-major Eigen matrix, map, ref or block of one).
template <typename M, typename = void>
struct contiguous_float_rows : std::false_type {};
template <typename M>
struct contiguous_float_rows<M, void_t<typename M::Scalar, decltype(M::IsRowMajor), decltype(M::Flags)>>
    : std::integral_constant<bool, std::is_same<typename M::Scalar, float>::value&& bool(M::IsRowMajor) &&
                                       bool(M::Flags& Eigen::DirectAccessBit)> {};

// Folds n values into hi (the largest bit pattern of |x|) and lo (the smallest of the nonzero
// ones; 0xffffffff while there is none). For non-negative floats the patterns order as the
// values do, so these are integer max/min, which vectorise where float max/min with NaN
// semantics do not; NaN and infinity are the patterns >= 0x7f800000. The minimum runs over
// |x| − 1 in unsigned arithmetic (a zero wraps to 0xffffffff and never wins): a select would
// keep GCC from vectorising.
inline void abs_bits_extremes(const float* p, Index n, std::uint32_t& hi_io, std::uint32_t& lo_io) {
  // Locals (stores through the references would not vectorise). "None yet" (0xffffffff) becomes
  // 0xfffffffe: above every |x| − 1 of a nonzero value (at most 0x7ffffffe), below a zero's.
  std::uint32_t hi = hi_io, lo_m1 = lo_io - 1;
  for (Index c = 0; c < n; ++c) {
    std::uint32_t u;
    std::memcpy(&u, p + c, sizeof u);
    u &= 0x7fffffffu;
    hi = u > hi ? u : hi;
    const std::uint32_t m1 = u - 1;
    lo_m1 = m1 < lo_m1 ? m1 : lo_m1;
  }
  hi_io = hi;
  lo_io = lo_m1 + 1;
}
// The same over row `row` of a tensor: the contiguous kernel when the row is, else value by value.
template <typename M>
void abs_bits_extremes(const M& m, Index row, std::uint32_t& hi, std::uint32_t& lo) {
  if constexpr (contiguous_float_rows<M>::value) {
    if (m.innerStride() == 1) return abs_bits_extremes(m.data() + row * m.outerStride(), m.cols(), hi, lo);
  }
  for (Index c = 0; c < m.cols(); ++c) {
    const float v = static_cast<float>(m(row, c));
    abs_bits_extremes(&v, 1, hi, lo);
  }
}
}  // namespace detail

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
    static_assert(detail::has_for_each_tensor<Output>::value,
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
  /// How close row `row` came to a non-finite value, without knowing the network: on a natural
  /// log scale, how near a value of any reported tensor is to float overflow or to underflow to
  /// zero, whichever is nearer:
  ///     max( ln |x| − ln FLT_MAX          over |x| > 2^24,
  ///          ln FLT_TRUE_MIN − ln |x|     over 0 < |x| < 2^-24 · (the largest |x| of its tensor's row) )
  /// Negative, rising towards 0 as a value nears an edge; 0 for a row that already holds a NaN
  /// or an infinity. Values in the ordinary range do not count: a value 2^24 times below its
  /// tensor's largest cannot come from cancellation (it is an exponential's or a product's, a
  /// probability heading for 0), and magnitudes below 2^24 are every network's daily business.
  /// When no value is out of that range the fitness is NaN ("unknown"): the defaults then search
  /// as TensorFuzz's set-up does, instead of chasing values that merely cross zero. On
  /// TensorFuzz's NaN model the nearest edge is a softmax probability underflowing (ln p_min ≈
  /// −logit spread): this is LogitSpreadFitness on a fixed scale (spread − 103.3), found from the
  /// tensors alone. One pass over the row's values, no allocation.
  template <typename Output, std::enable_if_t<detail::has_for_each_tensor<Output>::value, int> = 0>
  float fitness(const Output& out, Index row) const {
    // ln FLT_MAX and ln FLT_TRUE_MIN = ln 2^-149 as constants: computed at run time they would
    // depend on the floating-point environment (denormals-are-zero makes the second -inf).
    constexpr float kLnMax = 88.7228391f, kLnTrueMin = -103.2789299f;
    constexpr float kBig = 16777216.0f, kSmall = 1.0f / 16777216.0f;  // 2^24, 2^-24
    float f = std::numeric_limits<float>::quiet_NaN();
    bool finite = true;
    out.for_each_tensor([&](const char*, const auto& m) {
      if (row >= m.rows() || !finite) return;
      std::uint32_t hi = 0, lo = 0xffffffffu;
      detail::abs_bits_extremes(m, row, hi, lo);
      if (hi >= 0x7f800000u) {  // NaN or infinity
        finite = false;
        return;
      }
      float big, small = std::numeric_limits<float>::infinity();
      std::memcpy(&big, &hi, sizeof big);
      if (lo != 0xffffffffu) std::memcpy(&small, &lo, sizeof small);
      if (big > kBig) f = detail::is_nan(f) ? std::log(big) - kLnMax : std::max(f, std::log(big) - kLnMax);
      if (small < kSmall * big) {
        const float under = kLnTrueMin - std::log(small);
        f = detail::is_nan(f) ? under : std::max(f, under);
      }
    });
    return finite ? f : 0.0f;
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
};

}  // namespace nnfuzz
