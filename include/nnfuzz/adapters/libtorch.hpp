// SPDX-License-Identifier: MIT
// nnfuzz: a TorchScript module run by LibTorch, as a Model policy.
//
// Optional: include it only where LibTorch is available (CMake: find_package(Torch), link
// ${TORCH_LIBRARIES}; nnfuzz's cmake/adapters.cmake does it). The core of nnfuzz never includes it.
// A translation unit including <torch/script.h> takes ~14 s to compile: keep it in one file.
//
//   nnfuzz::LibTorchOptions o;
//   o.input_shape = {784};                       // per input, without the batch axis
//   o.output_names = {"logits", "hidden"};       // names of the returned tuple's elements
//   o.select.coverage = {"hidden"};              // (a module returning a dict names them itself)
//   o.select.outputs = {"logits"};
//   nnfuzz::LibTorchModel model("model.pt", o);
//   auto fuzzer = nnfuzz::make_fuzzer(model, options);
//
// What one evaluate() does: torch::NoGradGuard; the batch becomes a tensor with torch::from_blob
// over batch.data() (no copy; with a reduced-precision `dtype` it is converted, which copies);
// module.forward(); each chosen output (float32, or converted to it) is copied into
// NamedOutputs' matrices, which keep their storage. LibTorch allocates its activations and
// output tensors on every call (its CPU allocator; a traced module has no way to write into
// caller-owned outputs), so the steady state is not allocation-free inside LibTorch; the
// adapter adds a handful of small allocations (the IValue argument vector, tensor headers).
//
// Threads: LibTorch runs each operator on its intra-op thread pool, at::set_num_threads(n)
// (process-wide; default: the physical cores). nnfuzz's run_parallel(fuzzer, seeds, W) runs W
// workers, each calling evaluate() on its own copy of the adapter (copies share the module,
// which is safe for inference from several threads): set at::set_num_threads(1) before it, or
// W workers each start a pool of all cores and fight over them. For one fuzzer, leave the pool
// as it is (a batch of 100 uses it well) or size it to the cores you give the campaign.
#pragma once

#include "../detail/config.hpp"
#include "named_outputs.hpp"

#include <ATen/Parallel.h>  // at::set_num_threads
#include <torch/script.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// Options of LibTorchModel.
struct LibTorchOptions {
  /// Shape of one input, without the batch axis: {784}, or {1, 28, 28}. Required; the product is input_dim().
  std::vector<std::int64_t> input_shape;
  /// Names of the outputs when forward() returns a tuple (one per element, in order) or a single
  /// tensor (one name). Ignored for a dict (its keys are the names). Empty for a tuple: "0", "1", ….
  std::vector<std::string> output_names;
  /// Which outputs make the coverage and which the objectives see (by name).
  EngineOutputs select;
  /// The precision the module runs in: torch::kFloat32, or torch::kBFloat16 / torch::kFloat16 /
  /// torch::kFloat64 (the module's parameters and the input are converted; outputs come back as float).
  torch::Dtype dtype = torch::kFloat32;
};

/// A TorchScript module (a file saved by torch.jit.trace/script, or a loaded torch::jit::Module)
/// as a Model: batch-first, one input row per input, outputs chosen by name from a returned
/// tuple, dict or tensor. Output is NamedOutputs: `out["logits"]`, `out.coverage`,
/// `for_each_tensor` (NonFiniteObjective works as is).
///
/// The constructor checks everything once, on a probe batch of two zero inputs: the file exists
/// and loads, each chosen name is an output, the input shape fits, each chosen output is a
/// floating-point, batch-first tensor. Each failure is a std::invalid_argument naming the
/// function, the option or file and the value (for an unknown name, the names there are).
class LibTorchModel {
 public:
  /// The reusable output of evaluate().
  using Output = NamedOutputs;

