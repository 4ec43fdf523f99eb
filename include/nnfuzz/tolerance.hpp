// SPDX-License-Identifier: MIT
// nnfuzz: tolerances that know the arithmetic — how far a candidate tensor may differ from the
// reference before it counts: float16 / bfloat16 in ulps of the reduced type, int8 in
// quantisation steps of the tensor's scale, float32 with atol / rtol (numpy.isclose's
// |candidate − reference| <= atol + rtol·|reference|, as Polygraphy's --atol/--rtol).
//
//     nnfuzz::TensorTolerances tol(nnfuzz::Tolerance::float16(1));   // every tensor: 1 float16 ulp
//     tol.set("logits", nnfuzz::Tolerance::int8(0.05, 1));           // the logits: 1 step of 0.05
//     tol.of("logits").exceeded(1.0, 1.1);                            // true: two steps
#pragma once

#include "detail/config.hpp"
#include "detail/finite.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// The number format a candidate tensor was computed or stored in: what its tolerance counts in.
enum class NumberFormat {
  float32,   ///< atol + rtol·|reference|
  float16,   ///< ulps of IEEE binary16 (10 mantissa bits)
  bfloat16,  ///< ulps of bfloat16 (7 mantissa bits, float32's exponent range)
  int8,      ///< quantisation steps of the tensor's scale
};

/// The name of a NumberFormat ("float32", "float16", "bfloat16", "int8").
inline const char* format_name(NumberFormat f) {
  switch (f) {
    case NumberFormat::float16:
      return "float16";
    case NumberFormat::bfloat16:
      return "bfloat16";
    case NumberFormat::int8:
      return "int8";
    case NumberFormat::float32:
      break;
  }
  return "float32";
}

/// The spacing of float16 numbers at magnitude |x|: 2^(e − 10) for 2^e <= |x| < 2^(e+1) in the
/// normal range (|x| >= 2^-14), 2^-24 below it. (Eigen's NumTraits<half>::epsilon() is not this.)
inline double float16_ulp(double x) {
  const double a = std::abs(x);
  if (!(a >= 6.103515625e-05)) return 5.9604644775390625e-08;
  return std::ldexp(1.0, std::ilogb(a) - 10);
}

/// The spacing of bfloat16 numbers at magnitude |x|: 2^(e − 7) in the normal range (|x| >=
/// 2^-126), 2^-133 below it.
inline double bfloat16_ulp(double x) {
  const double a = std::abs(x);
  if (!(a >= 1.1754943508222875e-38)) return std::ldexp(1.0, -133);
  return std::ldexp(1.0, std::ilogb(a) - 7);
}

/// How far one tensor of a candidate may differ from the reference, element by element, in the
/// units of the arithmetic that produced it. An element *exceeds* its tolerance when
/// |candidate − reference| > allowed(reference, candidate), where allowed() is
///   float32:  atol + rtol·|reference|;
///   float16, bfloat16:  ulps × the format's ulp at min(|reference|, |candidate|);
///   int8:  steps × scale.
/// So, with the defaults (1 ulp, 1 step), a one-ulp tie is not a regression and a two-step int8
/// error is. Two equal non-finite values (NaN and NaN, or the same infinity) are within; a
/// non-finite value against anything else exceeds.
struct Tolerance {
  NumberFormat format = NumberFormat::float32;  ///< what the tolerance counts in
  double atol = 1e-5;                           ///< float32: absolute part, >= 0
  double rtol = 1e-5;                           ///< float32: relative part (of |reference|), >= 0
  double ulps = 1;                              ///< float16 / bfloat16: ulps allowed, >= 0
  double steps = 1;                             ///< int8: quantisation steps allowed, >= 0
  double scale = 0;                             ///< int8: the tensor's quantisation scale, > 0

  /// float32 with |Δ| <= atol + rtol·|reference|.
  static Tolerance float32(double atol, double rtol = 0) {
    Tolerance t;
    t.format = NumberFormat::float32;
    t.atol = atol;
    t.rtol = rtol;
    t.validate();
    return t;
  }
  /// float16 with |Δ| <= ulps float16 ulps.
  static Tolerance float16(double ulps = 1) { return in_ulps(NumberFormat::float16, ulps); }
  /// bfloat16 with |Δ| <= ulps bfloat16 ulps.
  static Tolerance bfloat16(double ulps = 1) { return in_ulps(NumberFormat::bfloat16, ulps); }
  /// int8 with |Δ| <= steps × scale (the tensor's quantisation scale).
  static Tolerance int8(double scale, double steps = 1) {
    Tolerance t;
    t.format = NumberFormat::int8;
    t.scale = scale;
    t.steps = steps;
    t.validate();
    return t;
  }

