// SPDX-License-Identifier: MIT
// nnfuzz: Objective policies — which inputs of a batch are findings.
//
// An Objective provides one of
//     void check(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, const Output& out, nnfuzz::Mask& hits);
//     void operator()(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, const Output& out, nnfuzz::Mask& hits);
//     bool operator()(const Output& out, nnfuzz::Index row);      // any callable, one row at a time
// setting hits(r) for each row r of the batch that fires (`Output` is the model's output type;
// `hits` comes sized to the batch and cleared). For a model with structured inputs (InputLayout)
// the batch is a `const nnfuzz::InputBatch&` instead; the shipped objectives take either. And
// optionally
//     std::string describe(const Output& out, nnfuzz::Index row) const;
// naming what fired for a hit row (it becomes Finding::what). describe() is called only for hits.
#pragma once

#include "detail/config.hpp"
#include "detail/traits.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace nnfuzz {

/// Finds inputs for which any tensor the model reports holds a NaN or an infinity.
///
/// The model's Output must provide
///     template <class F> void for_each_tensor(F&& f) const;
/// calling f(const char* name, const M& m) for each tensor, rows = inputs, in the order the
/// network computes them; the first tensor with a non-finite value in a row names the finding.
class NonFiniteObjective {
 public:
  /// Sets hits(r) when row r of any tensor is not all finite.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) const {
    static_assert(has_tensors<Output>::value,
                  "nnfuzz: NonFiniteObjective needs the model's Output to provide "
                  "`template <class F> void for_each_tensor(F&& f) const` (see objectives.hpp)");
    hits.setConstant(batch.rows(), false);
    out.for_each_tensor([&](const char*, const auto& m) {
      // The common case in one vectorised pass over the exponent bits (exact, -ffast-math-proof).
      if (detail::all_finite(m)) return;
      for (Index r = 0; r < m.rows() && r < hits.rows(); ++r)
        if (!detail::row_all_finite(m, r)) hits(r) = true;
    });
  }
  /// "non-finite in 'NAME'", NAME being the first tensor with a NaN/Inf in that row.
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    std::string first;
    out.for_each_tensor([&](const char* name, const auto& m) {
      if (first.empty() && row < m.rows() && !detail::row_all_finite(m, row)) first = name;
    });
    return "non-finite in '" + first + "'";
  }

 private:
  struct Probe {
    template <typename M>
    void operator()(const char*, const M&) const {}
  };
  template <typename T, typename = void>
  struct has_tensors : std::false_type {};
  template <typename T>
  struct has_tensors<T, detail::void_t<decltype(std::declval<const T&>().for_each_tensor(Probe{}))>> : std::true_type {
  };
};

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
  /// The absolute tie margin.
  float min_margin() const { return min_margin_; }
  /// The tie margin in float16 ulps.
  float half_ulps() const { return half_ulps_; }

 private:
  float min_margin_;
  float half_ulps_;
};

/// A hit when any of the objectives fires; describe() names the first that fired.
template <typename... Objectives>
class AnyOf {
 public:
  /// Holds copies of the objectives.
  explicit AnyOf(Objectives... objectives) : parts_(std::move(objectives)...) {}
  /// OR of the parts' hits; remembers, per row, the first part that fired.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    hits.setConstant(batch.rows(), false);
    fired_.setConstant(batch.rows(), -1);
    int part = 0;
    std::apply([&](auto&... o) { (merge(o, part++, batch, out, hits), ...); }, parts_);
  }
  /// The description of the first part that fired for this row in the last check().
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    std::string s;
    int part = 0;
    std::apply(
        [&](const auto&... o) {
          ((row < fired_.rows() && fired_(row) == part++ ? (void)(s = detail::describe_objective(o, out, row))
                                                         : (void)0),
           ...);
        },
        parts_);
    return s.empty() ? "objective" : s;
  }

 private:
  template <typename O, typename Batch, typename Output>
  void merge(O& o, int part, const Batch& batch, const Output& out, Mask& hits) {
    detail::run_objective(o, batch, out, scratch_);
    for (Index r = 0; r < hits.rows(); ++r)
      if (scratch_(r) && !hits(r)) {
        hits(r) = true;
        fired_(r) = part;
      }
  }
  std::tuple<Objectives...> parts_;
  Mask scratch_;
  Eigen::ArrayXi fired_;
};

