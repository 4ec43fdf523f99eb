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
// which the fuzzer calls once to reject seeds outside the mutator's domain, and
//     void feedback(const nnfuzz::BatchFeedback& batch);   void reset();
// which it calls after each batch (what the batch produced) and at the start of each run.
#pragma once

#include "../detail/config.hpp"
#include "../feedback.hpp"
#include "../rng.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

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

// The mutant path after the noise: rows = min(max(rows * s_r + parent, lower), upper), or the
// clip alone. Every path rounds the product and the sum separately (never one FMA), and
// max/min are exact, so every path and every build gives the same bits: the AVX2 code keeps the
// compiler from contracting (GCC contracts across statements by default, -ffp-contract=fast),
// and the generic code scales in one pass and adds in another. max(x, lower) is `lower > x ?
// lower : x` and min(y, upper) `upper < y ? upper : y` on every path (std::max/std::min's
// order, and Eigen's cwiseMax/cwiseMin's).
struct RowsView {
  float* data;   // first row
  Index rows;    // rows
  Index cols;    // elements per row
  Index stride;  // floats from one row to the next
};
// Bounds: per element (lower/upper non-null) or one [lo, hi] for every element.
struct ClipBounds {
  const float* lower;
  const float* upper;
  float lo, hi;
};

// Generic: Eigen, for the build's instruction set. `scale` null: clip only.
inline void scale_add_clip_generic(const RowsView& v, const float* scale, const float* parent, const ClipBounds& b) {
  using Row = Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>;
  using ConstRow = Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>>;
  for (Index r = 0; r < v.rows; ++r) {
    Row x(v.data + r * v.stride, v.cols);
    if (scale) {
      x *= scale[r];  // its own pass: the product is rounded (stored) before the sum
      x += ConstRow(parent, v.cols);
    }
    if (b.lower)
      x = x.cwiseMax(ConstRow(b.lower, v.cols)).cwiseMin(ConstRow(b.upper, v.cols));
    else
      x = x.cwiseMax(b.lo).cwiseMin(b.hi);
  }
}

