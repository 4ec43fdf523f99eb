// SPDX-License-Identifier: MIT
// nnfuzz: the Gaussian-noise kernels behind Rng::fill_normal() (internal): 16 interleaved
// xoshiro128+ lanes and a Box-Muller transform, generic (GCC/Clang vector extensions and Eigen's
// log/sqrt/sin/cos) or nnfuzz's own on AVX-512 and on AVX2 + FMA (the same bits), compiled with
// target attributes into every x86-64 build and chosen at run time (rng.hpp, NoiseKernel).
#pragma once

#include "../config.hpp"

#include <cstdint>
#include <cstring>

// Runtime dispatch of the noise kernel (GCC/Clang on x86-64): the AVX-512 and the AVX2 + FMA
// Box-Muller transforms are compiled into every build with target attributes, and used when the
// CPU has them — a build without -march=native (what an installed package gives its users) still
// gets them.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(NNFUZZ_NO_DISPATCH)
# define NNFUZZ_X86_DISPATCH 1
# include <immintrin.h>
# define NNFUZZ_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx2,fma")))
# define NNFUZZ_TARGET_AVX512_INLINE __attribute__((target("avx512f,avx512dq,avx2,fma"), always_inline)) inline
# define NNFUZZ_TARGET_AVX2 __attribute__((target("avx2,fma")))
# define NNFUZZ_TARGET_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
#endif

namespace nnfuzz {
namespace detail {

/// True when this CPU can run the AVX-512 kernel.
inline bool cpu_has_avx512() {
#if defined(NNFUZZ_X86_DISPATCH)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  return has;
#else
  return false;
#endif
}
/// True when this CPU can run the AVX2 + FMA kernels.
inline bool cpu_has_avx2_fma() {
#if defined(NNFUZZ_X86_DISPATCH)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

constexpr int kNoiseLanes = 16;  ///< lanes of the bulk generator; one block yields 16 floats

// 16 lanes as one vector (GCC/Clang vector extensions: one AVX-512 register, or a few SSE/AVX
// ones), so that a whole fill keeps the generator state in registers.
// may_alias: F32x16 buffers are read as float arrays (Eigen::Map) in fill_normal.
typedef std::uint32_t U32x16 __attribute__((vector_size(64), __may_alias__));
typedef float F32x16 __attribute__((vector_size(64), __may_alias__));
static_assert(kNoiseLanes == 16, "NoiseLanes holds 16 lanes per vector");

// The 16 xoshiro128+ lanes, loaded from the state for one fill and stored back after it.
struct NoiseLanes {
  U32x16 s0, s1, s2, s3;
  explicit NoiseLanes(const std::uint32_t (&state)[4][kNoiseLanes]) {
    std::memcpy(&s0, state[0], sizeof s0);
    std::memcpy(&s1, state[1], sizeof s1);
    std::memcpy(&s2, state[2], sizeof s2);
    std::memcpy(&s3, state[3], sizeof s3);
  }
  void store(std::uint32_t (&state)[4][kNoiseLanes]) const {
    std::memcpy(state[0], &s0, sizeof s0);
    std::memcpy(state[1], &s1, sizeof s1);
    std::memcpy(state[2], &s2, sizeof s2);
    std::memcpy(state[3], &s3, sizeof s3);
  }
  // One step of every lane: 16 raw 32-bit outputs. (Vectors travel by reference only: passing
  // a 64-byte vector by value would warn about the ABI where AVX-512 is not enabled.)
  void next(U32x16& raw) {
    raw = s0 + s3;
    const U32x16 t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = (s3 << 11) | (s3 >> 21);
  }
  // Next 16 floats in [0, 1): the top 24 bits (xoshiro128+'s low bits are weak).
  void open0(F32x16& out) {
    U32x16 raw;
    next(raw);
    out = __builtin_convertvector(raw >> 8, F32x16) * 0x1.0p-24f;
  }
  // Next 16 floats in (0, 1]: safe to take the logarithm of.
  void open1(F32x16& out) {
    U32x16 raw;
    next(raw);
    out = __builtin_convertvector((raw >> 8) + 1u, F32x16) * 0x1.0p-24f;
  }
};

// The fill loop, instantiated once per transform so that each copy is compiled (and the lanes
// inlined) for its instruction set. A full block is written in place; the tail is truncated
// from a full block, so that the values do not depend on how a buffer is split into calls (at
// multiples of 32).
#define NNFUZZ_FILL_NORMAL_LOOP(transform)                                                                    \
 alignas(64) float c[kNoiseLanes], s[kNoiseLanes];                                                            \
 NoiseLanes lanes(lanes_);                                                                                    \
 for (Index i = 0; i < n; i += 2 * kNoiseLanes) {                                                             \
  const Index remaining = n - i;                                                                              \
  float* cos_out = remaining >= 2 * kNoiseLanes ? out + i : c;                                                \
  float* sin_out = remaining >= 2 * kNoiseLanes ? out + i + kNoiseLanes : s;                                  \
  transform(lanes, cos_out, sin_out);                                                                         \
  if (remaining < 2 * kNoiseLanes) {                                                                          \
   const Index first = remaining < kNoiseLanes ? remaining : kNoiseLanes;                                     \
   std::memcpy(out + i, c, sizeof(float) * static_cast<std::size_t>(first));                                  \
   if (remaining > kNoiseLanes)                                                                               \
    std::memcpy(out + i + kNoiseLanes, s, sizeof(float) * static_cast<std::size_t>(remaining - kNoiseLanes)); \
  }                                                                                                           \
 }                                                                                                            \
 lanes.store(lanes_);

// 16 pairs with Eigen's vectorised log, sqrt, sin and cos.
inline void box_muller_generic(NoiseLanes& lanes, float* cos_out, float* sin_out) {
  using Block = Eigen::Array<float, kNoiseLanes, 1>;
  alignas(64) F32x16 u1, u2;
  lanes.open1(u1);
  lanes.open0(u2);
  const Block r = (Eigen::Map<Block>(reinterpret_cast<float*>(&u1)).log() * -2.0f).sqrt();
  const Block theta = Eigen::Map<Block>(reinterpret_cast<float*>(&u2)) * 6.2831853071795864f;
  Eigen::Map<Block> cos_values(cos_out), sin_values(sin_out);
  cos_values = r * theta.cos();
  sin_values = r * theta.sin();
}

inline void fill_normal_generic(std::uint32_t (&lanes_)[4][kNoiseLanes], float* out, Index n) {
  NNFUZZ_FILL_NORMAL_LOOP(box_muller_generic)
}

#if defined(__GNUC__) && !defined(__clang__)
// GCC's own AVX-512 intrinsic headers trip -Wmaybe-uninitialized in target-attributed code.
# pragma GCC diagnostic push
# pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(NNFUZZ_X86_DISPATCH)
// ln x for x in [2^-24, 1] (Cephes logf: x = 2^e m, m in [sqrt(1/2), sqrt(2)), a degree-9
// polynomial in m - 1).
NNFUZZ_TARGET_AVX512_INLINE __m512 log_unit(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(127));
  __m512 m = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFF)), _mm512_set1_epi32(0x3F800000)));
  const __mmask16 big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
  e = _mm512_mask_add_epi32(e, big, e, _mm512_set1_epi32(1));
  const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f)), z = _mm512_mul_ps(f, f);
  __m512 y = _mm512_set1_ps(7.0376836292e-2f);
  for (const float coef : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                           2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(coef));
  y = _mm512_mul_ps(_mm512_mul_ps(y, f), z);
  const __m512 ef = _mm512_cvtepi32_ps(e);
  y = _mm512_fmadd_ps(ef, _mm512_set1_ps(-2.12194440e-4f), y);
  y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
  return _mm512_fmadd_ps(ef, _mm512_set1_ps(0.693359375f), _mm512_add_ps(f, y));
}

