// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/rng.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using nnfuzz::Index;
using nnfuzz::Rng;

TEST_CASE("Rng: one seed gives one sequence", "[rng]") {
  Rng a(42), b(42), c(43);
  std::vector<float> fa(1000), fb(1000), fc(1000);
  for (int i = 0; i < 10; ++i) REQUIRE(a.next_u64() == b.next_u64());
  a.fill_normal(fa.data(), 1000);
  b.fill_normal(fb.data(), 1000);
  c.fill_normal(fc.data(), 1000);
  REQUIRE(fa == fb);
  REQUIRE(fa != fc);
  a.seed(7);
  b.seed(7);
  REQUIRE(a.uniform_index(1000) == b.uniform_index(1000));
}

TEST_CASE("Rng: fill_normal is N(0,1): mean, variance, tails, and no NaN", "[rng]") {
  Rng rng(1);
  const Index n = 1 << 20;
  std::vector<float> x(n);
  rng.fill_normal(x.data(), n);
  double s = 0, s2 = 0, s4 = 0;
  Index beyond2 = 0, beyond3 = 0;
  for (float v : x) {
    REQUIRE(std::isfinite(v));
    s += v;
    s2 += double(v) * v;
    s4 += double(v) * v * v * v;
    beyond2 += std::abs(v) > 2;
    beyond3 += std::abs(v) > 3;
  }
  const double mean = s / n, var = s2 / n - mean * mean, kurt = s4 / n / (var * var);
  CHECK(std::abs(mean) < 5.0 / std::sqrt(double(n)));  // 5 standard errors
  CHECK(std::abs(var - 1) < 5.0 * std::sqrt(2.0 / n));
  CHECK(std::abs(kurt - 3) < 0.05);
  CHECK(double(beyond2) / n == Approx(0.0455).epsilon(0.03));
  CHECK(double(beyond3) / n == Approx(0.0027).epsilon(0.1));
}

using nnfuzz::noise_kernel_name;
using nnfuzz::NoiseKernel;
using nnfuzz::set_noise_kernel;
namespace detail = nnfuzz::detail;
namespace {
// Runs the enclosing test body with each noise kernel this CPU can run, restoring the default.
struct KernelScope {
  explicit KernelScope(NoiseKernel k) { set_noise_kernel(k); }
  ~KernelScope() { set_noise_kernel(NoiseKernel::automatic); }
};
std::vector<NoiseKernel> kernels_here() {
  std::vector<NoiseKernel> k{NoiseKernel::generic};
  if (detail::cpu_has_avx512()) k.push_back(NoiseKernel::avx512);
  if (detail::cpu_has_avx2_fma()) k.push_back(NoiseKernel::avx2);
  return k;
}
}  // namespace

TEST_CASE("Rng: the noise kernel is chosen at run time - each kernel reproduces itself", "[rng]") {
  // Whatever the build flags, a CPU with AVX-512 runs the AVX-512 kernel by default, one with
  // AVX2 + FMA the AVX2 one.
  CHECK(std::string(noise_kernel_name()) == (detail::cpu_has_avx512()     ? "avx512"
                                             : detail::cpu_has_avx2_fma() ? "avx2"
                                                                          : "generic"));
  std::vector<std::vector<float>> out;
  for (NoiseKernel k : kernels_here()) {
    KernelScope scope(k);
    Rng a(5), b(5);
    std::vector<float> x(1000), y(1000);
    a.fill_normal(x.data(), 1000);
    b.fill_normal(y.data(), 1000);
    CHECK(x == y);
    out.push_back(x);
  }
  for (std::size_t k = 1; k < out.size(); ++k) {  // same uniforms, generic vs nnfuzz's transform: close
    float max_diff = 0;
    for (std::size_t i = 0; i < out[0].size(); ++i) max_diff = std::max(max_diff, std::abs(out[0][i] - out[k][i]));
    CHECK(max_diff < 1e-4f);
  }
  if (!detail::cpu_has_avx512()) CHECK_THROWS_WITH(set_noise_kernel(NoiseKernel::avx512), Catch::Contains("AVX-512"));
  if (!detail::cpu_has_avx2_fma()) CHECK_THROWS_WITH(set_noise_kernel(NoiseKernel::avx2), Catch::Contains("AVX2"));
}

