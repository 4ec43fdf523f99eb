// SPDX-License-Identifier: MIT
// nnfuzz: coverage combinators — AnyCoverage (new if any part says so), AllCoverage (if all do),
// and Columns (a policy over a range of the coverage vector's columns).
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

namespace detail {

template <typename C>
void forward_seeds_done(C& part) {
  if constexpr (has_seeds_done<C>::value) part.seeds_done();
}

// AnyCoverage (All = false) and AllCoverage (All = true).
template <bool All, typename... Parts>
class CombinedCoverage {
  static_assert(sizeof...(Parts) >= 1, "nnfuzz: a coverage combinator needs at least one part");
  static constexpr std::size_t kParts = sizeof...(Parts);

 public:
  explicit CombinedCoverage(Parts... parts) : parts_(std::move(parts)...) {}

  /// Resets every part with the same `dim`.
  void reset(Index dim) {
    std::apply([dim](auto&... p) { (p.reset(dim), ...); }, parts_);
    accepted_ = 0;
  }
  /// Every part observes every batch (and records its own novelty, whatever the verdict); then
  /// is_new(i) = the OR (AnyCoverage) or the AND (AllCoverage) of the parts' verdicts.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    observe_parts(vectors, std::make_index_sequence<kParts>{});
    for (std::size_t p = 0; p < kParts; ++p)
      if (masks_[p].size() != vectors.rows())
        fail(All ? "AllCoverage" : "AnyCoverage", "::observe(): part ", p, " marked ", masks_[p].size(), " rows of ",
             vectors.rows());
    is_new = masks_[0];
    for (std::size_t p = 1; p < kParts; ++p) {
      if (All)
        is_new = is_new && masks_[p];
      else
        is_new = is_new || masks_[p];
    }
    accepted_ += is_new.count();
  }
  /// Forwarded to every part that has it (CalibratedCoverage, the range criteria, Columns).
  void seeds_done() {
    std::apply([](auto&... p) { (forward_seeds_done(p), ...); }, parts_);
  }
  /// Coverage vectors this combination accepted as new since reset().
  Index size() const { return accepted_; }
  /// The novelty radius of the first part that has one (e.g. CalibratedCoverage), reported by
  /// the Fuzzer as FuzzStats::coverage_radius. Only present when some part has radius().
  template <bool B = (has_radius<Parts>::value || ...), std::enable_if_t<B, int> = 0>
  float radius() const {
    float t = 0;
    bool found = false;
    std::apply([&](const auto&... p) { (take_radius(p, t, found), ...); }, parts_);
    return t;
  }
  /// Part I (const).
  template <std::size_t I>
  const auto& part() const {
    return std::get<I>(parts_);
  }
  /// Part I.
  template <std::size_t I>
  auto& part() {
    return std::get<I>(parts_);
  }

 private:
  template <std::size_t... I>
  void observe_parts(const Eigen::Ref<const RowMatrix>& vectors, std::index_sequence<I...>) {
    (std::get<I>(parts_).observe(vectors, masks_[I]), ...);
  }
  template <typename C>
  static void take_radius(const C& part, float& t, bool& found) {
    if constexpr (has_radius<C>::value) {
      if (!found) t = static_cast<float>(part.radius());
      found = true;
    }
  }

  std::tuple<Parts...> parts_;
  std::array<Mask, kParts> masks_;  // each part's verdicts; sized by the parts, reused
  Index accepted_ = 0;
};

}  // namespace detail

/// Coverage policy that combines others: an input is new when ANY part says it is (LibAFL's
/// feedback_or). Every part observes every batch and keeps its own state (a KMNCoverage part
/// marks the sections a row covers even if the row was new only for another part), so each part's
/// statistics stay those of the criterion alone. Give parts different columns with Columns.
/// reset(), seeds_done() and radius() are forwarded; size() counts the rows it accepted. A
/// combination keeps no state across Fuzzer::resume(): its parts start afresh on the saved corpus
/// (a CalibratedCoverage part recalibrates), as each part would without a saved state.
template <typename... Parts>
class AnyCoverage : public detail::CombinedCoverage<false, Parts...> {
 public:
  /// Takes the parts by value.
  explicit AnyCoverage(Parts... parts) : detail::CombinedCoverage<false, Parts...>(std::move(parts)...) {}
};
/// Deduces the parts: `AnyCoverage any(nnfuzz::CalibratedCoverage(), nnfuzz::KMNCoverage(...))`.
template <typename... Parts>
AnyCoverage(Parts...) -> AnyCoverage<Parts...>;

/// Coverage policy that combines others: an input is new when ALL parts say it is (LibAFL's
/// feedback_and, not the short-circuiting one: every part observes every batch and keeps its own
/// state, so a part may record a row as covered that the combination rejects).
template <typename... Parts>
class AllCoverage : public detail::CombinedCoverage<true, Parts...> {
 public:
  /// Takes the parts by value.
  explicit AllCoverage(Parts... parts) : detail::CombinedCoverage<true, Parts...>(std::move(parts)...) {}
};
/// Deduces the parts.
template <typename... Parts>
AllCoverage(Parts...) -> AllCoverage<Parts...>;