#if defined(NNFUZZ_X86_DISPATCH)
// The tail of a row: lanes [0, n) of 8.
NNFUZZ_TARGET_AVX2_INLINE __m256i tail_mask_avx2(Index n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// Lanes [c, c + 8) of one row (the pointers that a mode does not use may be null: offset only
// those it uses).
template <bool kScale, bool kPerElement>
NNFUZZ_TARGET_AVX2_INLINE __m256 scale_add_clip_lanes_avx2(__m256 x, __m256 s, const float* parent, __m256 lo,
                                                           __m256 hi, const ClipBounds& b, Index c, __m256i mask,
                                                           bool masked) {
  if (kScale) {
    x = _mm256_mul_ps(x, s);
    __asm__("" : "+x"(x));  // an opaque step: the product stays rounded (no FMA contraction)
    x = _mm256_add_ps(x, masked ? _mm256_maskload_ps(parent + c, mask) : _mm256_loadu_ps(parent + c));
  }
  if (kPerElement) {
    lo = masked ? _mm256_maskload_ps(b.lower + c, mask) : _mm256_loadu_ps(b.lower + c);
    hi = masked ? _mm256_maskload_ps(b.upper + c, mask) : _mm256_loadu_ps(b.upper + c);
  }
  return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
}
template <bool kScale, bool kPerElement>
NNFUZZ_TARGET_AVX2 void scale_add_clip_avx2(const RowsView& v, const float* scale, const float* parent,
                                            const ClipBounds& b) {
  const __m256 lo = _mm256_set1_ps(b.lo), hi = _mm256_set1_ps(b.hi);
  const Index full = v.cols - v.cols % 8;
  const __m256i mask = tail_mask_avx2(v.cols - full), all = _mm256_set1_epi32(-1);
  for (Index r = 0; r < v.rows; ++r) {
    float* row = v.data + r * v.stride;
    const __m256 s = _mm256_set1_ps(kScale ? scale[r] : 1.0f);
    for (Index c = 0; c < full; c += 8)
      _mm256_storeu_ps(row + c, scale_add_clip_lanes_avx2<kScale, kPerElement>(_mm256_loadu_ps(row + c), s, parent, lo,
                                                                               hi, b, c, all, false));
    if (full < v.cols)
      _mm256_maskstore_ps(row + full, mask,
                          scale_add_clip_lanes_avx2<kScale, kPerElement>(_mm256_maskload_ps(row + full, mask), s,
                                                                         parent, lo, hi, b, full, mask, true));
  }
}
#endif

// rows = clip(rows * scale[r] + parent) (scale null: clip(rows)), on the AVX2 path when the CPU
// has it and the noise kernel is not forced to `generic` (set_noise_kernel(): that one setting
// picks the instruction set of the whole mutant path, so that one machine can measure each).
inline void scale_add_clip(const RowsView& v, const float* scale, const float* parent, const ClipBounds& b) {
#if defined(NNFUZZ_X86_DISPATCH)
  if (active_noise_kernel() != NoiseKernel::generic) {
    const bool per_element = b.lower != nullptr;
    if (scale)
      per_element ? scale_add_clip_avx2<true, true>(v, scale, parent, b)
                  : scale_add_clip_avx2<true, false>(v, scale, parent, b);
    else
      per_element ? scale_add_clip_avx2<false, true>(v, scale, parent, b)
                  : scale_add_clip_avx2<false, false>(v, scale, parent, b);
    return;
  }
#endif
  scale_add_clip_generic(v, scale, parent, b);
}

// The bounds of clamp_rows: [lo, hi] without a ball; with one, per element
// [max(root - r, lo), min(root + r, hi)] computed into the reused buffers.
inline ClipBounds clip_bounds(const Eigen::Ref<const RowVector>& root, const MutationBounds& b, RowVector& lower,
                              RowVector& upper) {
  if (!detail::is_finite(b.linf_radius))  // +inf: no ball (NaN is rejected by MutationBounds)
    return ClipBounds{nullptr, nullptr, b.lo, b.hi};
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
  return ClipBounds{lower.data(), upper.data(), b.lo, b.hi};
}
// clip_bounds() remembered for one root: the fuzzer mutates the same root for many batches, and
// comparing the root's bits (a memcmp) costs far less than recomputing the ball's bounds.
struct ClipBoundsCache {
  RowVector root, lower, upper;
  MutationBounds bounds;
  bool valid = false;
  ClipBounds get(const Eigen::Ref<const RowVector>& r, const MutationBounds& b) {
    if (!detail::is_finite(b.linf_radius)) return ClipBounds{nullptr, nullptr, b.lo, b.hi};
    const bool same = valid && root.cols() == r.cols() && bounds.lo == b.lo && bounds.hi == b.hi &&
                      bounds.linf_radius == b.linf_radius &&
                      std::memcmp(root.data(), r.data(), sizeof(float) * static_cast<std::size_t>(r.cols())) == 0;
    if (!same) {
      clip_bounds(r, b, lower, upper);
      root = r;
      bounds = b;
      valid = true;
    }
    return ClipBounds{lower.data(), upper.data(), b.lo, b.hi};
  }
};
inline RowsView rows_view(Eigen::Ref<RowMatrix>& batch) {
  return RowsView{batch.data(), batch.rows(), batch.cols(), batch.outerStride()};
}

// Clamps each row of `batch` to [max(root - r, lo), min(root + r, hi)]. The per-element bounds
// are computed once per call into reused buffers.
inline void clamp_rows(Eigen::Ref<RowMatrix> batch, const Eigen::Ref<const RowVector>& root, const MutationBounds& b,
                       RowVector& lower, RowVector& upper) {
  scale_add_clip(rows_view(batch), nullptr, nullptr, clip_bounds(root, b, lower, upper));
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
    // One deviation per row (drawn after the noise, in row order), then one pass per row:
    // noise * sigma + parent, clipped (detail::scale_add_clip: the same bits on every path).
    scale_.resize(batch.rows());
    if (sigma_range_ == 1.0f) {
      scale_.setConstant(sigma_);
    } else {
      const float log_range = std::log(sigma_range_);
      for (Index r = 0; r < batch.rows(); ++r)
        scale_(r) = sigma_ * std::exp(log_range * static_cast<float>(2 * rng.uniform() - 1));
    }
    // (A Ref<const RowVector> is contiguous: Eigen copies a strided argument into it.)
    detail::scale_add_clip(detail::rows_view(batch), scale_.data(), parent.data(), ball_.get(root, bounds_));
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
  detail::ClipBoundsCache ball_;
  Eigen::Array<float, Eigen::Dynamic, 1> scale_;
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

/// Resets a few elements of the parent to values drawn uniformly from the domain, then clips
/// into the L-inf ball around the root: DeepHunter's pixel-value changes. With `patch` > 0 and
/// `width` > 0 (the input is an image of rows of `width` elements) it resets one random
/// patch × patch square instead. Large local changes, unlike noise on every element.
class ResetMutator {
 public:
  /// `count` >= 1: elements reset per mutant (ignored in patch mode); `width`, `patch` >= 0.
  explicit ResetMutator(Index count = 8, MutationBounds bounds = {}, Index width = 0, Index patch = 0)
      : count_(count), width_(width), patch_(patch), bounds_(bounds) {
    if (count < 1) detail::fail("ResetMutator(): option 'count' must be >= 1, got ", count);
    if (width < 0 || patch < 0 || (patch > 0 && (width < 1 || patch > width)))
      detail::fail(
          "ResetMutator(): options 'width' and 'patch' must satisfy 1 <= patch <= width (or patch = 0), got "
          "width=",
          width, " patch=", patch);
    bounds_.validate("ResetMutator()");
  }
  /// Fills `batch` with copies of `parent`, each with a few elements (or a patch) redrawn.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    NNFUZZ_ASSERT(parent.cols() == batch.cols() && root.cols() == batch.cols());
    const Index d = batch.cols();
    if (patch_ > 0 && d % width_ != 0)
      detail::fail("ResetMutator::mutate(): inputs of ", d, " elements are not rows of option 'width' = ", width_);
    const float span = bounds_.hi - bounds_.lo;
    for (Index r = 0; r < batch.rows(); ++r) {
      batch.row(r) = parent;
      if (patch_ > 0) {
        const Index height = d / width_;
        if (patch_ > height)
          detail::fail("ResetMutator::mutate(): option 'patch' = ", patch_, " exceeds the ", height, " image rows");
        const Index y0 = rng.uniform_index(height - patch_ + 1), x0 = rng.uniform_index(width_ - patch_ + 1);
        for (Index y = y0; y < y0 + patch_; ++y)
          for (Index x = x0; x < x0 + patch_; ++x)
            batch(r, y * width_ + x) = bounds_.lo + span * static_cast<float>(rng.uniform());
      } else {
        for (Index k = 0; k < count_; ++k)
          batch(r, rng.uniform_index(d)) = bounds_.lo + span * static_cast<float>(rng.uniform());
      }
    }
    detail::clamp_rows(batch, root, bounds_, lower_, upper_);
  }
  /// Rejects seeds that are NaN or outside [lo, hi].
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    detail::check_seeds_in_domain("ResetMutator::check_seeds()", seeds, bounds_);
  }
  /// Domain and ball.
  const MutationBounds& bounds() const { return bounds_; }

 private:
  Index count_, width_, patch_;
  MutationBounds bounds_;
  RowVector lower_, upper_;
};

