// SPDX-License-Identifier: MIT
// nnfuzz: Mutator policies — how a batch of mutants is made from a parent.
//
// A Mutator provides
//     void mutate(const Eigen::Ref<const nnfuzz::RowVector>& parent,
//                 const Eigen::Ref<const nnfuzz::RowVector>& root,
//                 Eigen::Ref<nnfuzz::RowMatrix> batch, nnfuzz::Rng& rng);
// filling every row of `batch` with a mutant of `parent`; `root` is the seed the parent's chain
// started from (for bounds such as TensorFuzz's L-inf ball). It may also provide
//     void check_seeds(const Eigen::Ref<const nnfuzz::RowMatrix>& seeds) const;
// which the fuzzer calls once to reject seeds outside the mutator's domain.
#pragma once

#include "detail/config.hpp"
#include "rng.hpp"

#include <cmath>
#include <limits>

namespace nnfuzz {

/// Where mutants may go: the input domain [lo, hi] and an optional L-inf ball of radius
/// `linf_radius` around the root seed (infinity = no ball). Shared by the noise mutators.
struct MutationBounds {
  float lo = 0.0f;  ///< smallest value of an input element (MNIST on [0,1] pixels: 0)
  float hi = 1.0f;  ///< largest value of an input element
  float linf_radius = std::numeric_limits<float>::infinity();  ///< max |mutant - root| per element

  /// Throws std::invalid_argument naming `who` and the bad option.
  void validate(const char* who) const {
    if (!detail::is_finite(lo) || !detail::is_finite(hi) || !(lo < hi))
      detail::fail(who, ": options 'lo' and 'hi' must be finite with lo < hi, got lo=", lo, " hi=", hi);
    if (detail::is_nan(linf_radius) || !(linf_radius > 0))
      detail::fail(who, ": option 'linf_radius' must be positive (infinity for no bound), got ", linf_radius);
  }
};

namespace detail {

// Clamps each row of `batch` to [max(root - r, lo), min(root + r, hi)]. The per-element bounds
// are computed once per call into reused buffers.
inline void clamp_rows(Eigen::Ref<RowMatrix> batch, const Eigen::Ref<const RowVector>& root, const MutationBounds& b,
                       RowVector& lower, RowVector& upper) {
  if (!detail::is_finite(b.linf_radius)) {  // +inf: no ball (NaN is rejected by MutationBounds)
    batch = batch.cwiseMax(b.lo).cwiseMin(b.hi);
    return;
  }
  lower.resize(root.cols());
  upper.resize(root.cols());
  const float inf = std::numeric_limits<float>::infinity();
  for (Index i = 0; i < root.cols(); ++i) {
    // root ± r rounds to nearest: step inwards until |bound - root| <= r holds in float too, so
    // the guarantee |mutant - root| <= r is exact, not "up to rounding".
    float lo = root(i) - b.linf_radius, hi = root(i) + b.linf_radius;
    while (root(i) - lo > b.linf_radius) lo = std::nextafter(lo, inf);
    while (hi - root(i) > b.linf_radius) hi = std::nextafter(hi, -inf);
    lower(i) = std::max(lo, b.lo);
    upper(i) = std::min(hi, b.hi);
  }
  for (Index r = 0; r < batch.rows(); ++r) batch.row(r) = batch.row(r).cwiseMax(lower).cwiseMin(upper);
}

inline void check_seeds_in_domain(const char* who, const Eigen::Ref<const RowMatrix>& seeds, const MutationBounds& b) {
  for (Index r = 0; r < seeds.rows(); ++r)
    for (Index c = 0; c < seeds.cols(); ++c) {
      const float v = seeds(r, c);
      if (!(v >= b.lo && v <= b.hi))
        fail(who, ": seed ", r, " element ", c, " is ", v, ", outside the mutator's domain [", b.lo, ", ", b.hi, "]");
    }
}

}  // namespace detail

/// Adds Gaussian noise N(0, sigma²) to every element of the parent, then clips into the L-inf
/// ball around the root seed and into the domain (TensorFuzz's mutation, with its ball radius).
/// Perturbations accumulate over generations up to the ball's radius.
class GaussianMutator {
 public:
  /// `sigma` > 0: noise standard deviation, in input units. TensorFuzz: 0.2 on [-1, 1] pixels,
  /// i.e. 0.1 on [0, 1].
  ///
  /// `sigma_range` >= 1 makes the step size multi-scale: each mutant of a batch gets its own
  /// deviation sigma * r, r log-uniform in [1/sigma_range, sigma_range] (1 = every mutant uses
  /// sigma, TensorFuzz's rule). Small steps refine a frontier, large ones jump off a plateau.
  explicit GaussianMutator(float sigma = 0.1f, MutationBounds bounds = {}, float sigma_range = 1.0f)
      : sigma_(sigma), sigma_range_(sigma_range), bounds_(bounds) {
    if (!(sigma > 0) || !detail::is_finite(sigma))
      detail::fail("GaussianMutator(): option 'sigma' must be positive and finite, got ", sigma);
    if (!(sigma_range >= 1) || !detail::is_finite(sigma_range))
      detail::fail("GaussianMutator(): option 'sigma_range' must be >= 1 and finite, got ", sigma_range);
    bounds_.validate("GaussianMutator()");
  }

