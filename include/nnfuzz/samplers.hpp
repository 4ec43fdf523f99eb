// SPDX-License-Identifier: MIT
// nnfuzz: Sampler policies — which corpus element to mutate next.
//
// A Sampler provides
//     Index pick(const nnfuzz::Corpus& corpus, nnfuzz::Rng& rng);
// returning the id of an element of a non-empty corpus. The fuzzer calls it once per iteration.
// It may also provide
//     void feedback(const nnfuzz::BatchFeedback& batch, const nnfuzz::Corpus& corpus);
// which the fuzzer calls after each batch with what the batch produced (fuzzer.hpp), so that a
// schedule can learn which parents pay.
#pragma once

#include "corpus.hpp"
#include "feedback.hpp"
#include "rng.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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

/// DeepHunter's probabilistic seed selection (Xie et al., ISSTA 2019): an element fuzzed f times
/// is picked with probability proportional to P(f) = 1 − f / gamma while that is above `p_min`,
/// and to `p_min` after that, so that fresh elements come first and worn ones keep a small
/// chance. f is CorpusEntry::times_picked. Drawn by rejection (a uniform element, accepted with
/// probability P(f)): O(1 / mean P) ≤ O(1 / p_min) draws, no state, no allocation.
class ProbabilisticSampler {
 public:
  /// `gamma` > 0: picks after which an element reaches the floor (DeepHunter: 20 at p_min 0.01);
  /// `p_min` in (0, 1]: the floor.
  explicit ProbabilisticSampler(double gamma = 20, double p_min = 0.01) : gamma_(gamma), p_min_(p_min) {
    if (!(gamma > 0) || !detail::is_finite(gamma))
      detail::fail("ProbabilisticSampler(): option 'gamma' must be positive and finite, got ", gamma);
    if (!(p_min > 0 && p_min <= 1))
      detail::fail("ProbabilisticSampler(): option 'p_min' must be in (0, 1], got ", p_min);
  }
  /// Returns an element id, the less picked ones more likely.
  Index pick(const Corpus& corpus, Rng& rng) const {
    const Index n = corpus.size();
    for (;;) {
      const Index i = rng.uniform_index(n);
      if (rng.uniform() < probability(corpus.entry(i).times_picked)) return i;
    }
  }
  /// The selection weight of an element picked `times` times.
  double probability(std::uint64_t times) const { return std::max(p_min_, 1.0 - static_cast<double>(times) / gamma_); }

 private:
  double gamma_, p_min_;
};

namespace detail {
// Weights of elements 0..n-1 in a Fenwick tree: O(log n) update, append and weighted draw.
class FenwickWeights {
 public:
  void clear() { tree_.clear(), w_.clear(); }
  Index size() const { return static_cast<Index>(w_.size()); }
  double weight(Index i) const { return w_[static_cast<std::size_t>(i)]; }
  double total() const { return prefix(size()); }
  void append(double w) {
    const std::size_t i = w_.size() + 1;  // 1-based slot
    w_.push_back(w);
    // Slot i covers (i - lowbit(i), i]: its own weight plus the slots it spans.
    const std::size_t low = i & (~i + 1);
    tree_.push_back(w + prefix(static_cast<Index>(i - 1)) - prefix(static_cast<Index>(i - low)));
  }
  void set(Index i, double w) {
    const double delta = w - w_[static_cast<std::size_t>(i)];
    w_[static_cast<std::size_t>(i)] = w;
    for (std::size_t k = static_cast<std::size_t>(i) + 1; k <= tree_.size(); k += k & (~k + 1)) tree_[k - 1] += delta;
  }
  // Sum of weights [0, n).
  double prefix(Index n) const {
    double s = 0;
    for (std::size_t k = static_cast<std::size_t>(n); k > 0; k -= k & (~k + 1)) s += tree_[k - 1];
    return s;
  }
  // The element whose cumulative range holds u in [0, total()).
  Index find(double u) const {
    std::size_t pos = 0, step = 1;
    while (step * 2 <= tree_.size()) step *= 2;
    for (; step > 0; step /= 2)
      if (pos + step <= tree_.size() && tree_[pos + step - 1] <= u) {
        pos += step;
        u -= tree_[pos - 1];
      }
    return std::min(static_cast<Index>(pos), size() - 1);
  }

 private:
  std::vector<double> tree_, w_;
};
}  // namespace detail