// 16 pairs: r = sqrt(-2 ln u1) with u1 in (0, 1]; theta = 2 pi u2 split into a quadrant q and
// an angle a in [-pi/4, pi/4) exactly, in integers; sin a and cos a by minimax polynomials
// (Cephes sinf/cosf), rotated into the quadrant by swaps and sign flips (no rounding).
NNFUZZ_TARGET_AVX512_INLINE void box_muller_avx512(NoiseLanes& lanes, float* cos_out, float* sin_out) {
  U32x16 raw1, raw2;
  lanes.next(raw1);
  lanes.next(raw2);
  const __m512i r1 = reinterpret_cast<const __m512i&>(raw1), r2 = reinterpret_cast<const __m512i&>(raw2);
  const __m512 u1 = _mm512_mul_ps(_mm512_cvtepu32_ps(_mm512_add_epi32(_mm512_srli_epi32(r1, 8), _mm512_set1_epi32(1))),
                                  _mm512_set1_ps(0x1.0p-24f));
  const __m512 radius = _mm512_sqrt_ps(_mm512_mul_ps(log_unit(u1), _mm512_set1_ps(-2.0f)));
  // theta = 2 pi (k / 2^24); k' = k + 2^21 (mod 2^24) = q 2^22 + j: theta = q pi/2 + (j / 2^22 - 1/2) pi/2.
  const __m512i k = _mm512_and_si512(_mm512_add_epi32(_mm512_srli_epi32(r2, 8), _mm512_set1_epi32(1 << 21)),
                                     _mm512_set1_epi32((1 << 24) - 1));
  const __m512i q = _mm512_srli_epi32(k, 22);
  const __m512 f =
      _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(k, _mm512_set1_epi32((1 << 22) - 1))),
                                  _mm512_set1_ps(0x1.0p-22f)),
                    _mm512_set1_ps(0.5f));
  const __m512 a = _mm512_mul_ps(f, _mm512_set1_ps(1.5707963267948966f)), a2 = _mm512_mul_ps(a, a);
  __m512 sn = _mm512_fmadd_ps(_mm512_set1_ps(-1.9515295891e-4f), a2, _mm512_set1_ps(8.3321608736e-3f));
  sn = _mm512_fmadd_ps(sn, a2, _mm512_set1_ps(-1.6666654611e-1f));
  sn = _mm512_fmadd_ps(_mm512_mul_ps(sn, a2), a, a);
  __m512 cs = _mm512_fmadd_ps(_mm512_set1_ps(2.443315711809948e-5f), a2, _mm512_set1_ps(-1.388731625493765e-3f));
  cs = _mm512_fmadd_ps(cs, a2, _mm512_set1_ps(4.166664568298827e-2f));
  cs = _mm512_fmadd_ps(_mm512_mul_ps(cs, a2), a2, _mm512_fnmadd_ps(a2, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
  // Quadrant q: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c).
  const __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
  const __mmask16 neg_cos =
      _mm512_cmpeq_epi32_mask(q, _mm512_set1_epi32(1)) | _mm512_cmpeq_epi32_mask(q, _mm512_set1_epi32(2));
  const __mmask16 neg_sin = _mm512_cmpge_epi32_mask(q, _mm512_set1_epi32(2));
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  __m512i cos_bits = _mm512_castps_si512(_mm512_mask_blend_ps(odd, cs, sn));
  __m512i sin_bits = _mm512_castps_si512(_mm512_mask_blend_ps(odd, sn, cs));
  cos_bits = _mm512_mask_xor_epi32(cos_bits, neg_cos, cos_bits, sign);
  sin_bits = _mm512_mask_xor_epi32(sin_bits, neg_sin, sin_bits, sign);
  _mm512_storeu_ps(cos_out, _mm512_mul_ps(radius, _mm512_castsi512_ps(cos_bits)));
  _mm512_storeu_ps(sin_out, _mm512_mul_ps(radius, _mm512_castsi512_ps(sin_bits)));
}

NNFUZZ_TARGET_AVX512 inline void fill_normal_avx512(std::uint32_t (&lanes_)[4][kNoiseLanes], float* out,
                                                    Index n){NNFUZZ_FILL_NORMAL_LOOP(box_muller_avx512)}

// NoiseLanes::next on 8 lanes.
NNFUZZ_TARGET_AVX2_INLINE __m256i next_avx2(__m256i (&st)[4]) {
  const __m256i raw = _mm256_add_epi32(st[0], st[3]);
  const __m256i t = _mm256_slli_epi32(st[1], 9);
  st[2] = _mm256_xor_si256(st[2], st[0]);
  st[3] = _mm256_xor_si256(st[3], st[1]);
  st[1] = _mm256_xor_si256(st[1], st[2]);
  st[0] = _mm256_xor_si256(st[0], st[3]);
  st[2] = _mm256_xor_si256(st[2], t);
  st[3] = _mm256_or_si256(_mm256_slli_epi32(st[3], 11), _mm256_srli_epi32(st[3], 21));
  return raw;
}

// log_unit on 8 lanes (the same operations).
NNFUZZ_TARGET_AVX2_INLINE __m256 log_unit_avx2(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFF)), _mm256_set1_epi32(0x3F800000)));
  const __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
  e = _mm256_sub_epi32(e, _mm256_castps_si256(big));  // big lanes are all ones: -(-1) = +1
  const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f)), z = _mm256_mul_ps(f, f);
  __m256 y = _mm256_set1_ps(7.0376836292e-2f);
  for (const float coef : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                           2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(coef));
  y = _mm256_mul_ps(_mm256_mul_ps(y, f), z);
  const __m256 ef = _mm256_cvtepi32_ps(e);
  y = _mm256_fmadd_ps(ef, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  return _mm256_fmadd_ps(ef, _mm256_set1_ps(0.693359375f), _mm256_add_ps(f, y));
}

