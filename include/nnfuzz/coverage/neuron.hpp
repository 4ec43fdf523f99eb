// SPDX-License-Identifier: MIT
// nnfuzz: the neuron-level coverage criteria of DeepGauge (NC, KMNC, NBC, SNAC, TKNC) as Coverage
// policies, with DeepHunter's feedback rule: an input is new when it covers an element no earlier
// input covered. See docs/criteria.md.
#pragma once

#include "../detail/config.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// Widths of the layers whose activations make up the coverage vector, in order: `{200, 100}`
/// says that columns 0–199 are layer 0 and columns 200–299 layer 1. Empty: the whole coverage
/// vector is one layer. A criterion checks at reset() that the widths add up to the coverage
/// width, which also catches a model that reports the wrong signal (see neuron_layers()).
using LayerWidths = std::vector<Index>;

/// How NeuronCoverage scales activations before comparing them with its threshold.
enum class NeuronScaling {
  /// Raw activations (DeepGauge's definition of NC).
  none,
  /// (x − min) / (max − min), min and max over the neurons of the same layer for the same input
  /// (DeepXplore's scale(), as DeepHunter does).
  layer_min_max,
};

namespace detail {

// "{200, 100}", for messages.
inline std::string widths_text(const LayerWidths& widths) {
  std::string s = "{";
  for (std::size_t l = 0; l < widths.size(); ++l) s += (l ? ", " : "") + std::to_string(widths[l]);
  return s + "}";
}

// The layer split of a coverage vector: widths given by the user, checked against the width of
// the coverage vectors at reset().
class LayerSplit {
 public:
  LayerSplit() = default;
  // `name`: the class, for messages ("KMNCoverage").
  LayerSplit(const char* name, LayerWidths widths) : given_(std::move(widths)) {
    for (std::size_t l = 0; l < given_.size(); ++l)
      if (given_[l] < 1)
        fail(name, "(): option 'layers' ", widths_text(given_), ": layer ", l, " has width ", given_[l],
             " (must be >= 1)");
  }
  // Fixes the split for coverage vectors of `dim` elements (called by name::reset()).
  void apply(const char* name, Index dim) {
    if (dim < 1) fail(name, "::reset(): coverage vectors must have >= 1 element, got ", dim);
    widths_ = given_.empty() ? LayerWidths{dim} : given_;
    const Index sum = std::accumulate(widths_.begin(), widths_.end(), Index{0});
    if (sum != dim)
      fail(name, "::reset(): option 'layers' ", widths_text(given_), " adds up to ", sum,
           " neurons, but the coverage vectors have ", dim,
           " elements (did the model report the neurons? see neuron_layers())");
    offsets_.assign(widths_.size(), 0);
    for (std::size_t l = 1; l < widths_.size(); ++l) offsets_[l] = offsets_[l - 1] + widths_[l - 1];
  }
  Index count() const { return static_cast<Index>(widths_.size()); }
  Index offset(Index l) const { return offsets_[static_cast<std::size_t>(l)]; }
  Index width(Index l) const { return widths_[static_cast<std::size_t>(l)]; }
  Index max_width() const { return widths_.empty() ? 0 : *std::max_element(widths_.begin(), widths_.end()); }
  const LayerWidths& given() const { return given_; }
  const LayerWidths& widths() const { return widths_; }

 private:
  LayerWidths given_;
  LayerWidths widths_;
  std::vector<Index> offsets_;
};

// What every element criterion shares: a set of coverable elements (one byte each, sized at
// reset), "new" = a finite row that covers an element not covered before (by earlier batches or
// earlier rows of the same batch), and the counts. `Derived` provides `kName` and
// `visit(const float* row, Mark&& mark)`, which calls mark(element) for each element the row covers.
template <typename Derived>
class ElementCoverage {
 public:
  /// Sets is_new(i) for each row: true when the row is finite and covers at least one element
  /// that no earlier row covered. Rows with a NaN or an infinity are never new and cover nothing.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    check_width(vectors);
    mark_rows(vectors, &is_new);
  }
  /// Coverage vectors accepted as new since reset() (the corpus elements this policy added).
  Index size() const { return accepted_; }
  /// Elements covered (neurons, sections or boundaries, per criterion).
  Index covered() const { return covered_count_; }
  /// Elements that can be covered in all.
  Index total() const { return static_cast<Index>(covered_.size()); }
  /// covered() / total(): the criterion's value, in [0, 1] (0 before reset()).
  double ratio() const { return covered_.empty() ? 0.0 : static_cast<double>(covered_count_) / double(total()); }
  /// Whether element `e` (in [0, total())) is covered.
  bool is_covered(Index e) const {
    NNFUZZ_ASSERT(e >= 0 && e < total());
    return covered_[static_cast<std::size_t>(e)] != 0;
  }
  /// The layer widths in use (after reset(): the given ones, or one layer of the whole width).
  const LayerWidths& layers() const { return split_.widths(); }
  /// Coverage vector length given to reset().
  Index dim() const { return dim_; }