/// An AFL-style power schedule (after AFLFast's "fast" schedule): element i gets energy
///     e_i = (1 + children_i)^productivity / (1 + times_picked_i)
/// and is picked with probability e_i / Σ e. Elements that produced new corpus elements get
/// more (AFL's favoured paths), elements fuzzed often without result fade (AFLFast's 1/f);
/// fresh ones start at 1. Kept in a Fenwick tree: O(log n) per pick and per update, updated from
/// the fuzzer's feedback after each batch (the parent's counters and the new elements).
class PowerSampler {
 public:
  /// `productivity` >= 0: how strongly children raise the energy (0: only 1/f).
  explicit PowerSampler(double productivity = 1.0) : productivity_(productivity) {
    if (!(productivity >= 0) || !detail::is_finite(productivity))
      detail::fail("PowerSampler(): option 'productivity' must be >= 0 and finite, got ", productivity);
  }
  /// Returns an element id, drawn with probability proportional to its energy.
  Index pick(const Corpus& corpus, Rng& rng) {
    sync(corpus);
    return weights_.find(rng.uniform() * weights_.total());
  }
  /// Updates the parent's energy and adds the new elements.
  void feedback(const BatchFeedback& batch, const Corpus& corpus) {
    sync(corpus);
    if (batch.parent >= 0 && batch.parent < weights_.size())
      weights_.set(batch.parent, energy(corpus.entry(batch.parent)));
  }
  /// The energy of an element with these counters.
  double energy(const CorpusEntry& e) const {
    return std::pow(1.0 + static_cast<double>(e.children), productivity_) / (1.0 + static_cast<double>(e.times_picked));
  }

  /// Forgets the weights (the fuzzer calls it at the start of each run).
  void reset() { weights_.clear(); }

 private:
  // Brings the weights up to the corpus (elements added since the last look).
  void sync(const Corpus& corpus) {
    if (corpus.size() < weights_.size()) weights_.clear();
    while (weights_.size() < corpus.size()) weights_.append(energy(corpus.entry(weights_.size())));
  }
  double productivity_;
  detail::FenwickWeights weights_;
};

/// Fitness guidance (as DiffChaser and DFlare pick their fittest candidates), combined with
/// another sampler rather than replacing it: with probability `share` it picks uniformly among
/// the `top` fittest corpus elements (CorpusEntry::fitness, see WithFitness), otherwise it asks
/// `inner`. Elements with NaN fitness are never among the fittest; with none known it always
/// asks `inner`. The fittest are tracked from the fuzzer's feedback (O(top) per batch).
template <typename Inner = RecentSampler>
class FitnessSampler {
 public:
  /// `share` in [0, 1]; `top` >= 1.
  explicit FitnessSampler(Inner inner = Inner(), double share = 0.5, Index top = 8)
      : inner_(std::move(inner)), share_(share), top_(top) {
    if (!(share >= 0 && share <= 1)) detail::fail("FitnessSampler(): option 'share' must be in [0, 1], got ", share);
    if (top < 1) detail::fail("FitnessSampler(): option 'top' must be >= 1, got ", top);
    best_.reserve(static_cast<std::size_t>(top) + 1);
  }
  /// Returns one of the fittest elements or the inner sampler's choice.
  Index pick(const Corpus& corpus, Rng& rng) {
    sync(corpus);
    if (!best_.empty() && rng.uniform() < share_)
      return best_[static_cast<std::size_t>(rng.uniform_index(static_cast<Index>(best_.size())))];
    return inner_.pick(corpus, rng);
  }
  /// Takes the batch's new elements into the fittest, and forwards the feedback to `inner`.
  void feedback(const BatchFeedback& batch, const Corpus& corpus) {
    sync(corpus);
    if constexpr (detail::has_sampler_feedback<Inner>::value) inner_.feedback(batch, corpus);
  }
  /// The ids of the fittest elements (at most `top`, in no order).
  const std::vector<Index>& fittest() const { return best_; }
  /// The inner sampler.
  const Inner& inner() const { return inner_; }
  /// Forgets the fittest (the fuzzer calls it at the start of each run), and resets `inner`.
  void reset() {
    best_.clear();
    seen_ = 0;
    if constexpr (detail::has_policy_reset<Inner>::value) inner_.reset();
  }

 private:
  void sync(const Corpus& corpus) {
    if (corpus.size() < seen_) reset();
    for (; seen_ < corpus.size(); ++seen_) offer(corpus, seen_);
  }
  void offer(const Corpus& corpus, Index id) {
    const float f = corpus.entry(id).fitness;
    if (detail::is_nan(f)) return;
    if (static_cast<Index>(best_.size()) < top_) {
      best_.push_back(id);
      return;
    }
    auto worst = std::min_element(best_.begin(), best_.end(),
                                  [&](Index a, Index b) { return corpus.entry(a).fitness < corpus.entry(b).fitness; });
    if (f > corpus.entry(*worst).fitness) *worst = id;
  }
  Inner inner_;
  double share_;
  Index top_;
  std::vector<Index> best_;
  Index seen_ = 0;
};

/// The default sampler: FitnessSampler over RecentSampler. With an objective that has a fitness,
/// half the picks go to the 8 fittest elements; without one it picks exactly as RecentSampler
/// (same choices, same random numbers).
using DefaultSampler = FitnessSampler<RecentSampler>;

}  // namespace nnfuzz