/// A hit when every objective fires; describe() joins the parts' descriptions.
template <typename... Objectives>
class AllOf {
 public:
  /// Holds copies of the objectives.
  explicit AllOf(Objectives... objectives) : parts_(std::move(objectives)...) {}
  /// AND of the parts' hits.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    hits.setConstant(batch.rows(), true);
    std::apply([&](auto&... o) { (merge(o, batch, out, hits), ...); }, parts_);
  }
  /// "A and B and ...".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    std::string s;
    std::apply(
        [&](const auto&... o) { ((s += (s.empty() ? "" : " and ") + detail::describe_objective(o, out, row)), ...); },
        parts_);
    return s;
  }

 private:
  template <typename O, typename Batch, typename Output>
  void merge(O& o, const Batch& batch, const Output& out, Mask& hits) {
    detail::run_objective(o, batch, out, scratch_);
    hits = hits && scratch_;
  }
  std::tuple<Objectives...> parts_;
  Mask scratch_;
};

/// Combines objectives: a hit when any fires.
template <typename... Objectives>
AnyOf<Objectives...> any_of(Objectives... objectives) {
  return AnyOf<Objectives...>(std::move(objectives)...);
}
/// Combines objectives: a hit when all fire.
template <typename... Objectives>
AllOf<Objectives...> all_of(Objectives... objectives) {
  return AllOf<Objectives...>(std::move(objectives)...);
}

/// An objective with a fitness: `objective` decides the hits, `fitness(out, row)` (any callable
/// returning a float) says how close row `row` came to firing, higher = closer (e.g. the
/// twin's margin for a disagreement, the logit spread for the NaN hunt). The Fuzzer then records
/// each corpus element's fitness (CorpusEntry::fitness), also keeps a mutant that beats the
/// best fitness so far even when its coverage is not new (FuzzOptions::keep_fitter), and
/// FitnessSampler picks the fittest parents more often: fitness guides the search alongside
/// coverage, it does not replace it. NaN fitness means "unknown" and never beats anything.
template <typename Objective, typename Fitness>
class WithFitness {
 public:
  /// Holds copies of both.
  WithFitness(Objective objective, Fitness fitness) : objective_(std::move(objective)), fitness_(std::move(fitness)) {}
  /// The objective's hits.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    detail::run_objective(objective_, batch, out, hits);
  }
  /// The objective's description of a hit.
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    return detail::describe_objective(objective_, out, row);
  }
  /// The fitness of row `row`.
  template <typename Output>
  float fitness(const Output& out, Index row) const {
    return static_cast<float>(fitness_(out, row));
  }
  /// The objective.
  const Objective& objective() const { return objective_; }

 private:
  Objective objective_;
  Fitness fitness_;
};

/// Attaches a fitness to an objective (see WithFitness).
template <typename Objective, typename Fitness>
WithFitness<Objective, Fitness> with_fitness(Objective objective, Fitness fitness) {
  return WithFitness<Objective, Fitness>(std::move(objective), std::move(fitness));
}

/// Fitness for a disagreement between two models (DiffChaser's guidance): how far the candidate
/// is from preferring another class than the reference's top-1, as −(candidate logit of the
/// reference's class − the candidate's best other logit). Negative while they agree, rising to 0
/// at a tie and positive once they disagree. Needs Output members `reference` and `candidate`
/// (as DisagreementObjective).
struct MarginFitness {
  /// The fitness of row r.
  template <typename Output>
  float operator()(const Output& out, Index r) const {
    const auto a = out.reference.row(r);
    const auto b = out.candidate.row(r);
    const Index ca = argmax(a);
    float other = -std::numeric_limits<float>::infinity();
    for (Index c = 0; c < b.cols(); ++c)
      if (c != ca) other = std::max(other, static_cast<float>(b(c)));
    return other - static_cast<float>(b(ca));
  }
};

/// Fitness for the NaN hunt on NanTarget (any Output with `trace.logits()`): the logit spread
/// max − min, which must pass ~104 in float32 before a class probability underflows to 0 and the
/// unstabilised cross entropy turns NaN.
struct LogitSpreadFitness {
  /// The fitness of row r.
  template <typename Output>
  float operator()(const Output& out, Index r) const {
    const auto l = out.trace.logits().row(r);
    return l.maxCoeff() - l.minCoeff();
  }
};

}  // namespace nnfuzz