TEST_CASE("Rng: fill_normal follows the normal CDF, tails included", "[rng]") {
  // Chi-square over 0.1-wide bins on [-4.5, 4.5] plus both tails: a shape error anywhere (the
  // transform's approximations of log, sin and cos, the 24-bit uniforms) shows up here. Every
  // kernel this CPU can run.
  for (NoiseKernel kernel : kernels_here()) {
    INFO("kernel " << static_cast<int>(kernel));
    KernelScope scope(kernel);
    Rng rng(2);
    const Index n = Index{1} << 22;
    std::vector<float> x(n);
    rng.fill_normal(x.data(), n);
    const int inner = 90;
    std::vector<double> count(inner + 2);
    for (float v : x) {
      const double b = std::floor((double(v) + 4.5) / 0.1);
      ++count[b < 0 ? 0 : b >= inner ? inner + 1 : static_cast<std::size_t>(b) + 1];
    }
    auto cdf = [](double t) { return 0.5 * std::erfc(-t / std::sqrt(2.0)); };
    double chi2 = 0;
    for (int b = 0; b < inner + 2; ++b) {
      const double lo = b == 0 ? -INFINITY : -4.5 + 0.1 * (b - 1), hi = b == inner + 1 ? INFINITY : -4.5 + 0.1 * b;
      const double expected = n * ((b == inner + 1 ? 1.0 : cdf(hi)) - (b == 0 ? 0.0 : cdf(lo)));
      chi2 += (count[b] - expected) * (count[b] - expected) / expected;
    }
    CHECK(chi2 < 135.8);  // 91 degrees of freedom, p = 0.001
    Index beyond4 = 0;
    for (float v : x) beyond4 += std::abs(v) > 4;
    CHECK(double(beyond4) / n == Approx(6.334e-5).epsilon(0.1));  // the far tail is populated
  }
}

TEST_CASE("Rng: fill_normal does not depend on how the buffer is split", "[rng]") {
  Rng a(3), b(3);
  std::vector<float> whole(100), parts(100);
  a.fill_normal(whole.data(), 100);
  // A 100-float fill consumes 4 blocks of 32; a fill of 32 + 68 consumes 1 + 3: same values.
  b.fill_normal(parts.data(), 32);
  b.fill_normal(parts.data() + 32, 68);
  REQUIRE(whole == parts);
}

TEST_CASE("Rng: fill_uniform covers lo..hi evenly", "[rng]") {
  Rng rng(5);
  const Index n = 200000;
  std::vector<float> x(n);
  rng.fill_uniform(x.data(), n, -2.0f, 3.0f);
  std::vector<int> bins(10);
  for (float v : x) {
    REQUIRE(v >= -2.0f);
    REQUIRE(v < 3.0f);
    ++bins[std::min(9, int((v + 2.0f) / 0.5f))];
  }
  double chi2 = 0;
  for (int c : bins) chi2 += (c - n / 10.0) * (c - n / 10.0) / (n / 10.0);
  CHECK(chi2 < 27.9);  // 9 degrees of freedom, p = 0.001
}

TEST_CASE("Rng: uniform_index is unbiased", "[rng]") {
  Rng rng(9);
  const int k = 7, n = 70000;
  std::vector<int> bins(k);
  for (int i = 0; i < n; ++i) ++bins[rng.uniform_index(k)];
  double chi2 = 0;
  for (int c : bins) chi2 += (c - n / double(k)) * (c - n / double(k)) / (n / double(k));
  CHECK(chi2 < 22.5);  // 6 degrees of freedom, p = 0.001
  double u = rng.uniform();
  CHECK(u >= 0.0);
  CHECK(u < 1.0);
}

TEST_CASE("Rng: the AVX2 and AVX-512 noise kernels give the same bits", "[rng]") {
  // The same transform, lane for lane: a run on an AVX2-only CPU reproduces one made with
  // AVX-512. Checked over 2^22 values (every quadrant, the logarithm's whole range) and odd
  // lengths (the tail).
  if (!detail::cpu_has_avx512() || !detail::cpu_has_avx2_fma()) {
    WARN("this CPU lacks AVX-512 or AVX2: the two kernels cannot both run here");
    return;
  }
  for (const Index n : {Index{1}, Index{17}, Index{33}, Index{784 * 100 + 5}, Index{1} << 22}) {
    INFO("n = " << n);
    std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    {
      KernelScope scope(NoiseKernel::avx512);
      Rng rng(11);
      rng.fill_normal(a.data(), n);
    }
    {
      KernelScope scope(NoiseKernel::avx2);
      CHECK(std::string(noise_kernel_name()) == "avx2");
      Rng rng(11);
      rng.fill_normal(b.data(), n);
    }
    CHECK(std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0);
  }
}

TEST_CASE("Rng: NNFUZZ_NOISE_KERNEL names a kernel or throws naming the variable and the value", "[rng]") {
  const char* saved = std::getenv("NNFUZZ_NOISE_KERNEL");
  const std::string old = saved ? saved : "";
  auto parse = [](const char* v) {
    ::setenv("NNFUZZ_NOISE_KERNEL", v, 1);
    return detail::env_noise_kernel();
  };
  CHECK(parse("") == NoiseKernel::automatic);
  CHECK(parse("automatic") == NoiseKernel::automatic);
  CHECK(parse("generic") == NoiseKernel::generic);
  if (detail::cpu_has_avx2_fma()) CHECK(parse("avx2") == NoiseKernel::avx2);
  if (detail::cpu_has_avx512()) CHECK(parse("avx512") == NoiseKernel::avx512);
  CHECK_THROWS_WITH(parse("AVX2"), Catch::Contains("NNFUZZ_NOISE_KERNEL='AVX2'") && Catch::Contains("avx512"));
  CHECK_THROWS_AS(parse("sse2"), std::invalid_argument);
  if (saved)
    ::setenv("NNFUZZ_NOISE_KERNEL", old.c_str(), 1);
  else
    ::unsetenv("NNFUZZ_NOISE_KERNEL");
}
