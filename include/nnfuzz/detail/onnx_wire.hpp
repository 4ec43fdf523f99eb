// SPDX-License-Identifier: MIT
// nnfuzz: a small reader of the protobuf wire format, enough to walk an ONNX ModelProto's
// tensors, and the check OpenCvDnnModel runs on a file before OpenCV trusts its declared shapes
// (every initializer and Constant tensor holds exactly the data its shape and type declare).
// The nnfuzz command reads a file's inputs and outputs with the same reader. No OpenCV here.
#pragma once

#include "config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nnfuzz {

namespace detail {

/// A small reader of the protobuf wire format, enough to walk an ONNX ModelProto's tensors.
/// Malformed input makes ok false (the walk stops; OpenCV's parser then reports the file).
struct ProtoReader {
  const unsigned char* p;
  const unsigned char* end;
  bool ok = true;
  bool done() const { return !ok || p >= end; }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) break;
      const unsigned char b = *p++;
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  // Reads a field's key; for a length-delimited field, `sub` is its payload.
  bool field(std::uint32_t& number, std::uint32_t& wire, ProtoReader& sub) {
    const std::uint64_t key = varint();
    if (!ok) return false;
    number = static_cast<std::uint32_t>(key >> 3);
    wire = static_cast<std::uint32_t>(key & 7);
    sub = ProtoReader{p, p};
    switch (wire) {
      case 0:
        sub.value = varint();
        break;
      case 1:
        if (end - p < 8)
          ok = false;
        else
          p += 8;
        break;
      case 5:
        if (end - p < 4)
          ok = false;
        else
          p += 4;
        break;
      case 2: {
        const std::uint64_t n = varint();
        if (!ok || n > static_cast<std::uint64_t>(end - p)) {
          ok = false;
          break;
        }
        sub = ProtoReader{p, p + n};
        p += n;
        break;
      }
      default:
        ok = false;
    }
    return ok;
  }
  std::uint64_t value = 0;  // of the last varint field read through field()
};

/// Bytes per element of an ONNX TensorProto data type (0: unknown, or strings).
inline std::uint64_t onnx_type_bytes(std::uint64_t t) {
  switch (t) {
    case 2:
    case 3:
    case 9:
      return 1;  // uint8, int8, bool
    case 4:
    case 5:
    case 10:
    case 16:
      return 2;  // uint16, int16, float16, bfloat16
    case 1:
    case 6:
    case 12:
      return 4;  // float, int32, uint32
    case 7:
    case 11:
    case 13:
    case 14:
      return 8;  // int64, double, uint64, complex64
    case 15:
      return 16;  // complex128
    default:
      return 0;
  }
}

