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
// Batches: a network exported at batch 1 (its flatten a Reshape to [1, ...]) or one whose rows
// mix (a batch statistic left in the export) cannot run a batch right. The constructor checks
// once that a batch of 2 runs and answers as its rows run alone; when it does not, evaluate()
// runs one input per forward() and says so once (OpenCvDnnOptions::batching, on_per_row).
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
#include "../detail/onnx_wire.hpp"
#include "named_outputs.hpp"

#include <opencv2/core.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/dnn.hpp>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// How OpenCvDnnModel::evaluate() hands a batch to OpenCV.
enum class OpenCvBatching {
  /// One forward() per batch when the network runs batches right — checked once, at
  /// construction: a batch of 2 must run and answer, row for row, as each row run alone —
  /// else one forward() per input, said once through OpenCvDnnOptions::on_per_row.
  automatic,
  /// Always one forward() per batch; construction fails when the check above fails.
  batched,
  /// Always one forward() per input (no check).
  per_row,
};

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
  /// Batched or per-row forward passes (default: batched when the network runs batches right).
  OpenCvBatching batching = OpenCvBatching::automatic;
  /// Told once, at construction, why `automatic` runs one input per forward() (a network exported
  /// at batch 1, or one whose rows mix). Empty: one line on std::cerr.
  std::function<void(const std::string& why)> on_per_row;
};