/// Square Attack's step (Andriushchenko et al., ECCV 2020), for inputs that are images in an
/// L-inf ball: each mutant copies the parent and sets one random square patch to the ball's
/// corner, root ± linf_radius (one random sign per patch), clipped into the domain. Patch sides
/// are drawn uniformly from [1, max_side]. Corners move a network's logits most per unit of
/// L-inf budget: with a fitness (WithFitness, FitnessSampler) this is a black-box attack's
/// climb. Without a ball (infinite radius) the patch goes to lo or hi.
class SquareMutator {
 public:
  /// `width` >= 1: elements per image row; `max_side` in [1, width] (0: width / 4, at least 1).
  explicit SquareMutator(Index width, MutationBounds bounds = {}, Index max_side = 0)
      : width_(width), max_side_(max_side > 0 ? max_side : std::max<Index>(1, width / 4)), bounds_(bounds) {
    if (width < 1) detail::fail("SquareMutator(): option 'width' must be >= 1, got ", width);
    if (max_side < 0 || max_side_ > width)
      detail::fail("SquareMutator(): option 'max_side' must be in [1, width = ", width, "] (or 0), got ", max_side);
    bounds_.validate("SquareMutator()");
  }
  /// Fills `batch` with copies of `parent`, each with one patch at a corner of the ball.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    NNFUZZ_ASSERT(parent.cols() == batch.cols() && root.cols() == batch.cols());
    const Index d = batch.cols();
    if (d % width_ != 0 || d / width_ < max_side_)
      detail::fail("SquareMutator::mutate(): inputs of ", d, " elements are not images of option 'width' = ", width_,
                   " with at least max_side = ", max_side_, " rows");
    const Index height = d / width_;
    for (Index r = 0; r < batch.rows(); ++r) {
      batch.row(r) = parent;
      const Index side = 1 + rng.uniform_index(max_side_);
      const Index y0 = rng.uniform_index(height - side + 1), x0 = rng.uniform_index(width_ - side + 1);
      const float step = rng.uniform() < 0.5 ? -bounds_.linf_radius : bounds_.linf_radius;
      for (Index y = y0; y < y0 + side; ++y)
        for (Index x = x0; x < x0 + side; ++x) {
          const Index i = y * width_ + x;
          batch(r, i) = std::min(bounds_.hi, std::max(bounds_.lo, root(i) + step));
        }
    }
    detail::clamp_rows(batch, root, bounds_, lower_, upper_);
  }
  /// Rejects seeds that are NaN or outside [lo, hi].
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    detail::check_seeds_in_domain("SquareMutator::check_seeds()", seeds, bounds_);
  }
  /// Largest patch side.
  Index max_side() const { return max_side_; }

 private:
  Index width_, max_side_;
  MutationBounds bounds_;
  RowVector lower_, upper_;
};

