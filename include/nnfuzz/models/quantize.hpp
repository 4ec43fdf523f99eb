// SPDX-License-Identifier: MIT
// nnfuzz: int8 post-training quantization of Mlp<float>: the release candidate of a float model,
// to be fuzzed against it (Int8Pair, targets/mlp_targets.hpp) for regression testing between model versions.
#pragma once

#include "../detail/config.hpp"
#include "../detail/kernels/int8.hpp"
#include "../tolerance.hpp"
#include "mlp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// How codes map to reals: real = scale × (code − zero_point), codes 0..255 (uint8).
struct QuantParams {
  float scale = 1.0f;           ///< > 0
  std::int32_t zero_point = 0;  ///< the code of 0.0, in [0, 255]
};

/// One quantized dense layer: int8 weights with a scale per output column, int32 bias.
struct Int8Layer {
  using Weights = Eigen::Matrix<std::int8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Bias = Eigen::Matrix<std::int32_t, 1, Eigen::Dynamic>;
  Weights weights;         ///< inputs × outputs, codes in [-127, 127]: w ≈ weight_scale[j] × weights(k, j)
  RowVector weight_scale;  ///< 1 × outputs, > 0 (all equal when quantized per tensor)
  Bias bias;               ///< 1 × outputs, at scale input_scale × weight_scale[j] (zero point 0)
  /// The codes of this layer's output, ReLU(out) for a hidden layer; for the last layer used only
  /// when the network quantizes its logits.
  QuantParams output;
};

class Int8Mlp;

/// The reusable state of Int8Mlp::forward(), rows = inputs. A forward pass at an unchanged batch
/// size allocates nothing.
struct Int8Trace {
  using Codes = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Sums = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  /// codes[l]: layer l's input as uint8 codes (codes[0]: the quantized input), B × 4⌈inputs/4⌉;
  /// the columns past the layer's inputs are zero padding.
  std::vector<Codes> codes;
  /// sums[l]: layer l's Σ code × weight code (int32; bias and zero point not yet added),
  /// B × outputs rounded up to 16; the columns past the outputs are padding.
  std::vector<Sums> sums;
  RowMatrix output;  ///< the logits, dequantized to float
  /// The network whose forward() wrote this trace (set by it; read by for_each_tensor(), which
  /// needs its scales): it must still exist when for_each_tensor() is called.
  const Int8Mlp* net = nullptr;
  /// The float logits.
  const RowMatrix& logits() const { return output; }
  /// Visits the network's tensors as reals, with MlpTrace's names, in the order computed (for
  /// localisation, regression/localize.hpp; an Mlp<float> and its int8 build compare tensor by
  /// tensor): "dense1" (layer 1's pre-activation (Σ code × weight code + bias) × input scale ×
  /// weight scale, before it is requantized), "relu1" (its uint8 codes dequantized: scale ×
  /// (code − zero point)), "dense2", …, "logits". Each is computed on the call (B × outputs, no
  /// padding): not for the fuzz loop. Throws std::invalid_argument when no forward() wrote it.
  template <class F>
  void for_each_tensor(F&& f) const;
};

namespace detail {

/// Round half to even (the default rounding mode), as ONNX's QuantizeLinear specifies.
inline double round_even(double v) { return std::nearbyint(v); }

/// uint8 activation parameters for the real range [lo, hi] (ONNX Runtime's asymmetric uint8):
/// the range is widened to contain 0 (so that 0.0 and ReLU's clamp are exact), scale =
/// (hi − lo) / 255 (1 for an all-zero range, or one whose scale would not be a normal float),
/// zero point = round(−lo / scale).
inline QuantParams uint8_params(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  QuantParams p;
  const float scale = static_cast<float>((hi - lo) / 255.0);
  // A range so small that its scale is not a normal float (all-zero, or denormal values) is
  // taken as {0}: codes of a denormal scale would overflow, and the values round to 0 anyway.
  p.scale = scale >= std::numeric_limits<float>::min() && detail::is_finite(scale) ? scale : 1.0f;
  p.zero_point = static_cast<std::int32_t>(std::clamp(round_even(-lo / p.scale), 0.0, 255.0));
  return p;
}

}  // namespace detail