  /// Fills `batch` with clipped noisy copies of `parent`.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    NNFUZZ_ASSERT(parent.cols() == batch.cols() && root.cols() == batch.cols());
    fill(batch, rng);
    if (sigma_range_ == 1.0f) {
      for (Index r = 0; r < batch.rows(); ++r) batch.row(r) = batch.row(r) * sigma_ + parent;
    } else {
      const float log_range = std::log(sigma_range_);
      for (Index r = 0; r < batch.rows(); ++r) {
        const float s = sigma_ * std::exp(log_range * static_cast<float>(2 * rng.uniform() - 1));
        batch.row(r) = batch.row(r) * s + parent;
      }
    }
    detail::clamp_rows(batch, root, bounds_, lower_, upper_);
  }
  /// Rejects seeds that are NaN or outside [lo, hi].
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    detail::check_seeds_in_domain("GaussianMutator::check_seeds()", seeds, bounds_);
  }
  /// Noise standard deviation.
  float sigma() const { return sigma_; }
  /// Spread of per-mutant deviations (1: fixed sigma).
  float sigma_range() const { return sigma_range_; }
  /// Domain and ball.
  const MutationBounds& bounds() const { return bounds_; }

 private:
  static void fill(Eigen::Ref<RowMatrix> batch, Rng& rng) {
    if (batch.outerStride() == batch.cols()) {
      rng.fill_normal(batch.data(), batch.size());
    } else {
      for (Index r = 0; r < batch.rows(); ++r) rng.fill_normal(batch.row(r).data(), batch.cols());
    }
  }
  float sigma_;
  float sigma_range_;
  MutationBounds bounds_;
  RowVector lower_, upper_;
};

/// Adds uniform noise U(-half_width, half_width) to every element, then clips like
/// GaussianMutator. Bounded steps: no heavy tails.
class UniformMutator {
 public:
  /// `half_width` > 0: the largest change of one element in one mutation.
  explicit UniformMutator(float half_width = 0.1f, MutationBounds bounds = {})
      : half_width_(half_width), bounds_(bounds) {
    if (!(half_width > 0) || !detail::is_finite(half_width))
      detail::fail("UniformMutator(): option 'half_width' must be positive and finite, got ", half_width);
    bounds_.validate("UniformMutator()");
  }

  /// Fills `batch` with clipped noisy copies of `parent`.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    NNFUZZ_ASSERT(parent.cols() == batch.cols() && root.cols() == batch.cols());
    for (Index r = 0; r < batch.rows(); ++r) {
      rng.fill_uniform(batch.row(r).data(), batch.cols(), -half_width_, half_width_);
      batch.row(r) += parent;
    }
    detail::clamp_rows(batch, root, bounds_, lower_, upper_);
  }
  /// Rejects seeds that are NaN or outside [lo, hi].
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    detail::check_seeds_in_domain("UniformMutator::check_seeds()", seeds, bounds_);
  }
  /// Largest change per element per mutation.
  float half_width() const { return half_width_; }
  /// Domain and ball.
  const MutationBounds& bounds() const { return bounds_; }

 private:
  float half_width_;
  MutationBounds bounds_;
  RowVector lower_, upper_;
};

}  // namespace nnfuzz
