// SPDX-License-Identifier: MIT
// nnfuzz: the float dense layer z = x · w on AVX2 + FMA, reading the row-major weights where they
// are (internal; Mlp<float>::forward). Eigen's GEMM packs both operands into blocks on every
// call: for a fuzzing batch (100 × 784 against 784 × 200) the copy of the weights alone was 13%
// of the NaN loop. Here no operand is copied: a block of R rows × 2 vectors of columns keeps its
// 2R sums in registers for the whole inner dimension, loading the weights' row segment
// w[k][j..j+16) and broadcasting x[r][k]. Every output is the sum over k in order, one FMA per
// term, so it does not depend on the batch a row is in, nor on how the rows are blocked.
// Compiled with target attributes into every x86-64 build and used when the CPU has AVX2 + FMA
// and the process-wide kernel choice is not `generic` (rng.hpp, NoiseKernel); on AVX-512 CPUs
// (kernel choice `avx512`, the automatic one there) the same sums run 16 lanes wide
// (dense_avx512(): the same bits).
#pragma once

#include "../config.hpp"
#include "noise.hpp"  // NNFUZZ_X86_DISPATCH, NNFUZZ_TARGET_AVX2

#if defined(__SSE2__) || defined(_M_X64)
# include <emmintrin.h>
#endif

namespace nnfuzz {
namespace detail {

constexpr int kDenseRows = 6;  ///< rows per register block: 6 × 2 vectors = 12 sums + 2 weight vectors + 1 broadcast

#if defined(NNFUZZ_X86_DISPATCH)
// Lanes [0, n) of a vector of 8: the mask of _mm256_maskload_ps / _mm256_maskstore_ps.
NNFUZZ_TARGET_AVX2_INLINE __m256i dense_tail_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// R rows of z (1..6), NV vectors of 8 columns (1 or 2) from column j; the last vector holds
// `last` columns (1..8). x: R rows at stride ldx; w: the weights from column j, rows at stride
// ldw. The sums are named variables, not an array, so that they live in registers.
# define NNFUZZ_DENSE_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
template <int R, int NV>
NNFUZZ_TARGET_AVX2_INLINE void dense_block_avx2(const float* x, Index ldx, const float* w, Index ldw, Index k_dim,
                                                float* z, Index ldz, int last) {
  static_assert(R >= 1 && R <= 6 && (NV == 1 || NV == 2), "dense_block_avx2: 1..6 rows, 1 or 2 vectors");
# define NNFUZZ_DENSE_ZERO(r) __m256 a##r##0 = _mm256_setzero_ps(), a##r##1 = _mm256_setzero_ps();
  NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_ZERO)
# undef NNFUZZ_DENSE_ZERO
  const __m256i mask = dense_tail_mask(last);
  const bool full = last == 8;
  for (Index k = 0; k < k_dim; ++k) {
    const float* wk = w + k * ldw;
    __m256 w0, w1 = _mm256_setzero_ps();
    if constexpr (NV == 2) {
      w0 = _mm256_loadu_ps(wk);
      w1 = full ? _mm256_loadu_ps(wk + 8) : _mm256_maskload_ps(wk + 8, mask);
    } else {
      w0 = full ? _mm256_loadu_ps(wk) : _mm256_maskload_ps(wk, mask);
    }
# define NNFUZZ_DENSE_FMA(r)                                          \
  if constexpr (R > r) {                                              \
   const __m256 xb = _mm256_broadcast_ss(x + r * ldx + k);            \
   a##r##0 = _mm256_fmadd_ps(xb, w0, a##r##0);                        \
   if constexpr (NV == 2) a##r##1 = _mm256_fmadd_ps(xb, w1, a##r##1); \
  }
    NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_FMA)
# undef NNFUZZ_DENSE_FMA
  }
# define NNFUZZ_DENSE_STORE(r)                   \
  if constexpr (R > r) {                         \
   float* zr = z + r * ldz;                      \
   if constexpr (NV == 2) {                      \
    _mm256_storeu_ps(zr, a##r##0);               \
    if (full)                                    \
     _mm256_storeu_ps(zr + 8, a##r##1);          \
    else                                         \
     _mm256_maskstore_ps(zr + 8, mask, a##r##1); \
   } else if (full) {                            \
    _mm256_storeu_ps(zr, a##r##0);               \
   } else {                                      \
    _mm256_maskstore_ps(zr, mask, a##r##0);      \
   }                                             \
  }
  NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_STORE)
# undef NNFUZZ_DENSE_STORE
}
# undef NNFUZZ_DENSE_ROWS

// The rows of one column panel: blocks of kDenseRows, then the remainder with a smaller block.
template <int NV, int R = kDenseRows>
NNFUZZ_TARGET_AVX2_INLINE void dense_rows_avx2(int rows, const float* x, Index ldx, const float* w, Index ldw,
                                               Index k_dim, float* z, Index ldz, int last) {
  if constexpr (R > 1) {
    if (rows < R) return dense_rows_avx2<NV, R - 1>(rows, x, ldx, w, ldw, k_dim, z, ldz, last);
  }
  dense_block_avx2<R, NV>(x, ldx, w, ldw, k_dim, z, ldz, last);
}

/// z (rows × n, row-major, stride ldz) = x (rows × k, stride ldx) · w (k × n, row-major, stride
/// ldw), every output summed over k in order with one FMA per term.
NNFUZZ_TARGET_AVX2 inline void dense_avx2(const float* x, Index rows, Index ldx, const float* w, Index k_dim, Index n,
                                          Index ldw, float* z, Index ldz) {
  for (Index j = 0; j < n; j += 16) {
    const Index width = n - j < 16 ? n - j : 16;
    for (Index r = 0; r < rows; r += kDenseRows) {
      const int block = static_cast<int>(rows - r < kDenseRows ? rows - r : kDenseRows);
      const float* xr = x + r * ldx;
      float* zr = z + r * ldz + j;
      if (width > 8)
        dense_rows_avx2<2>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width - 8));
      else
        dense_rows_avx2<1>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width));
    }
  }
}

