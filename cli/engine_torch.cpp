// SPDX-License-Identifier: MIT
// The LibTorch side of the command-line tool (its own translation unit: <torch/script.h> takes
// ~14 s to compile): lists a TorchScript module's outputs and wraps LibTorchModel as a Backend.
#include "engine.hpp"

#include <nnfuzz/adapters/libtorch.hpp>

namespace nnfuzz_cli {

namespace {

class TorchBackend : public Backend {
 public:
  TorchBackend(const std::string& path, nnfuzz::LibTorchOptions o) : path_(path), options_(o), model_(path, o) {}
  // A copy loads the file again: copies never share a module.
  std::unique_ptr<Backend> clone() const override { return std::make_unique<TorchBackend>(path_, options_); }
  Index input_dim() const override { return model_.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, nnfuzz::NamedOutputs& out) override {
    model_.evaluate(batch, out);
  }

 private:
  std::string path_;
  nnfuzz::LibTorchOptions options_;
  nnfuzz::LibTorchModel model_;
};

// LibTorch's message: its first line, and where the error is when it says so (a TorchScript
// compile error puts 'File "code/__torch__.py", line 10' under it).
std::string first_line(const std::string& s) {
  std::string out = s.substr(0, s.find('\n'));
  const auto file = s.find("File \"");
  if (file != std::string::npos) out += " (" + s.substr(file, s.find('\n', file) - file) + ")";
  return out;
}

}  // namespace

bool have_torch() { return true; }

ModelInfo probe_torch(const std::string& path, const std::vector<std::int64_t>& shape,
                      const std::vector<std::string>& output_names) {
  ModelInfo info;
  torch::IValue r;
  try {
    torch::jit::Module m = torch::jit::load(path, torch::kCPU);
    m.eval();
    std::vector<std::int64_t> sizes{2};
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    torch::NoGradGuard no_grad;
    r = m.forward({torch::zeros(sizes)});
  } catch (const c10::Error& e) {
    throw UsageError("model file '" + path + "' (TorchScript, input shape " + shape_text(shape) +
                     "; --input-shape sets it): LibTorch says: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw UsageError("model file '" + path + "' (TorchScript, input shape " + shape_text(shape) +
                     "; --input-shape sets it): LibTorch says: " + first_line(e.what()));
  }
  auto name_at = [&](std::size_t i) { return i < output_names.size() ? output_names[i] : std::to_string(i); };
  if (r.isTensor()) {
    info.outputs.push_back(output_names.empty() ? "output" : output_names[0]);
  } else if (r.isTuple()) {
    const std::size_t k = r.toTuple()->elements().size();
    if (!output_names.empty() && output_names.size() != k)
      throw UsageError("option --output-names: " + std::to_string(output_names.size()) + " names, model file '" + path +
                       "' returns a tuple of " + std::to_string(k));
    for (std::size_t i = 0; i < k; ++i) info.outputs.push_back(name_at(i));
  } else if (r.isGenericDict()) {
    for (const auto& kv : r.toGenericDict())
      if (kv.key().isString()) info.outputs.push_back(kv.key().toStringRef());
  }
  info.input_shape = shape;
  return info;
}

std::unique_ptr<Backend> open_torch(const std::string& path, const std::vector<std::int64_t>& shape,
                                    const std::vector<std::string>& output_names, const nnfuzz::EngineOutputs& select,
                                    const std::string& dtype) {
  nnfuzz::LibTorchOptions o;
  o.input_shape = shape;
  o.output_names = output_names;
  o.select = select;
  if (dtype == "float32")
    o.dtype = torch::kFloat32;
  else if (dtype == "bf16" || dtype == "bfloat16")
    o.dtype = torch::kBFloat16;
  else if (dtype == "fp16" || dtype == "float16")
    o.dtype = torch::kFloat16;
  else if (dtype == "float64")
    o.dtype = torch::kFloat64;
  else
    throw UsageError("option --dtype: '" + dtype + "' is not one of float32, bf16, fp16, float64");
  return std::make_unique<TorchBackend>(path, std::move(o));
}

}  // namespace nnfuzz_cli
