// SPDX-License-Identifier: MIT
// nnfuzz: CalibratedCoverage — the novelty radius chosen from the model's own distances.
#pragma once

#include "auto.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace nnfuzz {

/// What CalibratedCoverage chose, once it has chosen.
struct Calibration {
  float radius = 0;           ///< the L2 novelty radius chosen (0: not calibrated yet)
  double target_rate = 0;     ///< the acceptance rate it aimed at for the first mutants
  Index samples = 0;          ///< first mutants whose nearest-seed distances it looked at
  float median_distance = 0;  ///< their median nearest-seed distance
};

/// Coverage policy that needs no radius: the default of Fuzzer. A fixed radius on the wrong scale
/// silently turns fuzzing into random search (radius too large: nothing is ever new) or into a
/// random walk (too small: everything is); the right scale depends on the model's coverage
/// vectors, which a user cannot guess. So:
///  1. the seeds are all kept (every finite seed vector is new);
///  2. on the first batch of mutants after the seeds (the Fuzzer tells it via seeds_done()), it
///     measures each mutant's exact L2 distance to its nearest seed vector and takes as radius the
///     (1 - target_rate) quantile of those distances, so that about `target_rate` of the first
///     mutants would be new;
///  3. from then on it is an AutoCoverage with that radius (the seeds inserted first).
/// If every first mutant lies exactly on a seed (a constant coverage), it waits for a batch with
/// a positive distance; until then nothing is new. The choice is reported by calibration(),
/// threshold() and FuzzStats::coverage_radius (ProgressPrinter prints it). resume() recalibrates
/// against the whole saved corpus. Decisions are deterministic: one seed, one run.
class CalibratedCoverage {
 public:
  /// `target_rate` in (0, 1): the share of the first mutants that should be new.
  explicit CalibratedCoverage(double target_rate = 0.1) : target_(target_rate) {
    if (!detail::is_finite(target_rate) || !(target_rate > 0 && target_rate < 1))
      detail::fail("CalibratedCoverage(): option 'target_rate' must be in (0, 1), got ", target_rate);
  }
  /// Forgets every vector and the radius; `dim` is the coverage vector length.
  void reset(Index dim) {
    if (dim < 1) detail::fail("CalibratedCoverage::reset(): coverage vectors must have >= 1 element, got ", dim);
    dim_ = dim;
    pending_.clear();
    inner_.reset();
    seeds_done_ = false;
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
    if (inner_) inner_->observe(vectors, is_new);
  }
  /// Vectors remembered.
  Index size() const {
    return inner_ ? inner_->size() : static_cast<Index>(pending_.size()) / std::max<Index>(dim_, 1);
  }
  /// The L2 novelty radius chosen (0 until calibrated).
  float threshold() const { return calibration_.radius; }
  /// True once the radius is chosen.
  bool calibrated() const { return inner_.has_value(); }
  /// What was chosen, from what.
  const Calibration& calibration() const { return calibration_; }
  /// The target acceptance rate of the first mutants.
  double target_rate() const { return target_; }

 private:
  void calibrate(const Eigen::Ref<const RowMatrix>& vectors) {
    const Index stored = static_cast<Index>(pending_.size()) / dim_;
    const Eigen::Map<const RowMatrix> seeds(pending_.data(), stored, dim_);
    distances_.clear();
    for (Index i = 0; i < vectors.rows(); ++i) {
      if (!detail::row_all_finite(vectors, i)) continue;
      const float d2 = (seeds.rowwise() - vectors.row(i)).rowwise().squaredNorm().minCoeff();
      distances_.push_back(std::sqrt(d2));
    }
    std::vector<float> positive;
    for (float d : distances_)
      if (d > 0) positive.push_back(d);
    if (positive.empty()) return;  // every mutant on a seed: wait for the next batch
    const auto n = distances_.size();
    auto at = [&](double q) {
      const auto k =
          std::min<std::size_t>(n - 1, static_cast<std::size_t>(std::floor(q * static_cast<double>(n - 1) + 0.5)));
      std::nth_element(distances_.begin(), distances_.begin() + static_cast<std::ptrdiff_t>(k), distances_.end());
      return distances_[k];
    };
    calibration_.samples = static_cast<Index>(n);
    calibration_.median_distance = at(0.5);
    float radius = at(1.0 - target_);
    if (!(radius > 0)) radius = *std::min_element(positive.begin(), positive.end());
    // Just above the quantile, so that the quantile's own mutant is not new ("new" is distance >= radius).
    radius = std::nextafter(radius, std::numeric_limits<float>::infinity());
    calibration_.radius = radius;
    inner_.emplace(radius);
    inner_->reset(dim_);
    Mask scratch;
    inner_->observe(seeds, scratch);
    pending_.clear();
    pending_.shrink_to_fit();
  }

  double target_;
  Index dim_ = 0;
  bool seeds_done_ = false;
  std::vector<float> pending_;  // seed vectors, row after row, until calibrated
  std::vector<float> distances_;
  std::optional<AutoCoverage> inner_;
  Calibration calibration_;
};

}  // namespace nnfuzz
