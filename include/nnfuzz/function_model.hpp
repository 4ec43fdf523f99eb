// SPDX-License-Identifier: MIT
// nnfuzz: a ready Model for the commonest case, a user's forward function over float rows.
//
//     void my_forward(const float* in, nnfuzz::Index rows, float* out);  // rows x 784 in, rows x 10 out
//     auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::FunctionModel(my_forward, 784, 10), options);
//     nnfuzz::FuzzResult r = fuzzer.run(seed_images);
//
// With a hidden layer for coverage: a function `void(const float* in, Index rows, float* out,
// float* hidden)` and its hidden width as a fourth argument.
#pragma once

#include "detail/config.hpp"
#include "feedback.hpp"

#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// A Model from a forward function: `forward(in, rows, out)` reads `rows` inputs of input_dim()
/// floats (row-major, contiguous) and writes `rows` outputs of output_dim() floats; or, with a
/// hidden width, `forward(in, rows, out, hidden)` also writes `rows` × hidden_dim() floats of a
/// hidden layer. Output::logits holds what it wrote (VersionPair and DisagreementObjective read
/// it), Output::coverage is the hidden layer when there is one and the output otherwise, and
/// NonFiniteObjective sees both ("output", "hidden"). The buffers are sized once per batch size:
/// no allocation per batch at a steady batch size. `Forward` is any callable (a function, a
/// lambda, a functor holding the user's engine); it is called from one thread at a time.
template <typename Forward>
class FunctionModel {
  static constexpr bool kHidden = std::is_invocable<Forward&, const float*, Index, float*, float*>::value;
  static_assert(kHidden || std::is_invocable<Forward&, const float*, Index, float*>::value,
                "nnfuzz: FunctionModel needs a forward function callable as `void(const float* in, nnfuzz::Index "
                "rows, float* out)` or, with a hidden layer, `void(const float* in, nnfuzz::Index rows, float* out, "
                "float* hidden)` (see function_model.hpp)");

 public:
  /// The reusable output of evaluate(), rows = inputs.
  struct Output {
    RowMatrix logits;    ///< rows × output_dim(): what the function wrote to `out`
    RowMatrix hidden;    ///< rows × hidden_dim() (empty without a hidden layer)
    RowMatrix coverage;  ///< the hidden layer, or the output without one
    /// Every tensor, for NonFiniteObjective.
    template <class F>
    void for_each_tensor(F&& f) const {
      if (hidden.cols() > 0) f("hidden", hidden);
      f("output", logits);
    }
  };

  /// `forward`, its input and output widths (> 0), and the hidden width (> 0 exactly when
  /// `forward` takes a fourth argument). Throws std::invalid_argument for other widths.
  FunctionModel(Forward fn, Index inputs, Index outputs, Index hidden = 0)
      : forward_(std::move(fn)), input_dim_(inputs), output_dim_(outputs), hidden_dim_(hidden) {
    if (inputs < 1 || outputs < 1)
      detail::fail("FunctionModel(): 'input_dim' and 'output_dim' must be >= 1, got ", inputs, " and ", outputs);
    if (kHidden && hidden < 1)
      detail::fail(
          "FunctionModel(): the forward function writes a hidden layer: give its width 'hidden_dim' (>= 1), got ",
          hidden);
    if (!kHidden && hidden != 0)
      detail::fail("FunctionModel(): 'hidden_dim' is ", hidden,
                   " but the forward function takes no hidden buffer (void(const float*, Index, float*))");
  }

  /// Floats per input.
  Index input_dim() const { return input_dim_; }
  /// Declares the shape of one input without the batch axis, e.g. {1, 28, 28} (channels first) for
  /// MNIST: the default mutator then adds Square patches (DefaultMutator). Its product must be
  /// input_dim(); an empty shape declares nothing. Throws std::invalid_argument otherwise.
  void set_input_shape(std::vector<Index> shape) {
    shape_ = detail::checked_shape("FunctionModel::set_input_shape()", std::move(shape), input_dim_);
  }
  /// The declared input shape (empty: none).
  const std::vector<Index>& input_shape() const { return shape_; }
  /// Floats per output.
  Index output_dim() const { return output_dim_; }
  /// Floats of the hidden layer per input (0: none).
  Index hidden_dim() const { return hidden_dim_; }
  /// The forward function.
  Forward& forward() { return forward_; }

  /// Runs the function on the batch (contiguous rows: the Fuzzer always passes such a batch; a
  /// strided one is refused).
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    if (batch.cols() != input_dim_)
      detail::fail("FunctionModel::evaluate(): the batch has ", batch.cols(), " columns, the model takes ", input_dim_);
    if (batch.rows() > 1 && batch.outerStride() != input_dim_)
      detail::fail("FunctionModel::evaluate(): the batch's rows are not contiguous (stride ", batch.outerStride(),
                   ", width ", input_dim_, ")");
    const Index n = batch.rows();
    out.logits.resize(n, output_dim_);
    if constexpr (kHidden) {
      out.hidden.resize(n, hidden_dim_);
      forward_(batch.data(), n, out.logits.data(), out.hidden.data());
      out.coverage = out.hidden;
    } else {
      forward_(batch.data(), n, out.logits.data());
      out.coverage = out.logits;
    }
  }

 private:
  Forward forward_;
  Index input_dim_, output_dim_, hidden_dim_;
  std::vector<Index> shape_;
};

}  // namespace nnfuzz
