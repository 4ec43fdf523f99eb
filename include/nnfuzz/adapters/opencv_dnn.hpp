// SPDX-License-Identifier: MIT
// nnfuzz: an ONNX network run by OpenCV's DNN module, as a Model policy.
//
// Optional: include it only where OpenCV (core + dnn, ≥ 4.5) is available; link opencv_dnn and
// opencv_core (CMake: nnfuzz's cmake/adapters.cmake, or find_package(OpenCV COMPONENTS core dnn)).
// The core of nnfuzz never includes it.
//
//   nnfuzz::OpenCvDnnOptions o;
//   o.input_shape = {784};                 // per input, without the batch axis ({1, 28, 28} for an NCHW image)
//   o.select.coverage = {"hidden"};        // ONNX output names (or any OpenCV layer name)
//   o.select.outputs = {"logits"};         // more outputs for the objectives
//   nnfuzz::OpenCvDnnModel model("model.onnx", o);
//   auto fuzzer = nnfuzz::make_fuzzer(model, options);   // NonFiniteObjective sees every fetched output
//
// What one evaluate() costs beyond the network: the batch is wrapped in a cv::Mat header over
// batch.data() (no copy by nnfuzz); OpenCV 4.6 itself copies it into its input blob inside
// Net::setInput() (784 floats per input: small next to any layer). Outputs come back in
// OpenCV's own blobs, which it keeps from call to call while the batch size stays the same; the
// adapter copies them into NamedOutputs' matrices (which keep their storage too). OpenCV's
// forward() makes a few small heap allocations per call for its bookkeeping (vectors of layer
// pins and Mat headers: tens of bytes each, measured in the tests), none per input; a new batch
// size makes it reallocate its blobs once.
//
// Threads: OpenCV runs each layer on its own thread pool (cv::setNumThreads(); all cores by
// default). With run_parallel() and W workers, call cv::setNumThreads(1) first so that W
// workers do not each start a pool of all cores.
//
// Copies: an adapter built from a file (or ONNX bytes) re-reads the network for each copy, so
// copies (run_parallel's workers) never share a cv::dnn::Net; one built from a cv::dnn::Net
// shares it with its copies (OpenCV's Net is a reference) — use those from one thread at a time.
#pragma once

#include "../detail/config.hpp"
#include "named_outputs.hpp"

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// Options of OpenCvDnnModel.
struct OpenCvDnnOptions {
  /// Shape of one input, without the batch axis: {784} for N × 784, {1, 28, 28} for N × 1 × 28 × 28.
  /// Its product is input_dim(). Required.
  std::vector<int> input_shape;
  /// The network input to feed ("" = the network's only input).
  std::string input_name;
  /// Which outputs make the coverage and which the objectives see (by name).
  EngineOutputs select;
  int backend = cv::dnn::DNN_BACKEND_OPENCV;  ///< cv::dnn::Net::setPreferableBackend()
  int target = cv::dnn::DNN_TARGET_CPU;       ///< cv::dnn::Net::setPreferableTarget()
};

/// An ONNX network (a file, its bytes, or a cv::dnn::Net) as a Model: batch-first, one input row
/// per input, outputs chosen by name. Output is NamedOutputs: `out["logits"]`, `out.coverage`,
/// `for_each_tensor` (NonFiniteObjective works as is).
///
/// The constructor checks everything once, on a probe batch of two zero inputs: that the file
/// exists and parses, that each chosen name is an output (or a layer) of the network, that the
/// input shape fits, that every chosen output is float and batch-first. Each failure is a
/// std::invalid_argument naming the function, the option or file, and the value (for an unknown
/// name, the names there are).
class OpenCvDnnModel {
 public:
  /// The reusable output of evaluate().
  using Output = NamedOutputs;