/// Chooses, for each batch, one of several mutators (operators) by how well each has paid: a
/// discounted ε-greedy bandit, as DFlare adapts its operator choice. The reward of a batch, from
/// the fuzzer's feedback, is its progress when the objective has a fitness (the rise of its
/// fittest mutant above the parent, plus its hits), else (mutants added to the corpus + objective
/// hits) / mutants: novelty rewards the operator that scatters, fitness the one that climbs. Each
/// operator is first tried `warmup` batches in turn; after that, with probability `epsilon` a
/// uniform operator, otherwise the one with the best discounted mean reward (every past batch's
/// weight multiplied by `decay` per batch, so the choice follows a changing search). Dense rows.
/// Deterministic: the choice uses the fuzzer's RNG, and the statistics restart with each run.
template <typename... Mutators>
class BanditMutator {
  static_assert(sizeof...(Mutators) >= 1, "nnfuzz: BanditMutator needs at least one mutator");

 public:
  static constexpr std::size_t kArms = sizeof...(Mutators);  ///< number of operators

  /// The operators, tried with these options: `epsilon` in [0, 1], `decay` in (0, 1], `warmup` >= 1.
  explicit BanditMutator(std::tuple<Mutators...> arms, double epsilon = 0.1, double decay = 0.99, Index warmup = 2)
      : arms_(std::move(arms)), epsilon_(epsilon), decay_(decay), warmup_(warmup) {
    if (!(epsilon >= 0 && epsilon <= 1))
      detail::fail("BanditMutator(): option 'epsilon' must be in [0, 1], got ", epsilon);
    if (!(decay > 0 && decay <= 1)) detail::fail("BanditMutator(): option 'decay' must be in (0, 1], got ", decay);
    if (warmup < 1) detail::fail("BanditMutator(): option 'warmup' must be >= 1, got ", warmup);
    reset();
  }
  /// Picks an operator and lets it fill the batch.
  void mutate(const Eigen::Ref<const RowVector>& parent, const Eigen::Ref<const RowVector>& root,
              Eigen::Ref<RowMatrix> batch, Rng& rng) {
    last_ = choose(rng);
    ++batches_[last_];
    dispatch(last_, [&](auto& m) { m.mutate(parent, root, batch, rng); });
  }
  /// Credits the operator that made the batch: with a fitness known for the parent, the batch's
  /// progress (how far its fittest mutant rose above the parent, 0 if none did, plus its hits);
  /// otherwise (mutants added + hits) / mutants.
  void feedback(const BatchFeedback& fb) {
    if (fb.rows < 1) return;
    double reward = static_cast<double>(fb.added + fb.hits) / static_cast<double>(fb.rows);
    if (fb.fitness != nullptr && !detail::is_nan(fb.parent_fitness)) {
      float best = fb.parent_fitness;
      for (Index r = 0; r < fb.rows; ++r)
        if (fb.fitness[r] > best) best = fb.fitness[r];  // NaN never compares greater
      reward = static_cast<double>(best - fb.parent_fitness) + static_cast<double>(fb.hits);
    }
    for (std::size_t a = 0; a < kArms; ++a) {
      gain_[a] *= decay_;
      weight_[a] *= decay_;
    }
    gain_[last_] += reward;
    weight_[last_] += 1;
  }
  /// Forgets the statistics (the fuzzer calls it at the start of each run).
  void reset() {
    gain_.fill(0);
    weight_.fill(0);
    batches_.fill(0);
    turn_ = 0;
    last_ = 0;
  }
  /// Rejects seeds any operator rejects.
  void check_seeds(const Eigen::Ref<const RowMatrix>& seeds) const {
    std::apply([&](const auto&... m) { (check_one(m, seeds), ...); }, arms_);
  }
  /// Batches each operator made in this run.
  const std::array<std::uint64_t, kArms>& batches() const { return batches_; }
  /// Discounted mean reward of operator `arm` (0 before it was tried).
  double mean_reward(std::size_t arm) const { return weight_[arm] > 0 ? gain_[arm] / weight_[arm] : 0.0; }
  /// The operators.
  const std::tuple<Mutators...>& arms() const { return arms_; }

