// SPDX-License-Identifier: MIT
// nnfuzz: configuration shared by every header. Include before Eigen (the umbrella does).
#pragma once

// Eigen 3.4 enables the F16C half<->float conversions only for clang; with GCC every
// Eigen::half operation goes through a slow software conversion (66-130x slower products).
// Enable them wherever the compiler targets F16C. This must be seen before Eigen/Core.
#if defined(__F16C__) && !defined(EIGEN_HAS_FP16_C)
# if defined(EIGEN_WORLD_VERSION)
#  pragma message( \
      "nnfuzz: Eigen was included before nnfuzz; Eigen::half will not use F16C with GCC. Include nnfuzz first or define EIGEN_HAS_FP16_C.")
# else
#  define EIGEN_HAS_FP16_C
# endif
#endif

// -ffast-math lets the compiler assume that no value is NaN or infinite. nnfuzz's own checks test
// exponent bits (detail/finite.hpp), so they keep working; but the *model's* arithmetic under
// -ffast-math may differ from the build you ship (reassociated sums, flushed denormals, folded
// NaN checks in your code). Define NNFUZZ_NO_FAST_MATH_WARNING to silence this note.
#if defined(__FAST_MATH__) && !defined(NNFUZZ_NO_FAST_MATH_WARNING)
# pragma message( \
     "nnfuzz: built with -ffast-math: nnfuzz's NaN/Inf checks stay exact (they test bits), but your model's own arithmetic and NaN handling may differ from a build without it; see docs/performance.md")
#endif

#include <Eigen/Core>

#include "finite.hpp"
#include <sstream>
#include <stdexcept>
#include <string>

/// Internal invariant check. Define NNFUZZ_ASSERT before including nnfuzz to override it.
#ifndef NNFUZZ_ASSERT
# include <cassert>
# define NNFUZZ_ASSERT(cond) assert(cond)
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
/// Throws `std::invalid_argument` (or aborts with the message under -fno-exceptions).
# define NNFUZZ_THROW(exception) throw exception
#else
# include <cstdio>
# include <cstdlib>
# define NNFUZZ_THROW(exception) (std::fprintf(stderr, "nnfuzz: %s\n", (exception).what()), std::abort())
#endif

namespace nnfuzz {

/// Row-major dynamic float matrix: one row per input (batch-first), the library's currency.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// One input or one coverage vector.
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
/// Per-row flags of a batch (finding / new coverage).
using Mask = Eigen::Array<bool, Eigen::Dynamic, 1>;
/// Index type used for rows, corpus ids and dimensions.
using Index = Eigen::Index;

namespace detail {

inline void append_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}

/// Builds a message from its parts: `message("load_idx(): file '", path, "' ...")`.
template <typename... Parts>
std::string message(const Parts&... parts) {
  std::ostringstream os;
  append_all(os, parts...);
  return os.str();
}

/// Throws std::invalid_argument built from the parts; the first part names the function.
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  NNFUZZ_THROW(std::invalid_argument(message(parts...)));
#if !(defined(__cpp_exceptions) || defined(__EXCEPTIONS))
  std::abort();
#endif
}

}  // namespace detail
}  // namespace nnfuzz