/// Checks one TensorProto: the data it holds (raw_data, or the typed repeated field) must be
/// exactly what its dims and data_type declare. Throws naming `source`, the tensor and the sizes.
inline void check_onnx_tensor(ProtoReader t, const std::string& source, const char* where) {
  std::vector<std::uint64_t> dims;
  std::uint64_t type = 0, location = 0, raw = 0, values = 0;
  bool has_raw = false;
  std::string name;
  std::uint32_t number = 0, wire = 0;
  ProtoReader f{nullptr, nullptr};
  auto count_packed = [&](const ProtoReader& v, std::uint32_t w, std::uint64_t width) {
    if (w != 2) return std::uint64_t{1};  // one unpacked value
    if (width) return static_cast<std::uint64_t>(v.end - v.p) / width;
    std::uint64_t n = 0;
    for (const unsigned char* q = v.p; q < v.end; ++q) n += !(*q & 0x80);
    return n;
  };
  while (!t.done() && t.field(number, wire, f)) {
    if (number == 1) {  // dims
      if (wire == 0) {
        dims.push_back(f.value);
      } else if (wire == 2) {
        while (!f.done()) dims.push_back(f.varint());
      }
    } else if (number == 2 && wire == 0) {
      type = f.value;
    } else if (number == 8 && wire == 2) {
      name.assign(reinterpret_cast<const char*>(f.p), static_cast<std::size_t>(f.end - f.p));
    } else if (number == 9 && wire == 2) {
      has_raw = true;
      raw = static_cast<std::uint64_t>(f.end - f.p);
    } else if (number == 14 && wire == 0) {
      location = f.value;
    } else if (number == 4) {
      values += count_packed(f, wire, 4);  // float_data (fixed32)
    } else if (number == 10) {
      values += count_packed(f, wire, 8);  // double_data (fixed64)
    } else if (number == 5 || number == 7 || number == 11) {
      values += count_packed(f, wire, 0);  // int32_data, int64_data, uint64_data (varints)
    } else if (number == 6) {
      ++values;  // string_data
    }
  }
  if (!t.ok || location == 1) return;  // malformed (OpenCV reports it), or external data
  std::uint64_t count = 1;
  std::string shape = "{";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(static_cast<long long>(dims[i]));
    if (dims[i] > (std::uint64_t{1} << 62) || (dims[i] != 0 && count > (std::uint64_t{1} << 62) / dims[i]))
      count = ~std::uint64_t{0};
    else
      count *= dims[i];
  }
  shape += "}";
  const std::uint64_t width = onnx_type_bytes(type);
  const std::string what = message(where, " '", name, "' of shape ", shape, " and ONNX data type ", type);
  if (count == ~std::uint64_t{0})
    fail("OpenCvDnnModel(): ", source, ": ", what, " declares more elements than any file holds");
  if (has_raw) {
    if (width != 0 && raw != count * width)
      fail("OpenCvDnnModel(): ", source, ": ", what, " needs ", count * width, " bytes of raw_data, holds ", raw,
           " (a truncated or forged file; OpenCV would read past them)");
    return;
  }
  // Typed fields: complex types hold two values per element.
  const std::uint64_t per = (type == 14 || type == 15) ? 2 : 1;
  if (count > 0 && values != count * per)
    fail("OpenCvDnnModel(): ", source, ": ", what, " needs ", count * per, " stored values, holds ", values,
         " (a truncated or forged file; OpenCV would read past them)");
}

/// Walks an ONNX model's graph (and its subgraphs): every initializer, and every tensor held by
/// a node attribute (Constant nodes), is checked with check_onnx_tensor() before OpenCV parses
/// the file — OpenCV's importer trusts the declared shapes and reads past the data (SIGSEGV).
inline void check_onnx_graph(ProtoReader g, const std::string& source, int depth) {
  if (depth > 16) return;
  std::uint32_t number = 0, wire = 0;
  ProtoReader f{nullptr, nullptr};
  while (!g.done() && g.field(number, wire, f)) {
    if (wire != 2) continue;
    if (number == 5) {
      check_onnx_tensor(f, source, "initializer");
    } else if (number == 1) {  // NodeProto: its attributes (field 5)
      std::uint32_t n2 = 0, w2 = 0;
      ProtoReader a{nullptr, nullptr};
      while (!f.done() && f.field(n2, w2, a)) {
        if (n2 != 5 || w2 != 2) continue;
        std::uint32_t n3 = 0, w3 = 0;
        ProtoReader v{nullptr, nullptr};
        while (!a.done() && a.field(n3, w3, v)) {
          if (w3 != 2) continue;
          if (n3 == 5 || n3 == 10) check_onnx_tensor(v, source, "node attribute tensor");
          if (n3 == 6 || n3 == 11) check_onnx_graph(v, source, depth + 1);
        }
      }
    }
  }
}

/// check_onnx_graph() on an ONNX ModelProto's graph (field 7).
inline void check_onnx_tensors(const std::vector<unsigned char>& bytes, const std::string& source) {
  ProtoReader m{bytes.data(), bytes.data() + bytes.size()};
  std::uint32_t number = 0, wire = 0;
  ProtoReader f{nullptr, nullptr};
  while (!m.done() && m.field(number, wire, f))
    if (number == 7 && wire == 2) check_onnx_graph(f, source, 0);
}

}  // namespace detail

}  // namespace nnfuzz