 protected:
  explicit ElementCoverage(LayerWidths layers) : split_(Derived::kName, std::move(layers)) {}

  // Forgets everything; `elements_per_neuron` sizes the element set.
  void start(Index dim, Index elements_per_neuron) {
    split_.apply(Derived::kName, dim);
    dim_ = dim;
    covered_.assign(static_cast<std::size_t>(dim * elements_per_neuron), 0);
    covered_count_ = 0;
    accepted_ = 0;
  }
  void check_width(const Eigen::Ref<const RowMatrix>& vectors) const {
    if (vectors.cols() != dim_)
      fail(Derived::kName, "::observe(): vectors have ", vectors.cols(), " elements, reset() said ", dim_);
  }
  // Marks what each finite row covers; with `is_new`, records which rows covered something new
  // and counts them as accepted.
  void mark_rows(const Eigen::Ref<const RowMatrix>& vectors, Mask* is_new) {
    if (is_new) is_new->resize(vectors.rows());
    Derived& self = static_cast<Derived&>(*this);
    for (Index i = 0; i < vectors.rows(); ++i) {
      bool fresh = false;
      if (row_all_finite(vectors, i)) {
        self.visit(vectors.row(i).data(), [&](Index e) {
          std::uint8_t& c = covered_[static_cast<std::size_t>(e)];
          if (!c) {
            c = 1;
            ++covered_count_;
            fresh = true;
          }
        });
      }
      if (is_new) {
        (*is_new)(i) = fresh;
        if (fresh) ++accepted_;
      }
    }
  }

  LayerSplit split_;
  Index dim_ = 0;
  Index accepted_ = 0;

 private:
  std::vector<std::uint8_t> covered_;
  Index covered_count_ = 0;
};

// The criteria over profiled ranges [low, high] per neuron (KMNC, NBC, SNAC). Ranges come from
// profile() / set_ranges() (kept across reset()), or else from the seeds: before seeds_done()
// every finite row is kept and widens the ranges; at seeds_done() the ranges are frozen and the
// kept rows are marked (so KMNC counts the seeds' sections from the start).
template <typename Derived>
class RangeCoverage : public ElementCoverage<Derived> {
  using Base = ElementCoverage<Derived>;

