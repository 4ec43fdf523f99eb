// SPDX-License-Identifier: MIT
// nnfuzz: objective combinators: any_of(), all_of(), negate().
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace nnfuzz {

namespace detail {
// The fitness of the parts that have one, folded by `better` (NaN, "unknown", never wins unless
// every part is unknown). Used by AnyOf (the best part) and AllOf (the worst).
template <typename Better, typename Output, typename... Objectives>
float fold_fitness(const std::tuple<Objectives...>& parts, const Output& out, Index row, Better better) {
  float f = std::numeric_limits<float>::quiet_NaN();
  std::apply(
      [&](const auto&... o) {
        (
            [&](const auto& part) {
              if constexpr (has_fitness<std::decay_t<decltype(part)>, Output>::value) {
                const float v = static_cast<float>(part.fitness(out, row));
                if (!is_nan(v) && (is_nan(f) || better(v, f))) f = v;
              }
            }(o),
            ...);
      },
      parts);
  return f;
}
}  // namespace detail

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
  /// The best fitness of the parts that have one (the nearest any part came to firing). Exists
  /// when at least one part has a fitness.
  template <typename Output, std::enable_if_t<(detail::has_fitness<Objectives, Output>::value || ...), int> = 0>
  float fitness(const Output& out, Index row) const {
    return detail::fold_fitness(parts_, out, row, [](float a, float b) { return a > b; });
  }
  /// What the part that fired names (Finding::fired).
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    std::string s;
    int part = 0;
    std::apply(
        [&](const auto&... o) {
          ((row < fired_.rows() && fired_(row) == part++ ? (void)(s = detail::fired_of_objective(o, out, row))
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
  /// The worst fitness of the parts that have one (all must fire: the laggard decides). Exists
  /// when at least one part has a fitness.
  template <typename Output, std::enable_if_t<(detail::has_fitness<Objectives, Output>::value || ...), int> = 0>
  float fitness(const Output& out, Index row) const {
    return detail::fold_fitness(parts_, out, row, [](float a, float b) { return a < b; });
  }
  /// The first name a part gives (Finding::fired).
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    std::string s;
    std::apply([&](const auto&... o) { ((s = s.empty() ? detail::fired_of_objective(o, out, row) : s), ...); }, parts_);
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

/// A hit where the objective does NOT fire: "the model no longer answers its label", "the text
/// never says the word". describe() says so; fitness is not negated (a row's distance to not
/// firing is not the objective's own signal).
template <typename Objective>
class Not {
 public:
  /// Holds a copy of the objective.
  explicit Not(Objective objective) : inner_(std::move(objective)) {}
  /// hits = rows where the objective does not fire.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    detail::run_objective(inner_, batch, out, hits);
    for (Index r = 0; r < hits.rows(); ++r) hits(r) = !hits(r);
  }
  /// "not: " and what the objective would have said.
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    return "not: " + detail::describe_objective(inner_, out, row);
  }
  /// The negated objective.
  const Objective& objective() const { return inner_; }

 private:
  Objective inner_;
};

// One vocabulary for both policy families: any_of(), all_of() combine objectives here and
// coverage policies in coverage/combine.hpp (chosen by what the arguments are); negate() is the
// objectives' negation (novelty has none: "not new" would keep everything already seen).

/// Combines objectives: a hit when any fires.
template <typename... Objectives, std::enable_if_t<!(detail::is_coverage_policy<Objectives>::value && ...), int> = 0>
AnyOf<Objectives...> any_of(Objectives... objectives) {
  return AnyOf<Objectives...>(std::move(objectives)...);
}
/// Combines objectives: a hit when all fire.
template <typename... Objectives, std::enable_if_t<!(detail::is_coverage_policy<Objectives>::value && ...), int> = 0>
AllOf<Objectives...> all_of(Objectives... objectives) {
  return AllOf<Objectives...>(std::move(objectives)...);
}
/// Negates an objective: a hit where it does not fire.
template <typename Objective>
Not<Objective> negate(Objective objective) {
  return Not<Objective>(std::move(objective));
}

}  // namespace nnfuzz