/// Options of quantize_int8().
struct Int8Options {
  /// Calibration of the activation ranges: each tensor's range is [the (100 − p)-th, the p-th]
  /// percentile of its values over the calibration set. 100 (the default): min/max, as TFLite's
  /// converter and ONNX Runtime's MinMax calibrator do; e.g. 99.99 clips rare outliers, giving
  /// finer steps to the rest (ONNX Runtime's Percentile method). In [50, 100]. Below 100, every
  /// calibration value of a tensor is held in memory while it is selected.
  float percentile = 100.0f;
  /// One weight scale per output column (TFLite, ONNX Runtime per_channel=True); false: one
  /// scale per layer (per tensor).
  bool per_channel = true;
  /// Also quantize the logits to uint8 codes (a fully integer model's output tensor, its range
  /// calibrated like the others) before dequantizing them. false: the logits are the int32 sums
  /// dequantized directly (ONNX Runtime's QDQ model with a float output).
  bool quantize_logits = false;
};

/// An int8 multilayer perceptron (ReLU hidden layers, linear logits) computed in integers, as a
/// TFLite / ONNX Runtime statically quantized model (ONNX Runtime's U8S8 format):
///
/// - the input: code = round-half-even(x / scale) + zero point, saturated to [0, 255] (ONNX's
///   QuantizeLinear); a NaN becomes the zero point (0.0);
/// - activations: uint8 codes, asymmetric, one scale and zero point per tensor (QuantParams),
///   ranges calibrated on float activations; hidden layers' ranges are those of ReLU(out), so
///   their zero point is 0 and ReLU is fused into the requantization's clamp;
/// - weights: int8 codes, symmetric (zero point 0), in [-127, 127], one scale per output column;
/// - sums: exact int32 Σ code × weight code; the bias (int32, scale input × weight) and the
///   input's zero point (folded into the bias: −zero_point × Σ weight codes) are added exactly;
/// - requantization to the next layer's codes: round-half-even((sum + bias) × multiplier) +
///   zero point, clamped to [zero point, 255] (ReLU), multiplier = input scale × weight scale /
///   output scale. The product is taken in double and rounds once (ONNX Runtime multiplies in
///   float, TFLite by a 32-bit fixed-point multiplier: either may differ from this by one code
///   where a value lies within rounding of a half);
/// - the logits: (sum + bias) × input scale × weight scale, in double, rounded to float (or, with
///   quantize_logits, requantized to uint8 codes and dequantized).
///
/// The sums are exact integers and every later step is one rounding per value, so each output
/// depends only on its own row: a row gives the same bits alone or in any batch, at any position,
/// and with every kernel (AVX-512 VNNI, AVX2, scalar; chosen at run time), so findings replay.
/// The fan-in of a layer is at most 65536 (the int32 sums cannot overflow).
///
/// Usable as the `Twin` of PairTarget (Int8Pair): sizes(), input_dim(), Trace, forward().
class Int8Mlp {
 public:
  using Layer = Int8Layer;
  using Trace = Int8Trace;

