// SPDX-License-Identifier: MIT
// nnfuzz: Sampler policies — which corpus element to mutate next.
//
// A Sampler provides
//     Index pick(const nnfuzz::Corpus& corpus, nnfuzz::Rng& rng);
// returning the id of an element of a non-empty corpus. The fuzzer calls it once per iteration.
#pragma once

#include "corpus.hpp"
#include "rng.hpp"

#include <cmath>
#include <limits>

namespace nnfuzz {

/// Picks every element with the same probability.
class UniformSampler {
 public:
  /// Returns a uniformly random element id.
  Index pick(const Corpus& corpus, Rng& rng) const { return rng.uniform_index(corpus.size()); }
};

/// TensorFuzz's sampler: choose uniformly among the `newest` most recently added elements plus
/// one element drawn uniformly from the whole corpus (with the defaults: 5 newest + 1 random,
/// so the newest elements get ~1/6 each). Depth-first in effect: it keeps mutating fresh finds.
class RecentSampler {
 public:
  /// `newest` must be >= 1 (TensorFuzz: 5).
  explicit RecentSampler(Index newest = 5) : newest_(newest) {
    if (newest < 1) detail::fail("RecentSampler(): option 'newest' must be >= 1, got ", newest);
  }
  /// Returns the id of one of the newest elements or of one random element.
  Index pick(const Corpus& corpus, Rng& rng) const {
    const Index n = corpus.size();
    const Index recent = std::min(newest_, n);
    // Reservoir = [n - recent, n) plus one uniform draw; pick one of its recent + 1 slots.
    const Index slot = rng.uniform_index(recent + 1);
    if (slot < recent) return n - recent + slot;
    return rng.uniform_index(n);
  }
  /// How many of the newest elements are candidates.
  Index newest() const { return newest_; }

 private:
  Index newest_;
};

/// Exponential recency: element k (added k-th) is picked with probability
/// p_k ∝ exp((k - (n - 1)) / scale), i.e. TensorFuzz's p ∝ e^(t_k − t) with time counted in
/// corpus additions and stretched by `scale`. scale = 1 (the default) picks the newest element
/// with probability 1 - 1/e ≈ 0.63; larger scales spread the choice over older elements.
/// Exact inverse-CDF sampling of a truncated geometric law: O(1), no allocation.
class ExponentialRecencySampler {
 public:
  /// `scale` > 0 and finite: the decay length, in corpus elements.
  explicit ExponentialRecencySampler(double scale = 1.0) : scale_(scale) {
    if (!(scale > 0) || !detail::is_finite(scale))
      detail::fail("ExponentialRecencySampler(): option 'scale' must be positive and finite, got ", scale);
  }
  /// Returns an element id, newer ones exponentially more likely.
  Index pick(const Corpus& corpus, Rng& rng) const {
    const Index n = corpus.size();
    // Age a = n-1-k has P(a) ∝ q^a on [0, n) with q = e^(-1/scale). Inverse CDF:
    // a = floor(log(1 - u (1 - q^n)) / log q).
    const double log_q = -1.0 / scale_;
    const double qn = std::exp(log_q * static_cast<double>(n));
    const double u = rng.uniform();
    double age = std::floor(std::log1p(-u * (1.0 - qn)) / log_q);
    if (!(age >= 0)) age = 0;  // guards -0 and rounding
    if (age > static_cast<double>(n - 1)) age = static_cast<double>(n - 1);
    return n - 1 - static_cast<Index>(age);
  }
  /// The decay length.
  double scale() const { return scale_; }

 private:
  double scale_;
};

}  // namespace nnfuzz