 private:
  std::size_t choose(Rng& rng) {
    if (turn_ < static_cast<std::uint64_t>(warmup_) * kArms) return static_cast<std::size_t>(turn_++ % kArms);
    if (rng.uniform() < epsilon_) return static_cast<std::size_t>(rng.uniform_index(static_cast<Index>(kArms)));
    std::size_t best = 0;
    for (std::size_t a = 1; a < kArms; ++a)
      if (mean_reward(a) > mean_reward(best)) best = a;
    return best;
  }
  template <typename F, std::size_t I = 0>
  void dispatch(std::size_t arm, F&& f) {
    if constexpr (I < kArms) {
      if (arm == I) return f(std::get<I>(arms_));
      dispatch<F, I + 1>(arm, std::forward<F>(f));
    }
  }
  template <typename M>
  static void check_one(const M& m, const Eigen::Ref<const RowMatrix>& seeds) {
    if constexpr (detail::has_check_seeds<M>::value) m.check_seeds(seeds);
  }
  std::tuple<Mutators...> arms_;
  double epsilon_, decay_;
  Index warmup_;
  std::array<double, kArms> gain_{}, weight_{};
  std::array<std::uint64_t, kArms> batches_{};
  std::uint64_t turn_ = 0;
  std::size_t last_ = 0;
};

/// Builds a BanditMutator over copies of the operators (default options).
template <typename... Mutators>
BanditMutator<Mutators...> make_bandit_mutator(Mutators... arms) {
  return BanditMutator<Mutators...>(std::make_tuple(std::move(arms)...));
}

}  // namespace nnfuzz
