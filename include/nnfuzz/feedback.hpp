// SPDX-License-Identifier: MIT
// nnfuzz: BatchFeedback — what a batch produced, told to samplers and mutators that adapt.
#pragma once

#include "corpus.hpp"
#include "detail/traits.hpp"

#include <cstdint>
#include <limits>

namespace nnfuzz {

/// What one batch of mutants produced. After each batch the Fuzzer hands it to the sampler's
/// and the mutator's optional `feedback` members, so that schedules can adapt:
///     void feedback(const nnfuzz::BatchFeedback&, const nnfuzz::Corpus&);  // Sampler
///     void feedback(const nnfuzz::BatchFeedback&);                         // Mutator
/// (the mutator knows which of its operators made the batch; the sampler which parent it picked).
struct BatchFeedback {
  Index parent = -1;               ///< corpus id of the parent the batch was mutated from
  Index rows = 0;                  ///< mutants evaluated
  Index added = 0;                 ///< of them, added to the corpus (new coverage, or fitter)
  Index first_added = -1;          ///< corpus id of the first added (the added ones are consecutive); -1 if none
  Index hits = 0;                  ///< rows the objective fired on (before the re-check)
  std::uint64_t executions = 0;    ///< executions after the batch
  const float* fitness = nullptr;  ///< the rows' fitness (`rows` values), or nullptr when the objective has none
  float best_fitness = std::numeric_limits<float>::quiet_NaN();  ///< best fitness of the run so far (NaN: none)
};

namespace detail {
// Optional feedback members of samplers and mutators (see BatchFeedback).
template <typename S, typename = void>
struct has_sampler_feedback : std::false_type {};
template <typename S>
struct has_sampler_feedback<S, void_t<decltype(std::declval<S&>().feedback(std::declval<const BatchFeedback&>(),
                                                                           std::declval<const Corpus&>()))>>
    : std::true_type {};
template <typename M, typename = void>
struct has_mutator_feedback : std::false_type {};
template <typename M>
struct has_mutator_feedback<M, void_t<decltype(std::declval<M&>().feedback(std::declval<const BatchFeedback&>()))>>
    : std::true_type {};
// Optional reset() of samplers and mutators: called at the start of every run() and resume(), so
// that adaptive state does not leak from one run into the next (one seed, one run).
template <typename P, typename = void>
struct has_policy_reset : std::false_type {};
template <typename P>
struct has_policy_reset<P, void_t<decltype(std::declval<P&>().reset())>> : std::true_type {};
}  // namespace detail

}  // namespace nnfuzz