 public:
  /// Forgets what was covered; `dim` is the coverage vector length. Ranges from profile() or
  /// set_ranges() are kept (their width must be `dim`); ranges taken from earlier seeds are not.
  void reset(Index dim) {
    this->start(dim, static_cast<const Derived&>(*this).elements_per_neuron());
    pending_.clear();
    seeds_done_ = false;
    if (user_ranges_) {
      if (low_.size() != dim)
        fail(Derived::kName, "::reset(): the profiled ranges have ", low_.size(),
             " neurons, the coverage vectors have ", dim, " elements");
      ready_ = true;
    } else {
      low_.setConstant(dim, std::numeric_limits<float>::infinity());
      high_.setConstant(dim, -std::numeric_limits<float>::infinity());
      ready_ = false;
    }
  }
  /// Widens the ranges [low, high] to the finite rows of `activations` (rows = inputs, columns =
  /// the coverage vector's neurons), e.g. the training set's activations, in as many calls as you
  /// like. The first call replaces ranges taken from seeds. Throws if no row is finite.
  void profile(const Eigen::Ref<const RowMatrix>& activations) {
    if (activations.cols() < 1) fail(Derived::kName, "::profile(): activations have 0 columns");
    if (user_ranges_ && activations.cols() != low_.size())
      fail(Derived::kName, "::profile(): activations have ", activations.cols(),
           " columns, the ranges profiled so far ", low_.size());
    Index finite = 0;
    for (Index i = 0; i < activations.rows(); ++i) finite += row_all_finite(activations, i) ? 1 : 0;
    if (finite == 0)
      fail(Derived::kName, "::profile(): no finite row to profile (", activations.rows(),
           " rows given; rows with a NaN or an infinity are skipped)");
    if (!user_ranges_) {
      low_.setConstant(activations.cols(), std::numeric_limits<float>::infinity());
      high_.setConstant(activations.cols(), -std::numeric_limits<float>::infinity());
    }
    widen(activations);
    user_ranges_ = true;
    if (!ready_ && this->dim_ == low_.size()) finish_profile();  // seeds already kept are marked now
  }
  /// Sets the ranges directly (e.g. saved from an earlier profile); low <= high, finite.
  void set_ranges(const Eigen::Ref<const RowVector>& low, const Eigen::Ref<const RowVector>& high) {
    if (low.size() < 1 || low.size() != high.size())
      fail(Derived::kName, "::set_ranges(): low has ", low.size(), " neurons and high ", high.size(),
           " (need the same number, >= 1)");
    for (Index j = 0; j < low.size(); ++j)
      if (!is_finite(low(j)) || !is_finite(high(j)) || !(low(j) <= high(j)))
        fail(Derived::kName, "::set_ranges(): neuron ", j, " has range [", low(j), ", ", high(j),
             "] (need finite low <= high)");
    low_ = low;
    high_ = high;
    user_ranges_ = true;
    if (!ready_ && this->dim_ == low_.size()) finish_profile();  // seeds already kept are marked now
  }
  /// Called by the Fuzzer once the seeds are in: ranges not profiled are frozen from the seeds.
  /// (Outside a Fuzzer, without profile(), call it after observing the rows to profile from.)
  void seeds_done() {
    seeds_done_ = true;
    if (!ready_ && !pending_.empty()) finish_profile();
  }
  /// Sets is_new(i) for each row. While the ranges are being taken from the seeds (before
  /// seeds_done()), every finite row is new and kept; afterwards a row is new when it covers an
  /// element no earlier row covered. Rows with a NaN or an infinity are never new.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    this->check_width(vectors);
    if (ready_) {
      this->mark_rows(vectors, &is_new);
      return;
    }
    is_new.resize(vectors.rows());
    for (Index i = 0; i < vectors.rows(); ++i) {
      is_new(i) = row_all_finite(vectors, i);
      if (!is_new(i)) continue;
      ++this->accepted_;
      const float* row = vectors.row(i).data();
      pending_.insert(pending_.end(), row, row + this->dim_);
    }
    widen(vectors);
    // No finite seed: the first finite rows after seeds_done() profile the ranges instead.
    if (seeds_done_ && !pending_.empty()) finish_profile();
  }
  /// True once the ranges are known (profiled, set, or frozen from the seeds).
  bool profiled() const { return ready_; }
  /// Lower end of each neuron's range (+inf for a neuron not profiled yet).
  const RowVector& low() const { return low_; }
  /// Upper end of each neuron's range (−inf for a neuron not profiled yet).
  const RowVector& high() const { return high_; }

 protected:
  explicit RangeCoverage(LayerWidths layers) : Base(std::move(layers)) {}

  RowVector low_, high_;

 private:
  void widen(const Eigen::Ref<const RowMatrix>& rows) {
    for (Index i = 0; i < rows.rows(); ++i) {
      if (!row_all_finite(rows, i)) continue;
      low_ = low_.cwiseMin(rows.row(i));
      high_ = high_.cwiseMax(rows.row(i));
    }
  }
  void finish_profile() {
    ready_ = true;
    const Index n = static_cast<Index>(pending_.size()) / this->dim_;
    this->mark_rows(Eigen::Map<const RowMatrix>(pending_.data(), n, this->dim_), nullptr);
    pending_.clear();
    pending_.shrink_to_fit();
  }

  std::vector<float> pending_;  // the seeds' rows, until the ranges are frozen
  bool user_ranges_ = false;
  bool ready_ = false;
  bool seeds_done_ = false;
};

}  // namespace detail