  Int8Mlp() = default;
  /// A network from its input's quantization, its layers and whether the last layer's output is
  /// requantized (see Int8Options::quantize_logits). Throws std::invalid_argument for shapes that
  /// do not chain, scales that are not positive and finite, zero points outside [0, 255], weight
  /// codes outside [-127, 127] or a fan-in over 65536.
  Int8Mlp(QuantParams input, std::vector<Layer> layers, bool quantize_logits = false)
      : input_(input), layers_(std::move(layers)), quantize_logits_(quantize_logits) {
    auto check = [](const QuantParams& p, const char* what, std::size_t l) {
      if (!(p.scale > 0) || !detail::is_finite(p.scale))
        detail::fail("Int8Mlp(): ", what, " scale of layer ", l, " must be positive and finite, got ", p.scale);
      if (p.zero_point < 0 || p.zero_point > 255)
        detail::fail("Int8Mlp(): ", what, " zero point of layer ", l, " must be in [0, 255], got ", p.zero_point);
    };
    if (layers_.empty()) detail::fail("Int8Mlp(): need at least 1 layer, got 0");
    check(input_, "input", 0);
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      const Index k = L.weights.rows(), n = L.weights.cols();
      if (k < 1 || n < 1 || L.weight_scale.size() != n || L.bias.size() != n)
        detail::fail("Int8Mlp(): layer ", l, " has weights ", k, " x ", n, ", ", L.weight_scale.size(),
                     " weight scales and ", L.bias.size(), " biases");
      if (l > 0 && k != layers_[l - 1].weights.cols())
        detail::fail("Int8Mlp(): layer ", l, " takes ", k, " inputs, layer ", l - 1, " gives ",
                     layers_[l - 1].weights.cols());
      if (k > detail::kInt8MaxFanIn)
        detail::fail("Int8Mlp(): layer ", l, " has ", k, " inputs; int32 sums allow at most ", detail::kInt8MaxFanIn);
      for (Index j = 0; j < n; ++j)
        if (!(L.weight_scale(j) > 0) || !detail::is_finite(L.weight_scale(j)))
          detail::fail("Int8Mlp(): weight scale ", j, " of layer ", l, " must be positive and finite, got ",
                       L.weight_scale(j));
      if (L.weights.size() > 0 && L.weights.minCoeff() < -127)
        detail::fail("Int8Mlp(): layer ", l, " has a weight code -128 (symmetric codes are in [-127, 127])");
      if (l + 1 < layers_.size() || quantize_logits_) check(L.output, "output", l);
    }
    prepare();
  }

  /// Layer sizes, input first (those of the float network it was quantized from).
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
  /// The input's quantization.
  const QuantParams& input_params() const { return input_; }
  /// The layers (read-only; build a new Int8Mlp to change them).
  const std::vector<Layer>& layers() const { return layers_; }
  /// Whether the logits are requantized to uint8 codes before they are dequantized.
  bool quantizes_logits() const { return quantize_logits_; }

  /// Runs a batch (rows = inputs) in integer arithmetic; the float logits land in
  /// trace.logits(). Allocates nothing when the batch size is unchanged.
  void forward(const Eigen::Ref<const RowMatrix>& x, Trace& trace) const {
    if (layers_.empty()) detail::fail("Int8Mlp::forward(): the network is empty");
    if (x.cols() != input_dim())
      detail::fail("Int8Mlp::forward(): input has ", x.cols(), " columns, the network takes ", input_dim());
    const std::size_t n = layers_.size();
    const Index b = x.rows();
    trace.codes.resize(n);
    trace.sums.resize(n);
    trace.net = this;
    quantize_input(x, trace.codes[0]);
    const detail::Int8Kernel kernel = detail::best_int8_kernel();
    for (std::size_t l = 0; l < n; ++l) {
      const Packed& p = packed_[l];
      Trace::Sums& s = trace.sums[l];
      s.resize(b, p.n_pad);
      detail::int8_gemm(kernel, trace.codes[l].data(), b, p.quads, p.weights.data(), p.n_pad, s.data());
      if (l + 1 < n)
        requantize(l, s, trace.codes[l + 1]);
      else
        dequantize(l, s, trace.output);
    }
  }

  /// Logits of a batch (convenience; allocates its trace).
  RowMatrix logits(const Eigen::Ref<const RowMatrix>& x) const {
    Trace t;
    forward(x, t);
    return t.logits();
  }

  /// The tolerances of this network's tensors against its float original, in quantisation steps
  /// (regression/localize.hpp): "denseL" and "reluL" within `steps` × the scale of layer L's
  /// output codes, "logits" within `steps` × the logits' scale when they are requantized, else
  /// under `logits` (the logits are not codes).
  TensorTolerances tolerances(double steps = 1, const Tolerance& logits = Tolerance::float32(1e-3, 1e-3)) const {
    TensorTolerances t(logits);
    for (std::size_t l = 0; l + 1 < layers_.size(); ++l) {
      const Tolerance step = Tolerance::int8(layers_[l].output.scale, steps);
      t.set("dense" + std::to_string(l + 1), step).set("relu" + std::to_string(l + 1), step);
    }
    if (quantize_logits_ && !layers_.empty()) t.set("logits", Tolerance::int8(layers_.back().output.scale, steps));
    return t;
  }

  /// Int8Trace::for_each_tensor() of a trace this network's forward() wrote.
  template <class F>
  void visit_tensors(const Trace& t, F&& f) const {
    const std::size_t n = layers_.size();
    if (t.sums.size() != n || t.codes.size() != n)
      detail::fail("Int8Trace::for_each_tensor(): the trace holds ", t.sums.size(), " layers, the network has ", n,
                   " (run forward() first)");
    QuantParams in = input_;
    RowMatrix dense, relu;
    for (std::size_t l = 0; l + 1 < n; ++l) {
      const Layer& L = layers_[l];
      const Index b = t.sums[l].rows(), cols = L.weights.cols();
      dense.resize(b, cols);
      relu.resize(b, cols);
      for (Index r = 0; r < b; ++r)
        for (Index j = 0; j < cols; ++j) {
          const double sum = static_cast<double>(t.sums[l](r, j)) + packed_[l].bias[static_cast<std::size_t>(j)];
          dense(r, j) =
              static_cast<float>(sum * static_cast<double>(in.scale) * static_cast<double>(L.weight_scale(j)));
          relu(r, j) = L.output.scale *
                       static_cast<float>(static_cast<std::int32_t>(t.codes[l + 1](r, j)) - L.output.zero_point);
        }
      f("dense" + std::to_string(l + 1), dense);
      f("relu" + std::to_string(l + 1), relu);
      in = L.output;
    }
    f(std::string("logits"), t.output);
  }

 private:
  // Per layer, what the kernels and the requantization read: weights packed as [quad][column][4]
  // with the columns padded to a multiple of 16, the bias with the input's zero point folded in,
  // and the multipliers of the requantization (hidden) or dequantization (logits).
  struct Packed {
    Index quads = 0, n_pad = 0;
    std::vector<std::int8_t> weights;
    std::vector<double> bias;        // bias − input zero point × Σ_k weight codes (exact integers)
    std::vector<double> multiplier;  // input scale × weight scale [/ output scale]
  };

  void prepare() {
    packed_.assign(layers_.size(), Packed{});
    QuantParams in = input_;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      const Layer& L = layers_[l];
      Packed& p = packed_[l];
      const Index k = L.weights.rows(), n = L.weights.cols();
      p.quads = (k + 3) / 4;
      p.n_pad = (n + 15) / 16 * 16;
      p.weights.assign(static_cast<std::size_t>(p.quads * p.n_pad * 4), 0);
      for (Index i = 0; i < k; ++i)
        for (Index j = 0; j < n; ++j)
          p.weights[static_cast<std::size_t>(((i / 4) * p.n_pad + j) * 4 + i % 4)] = L.weights(i, j);
      const bool requantized = l + 1 < layers_.size() || quantize_logits_;
      p.bias.resize(static_cast<std::size_t>(n));
      p.multiplier.resize(static_cast<std::size_t>(n));
      for (Index j = 0; j < n; ++j) {
        const std::int64_t column = L.weights.col(j).cast<std::int64_t>().sum();
        p.bias[static_cast<std::size_t>(j)] = static_cast<double>(L.bias(j) - in.zero_point * column);
        const double m = static_cast<double>(in.scale) * static_cast<double>(L.weight_scale(j));
        p.multiplier[static_cast<std::size_t>(j)] = requantized ? m / static_cast<double>(L.output.scale) : m;
      }
      in = L.output;
    }
  }

  void quantize_input(const Eigen::Ref<const RowMatrix>& x, Trace::Codes& codes) const {
    const Index k = x.cols(), width = packed_[0].quads * 4;
    codes.resize(x.rows(), width);
    const float scale = input_.scale;
    const float lo = static_cast<float>(-input_.zero_point), hi = static_cast<float>(255 - input_.zero_point);
    const int z = input_.zero_point;
    for (Index r = 0; r < x.rows(); ++r) {
      const float* src = x.data() + r * x.outerStride();
      std::uint8_t* dst = codes.data() + r * width;
      for (Index c = 0; c < k; ++c) {
        // Clamped as floats (a NaN fails both comparisons and becomes 0.0) before the conversion.
        float v = std::nearbyint(src[c] / scale);
        v = v >= lo ? (v <= hi ? v : hi) : (v < lo ? lo : 0.0f);
        dst[c] = static_cast<std::uint8_t>(static_cast<int>(v) + z);
      }
      for (Index c = k; c < width; ++c) dst[c] = 0;
    }
  }

  void requantize(std::size_t l, const Trace::Sums& s, Trace::Codes& codes) const {
    const Packed& p = packed_[l];
    const Packed& next = packed_[l + 1];
    const Index n = layers_[l].weights.cols(), width = next.quads * 4;
    codes.resize(s.rows(), width);
    const int z = layers_[l].output.zero_point;
    const double hi = 255.0 - z;  // ReLU fused: codes below the zero point (0.0) are clamped to it
    // Raw pointers: the uint8 stores could alias the vectors' members, which stops vectorisation.
    const double* bias = p.bias.data();
    const double* multiplier = p.multiplier.data();
    for (Index r = 0; r < s.rows(); ++r) {
      const std::int32_t* acc = s.data() + r * p.n_pad;
      std::uint8_t* dst = codes.data() + r * width;
      for (Index j = 0; j < n; ++j) {
        const double v = std::nearbyint((static_cast<double>(acc[j]) + bias[j]) * multiplier[j]);
        // Clamped as doubles; a NaN (0 × an overflowed multiplier) fails the test and becomes 0.
        dst[j] = static_cast<std::uint8_t>(static_cast<int>(v > 0 ? (v < hi ? v : hi) : 0.0) + z);
      }
      for (Index j = n; j < width; ++j) dst[j] = 0;
    }
  }

  void dequantize(std::size_t l, const Trace::Sums& s, RowMatrix& out) const {
    const Packed& p = packed_[l];
    const Index n = layers_[l].weights.cols();
    out.resize(s.rows(), n);
    const QuantParams q = layers_[l].output;
    const double* bias = p.bias.data();
    const double* multiplier = p.multiplier.data();
    for (Index r = 0; r < s.rows(); ++r) {
      const std::int32_t* acc = s.data() + r * p.n_pad;
      float* dst = out.data() + r * n;
      for (Index j = 0; j < n; ++j) {
        const double v = (static_cast<double>(acc[j]) + bias[j]) * multiplier[j];
        if (quantize_logits_) {
          const double lo = -static_cast<double>(q.zero_point), hi = 255.0 - q.zero_point, c = std::nearbyint(v);
          dst[j] = static_cast<float>(c >= lo ? (c <= hi ? c : hi) : (c < lo ? lo : 0.0)) * q.scale;
        } else {
          dst[j] = static_cast<float>(v);
        }
      }
    }
  }

  QuantParams input_;
  std::vector<Layer> layers_;
  bool quantize_logits_ = false;
  std::vector<Packed> packed_;
};

