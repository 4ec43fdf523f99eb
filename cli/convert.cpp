// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz convert IN OUT --weights f16|int8`, a release candidate of an
// ONNX model as a user's conversion step makes it: the weights of every Conv, ConvTranspose,
// MatMul and Gemm rounded to float16, or quantized to int8 (weight-only, symmetric: per output
// channel for convolutions and matrix products, scale max|w| / 127), and stored back as float32,
// so that the engine that runs the original runs the candidate (OpenCV DNN 4.6 runs neither a
// float16 nor a QDQ file). `nnfuzz fuzz IN --against OUT --objective disagree` then hunts where
// they differ. Nothing else of the file changes: the weights are rewritten in place, byte for byte
// the same size, so the protobuf is never re-encoded.
//
// The walk reads the protobuf wire format (varints, length-delimited fields) of ModelProto →
// GraphProto (field 7) → NodeProto (1: inputs, 4: op_type, 5: attributes) and TensorProto
// (5: initializers; 1 dims, 2 data_type, 4 float_data, 8 name, 9 raw_data, 14 data_location). A
// malformed file is an error naming it and the byte offset; a weight stored outside the file
// (external data) or not as float32 is named and left out.
#include "commands.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>

namespace nnfuzz_cli {
namespace {

using nlohmann::json;

// One field of a protobuf message: its number, wire type, and its value (varint) or its bytes.
struct Field {
  std::uint32_t number = 0, wire = 0;
  std::uint64_t varint = 0;
  std::size_t begin = 0, end = 0;  // the bytes of a length-delimited (2) or fixed (1, 5) value
};

// Reads the fields of the message in bytes [begin, end) of `file` (named in errors).
class Walker {
 public:
  Walker(const std::string& path, const std::vector<std::uint8_t>& bytes) : path_(path), b_(bytes) {}
  template <class F>
  void fields(std::size_t begin, std::size_t end, F&& f) const {
    std::size_t p = begin;
    while (p < end) {
      Field fl;
      const std::size_t at = p;
      const std::uint64_t key = varint(p, end);
      fl.number = static_cast<std::uint32_t>(key >> 3);
      fl.wire = static_cast<std::uint32_t>(key & 7);
      if (fl.number == 0) bad(at, "field number 0");
      switch (fl.wire) {
        case 0:
          fl.varint = varint(p, end);
          break;
        case 1:
        case 5: {
          const std::size_t n = fl.wire == 1 ? 8 : 4;
          if (end - p < n) bad(at, "a fixed-size value past the end of its message");
          fl.begin = p;
          fl.end = p + n;
          p += n;
          break;
        }
        case 2: {
          const std::uint64_t n = varint(p, end);
          if (n > end - p) bad(at, "a length of " + std::to_string(n) + " past the end of its message");
          fl.begin = p;
          fl.end = p + static_cast<std::size_t>(n);
          p = fl.end;
          break;
        }
        default:
          bad(at, "wire type " + std::to_string(fl.wire) + " (groups or a corrupted key)");
      }
      f(fl);
    }
  }
  std::string text(const Field& f) const {
    return std::string(reinterpret_cast<const char*>(b_.data() + f.begin), f.end - f.begin);
  }
  // The varints of a repeated int64 field, packed (wire 2) or not (wire 0).
  void ints(const Field& f, std::vector<std::int64_t>& out) const {
    if (f.wire == 0) {
      out.push_back(static_cast<std::int64_t>(f.varint));
      return;
    }
    std::size_t p = f.begin;
    while (p < f.end) out.push_back(static_cast<std::int64_t>(varint(p, f.end)));
  }
  [[noreturn]] void bad(std::size_t at, const std::string& what) const {
    throw UsageError("convert: '" + path_ + "' is not a valid ONNX file: at byte " + std::to_string(at) + ", " + what);
  }

