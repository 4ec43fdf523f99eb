// SPDX-License-Identifier: MIT
// nnfuzz: the novelty radius shared by the coverage policies (an element is new when its coverage
// vector is at least `radius` away, in plain L2, from every vector seen).
#pragma once

#include "../detail/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nnfuzz {

/// Converts a bound on the *squared* L2 distance (TensorFuzz's convention: its 0.5) into the
/// plain L2 radius nnfuzz's coverage policies take: sqrt(0.5) ≈ 0.707.
inline float radius_from_squared(float squared) {
  if (!(squared > 0) || !detail::is_finite(squared))
    detail::fail("radius_from_squared(): the squared radius must be positive and finite, got ", squared);
  return std::sqrt(squared);
}
/// The old name of radius_from_squared().
[[deprecated("use nnfuzz::radius_from_squared()")]] inline float coverage_threshold_from_squared(float squared) {
  return radius_from_squared(squared);
}

namespace detail {
// True when |a - b|² < r2, summed in groups of four (nanoflann's order); stops as soon as the
// partial sum reaches r2 (adding squares never decreases a float sum, so the answer is the
// same). The one exact test every coverage back-end uses, so that they agree bit for bit.
inline bool squared_distance_below(const float* a, const float* b, Index dim, float r2) {
  float s = 0;
  Index d = 0;
  for (; d + 4 <= dim; d += 4) {
    const float d0 = a[d] - b[d], d1 = a[d + 1] - b[d + 1], d2 = a[d + 2] - b[d + 2], d3 = a[d + 3] - b[d + 3];
    s += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
    if (s >= r2) return false;
  }
  for (; d < dim; ++d) {
    const float t = a[d] - b[d];
    s += t * t;
  }
  return s < r2;
}

// Points stored column by column ("structure of arrays"): coordinate k of point p at
// data[k * stride + p], with stride >= count + kPointBlock - 1 so that a block of kPointBlock
// points starting at any p < count can be read whole (the padding is zero). The coverage back-ends
// scan such copies kPointBlock points at a time, one vector lane per point.
constexpr Index kPointBlock = 8;
inline Index point_block_stride(Index count) { return (count + 2 * kPointBlock - 1) / kPointBlock * kPointBlock; }

// The first p in [first, last) whose point is strictly closer than r2 to q, by
// squared_distance_below's own answer (so the back-ends' decisions stay bit for bit the same), or
// -1. The points are screened kPointBlock at a time with vector arithmetic; a point whose screened
// distance lies within rounding of r2 (a band of 8 (dim + 2) ulps, more than the two sums can
// differ by) is decided by squared_distance_below on `row(p)`, its stored row.
template <class Row>
Index first_point_below(const float* data, Index stride, Index first, Index last, const float* q, Index dim, float r2,
                        Row&& row) {
  typedef float Block __attribute__((vector_size(kPointBlock * sizeof(float)), __may_alias__));
  const float band = 8.0f * static_cast<float>(dim + 2) * std::numeric_limits<float>::epsilon();
  const float lo = r2 * (1.0f - band), hi = r2 * (1.0f + band);
  for (Index p0 = first; p0 < last; p0 += kPointBlock) {
    Block s = {};
    const float* c = data + p0;
    Index k = 0;
    for (; k + 4 <= dim; k += 4, c += 4 * stride) {
      Block c0, c1, c2, c3;
      std::memcpy(&c0, c, sizeof c0);
      std::memcpy(&c1, c + stride, sizeof c1);
      std::memcpy(&c2, c + 2 * stride, sizeof c2);
      std::memcpy(&c3, c + 3 * stride, sizeof c3);
      const Block d0 = q[k] - c0, d1 = q[k + 1] - c1, d2 = q[k + 2] - c2, d3 = q[k + 3] - c3;
      s += d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;
    }
    for (; k < dim; ++k, c += stride) {
      Block c0;
      std::memcpy(&c0, c, sizeof c0);
      const Block d0 = q[k] - c0;
      s += d0 * d0;
    }
    const Index m = std::min(kPointBlock, last - p0);
    for (Index j = 0; j < m; ++j)
      if (s[j] < hi && (s[j] < lo || squared_distance_below(q, row(p0 + j), dim, r2))) return p0 + j;
  }
  return -1;
}

inline float checked_radius(const char* who, float radius) {
  if (!(radius > 0) || !detail::is_finite(radius))
    fail(who, ": option 'radius' (an L2 distance) must be positive and finite, got ", radius);
  return radius;
}
}  // namespace detail

}  // namespace nnfuzz
