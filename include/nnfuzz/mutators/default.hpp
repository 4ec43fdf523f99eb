// SPDX-License-Identifier: MIT
// nnfuzz: DefaultMutator, the mutation the Fuzzer uses unless told otherwise: it fits itself to
// the model and the objective at the start of each run (RunSetup).
#pragma once

#include "dense.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <tuple>

namespace nnfuzz {

/// The default mutation of dense inputs, chosen at the start of each run from what the Fuzzer
/// knows (RunSetup) — the best of the guidance comparison (docs/guidance.md) wherever the model
/// and the objective allow it:
///
/// | the objective … | the model declares … | DefaultMutator acts as |
/// |---|---|---|
/// | has no fitness | anything | GaussianMutator(sigma, bounds): TensorFuzz's noise |
/// | has a fitness | no image shape | GaussianMutator(sigma, bounds, sigma_range): multi-scale noise |
/// | has a fitness | an image ({H, W} or {C, H, W}) | a BanditMutator over SquareMutator(W, bounds) and the multi-scale
/// noise |
///
/// A model declares its shape with an optional `input_shape()` member (FunctionModel,
/// NanTarget, PairTarget and the engine adapters have one). Use GaussianMutator, SquareMutator or
/// make_bandit_mutator() directly (Fuzzer::with_mutator()) to choose yourself.
class DefaultMutator {
 public:
  /// What the mutator turned into for the current run.
  enum class Mode {
    noise,             ///< GaussianMutator(sigma): no fitness
    multiscale_noise,  ///< GaussianMutator(sigma, sigma_range): a fitness, not an image
    square_or_noise,   ///< bandit over SquareMutator and the multi-scale noise: a fitness and an image
  };

  /// `sigma` > 0 in input units (TensorFuzz's 0.1 on [0, 1] pixels), the domain and L-inf ball
  /// (`bounds`), and the spread of the multi-scale noise (`sigma_range` >= 1).
  explicit DefaultMutator(float sigma = 0.1f, MutationBounds bounds = {}, float sigma_range = 4.0f)
      : sigma_(checked(sigma, bounds, sigma_range)),
        sigma_range_(sigma_range),
        bounds_(bounds),
        noise_(sigma, bounds),
        multiscale_(sigma, bounds, sigma_range) {}

  /// Chooses the mode for the run (the Fuzzer calls it at the start of every run and resume).
  /// Throws std::invalid_argument when the declared shape does not hold input_dim elements.
  void prepare(const RunSetup& setup) {
    if (!setup.fitness) {
      mode_ = Mode::noise;
      return;
    }
    if (!setup.is_image()) {
      mode_ = Mode::multiscale_noise;
      return;
    }
    Index cells = 1;
    for (Index e : setup.input_shape) cells *= e;
    if (cells != setup.input_dim)
      detail::fail("DefaultMutator::prepare(): the model's input_shape() holds ", cells,
                   " elements, its input_dim() is ", setup.input_dim);
    bandit_.emplace(std::make_tuple(SquareMutator(setup.image_width(), bounds_), multiscale_));
    mode_ = Mode::square_or_noise;
  }
  /// Fills `batch` with mutants of `parent` by the current mode.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    switch (mode_) {
      case Mode::noise:
        return noise_.mutate(parent, root, batch, rng);
      case Mode::multiscale_noise:
        return multiscale_.mutate(parent, root, batch, rng);
      case Mode::square_or_noise:
        return bandit_->mutate(parent, root, batch, rng);
    }
  }
  /// Credits the bandit's operator (square_or_noise).
  void feedback(const BatchFeedback& fb) {
    if (mode_ == Mode::square_or_noise) bandit_->feedback(fb);
  }
  /// Forgets the bandit's statistics (the Fuzzer calls it at the start of every run).
  void reset() {
    if (bandit_) bandit_->reset();
  }
  /// Rejects seeds that are NaN or outside the domain [lo, hi].
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    detail::check_seeds_in_domain("DefaultMutator::check_seeds()", seeds, bounds_);
  }
  /// The mode of the current (or last) run.
  Mode mode() const { return mode_; }
  /// Noise standard deviation.
  float sigma() const { return sigma_; }
  /// Spread of the multi-scale noise.
  float sigma_range() const { return sigma_range_; }
  /// Domain and ball.
  const MutationBounds& bounds() const { return bounds_; }
  /// Batches each bandit operator made in this run (square_or_noise: {square, noise}; zeros otherwise).
  std::array<std::uint64_t, 2> batches() const {
    return bandit_ && mode_ == Mode::square_or_noise ? bandit_->batches() : std::array<std::uint64_t, 2>{};
  }

 private:
  // Validates the options under this class's name (before the members' own checks run).
  static float checked(float sigma, const MutationBounds& bounds, float sigma_range) {
    if (!(sigma > 0) || !detail::is_finite(sigma))
      detail::fail("DefaultMutator(): option 'sigma' must be positive and finite, got ", sigma);
    if (!(sigma_range >= 1) || !detail::is_finite(sigma_range))
      detail::fail("DefaultMutator(): option 'sigma_range' must be >= 1 and finite, got ", sigma_range);
    bounds.validate("DefaultMutator()");
    return sigma;
  }
  float sigma_, sigma_range_;
  MutationBounds bounds_;
  Mode mode_ = Mode::noise;
  GaussianMutator noise_, multiscale_;
  std::optional<BanditMutator<SquareMutator, GaussianMutator>> bandit_;
};

}  // namespace nnfuzz
