// SPDX-License-Identifier: MIT
// nnfuzz: the novelty radius shared by the coverage policies (an element is new when its coverage
// vector is at least `radius` away, in plain L2, from every vector seen).
#pragma once

#include "../detail/config.hpp"

#include <cmath>

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

inline float checked_radius(const char* who, float radius) {
  if (!(radius > 0) || !detail::is_finite(radius))
    fail(who, ": option 'radius' (an L2 distance) must be positive and finite, got ", radius);
  return radius;
}
}  // namespace detail

}  // namespace nnfuzz
