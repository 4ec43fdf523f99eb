// SPDX-License-Identifier: MIT
// nnfuzz: fitness, how close a row came to firing: WithFitness and the stock fitness functions.
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"
#include "differential.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace nnfuzz {
/// An objective with another fitness: `objective` decides the hits, `fitness(out, row)` (any
/// callable returning a float) says how close row `row` came to firing, higher = closer.
///
/// The stock objectives carry their own fitness (a `fitness(out, row)` member:
/// NonFiniteObjective, DisagreementObjective, OutputDistanceObjective, the combinators, the text
/// objectives), and so may a user's objective; WithFitness is needed only to replace it (e.g.
/// LogitSpreadFitness for NonFiniteObjective on TensorFuzz's model) or to give one to an
/// objective that has none. With a fitness, the Fuzzer records each corpus element's fitness
/// (CorpusEntry::fitness), also keeps a mutant that beats the best fitness so far even when its
/// coverage is not new (FuzzOptions::keep_fitter), and the default sampler (FitnessSampler)
/// picks the fittest parents more often: fitness guides the search alongside coverage, it does
/// not replace it. NaN fitness means "unknown" and never beats anything.
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

/// Fitness for a disagreement between two models (DiffChaser's guidance), as a functor: the
/// same value as DisagreementObjective::fitness() — how far the candidate is from preferring
/// another class than the reference's top-1, −(candidate logit of the reference's class − the
/// candidate's best other logit). Negative while they agree, rising to 0 at a tie and positive
/// once they disagree. Needs Output members `reference` and `candidate`.
struct MarginFitness {
  /// The fitness of row r (DisagreementObjective::fitness()).
  template <typename Output>
  float operator()(const Output& out, Index r) const {
    return DisagreementObjective().fitness(out, r);
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
