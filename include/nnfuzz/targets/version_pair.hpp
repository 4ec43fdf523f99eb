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
#include "../feedback.hpp"
#include "../objectives.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

// evaluate() callable on a const model.
template <typename M, typename = void>
struct has_const_evaluate : std::false_type {};
template <typename M>
struct has_const_evaluate<
    M, void_t<decltype(std::declval<const M&>().evaluate(std::declval<const Eigen::Ref<const RowMatrix>&>(),
                                                         std::declval<typename M::Output&>()))>> : std::true_type {};

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
  static_assert(detail::has_output_type<Old>::value && detail::has_output_type<New>::value,
                "nnfuzz: VersionPair<Old, New>: each model must provide a nested type `Output` (the reusable result "
                "of evaluate(); see fuzzer.hpp)");
  static_assert(detail::has_input_dim<Old>::value && detail::has_input_dim<New>::value,
                "nnfuzz: VersionPair<Old, New>: each model must provide `Index input_dim() const` (floats per input)");
  static_assert(detail::has_evaluate<Old>::value && detail::has_evaluate<New>::value,
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
                "nnfuzz::RowMatrix& (const Old::Output&)` to VersionPair's constructor (see targets/version_pair.hpp)");
  static_assert(detail::extracts_logits<Extract, typename New::Output>::value,
                "nnfuzz: VersionPair cannot read the NEW model's logits: give its Output a member `nnfuzz::RowMatrix "
                "logits` (rows = inputs, one column per class), or pass an extractor callable as `const "
                "nnfuzz::RowMatrix& (const New::Output&)` to VersionPair's constructor (see targets/version_pair.hpp)");

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
  /// The old version's declared input shape (Model::input_shape(), empty when it declares none):
  /// the default mutator's image patches.
  std::vector<Index> input_shape() const { return detail::input_shape_of(old_); }

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
    if constexpr (detail::has_coverage_member<M>::value)
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

}  // namespace nnfuzz