/// An ONNX network (a file, its bytes, or a cv::dnn::Net) as a Model: batch-first, one input row
/// per input, outputs chosen by name. Output is NamedOutputs: `out["logits"]`, `out.coverage`,
/// `for_each_tensor` (NonFiniteObjective works as is).
///
/// The constructor checks everything once, on a probe batch of two inputs: that the file
/// exists and parses (and, before OpenCV parses it, that every initializer and Constant tensor
/// holds exactly the data its shape and type declare: OpenCV would read past it), that each chosen name is an output
/// (or a layer) of the network, that the input shape fits, that every chosen output is float and batch-first, and
/// whether a batch of 2 answers as its rows alone (if not, evaluate() runs one input per forward()). Each
/// failure is a std::invalid_argument naming the function, the option or file, and the value (for an unknown name, the
/// names there are).
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
        order_(o.order_),
        shape_(o.shape_),
        input_dim_(o.input_dim_),
        widths_(o.widths_),
        per_row_(o.per_row_) {
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
  /// The shape of one input (the options' input_shape): DefaultMutator adds Square patches when
  /// it is an image ({C, H, W} or {H, W}).
  const auto& input_shape() const { return options_.input_shape; }

  /// Runs the network on a batch (rows = inputs, contiguous row-major as the fuzzer passes it).
  /// Throws std::invalid_argument for a batch of the wrong width, or when OpenCV fails.
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    const char* who = "OpenCvDnnModel::evaluate()";
    RowMatrix scratch;
    const float* data = detail::contiguous_rows(who, "network", batch, input_dim_, scratch);
    const Index rows = batch.rows();
    shape_out(out, rows);
    const Index step = per_row_ ? 1 : rows;
    for (Index at = 0; at < rows; at += step) {
      try {
        run(data + at * input_dim_, step, blobs_);
      } catch (const cv::Exception& e) {
        detail::fail(who, ": OpenCV failed on a batch of ", step, per_row_ ? " (one input per forward())" : "", ": ",
                     e.what());
      }
      copy_rows(blobs_, step, at, out, who);
    }
    detail::fill_coverage(out, options_.select.coverage.size(), options_.select.reduce);
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
  /// True when evaluate() runs one input per forward() (OpenCvBatching::per_row, or `automatic`
  /// found that the network does not run batches right).
  bool per_row() const { return per_row_; }

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
    detail::check_onnx_tensors(bytes, source);  // before OpenCV trusts the declared shapes
    try {
      cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes);
      if (net.empty()) detail::fail("OpenCvDnnModel(): OpenCV read no network from ", source);
      return net;
    } catch (const cv::Exception& e) {
      detail::fail("OpenCvDnnModel(): OpenCV cannot read ", source, " as ONNX: ", e.what(),
                   "\n(an export with dynamic shapes or opset-11 Clip: `nnfuzz prepare IN OUT --input-shape D,...` "
                   "writes a file OpenCV DNN loads; docs/cli.md)");
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
    order_ = detail::visit_order(options_.select, fetch_);
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
        detail::fail(who, ": ", source_, " has no output '", n,
                     "' (options 'select.coverage'/'select.outputs'/'select.layers'); ",
                     "its outputs are: ", detail::join_names(outputs),
                     "; its layers: ", detail::join_names(layers, 12));
    }
    probe(who);
  }

  // Runs `rows` inputs from `data` (a header over the caller's floats: OpenCV copies them in setInput()).
  void run(const float* data, Index rows, std::vector<cv::Mat>& blobs) {
    shape_[0] = static_cast<int>(rows);
    const cv::Mat blob(static_cast<int>(shape_.size()), shape_.data(), CV_32F, const_cast<float*>(data));
    net_.setInput(blob, options_.input_name);
    net_.forward(blobs, fetch_);
  }

  // Checked once: the input shape fits, every output is float and batch-first, and (unless
  // per_row is asked for) a batch of 2 runs and answers as its rows run alone. The probe inputs
  // are 0.25..0.75 (inside both [0, 1] and [-1, 1]), different in the two rows.
  void probe(const char* who) {
    RowMatrix in = detail::probe_batch(who, options_.input_shape, input_dim_);
    for (Index r = 0; r < 2; ++r)
      for (Index k = 0; k < input_dim_; ++k)
        in(r, k) = 0.5f + 0.25f * static_cast<float>(
                                      std::sin(0.7 * static_cast<double>(k) + 1.3 * static_cast<double>(r + 1)));
    std::vector<cv::Mat> alone[2];
    std::string single_error;
    for (Index r = 0; r < 2; ++r) {
      try {
        run(in.row(r).data(), 1, alone[r]);
        for (auto& m : alone[r]) m = m.clone();
      } catch (const cv::Exception& e) {
        single_error = e.what();
        break;
      }
    }
    std::string why;  // why a batch does not run right ("" = it does)
    std::vector<cv::Mat> both;
    if (options_.batching != OpenCvBatching::per_row) {
      // A failure here is an answer, not an error: OpenCV's own log lines about it are hushed.
      const auto level = cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
      try {
        run(in.data(), 2, both);
        cv::utils::logging::setLogLevel(level);
        why = batch_mismatch(both, alone, single_error.empty());
      } catch (const cv::Exception& e) {
        cv::utils::logging::setLogLevel(level);
        why = std::string("OpenCV fails on a batch of 2: ") + first_line(e.what());
        if (!single_error.empty()) single_error = e.what();  // neither runs: report the batch's error
      }
    }
    if (!single_error.empty())
      detail::fail(who, ": option 'input_shape' ", detail::shape_text(options_.input_shape), " (", input_dim_,
                   " floats per input",
                   options_.input_name.empty() ? std::string() : ", input '" + options_.input_name + "'",
                   ") does not fit ", source_, ": OpenCV says: ", single_error);
    per_row_ = options_.batching == OpenCvBatching::per_row || !why.empty();
    if (!why.empty() && options_.batching == OpenCvBatching::batched)
      detail::fail(who, ": ", source_, " does not run batches right (", why,
                   "); option 'batching' is OpenCvBatching::batched (automatic runs one input per forward())");
    widths_.assign(fetch_.size(), 0);
    const std::vector<cv::Mat>& one = alone[0];
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      const cv::Mat& m = one[i];
      if (m.depth() != CV_32F)
        detail::fail(who, ": output '", fetch_[i], "' of ", source_, " has OpenCV depth ", m.depth(), ", not CV_32F (",
                     CV_32F, "): nnfuzz needs float outputs");
      if (m.dims < 1 || m.size[0] != 1)
        detail::fail(who, ": output '", fetch_[i], "' of ", source_, " is not batch-first: a batch of 1 gave shape ",
                     mat_shape(m));
      widths_[i] = static_cast<Index>(m.total());
    }
    if (!why.empty()) {
      const std::string line = "nnfuzz: OpenCvDnnModel: " + source_ + " does not run batches right (" + why +
                               "): one input per forward() from here on";
      if (options_.on_per_row)
        options_.on_per_row(line);
      else
        std::cerr << line << '\n';
    }
  }

  // Why a batch of 2 is not the rows run alone ("" when it is): shapes, then values (NaN equals
  // NaN; a difference above 1e-3 of the value's size counts, far above OpenCV's kernels' own).
  std::string batch_mismatch(const std::vector<cv::Mat>& both, const std::vector<cv::Mat>* alone,
                             bool have_alone) const {
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      const cv::Mat& m = both[i];
      if (m.depth() != CV_32F || m.dims < 1 || m.size[0] != 2 || !m.isContinuous())
        return "a batch of 2 gives output '" + fetch_[i] + "' shape " + mat_shape(m);
      if (!have_alone) continue;
      const Index w = static_cast<Index>(m.total() / 2);
      for (Index r = 0; r < 2; ++r) {
        const cv::Mat& a = alone[r][i];
        if (a.depth() != CV_32F || static_cast<Index>(a.total()) != w)
          return "output '" + fetch_[i] + "' has shape " + mat_shape(a) + " alone and " + mat_shape(m) +
                 " in a batch of 2";
        const float* x = m.ptr<float>() + r * w;
        const float* y = a.ptr<float>();
        for (Index k = 0; k < w; ++k) {
          const bool same = (std::isnan(x[k]) && std::isnan(y[k])) || x[k] == y[k] ||
                            std::fabs(x[k] - y[k]) <= 1e-3f * std::max(1.0f, std::fabs(y[k]));
          if (!same)
            return "in a batch of 2, row " + std::to_string(r) + " of output '" + fetch_[i] +
                   "' differs from the row run alone: " + std::to_string(x[k]) + " vs " + std::to_string(y[k]) +
                   " at " + std::to_string(k);
        }
      }
    }
    return "";
  }

  static std::string first_line(const std::string& s) {
    const std::string l = s.substr(0, s.find('\n'));
    return l.size() > 240 ? l.substr(0, 240) + "..." : l;
  }

  void shape_out(Output& out, Index rows) const {
    if (out.names != fetch_) out.names = fetch_;
    if (out.order != order_) out.order = order_;
    out.tensors.resize(fetch_.size());
    for (std::size_t i = 0; i < fetch_.size(); ++i) out.tensors[i].resize(rows, widths_[i]);
  }

  // Rows at..at+rows of `out` from OpenCV's blobs of a forward() on `rows` inputs.
  void copy_rows(const std::vector<cv::Mat>& blobs, Index rows, Index at, Output& out, const char* who) const {
    for (std::size_t i = 0; i < fetch_.size(); ++i) {
      const cv::Mat& m = blobs[i];
      if (m.depth() != CV_32F || m.dims < 1 || m.size[0] != rows || !m.isContinuous() ||
          static_cast<Index>(m.total()) != rows * widths_[i])
        detail::fail(who, ": output '", fetch_[i], "' has shape ", mat_shape(m), " for a batch of ", rows,
                     " (expected ", rows, " x ", widths_[i], " floats)");
      out.tensors[i].middleRows(at, rows) = Eigen::Map<const RowMatrix>(m.ptr<float>(), rows, widths_[i]);
    }
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
  std::vector<std::size_t> order_;  // NamedOutputs::order: select.layers first
  std::vector<int> shape_;          // batch, input_shape...
  Index input_dim_ = 0;
  std::vector<Index> widths_;
  std::vector<cv::Mat> blobs_;  // OpenCV's output blobs, kept across calls
  bool per_row_ = false;        // one input per forward()
};

}  // namespace nnfuzz
