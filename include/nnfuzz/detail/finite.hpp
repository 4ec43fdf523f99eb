// SPDX-License-Identifier: MIT
// nnfuzz: NaN/Inf tests on the bits of a number, immune to -ffast-math (internal).
//
// Under -ffast-math (-ffinite-math-only) a compiler may assume that no value is NaN or infinite
// and fold std::isnan(), std::isfinite() and Eigen's allFinite() to constants. nnfuzz looks for
// exactly those values, so every check it makes tests the exponent bits instead: a float is
// non-finite when its 8 exponent bits are all ones (NaN or ±Inf), a double when its 11 are.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nnfuzz {
namespace detail {

/// True when `x` is neither NaN nor ±Inf (exponent bits; never folded away by -ffast-math).
inline bool is_finite(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7f800000u) != 0x7f800000u;
}
/// True when `x` is neither NaN nor ±Inf (double).
inline bool is_finite(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
/// True when `x` is a NaN (exponent all ones, mantissa non-zero).
inline bool is_nan(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7fffffffu) > 0x7f800000u;
}
/// True when `x` is a NaN (double).
inline bool is_nan(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

/// True when every one of the `n` floats at `p` is finite. Branch-free: a float is not finite
/// when its exponent bits are all ones, i.e. when adding one to the exponent field carries into
/// the sign bit; the carries are ORed together, 8 lanes at a time (vectorised at any
/// optimisation level: GCC's -O2 does not vectorise the plain loop), and never folded away.
inline bool all_finite(const float* p, std::size_t n) {
  typedef std::uint32_t U32x8 __attribute__((vector_size(32), __may_alias__));
  U32x8 bad8 = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    U32x8 u;
    std::memcpy(&u, p + i, sizeof u);
    bad8 |= (u & 0x7f800000u) + 0x00800000u;
  }
  std::uint32_t bad = 0;
  for (int k = 0; k < 8; ++k) bad |= bad8[k];
  for (; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, p + i, sizeof u);
    bad |= (u & 0x7f800000u) + 0x00800000u;
  }
  return (bad & 0x80000000u) == 0;
}

/// True when every coefficient of row `r` of `m` (any dense Eigen expression whose scalar
/// converts to float, e.g. float or Eigen::half) is finite.
template <typename Derived>
bool row_all_finite(const Eigen::DenseBase<Derived>& m, Eigen::Index r) {
  using Scalar = typename Derived::Scalar;
  if constexpr (std::is_same<Scalar, float>::value && bool(Derived::Flags & Eigen::DirectAccessBit) &&
                bool(Derived::Flags & Eigen::RowMajorBit)) {
    if (m.derived().innerStride() == 1)
      return all_finite(m.derived().data() + r * m.derived().outerStride(), static_cast<std::size_t>(m.cols()));
  }
  bool ok = true;
  for (Eigen::Index c = 0; c < m.cols(); ++c) {
    if constexpr (std::is_same<Scalar, double>::value)
      ok = ok && is_finite(static_cast<double>(m.coeff(r, c)));
    else
      ok = ok && is_finite(static_cast<float>(m.coeff(r, c)));
  }
  return ok;
}

/// True when every coefficient of `m` is finite.
template <typename Derived>
bool all_finite(const Eigen::DenseBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  if constexpr (std::is_same<Scalar, float>::value && bool(Derived::Flags & Eigen::DirectAccessBit)) {
    // Contiguous storage: one pass over the whole buffer.
    const auto& d = m.derived();
    const Eigen::Index inner = bool(Derived::Flags & Eigen::RowMajorBit) ? d.cols() : d.rows();
    if (d.innerStride() == 1 && (d.outerStride() == inner || d.size() == 0 || d.rows() == 1 || d.cols() == 1))
      return all_finite(d.data(), static_cast<std::size_t>(d.size()));
  }
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    if (!row_all_finite(m, r)) return false;
  return true;
}

}  // namespace detail
}  // namespace nnfuzz