NNFUZZ_TARGET_AVX2_INLINE void box_muller_avx2_half(__m256i r1, __m256i r2, float* cos_out, float* sin_out) {
  const __m256 u1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_srli_epi32(r1, 8), _mm256_set1_epi32(1))),
                                  _mm256_set1_ps(0x1.0p-24f));
  const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(log_unit_avx2(u1), _mm256_set1_ps(-2.0f)));
  const __m256i k = _mm256_and_si256(_mm256_add_epi32(_mm256_srli_epi32(r2, 8), _mm256_set1_epi32(1 << 21)),
                                     _mm256_set1_epi32((1 << 24) - 1));
  const __m256i q = _mm256_srli_epi32(k, 22);
  const __m256 f =
      _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(k, _mm256_set1_epi32((1 << 22) - 1))),
                                  _mm256_set1_ps(0x1.0p-22f)),
                    _mm256_set1_ps(0.5f));
  const __m256 a = _mm256_mul_ps(f, _mm256_set1_ps(1.5707963267948966f)), a2 = _mm256_mul_ps(a, a);
  __m256 sn = _mm256_fmadd_ps(_mm256_set1_ps(-1.9515295891e-4f), a2, _mm256_set1_ps(8.3321608736e-3f));
  sn = _mm256_fmadd_ps(sn, a2, _mm256_set1_ps(-1.6666654611e-1f));
  sn = _mm256_fmadd_ps(_mm256_mul_ps(sn, a2), a, a);
  __m256 cs = _mm256_fmadd_ps(_mm256_set1_ps(2.443315711809948e-5f), a2, _mm256_set1_ps(-1.388731625493765e-3f));
  cs = _mm256_fmadd_ps(cs, a2, _mm256_set1_ps(4.166664568298827e-2f));
  cs = _mm256_fmadd_ps(_mm256_mul_ps(cs, a2), a2, _mm256_fnmadd_ps(a2, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
  // Quadrant q: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c).
  const __m256i one = _mm256_set1_epi32(1);
  const __m256 odd = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(q, one), one));
  const __m256i neg_cos = _mm256_or_si256(_mm256_cmpeq_epi32(q, one), _mm256_cmpeq_epi32(q, _mm256_set1_epi32(2)));
  const __m256i neg_sin = _mm256_cmpgt_epi32(q, one);
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  __m256i cos_bits = _mm256_castps_si256(_mm256_blendv_ps(cs, sn, odd));
  __m256i sin_bits = _mm256_castps_si256(_mm256_blendv_ps(sn, cs, odd));
  cos_bits = _mm256_xor_si256(cos_bits, _mm256_and_si256(neg_cos, sign));
  sin_bits = _mm256_xor_si256(sin_bits, _mm256_and_si256(neg_sin, sign));
  _mm256_storeu_ps(cos_out, _mm256_mul_ps(radius, _mm256_castsi256_ps(cos_bits)));
  _mm256_storeu_ps(sin_out, _mm256_mul_ps(radius, _mm256_castsi256_ps(sin_bits)));
}

