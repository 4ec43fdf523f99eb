// SPDX-License-Identifier: MIT
// The OpenCV DNN side of the command-line tool: reads what an ONNX file declares (outputs in
// order, the input's shape) and wraps OpenCvDnnModel as a Backend.
#include "engine.hpp"

#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <opencv2/core/utils/logger.hpp>

#include <fstream>
#include <iterator>
#include <set>

namespace nnfuzz_cli {

namespace {

using nnfuzz::detail::ProtoReader;

std::string text_of(const ProtoReader& r) {
  return std::string(reinterpret_cast<const char*>(r.p), static_cast<std::size_t>(r.end - r.p));
}

// ValueInfoProto: name (1), type (2) -> TypeProto.tensor_type (1) -> shape (2) -> dim (1) ->
// dim_value (1) or dim_param (2). A dimension without a value is -1.
void value_info(ProtoReader v, std::string& name, std::vector<std::int64_t>& dims) {
  std::uint32_t n = 0, w = 0;
  ProtoReader f{nullptr, nullptr};
  while (!v.done() && v.field(n, w, f)) {
    if (n == 1 && w == 2) name = text_of(f);
    if (n != 2 || w != 2) continue;
    ProtoReader t = f, tt{nullptr, nullptr};
    while (!t.done() && t.field(n, w, tt)) {
      if (n != 1 || w != 2) continue;
      ProtoReader s{nullptr, nullptr};
      while (!tt.done() && tt.field(n, w, s)) {
        if (n != 2 || w != 2) continue;
        ProtoReader d{nullptr, nullptr};
        while (!s.done() && s.field(n, w, d)) {
          if (n != 1 || w != 2) continue;
          std::int64_t value = -1;
          ProtoReader x{nullptr, nullptr};
          while (!d.done() && d.field(n, w, x))
            if (n == 1 && w == 0) value = static_cast<std::int64_t>(x.value);
          dims.push_back(value);
        }
      }
    }
  }
}

class OpenCvBackend : public Backend {
 public:
  OpenCvBackend(const std::string& path, nnfuzz::OpenCvDnnOptions o) : model_(path, std::move(o)) {}
  std::unique_ptr<Backend> clone() const override { return std::make_unique<OpenCvBackend>(*this); }
  Index input_dim() const override { return model_.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, nnfuzz::NamedOutputs& out) override {
    model_.evaluate(batch, out);
  }

 private:
  nnfuzz::OpenCvDnnModel model_;
};

}  // namespace

ModelInfo probe_opencv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("model file '" + path + "' cannot be read");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ModelInfo info;
  std::set<std::string> initializers;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> inputs;
  ProtoReader m{bytes.data(), bytes.data() + bytes.size()};
  std::uint32_t n = 0, w = 0;
  ProtoReader g{nullptr, nullptr};
  bool graph = false;
  while (!m.done() && m.field(n, w, g)) {
    if (n != 7 || w != 2) continue;
    graph = true;
    ProtoReader f{nullptr, nullptr};
    while (!g.done() && g.field(n, w, f)) {
      if (w != 2) continue;
      if (n == 5) {  // initializer: TensorProto, name = 8
        std::uint32_t n2 = 0, w2 = 0;
        ProtoReader t{nullptr, nullptr};
        while (!f.done() && f.field(n2, w2, t))
          if (n2 == 8 && w2 == 2) initializers.insert(text_of(t));
      } else if (n == 11 || n == 12) {
        std::string name;
        std::vector<std::int64_t> dims;
        value_info(f, name, dims);
        if (n == 12)
          info.outputs.push_back(name);
        else
          inputs.emplace_back(name, dims);
      }
    }
  }
  if (!m.ok || !graph || info.outputs.empty())
    throw UsageError("model file '" + path + "' is not an ONNX model (no graph with outputs found)");
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> real;
  for (const auto& i : inputs)
    if (!initializers.count(i.first)) real.push_back(i);
  if (real.size() == 1) {
    info.input_name = real[0].first;
    const auto& d = real[0].second;
    bool known = d.size() >= 2;
    for (std::size_t k = 1; k < d.size(); ++k) known = known && d[k] > 0;
    if (known) info.input_shape.assign(d.begin() + 1, d.end());
  }
  return info;
}

std::unique_ptr<Backend> open_opencv(const std::string& path, const std::vector<std::int64_t>& shape,
                                     const nnfuzz::EngineOutputs& select, bool quiet,
                                     std::function<void(const std::string&)> on_per_row) {
  nnfuzz::OpenCvDnnOptions o;
  for (std::int64_t d : shape) {
    if (d > (1 << 30)) throw UsageError("option --input-shape: dimension " + std::to_string(d) + " is too large");
    o.input_shape.push_back(static_cast<int>(d));
  }
  o.select = select;
  o.on_per_row = std::move(on_per_row);
  if (!quiet) return std::make_unique<OpenCvBackend>(path, std::move(o));
  // OpenCV logs its importer's errors itself; a caller that has a way on (a prepared copy) hushes them.
  const auto before = cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
  try {
    auto b = std::make_unique<OpenCvBackend>(path, std::move(o));
    cv::utils::logging::setLogLevel(before);
    return b;
  } catch (...) {
    cv::utils::logging::setLogLevel(before);
    throw;
  }
}

}  // namespace nnfuzz_cli
