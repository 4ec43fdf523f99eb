// SPDX-License-Identifier: MIT
// nnfuzz: NLCoverage — NLC, the layer-wise, distribution-aware criterion of Yuan et al. (ICSE
// 2023): per layer, the running covariance of the activations; coverage = Σ |covariance|.
#pragma once

#include "neuron.hpp"

#include <cmath>
#include <vector>

namespace nnfuzz {

/// NLC, NeuraL Coverage (Yuan et al., "Revisiting Neuron Coverage for DNN Testing: A Layer-Wise
/// and Distribution-Aware Criterion", ICSE 2023), as in the authors' implementation:
/// - per layer l, the mean μ_l and the population covariance C_l (divided by n) of the
///   activations of the inputs accepted so far, updated one input at a time (the exact
///   Welford/Chan update: with n → n + 1 and δ = x − μ, C ← n/(n+1)·C + n/(n+1)²·δδᵀ,
///   μ ← μ + δ/(n+1));
/// - the coverage value is Σ_l Σ_ij |C_l(i, j)|;
/// - an input's gain in layer l is the value of l's updated covariance minus its current one;
///   the input is new when the sum of its positive gains exceeds `tolerance` × the current
///   value (relative; 0 is the reference's "any increase"). Only a new input updates the
///   statistics, and only in the layers where its gain is positive (as the reference does). The
///   first finite input is always new (it sets the means).
/// Rows with a NaN or an infinity are never new and change nothing.
///
/// Cost: O(Σ_l width_l²) per input (half of each covariance, twice for a new input), and
/// 8·Σ width_l² bytes (doubled once profile() was used). A 200-100 MLP: 25,000 products per
/// input. Layers wider than `max_layer_width` (default 2048: 32 MiB and ~2 M products per input)
/// are refused at reset(); raise it knowingly, or cover a subset of the neurons.
class NLCoverage {
 public:
  /// `layers`: widths of the layers in the coverage vector (empty: one layer); `tolerance` >= 0:
  /// the relative increase of the coverage value an input must bring to be new (default 1e-6,
  /// above rounding noise); `max_layer_width`: the widest layer accepted.
  explicit NLCoverage(LayerWidths layers = {}, double tolerance = 1e-6, Index max_layer_width = 2048)
      : split_("NLCoverage", std::move(layers)), tolerance_(tolerance), max_width_(max_layer_width) {
    if (!detail::is_finite(tolerance) || !(tolerance >= 0))
      detail::fail("NLCoverage(): option 'tolerance' must be finite and >= 0, got ", tolerance);
    if (max_layer_width < 1) detail::fail("NLCoverage(): option 'max_layer_width' must be >= 1, got ", max_layer_width);
  }

  /// Forgets every observed input; `dim` is the coverage vector length (checked against the
  /// layers and max_layer_width). Statistics from profile() are kept: they are restored.
  void reset(Index dim) {
    configure(dim);
    stats_ = profiled_.empty() ? std::vector<Stats>(static_cast<std::size_t>(split_.count())) : profiled_;
    for (Index l = 0; l < split_.count(); ++l) {
      Stats& s = stats_[static_cast<std::size_t>(l)];
      if (s.mean.size() == 0) {
        s.mean.setZero(split_.width(l));
        s.cov.setZero(split_.width(l), split_.width(l));
      }
    }
    delta_.setZero(dim);
    gain_.assign(static_cast<std::size_t>(split_.count()), 0.0);
    next_.assign(static_cast<std::size_t>(split_.count()), 0.0);
    accepted_ = 0;
  }

  /// Adds every finite row of `activations` to the statistics, new or not (the reference's
  /// build from training data); the result survives reset(). Call it before the run: called
  /// after inputs were observed, the saved statistics include them. Throws if no row is finite.
  void profile(const Eigen::Ref<const RowMatrix>& activations) {
    Index finite = 0;
    for (Index i = 0; i < activations.rows(); ++i) finite += detail::row_all_finite(activations, i) ? 1 : 0;
    if (finite == 0)
      detail::fail("NLCoverage::profile(): no finite row to profile (", activations.rows(),
                   " rows given; rows with a NaN or an infinity are skipped)");
    if (stats_.empty() || dim_ != activations.cols()) {
      if (!profiled_.empty() && profiled_dim_ != activations.cols())
        detail::fail("NLCoverage::profile(): activations have ", activations.cols(), " columns, earlier ones ",
                     profiled_dim_);
      reset(activations.cols());
    }
    for (Index i = 0; i < activations.rows(); ++i) {
      if (!detail::row_all_finite(activations, i)) continue;
      const float* x = activations.row(i).data();
      for (Index l = 0; l < split_.count(); ++l) {
        gains(l, x);
        commit(l);
      }
    }
    profiled_ = stats_;
    profiled_dim_ = dim_;
  }