// The same transform on AVX2 + FMA: the 16 lanes as two halves of 8, every lane through the
// same IEEE operations in the same order as box_muller_avx512 (integer shifts, the exact
// quadrant reduction, the same FMAs; blends and sign masks instead of AVX-512 masks), so the
// two kernels give the same bits. (raw >> 8) + 1 <= 2^24 fits a signed int: the signed
// conversion is exact, as the unsigned one is.
// The lanes live in 8 AVX2 registers (two halves of 8 lanes); the halves are independent, so
// each is stepped and transformed in turn (the same values as the 16-lane step).
NNFUZZ_TARGET_AVX2 inline void fill_normal_avx2(std::uint32_t (&lanes_)[4][kNoiseLanes], float* out, Index n) {
  alignas(64) float c[kNoiseLanes], s[kNoiseLanes];
  __m256i st[2][4];
  for (int h = 0; h < 2; ++h)
    for (int w = 0; w < 4; ++w) st[h][w] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes_[w] + 8 * h));
  for (Index i = 0; i < n; i += 2 * kNoiseLanes) {
    const Index remaining = n - i;
    float* cos_out = remaining >= 2 * kNoiseLanes ? out + i : c;
    float* sin_out = remaining >= 2 * kNoiseLanes ? out + i + kNoiseLanes : s;
    for (int h = 0; h < 2; ++h) {
      const __m256i r1 = next_avx2(st[h]), r2 = next_avx2(st[h]);
      box_muller_avx2_half(r1, r2, cos_out + 8 * h, sin_out + 8 * h);
    }
    if (remaining < 2 * kNoiseLanes) {
      const Index first = remaining < kNoiseLanes ? remaining : kNoiseLanes;
      std::memcpy(out + i, c, sizeof(float) * static_cast<std::size_t>(first));
      if (remaining > kNoiseLanes)
        std::memcpy(out + i + kNoiseLanes, s, sizeof(float) * static_cast<std::size_t>(remaining - kNoiseLanes));
    }
  }
  for (int h = 0; h < 2; ++h)
    for (int w = 0; w < 4; ++w) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes_[w] + 8 * h), st[h][w]);
}

#endif
#undef NNFUZZ_FILL_NORMAL_LOOP
#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic pop
#endif

}  // namespace detail
}  // namespace nnfuzz
