// SPDX-License-Identifier: MIT
// nnfuzz: dense ReLU networks over Eigen, in float, Eigen::half arithmetic, or half storage.
#pragma once

#include "../detail/config.hpp"
#include "../detail/kernels/dense.hpp"
#include "../detail/kernels/half.hpp"
#include "../rng.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace nnfuzz {

/// A layer of a dense network: out = in · weights + bias (weights: inputs × outputs).
template <typename Scalar>
struct DenseLayer {
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Vector = Eigen::Matrix<Scalar, 1, Eigen::Dynamic>;
  Matrix weights;  ///< inputs × outputs
  Vector bias;     ///< 1 × outputs
};

/// Every intermediate tensor of a forward pass, rows = inputs. Reused across calls: a forward
/// pass at an unchanged batch size allocates nothing.
template <typename Scalar>
struct MlpTrace {
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix input;                    ///< the input, converted to Scalar
  std::vector<Matrix> pre;         ///< pre[l]: layer l's sums (pre-activation); the last is the logits
  std::vector<Matrix> post;        ///< post[l]: ReLU(pre[l]) for hidden layers (none for the last)
  std::vector<RowMatrix> scratch;  ///< working buffers of the float16 kernel (unused for float)
  /// The logits (the last layer's pre-activation).
  const Matrix& logits() const { return pre.back(); }
  /// Visits every tensor in the order computed, as f(name, matrix): "dense1", "relu1", "dense2",
  /// "relu2", …, "logits" (layer l's pre- and post-activation; the names NanTarget uses), for
  /// localisation (regression/localize.hpp). The input is not visited.
  template <class F>
  void for_each_tensor(F&& f) const {
    for (std::size_t l = 0; l + 1 < pre.size(); ++l) {
      f("dense" + std::to_string(l + 1), pre[l]);
      f("relu" + std::to_string(l + 1), post[l]);
    }
    if (!pre.empty()) f(std::string("logits"), pre.back());
  }
};

/// A multilayer perceptron: ReLU hidden layers, linear logits, evaluated a batch at a time.
///
/// `Scalar` is float or Eigen::half. With Eigen::half every product and every partial sum is
/// rounded to float16, in a fixed order per output (detail::half_arithmetic_dense): what
/// TensorFuzz's float16 TensorFlow model computed, and independent of the batch a row is in
/// (Eigen's own blocked half GEMM is not: its summation order changes with the batch size, so a
/// disagreement found in a batch of 100 may vanish when the input is run alone).
/// `half_storage()` gives the other float16 semantics: float arithmetic on half-rounded weights
/// and activations. Compile with F16C (-mf16c or -march=native) for speed.
template <typename Scalar>
class Mlp {
 public:
  using Layer = DenseLayer<Scalar>;
  using Matrix = typename Layer::Matrix;
  using Trace = MlpTrace<Scalar>;

