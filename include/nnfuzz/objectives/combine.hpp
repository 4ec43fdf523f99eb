// SPDX-License-Identifier: MIT
// nnfuzz: objective combinators: any_of(), all_of(), negate().
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

namespace nnfuzz {
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

}  // namespace nnfuzz
