// SPDX-License-Identifier: MIT
// nnfuzz: regression testing between model versions — two arbitrary dense models (the released
// one and its candidate) as one fuzz target, and an objective on how far their outputs drift.
//
//     struct MyModel {                         // the user's own model: any nnfuzz Model
//       struct Output { nnfuzz::RowMatrix logits; };
//       nnfuzz::Index input_dim() const;
//       void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out);
//     };
//     nnfuzz::VersionPair pair(MyModel(v1_weights), MyModel(v2_weights));
//     auto objective = nnfuzz::any_of(nnfuzz::DisagreementObjective(),
//                                     nnfuzz::OutputDistanceObjective(0.5f));
//     auto fuzzer = nnfuzz::make_fuzzer(pair, RecentSampler(), mutator, KdTreeCoverage(0.5f), objective, o);
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"
#include "../objectives.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

namespace nnfuzz {

/// Which version's coverage a VersionPair reports as its own.
enum class VersionCoverage {
  old_model,  ///< the old (released) model's (the default: explore what the users already see)
  new_model,  ///< the new (candidate) model's
};

/// The default logits extractor of VersionPair: a model Output's member `logits` (a RowMatrix,
/// rows = inputs, one column per class). Not callable on an Output without one.
struct LogitsMember {
  /// `out.logits`.
  template <typename Output>
  auto operator()(const Output& out) const -> decltype((out.logits)) {
    return out.logits;
  }
};

namespace detail {

// Extract can read float logits (anything an Eigen::Ref<const RowMatrix> binds to) from an Output.
template <typename Extract, typename Out, typename = void>
struct extracts_logits : std::false_type {};
template <typename Extract, typename Out>
struct extracts_logits<
    Extract, Out,
    void_t<decltype(Eigen::Ref<const RowMatrix>(std::declval<const Extract&>()(std::declval<const Out&>())))>>
    : std::true_type {};

// The model's Output has a `coverage` member an Eigen::Ref<const RowMatrix> binds to.
template <typename M, typename = void>
struct output_has_coverage : std::false_type {};
template <typename M>
struct output_has_coverage<
    M, void_t<decltype(Eigen::Ref<const RowMatrix>(std::declval<const typename M::Output&>().coverage))>>
    : std::true_type {};

// evaluate() callable on a const model.
template <typename M, typename = void>
struct has_const_evaluate : std::false_type {};
template <typename M>
struct has_const_evaluate<
    M, void_t<decltype(std::declval<const M&>().evaluate(std::declval<const Eigen::Ref<const RowMatrix>&>(),
                                                         std::declval<typename M::Output&>()))>> : std::true_type {};

template <typename M, typename = void>
struct version_has_output : std::false_type {};
template <typename M>
struct version_has_output<M, void_t<typename M::Output>> : std::true_type {};

template <typename M, typename = void>
struct version_has_input_dim : std::false_type {};
template <typename M>
struct version_has_input_dim<M, void_t<decltype(static_cast<Index>(std::declval<const M&>().input_dim()))>>
    : std::true_type {};

template <typename M, typename = void>
struct version_has_evaluate : std::false_type {};
template <typename M>
struct version_has_evaluate<
    M, void_t<decltype(std::declval<M&>().evaluate(std::declval<const Eigen::Ref<const RowMatrix>&>(),
                                                   std::declval<typename M::Output&>()))>> : std::true_type {};

// The Output has RowMatrix-like members `reference` and `candidate`.
template <typename Out, typename = void>
struct has_reference_candidate : std::false_type {};
template <typename Out>
struct has_reference_candidate<Out, void_t<decltype(Eigen::Ref<const RowMatrix>(std::declval<const Out&>().reference)),
                                           decltype(Eigen::Ref<const RowMatrix>(std::declval<const Out&>().candidate))>>
    : std::true_type {};

}  // namespace detail

/// Fuzz target for regression testing between two versions of a model: the old (released)
/// model and the new (candidate) one run on the same batch. Both are any dense nnfuzz models —
/// the user's own (`Index input_dim() const`, a nested `Output`, `evaluate(batch, out)`), e.g. a
/// `float*` forward function wrapped in a struct; they may be of different types.
///
/// Output: `reference` and `candidate` hold the old and the new logits (float, rows = inputs),
/// as DisagreementObjective and OutputDistanceObjective expect; `old_output` and `new_output` are
/// the two models' own outputs; `coverage` is the old model's (VersionCoverage picks the other).
/// A model whose Output has no `coverage` member contributes its logits as coverage.
///
/// The logits come out of each model's Output through `Extract`: by default (LogitsMember) the
/// Output's member `logits`; pass a callable `const RowMatrix& (const Output&)` to read them
/// from elsewhere (a generic lambda serves two different Output types). Returning a reference
/// keeps evaluate() free of allocations at an unchanged batch size.
///
/// Throws std::invalid_argument at construction when the two models take inputs of different
/// widths, and in evaluate() when their logits differ in width or do not have a row per input.
template <typename Old, typename New, typename Extract = LogitsMember>
class VersionPair {
  static_assert(detail::version_has_output<Old>::value && detail::version_has_output<New>::value,
                "nnfuzz: VersionPair<Old, New>: each model must provide a nested type `Output` (the reusable result "
                "of evaluate(); see fuzzer.hpp)");
  static_assert(detail::version_has_input_dim<Old>::value && detail::version_has_input_dim<New>::value,
                "nnfuzz: VersionPair<Old, New>: each model must provide `Index input_dim() const` (floats per input)");
  static_assert(detail::version_has_evaluate<Old>::value && detail::version_has_evaluate<New>::value,
                "nnfuzz: VersionPair<Old, New>: each model must provide `void evaluate(const Eigen::Ref<const "
                "nnfuzz::RowMatrix>& batch, Output& out)`");