// The same on AVX-512F: R rows (1..12) × NV vectors of 16 columns (1 or 2): up to 24 sums in
// zmm registers, the tails masked (the mask suppresses faults past the last column). Every
// output is still the sum over k in order with one FMA per term from 0: the same bits as
// dense_avx2(), twice the columns per instruction.
constexpr int kDenseRows512 =
    12;  ///< rows per AVX-512 block: 12 × 2 vectors = 24 sums + 2 weight vectors + 1 broadcast
# define NNFUZZ_DENSE_ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
template <int R, int NV>
NNFUZZ_TARGET_AVX512_INLINE void dense_block_avx512(const float* x, Index ldx, const float* w, Index ldw, Index k_dim,
                                                    float* z, Index ldz, int last) {
  static_assert(R >= 1 && R <= 12 && (NV == 1 || NV == 2), "dense_block_avx512: 1..12 rows, 1 or 2 vectors");
# define NNFUZZ_DENSE_ZERO(r) __m512 a##r##0 = _mm512_setzero_ps(), a##r##1 = _mm512_setzero_ps();
  NNFUZZ_DENSE_ROWS12(NNFUZZ_DENSE_ZERO)
# undef NNFUZZ_DENSE_ZERO
  const __mmask16 mask = static_cast<__mmask16>((1u << last) - 1u);
  for (Index k = 0; k < k_dim; ++k) {
    const float* wk = w + k * ldw;
    __m512 w0, w1 = _mm512_setzero_ps();
    if constexpr (NV == 2) {
      w0 = _mm512_loadu_ps(wk);
      w1 = _mm512_maskz_loadu_ps(mask, wk + 16);
    } else {
      w0 = _mm512_maskz_loadu_ps(mask, wk);
    }
# define NNFUZZ_DENSE_FMA(r)                                          \
  if constexpr (R > r) {                                              \
   const __m512 xb = _mm512_set1_ps(x[r * ldx + k]);                  \
   a##r##0 = _mm512_fmadd_ps(xb, w0, a##r##0);                        \
   if constexpr (NV == 2) a##r##1 = _mm512_fmadd_ps(xb, w1, a##r##1); \
  }
    NNFUZZ_DENSE_ROWS12(NNFUZZ_DENSE_FMA)
# undef NNFUZZ_DENSE_FMA
  }
# define NNFUZZ_DENSE_STORE(r)                     \
  if constexpr (R > r) {                           \
   float* zr = z + r * ldz;                        \
   if constexpr (NV == 2) {                        \
    _mm512_storeu_ps(zr, a##r##0);                 \
    _mm512_mask_storeu_ps(zr + 16, mask, a##r##1); \
   } else {                                        \
    _mm512_mask_storeu_ps(zr, mask, a##r##0);      \
   }                                               \
  }
  NNFUZZ_DENSE_ROWS12(NNFUZZ_DENSE_STORE)
# undef NNFUZZ_DENSE_STORE
}
# undef NNFUZZ_DENSE_ROWS12

template <int NV, int R = kDenseRows512>
NNFUZZ_TARGET_AVX512_INLINE void dense_rows_avx512(int rows, const float* x, Index ldx, const float* w, Index ldw,
                                                   Index k_dim, float* z, Index ldz, int last) {
  if constexpr (R > 1) {
    if (rows < R) return dense_rows_avx512<NV, R - 1>(rows, x, ldx, w, ldw, k_dim, z, ldz, last);
  }
  dense_block_avx512<R, NV>(x, ldx, w, ldw, k_dim, z, ldz, last);
}

/// dense_avx2() on AVX-512F (column panels of 32, row blocks of 12): the same bits.
NNFUZZ_TARGET_AVX512 inline void dense_avx512(const float* x, Index rows, Index ldx, const float* w, Index k_dim,
                                              Index n, Index ldw, float* z, Index ldz) {
  for (Index j = 0; j < n; j += 32) {
    const Index width = n - j < 32 ? n - j : 32;
    for (Index r = 0; r < rows; r += kDenseRows512) {
      const int block = static_cast<int>(rows - r < kDenseRows512 ? rows - r : kDenseRows512);
      const float* xr = x + r * ldx;
      float* zr = z + r * ldz + j;
      if (width > 16)
        dense_rows_avx512<2>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width - 16));
      else
        dense_rows_avx512<1>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width));
    }
  }
}
#endif