  /// Throws std::invalid_argument naming the field and its value for a negative or non-finite
  /// atol, rtol, ulps or steps, or an int8 scale that is not positive and finite.
  void validate() const {
    auto check = [](const char* field, double v) {
      if (!(v >= 0) || !detail::is_finite(v))
        detail::fail("Tolerance(): option '", field, "' must be >= 0 and finite, got ", v);
    };
    check("atol", atol);
    check("rtol", rtol);
    check("ulps", ulps);
    check("steps", steps);
    if (format == NumberFormat::int8 && (!(scale > 0) || !detail::is_finite(scale)))
      detail::fail(
          "Tolerance(): option 'scale' (an int8 tensor's quantisation scale) must be positive and finite, got ", scale);
  }

  /// One unit of the format at these values: the ulp (float16, bfloat16), the scale (int8), 1
  /// (float32: errors are then absolute).
  double unit(double reference, double candidate) const {
    // The spacing at the smaller magnitude: two neighbours across a power of two are then one
    // ulp apart (2 − 2^-10 and 2 in float16), as a count of representable values says.
    const double m = std::min(std::abs(reference), std::abs(candidate));
    switch (format) {
      case NumberFormat::float16:
        return float16_ulp(m);
      case NumberFormat::bfloat16:
        return bfloat16_ulp(m);
      case NumberFormat::int8:
        return scale;
      case NumberFormat::float32:
        break;
    }
    return 1.0;
  }
  /// The unit of units(): "ulps", "steps", or "" (float32: absolute).
  const char* unit_name() const {
    return format == NumberFormat::int8 ? "steps" : format == NumberFormat::float32 ? "" : "ulps";
  }
  /// The largest |candidate − reference| that is within tolerance.
  double allowed(double reference, double candidate) const {
    switch (format) {
      case NumberFormat::float16:
      case NumberFormat::bfloat16:
        return ulps * unit(reference, candidate);
      case NumberFormat::int8:
        return steps * scale;
      case NumberFormat::float32:
        break;
    }
    return atol + rtol * std::abs(reference);
  }
  /// |candidate − reference| in units of the format (ulps, steps; absolute for float32);
  /// infinity for a non-finite mismatch, 0 for equal non-finite values.
  double units(double reference, double candidate) const {
    if (!detail::is_finite(reference) || !detail::is_finite(candidate))
      return same_non_finite(reference, candidate) ? 0.0 : std::numeric_limits<double>::infinity();
    return std::abs(candidate - reference) / unit(reference, candidate);
  }
  /// |candidate − reference| over allowed(): above 1 exceeds (infinity when nothing is allowed
  /// and the values differ; 0 when they are equal).
  double ratio(double reference, double candidate) const {
    if (!detail::is_finite(reference) || !detail::is_finite(candidate))
      return same_non_finite(reference, candidate) ? 0.0 : std::numeric_limits<double>::infinity();
    const double d = std::abs(candidate - reference);
    if (d == 0) return 0.0;
    const double a = allowed(reference, candidate);
    return a > 0 ? d / a : std::numeric_limits<double>::infinity();
  }
  /// True when the candidate value is farther from the reference than allowed.
  bool exceeded(double reference, double candidate) const { return ratio(reference, candidate) > 1.0; }
  /// "float16, 1 ulp", "int8, 1 step of 0.05", "float32, atol 1e-05 rtol 1e-05".
  std::string describe() const {
    switch (format) {
      case NumberFormat::float16:
      case NumberFormat::bfloat16:
        return detail::message(format_name(format), ", ", ulps, ulps == 1 ? " ulp" : " ulps");
      case NumberFormat::int8:
        return detail::message("int8, ", steps, steps == 1 ? " step" : " steps", " of ", scale);
      case NumberFormat::float32:
        break;
    }
    return detail::message("float32, atol ", atol, " rtol ", rtol);
  }