/// NC, neuron coverage (DeepXplore, Pei et al. 2017): a neuron is covered when some input's
/// activation exceeds `threshold` (strictly). With NeuronScaling::layer_min_max (the default, as
/// DeepXplore and DeepHunter do) each input's activations are first scaled per layer to [0, 1],
/// (x − min) / (max − min) over that layer's neurons for that input (a layer whose neurons are
/// all equal scales to 0), so the threshold is in [0, 1) and does not depend on the layer's
/// scale; with NeuronScaling::none the raw activation is compared. Scaling is per input, never
/// over the batch, so a decision never depends on which batch a row is in. total() = neurons.
class NeuronCoverage : public detail::ElementCoverage<NeuronCoverage> {
 public:
  /// `layers`: widths of the layers in the coverage vector (empty: one layer); `threshold`: in
  /// [0, 1) when scaled, any finite value otherwise. Default 0.75: DeepHunter's.
  explicit NeuronCoverage(LayerWidths layers = {}, float threshold = 0.75f,
                          NeuronScaling scaling = NeuronScaling::layer_min_max)
      : ElementCoverage(std::move(layers)), threshold_(threshold), scaling_(scaling) {
    if (!detail::is_finite(threshold)) detail::fail(kName, "(): option 'threshold' must be finite, got ", threshold);
    if (scaling == NeuronScaling::layer_min_max && !(threshold >= 0 && threshold < 1))
      detail::fail(kName, "(): option 'threshold' must be in [0, 1) with scaled activations, got ", threshold);
  }
  /// Forgets what was covered; `dim` is the coverage vector length (checked against the layers).
  void reset(Index dim) { start(dim, 1); }
  /// The activation threshold (not named radius(): the Fuzzer would report it as the novelty radius).
  float activation_threshold() const { return threshold_; }
  /// The scaling.
  NeuronScaling scaling() const { return scaling_; }

 private:
  friend class detail::ElementCoverage<NeuronCoverage>;
  static constexpr const char* kName = "NeuronCoverage";

  template <typename Mark>
  void visit(const float* row, Mark&& mark) const {
    for (Index l = 0; l < split_.count(); ++l) {
      const Index o = split_.offset(l), w = split_.width(l);
      if (scaling_ == NeuronScaling::none) {
        for (Index j = 0; j < w; ++j)
          if (row[o + j] > threshold_) mark(o + j);
        continue;
      }
      const auto seg = std::minmax_element(row + o, row + o + w);
      const float lo = *seg.first, range = *seg.second - *seg.first;
      if (!(range > 0)) continue;  // all equal: scaled to 0, never above a threshold >= 0
      for (Index j = 0; j < w; ++j)
        if ((row[o + j] - lo) / range > threshold_) mark(o + j);
    }
  }

  float threshold_;
  NeuronScaling scaling_;
};

/// KMNC, k-multisection neuron coverage (DeepGauge, Ma et al. 2018): each neuron's profiled range
/// [low, high] is cut into k sections of equal width; section s is [low + s·w, low + (s+1)·w),
/// the last one closed at high. An activation inside the range covers its section; one outside
/// covers none (NBCoverage counts those). total() = k × neurons; element j·k + s is section s
/// of neuron j. A neuron whose range is a single point (low == high, e.g. a ReLU that was 0 on
/// all the profiling data) has k sections that can never be covered. Ranges: profile() or
/// set_ranges(), else the seeds' (see docs/criteria.md). One byte per element.
class KMNCoverage : public detail::RangeCoverage<KMNCoverage> {
 public:
  /// `layers`: widths of the layers (only checked: the criterion is per neuron); `k` >= 1
  /// sections per neuron (default 100, as the NLC study; DeepGauge used 1,000 on MNIST).
  explicit KMNCoverage(LayerWidths layers = {}, Index k = 100) : RangeCoverage(std::move(layers)), k_(k) {
    if (k < 1) detail::fail(kName, "(): option 'k' (sections per neuron) must be >= 1, got ", k);
  }
  /// Sections per neuron.
  Index k() const { return k_; }

 private:
  friend class detail::ElementCoverage<KMNCoverage>;
  friend class detail::RangeCoverage<KMNCoverage>;
  static constexpr const char* kName = "KMNCoverage";
  Index elements_per_neuron() const { return k_; }