#if defined(__SSE2__) || defined(_M_X64)
// A product the compiler must not fuse with the sum after it: GCC contracts a*b + c into an FMA
// across statements (-ffp-contract=fast, its default in GNU mode) when the build targets FMA,
// which would give a -march=native build other bits than a portable one. An empty asm that
// takes the product in a register stops that and costs no instruction.
# if defined(__GNUC__)
#  define NNFUZZ_DENSE_UNFUSED(v) __asm__("" : "+x"(v))
# else
#  define NNFUZZ_DENSE_UNFUSED(v) (void)0
# endif
// The same blocking on SSE2, the baseline of every x86-64 CPU: 6 rows × 2 vectors of 4 columns,
// each output summed over k in order, a product then a sum per term (no FMA). The `generic`
// path of Mlp<float>: unlike Eigen's GEMM, whose blocking (and so its summation order) follows
// the cache sizes the CPU reports, its bits are the same on every x86-64 machine for one build.
inline __m128 dense_tail_load_sse(const float* p, int n) {
  alignas(16) float t[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) t[i] = p[i];
  return _mm_load_ps(t);
}
inline void dense_tail_store_sse(float* p, __m128 v, int n) {
  alignas(16) float t[4];
  _mm_store_ps(t, v);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}
template <int R, int NV>
inline void dense_block_sse(const float* x, Index ldx, const float* w, Index ldw, Index k_dim, float* z, Index ldz,
                            int last) {
  static_assert(R >= 1 && R <= 6 && (NV == 1 || NV == 2), "dense_block_sse: 1..6 rows, 1 or 2 vectors");
# define NNFUZZ_DENSE_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
# define NNFUZZ_DENSE_ZERO(r) __m128 a##r##0 = _mm_setzero_ps(), a##r##1 = _mm_setzero_ps();
  NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_ZERO)
