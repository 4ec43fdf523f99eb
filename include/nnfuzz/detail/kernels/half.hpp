// SPDX-License-Identifier: MIT
// nnfuzz: exact float16 arithmetic for dense layers, batch-invariant (internal).
#pragma once

#include "../config.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(NNFUZZ_NO_DISPATCH)
# define NNFUZZ_HALF_DISPATCH 1
# include <cpuid.h>
# include <immintrin.h>
#endif

namespace nnfuzz {
namespace detail {

/// Rounds a float to the nearest float16 value (returned as float).
inline float round_to_half(float x) { return static_cast<float>(Eigen::half(x)); }

#if defined(__GNUC__) && !defined(__clang__)
// GCC's own AVX-512 intrinsic headers trip -Wmaybe-uninitialized in target-attributed code.
# pragma GCC diagnostic push
# pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(NNFUZZ_HALF_DISPATCH)
__attribute__((target("avx512f"))) inline void half_dense_avx512(const float* x, Index rows, Index k_dim,
                                                                 const float* w, Index n_dim, const float* bias,
                                                                 float* z) {
  constexpr int kRows = 8;
# define rnd(v) _mm512_cvtph_ps(_mm512_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
  for (Index j = 0; j < n_dim; j += 16) {
    const Index width = std::min<Index>(16, n_dim - j);
    const __mmask16 mask = static_cast<__mmask16>((1u << width) - 1u);
    const __m512 b = _mm512_maskz_loadu_ps(mask, bias + j);
    Index r = 0;
    for (; r + kRows <= rows; r += kRows) {
      __m512 acc[kRows];
      for (int i = 0; i < kRows; ++i) acc[i] = _mm512_setzero_ps();
      for (Index k = 0; k < k_dim; ++k) {
        const __m512 wv = _mm512_maskz_loadu_ps(mask, w + k * n_dim + j);
        for (int i = 0; i < kRows; ++i) {
          const __m512 p = rnd(_mm512_mul_ps(_mm512_set1_ps(x[(r + i) * k_dim + k]), wv));
          acc[i] = rnd(_mm512_add_ps(acc[i], p));
        }
      }
      for (int i = 0; i < kRows; ++i)
        _mm512_mask_storeu_ps(z + (r + i) * n_dim + j, mask, rnd(_mm512_add_ps(acc[i], b)));
    }
    for (; r < rows; ++r) {
      __m512 acc = _mm512_setzero_ps();
      for (Index k = 0; k < k_dim; ++k) {
        const __m512 wv = _mm512_maskz_loadu_ps(mask, w + k * n_dim + j);
        acc = rnd(_mm512_add_ps(acc, rnd(_mm512_mul_ps(_mm512_set1_ps(x[r * k_dim + k]), wv))));
      }
      _mm512_mask_storeu_ps(z + r * n_dim + j, mask, rnd(_mm512_add_ps(acc, b)));
    }
  }
# undef rnd
}

__attribute__((target("avx2,f16c"))) inline void half_dense_f16c(const float* x, Index rows, Index k_dim,
                                                                 const float* w, Index n_dim, const float* bias,
                                                                 float* z) {
# define rnd(v) _mm256_cvtph_ps(_mm256_cvtps_ph((v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
  for (Index j = 0; j < n_dim; j += 8) {
    const Index width = std::min<Index>(8, n_dim - j);
    alignas(32) float wbuf[8] = {0}, out[8], bbuf[8] = {0};
    for (Index c = 0; c < width; ++c) bbuf[c] = bias[j + c];
    const __m256 b = _mm256_load_ps(bbuf);
    for (Index r = 0; r < rows; ++r) {
      __m256 acc = _mm256_setzero_ps();
      for (Index k = 0; k < k_dim; ++k) {
        __m256 wv;
        if (width == 8) {
          wv = _mm256_loadu_ps(w + k * n_dim + j);
        } else {
          for (Index c = 0; c < width; ++c) wbuf[c] = w[k * n_dim + j + c];
          wv = _mm256_load_ps(wbuf);
        }
        acc = rnd(_mm256_add_ps(acc, rnd(_mm256_mul_ps(_mm256_set1_ps(x[r * k_dim + k]), wv))));
      }
      _mm256_store_ps(out, rnd(_mm256_add_ps(acc, b)));
      for (Index c = 0; c < width; ++c) z[r * n_dim + j + c] = out[c];
    }
  }
# undef rnd
}
#endif

#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic pop
#endif

inline void half_dense_scalar(const float* x, Index rows, Index k_dim, const float* w, Index n_dim, const float* bias,
                              float* z) {
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n_dim; ++j) {
      float acc = 0;
      for (Index k = 0; k < k_dim; ++k) acc = round_to_half(acc + round_to_half(x[r * k_dim + k] * w[k * n_dim + j]));
      z[r * n_dim + j] = round_to_half(acc + bias[j]);
    }
}

/// Z = X · W + bias in IEEE float16 arithmetic: every product x·w and every partial sum is
/// rounded to float16, accumulating over k in order 0..K-1, then the bias is added (rounded).
/// This is what a scalar float16 unit (and Eigen's per-operation half arithmetic) computes.
///
/// Unlike a blocked GEMM, each output depends only on its own row and the weights, in a fixed
/// order: a row gives the same bits whatever the batch size or position, so a finding replays.
/// Inputs X (B×K), W (K×N) and bias must already hold float16 values (stored as float).
/// Vectorised with AVX-512 (16 columns × 8 rows at a time) or F16C/AVX2 (8 columns); a scalar
/// loop otherwise; chosen at run time from the CPU, not from the build flags. All paths give
/// identical bits.
inline void half_arithmetic_dense(const float* x, Index rows, Index k_dim, const float* w, Index n_dim,
                                  const float* bias, float* z) {
#if defined(NNFUZZ_HALF_DISPATCH)
  static const int kernel = [] {
    if (__builtin_cpu_supports("avx512f")) return 2;
    unsigned a = 0, b = 0, c = 0, d = 0;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);  // clang's builtin lacks "f16c"
    return __builtin_cpu_supports("avx2") && f16c ? 1 : 0;
  }();
  if (kernel == 2) return half_dense_avx512(x, rows, k_dim, w, n_dim, bias, z);
  if (kernel == 1) return half_dense_f16c(x, rows, k_dim, w, n_dim, bias, z);
#endif
  half_dense_scalar(x, rows, k_dim, w, n_dim, bias, z);
}

}  // namespace detail
}  // namespace nnfuzz
