// SPDX-License-Identifier: MIT
// nnfuzz: differential objectives: two versions of a model that disagree (DisagreementObjective) or
// whose output distributions drift apart (OutputDistanceObjective).
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <algorithm>
#include <cstdio>
#include <type_traits>

namespace nnfuzz {
/// Index of the largest element of a row; the first one on ties.
template <typename Derived>
Index argmax(const Eigen::DenseBase<Derived>& row) {
  Index best = 0;
  row.maxCoeff(&best);
  return best;
}

/// Unit in the last place of a float16 number of magnitude |x| (2^-24 below the normal range).
inline float half_ulp(float x) {
  const float a = std::abs(x);
  if (!(a >= 6.103515625e-05f)) return 5.9604644775390625e-08f;  // subnormal spacing, 2^-24
  return std::ldexp(1.0f, std::ilogb(a) - 10);
}

/// Finds inputs on which two models' predictions (argmax of logits) differ.
///
/// The model's Output must have two RowMatrix members, `reference` and `candidate` (the logits of
/// the two networks, rows = inputs). A disagreement counts only when it is not a tie: the
/// candidate must prefer its class over the reference's class by more than
/// max(min_margin, half_ulps × float16 ulp of those logits), and the reference its class over the
/// candidate's by more than min_margin. With the defaults, exact ties (which argmax breaks by
/// position) never count; half_ulps = 1 also rejects gaps a single float16 rounding could flip.
class DisagreementObjective {
 public:
  /// `min_margin` >= 0: absolute logit margin below which a disagreement is a tie.
  /// `half_ulps` >= 0: candidate margin below which it is a tie, in float16 ulps of its logits.
  explicit DisagreementObjective(float min_margin = 0.0f, float half_ulps = 0.0f)
      : min_margin_(min_margin), half_ulps_(half_ulps) {
    if (!(min_margin >= 0) || !detail::is_finite(min_margin))
      detail::fail("DisagreementObjective(): option 'min_margin' must be >= 0 and finite, got ", min_margin);
    if (!(half_ulps >= 0) || !detail::is_finite(half_ulps))
      detail::fail("DisagreementObjective(): option 'half_ulps' must be >= 0 and finite, got ", half_ulps);
  }
  /// Sets hits(r) when the two argmaxes of row r differ by more than a tie.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) const {
    hits.resize(batch.rows());
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = disagrees(out, r);
  }
  /// True when row r is a disagreement (the check, for one row; used to re-check findings).
  template <typename Output>
  bool disagrees(const Output& out, Index r) const {
    const auto a = out.reference.row(r);
    const auto b = out.candidate.row(r);
    const Index ca = argmax(a), cb = argmax(b);
    if (ca == cb) return false;
    float cand_margin = min_margin_;
    if (half_ulps_ > 0)
      cand_margin = std::max(cand_margin, half_ulps_ * half_ulp(std::max(std::abs(b(ca)), std::abs(b(cb)))));
    return b(cb) - b(ca) > cand_margin && a(ca) - a(cb) > min_margin_;
  }
  /// "reference says A, candidate says B".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    return "reference says " + std::to_string(argmax(out.reference.row(row))) + ", candidate says " +
           std::to_string(argmax(out.candidate.row(row)));
  }
  /// How close row `row` came to a disagreement (DiffChaser's guidance): the candidate's best
  /// logit among the classes other than the reference's top-1, minus its logit of that class.
  /// Negative while they agree, 0 at a tie, positive once the candidate prefers another class.
  /// Used by the default policies (see fuzzer.hpp); MarginFitness is the same as a functor.
  template <typename Output>
  float fitness(const Output& out, Index row) const {
    const auto a = out.reference.row(row);
    const auto b = out.candidate.row(row);
    const Index ca = argmax(a);
    float other = -std::numeric_limits<float>::infinity();
    for (Index c = 0; c < b.cols(); ++c)
      if (c != ca) other = std::max(other, static_cast<float>(b(c)));
    return other - static_cast<float>(b(ca));
  }
  /// The absolute tie margin.
  float min_margin() const { return min_margin_; }
  /// The tie margin in float16 ulps.
  float half_ulps() const { return half_ulps_; }

 private:
  float min_margin_;
  float half_ulps_;
};

/// The distance between two versions' outputs that OutputDistanceObjective thresholds.
enum class OutputDistance {
  max_probability,  ///< max over classes of |softmax(old) − softmax(new)|, in [0, 1]
  kl_divergence,    ///< KL(old ‖ new) = Σ p_old (log p_old − log p_new), in nats, >= 0
};