 private:
  static Tolerance in_ulps(NumberFormat f, double n) {
    Tolerance t;
    t.format = f;
    t.ulps = n;
    t.validate();
    return t;
  }
  static bool same_non_finite(double a, double b) { return (detail::is_nan(a) && detail::is_nan(b)) || a == b; }
};

/// The tolerances of a model's named tensors: one per name, and a fallback for the rest (the
/// options struct the regression objectives, localisation and reports share).
struct TensorTolerances {
  Tolerance fallback;                                      ///< for tensors without their own
  std::vector<std::pair<std::string, Tolerance>> tensors;  ///< (name, tolerance), first match wins

  /// Every tensor with `all` (float32 atol = rtol = 1e-5 by default).
  TensorTolerances(Tolerance all = {}) : fallback(all) { all.validate(); }  // NOLINT: implicit on purpose
  /// Gives tensor `name` its own tolerance (replacing an earlier one); returns *this.
  TensorTolerances& set(const std::string& name, const Tolerance& t) {
    t.validate();
    for (auto& p : tensors)
      if (p.first == name) {
        p.second = t;
        return *this;
      }
    tensors.emplace_back(name, t);
    return *this;
  }
  /// The tolerance of tensor `name`.
  const Tolerance& of(const std::string& name) const {
    for (const auto& p : tensors)
      if (p.first == name) return p.second;
    return fallback;
  }
};

/// How far a candidate tensor (or one row of it) is from the reference, under a Tolerance.
struct TensorError {
  Index size = 0;        ///< elements compared
  Index exceeded = 0;    ///< elements over their tolerance
  Index worst = -1;      ///< element with the largest ratio (-1 when empty)
  double max_abs = 0;    ///< max |candidate − reference| (infinity for a non-finite mismatch)
  double mean_abs = 0;   ///< mean |candidate − reference| over the finite pairs
  double max_units = 0;  ///< max error in units of the format (ulps, steps; absolute for float32)
  double max_ratio = 0;  ///< max |Δ| / allowed: above 1 exceeds
  /// True when some element exceeds its tolerance.
  bool exceeds() const { return exceeded > 0; }
};

namespace detail {
template <typename T>
double to_double(const T& v) {
  if constexpr (std::is_arithmetic<T>::value)
    return static_cast<double>(v);
  else
    return static_cast<double>(static_cast<float>(v));  // Eigen::half, bfloat16
}
}  // namespace detail

/// Compares two tensors of the same size element by element (any scalar types, e.g. float
/// against Eigen::half: values are taken as double). Throws std::invalid_argument for sizes that
/// differ.
template <typename A, typename B>
TensorError tensor_error(const Eigen::DenseBase<A>& reference, const Eigen::DenseBase<B>& candidate,
                         const Tolerance& tolerance) {
  if (reference.rows() != candidate.rows() || reference.cols() != candidate.cols())
    detail::fail("tensor_error(): the reference is ", reference.rows(), " x ", reference.cols(), ", the candidate ",
                 candidate.rows(), " x ", candidate.cols());
  TensorError e;
  e.size = reference.size();
  double sum = 0;
  Index finite = 0;
  Index i = 0;
  for (Index r = 0; r < reference.rows(); ++r)
    for (Index c = 0; c < reference.cols(); ++c, ++i) {
      const double a = detail::to_double(reference.derived().coeff(r, c));
      const double b = detail::to_double(candidate.derived().coeff(r, c));
      const double ratio = tolerance.ratio(a, b);
      const double d = detail::is_finite(a) && detail::is_finite(b) ? std::abs(b - a) : (ratio > 0 ? HUGE_VAL : 0.0);
      if (detail::is_finite(d)) {
        sum += d;
        ++finite;
      }
      e.max_abs = std::max(e.max_abs, d);
      e.max_units = std::max(e.max_units, tolerance.units(a, b));
      if (ratio > 1) ++e.exceeded;
      if (e.worst < 0 || ratio > e.max_ratio) {
        e.max_ratio = ratio;
        e.worst = i;
      }
    }
  e.mean_abs = finite ? sum / static_cast<double>(finite) : 0.0;
  return e;
}

}  // namespace nnfuzz
