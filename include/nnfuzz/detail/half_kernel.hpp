// nnfuzz: exact float16 arithmetic for dense layers, batch-invariant (internal).
#pragma once

#include "config.hpp"

#if defined(__AVX512F__) || defined(__F16C__)
#  include <immintrin.h>
#endif

namespace nnfuzz {
namespace detail {

/// Rounds a float to the nearest float16 value (returned as float).
inline float round_to_half(float x) { return static_cast<float>(Eigen::half(x)); }

/// Z = X · W + bias in IEEE float16 arithmetic: every product x·w and every partial sum is
/// rounded to float16, accumulating over k in order 0..K-1, then the bias is added (rounded).
/// This is what a scalar float16 unit (and Eigen's per-operation half arithmetic) computes.
///
/// Unlike a blocked GEMM, each output depends only on its own row and the weights, in a fixed
/// order: a row gives the same bits whatever the batch size or position, so a finding replays.
/// Inputs X (B×K), W (K×N) and bias must already hold float16 values (stored as float).
/// Vectorised with AVX-512 (16 columns × 8 rows at a time) or F16C/AVX2 (8 columns); a scalar
/// loop otherwise. All paths give identical bits.
inline void half_arithmetic_dense(const float* x, Index rows, Index k_dim, const float* w, Index n_dim, const float* bias,
                                  float* z) {
#if defined(__AVX512F__)
  constexpr int kRows = 8;
  auto rnd = [](__m512 v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); };
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
      for (int i = 0; i < kRows; ++i) _mm512_mask_storeu_ps(z + (r + i) * n_dim + j, mask, rnd(_mm512_add_ps(acc[i], b)));
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
#elif defined(__F16C__) && defined(__AVX2__)
  auto rnd = [](__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); };
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
#else
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n_dim; ++j) {
      float acc = 0;
      for (Index k = 0; k < k_dim; ++k) acc = round_to_half(acc + round_to_half(x[r * k_dim + k] * w[k * n_dim + j]));
      z[r * n_dim + j] = round_to_half(acc + bias[j]);
    }
#endif
}

}  // namespace detail
}  // namespace nnfuzz