template <class F>
void Int8Trace::for_each_tensor(F&& f) const {
  if (!net) detail::fail("Int8Trace::for_each_tensor(): no Int8Mlp::forward() wrote this trace");
  net->visit_tensors(*this, std::forward<F>(f));
}

namespace detail {

// The calibrated range of one tensor: min/max, or the percentiles (values gathered, then
// selected).
class RangeStat {
 public:
  explicit RangeStat(float percentile) : percentile_(percentile) {}
  void add(const RowMatrix& m) {
    if (m.size() == 0) return;
    if (percentile_ >= 100.0f) {
      lo_ = std::min(lo_, static_cast<double>(m.minCoeff()));
      hi_ = std::max(hi_, static_cast<double>(m.maxCoeff()));
    } else {
      values_.insert(values_.end(), m.data(), m.data() + m.size());
    }
  }
  QuantParams params() {
    if (percentile_ < 100.0f && !values_.empty()) {
      const double n = static_cast<double>(values_.size());
      const double p = static_cast<double>(percentile_) / 100.0;
      const auto hi_at = static_cast<std::size_t>(std::clamp(std::ceil(p * n) - 1.0, 0.0, n - 1.0));
      const auto lo_at = static_cast<std::size_t>(std::clamp(std::floor((1.0 - p) * n), 0.0, n - 1.0));
      std::nth_element(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(hi_at), values_.end());
      hi_ = values_[hi_at];
      std::nth_element(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(lo_at), values_.end());
      lo_ = values_[lo_at];
    }
    return uint8_params(lo_, hi_);
  }