 private:
  std::uint64_t varint(std::size_t& p, std::size_t end) const {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) bad(p, "a varint past the end of its message");
      const std::uint8_t c = b_[p++];
      v |= static_cast<std::uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    bad(p, "a varint longer than 10 bytes");
  }
  std::string path_;
  const std::vector<std::uint8_t>& b_;
};

// An initializer: where its float values are in the file.
struct Tensor {
  std::string name;
  std::vector<std::int64_t> dims;
  std::int64_t type = 0;
  bool external = false;
  std::size_t begin = 0, end = 0;  // raw_data, or packed float_data
  bool has_data = false;
};

// Which input of which op is a weight, and its output-channel axis (-1: the last).
int weight_axis(const std::string& op, int input, bool trans_b) {
  if (input != 1) return -2;
  if (op == "Conv") return 0;           // [out, in/groups, kh, kw]
  if (op == "ConvTranspose") return 1;  // [in, out/groups, kh, kw]
  if (op == "MatMul") return -1;        // [in, out]
  if (op == "Gemm") return trans_b ? 0 : 1;
  return -2;
}

struct ConvertArgs {
  std::string in, out, weights;
  bool json = false;
};

int run_convert(const ConvertArgs& a) {
  std::ifstream f(a.in, std::ios::binary);
  if (!f) throw UsageError("convert: cannot read '" + a.in + "'");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw UsageError("convert: '" + a.in + "' is empty");
  const Walker w(a.in, bytes);
  Field graph;
  bool have_graph = false;
  w.fields(0, bytes.size(), [&](const Field& fl) {
    if (fl.number == 7 && fl.wire == 2) {
      graph = fl;
      have_graph = true;
    }
  });
  if (!have_graph) w.bad(0, "no graph (ModelProto field 7)");
  // Weights: initializer name -> channel axis, from the nodes.
  std::map<std::string, int> axis_of;
  std::vector<Tensor> inits;
  w.fields(graph.begin, graph.end, [&](const Field& fl) {
    if (fl.wire != 2) return;
    if (fl.number == 1) {  // NodeProto
      std::vector<std::string> inputs;
      std::string op;
      bool trans_b = false;
      w.fields(fl.begin, fl.end, [&](const Field& nf) {
        if (nf.number == 1 && nf.wire == 2) inputs.push_back(w.text(nf));
        if (nf.number == 4 && nf.wire == 2) op = w.text(nf);
        if (nf.number == 5 && nf.wire == 2) {  // AttributeProto: name 1, i 3
          std::string name;
          std::uint64_t i = 0;
          w.fields(nf.begin, nf.end, [&](const Field& af) {
            if (af.number == 1 && af.wire == 2) name = w.text(af);
            if (af.number == 3 && af.wire == 0) i = af.varint;
          });
          if (name == "transB") trans_b = i != 0;
        }
      });
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const int ax = weight_axis(op, static_cast<int>(k), trans_b);
        if (ax != -2) axis_of.emplace(inputs[k], ax);
      }
    } else if (fl.number == 5) {  // TensorProto
      Tensor t;
      w.fields(fl.begin, fl.end, [&](const Field& tf) {
        if (tf.number == 1) w.ints(tf, t.dims);
        if (tf.number == 2 && tf.wire == 0) t.type = static_cast<std::int64_t>(tf.varint);
        if (tf.number == 8 && tf.wire == 2) t.name = w.text(tf);
        if ((tf.number == 9 || (tf.number == 4 && tf.wire == 2)) && tf.end > tf.begin) {
          t.begin = tf.begin;
          t.end = tf.end;
          t.has_data = true;
        }
        if (tf.number == 14 && tf.wire == 0 && tf.varint == 1) t.external = true;
      });
      inits.push_back(std::move(t));
    }
  });
  const bool f16 = a.weights == "f16";
  json tensors = json::array();
  std::int64_t values = 0;
  double max_abs = 0, max_rel = 0;
  std::vector<std::string> skipped;
  for (const Tensor& t : inits) {
    const auto it = axis_of.find(t.name);
    if (it == axis_of.end()) continue;
    if (t.external) {
      skipped.push_back(t.name + " (external data)");
      continue;
    }
    if (t.type != 1 || !t.has_data) {
      skipped.push_back(t.name + " (not float32 values in the file)");
      continue;
    }
    std::int64_t n = 1;
    for (std::int64_t d : t.dims) n *= d;
    if (t.dims.empty() || n <= 0 || static_cast<std::size_t>(n) * 4 != t.end - t.begin)
      w.bad(t.begin, "initializer '" + t.name + "' holds " + std::to_string((t.end - t.begin) / 4) +
                         " floats for dims of " + std::to_string(n) + " values");
    std::vector<float> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), bytes.data() + t.begin, v.size() * 4);
    const std::vector<float> before = v;
    for (float x : v)
      if (!std::isfinite(x)) w.bad(t.begin, "initializer '" + t.name + "' holds a non-finite weight");
    if (f16) {
      for (float& x : v) x = static_cast<float>(Eigen::half(x));
    } else {
      // Symmetric int8 per channel of `axis`: the values of channel c are those whose index along
      // the axis is c (row-major: inner = product of the dims after it).
      const int rank = static_cast<int>(t.dims.size());
      const int axis = it->second < 0 ? rank - 1 : std::min(it->second, rank - 1);
      std::int64_t inner = 1;
      for (int d = axis + 1; d < rank; ++d) inner *= t.dims[static_cast<std::size_t>(d)];
      const std::int64_t channels = t.dims[static_cast<std::size_t>(axis)];
      std::vector<float> scale(static_cast<std::size_t>(channels), 0.0f);
      for (std::int64_t i = 0; i < n; ++i) {
        float& s = scale[static_cast<std::size_t>((i / inner) % channels)];
        s = std::max(s, std::fabs(v[static_cast<std::size_t>(i)]));
      }
      for (float& s : scale) s /= 127.0f;
      for (std::int64_t i = 0; i < n; ++i) {
        const float s = scale[static_cast<std::size_t>((i / inner) % channels)];
        float& x = v[static_cast<std::size_t>(i)];
        x = s > 0 ? std::clamp(std::nearbyint(x / s), -127.0f, 127.0f) * s : 0.0f;
      }
    }
    double tmax = 0, wmax = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      tmax = std::max(tmax, std::fabs(static_cast<double>(v[i]) - before[i]));
      wmax = std::max(wmax, std::fabs(static_cast<double>(before[i])));
    }
    max_abs = std::max(max_abs, tmax);
    if (wmax > 0) max_rel = std::max(max_rel, tmax / wmax);
    std::memcpy(bytes.data() + t.begin, v.data(), v.size() * 4);
    values += n;
    tensors.push_back({{"name", t.name}, {"values", n}, {"max_abs_change", tmax}});
  }
  if (tensors.empty())
    throw UsageError("convert: '" + a.in + "' has no float32 weight of a Conv, ConvTranspose, MatMul or Gemm" +
                     (skipped.empty() ? std::string() : "; left out: " + skipped.front()));
  write_text(a.out, std::string(bytes.begin(), bytes.end()));
  if (a.json) {
    std::cout << json{{"in", a.in},
                      {"out", a.out},
                      {"weights", a.weights},
                      {"tensors", tensors},
                      {"values", values},
                      {"max_abs_change", max_abs},
                      {"max_change_of_range", max_rel},
                      {"left_out", skipped}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << a.out << ": " << tensors.size() << " weight tensor(s), " << values << " values "
              << (f16 ? "rounded to float16" : "quantized to int8 (per channel)") << "; largest change " << max_abs
              << " (" << 100.0 * max_rel << "% of its tensor's largest |w|)\n";
    for (const std::string& s : skipped) std::cout << "  left out: " << s << "\n";
  }
  return kNothingFound;
}

}  // namespace

void add_convert_command(CLI::App& app, Command& run) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* convert = app.add_subcommand(
      "convert", "a release candidate of an ONNX model: its weights rounded to float16 or quantized to int8");
  convert->add_option("IN", args->in, "the ONNX model")->required();
  convert->add_option("OUT", args->out, "the candidate to write (float32 weights holding the converted values)")
      ->required();
  convert->add_option("--weights", args->weights, "f16 (round to float16) or int8 (symmetric, per output channel)")
      ->required()
      ->check(CLI::IsMember({"f16", "int8"}));
  convert->add_flag("--json", args->json, "machine-readable output");
  convert->callback([args, &run] { run = [args] { return run_convert(*args); }; });
}

}  // namespace nnfuzz_cli
