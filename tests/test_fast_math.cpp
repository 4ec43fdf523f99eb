// SPDX-License-Identifier: MIT
// Built with -ffast-math (its own executable, so that no other translation unit shares its inline
// functions): nnfuzz's NaN/Inf checks must still see NaNs and infinities, which -ffast-math lets a
// compiler assume away. Before nnfuzz tested exponent bits, including nnfuzz here was an #error.
#define NNFUZZ_NO_FAST_MATH_WARNING
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <cstring>
#include <limits>
#include <vector>

using namespace nnfuzz;

namespace {
// Values the optimiser cannot see through.
float opaque(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
struct Out {
  RowMatrix coverage, y;
  template <class F>
  void for_each_tensor(F&& f) const {
    f("y", y);
  }
};
}  // namespace

TEST_CASE("fast-math: nnfuzz's non-finite checks still see NaN and Inf", "[fast_math]") {
  static_assert(
#if defined(__FAST_MATH__)
      true,
#else
      false,
#endif
      "this test must be compiled with -ffast-math");
  const float nan = opaque(0x7fc00000u), inf = opaque(0x7f800000u), one = opaque(0x3f800000u);
  CHECK(!detail::is_finite(nan));
  CHECK(!detail::is_finite(inf));
  CHECK(detail::is_finite(one));
  CHECK(detail::is_nan(nan));
  CHECK(!detail::is_nan(inf));
  Out out;
  out.y = RowMatrix::Constant(3, 4, one);
  out.y(1, 2) = nan;
  out.y(2, 0) = -inf;
  Mask hits = Mask::Constant(3, false);
  NonFiniteObjective().check(out.y, out, hits);
  CHECK(!hits(0));
  CHECK(hits(1));
  CHECK(hits(2));
  // Coverage: a NaN vector is never new; seeds with NaN are refused.
  BruteForceCoverage cov(0.5f);
  cov.reset(1);
  RowMatrix v(2, 1);
  v << nan, one;
  Mask is_new;
  cov.observe(v, is_new);
  CHECK(!is_new(0));
  CHECK(is_new(1));
  CHECK_THROWS_WITH(GaussianMutator(nan), Catch::Contains("'sigma'"));
}

TEST_CASE("all_finite: every length and position, every kind of special value", "[fast_math]") {
  // The 8-lane body and the scalar tail: lengths 0..40, one special value at each position.
  const float specials[] = {opaque(0x7fc00000u), opaque(0xffc00001u), opaque(0x7f800000u), opaque(0xff800000u)};
  const float finite[] = {opaque(0x7f7fffffu), opaque(0xff7fffffu), opaque(0x00000001u), opaque(0x80000000u),
                          opaque(0x3f800000u)};  // FLT_MAX, -FLT_MAX, a denormal, -0, 1
  std::vector<float> v;
  for (std::size_t n = 0; n <= 40; ++n) {
    v.assign(n, 0.0f);
    for (std::size_t i = 0; i < n; ++i) v[i] = finite[i % 5];
    INFO("n " << n);
    CHECK(detail::all_finite(v.data(), n));
    for (std::size_t at = 0; at < n; ++at)
      for (const float bad : specials) {
        const float keep = v[at];
        v[at] = bad;
        INFO("at " << at);
        CHECK_FALSE(detail::all_finite(v.data(), n));
        v[at] = keep;
      }
  }
}
