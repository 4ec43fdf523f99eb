// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: an exported network (ONNX through OpenCV DNN, TorchScript through
// LibTorch) behind one Model type, so that the fuzz loop is compiled once for every engine and
// each engine's headers stay in their own translation unit (<torch/script.h> costs ~14 s).
#pragma once

#include <nnfuzz/adapters/named_outputs.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnfuzz_cli {

using nnfuzz::Index;
using nnfuzz::RowMatrix;

/// A usage or input error: the tool prints it and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What the user chose for one model file (the options of `nnfuzz fuzz` that describe it).
struct ModelSpec {
  std::string path;                       ///< the model file
  std::string engine;                     ///< "opencv" or "libtorch" ("" = by the file's extension)
  std::vector<std::int64_t> input_shape;  ///< per input, without the batch axis (empty = from the model or the seeds)
  std::vector<std::string> output_names;  ///< TorchScript tuple outputs' names (empty = "0", "1", ...)
  std::string coverage;                   ///< output whose values are the coverage ("" = "logits" or the first)
  std::string logits;                     ///< output holding the logits ("" = "logits" or the first)
  bool sum_abs = false;                   ///< coverage = one number per input, sum |x| (TensorFuzz's NaN set-up)
  std::string dtype = "float32";          ///< libtorch only: float32, bf16, fp16, float64
  bool prepare = true;  ///< opencv only: when OpenCV refuses the file, fuzz its prepared copy (prepare.hpp)
};

/// What a model file says about itself before it is opened for fuzzing.
struct ModelInfo {
  std::vector<std::string> outputs;       ///< output names, in the model's order
  std::vector<std::int64_t> input_shape;  ///< per input, without the batch axis (empty: the file does not say)
  std::string input_name;                 ///< the input fed (ONNX; "" otherwise)
};

/// One engine's network, type-erased: evaluate() is one virtual call per batch.
class Backend {
 public:
  virtual ~Backend() = default;
  /// An independent copy (its own network).
  virtual std::unique_ptr<Backend> clone() const = 0;
  /// Floats per input.
  virtual Index input_dim() const = 0;
  /// Runs the network on a batch (rows = inputs).
  virtual void evaluate(const Eigen::Ref<const RowMatrix>& batch, nnfuzz::NamedOutputs& out) = 0;
};

/// "opencv" or "libtorch" for `spec` (its --engine, else by the file's extension); throws UsageError.
std::string engine_of(const ModelSpec& spec);
/// What the file holds (outputs, input shape); `shape` is needed by engines that must run the model to tell.
ModelInfo probe_opencv(const std::string& path);
/// Reads the module and runs it once on two zero inputs of `shape` to learn its outputs.
ModelInfo probe_torch(const std::string& path, const std::vector<std::int64_t>& shape,
                      const std::vector<std::string>& output_names);
/// Opens the file for fuzzing; `quiet` keeps OpenCV's own error log lines off stderr (the
/// exception still says what failed); `on_per_row` is OpenCvDnnOptions::on_per_row (empty: a
/// line on stderr when the file cannot run batches right).
std::unique_ptr<Backend> open_opencv(const std::string& path, const std::vector<std::int64_t>& shape,
                                     const nnfuzz::EngineOutputs& select, bool quiet = false,
                                     std::function<void(const std::string&)> on_per_row = {});
/// Opens the file for fuzzing (dtype: float32, bf16, fp16 or float64).
std::unique_ptr<Backend> open_torch(const std::string& path, const std::vector<std::int64_t>& shape,
                                    const std::vector<std::string>& output_names, const nnfuzz::EngineOutputs& select,
                                    const std::string& dtype);
/// True when this build has LibTorch.
bool have_torch();

/// The output of EngineModel: every fetched output by name, the coverage, and where the logits are.
struct EngineOutput : nnfuzz::NamedOutputs {
  Index logits_at = 0;  ///< index in `tensors` of the logits
  /// The logits (B × classes).
  const RowMatrix& logits() const { return tensors[static_cast<std::size_t>(logits_at)]; }
};

/// An exported network as an nnfuzz Model (dense inputs; copies are independent networks).
class EngineModel {
 public:
  /// The reusable output of evaluate().
  using Output = EngineOutput;
  /// Opens `spec` (resolving its defaults; `seed_width` is the fallback input width, 0 = none).
  /// Throws UsageError naming the file, the option and the value.
  EngineModel(ModelSpec spec, Index seed_width);
  EngineModel(const EngineModel& o);
  EngineModel& operator=(const EngineModel& o);
  EngineModel(EngineModel&&) = default;
  EngineModel& operator=(EngineModel&&) = default;

  /// Floats per input.
  Index input_dim() const { return backend_->input_dim(); }
  /// Runs the network.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    backend_->evaluate(batch, out);
    out.logits_at = logits_at_;
  }
  /// The shape of one input (DefaultMutator adds Square patches for an image: {C, H, W} or {H, W}).
  const std::vector<std::int64_t>& input_shape() const { return spec_.input_shape; }
  /// The spec with its defaults resolved (engine, input shape, coverage, logits).
  const ModelSpec& spec() const { return spec_; }
  /// Every output of the network.
  const std::vector<std::string>& outputs() const { return info_.outputs; }
  /// The prepared copy run instead of spec().path ("" when the file loaded as it is).
  const std::string& prepared_path() const { return prepared_; }

 private:
  ModelSpec spec_;
  ModelInfo info_;
  std::unique_ptr<Backend> backend_;
  Index logits_at_ = 0;
  std::string prepared_;
};

/// "{1, 28, 28}".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace nnfuzz_cli