/// The distance between two rows of logits (softmax taken stably, in double). Returns NaN when
/// a logit is not finite. Throws std::invalid_argument for rows of different widths or empty rows.
template <typename A, typename B>
double output_distance(const Eigen::MatrixBase<A>& reference, const Eigen::MatrixBase<B>& candidate,
                       OutputDistance metric = OutputDistance::max_probability) {
  const Index n = reference.size();
  if (n != candidate.size() || n == 0)
    detail::fail("output_distance(): the rows have ", n, " and ", candidate.size(), " logits (need the same, >= 1)");
  // log Σ exp(l), with the row's maximum taken out first.
  auto log_sum_exp = [n](const auto& l) {
    double m = -std::numeric_limits<double>::infinity();
    for (Index c = 0; c < n; ++c) m = std::max(m, static_cast<double>(l(c)));
    double s = 0;
    for (Index c = 0; c < n; ++c) s += std::exp(static_cast<double>(l(c)) - m);
    return m + std::log(s);
  };
  for (Index c = 0; c < n; ++c)
    if (!detail::is_finite(static_cast<float>(reference(c))) || !detail::is_finite(static_cast<float>(candidate(c))))
      return std::numeric_limits<double>::quiet_NaN();
  const double za = log_sum_exp(reference), zb = log_sum_exp(candidate);
  double d = 0;
  for (Index c = 0; c < n; ++c) {
    const double la = static_cast<double>(reference(c)) - za, lb = static_cast<double>(candidate(c)) - zb;
    if (metric == OutputDistance::max_probability)
      d = std::max(d, std::abs(std::exp(la) - std::exp(lb)));
    else
      d += std::exp(la) * (la - lb);
  }
  return metric == OutputDistance::kl_divergence ? std::max(d, 0.0) : d;  // rounding can leave KL at -1e-17
}

/// Finds inputs on which two versions' output distributions drift apart: fires when the
/// OutputDistance between the softmax of `reference` (old) and of `candidate` (new) exceeds a
/// threshold — also where both still predict the same class (a confidence regression), which
/// DisagreementObjective does not see. Combine the two with any_of().
///
/// The model's Output must have two RowMatrix members, `reference` and `candidate` (the old and
/// the new logits, rows = inputs): VersionPair, PairTarget. A row with a non-finite logit never
/// fires (NonFiniteObjective reports those).
class OutputDistanceObjective {
 public:
  /// `threshold`: the distance that must be exceeded; >= 0 and finite, and below 1 for
  /// max_probability (a probability difference never exceeds 1).
  explicit OutputDistanceObjective(float threshold = 0.5f, OutputDistance metric = OutputDistance::max_probability)
      : threshold_(threshold), metric_(metric) {
    if (!(threshold >= 0) || !detail::is_finite(threshold))
      detail::fail("OutputDistanceObjective(): option 'threshold' must be >= 0 and finite, got ", threshold);
    if (metric == OutputDistance::max_probability && !(threshold < 1))
      detail::fail(
          "OutputDistanceObjective(): option 'threshold' must be below 1 for max_probability (a probability "
          "difference never exceeds 1), got ",
          threshold);
  }
  /// Sets hits(r) when row r's distance exceeds the threshold.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) const {
    static_assert(detail::has_reference_candidate<Output>::value,
                  "nnfuzz: OutputDistanceObjective needs the model's Output to have RowMatrix members `reference` and "
                  "`candidate` (the old and the new logits; see VersionPair in targets/version_pair.hpp)");
    hits.resize(batch.rows());
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = distance(out, r) > threshold_;
  }
  /// The distance of row r.
  template <typename Output>
  double distance(const Output& out, Index r) const {
    return output_distance(out.reference.row(r), out.candidate.row(r), metric_);
  }
  /// "max |Δp| 0.734 > 0.5: reference says 3, candidate says 5" (or "KL(old||new) 1.25 > 1: ...").
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    char d[64];
    std::snprintf(d, sizeof d, "%s %.4g > %.4g",
                  metric_ == OutputDistance::max_probability ? "max |dp|" : "KL(old||new)", distance(out, row),
                  static_cast<double>(threshold_));
    return std::string(d) + ": reference says " + std::to_string(argmax(out.reference.row(row))) + ", candidate says " +
           std::to_string(argmax(out.candidate.row(row)));
  }
  /// How close row `row` came to firing: its distance minus the threshold (positive once it
  /// fires; NaN, "unknown", for a row with a non-finite logit).
  template <typename Output>
  float fitness(const Output& out, Index row) const {
    return static_cast<float>(distance(out, row) - static_cast<double>(threshold_));
  }
  /// The threshold.
  float threshold() const { return threshold_; }
  /// The distance.
  OutputDistance metric() const { return metric_; }

 private:
  float threshold_;
  OutputDistance metric_;
};

}  // namespace nnfuzz