/// Combines coverage policies: new when any part calls it new (AnyCoverage). The same name
/// combines objectives (objectives/combine.hpp); the arguments decide.
template <typename... Parts, std::enable_if_t<(detail::is_coverage_policy<std::decay_t<Parts>>::value && ...), int> = 0>
AnyCoverage<std::decay_t<Parts>...> any_of(Parts&&... parts) {
  return AnyCoverage<std::decay_t<Parts>...>(std::forward<Parts>(parts)...);
}
/// Combines coverage policies: new when every part calls it new (AllCoverage).
template <typename... Parts, std::enable_if_t<(detail::is_coverage_policy<std::decay_t<Parts>>::value && ...), int> = 0>
AllCoverage<std::decay_t<Parts>...> all_of(Parts&&... parts) {
  return AllCoverage<std::decay_t<Parts>...>(std::forward<Parts>(parts)...);
}
/// The old name of any_of() for coverage policies.
template <typename... Parts>
[[deprecated("use nnfuzz::any_of()")]] AnyCoverage<std::decay_t<Parts>...> make_any_coverage(Parts&&... parts) {
  return AnyCoverage<std::decay_t<Parts>...>(std::forward<Parts>(parts)...);
}
/// The old name of all_of() for coverage policies.
template <typename... Parts>
[[deprecated("use nnfuzz::all_of()")]] AllCoverage<std::decay_t<Parts>...> make_all_coverage(Parts&&... parts) {
  return AllCoverage<std::decay_t<Parts>...>(std::forward<Parts>(parts)...);
}

/// Adaptor: `policy` sees only the columns [first, first + count) of each coverage vector (no
/// copy: a view with the same rows). With a target whose coverage is hidden neurons followed by
/// logits (CoverageSignal::neurons_and_logits), L2 novelty on the logits and KMNC on the hidden
/// layers combine as
/// `any_of(Columns(hidden, classes, CalibratedCoverage()), Columns(0, hidden, KMNCoverage(layers)))`.
/// seeds_done(), radius() and save_state() / restore_state() are forwarded when the policy has them.
template <typename Policy>
class Columns {
 public:
  /// `first` >= 0, `count` >= 1; the range is checked against the coverage width at reset().
  Columns(Index first, Index count, Policy policy = Policy())
      : first_(first), count_(count), policy_(std::move(policy)) {
    if (first < 0 || count < 1)
      detail::fail("Columns(): options 'first' (", first, ") and 'count' (", count, ") must be >= 0 and >= 1");
  }
  /// Resets the policy with `count` columns; fails when [first, first + count) is not inside `dim`.
  void reset(Index dim) {
    if (first_ + count_ > dim)
      detail::fail("Columns::reset(): columns [", first_, ", ", first_ + count_, ") lie outside coverage vectors of ",
                   dim, " elements");
    dim_ = dim;
    policy_.reset(count_);
  }
  /// The policy observes the columns [first, first + count) of `vectors`.
  void observe(const Eigen::Ref<const RowMatrix>& vectors, Mask& is_new) {
    if (vectors.cols() != dim_)
      detail::fail("Columns::observe(): vectors have ", vectors.cols(), " elements, reset() said ", dim_);
    policy_.observe(vectors.middleCols(first_, count_), is_new);
  }
  /// Forwarded when the policy has it.
  void seeds_done() { detail::forward_seeds_done(policy_); }
  /// The policy's save_state() (what it learned, kept across Fuzzer::resume()); present only
  /// when the policy keeps a state.
  template <bool B = detail::has_coverage_state<Policy>::value, std::enable_if_t<B, int> = 0>
  std::vector<std::uint8_t> save_state() const {
    return policy_.save_state();
  }
  /// The policy's restore_state(); present only when the policy keeps a state.
  template <bool B = detail::has_coverage_state<Policy>::value, std::enable_if_t<B, int> = 0>
  void restore_state(const std::vector<std::uint8_t>& state) {
    policy_.restore_state(state);
  }
  /// The policy's size().
  Index size() const { return policy_.size(); }
  /// The policy's radius(); present only when the policy has one.
  template <bool B = detail::has_radius<Policy>::value, std::enable_if_t<B, int> = 0>
  float radius() const {
    return static_cast<float>(policy_.radius());
  }
  /// The first column.
  Index first() const { return first_; }
  /// The number of columns.
  Index count() const { return count_; }
  /// The policy (const).
  const Policy& policy() const { return policy_; }
  /// The policy.
  Policy& policy() { return policy_; }

 private:
  Index first_, count_;
  Index dim_ = 0;
  Policy policy_;
};

}  // namespace nnfuzz
