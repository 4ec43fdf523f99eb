// SPDX-License-Identifier: MIT
// nnfuzz: ready-made fuzz targets (Model policies) around Mlp, for TensorFuzz's two experiments.
#pragma once

#include "../detail/config.hpp"
#include "../feedback.hpp"
#include "../models/mlp.hpp"
#include "../models/quantize.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// What a classifier target reports as its coverage vector.
enum class CoverageSignal {
  logits,          ///< the raw logits (C numbers per input)
  sum_abs_logits,  ///< TensorFuzz's NaN-experiment coverage: one number, Σ|logit|
  /// Value profile (after libFuzzer's -use_value_profile, which rewards getting closer to a
  /// comparison's operand): Σ|logit| plus the two quantities whose limits make the unsafe softmax
  /// fail, the largest logit (exp overflows past ~88) and the logit spread max − min (exp of the
  /// smallest underflows relative to the sum past ~104). Three numbers: several frontiers.
  value_profile,
  /// The post-activations (ReLU outputs) of every hidden layer, concatenated in order: what the
  /// neuron criteria (neuron.hpp: NC, KMNC, NBC, SNAC, TKNC) and NLC (nlc.hpp) count, as
  /// DeepGauge counts hidden neurons. neuron_layers() gives the widths. No logits.
  neurons,
  /// `neurons` followed by the logits: for combining a neuron criterion on the hidden layers with
  /// L2 novelty on the logits (coverage/combine.hpp: Columns).
  neurons_and_logits,
};

namespace detail {
// Hidden post-activations, concatenated (then the logits, if asked), into `out` (B × neurons).
// Resized only when the batch size changes.
inline void concat_neurons(const MlpTrace<float>& trace, bool with_logits, RowMatrix& out) {
  const Index rows = trace.logits().rows();
  Index cols = with_logits ? trace.logits().cols() : 0;
  for (const auto& p : trace.post) cols += p.cols();
  out.resize(rows, cols);
  Index c = 0;
  for (const auto& p : trace.post) {
    out.middleCols(c, p.cols()) = p;
    c += p.cols();
  }
  if (with_logits) out.middleCols(c, trace.logits().cols()) = trace.logits();
}
}  // namespace detail

/// The layer widths of a target's coverage vector under `signal`, to pass to the coverage
/// criteria: the hidden layers' widths for CoverageSignal::neurons (784-200-100-10: {200, 100}),
/// then the number of logits for neurons_and_logits ({200, 100, 10}); {classes} for logits;
/// {1} for sum_abs_logits; {3} for value_profile (NanTarget's; PairTarget reports Σ|logits|
/// then, one column). Throws for `neurons` on a network without a hidden layer.
inline std::vector<Index> neuron_layers(const Mlp<float>& net, CoverageSignal signal = CoverageSignal::neurons) {
  const std::vector<Index> sizes = net.sizes();
  if (sizes.size() < 2) detail::fail("neuron_layers(): the network has no layers");
  if (sizes.size() < 3 && signal == CoverageSignal::neurons)
    detail::fail("neuron_layers(): the network has no hidden layer, so CoverageSignal::neurons would be empty");
  switch (signal) {
    case CoverageSignal::logits:
      return {net.output_dim()};
    case CoverageSignal::sum_abs_logits:
      return {1};
    case CoverageSignal::value_profile:
      return {3};
    case CoverageSignal::neurons:
      return std::vector<Index>(sizes.begin() + 1, sizes.end() - 1);
    case CoverageSignal::neurons_and_logits:
      break;
  }
  return std::vector<Index>(sizes.begin() + 1, sizes.end());
}

