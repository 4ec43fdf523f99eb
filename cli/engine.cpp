// SPDX-License-Identifier: MIT
// EngineModel: resolves a ModelSpec's defaults and opens the engine (no engine header here).
#include "engine.hpp"

#include "prepare.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>

namespace nnfuzz_cli {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "{";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "}";
}

std::string engine_of(const ModelSpec& spec) {
  if (!spec.engine.empty()) {
    if (spec.engine != "opencv" && spec.engine != "libtorch")
      throw UsageError("option --engine: '" + spec.engine + "' is not an engine (opencv or libtorch)");
    return spec.engine;
  }
  std::string ext = std::filesystem::path(spec.path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".onnx") return "opencv";
  if (ext == ".pt" || ext == ".pth" || ext == ".torchscript") return "libtorch";
  throw UsageError("model file '" + spec.path + "': cannot tell the engine from its extension '" + ext +
                   "' (.onnx: OpenCV DNN, .pt/.pth/.torchscript: LibTorch); give --engine opencv|libtorch");
}

namespace {

std::string pick_output(const std::string& chosen, const char* option, const ModelSpec& spec,
                        const std::vector<std::string>& outputs) {
  auto has = [&](const std::string& n) { return std::find(outputs.begin(), outputs.end(), n) != outputs.end(); };
  std::string list;
  for (const std::string& n : outputs) list += (list.empty() ? "" : ", ") + n;
  if (!chosen.empty()) {
    if (!has(chosen))
      throw UsageError("option " + std::string(option) + ": model file '" + spec.path + "' has no output '" + chosen +
                       "'; its outputs are: " + list);
    return chosen;
  }
  if (outputs.empty()) throw UsageError("model file '" + spec.path + "' has no outputs");
  return has("logits") ? "logits" : outputs.front();
}

// Why OpenCV refused a file, in one line: its "Node [Op@domain]:(onnx_node!name)" when it names
// the node, else the message's first line (at most ~200 characters; OpenCV's run to several lines).
std::string refusal(const std::string& what) {
  const std::size_t node = what.find("Node [");
  std::string s = what.substr(node == std::string::npos ? 0 : node);
  s = s.substr(0, std::min(s.find('\n'), s.find(" parse error")));
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

}  // namespace

EngineModel::EngineModel(ModelSpec spec, Index seed_width) : spec_(std::move(spec)) {
  std::error_code ec;
  if (!std::filesystem::exists(spec_.path, ec)) throw UsageError("model file '" + spec_.path + "' does not exist");
  if (!std::filesystem::is_regular_file(spec_.path, ec))
    throw UsageError("model file '" + spec_.path + "' is not a regular file");
  spec_.engine = engine_of(spec_);
  if (spec_.engine == "libtorch" && !have_torch())
    throw UsageError("model file '" + spec_.path +
                     "' is TorchScript, and this nnfuzz was built without LibTorch (install libtorch-dev and "
                     "rebuild), or export the model to ONNX");
  for (std::int64_t d : spec_.input_shape)
    if (d < 1) throw UsageError("option --input-shape: dimension " + std::to_string(d) + " is not positive");
  if (spec_.engine == "opencv") {
    info_ = probe_opencv(spec_.path);
    if (spec_.input_shape.empty()) spec_.input_shape = info_.input_shape;
  }
  if (spec_.input_shape.empty() && seed_width > 0) spec_.input_shape = {seed_width};
  if (spec_.input_shape.empty())
    throw UsageError("model file '" + spec_.path +
                     "' does not say its input shape: give --input-shape (e.g. 784 or 1,28,28)");
  if (spec_.engine == "libtorch") info_ = probe_torch(spec_.path, spec_.input_shape, spec_.output_names);
  spec_.coverage = pick_output(spec_.coverage, "--coverage", spec_, info_.outputs);
  spec_.logits = pick_output(spec_.logits, "--logits", spec_, info_.outputs);
  nnfuzz::EngineOutputs select;
  select.coverage = {spec_.coverage};
  select.reduce = spec_.sum_abs ? nnfuzz::CoverageReduce::sum_abs : nnfuzz::CoverageReduce::concat;
  for (const std::string& n : info_.outputs)
    if (n != spec_.coverage) select.outputs.push_back(n);
  const std::vector<std::string> fetched = nnfuzz::detail::fetch_list("nnfuzz", select);
  logits_at_ = static_cast<Index>(std::find(fetched.begin(), fetched.end(), spec_.logits) - fetched.begin());
  if (spec_.engine == "libtorch") {
    try {
      backend_ = open_torch(spec_.path, spec_.input_shape, spec_.output_names, select, spec_.dtype);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    return;
  }
  try {
    backend_ = open_opencv(spec_.path, spec_.input_shape, select, /*quiet=*/spec_.prepare);
    return;
  } catch (const std::invalid_argument& e) {
    if (!spec_.prepare)
      throw UsageError(std::string(e.what()) +
                       "\n(without --no-prepare, nnfuzz fuzzes a prepared copy: nnfuzz prepare)");
    // An exported file OpenCV DNN refuses (a dynamic Shape node, Clip with input bounds, ...):
    // fuzz its prepared copy, and say so once.
    try {
      prepared_ = prepared_copy(spec_.path, spec_.input_shape);
    } catch (const UsageError& p) {
      throw UsageError(std::string(e.what()) + "\nand preparing it failed too: " + p.what());
    }
    std::cerr << "nnfuzz: OpenCV DNN refuses model file '" << spec_.path << "' as exported (" << refusal(e.what())
              << "); fuzzing its prepared copy '" << prepared_ << "' (nnfuzz prepare; --no-prepare turns this off)\n";
  }
  try {
    backend_ = open_opencv(prepared_, spec_.input_shape, select);
  } catch (const std::invalid_argument& e) {
    throw UsageError("model file '" + spec_.path + "' does not load in OpenCV DNN even prepared ('" + prepared_ +
                     "'): " + e.what() +
                     "\n(try another --input-shape, an export with static shapes and opset <= 11, or report the node "
                     "named above)");
  }
}

EngineModel::EngineModel(const EngineModel& o)
    : spec_(o.spec_), info_(o.info_), backend_(o.backend_->clone()), logits_at_(o.logits_at_), prepared_(o.prepared_) {}

EngineModel& EngineModel::operator=(const EngineModel& o) {
  if (this != &o) *this = EngineModel(o);
  return *this;
}

}  // namespace nnfuzz_cli
