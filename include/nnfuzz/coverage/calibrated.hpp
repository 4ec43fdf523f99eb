// SPDX-License-Identifier: MIT
// nnfuzz: CalibratedCoverage — the novelty radius chosen from the model's own distances.
#pragma once

#include "auto.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace nnfuzz {

/// What CalibratedCoverage chose, once it has chosen, and how it has adapted since.
struct Calibration {
  float radius = 0;           ///< the L2 novelty radius now (0: not calibrated yet)
  float initial_radius = 0;   ///< the radius chosen from the first mutants
  double target_rate = 0;     ///< the share of the first mutants it made new
  Index samples = 0;          ///< first mutants whose nearest-seed distances it looked at
  float median_distance = 0;  ///< their median nearest-seed distance
  Index adjustments = 0;      ///< times the radius was changed since (CalibrationOptions::adapt)
  double window_rate = 0;     ///< acceptance rate of the last full window of mutants
};

/// Options of CalibratedCoverage (plain fields with defaults).
struct CalibrationOptions {
  /// The share of the first mutants that should be new, in (0, 1): the radius is the
  /// (1 − target_rate) quantile of their distances to the nearest seed. The default 0.9 puts it
  /// at a tenth of a typical mutation step: most of the first mutants are new, and as the corpus
  /// fills the space it can reach, only mutants beyond its frontier stay new (TensorFuzz's
  /// dynamics, at a scale the model sets). The README's guidance table measured 0.1 – 0.9.
  double target_rate = 0.9;
  /// Stop a random walk: after every `window` mutants (the calibration batch not counted), if
  /// more than `max_rate` of them were new in each of the last `patience` windows, grow the
  /// radius by sqrt(rate / max_rate) (at most 2x per window, 1000x the first radius overall).
  /// Only a rate that stays high is a random walk (every mutant new, as with high-dimensional
  /// coverage vectors); a burst while the corpus spreads out is not, and a falling rate is the
  /// corpus covering its space: shrinking the radius to hold a rate turned the NaN hunt into a
  /// random walk (docs/guidance.md).
  bool adapt = true;
  Index window = 2000;    ///< mutants per adaptation check (>= 1)
  double max_rate = 0.1;  ///< acceptance above which a window counts as "too high", in (0, 1]
  Index patience = 3;     ///< consecutive too-high windows before the radius grows (>= 1)
};

/// The radius for which about `target_rate` of `mutants` would be new against `references`: the
/// (1 - target_rate) quantile of each mutant's exact L2 distance to its nearest reference, just
/// above it (nnfuzz's "new" is distance >= radius). Rows that are not finite are skipped. Returns
/// 0 when no finite mutant lies at a positive distance (a constant coverage: nothing to choose
/// from). `median`, if given, receives the median of the distances, `samples` how many finite
/// mutants were measured. O(mutants x references x dim).
inline float calibrate_radius(const Eigen::Ref<const RowMatrix>& references, const Eigen::Ref<const RowMatrix>& mutants,
                              double target_rate, float* median = nullptr, Index* samples = nullptr) {
  if (!detail::is_finite(target_rate) || !(target_rate > 0 && target_rate < 1))
    detail::fail("calibrate_radius(): option 'target_rate' must be in (0, 1), got ", target_rate);
  if (references.rows() < 1) detail::fail("calibrate_radius(): no reference vectors (0 rows)");
  if (references.cols() != mutants.cols())
    detail::fail("calibrate_radius(): references have ", references.cols(), " columns, mutants ", mutants.cols());
  std::vector<float> distances;
  std::vector<char> usable(static_cast<std::size_t>(references.rows()));
  for (Index j = 0; j < references.rows(); ++j)
    usable[static_cast<std::size_t>(j)] = detail::row_all_finite(references, j);
  float smallest_positive = std::numeric_limits<float>::infinity();
  for (Index i = 0; i < mutants.rows(); ++i) {
    if (!detail::row_all_finite(mutants, i)) continue;
    float d2 = std::numeric_limits<float>::infinity();
    for (Index j = 0; j < references.rows(); ++j)
      if (usable[static_cast<std::size_t>(j)]) d2 = std::min(d2, (references.row(j) - mutants.row(i)).squaredNorm());
    if (!detail::is_finite(d2)) continue;
    const float d = std::sqrt(d2);
    distances.push_back(d);
    if (d > 0) smallest_positive = std::min(smallest_positive, d);
  }
  if (samples) *samples = static_cast<Index>(distances.size());
  if (!detail::is_finite(smallest_positive)) return 0;
  const auto n = distances.size();
  auto at = [&](double q) {
    const auto k =
        std::min<std::size_t>(n - 1, static_cast<std::size_t>(std::floor(q * static_cast<double>(n - 1) + 0.5)));
    std::nth_element(distances.begin(), distances.begin() + static_cast<std::ptrdiff_t>(k), distances.end());
    return distances[k];
  };
  if (median) *median = at(0.5);
  float radius = at(1.0 - target_rate);
  if (!(radius > 0)) radius = smallest_positive;
  return std::nextafter(radius, std::numeric_limits<float>::infinity());
}