/// Fuzz target for the NaN experiment: a float classifier with TensorFuzz's "unsafe" softmax
/// p = exp(l) / Σ exp(l) and cross entropy −Σ y·log(p), neither stabilised.
///
/// Output tensors (for NonFiniteObjective, in the order computed): each layer's pre- and
/// post-activation ("dense1", "relu1", …), "logits", "softmax", "cross_entropy". The label y is
/// the network's own prediction (the fuzzer carries no labels); whether −Σ y·log(p) is finite
/// does not depend on which one-hot y is used, since 0·log(0) is already NaN.
/// Keep TensorFuzz's formula: computed as −log p[label] instead, most NaNs disappear.
class NanTarget {
 public:
  /// The reusable output of evaluate().
  struct Output {
    MlpTrace<float> trace;    ///< every layer
    RowMatrix softmax;        ///< exp(l) / Σ exp(l), unstabilised
    RowMatrix cross_entropy;  ///< B × 1: −Σ y·log(p) with y = one-hot of the prediction
    RowMatrix coverage;       ///< per CoverageSignal
    /// Visits every tensor in the order computed.
    template <class F>
    void for_each_tensor(F&& f) const {
      static const char* const names[] = {"dense1", "relu1", "dense2", "relu2", "dense3", "relu3", "dense4", "relu4"};
      const std::size_t hidden = trace.post.size();
      for (std::size_t l = 0; l < hidden; ++l) {
        f(l < 4 ? names[2 * l] : "dense", trace.pre[l]);
        f(l < 4 ? names[2 * l + 1] : "relu", trace.post[l]);
      }
      f("logits", trace.pre.back());
      f("softmax", softmax);
      f("cross_entropy", cross_entropy);
    }
  };

  /// Wraps a trained float network; `signal` picks the coverage vector.
  explicit NanTarget(Mlp<float> net, CoverageSignal signal = CoverageSignal::sum_abs_logits)
      : net_(std::move(net)), signal_(signal) {}

  /// Floats per input.
  Index input_dim() const { return net_.input_dim(); }
  /// Declares the shape of one input without the batch axis, e.g. {1, 28, 28} (channels first) for
  /// MNIST: the default mutator then adds Square patches (DefaultMutator). Its product must be
  /// input_dim(); an empty shape declares nothing. Throws std::invalid_argument otherwise.
  void set_input_shape(std::vector<Index> shape) {
    shape_ = detail::checked_shape("NanTarget::set_input_shape()", std::move(shape), input_dim());
  }
  /// The declared input shape (empty: none).
  const std::vector<Index>& input_shape() const { return shape_; }
  /// Runs a batch and computes softmax, loss and coverage.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    net_.forward(batch, out.trace);
    const RowMatrix& l = out.trace.logits();
    out.softmax = l.array().exp().matrix();
    out.softmax.array().colwise() /= out.softmax.array().rowwise().sum();
    out.cross_entropy.resize(l.rows(), 1);
    for (Index r = 0; r < l.rows(); ++r) {
      Index label = 0;
      l.row(r).maxCoeff(&label);
      float ce = 0;
      for (Index c = 0; c < l.cols(); ++c) ce -= (c == label ? 1.0f : 0.0f) * std::log(out.softmax(r, c));
      out.cross_entropy(r, 0) = ce;
    }
    if (signal_ == CoverageSignal::logits) {
      out.coverage = l;
    } else if (signal_ == CoverageSignal::neurons || signal_ == CoverageSignal::neurons_and_logits) {
      detail::concat_neurons(out.trace, signal_ == CoverageSignal::neurons_and_logits, out.coverage);
    } else if (signal_ == CoverageSignal::sum_abs_logits) {
      out.coverage = l.cwiseAbs().rowwise().sum();
    } else {
      out.coverage.resize(l.rows(), 3);
      out.coverage.col(0) = l.cwiseAbs().rowwise().sum();
      out.coverage.col(1) = l.rowwise().maxCoeff();
      out.coverage.col(2) = l.rowwise().maxCoeff() - l.rowwise().minCoeff();
    }
  }
  /// The network.
  const Mlp<float>& net() const { return net_; }
  /// The coverage signal.
  CoverageSignal signal() const { return signal_; }

 private:
  Mlp<float> net_;
  CoverageSignal signal_;
  std::vector<Index> shape_;
};