  /// Loads a TorchScript file (on the CPU).
  LibTorchModel(const std::string& path, LibTorchOptions options) : options_(std::move(options)) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) detail::fail("LibTorchModel(): TorchScript file '", path, "' does not exist");
    if (!fs::is_regular_file(path, ec)) detail::fail("LibTorchModel(): '", path, "' is not a regular file");
    source_ = "file '" + path + "'";
    try {
      module_ = torch::jit::load(path, torch::kCPU);
    } catch (const std::exception& e) {
      detail::fail("LibTorchModel(): LibTorch cannot load ", source_, ": ", engine_message(e));
    }
    init(/*own=*/true);
  }
  /// Wraps a loaded module (shared with the caller unless `dtype` is not float32: then a clone is converted).
  LibTorchModel(torch::jit::Module module, LibTorchOptions options)
      : options_(std::move(options)), module_(std::move(module)) {
    source_ = "the torch::jit::Module given";
    init(/*own=*/false);
  }

  /// Floats per input (the product of LibTorchOptions::input_shape).
  Index input_dim() const { return input_dim_; }
  /// The shape of one input (the options' input_shape): DefaultMutator adds Square patches when
  /// it is an image ({C, H, W} or {H, W}).
  const auto& input_shape() const { return options_.input_shape; }

  /// Runs the module on a batch (rows = inputs). Throws std::invalid_argument for a batch of the
  /// wrong width, or when LibTorch fails.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    RowMatrix scratch;
    const float* data = detail::contiguous_rows("LibTorchModel::evaluate()", "module", batch, input_dim_, scratch);
    try {
      run(data, batch.rows(), out, "LibTorchModel::evaluate()");
    } catch (const std::invalid_argument&) {
      throw;  // nnfuzz's own, already clear
    } catch (const std::exception& e) {
      detail::fail("LibTorchModel::evaluate(): LibTorch failed on a batch of ", batch.rows(), ": ", engine_message(e));
    }
  }

  /// The names fetched, in NamedOutputs' order (coverage outputs first).
  const std::vector<std::string>& fetched() const { return fetch_; }
  /// Every output name the module returns.
  const std::vector<std::string>& module_outputs() const { return all_names_; }
  /// The module (for calling LibTorch directly).
  torch::jit::Module& module() { return module_; }
  /// The options.
  const LibTorchOptions& options() const { return options_; }

 private:
  // LibTorch's own message, without its C++ backtrace: for an error raised in the TorchScript
  // interpreter (a traceback first), its last line ("RuntimeError: …"); for any other (a c10
  // error; a TorchScript compile error: the reason first, then the position and the source),
  // its first line and the position when there is one ('File "code/__torch__.py", line 10'),
  // never a stray source line.
  static std::string engine_message(const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    std::string s = c10_error ? c10_error->what_without_backtrace() : std::string(e.what());
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    auto trim = [](std::string t) {
      const auto a = t.find_first_not_of(" \t");
      return a == std::string::npos ? std::string() : t.substr(a);
    };
    if (!c10_error && s.find("Traceback") != std::string::npos) {
      const auto nl = s.rfind('\n');
      return nl == std::string::npos ? s : s.substr(nl + 1);
    }
    // The first line, and where it happened when the engine says so: TorchScript's compiler
    // writes `Serialized   File "code/__torch__.py", line 10` under its message.
    const auto nl = s.find('\n');
    std::string out = trim(s.substr(0, nl));
    for (std::size_t at = nl; at != std::string::npos && at < s.size();) {
      const auto end = s.find('\n', at + 1);
      const std::string line = trim(s.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1));
      const auto file = line.find("File \"");
      if ((file != std::string::npos && line.find(", line ", file) != std::string::npos) || line.rfind("at ", 0) == 0) {
        out += " (" + (file != std::string::npos ? line.substr(file) : line) + ")";
        break;
      }
      at = end;
    }
    return out;
  }

  void init(bool own) {
    const char* who = "LibTorchModel()";
    fetch_ = detail::fetch_list(who, options_.select);
    order_ = detail::visit_order(options_.select, fetch_);
    input_dim_ = detail::input_size(who, options_.input_shape);
    sizes_.assign(1, 0);
    sizes_.insert(sizes_.end(), options_.input_shape.begin(), options_.input_shape.end());
    const torch::Dtype dt = options_.dtype;
    if (dt != torch::kFloat32 && dt != torch::kBFloat16 && dt != torch::kFloat16 && dt != torch::kFloat64)
      detail::fail(who, ": option 'dtype' must be float32, bfloat16, float16 or float64, got ",
                   c10::toString(static_cast<c10::ScalarType>(dt)));
    try {
      if (dt != torch::kFloat32) {
        if (!own) module_ = module_.clone();
        module_.to(dt);
      }
      module_.eval();
    } catch (const std::exception& e) {
      detail::fail(who, ": cannot convert ", source_, " to ", c10::toString(static_cast<c10::ScalarType>(dt)), ": ",
                   engine_message(e));
    }
    // A probe batch of two zero inputs: the names, shapes and types of the outputs, checked once.
    RowMatrix probe = detail::probe_batch(who, options_.input_shape, input_dim_);
    torch::IValue result;
    try {
      result = forward(probe.data(), 2);
    } catch (const std::exception& e) {
      // A kernel missing for a reduced-precision dtype ("... not implemented for 'Half'", float16
      // on the CPU) is the dtype's fault, not the input shape's.
      const std::string why = engine_message(e);
      const std::string type_name = c10::toString(static_cast<c10::ScalarType>(dt));
      if (dt != torch::kFloat32 && why.find("not implemented for '" + type_name + "'") != std::string::npos)
        detail::fail(who, ": option 'dtype' ", type_name, " is not supported by LibTorch for ", source_,
                     " on this device (use float32 or bfloat16 on the CPU): LibTorch says: ", why);
      detail::fail(who, ": option 'input_shape' ", detail::shape_text(options_.input_shape), " (", input_dim_,
                   " floats per input) does not fit ", source_, ": LibTorch says: ", why);
    }
    all_names_.clear();
    std::vector<torch::Tensor> tensors;
    collect(result, all_names_, tensors, who);
    index_.clear();
    for (const std::string& n : fetch_) {
      std::size_t k = 0;
      while (k < all_names_.size() && all_names_[k] != n) ++k;
      if (k == all_names_.size())
        detail::fail(who, ": ", source_, " has no output '", n,
                     "' (options 'select.coverage'/'select.outputs'/'select.layers'); ",
                     "its outputs are: ", detail::join_names(all_names_),
                     result.isTuple() && options_.output_names.empty()
                         ? " (a tuple: name its elements with option 'output_names')"
                         : "");
      const torch::Tensor& t = tensors[k];
      if (!c10::isFloatingType(t.scalar_type()))
        detail::fail(who, ": output '", n, "' of ", source_, " is a ", c10::toString(t.scalar_type()),
                     " tensor, not a floating-point one: nnfuzz needs float outputs (cast it in the model, or leave "
                     "it out of 'select')");
      if (t.dim() < 1 || t.size(0) != 2)
        detail::fail(who, ": output '", n, "' of ", source_, " is not batch-first: a batch of 2 gave shape ",
                     t.sizes());
      index_.push_back(k);
    }
  }

  torch::IValue forward(const float* data, Index rows) {
    torch::NoGradGuard no_grad;
    sizes_[0] = rows;
    // No copy: the tensor is a view of the caller's floats (forward() only reads its input).
    torch::Tensor x = torch::from_blob(const_cast<float*>(data), sizes_, torch::kFloat32);
    if (options_.dtype != torch::kFloat32) x = x.to(options_.dtype);
    args_.clear();
    args_.emplace_back(std::move(x));
    return module_.forward(args_);
  }

  // The outputs of a result, named: a dict's keys, or option 'output_names' for a tuple/tensor.
  void collect(const torch::IValue& r, std::vector<std::string>& names, std::vector<torch::Tensor>& tensors,
               const char* who) const {
    auto name_at = [&](std::size_t i) {
      return i < options_.output_names.size() ? options_.output_names[i] : std::to_string(i);
    };
    if (r.isTensor()) {
      names.push_back(options_.output_names.empty() ? "output" : options_.output_names[0]);
      tensors.push_back(r.toTensor());
    } else if (r.isTuple()) {
      const auto& elements = r.toTuple()->elements();
      if (!options_.output_names.empty() && options_.output_names.size() != elements.size())
        detail::fail(who, ": option 'output_names' has ", options_.output_names.size(), " names, ", source_,
                     " returns a tuple of ", elements.size());
      for (std::size_t i = 0; i < elements.size(); ++i) {
        if (!elements[i].isTensor())
          detail::fail(who, ": element ", i, " of the tuple ", source_, " returns is a ", elements[i].tagKind(),
                       ", not a tensor");
        names.push_back(name_at(i));
        tensors.push_back(elements[i].toTensor());
      }
    } else if (r.isGenericDict()) {
      for (const auto& kv : r.toGenericDict()) {
        if (!kv.key().isString() || !kv.value().isTensor())
          detail::fail(who, ": ", source_, " returns a dict that is not str -> Tensor");
        names.push_back(kv.key().toStringRef());
        tensors.push_back(kv.value().toTensor());
      }
    } else {
      detail::fail(who, ": ", source_, " returns a ", r.tagKind(),
                   "; nnfuzz takes a tensor, a tuple of tensors or a "
                   "dict of str -> tensor");
    }
  }

  void run(const float* data, Index rows, Output& out, const char* who) {
    const torch::IValue r = forward(data, rows);
    names_scratch_.clear();
    tensors_scratch_.clear();
    collect(r, names_scratch_, tensors_scratch_, who);
    if (names_scratch_ != all_names_) detail::fail(who, ": the module's outputs changed between calls");
    if (out.names != fetch_) out.names = fetch_;
    if (out.order != order_) out.order = order_;
    out.tensors.resize(fetch_.size());
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      torch::Tensor t = tensors_scratch_[index_[i]];
      if (t.scalar_type() != torch::kFloat32) t = t.to(torch::kFloat32);
      t = t.contiguous();
      if (t.dim() < 1 || t.size(0) != rows)
        detail::fail(who, ": output '", fetch_[i], "' has shape ", t.sizes(), " for a batch of ", rows);
      out.tensors[i] = Eigen::Map<const RowMatrix>(t.data_ptr<float>(), rows, t.numel() / std::max<Index>(rows, 1));
    }
    detail::fill_coverage(out, options_.select.coverage.size(), options_.select.reduce);
  }

  LibTorchOptions options_;
  torch::jit::Module module_;
  std::string source_;
  std::vector<std::string> fetch_;
  std::vector<std::size_t> order_;  // NamedOutputs::order: select.layers first
  std::vector<std::string> all_names_;
  std::vector<std::size_t> index_;  // fetch_[i] is output index_[i] of the module
  std::vector<std::int64_t> sizes_;
  Index input_dim_ = 0;
  std::vector<torch::jit::IValue> args_;
  std::vector<std::string> names_scratch_;
  std::vector<torch::Tensor> tensors_scratch_;
};

}  // namespace nnfuzz