/// Coverage policy that needs no radius: the default of Fuzzer. A fixed radius on the wrong scale
/// silently turns fuzzing into random search (radius too large: nothing is ever new) or into a
/// random walk (too small: everything is); the right scale depends on the model's coverage
/// vectors, which a user cannot guess. So:
///  1. the seeds are all kept (every finite seed vector is new);
///  2. on the first batch of mutants after the seeds (the Fuzzer tells it via seeds_done()), it
///     takes calibrate_radius(seeds, mutants, target_rate): about `target_rate` of the first
///     mutants would be new;
///  3. from then on it is an AutoCoverage with that radius (the seeds inserted first), and with
///     CalibrationOptions::adapt (the default) it grows the radius while windows of mutants keep
///     being accepted at more than max_rate, so that the corpus does not become a random walk
///     (every mutant new, as with high-dimensional coverage vectors).
/// If every first mutant lies exactly on a seed (a constant coverage), it waits for a batch with
/// a positive distance; until then nothing is new. The choice is reported by calibration(),
/// radius() and FuzzStats::coverage_radius (ProgressPrinter prints each change). resume()
/// recalibrates against the whole saved corpus. Decisions are deterministic: one seed, one run.
class CalibratedCoverage {
 public:
  /// `target_rate` in (0, 1): the share of the first mutants that should be new (other options
  /// at their defaults).
  explicit CalibratedCoverage(double target_rate = CalibrationOptions().target_rate)
      : CalibratedCoverage(options_for(target_rate)) {}
  /// All options (see CalibrationOptions).
  explicit CalibratedCoverage(const CalibrationOptions& options) : options_(options), target_(options.target_rate) {
    if (!detail::is_finite(target_) || !(target_ > 0 && target_ < 1))
      detail::fail("CalibratedCoverage(): option 'target_rate' must be in (0, 1), got ", target_);
    if (options.window < 1) detail::fail("CalibratedCoverage(): option 'window' must be >= 1, got ", options.window);
    if (options.patience < 1)
      detail::fail("CalibratedCoverage(): option 'patience' must be >= 1, got ", options.patience);
    if (!(options.max_rate > 0 && options.max_rate <= 1))
      detail::fail("CalibratedCoverage(): option 'max_rate' must be in (0, 1], got ", options.max_rate);
  }
  /// Forgets every vector and the radius; `dim` is the coverage vector length.
  void reset(Index dim) {
    if (dim < 1) detail::fail("CalibratedCoverage::reset(): coverage vectors must have >= 1 element, got ", dim);
    dim_ = dim;
    pending_.clear();
    inner_.reset();
    seeds_done_ = false;
    seen_ = new_ = high_ = 0;
    calibration_ = Calibration{};
    calibration_.target_rate = target_;
  }
  /// Called by the Fuzzer once the seeds are in: the next batch calibrates the radius.
  void seeds_done() { seeds_done_ = true; }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    if (vectors.cols() != dim_)
      detail::fail("CalibratedCoverage::observe(): vectors have ", vectors.cols(), " elements, reset() said ", dim_);
    if (inner_) {
      inner_->observe(vectors, is_new);
      adapt(is_new);
      return;
    }
    is_new.resize(vectors.rows());
    if (!seeds_done_) {  // seeds: keep every finite one
      for (Index i = 0; i < vectors.rows(); ++i) {
        is_new(i) = detail::row_all_finite(vectors, i);
        if (is_new(i)) pending_.insert(pending_.end(), vectors.row(i).data(), vectors.row(i).data() + dim_);
      }
      return;
    }
    is_new.setConstant(false);
    if (pending_.empty()) {  // no finite seed vector: the first finite mutant is the first reference
      for (Index i = 0; i < vectors.rows(); ++i)
        if (detail::row_all_finite(vectors, i)) {
          pending_.insert(pending_.end(), vectors.row(i).data(), vectors.row(i).data() + dim_);
          is_new(i) = true;
          break;
        }
      return;
    }
    calibrate(vectors);
    if (inner_) inner_->observe(vectors, is_new);  // the calibration batch: not part of a window
  }
  /// Vectors remembered.
  Index size() const {
    return inner_ ? inner_->size() : static_cast<Index>(pending_.size()) / std::max<Index>(dim_, 1);
  }
  /// The L2 novelty radius chosen (0 until calibrated).
  float radius() const { return calibration_.radius; }
  /// True once the radius is chosen.
  bool calibrated() const { return inner_.has_value(); }
  /// What was chosen, from what.
  const Calibration& calibration() const { return calibration_; }
  /// The target acceptance rate.
  double target_rate() const { return target_; }
  /// The options.
  const CalibrationOptions& options() const { return options_; }

 private:
  static CalibrationOptions options_for(double target_rate) {
    CalibrationOptions o;
    o.target_rate = target_rate;
    return o;
  }
  // After the radius is chosen: counts the window's new rows and grows the radius when too
  // many were new. Only finite rows count (a NaN row is never new whatever the radius).
  void adapt(const Mask& is_new) {
    if (!options_.adapt) return;
    for (Index i = 0; i < is_new.rows(); ++i) {
      ++seen_;
      new_ += is_new(i) ? 1 : 0;
      if (seen_ < options_.window) continue;
      const double rate = static_cast<double>(new_) / static_cast<double>(seen_);
      calibration_.window_rate = rate;
      seen_ = new_ = 0;
      high_ = rate > options_.max_rate ? high_ + 1 : 0;
      if (high_ < options_.patience) continue;
      const double factor = std::min(2.0, std::sqrt(rate / options_.max_rate));
      const double hi = static_cast<double>(calibration_.initial_radius) * 1000.0;
      const float radius = static_cast<float>(std::min(hi, static_cast<double>(calibration_.radius) * factor));
      if (!(radius > calibration_.radius) || !detail::is_finite(radius)) continue;
      calibration_.radius = radius;
      ++calibration_.adjustments;
      inner_->set_radius(radius);
    }
  }
  void calibrate(const Eigen::Ref<const RowMatrix>& vectors) {
    const Index stored = static_cast<Index>(pending_.size()) / dim_;
    const Eigen::Map<const RowMatrix> seeds(pending_.data(), stored, dim_);
    float median = 0;
    Index samples = 0;
    const float radius = calibrate_radius(seeds, vectors, target_, &median, &samples);
    if (!(radius > 0)) return;  // every mutant on a seed: wait for the next batch
    calibration_.samples = samples;
    calibration_.median_distance = median;
    calibration_.radius = radius;
    calibration_.initial_radius = radius;
    inner_.emplace(radius);
    inner_->reset(dim_);
    Mask scratch;
    inner_->observe(seeds, scratch);
    pending_.clear();
    pending_.shrink_to_fit();
  }

  CalibrationOptions options_;
  double target_;
  Index dim_ = 0;
  Index seen_ = 0, new_ = 0;  // mutants observed / found new in the current adaptation window
  Index high_ = 0;            // consecutive windows above max_rate
  bool seeds_done_ = false;
  std::vector<float> pending_;  // seed vectors, row after row, until calibrated
  std::optional<AutoCoverage> inner_;
  Calibration calibration_;
};

}  // namespace nnfuzz
