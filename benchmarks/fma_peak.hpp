// SPDX-License-Identifier: MIT
// The CPU's FMA peak on one core, measured (issue #37): 12 independent chains of AVX2 FMAs (or
// AVX-512 FMAs, on a CPU that has them), no memory traffic. bench_nnfuzz and bench_user report it beside the forward
// pass, so that the forward pass's share of the peak is a ratio measured in one run.
#pragma once

#include <nnfuzz/rng.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>

namespace nnfuzz_bench {
#if defined(NNFUZZ_X86_DISPATCH)
NNFUZZ_TARGET_AVX2 __attribute__((noipa)) inline float fma_chains(std::int64_t n) {
  __m256 a[12];
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(static_cast<float>(i));
  for (std::int64_t k = 0; k < n; ++k) {
# pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], b, c);
  }
  __m256 sum = a[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, a[i]);
  return _mm256_cvtss_f32(sum);
}
inline void BM_FmaPeak_Avx2(benchmark::State& state) {
  if (!nnfuzz::detail::cpu_has_avx2_fma()) {
    state.SkipWithError("no AVX2 + FMA");
    return;
  }
  constexpr std::int64_t kSteps = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(fma_chains(kSteps));
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * 12 * 8 * 2 * 1e-9,
                                                benchmark::Counter::kIsRate);
}
NNFUZZ_TARGET_AVX512 __attribute__((noipa)) inline float fma_chains_avx512(std::int64_t n) {
  __m512 a[12];
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  for (std::int64_t k = 0; k < n; ++k) {
# pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], b, c);
  }
  __m512 sum = a[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, a[i]);
  return _mm512_cvtss_f32(sum);
}
inline void BM_FmaPeak_Avx512(benchmark::State& state) {
  if (!nnfuzz::detail::cpu_has_avx512()) {
    state.SkipWithError("no AVX-512");
    return;
  }
  constexpr std::int64_t kSteps = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(fma_chains_avx512(kSteps));
  state.counters["GFLOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * kSteps * 12 * 16 * 2 * 1e-9,
                                                benchmark::Counter::kIsRate);
}
#endif
}  // namespace nnfuzz_bench