/// Fuzz target for the quantization experiment: a float network (the reference) and a float16
/// or int8 twin (the candidate) on the same batch. Output members `reference` and `candidate`
/// hold the two logits (float; half values converted exactly), as DisagreementObjective expects;
/// coverage is the reference logits, Σ|logits| (for sum_abs_logits and value_profile), or the
/// reference network's hidden neurons (neurons, neurons_and_logits).
///
/// `Twin` is Mlp<Eigen::half> (half arithmetic), Mlp<float> built by Mlp::half_storage(), or
/// Int8Mlp (quantize.hpp: Int8Pair); any network with sizes(), a `Trace` with logits() and
/// forward(x, trace) will do.
template <typename Twin>
class PairTarget {
 public:
  /// The reusable output of evaluate().
  struct Output {
    MlpTrace<float> reference_trace;
    typename Twin::Trace candidate_trace;
    RowMatrix reference;  ///< float logits
    RowMatrix candidate;  ///< twin's logits, as float
    RowMatrix coverage;   ///< per CoverageSignal, from the reference
    /// Visits both logits (NonFiniteObjective works on a pair too).
    template <class F>
    void for_each_tensor(F&& f) const {
      f("reference_logits", reference);
      f("candidate_logits", candidate);
    }
  };

  /// A pair of networks of the same shape.
  PairTarget(Mlp<float> reference, Twin candidate, CoverageSignal signal = CoverageSignal::logits)
      : reference_(std::move(reference)), candidate_(std::move(candidate)), signal_(signal) {
    if (reference_.sizes() != candidate_.sizes())
      detail::fail("PairTarget(): the two networks have different layer sizes");
  }
  /// Floats per input.
  Index input_dim() const { return reference_.input_dim(); }
  /// Declares the shape of one input (see NanTarget::set_input_shape()).
  void set_input_shape(std::vector<Index> shape) {
    shape_ = detail::checked_shape("PairTarget::set_input_shape()", std::move(shape), input_dim());
  }
  /// The declared input shape (empty: none).
  const std::vector<Index>& input_shape() const { return shape_; }
  /// Runs both networks on the batch.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    reference_.forward(batch, out.reference_trace);
    candidate_.forward(batch, out.candidate_trace);
    out.reference = out.reference_trace.logits();
    out.candidate = out.candidate_trace.logits().template cast<float>();
    if (signal_ == CoverageSignal::logits)
      out.coverage = out.reference;
    else if (signal_ == CoverageSignal::neurons || signal_ == CoverageSignal::neurons_and_logits)
      detail::concat_neurons(out.reference_trace, signal_ == CoverageSignal::neurons_and_logits, out.coverage);
    else
      out.coverage = out.reference.cwiseAbs().rowwise().sum();
  }
  /// The float network.
  const Mlp<float>& reference() const { return reference_; }
  /// The twin (float16 or int8).
  const Twin& candidate() const { return candidate_; }

 private:
  Mlp<float> reference_;
  Twin candidate_;
  CoverageSignal signal_;
  std::vector<Index> shape_;
};

/// Pair of a float network and its half-arithmetic twin (TensorFuzz's float16 model).
using HalfArithmeticPair = PairTarget<Mlp<Eigen::half>>;
/// Pair of a float network and its half-storage twin (float16 weights and activations, float sums).
using HalfStoragePair = PairTarget<Mlp<float>>;

/// Builds the pair for a precision: half_arithmetic or half_storage.
inline HalfArithmeticPair make_half_arithmetic_pair(const Mlp<float>& net, CoverageSignal s = CoverageSignal::logits) {
  return HalfArithmeticPair(net, net.half_arithmetic(), s);
}
/// Builds the half-storage pair.
inline HalfStoragePair make_half_storage_pair(const Mlp<float>& net, CoverageSignal s = CoverageSignal::logits) {
  return HalfStoragePair(net, net.half_storage(), s);
}

/// Pair of a float network and its int8 quantization (the release candidate): fuzz it with
/// DisagreementObjective to find inputs where the two classify differently.
using Int8Pair = PairTarget<Int8Mlp>;

/// Builds the int8 pair: `net` against quantize_int8(net, calibration, o).
inline Int8Pair make_int8_pair(const Mlp<float>& net, const Eigen::Ref<const RowMatrix>& calibration,
                               const Int8Options& o = {}, CoverageSignal s = CoverageSignal::logits) {
  return Int8Pair(net, quantize_int8(net, calibration, o), s);
}

}  // namespace nnfuzz
