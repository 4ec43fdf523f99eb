// nnfuzz: the novelty threshold shared by the coverage policies.
#pragma once

#include "../detail/config.hpp"

#include <cmath>

namespace nnfuzz {

/// Converts a threshold on the *squared* L2 distance (TensorFuzz's convention: its 0.5) into the
/// plain L2 radius nnfuzz's coverage policies take: sqrt(0.5) ≈ 0.707.
inline float coverage_threshold_from_squared(float squared) {
  if (!(squared > 0) || !std::isfinite(squared))
    detail::fail("coverage_threshold_from_squared(): squared threshold must be positive and finite, got ", squared);
  return std::sqrt(squared);
}

namespace detail {
inline float checked_threshold(const char* who, float threshold) {
  if (!(threshold > 0) || !std::isfinite(threshold))
    fail(who, ": option 'threshold' (an L2 radius) must be positive and finite, got ", threshold);
  return threshold;
}
}  // namespace detail

}  // namespace nnfuzz