  /// Sets is_new(i) for each row: true when adding the row raises the coverage value by more
  /// than `tolerance` × the value (see the class comment); rows are taken in order, so an
  /// earlier row of the batch counts.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    if (vectors.cols() != dim_)
      detail::fail("NLCoverage::observe(): vectors have ", vectors.cols(), " elements, reset() said ", dim_);
    is_new.resize(vectors.rows());
    for (Index i = 0; i < vectors.rows(); ++i) {
      is_new(i) = false;
      if (!detail::row_all_finite(vectors, i)) continue;
      const float* x = vectors.row(i).data();
      double total_gain = 0;
      bool first = false;
      for (Index l = 0; l < split_.count(); ++l) {
        first = first || stats_[static_cast<std::size_t>(l)].count == 0;
        const double g = gains(l, x);
        if (g > 0) total_gain += g;
      }
      if (!(first || total_gain > tolerance_ * value())) continue;
      is_new(i) = true;
      ++accepted_;
      for (Index l = 0; l < split_.count(); ++l)
        if (gain_[static_cast<std::size_t>(l)] > 0 || stats_[static_cast<std::size_t>(l)].count == 0) commit(l);
    }
  }

  /// Coverage vectors accepted as new since reset().
  Index size() const { return accepted_; }
  /// The coverage value: Σ over layers of Σ_ij |C_l(i, j)|.
  double value() const {
    double v = 0;
    for (const Stats& s : stats_) v += s.value;
    return v;
  }
  /// Σ_ij |C_l(i, j)| of layer l.
  double layer_value(Index l) const { return stats_.at(static_cast<std::size_t>(l)).value; }
  /// Inputs in layer l's statistics.
  double count(Index l) const { return stats_.at(static_cast<std::size_t>(l)).count; }
  /// Layer l's mean activation.
  const Eigen::VectorXd& mean(Index l) const { return stats_.at(static_cast<std::size_t>(l)).mean; }
  /// Layer l's covariance (population: divided by count(l)), as a full symmetric matrix (a copy).
  Eigen::MatrixXd covariance(Index l) const {
    const Eigen::MatrixXd& c = stats_.at(static_cast<std::size_t>(l)).cov;
    return c.selfadjointView<Eigen::Upper>();
  }
  /// The layer widths in use (after reset()).
  const LayerWidths& layers() const { return split_.widths(); }
  /// The relative tolerance.
  double tolerance() const { return tolerance_; }
  /// Coverage vector length given to reset().
  Index dim() const { return dim_; }

 private:
  struct Stats {
    Eigen::VectorXd mean;
    Eigen::MatrixXd cov;  // only the upper triangle is kept up to date
    double count = 0;
    double value = 0;  // Σ_ij |cov(i, j)| over the full symmetric matrix
  };

  void configure(Index dim) {
    const char* who = "NLCoverage::reset()";
    split_.apply("NLCoverage", dim);
    for (Index l = 0; l < split_.count(); ++l)
      if (split_.width(l) > max_width_)
        detail::fail(who, ": layer ", l, " has ", split_.width(l), " neurons, above option 'max_layer_width' (",
                     max_width_, "): NLC costs O(width^2) per input and 8*width^2 bytes per layer");
    if (!profiled_.empty() && profiled_dim_ != dim)
      detail::fail(who, ": profile() saw ", profiled_dim_, " columns, the coverage vectors have ", dim, " elements");
    dim_ = dim;
  }

  // Stores δ = x − μ for layer l and the value of its covariance updated with x; returns the gain.
  double gains(Index l, const float* x) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Stats& s = stats_[ls];
    const Index o = split_.offset(l), w = split_.width(l);
    for (Index i = 0; i < w; ++i) delta_(o + i) = static_cast<double>(x[o + i]) - s.mean(i);
    const double n = s.count, a = n / (n + 1), b = n / ((n + 1) * (n + 1));
    double v = 0;
    for (Index j = 0; j < w; ++j) {  // column-major: walk each column's upper part
      const double bj = b * delta_(o + j);
      const double* c = s.cov.data() + j * w;
      double off = 0;
      for (Index i = 0; i < j; ++i) off += std::abs(a * c[i] + bj * delta_(o + i));
      v += 2 * off + std::abs(a * c[j] + bj * delta_(o + j));
    }
    next_[ls] = v;
    gain_[ls] = v - s.value;
    return gain_[ls];
  }
  // Applies the update prepared by gains(l, x).
  void commit(Index l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    Stats& s = stats_[ls];
    const Index o = split_.offset(l), w = split_.width(l);
    const double n = s.count, a = n / (n + 1), b = n / ((n + 1) * (n + 1));
    for (Index j = 0; j < w; ++j) {
      const double bj = b * delta_(o + j);
      double* c = s.cov.data() + j * w;
      for (Index i = 0; i <= j; ++i) c[i] = a * c[i] + bj * delta_(o + i);
    }
    for (Index i = 0; i < w; ++i) s.mean(i) += delta_(o + i) / (n + 1);
    s.count = n + 1;
    s.value = next_[ls];
  }

  detail::LayerSplit split_;
  double tolerance_;
  Index max_width_;
  Index dim_ = 0;
  Index accepted_ = 0;
  std::vector<Stats> stats_;
  std::vector<Stats> profiled_;  // the statistics after the last profile(), restored by reset()
  Index profiled_dim_ = 0;
  Eigen::VectorXd delta_;
  std::vector<double> gain_, next_;
};

}  // namespace nnfuzz