 public:
  /// The reusable output of evaluate().
  struct Output {
    typename Old::Output old_output;  ///< the old model's own output
    typename New::Output new_output;  ///< the new model's own output
    RowMatrix reference;              ///< the old model's logits
    RowMatrix candidate;              ///< the new model's logits
    RowMatrix coverage;               ///< per VersionCoverage
    /// Visits both logits (NonFiniteObjective works on a pair too).
    template <class F>
    void for_each_tensor(F&& f) const {
      f("reference_logits", reference);
      f("candidate_logits", candidate);
    }
  };

  static_assert(detail::extracts_logits<Extract, typename Old::Output>::value,
                "nnfuzz: VersionPair cannot read the OLD model's logits: give its Output a member `nnfuzz::RowMatrix "
                "logits` (rows = inputs, one column per class), or pass an extractor callable as `const "
                "nnfuzz::RowMatrix& (const Old::Output&)` to VersionPair's constructor (see models/versions.hpp)");
  static_assert(detail::extracts_logits<Extract, typename New::Output>::value,
                "nnfuzz: VersionPair cannot read the NEW model's logits: give its Output a member `nnfuzz::RowMatrix "
                "logits` (rows = inputs, one column per class), or pass an extractor callable as `const "
                "nnfuzz::RowMatrix& (const New::Output&)` to VersionPair's constructor (see models/versions.hpp)");

  /// The two versions, logits read by Extract's default (the Output's member `logits`).
  VersionPair(Old old_model, New new_model, VersionCoverage coverage = VersionCoverage::old_model)
      : VersionPair(std::move(old_model), std::move(new_model), Extract(), coverage) {}
  /// The two versions and a logits extractor.
  VersionPair(Old old_model, New new_model, Extract extract, VersionCoverage coverage = VersionCoverage::old_model)
      : old_(std::move(old_model)), new_(std::move(new_model)), extract_(std::move(extract)), coverage_(coverage) {
    if (old_.input_dim() != new_.input_dim())
      detail::fail("VersionPair(): the old model takes ", old_.input_dim(), " floats per input, the new model ",
                   new_.input_dim());
  }

  /// Floats per input (the same for both versions).
  Index input_dim() const { return old_.input_dim(); }

  /// Runs both versions on the batch and copies out their logits and the coverage.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) { run(old_, new_, batch, out); }
  /// The same on a const pair, when both models' evaluate() is const.
  template <typename O = Old,
            typename = std::enable_if_t<detail::has_const_evaluate<O>::value && detail::has_const_evaluate<New>::value>>
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    run(old_, new_, batch, out);
  }

  /// The old (released) model.
  const Old& old_model() const { return old_; }
  /// The old (released) model, modifiable.
  Old& old_model() { return old_; }
  /// The new (candidate) model.
  const New& new_model() const { return new_; }
  /// The new (candidate) model, modifiable.
  New& new_model() { return new_; }
  /// The logits extractor.
  const Extract& extract() const { return extract_; }
  /// Whose coverage is reported.
  VersionCoverage coverage() const { return coverage_; }

 private:
  template <typename OldRef, typename NewRef>
  void run(OldRef& o, NewRef& n, const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    o.evaluate(batch, out.old_output);
    n.evaluate(batch, out.new_output);
    const Eigen::Ref<const RowMatrix> a = extract_(out.old_output);
    const Eigen::Ref<const RowMatrix> b = extract_(out.new_output);
    if (a.cols() != b.cols())
      detail::fail("VersionPair::evaluate(): the old model gives ", a.cols(), " logits per input, the new model ",
                   b.cols());
    if (a.rows() != batch.rows() || b.rows() != batch.rows())
      detail::fail("VersionPair::evaluate(): a batch of ", batch.rows(), " inputs gave ", a.rows(),
                   " rows of old logits and ", b.rows(), " rows of new logits (want one row per input)");
    out.reference = a;
    out.candidate = b;
    if (coverage_ == VersionCoverage::old_model)
      copy_coverage<Old>(out.old_output, out.reference, out.coverage);
    else
      copy_coverage<New>(out.new_output, out.candidate, out.coverage);
  }
  template <typename M>
  static void copy_coverage(const typename M::Output& own, const RowMatrix& logits, RowMatrix& coverage) {
    if constexpr (detail::output_has_coverage<M>::value)
      coverage = own.coverage;
    else
      coverage = logits;
  }

  Old old_;
  New new_;
  Extract extract_;
  VersionCoverage coverage_;
};

/// Deduction guides: VersionPair(old, new), (old, new, coverage), (old, new, extract[, coverage]).
template <typename Old, typename New>
VersionPair(Old, New) -> VersionPair<Old, New>;
template <typename Old, typename New>
VersionPair(Old, New, VersionCoverage) -> VersionPair<Old, New>;
template <typename Old, typename New, typename Extract>
VersionPair(Old, New, Extract) -> VersionPair<Old, New, Extract>;
template <typename Old, typename New, typename Extract>
VersionPair(Old, New, Extract, VersionCoverage) -> VersionPair<Old, New, Extract>;

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
                  "`candidate` (the old and the new logits; see VersionPair in models/versions.hpp)");
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
  /// The threshold.
  float threshold() const { return threshold_; }
  /// The distance.
  OutputDistance metric() const { return metric_; }

 private:
  float threshold_;
  OutputDistance metric_;
};

}  // namespace nnfuzz