# undef NNFUZZ_DENSE_ZERO
  const bool full = last == 4;
  for (Index k = 0; k < k_dim; ++k) {
    const float* wk = w + k * ldw;
    __m128 w0, w1 = _mm_setzero_ps();
    if constexpr (NV == 2) {
      w0 = _mm_loadu_ps(wk);
      w1 = full ? _mm_loadu_ps(wk + 4) : dense_tail_load_sse(wk + 4, last);
    } else {
      w0 = full ? _mm_loadu_ps(wk) : dense_tail_load_sse(wk, last);
    }
# define NNFUZZ_DENSE_MULADD(r)                   \
  if constexpr (R > r) {                          \
   const __m128 xb = _mm_set1_ps(x[r * ldx + k]); \
   __m128 p0 = _mm_mul_ps(xb, w0);                \
   NNFUZZ_DENSE_UNFUSED(p0);                      \
   a##r##0 = _mm_add_ps(a##r##0, p0);             \
   if constexpr (NV == 2) {                       \
    __m128 p1 = _mm_mul_ps(xb, w1);               \
    NNFUZZ_DENSE_UNFUSED(p1);                     \
    a##r##1 = _mm_add_ps(a##r##1, p1);            \
   }                                              \
  }
    NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_MULADD)
# undef NNFUZZ_DENSE_MULADD
  }
# define NNFUZZ_DENSE_STORE(r)                    \
  if constexpr (R > r) {                          \
   float* zr = z + r * ldz;                       \
   if constexpr (NV == 2) {                       \
    _mm_storeu_ps(zr, a##r##0);                   \
    if (full)                                     \
     _mm_storeu_ps(zr + 4, a##r##1);              \
    else                                          \
     dense_tail_store_sse(zr + 4, a##r##1, last); \
   } else if (full) {                             \
    _mm_storeu_ps(zr, a##r##0);                   \
   } else {                                       \
    dense_tail_store_sse(zr, a##r##0, last);      \
   }                                              \
  }
  NNFUZZ_DENSE_ROWS(NNFUZZ_DENSE_STORE)
# undef NNFUZZ_DENSE_STORE
# undef NNFUZZ_DENSE_ROWS
}
template <int NV, int R = kDenseRows>
inline void dense_rows_sse(int rows, const float* x, Index ldx, const float* w, Index ldw, Index k_dim, float* z,
                           Index ldz, int last) {
  if constexpr (R > 1) {
    if (rows < R) return dense_rows_sse<NV, R - 1>(rows, x, ldx, w, ldw, k_dim, z, ldz, last);
  }
  dense_block_sse<R, NV>(x, ldx, w, ldw, k_dim, z, ldz, last);
}
/// dense_avx2() on SSE2, a product and a sum per term (see above): the same bits in every build.
/// Not inlined: inlined into a caller's larger function, GCC kept the sums on the stack (2.4 ms
/// instead of 1.2 for the MNIST MLP's batch of 100).
# if defined(__GNUC__)
__attribute__((noinline))
# endif
inline void
dense_sse2(const float* x, Index rows, Index ldx, const float* w, Index k_dim, Index n, Index ldw, float* z,
           Index ldz) {
  for (Index j = 0; j < n; j += 8) {
    const Index width = n - j < 8 ? n - j : 8;
    for (Index r = 0; r < rows; r += kDenseRows) {
      const int block = static_cast<int>(rows - r < kDenseRows ? rows - r : kDenseRows);
      const float* xr = x + r * ldx;
      float* zr = z + r * ldz + j;
      if (width > 4)
        dense_rows_sse<2>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width - 4));
      else
        dense_rows_sse<1>(block, xr, ldx, w + j, ldw, k_dim, zr, ldz, static_cast<int>(width));
    }
  }
}
#endif

}  // namespace detail
}  // namespace nnfuzz