  /// Reads an ONNX file.
  OpenCvDnnModel(const std::string& onnx_path, OpenCvDnnOptions options) : options_(std::move(options)) {
    bytes_ = std::make_shared<const std::vector<uchar>>(read_file(onnx_path));
    source_ = "file '" + onnx_path + "'";
    net_ = parse(*bytes_, source_);
    init();
  }
  /// Reads an ONNX model from memory.
  OpenCvDnnModel(std::vector<uchar> onnx_bytes, OpenCvDnnOptions options) : options_(std::move(options)) {
    bytes_ = std::make_shared<const std::vector<uchar>>(std::move(onnx_bytes));
    source_ = "ONNX bytes";
    net_ = parse(*bytes_, source_);
    init();
  }
  /// Wraps a network the caller built (shared with copies of this adapter: see the file comment).
  OpenCvDnnModel(cv::dnn::Net net, OpenCvDnnOptions options) : options_(std::move(options)), net_(std::move(net)) {
    source_ = "the cv::dnn::Net given";
    if (net_.empty()) detail::fail("OpenCvDnnModel(): ", source_, " is empty");
    init();
  }

  OpenCvDnnModel(const OpenCvDnnModel& o)
      : options_(o.options_),
        bytes_(o.bytes_),
        source_(o.source_),
        net_(o.bytes_ ? parse(*o.bytes_, o.source_) : o.net_),
        fetch_(o.fetch_),
        shape_(o.shape_),
        input_dim_(o.input_dim_),
        widths_(o.widths_) {
    configure(net_);
  }
  OpenCvDnnModel& operator=(const OpenCvDnnModel& o) {
    if (this != &o) *this = OpenCvDnnModel(o);
    return *this;
  }
  OpenCvDnnModel(OpenCvDnnModel&&) = default;
  OpenCvDnnModel& operator=(OpenCvDnnModel&&) = default;

  /// Floats per input (the product of OpenCvDnnOptions::input_shape).
  Index input_dim() const { return input_dim_; }

