// SPDX-License-Identifier: MIT
// nnfuzz: compile-time checks of the policy concepts (internal).
#pragma once

#include "config.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {
class Corpus;
class Rng;
class InputLayout;
class InputBatch;
class InputView;
struct InputValue;
/// The default input space: dense float rows (a model with `Index input_dim() const`).
struct DenseInputs {};
/// Structured inputs: token sequences, inputs of several parts (a model with an InputLayout).
struct StructuredInputs {};
namespace detail {

template <typename...>
using void_t = void;

#define NNFUZZ_DETECT(name, expr)       \
 template <typename T, typename = void> \
 struct name : std::false_type {};      \
 template <typename T>                  \
 struct name<T, void_t<decltype(expr)>> : std::true_type {}

// Model
NNFUZZ_DETECT(has_output_type, std::declval<typename T::Output&>());
NNFUZZ_DETECT(has_input_dim, static_cast<Index>(std::declval<const T&>().input_dim()));
template <typename M, typename = void>
struct has_evaluate : std::false_type {};
template <typename M>
struct has_evaluate<M, void_t<decltype(std::declval<M&>().evaluate(std::declval<const Eigen::Ref<const RowMatrix>&>(),
                                                                   std::declval<typename M::Output&>()))>>
    : std::true_type {};
template <typename M, typename = void>
struct has_coverage_member : std::false_type {};
template <typename M>
struct has_coverage_member<
    M, void_t<decltype(Eigen::Ref<const RowMatrix>(std::declval<const typename M::Output&>().coverage))>>
    : std::true_type {};

NNFUZZ_DETECT(has_input_layout, std::declval<const T&>().input_layout());
template <typename M, typename = void>
struct has_structured_evaluate : std::false_type {};
template <typename M>
struct has_structured_evaluate<M, void_t<decltype(std::declval<M&>().evaluate(std::declval<const InputBatch&>(),
                                                                              std::declval<typename M::Output&>()))>>
    : std::true_type {};
/// The model's input space: DenseInputs or StructuredInputs.
template <typename M>
using input_space_t = std::conditional_t<has_input_layout<M>::value, StructuredInputs, DenseInputs>;

// Sampler
NNFUZZ_DETECT(has_pick,
              static_cast<Index>(std::declval<T&>().pick(std::declval<const Corpus&>(), std::declval<Rng&>())));

// Mutator
NNFUZZ_DETECT(has_mutate, std::declval<T&>().mutate(std::declval<const Eigen::Ref<const RowVector>&>(),
                                                    std::declval<const Eigen::Ref<const RowVector>&>(),
                                                    std::declval<Eigen::Ref<RowMatrix>>(), std::declval<Rng&>()));
NNFUZZ_DETECT(has_check_seeds,
              std::declval<const T&>().check_seeds(std::declval<const Eigen::Ref<const RowMatrix>&>()));
NNFUZZ_DETECT(has_structured_mutate,
              std::declval<T&>().mutate(std::declval<const InputView&>(), std::declval<const InputView&>(),
                                        std::declval<InputBatch&>(), std::declval<Rng&>()));
NNFUZZ_DETECT(has_check_seeds_structured,
              std::declval<const T&>().check_seeds(std::declval<const std::vector<InputValue>&>()));
/// True when Mutator can fill batches of the input space Space (the compiler's note on a failed
/// check names both: mutator_fits_input_space<YourMutator, StructuredInputs>).
template <typename Mutator, typename Space>
struct mutator_fits_input_space {
  static constexpr bool value =
      std::is_same<Space, DenseInputs>::value ? has_mutate<Mutator>::value : has_structured_mutate<Mutator>::value;
};

// Coverage
NNFUZZ_DETECT(has_reset, std::declval<T&>().reset(Index{1}));
NNFUZZ_DETECT(has_observe,
              std::declval<T&>().observe(std::declval<const Eigen::Ref<const RowMatrix>&>(), std::declval<Mask&>()));
NNFUZZ_DETECT(has_size, static_cast<Index>(std::declval<const T&>().size()));

// Objective, in its three accepted shapes.
template <typename O, typename Out, typename Batch = Eigen::Ref<const RowMatrix>, typename = void>
struct has_check_member : std::false_type {};
template <typename O, typename Out, typename Batch>
struct has_check_member<O, Out, Batch,
                        void_t<decltype(std::declval<O&>().check(std::declval<const Batch&>(),
                                                                 std::declval<const Out&>(), std::declval<Mask&>()))>>
    : std::true_type {};
template <typename O, typename Out, typename Batch = Eigen::Ref<const RowMatrix>, typename = void>
struct is_batch_callable : std::false_type {};
template <typename O, typename Out, typename Batch>
struct is_batch_callable<O, Out, Batch,
                         void_t<decltype(std::declval<O&>()(std::declval<const Batch&>(), std::declval<const Out&>(),
                                                            std::declval<Mask&>()))>> : std::true_type {};
template <typename O, typename Out, typename = void>
struct is_row_callable : std::false_type {};
template <typename O, typename Out>
struct is_row_callable<O, Out,
                       void_t<decltype(static_cast<bool>(std::declval<O&>()(std::declval<const Out&>(), Index{0})))>>
    : std::true_type {};
template <typename O, typename Out, typename = void>
struct has_describe : std::false_type {};
template <typename O, typename Out>
struct has_describe<
    O, Out, void_t<decltype(std::string(std::declval<const O&>().describe(std::declval<const Out&>(), Index{0})))>>
    : std::true_type {};

// Optional coverage hook: told when the seeds are in (CalibratedCoverage calibrates after it).
template <typename C, typename = void>
struct has_seeds_done : std::false_type {};
template <typename C>
struct has_seeds_done<C, void_t<decltype(std::declval<C&>().seeds_done())>> : std::true_type {};
// Optional coverage members: `std::vector<std::uint8_t> save_state() const` and
// `void restore_state(const std::vector<std::uint8_t>&)`, what the policy learned (CalibratedCoverage's
// radius) kept with a saved corpus (Corpus::coverage_state()) and taken up by Fuzzer::resume().
template <typename C, typename = void>
struct has_save_state : std::false_type {};
template <typename C>
struct has_save_state<C,
                      void_t<decltype(static_cast<std::vector<std::uint8_t>>(std::declval<const C&>().save_state()))>>
    : std::true_type {};
template <typename C, typename = void>
struct has_restore_state : std::false_type {};
template <typename C>
struct has_restore_state<
    C, void_t<decltype(std::declval<C&>().restore_state(std::declval<const std::vector<std::uint8_t>&>()))>>
    : std::true_type {};
/// True when a coverage policy keeps a state across resume() (both save_state() and restore_state()).
template <typename C>
struct has_coverage_state : std::integral_constant<bool, has_save_state<C>::value && has_restore_state<C>::value> {};
// Optional coverage member: `static constexpr bool random_search = true` (NoCoverage): the corpus
// must stay the seeds, so FuzzOptions::keep_fitter is off unless the user turns it on.
template <typename C, typename = void>
struct is_random_search : std::false_type {};
template <typename C>
struct is_random_search<C, void_t<decltype(C::random_search)>> : std::integral_constant<bool, C::random_search> {};
// Optional coverage member: the novelty radius, reported in FuzzStats::coverage_radius.
template <typename C, typename = void>
struct has_radius : std::false_type {};
template <typename C>
struct has_radius<C, void_t<decltype(static_cast<float>(std::declval<const C&>().radius()))>> : std::true_type {};
// Optional objective member: float fitness(const Output&, Index row) const (higher = closer to firing).
template <typename O, typename Out, typename = void>
struct has_fitness : std::false_type {};
template <typename O, typename Out>
struct has_fitness<
    O, Out,
    void_t<decltype(static_cast<float>(std::declval<const O&>().fitness(std::declval<const Out&>(), Index{0})))>>
    : std::true_type {};

// A visitor that accepts anything: detects Output::for_each_tensor(f) (NonFiniteObjective,
// localisation).
struct TensorProbe {
  template <typename N, typename M>
  void operator()(const N&, const M&) const {}
};
template <typename Out, typename = void>
struct has_for_each_tensor : std::false_type {};
template <typename Out>
struct has_for_each_tensor<Out, void_t<decltype(std::declval<const Out&>().for_each_tensor(TensorProbe()))>>
    : std::true_type {};

// An objective with a (non-template) member named `fitness`, whatever its signature: the
// policy checks then require has_fitness, so that a fitness spelt with the wrong signature is an
// error instead of a silently unused member.
NNFUZZ_DETECT(has_fitness_member, &T::fitness);

/// True for a coverage policy (reset(dim) and observe(vectors, is_new)): any_of()/all_of() then
/// combine coverage, otherwise objectives.
template <typename C>
struct is_coverage_policy : std::integral_constant<bool, has_reset<C>::value && has_observe<C>::value> {};

template <typename O, typename Out, typename Batch = Eigen::Ref<const RowMatrix>>
constexpr bool is_objective_v =
    has_check_member<O, Out, Batch>::value || is_batch_callable<O, Out, Batch>::value || is_row_callable<O, Out>::value;

/// Runs any accepted shape of objective over a batch. The library sizes `hits` to the batch and
/// clears it before the objective runs (so a `check` that only sets the rows it fires on is
/// correct), and checks afterwards that the objective left one flag per row.
template <typename O, typename Batch, typename Out>
void run_objective(O& objective, const Batch& batch, const Out& out, Mask& hits) {
  hits.setConstant(batch.rows(), false);
  if constexpr (has_check_member<O, Out, Batch>::value) {
    objective.check(batch, out, hits);
  } else if constexpr (is_batch_callable<O, Out, Batch>::value) {
    objective(batch, out, hits);
  } else {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = static_cast<bool>(objective(out, r));
  }
  if (hits.rows() != batch.rows())
    fail("Fuzzer: the objective resized its 'hits' mask to ", hits.rows(), " rows for a batch of ", batch.rows(),
         " (leave it at one flag per row; the library sizes and clears it)");
}

/// What fired, for a hit row: the objective's describe() if it has one.
template <typename O, typename Out>
std::string describe_objective(const O& objective, const Out& out, Index row) {
  if constexpr (has_describe<O, Out>::value) {
    return objective.describe(out, row);
  } else {
    (void)objective, (void)out, (void)row;
    return "objective";
  }
}

// The Output has RowMatrix-like members `reference` and `candidate`.
template <typename Out, typename = void>
struct has_reference_candidate : std::false_type {};
template <typename Out>
struct has_reference_candidate<Out, void_t<decltype(Eigen::Ref<const RowMatrix>(std::declval<const Out&>().reference)),
                                           decltype(Eigen::Ref<const RowMatrix>(std::declval<const Out&>().candidate))>>
    : std::true_type {};

// Optional objective member: std::string fired(const Output&, Index row) const, the name of what
// fired (a tensor, a word) for Finding::fired.
template <typename O, typename Out, typename = void>
struct has_fired : std::false_type {};
template <typename O, typename Out>
struct has_fired<O, Out,
                 void_t<decltype(std::string(std::declval<const O&>().fired(std::declval<const Out&>(), Index{0})))>>
    : std::true_type {};

/// What fired, for a hit row, as a name: the objective's fired() if it has one, else empty.
template <typename O, typename Out>
std::string fired_of_objective(const O& objective, const Out& out, Index row) {
  if constexpr (has_fired<O, Out>::value) {
    return objective.fired(out, row);
  } else {
    (void)objective, (void)out, (void)row;
    return {};
  }
}

#undef NNFUZZ_DETECT
}  // namespace detail
}  // namespace nnfuzz
