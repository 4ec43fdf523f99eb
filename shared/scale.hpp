// SPDX-License-Identifier: MIT
// The value range inputs live in (--scale), for the nnfuzz command and the experiment drivers:
// one type, one parser, one message.
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

namespace nnfuzz_flags {

/// The value range inputs live in: bytes (PNG, IDX, uint8 .npy) map 0..255 onto [lo, hi], float
/// seeds must already lie in it. The named ranges are 01 = [0, 1] and pm1 = [-1, 1] (TensorFuzz's).
struct Scale {
  float lo = 0.0f;  ///< the value of byte 0
  float hi = 1.0f;  ///< the value of byte 255

  /// Parses "01", "pm1" or "LO,HI" (finite, LO < HI); throws std::invalid_argument naming
  /// `option` and the value.
  static Scale parse(const std::string& text, const std::string& option = "--scale") {
    if (text == "01") return {0.0f, 1.0f};
    if (text == "pm1") return {-1.0f, 1.0f};
    const auto comma = text.find(',');
    Scale s;
    try {
      if (comma == std::string::npos) throw std::invalid_argument("no comma");
      std::size_t a = 0, b = 0;
      s.lo = std::stof(text.substr(0, comma), &a);
      s.hi = std::stof(text.substr(comma + 1), &b);
      if (a != comma || b != text.size() - comma - 1) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      throw std::invalid_argument("option " + option + ": '" + text + "' is not LO,HI (e.g. 0,1 or -1,1; or 01, pm1)");
    }
    if (!std::isfinite(s.lo) || !std::isfinite(s.hi) || !(s.lo < s.hi))
      throw std::invalid_argument("option " + option + ": '" + text + "' must be two finite numbers LO < HI");
    return s;
  }
  /// "01", "pm1", or "LO,HI".
  std::string name() const {
    if (lo == 0.0f && hi == 1.0f) return "01";
    if (lo == -1.0f && hi == 1.0f) return "pm1";
    std::ostringstream o;
    o << lo << ',' << hi;
    return o.str();
  }
  /// True for 01 and pm1 (the ranges the experiments train and cache models for).
  bool named() const { return name() == "01" || name() == "pm1"; }
  /// Input units per [0, 1] unit: 2 on [-1, 1].
  float factor() const { return hi - lo; }
  /// Maps values in [0, 1] (pixels read as bytes / 255) onto [lo, hi], in place (an Eigen
  /// matrix; no Eigen include here, so that nnfuzz's headers come first and set Eigen up).
  template <typename Matrix>
  void apply(Matrix& x) const {
    if (lo != 0.0f || hi != 1.0f) x = ((x.array() * factor()) + lo).matrix();
  }
};

}  // namespace nnfuzz_flags