  Mlp() = default;
  /// A network of the given layer sizes (input first, logits last), weights and biases zero.
  explicit Mlp(const std::vector<Index>& sizes) {
    if (sizes.size() < 2) detail::fail("Mlp(): need at least 2 layer sizes (input and output), got ", sizes.size());
    for (std::size_t l = 0; l < sizes.size(); ++l)
      if (sizes[l] < 1 || sizes[l] > (Index{1} << 24))
        detail::fail("Mlp(): layer size ", l, " is ", sizes[l], " (must be in [1, 2^24])");
    for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
      Layer layer;
      layer.weights = Matrix::Zero(sizes[l], sizes[l + 1]);
      layer.bias = Layer::Vector::Zero(sizes[l + 1]);
      layers_.push_back(std::move(layer));
    }
    set_half_storage(false);
  }

  /// Layer sizes, input first.
  std::vector<Index> sizes() const {
    std::vector<Index> s;
    if (layers_.empty()) return s;
    s.push_back(layers_.front().weights.rows());
    for (const auto& l : layers_) s.push_back(l.weights.cols());
    return s;
  }
  /// Floats per input.
  Index input_dim() const { return layers_.empty() ? 0 : layers_.front().weights.rows(); }
  /// Number of logits.
  Index output_dim() const { return layers_.empty() ? 0 : layers_.back().weights.cols(); }
  /// The layers (read-only).
  const std::vector<Layer>& layers() const { return layers_; }
  /// The layers, for training and for loading weights. Shapes must stay consistent.
  std::vector<Layer>& layers() { return layers_; }
  /// Number of trainable parameters.
  Index parameter_count() const {
    Index n = 0;
    for (const auto& l : layers_) n += l.weights.size() + l.bias.size();
    return n;
  }

  /// When on, each layer's output (and the input) is rounded to float16 after it is computed in
  /// Scalar: the half-storage semantics. Weights must already be half-rounded (half_storage()).
  void set_half_storage(bool on) { round_to_half_ = on; }
  /// Whether activations are rounded to float16.
  bool rounds_activations_to_half() const { return round_to_half_; }

  /// Runs a batch (rows = inputs) and fills every intermediate tensor of `trace`.
  void forward(const Eigen::Ref<const RowMatrix>& x, Trace& trace) const {
    if (x.cols() != input_dim())
      detail::fail("Mlp::forward(): input has ", x.cols(), " columns, the network takes ", input_dim());
    const std::size_t n = layers_.size();
    trace.pre.resize(n);
    trace.post.resize(n - 1);
    trace.input = x.template cast<Scalar>();
    round(trace.input);
    if constexpr (std::is_same<Scalar, Eigen::half>::value) {
      forward_half(trace);
      return;
    }
    for (std::size_t l = 0; l < n; ++l) {
      const Matrix& in = l == 0 ? trace.input : trace.post[l - 1];
      Matrix& z = trace.pre[l];
      z.resize(in.rows(), layers_[l].weights.cols());
      dense(in, layers_[l].weights, z);
      z.rowwise() += layers_[l].bias;
      round(z);
      if (l + 1 < n) trace.post[l] = z.cwiseMax(Scalar(0));
    }
  }

  /// Logits of a batch as float (convenience; allocates its trace).
  RowMatrix logits(const Eigen::Ref<const RowMatrix>& x) const {
    Trace t;
    forward(x, t);
    return t.logits().template cast<float>();
  }

  /// The same network in another scalar type (weights and biases rounded to nearest).
  template <typename To>
  Mlp<To> cast() const {
    Mlp<To> m;
    for (const auto& l : layers_) {
      DenseLayer<To> c;
      c.weights = l.weights.template cast<To>();
      c.bias = l.bias.template cast<To>();
      m.layers().push_back(std::move(c));
    }
    return m;
  }

  /// The half-arithmetic twin: every weight, input and operation in Eigen::half.
  Mlp<Eigen::half> half_arithmetic() const { return cast<Eigen::half>(); }

  /// The half-storage twin: weights and biases rounded to float16, sums in float32, every
  /// layer's output (and the input) rounded to float16.
  Mlp<float> half_storage() const {
    Mlp<float> m = cast<Eigen::half>().template cast<float>();
    m.set_half_storage(true);
    return m;
  }

  /// Fills every weight with U(-limit, limit) and every bias with zero (TensorFuzz's NaN model:
  /// limit 0.25).
  void init_uniform(float limit, std::uint64_t seed) {
    Rng rng(seed);
    for (auto& l : layers_) {
      Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> w(l.weights.rows(), l.weights.cols());
      rng.fill_uniform(w.data(), w.size(), -limit, limit);
      l.weights = w.template cast<Scalar>();
      l.bias.setZero();
    }
  }
  /// Fills every weight with a normal of deviation sigma truncated at ±2 sigma (redrawn, as
  /// TensorFlow's truncated_normal) and every bias with zero (TensorFuzz's quantization model:
  /// sigma 0.01). sigma <= 0 selects He initialisation, sqrt(2 / fan_in).
  void init_truncated_normal(float sigma, std::uint64_t seed) {
    Rng rng(seed);
    for (auto& l : layers_) {
      const float s = sigma > 0 ? sigma : std::sqrt(2.0f / static_cast<float>(l.weights.rows()));
      Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> w(l.weights.rows(), l.weights.cols());
      float v[32];
      for (Index i = 0; i < w.size(); ++i) {
        do {
          rng.fill_normal(v, 1);
        } while (std::abs(v[0]) > 2.0f);
        w.data()[i] = s * v[0];
      }
      l.weights = w.template cast<Scalar>();
      l.bias.setZero();
    }
  }

 private:
  // z = in · w for float (detail/kernels/dense.hpp: no copy of the weights, each output summed
  // over k in order, so batch-invariant): the AVX-512 kernel under the `avx512` kernel choice
  // (the same bits as AVX2, 16 lanes wide), the AVX2 + FMA kernel unless the kernel choice is
  // generic or the CPU lacks AVX2 + FMA; else the SSE2 kernel (no FMA: the same bits on every
  // x86-64 CPU for one build, where Eigen's GEMM follows the cache sizes the CPU reports); Eigen's
  // GEMM off x86.
  static void dense(const Matrix& in, const Matrix& w, Matrix& z) {
    if constexpr (std::is_same<Scalar, float>::value) {
#if defined(NNFUZZ_X86_DISPATCH)
      const NoiseKernel kernel = detail::active_noise_kernel();
      if (kernel == NoiseKernel::avx512) {  // active only on a CPU with AVX-512F + DQ
        detail::dense_avx512(in.data(), in.rows(), in.cols(), w.data(), w.rows(), w.cols(), w.cols(), z.data(),
                             z.cols());
        return;
      }
      if (kernel != NoiseKernel::generic && detail::cpu_has_avx2_fma()) {
        detail::dense_avx2(in.data(), in.rows(), in.cols(), w.data(), w.rows(), w.cols(), w.cols(), z.data(), z.cols());
        return;
      }
#endif
#if defined(__SSE2__) || defined(_M_X64)
      detail::dense_sse2(in.data(), in.rows(), in.cols(), w.data(), w.rows(), w.cols(), w.cols(), z.data(), z.cols());
      return;
#endif
    }
    z.noalias() = in * w;
  }

  // float16 arithmetic through the batch-invariant kernel; buffers hold float16 values as float.
  void forward_half(Trace& trace) const {
    const std::size_t n = layers_.size();
    trace.scratch.resize(2 * n + 2);
    RowMatrix& b = trace.scratch[2 * n + 1];
    RowMatrix& in0 = trace.scratch[2 * n];
    in0 = trace.input.template cast<float>();
    for (std::size_t l = 0; l < n; ++l) {
      RowMatrix& w = trace.scratch[2 * l];
      RowMatrix& z = trace.scratch[2 * l + 1];
      w = layers_[l].weights.template cast<float>();
      b = layers_[l].bias.template cast<float>();
      const RowMatrix& in = l == 0 ? in0 : trace.scratch[2 * l - 1];
      z.resize(in.rows(), w.cols());
      detail::half_arithmetic_dense(in.data(), in.rows(), in.cols(), w.data(), w.cols(), b.data(), z.data());
      trace.pre[l] = z.template cast<Scalar>();
      if (l + 1 < n) {
        z = z.cwiseMax(0.0f);  // ReLU is exact in float16
        trace.post[l] = z.template cast<Scalar>();
      }
    }
  }
  void round(Matrix& m) const {
    if (round_to_half_) m = m.template cast<Eigen::half>().template cast<Scalar>();
  }
  std::vector<Layer> layers_;
  bool round_to_half_ = false;
};

}  // namespace nnfuzz
