// SPDX-License-Identifier: MIT
// nnfuzz: CalibratedCoverage — the novelty radius chosen from the model's own distances.
#pragma once

#include "auto.hpp"
#include "../detail/state_bytes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
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
/// radius() and FuzzStats::coverage_radius (ProgressPrinter prints each change). What it learned
/// (the Calibration and the adaptation window's counters) is kept with a saved corpus
/// (save_state(), Corpus::coverage_state(), corpus.bin) and taken up by Fuzzer::resume()
/// (restore_state()): a resumed campaign goes on with the radius it had, not one recalibrated
/// against the whole saved corpus (which, for a campaign stopped early, came out 20x smaller and
/// found nothing). A corpus without a state (corpus.bin versions 1 and 2, or a state cleared with
/// `corpus.set_coverage_state({})`) is recalibrated as before: the saved vectors are the
/// references, the first mutants of the session choose the radius. Decisions are
/// deterministic: one seed, one run.
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
    replaying_ = false;
    seen_ = new_ = high_ = 0;
    calibration_ = Calibration{};
    calibration_.target_rate = target_;
  }
  /// Called by the Fuzzer once the seeds are in: the next batch calibrates the radius. After
  /// restore_state(), it ends the replay of the saved corpus (whose vectors did not count in the
  /// adaptation windows).
  void seeds_done() {
    seeds_done_ = true;
    replaying_ = false;
  }
  /// What it has learned, as bytes (kStateBytes, little-endian): "NNFZCALB", u32 version 1,
  /// u64 coverage width, f32 radius, f32 initial_radius, f64 target_rate, i64 samples, f32
  /// median_distance, i64 adjustments, f64 window_rate, then the adaptation window's counters
  /// (i64 mutants seen, i64 of them new, i64 consecutive windows above max_rate). Not the
  /// vectors: resume() observes the saved corpus' again. The Fuzzer keeps it with its corpus
  /// (Corpus::coverage_state()) before every on_corpus() callback and at the end of a run.
  std::vector<std::uint8_t> save_state() const {
    detail::StateWriter w;
    w.bytes.reserve(kStateBytes);
    w.magic(kStateMagic);
    w.u32(1);
    w.u64(static_cast<std::uint64_t>(dim_));
    w.f32(calibration_.radius);
    w.f32(calibration_.initial_radius);
    w.f64(calibration_.target_rate);
    w.i64(calibration_.samples);
    w.f32(calibration_.median_distance);
    w.i64(calibration_.adjustments);
    w.f64(calibration_.window_rate);
    w.i64(seen_);
    w.i64(new_);
    w.i64(high_);
    return std::move(w.bytes);
  }
  /// Takes up a save_state() of a policy with the same coverage width, right after reset() and
  /// before anything is observed (Fuzzer::resume() calls it). A calibrated state sets the radius
  /// (the saved one, whatever this policy's target_rate) and the adaptation counters; the vectors
  /// observed next, until seeds_done(), rebuild the coverage without counting in the adaptation
  /// windows (they are the saved corpus, not new mutants). An uncalibrated state (saved before
  /// the first mutants) leaves it as after reset(): the next vectors are the references the
  /// first mutants calibrate against. Throws std::invalid_argument, naming the value, for a
  /// state that is not one (wrong size or magic, another version), of another width, or whose
  /// fields are impossible (a radius that is not finite and >= 0, a count below 0, ...).
  void restore_state(const std::vector<std::uint8_t>& state) {
    const char* fn = "CalibratedCoverage::restore_state()";
    if (state.size() != kStateBytes)
      detail::fail(fn, ": the state has ", state.size(), " bytes, a CalibratedCoverage state ", kStateBytes);
    detail::StateReader r{state};
    if (!r.magic(kStateMagic))
      detail::fail(fn, ": the state does not start with '", kStateMagic, "' (", magic_of(state), ")");
    const std::uint32_t version = r.u32();
    if (version != 1) detail::fail(fn, ": the state has version ", version, " (reads 1)");
    const std::uint64_t dim = r.u64();
    if (dim != static_cast<std::uint64_t>(dim_))
      detail::fail(fn, ": the state is for coverage vectors of ", dim, " elements, reset() said ", dim_);
    if (size() > 0)
      detail::fail(fn, ": ", size(), " vectors were observed since reset() (restore the state right after it)");
    Calibration c;
    c.radius = r.f32();
    c.initial_radius = r.f32();
    c.target_rate = r.f64();
    c.samples = static_cast<Index>(r.i64());
    c.median_distance = r.f32();
    c.adjustments = static_cast<Index>(r.i64());
    c.window_rate = r.f64();
    const auto seen = static_cast<Index>(r.i64()), fresh = static_cast<Index>(r.i64()),
               high = static_cast<Index>(r.i64());
    if (!detail::is_finite(c.radius) || !(c.radius >= 0))
      detail::fail(fn, ": the state has radius ", c.radius, " (must be finite and >= 0)");
    if (!detail::is_finite(c.initial_radius) || !(c.initial_radius >= 0) || c.initial_radius > c.radius ||
        (c.initial_radius > 0) != (c.radius > 0))
      detail::fail(fn, ": the state has initial_radius ", c.initial_radius, " for radius ", c.radius,
                   " (must be finite, in (0, radius], or 0 with radius 0)");
    if (!detail::is_finite(c.target_rate) || !(c.target_rate > 0 && c.target_rate < 1))
      detail::fail(fn, ": the state has target_rate ", c.target_rate, " (must be in (0, 1))");
    if (!detail::is_finite(c.median_distance) || !(c.median_distance >= 0))
      detail::fail(fn, ": the state has median_distance ", c.median_distance, " (must be finite and >= 0)");
    if (!detail::is_finite(c.window_rate) || !(c.window_rate >= 0 && c.window_rate <= 1))
      detail::fail(fn, ": the state has window_rate ", c.window_rate, " (must be in [0, 1])");
    if (c.samples < 0 || c.adjustments < 0 || seen < 0 || fresh < 0 || fresh > seen || high < 0)
      detail::fail(fn, ": the state has impossible counts (samples ", c.samples, ", adjustments ", c.adjustments,
                   ", window ", fresh, " new of ", seen, ", ", high, " high windows)");
    if (!(c.radius > 0)) {  // saved before the first mutants: calibrate as after reset()
      reset(dim_);
      return;
    }
    calibration_ = c;
    seen_ = seen;
    new_ = fresh;
    high_ = high;
    pending_.clear();
    pending_.shrink_to_fit();
    inner_.emplace(c.radius);
    inner_->reset(dim_);
    replaying_ = true;
  }
  /// Sets is_new(i) for each row and remembers the new ones.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    if (vectors.cols() != dim_)
      detail::fail("CalibratedCoverage::observe(): vectors have ", vectors.cols(), " elements, reset() said ", dim_);
    if (inner_) {
      inner_->observe(vectors, is_new);
      if (!replaying_) adapt(is_new);  // a restored state's saved corpus is not a window's mutants
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
  /// Size of a save_state() blob, in bytes.
  static constexpr std::size_t kStateBytes = 88;
  /// The first 8 bytes of a save_state() blob.
  static constexpr char kStateMagic[9] = "NNFZCALB";

 private:
  // The first bytes of a state that is not ours, printable, for the error.
  static std::string magic_of(const std::vector<std::uint8_t>& state) {
    std::string m = "it starts with '";
    for (std::size_t i = 0; i < std::min<std::size_t>(8, state.size()); ++i)
      m += state[i] >= 32 && state[i] < 127 ? static_cast<char>(state[i]) : '?';
    return m + "'";
  }
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
  bool replaying_ = false;      // restore_state() until seeds_done(): the saved corpus is observed
  std::vector<float> pending_;  // seed vectors, row after row, until calibrated
  std::optional<AutoCoverage> inner_;
  Calibration calibration_;
};

}  // namespace nnfuzz
