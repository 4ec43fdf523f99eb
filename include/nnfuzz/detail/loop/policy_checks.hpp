// SPDX-License-Identifier: MIT
// nnfuzz: the compile-time checks of Fuzzer's five policies (internal). Each message names the
// member that is missing and where its concept is documented; tests/compile_fail pins them.
#pragma once

#include "input_space.hpp"
#include "../traits.hpp"

namespace nnfuzz {
namespace detail {

/// Instantiated by Fuzzer: `static_assert(PolicyChecks<...>::ok)`.
template <typename Model, typename Sampler, typename Mutator, typename Coverage, typename Objective>
struct PolicyChecks {
  static_assert(
      has_output_type<Model>::value,
      "nnfuzz: Model must provide a nested type `Output` (the reusable result of evaluate(); see fuzzer.hpp)");
  static_assert(has_input_dim<Model>::value || has_input_layout<Model>::value,
                "nnfuzz: Model must provide `Index input_dim() const` (floats per input row) or, for token "
                "sequences and inputs of several parts, `nnfuzz::InputLayout input_layout() const` (see input.hpp)");
  static_assert(has_input_layout<Model>::value || has_evaluate<Model>::value,
                "nnfuzz: Model must provide `void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& "
                "out)`");
  static_assert(!has_input_layout<Model>::value || has_structured_evaluate<Model>::value,
                "nnfuzz: a Model with input_layout() must provide `void evaluate(const nnfuzz::InputBatch& batch, "
                "Output& out)`");
  static_assert(has_coverage_member<Model>::value,
                "nnfuzz: Model::Output must provide a member `coverage` (a RowMatrix, one coverage vector per row)");
  static_assert(
      has_pick<Sampler>::value,
      "nnfuzz: Sampler must provide `Index pick(const nnfuzz::Corpus& corpus, nnfuzz::Rng& rng)` (see samplers.hpp)");
  static_assert(mutator_fits_input_space<Mutator, input_space_t<Model>>::value,
                "nnfuzz: the Mutator does not fit the model's input space (see the note naming both). Dense models "
                "(input_dim()) need `void mutate(const Eigen::Ref<const RowVector>& parent, const "
                "Eigen::Ref<const RowVector>& root, Eigen::Ref<RowMatrix> batch, nnfuzz::Rng& rng)`; models with an "
                "InputLayout need `void mutate(const nnfuzz::InputView& parent, const nnfuzz::InputView& root, "
                "nnfuzz::InputBatch& batch, nnfuzz::Rng& rng)` (see mutators/)");
  static_assert(has_reset<Coverage>::value,
                "nnfuzz: Coverage must provide `void reset(Index dim)` (forget everything; see coverage/)");
  static_assert(has_observe<Coverage>::value,
                "nnfuzz: Coverage must provide `void observe(const Eigen::Ref<const RowMatrix>& vectors, nnfuzz::Mask& "
                "is_new)` (see coverage/)");
  static_assert(has_size<Coverage>::value, "nnfuzz: Coverage must provide `Index size() const`");
  static_assert(has_save_state<Coverage>::value == has_restore_state<Coverage>::value,
                "nnfuzz: a Coverage that keeps a state across resume() needs both `std::vector<std::uint8_t> "
                "save_state() const` and `void restore_state(const std::vector<std::uint8_t>& state)` (see "
                "coverage/calibrated.hpp); it has only one of them");
  // The objective is checked only when the model has an Output (the check names Model::Output,
  // which would be a second, confusing error otherwise): ObjectiveCheck<false> checks nothing,
  // ObjectiveCheck<true> holds the static_assert. (`Enable` makes the specialisation partial,
  // as a full specialisation inside a class template is not allowed.)
  static constexpr bool model_ok = has_output_type<Model>::value;
  template <bool HasOutput, typename Enable = void>
  struct ObjectiveCheck : std::true_type {};
  template <typename Enable>
  struct ObjectiveCheck<true, Enable> {
    static constexpr bool value =
        is_objective_v<Objective, typename Model::Output, typename InputSpace<Model>::ObjectiveBatch>;
    static_assert(value,
                  "nnfuzz: Objective must provide `void check(const Eigen::Ref<const RowMatrix>& batch, const Output& "
                  "out, Mask& hits)`, or be callable as `bool(const Output&, Index row)` (see objectives/)");
    static_assert(!has_fitness_member<Objective>::value || has_fitness<Objective, typename Model::Output>::value,
                  "nnfuzz: the Objective's member `fitness` cannot be called as `float fitness(const Output& out, "
                  "nnfuzz::Index row) const` (how close row `row` came to firing, higher = closer; see "
                  "objectives/fitness.hpp)");
  };
  // Naming sizeof() instantiates ObjectiveCheck, which is what fires its static_assert; `ok`
  // itself is always true (every failure is one of the static_asserts above, with its message).
  static constexpr bool ok = sizeof(ObjectiveCheck<model_ok>) > 0;
};

}  // namespace detail
}  // namespace nnfuzz