 private:
  float percentile_;
  double lo_ = 0, hi_ = 0;
  std::vector<float> values_;
};

}  // namespace detail

/// Quantizes a float network to int8 after training (post-training static quantization, as
/// TFLite's converter and ONNX Runtime's quantize_static do; see Int8Mlp for the arithmetic).
///
/// Weights: w_code = round-half-even(w / scale), scale = max|w| / 127 per output column (per
/// layer when !o.per_channel; an all-zero column gets 1/127). Biases: round-half-even(b /
/// (input scale × weight scale)), saturated to int32. Activations: the float network is run on
/// `calibration` (rows = inputs: a few hundred training inputs; ranges outside them saturate)
/// and each tensor's range — the input, every hidden ReLU output, the logits with
/// o.quantize_logits — gives its uint8 scale and zero point (o.percentile: min/max or
/// percentiles). Deterministic: the same network and calibration give the same bits.
///
/// Throws std::invalid_argument for calibration of the wrong width, empty calibration, a
/// non-finite calibration value, weight or bias, a calibration row that drives an activation
/// (or a quantized logit) to infinity or NaN (naming the row and the layer), a percentile
/// outside [50, 100] or a fan-in over 65536. Columns of denormal or zero weights are quantized
/// as all-zero (scale 1/127).
inline Int8Mlp quantize_int8(const Mlp<float>& net, const Eigen::Ref<const RowMatrix>& calibration,
                             const Int8Options& o = {}) {
  const auto& layers = net.layers();
  if (layers.empty()) detail::fail("quantize_int8(): the network has no layers");
  if (calibration.cols() != net.input_dim())
    detail::fail("quantize_int8(): 'calibration' has ", calibration.cols(), " columns, the network takes ",
                 net.input_dim());
  if (calibration.rows() == 0)
    detail::fail("quantize_int8(): 'calibration' is empty (0 rows); pass a few hundred training inputs");
  if (!(o.percentile >= 50.0f && o.percentile <= 100.0f))
    detail::fail("quantize_int8(): option 'percentile' must be in [50, 100], got ", o.percentile);
  for (Index r = 0; r < calibration.rows(); ++r)
    for (Index c = 0; c < calibration.cols(); ++c)
      if (!detail::is_finite(calibration(r, c)))
        detail::fail("quantize_int8(): 'calibration' has a non-finite value (", calibration(r, c), ") at row ", r,
                     ", column ", c);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& L = layers[l];
    for (Index i = 0; i < L.weights.rows(); ++i)
      for (Index j = 0; j < L.weights.cols(); ++j)
        if (!detail::is_finite(L.weights(i, j)))
          detail::fail("quantize_int8(): weight (", i, ", ", j, ") of layer ", l, " is not finite (", L.weights(i, j),
                       ")");
    for (Index j = 0; j < L.bias.size(); ++j)
      if (!detail::is_finite(L.bias(j)))
        detail::fail("quantize_int8(): bias ", j, " of layer ", l, " is not finite (", L.bias(j), ")");
    if (L.weights.rows() > detail::kInt8MaxFanIn)
      detail::fail("quantize_int8(): layer ", l, " has ", L.weights.rows(), " inputs; int32 sums allow at most ",
                   detail::kInt8MaxFanIn);
  }

  // Calibration: the float activations of every tensor, a chunk of rows at a time.
  const std::size_t n = layers.size();
  std::vector<detail::RangeStat> stats(n + 1, detail::RangeStat(o.percentile));
  MlpTrace<float> t;
  constexpr Index kChunk = 256;
  for (Index first = 0; first < calibration.rows(); first += kChunk) {
    const Index rows = std::min(kChunk, calibration.rows() - first);
    net.forward(calibration.middleRows(first, rows), t);
    // A finite row may still overflow a layer (float activations past 3.4e38): its range would
    // be infinite, and the layer's scale meaningless. Refused, naming the layer and the row.
    for (std::size_t l = 0; l < n; ++l) {
      if (l + 1 == n && !o.quantize_logits) break;
      const auto& a = l + 1 < n ? t.post[l] : t.pre.back();
      for (Index r = 0; r < a.rows(); ++r)
        for (Index c = 0; c < a.cols(); ++c)
          if (!detail::is_finite(a(r, c)))
            detail::fail("quantize_int8(): calibration row ", first + r, " drives ",
                         l + 1 < n ? "the activation" : "the logit", " ", c, " of layer ", l, " to ", a(r, c),
                         " (float overflow): no finite range to calibrate; drop or rescale that row");
    }
    stats[0].add(t.input);
    for (std::size_t l = 0; l + 1 < n; ++l) stats[l + 1].add(t.post[l]);
    if (o.quantize_logits) stats[n].add(t.pre.back());
  }

  const QuantParams input = stats[0].params();
  QuantParams in = input;
  std::vector<Int8Layer> q(n);
  for (std::size_t l = 0; l < n; ++l) {
    const auto& L = layers[l];
    Int8Layer& Q = q[l];
    const Index cols = L.weights.cols();
    Q.weight_scale.resize(cols);
    const float tensor_max = L.weights.cwiseAbs().maxCoeff();
    for (Index j = 0; j < cols; ++j) {
      const float m = o.per_channel ? L.weights.col(j).cwiseAbs().maxCoeff() : tensor_max;
      // A column whose scale would not be a normal float (all zero, or weights ~1e-38 and
      // below) is quantized as all-zero: scale 1/127, codes 0 — never a zero scale, never 0/0.
      const float scale = static_cast<float>(static_cast<double>(m) / 127.0);
      Q.weight_scale(j) = scale >= std::numeric_limits<float>::min() ? scale : 1.0f / 127.0f;
    }
    Q.weights.resize(L.weights.rows(), cols);
    for (Index i = 0; i < L.weights.rows(); ++i)
      for (Index j = 0; j < cols; ++j) {
        const double c = detail::round_even(static_cast<double>(L.weights(i, j)) / Q.weight_scale(j));
        Q.weights(i, j) = static_cast<std::int8_t>(std::clamp(c, -127.0, 127.0));
      }
    Q.bias.resize(cols);
    for (Index j = 0; j < cols; ++j) {
      const double step = static_cast<double>(in.scale) * static_cast<double>(Q.weight_scale(j));
      const double c = detail::round_even(static_cast<double>(L.bias(j)) / step);
      constexpr double kMax = std::numeric_limits<std::int32_t>::max();
      Q.bias(j) = static_cast<std::int32_t>(std::clamp(c, -kMax, kMax));
    }
    if (l + 1 < n)
      Q.output = stats[l + 1].params();
    else if (o.quantize_logits)
      Q.output = stats[n].params();
    in = Q.output;
  }
  return Int8Mlp(input, std::move(q), o.quantize_logits);
}

}  // namespace nnfuzz