  template <typename Mark>
  void visit(const float* row, Mark&& mark) const {
    for (Index j = 0; j < dim_; ++j) {
      const double x = row[j], lo = low_(j), hi = high_(j);
      if (!(hi > lo) || x < lo || x > hi) continue;
      // In double, so that a value just under high never rounds up to section k.
      const Index s = std::min<Index>(k_ - 1, static_cast<Index>((x - lo) / (hi - lo) * static_cast<double>(k_)));
      mark(j * k_ + s);
    }
  }

  Index k_;
};

/// NBC, neuron boundary coverage (DeepGauge): each neuron has two corners, below its
/// profiled low (element 2j) and above its profiled high (element 2j + 1); an activation
/// strictly outside the range covers that corner. total() = 2 × neurons. Ranges as KMNCoverage.
/// With ranges from the seeds, no seed covers a corner: NBC starts at 0.
class NBCoverage : public detail::RangeCoverage<NBCoverage> {
 public:
  /// `layers`: widths of the layers (only checked: the criterion is per neuron).
  explicit NBCoverage(LayerWidths layers = {}) : RangeCoverage(std::move(layers)) {}

 private:
  friend class detail::ElementCoverage<NBCoverage>;
  friend class detail::RangeCoverage<NBCoverage>;
  static constexpr const char* kName = "NBCoverage";
  Index elements_per_neuron() const { return 2; }

  template <typename Mark>
  void visit(const float* row, Mark&& mark) const {
    for (Index j = 0; j < dim_; ++j) {
      if (row[j] < low_(j)) mark(2 * j);
      if (row[j] > high_(j)) mark(2 * j + 1);
    }
  }
};

/// SNAC, strong neuron activation coverage (DeepGauge): a neuron is covered when an
/// activation exceeds its profiled high. total() = neurons. Ranges as KMNCoverage.
class SNACoverage : public detail::RangeCoverage<SNACoverage> {
 public:
  /// `layers`: widths of the layers (only checked: the criterion is per neuron).
  explicit SNACoverage(LayerWidths layers = {}) : RangeCoverage(std::move(layers)) {}

 private:
  friend class detail::ElementCoverage<SNACoverage>;
  friend class detail::RangeCoverage<SNACoverage>;
  static constexpr const char* kName = "SNACoverage";
  Index elements_per_neuron() const { return 1; }

  template <typename Mark>
  void visit(const float* row, Mark&& mark) const {
    for (Index j = 0; j < dim_; ++j)
      if (row[j] > high_(j)) mark(j);
  }
};

/// TKNC, top-k neuron coverage (DeepGauge), DeepHunter's way: for each input and each
/// layer, the k neurons with the largest activations (ties: the lower index first; k is capped
/// at the layer's width) are covered; an input is new when it adds a neuron to the union.
/// total() = neurons. Needs the layers: with none, the whole vector is one layer.
class TKNCoverage : public detail::ElementCoverage<TKNCoverage> {
 public:
  /// `layers`: widths of the layers; `k` >= 1 neurons per layer (default 10, as the NLC study).
  explicit TKNCoverage(LayerWidths layers = {}, Index k = 10) : ElementCoverage(std::move(layers)), k_(k) {
    if (k < 1) detail::fail(kName, "(): option 'k' (top neurons per layer) must be >= 1, got ", k);
  }
  /// Forgets what was covered; `dim` is the coverage vector length (checked against the layers).
  void reset(Index dim) {
    start(dim, 1);
    order_.assign(static_cast<std::size_t>(split_.max_width()), 0);
  }
  /// Neurons per layer.
  Index k() const { return k_; }

 private:
  friend class detail::ElementCoverage<TKNCoverage>;
  static constexpr const char* kName = "TKNCoverage";

  template <typename Mark>
  void visit(const float* row, Mark&& mark) {
    for (Index l = 0; l < split_.count(); ++l) {
      const Index o = split_.offset(l), w = split_.width(l), kk = std::min(k_, w);
      const auto first = order_.begin(), last = order_.begin() + w;
      std::iota(first, last, o);
      if (kk < w)  // a strict total order, so that the choice among ties is deterministic
        std::nth_element(first, first + (kk - 1), last,
                         [row](Index a, Index b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      for (Index t = 0; t < kk; ++t) mark(order_[static_cast<std::size_t>(t)]);
    }
  }

  Index k_;
  std::vector<Index> order_;  // scratch, sized at reset()
};

}  // namespace nnfuzz
