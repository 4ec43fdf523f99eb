// SPDX-License-Identifier: MIT
// nnfuzz: the int8 matrix kernels of Int8Mlp (internal): scalar, AVX2 and AVX-512 VNNI paths,
// chosen at run time, all giving the same exact integers.
#pragma once

#include "../config.hpp"

#include <cstdint>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(NNFUZZ_NO_DISPATCH)
# define NNFUZZ_INT8_DISPATCH 1
# include <immintrin.h>
#endif

namespace nnfuzz {
namespace detail {

/// Largest fan-in of an int8 layer: 65536 × 255 × 127 < 2^31, so the int32 sums never overflow.
constexpr Index kInt8MaxFanIn = Index{1} << 16;

// The integer product of the int8 layers: acc[r][j] = Σ_k x[r][k] · w[k][j] for j < n_pad,
// x: rows × 4·quads uint8 codes (row-major), w packed as [quad][column][4] int8 (packed index
// (q·n_pad + j)·4 + t holds w[4q + t][j], zero past the real inputs and columns), acc: rows ×
// n_pad int32. Every kernel computes the same exact integers (no overflow: kInt8MaxFanIn).
inline void int8_gemm_scalar(const std::uint8_t* x, Index rows, Index quads, const std::int8_t* w, Index n_pad,
                             std::int32_t* acc) {
  for (Index r = 0; r < rows; ++r) {
    std::int32_t* out = acc + r * n_pad;
    std::fill(out, out + n_pad, 0);
    for (Index q = 0; q < quads; ++q) {
      const std::uint8_t* xq = x + r * 4 * quads + 4 * q;
      const std::int8_t* wq = w + q * n_pad * 4;
      for (Index j = 0; j < n_pad; ++j)
        for (int t = 0; t < 4; ++t) out[j] += static_cast<std::int32_t>(xq[t]) * wq[4 * j + t];
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
// GCC's own AVX-512 intrinsic headers trip -Wmaybe-uninitialized in target-attributed code.
# pragma GCC diagnostic push
# pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(NNFUZZ_INT8_DISPATCH)
// AVX-512 VNNI: vpdpbusd multiplies 4 uint8 codes by 4 int8 weights and adds the four products
// to an int32 lane, exactly (no intermediate saturation). Tile: R rows × 16·C columns.
template <int R, int C>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void int8_tile_vnni(const std::uint8_t* x, Index quads,
                                                                                  const std::int8_t* w, Index n_pad,
                                                                                  Index j, std::int32_t* acc) {
  __m512i a[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) a[r][c] = _mm512_setzero_si512();
  const std::int8_t* wq = w + 4 * j;
  for (Index q = 0; q < quads; ++q, wq += 4 * n_pad) {
    __m512i wv[C];
    for (int c = 0; c < C; ++c) wv[c] = _mm512_loadu_si512(wq + 64 * c);
    for (int r = 0; r < R; ++r) {
      std::int32_t four;
      std::memcpy(&four, x + r * 4 * quads + 4 * q, 4);
      const __m512i xb = _mm512_set1_epi32(four);
      for (int c = 0; c < C; ++c) a[r][c] = _mm512_dpbusd_epi32(a[r][c], xb, wv[c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) _mm512_storeu_si512(acc + r * n_pad + j + 16 * c, a[r][c]);
}
template <int R>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void int8_rows_vnni(const std::uint8_t* x, Index quads,
                                                                                  const std::int8_t* w, Index n_pad,
                                                                                  std::int32_t* acc) {
  Index j = 0;
  for (; j + 64 <= n_pad; j += 64) int8_tile_vnni<R, 4>(x, quads, w, n_pad, j, acc);
  switch ((n_pad - j) / 16) {
    case 3:
      int8_tile_vnni<R, 3>(x, quads, w, n_pad, j, acc);
      break;
    case 2:
      int8_tile_vnni<R, 2>(x, quads, w, n_pad, j, acc);
      break;
    case 1:
      int8_tile_vnni<R, 1>(x, quads, w, n_pad, j, acc);
      break;
    default:
      break;
  }
}
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void int8_gemm_vnni(const std::uint8_t* x, Index rows,
                                                                                  Index quads, const std::int8_t* w,
                                                                                  Index n_pad, std::int32_t* acc) {
  constexpr int kRows = 6;  // 6 × 4 accumulators + 4 weight vectors + 1 broadcast of 32 zmm registers
  const Index xs = 4 * quads;
  Index r = 0;
  for (; r + kRows <= rows; r += kRows) int8_rows_vnni<kRows>(x + r * xs, quads, w, n_pad, acc + r * n_pad);
  x += r * xs;
  acc += r * n_pad;
  switch (rows - r) {
    case 5:
      int8_rows_vnni<5>(x, quads, w, n_pad, acc);
      break;
    case 4:
      int8_rows_vnni<4>(x, quads, w, n_pad, acc);
      break;
    case 3:
      int8_rows_vnni<3>(x, quads, w, n_pad, acc);
      break;
    case 2:
      int8_rows_vnni<2>(x, quads, w, n_pad, acc);
      break;
    case 1:
      int8_rows_vnni<1>(x, quads, w, n_pad, acc);
      break;
    default:
      break;
  }
}

// AVX2 without VNNI: codes and weights widened to int16, vpmaddwd adds pairs of products into
// int32 lanes, exactly (|product pair| <= 2 × 255 × 127). A quad of 8 columns is 32 packed bytes:
// each 16-byte half (4 columns × 4 weights) widens to 16 int16; vpmaddwd of it with the row's 4
// codes gives 2 partial sums per column, added pairwise at the end. Tile: R rows × 8 columns.
template <int R>
__attribute__((target("avx2"))) inline void int8_tile_avx2(const std::uint8_t* x, Index quads, const std::int8_t* w,
                                                           Index n_pad, Index j, std::int32_t* acc) {
  __m256i lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  const std::int8_t* wq = w + 4 * j;
  for (Index q = 0; q < quads; ++q, wq += 4 * n_pad) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq + 16)));
    for (int r = 0; r < R; ++r) {
      std::int32_t four;
      std::memcpy(&four, x + r * 4 * quads + 4 * q, 4);
      const __m256i xb = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(four)));
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(xb, w0));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(xb, w1));
    }
  }
  for (int r = 0; r < R; ++r) {
    // hadd within 128-bit lanes gives columns (0,1,4,5 | 2,3,6,7); the permute restores the order.
    const __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[r], hi[r]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * n_pad + j), s);
  }
}
template <int R>
__attribute__((target("avx2"))) inline void int8_rows_avx2(const std::uint8_t* x, Index quads, const std::int8_t* w,
                                                           Index n_pad, std::int32_t* acc) {
  for (Index j = 0; j < n_pad; j += 8) int8_tile_avx2<R>(x, quads, w, n_pad, j, acc);
}
__attribute__((target("avx2"))) inline void int8_gemm_avx2(const std::uint8_t* x, Index rows, Index quads,
                                                           const std::int8_t* w, Index n_pad, std::int32_t* acc) {
  constexpr int kRows = 6;  // 12 accumulators + 2 weight vectors + 1 broadcast of 16 ymm registers
  const Index xs = 4 * quads;
  Index r = 0;
  for (; r + kRows <= rows; r += kRows) int8_rows_avx2<kRows>(x + r * xs, quads, w, n_pad, acc + r * n_pad);
  x += r * xs;
  acc += r * n_pad;
  switch (rows - r) {
    case 5:
      int8_rows_avx2<5>(x, quads, w, n_pad, acc);
      break;
    case 4:
      int8_rows_avx2<4>(x, quads, w, n_pad, acc);
      break;
    case 3:
      int8_rows_avx2<3>(x, quads, w, n_pad, acc);
      break;
    case 2:
      int8_rows_avx2<2>(x, quads, w, n_pad, acc);
      break;
    case 1:
      int8_rows_avx2<1>(x, quads, w, n_pad, acc);
      break;
    default:
      break;
  }
}
#endif
#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic pop
#endif

