// SPDX-License-Identifier: MIT
// nnfuzz: BatchFeedback — what a batch produced, told to samplers and mutators that adapt.
#pragma once

#include "corpus.hpp"
#include "detail/traits.hpp"

#include <cstdint>
#include <limits>
#include <vector>

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
  float best_fitness = std::numeric_limits<float>::quiet_NaN();    ///< best fitness of the run so far (NaN: none)
  float parent_fitness = std::numeric_limits<float>::quiet_NaN();  ///< the parent's fitness (NaN: none or unknown)
};

/// What the Fuzzer tells a policy about the run before it starts: a mutator with an optional
///     void prepare(const nnfuzz::RunSetup&);
/// member gets it at the start of every run() and resume() (before reset()), so that it can
/// fit itself to the model (DefaultMutator adds Square patches for images and multi-scale noise
/// when the objective has a fitness).
struct RunSetup {
  Index input_dim = 0;             ///< floats per input (dense models), or cells of the layout
  std::vector<Index> input_shape;  ///< Model::input_shape() when the model declares one (empty otherwise)
  bool fitness = false;            ///< the objective has a fitness (`fitness(out, row)`)

  /// True when input_shape describes an image: {H, W} or {C, H, W} (channels first, as in
  /// PyTorch and ONNX) with H, W >= 4 and at most 4 channels.
  bool is_image() const {
    const std::size_t n = input_shape.size();
    if (n != 2 && n != 3) return false;
    const Index h = input_shape[n - 2], w = input_shape[n - 1], c = n == 3 ? input_shape[0] : 1;
    return h >= 4 && w >= 4 && c >= 1 && c <= 4;
  }
  /// Elements per image row (the shape's last extent; 0 when not an image).
  Index image_width() const { return is_image() ? input_shape.back() : 0; }
};

namespace detail {
// Optional mutator member prepare(const RunSetup&) (see RunSetup).
template <typename M, typename = void>
struct has_prepare : std::false_type {};
template <typename M>
struct has_prepare<M, void_t<decltype(std::declval<M&>().prepare(std::declval<const RunSetup&>()))>> : std::true_type {
};
// Optional model member input_shape(): the shape of one input, without the batch axis, as any
// container of integers.
template <typename M, typename = void>
struct has_input_shape : std::false_type {};
template <typename M>
struct has_input_shape<M, void_t<decltype(std::declval<const M&>().input_shape().begin())>> : std::true_type {};
template <typename M>
std::vector<Index> input_shape_of(const M& model) {
  std::vector<Index> shape;
  if constexpr (has_input_shape<M>::value)
    for (const auto e : model.input_shape()) shape.push_back(static_cast<Index>(e));
  (void)model;
  return shape;
}
// A model's declared input shape, checked against its width (an empty shape declares nothing).
inline std::vector<Index> checked_shape(const char* who, std::vector<Index> shape, Index input_dim) {
  Index cells = 1;
  for (Index e : shape) {
    if (e < 1) fail(who, ": every extent of the input shape must be >= 1, got ", e);
    if (cells > std::numeric_limits<Index>::max() / e) fail(who, ": the input shape's size overflows");
    cells *= e;
  }
  if (!shape.empty() && cells != input_dim)
    fail(who, ": the input shape holds ", cells, " elements, the model's input_dim() is ", input_dim);
  return shape;
}
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