  /// Runs the network on a batch (rows = inputs, contiguous row-major as the fuzzer passes it).
  /// Throws std::invalid_argument for a batch of the wrong width, or when OpenCV fails.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    RowMatrix scratch;
    const float* data = detail::contiguous_rows("OpenCvDnnModel::evaluate()", "network", batch, input_dim_, scratch);
    shape_[0] = static_cast<int>(batch.rows());
    // A header over the caller's floats: OpenCV reads them in setInput() (which copies them).
    const cv::Mat blob(static_cast<int>(shape_.size()), shape_.data(), CV_32F, const_cast<float*>(data));
    try {
      net_.setInput(blob, options_.input_name);
      net_.forward(blobs_, fetch_);
    } catch (const cv::Exception& e) {
      detail::fail("OpenCvDnnModel::evaluate(): OpenCV failed on a batch of ", batch.rows(), ": ", e.what());
    }
    copy_out(blobs_, batch.rows(), out, "OpenCvDnnModel::evaluate()");
  }

  /// The names fetched, in NamedOutputs' order (coverage outputs first).
  const std::vector<std::string>& fetched() const { return fetch_; }
  /// Values per input of each fetched output.
  const std::vector<Index>& widths() const { return widths_; }
  /// The graph outputs of the network (what OpenCV calls its unconnected output layers).
  std::vector<std::string> network_outputs() const { return net_.getUnconnectedOutLayersNames(); }
  /// The network (for calling OpenCV directly).
  cv::dnn::Net& net() { return net_; }
  /// The options.
  const OpenCvDnnOptions& options() const { return options_; }

 private:
  static std::vector<uchar> read_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) detail::fail("OpenCvDnnModel(): ONNX file '", path, "' does not exist");
    if (!fs::is_regular_file(path, ec)) detail::fail("OpenCvDnnModel(): '", path, "' is not a regular file");
    std::ifstream in(path, std::ios::binary);
    std::vector<uchar> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) detail::fail("OpenCvDnnModel(): cannot read ONNX file '", path, "'");
    if (bytes.empty()) detail::fail("OpenCvDnnModel(): ONNX file '", path, "' is empty");
    return bytes;
  }
  static cv::dnn::Net parse(const std::vector<uchar>& bytes, const std::string& source) {
    try {
      cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes);
      if (net.empty()) detail::fail("OpenCvDnnModel(): OpenCV read no network from ", source);
      return net;
    } catch (const cv::Exception& e) {
      detail::fail("OpenCvDnnModel(): OpenCV cannot read ", source, " as ONNX: ", e.what());
    }
  }
  void configure(cv::dnn::Net& net) const {
    net.setPreferableBackend(options_.backend);
    net.setPreferableTarget(options_.target);
  }

  void init() {
    const char* who = "OpenCvDnnModel()";
    configure(net_);
    fetch_ = detail::fetch_list(who, options_.select);
    input_dim_ = detail::input_size(who, options_.input_shape);
    shape_.assign(1, 0);
    shape_.insert(shape_.end(), options_.input_shape.begin(), options_.input_shape.end());
    // Every chosen name must be a graph output or a layer (OpenCV can return any layer's output).
    const std::vector<std::string> outputs = net_.getUnconnectedOutLayersNames();
    const std::vector<std::string> layers = net_.getLayerNames();
    for (const std::string& n : fetch_) {
      const bool known = std::find(outputs.begin(), outputs.end(), n) != outputs.end() ||
                         std::find(layers.begin(), layers.end(), n) != layers.end();
      if (!known)
        detail::fail(who, ": ", source_, " has no output '", n, "' (options 'select.coverage'/'select.outputs'); ",
                     "its outputs are: ", detail::join_names(outputs),
                     "; its layers: ", detail::join_names(layers, 12));
    }
    // A probe batch of two zero inputs: shapes, types and batch-first outputs, checked once.
    RowMatrix probe = RowMatrix::Zero(2, input_dim_);
    shape_[0] = 2;
    const cv::Mat blob(static_cast<int>(shape_.size()), shape_.data(), CV_32F, probe.data());
    std::vector<cv::Mat> blobs;
    try {
      net_.setInput(blob, options_.input_name);
      net_.forward(blobs, fetch_);
    } catch (const cv::Exception& e) {
      detail::fail(who, ": option 'input_shape' ", detail::shape_text(options_.input_shape), " (", input_dim_,
                   " floats per input",
                   options_.input_name.empty() ? std::string() : ", input '" + options_.input_name + "'",
                   ") does not fit ", source_, ": OpenCV says: ", e.what());
    }
    widths_.assign(fetch_.size(), 0);
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      const cv::Mat& m = blobs[i];
      if (m.depth() != CV_32F)
        detail::fail(who, ": output '", fetch_[i], "' of ", source_, " has OpenCV depth ", m.depth(), ", not CV_32F (",
                     CV_32F, "): nnfuzz needs float outputs");
      if (m.dims < 1 || m.size[0] != 2)
        detail::fail(who, ": output '", fetch_[i], "' of ", source_, " is not batch-first: a batch of 2 gave shape ",
                     mat_shape(m));
      widths_[i] = static_cast<Index>(m.total() / 2);
    }
  }

  void copy_out(const std::vector<cv::Mat>& blobs, Index rows, Output& out, const char* who) const {
    if (out.names != fetch_) out.names = fetch_;
    out.tensors.resize(fetch_.size());
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      const cv::Mat& m = blobs[i];
      if (m.depth() != CV_32F || m.dims < 1 || m.size[0] != rows || !m.isContinuous() ||
          static_cast<Index>(m.total()) != rows * widths_[i])
        detail::fail(who, ": output '", fetch_[i], "' has shape ", mat_shape(m), " for a batch of ", rows,
                     " (expected ", rows, " x ", widths_[i], " floats)");
      out.tensors[i] = Eigen::Map<const RowMatrix>(m.ptr<float>(), rows, widths_[i]);
    }
    detail::fill_coverage(out, options_.select.coverage.size(), options_.select.reduce);
  }

  static std::string mat_shape(const cv::Mat& m) {
    std::string s;
    for (int d = 0; d < m.dims; ++d) s += (d ? " x " : "") + std::to_string(m.size[d]);
    return s.empty() ? "(empty)" : s;
  }

  OpenCvDnnOptions options_;
  std::shared_ptr<const std::vector<uchar>> bytes_;  // the ONNX model, for independent copies
  std::string source_;
  cv::dnn::Net net_;
  std::vector<std::string> fetch_;
  std::vector<int> shape_;  // batch, input_shape...
  Index input_dim_ = 0;
  std::vector<Index> widths_;
  std::vector<cv::Mat> blobs_;  // OpenCV's output blobs, kept across calls
};

}  // namespace nnfuzz