/// The int8 kernels, fastest last.
enum class Int8Kernel { scalar, avx2, avx512_vnni };

/// The fastest kernel this CPU runs (chosen at run time, not from the build flags).
inline Int8Kernel best_int8_kernel() {
#if defined(NNFUZZ_INT8_DISPATCH)
  static const Int8Kernel k = [] {
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
      return Int8Kernel::avx512_vnni;
    if (__builtin_cpu_supports("avx2")) return Int8Kernel::avx2;
    return Int8Kernel::scalar;
  }();
  return k;
#else
  return Int8Kernel::scalar;
#endif
}

/// Whether this CPU runs kernel `k`.
inline bool int8_kernel_available(Int8Kernel k) {
  return k == Int8Kernel::scalar || (k == Int8Kernel::avx2 && best_int8_kernel() != Int8Kernel::scalar) ||
         (k == Int8Kernel::avx512_vnni && best_int8_kernel() == Int8Kernel::avx512_vnni);
}

/// acc = x · w (see above) with kernel `k`, which must be available; every kernel gives the same
/// integers. `n_pad` must be a multiple of 16.
inline void int8_gemm(Int8Kernel k, const std::uint8_t* x, Index rows, Index quads, const std::int8_t* w, Index n_pad,
                      std::int32_t* acc) {
  NNFUZZ_ASSERT(n_pad % 16 == 0 && int8_kernel_available(k));
#if defined(NNFUZZ_INT8_DISPATCH)
  if (k == Int8Kernel::avx512_vnni) return int8_gemm_vnni(x, rows, quads, w, n_pad, acc);
  if (k == Int8Kernel::avx2) return int8_gemm_avx2(x, rows, quads, w, n_pad, acc);
#endif
  (void)k;
  int8_gemm_scalar(x, rows, quads, w, n_pad, acc);
}

}  // namespace detail
}  // namespace nnfuzz
