// SPDX-License-Identifier: MIT
// nnfuzz: the fuzzer's random number generator: one 64-bit seed, bit-for-bit reproducible.
#pragma once

#include "detail/config.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <limits>

#include <atomic>
#include <cstdlib>

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

/// Which Gaussian-noise kernel Rng::fill_normal() uses (and which code the noise mutators' add
/// and clip run). `automatic` (the default): AVX-512 when the CPU has it, else AVX2 + FMA when it
/// has those, else generic (checked once at run time). `avx512` and `avx2` are the same transform
/// on 16 or 2 × 8 lanes and give the same bits; `generic` differs from them in the last bits. So
/// a run reproduces bit for bit per kernel family: force `generic` (or set the environment
/// variable NNFUZZ_NOISE_KERNEL=generic) to reproduce on a CPU without AVX2 a run made on one
/// with it, or the reverse.
enum class NoiseKernel {
  automatic = 0,  ///< AVX-512 if the CPU has it, else AVX2 + FMA if it has them, else generic
  generic = 1,    ///< Eigen's vectorised log/sqrt/sin/cos, for the build's instruction set
  avx512 = 2,     ///< nnfuzz's own transform on AVX-512 (throws if the CPU lacks AVX-512)
  avx2 = 3        ///< the same transform on AVX2 + FMA, same bits as avx512 (throws if the CPU lacks them)
};

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
/// Throws std::invalid_argument, naming `who`, when this CPU (or build) cannot run kernel `k`.
inline void check_noise_kernel(NoiseKernel k, const char* who) {
  if (k == NoiseKernel::avx512 && !cpu_has_avx512())
    fail(who, "'avx512' needs a CPU with AVX-512F and AVX-512DQ (and GCC or Clang on x86-64)");
  if (k == NoiseKernel::avx2 && !cpu_has_avx2_fma())
    fail(who, "'avx2' needs a CPU with AVX2 and FMA (and GCC or Clang on x86-64)");
}
/// NNFUZZ_NOISE_KERNEL: unset or empty = automatic; "automatic", "generic", "avx2", "avx512";
/// anything else, or a kernel this CPU cannot run, throws std::invalid_argument naming the
/// variable and its value.
inline NoiseKernel env_noise_kernel() {
  const char* env = std::getenv("NNFUZZ_NOISE_KERNEL");
  if (!env || !*env) return NoiseKernel::automatic;
  const std::string v(env);
  NoiseKernel k;
  if (v == "automatic")
    k = NoiseKernel::automatic;
  else if (v == "generic")
    k = NoiseKernel::generic;
  else if (v == "avx2")
    k = NoiseKernel::avx2;
  else if (v == "avx512")
    k = NoiseKernel::avx512;
  else
    fail("Rng::fill_normal(): environment variable NNFUZZ_NOISE_KERNEL='", v,
         "' is not a noise kernel (automatic, generic, avx2 or avx512)");
  check_noise_kernel(k, ("Rng::fill_normal(): environment variable NNFUZZ_NOISE_KERNEL='" + v + "': ").c_str());
  return k;
}
/// The process-wide choice (a NoiseKernel as int), read from NNFUZZ_NOISE_KERNEL on first use.
inline std::atomic<int>& noise_kernel_choice() {
  static std::atomic<int> choice{static_cast<int>(env_noise_kernel())};
  return choice;
}
/// The kernel fill_normal() runs now: `automatic` resolved for this CPU.
inline NoiseKernel active_noise_kernel() {
  const auto c = static_cast<NoiseKernel>(noise_kernel_choice().load(std::memory_order_relaxed));
  if (c != NoiseKernel::automatic) return c;
  return cpu_has_avx512() ? NoiseKernel::avx512 : cpu_has_avx2_fma() ? NoiseKernel::avx2 : NoiseKernel::generic;
}
}  // namespace detail

/// Chooses the Gaussian-noise kernel for the whole process (see NoiseKernel). Throws
/// std::invalid_argument for `avx512` or `avx2` on a CPU (or build) without it.
inline void set_noise_kernel(NoiseKernel k) {
  detail::check_noise_kernel(k, "set_noise_kernel(): option ");
  detail::noise_kernel_choice().store(static_cast<int>(k), std::memory_order_relaxed);
}
/// The kernel fill_normal() uses now: "avx512", "avx2" or "generic".
inline const char* noise_kernel_name() {
  switch (detail::active_noise_kernel()) {
    case NoiseKernel::avx512:
      return "avx512";
    case NoiseKernel::avx2:
      return "avx2";
    default:
      return "generic";
  }
}

namespace detail {
/// Derives the k-th independent 64-bit seed from `seed` (splitmix64's finaliser of seed + k·φ):
/// the one place where run_parallel()'s workers and resume()'s sessions get their seeds.
inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * k;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace detail

/// Seedable generator owned by the fuzzer. Scalars come from xoshiro256** (picking parents,
/// indices); bulk floats come from 16 interleaved xoshiro128+ lanes, which the compiler
/// vectorises, and normals from a vectorised Box-Muller transform: ~25x faster than
/// std::normal_distribution over std::mt19937 for a 784-pixel mutant (AVX-512 build). The same seed gives the
/// same sequence on every run of the same binary. Satisfies UniformRandomBitGenerator.
class Rng {
 public:
  using result_type = std::uint64_t;
  static constexpr int kLanes = 16;  ///< bulk lanes; one block yields 16 floats

  /// Creates a generator from one 64-bit seed (expanded with splitmix64).
  explicit Rng(std::uint64_t seed = 0) { this->seed(seed); }

  /// Restarts the sequence from `seed`.
  void seed(std::uint64_t seed) {
    std::uint64_t sm = seed;
    for (auto& s : s_) s = splitmix64(sm);
    for (int w = 0; w < 4; ++w)
      for (int l = 0; l < kLanes; ++l) lanes_[w][l] = static_cast<std::uint32_t>(splitmix64(sm) >> 32) | 1u;
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  /// Next 64 random bits (xoshiro256**).
  result_type operator()() { return next_u64(); }

  /// Next 64 random bits (xoshiro256**).
  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  /// Uniform integer in [0, n), unbiased (Lemire's method). Requires n > 0.
  Index uniform_index(Index n) {
    NNFUZZ_ASSERT(n > 0);
    const auto range = static_cast<std::uint64_t>(n);
    __extension__ using U128 = unsigned __int128;
    U128 m = static_cast<U128>(next_u64()) * range;
    auto low = static_cast<std::uint64_t>(m);
    if (low < range) {
      const std::uint64_t threshold = (0 - range) % range;
      while (low < threshold) {
        m = static_cast<U128>(next_u64()) * range;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<Index>(m >> 64);
  }

  /// Fills out[0..n) with uniform floats in [lo, hi).
  void fill_uniform(float* out, Index n, float lo = 0.0f, float hi = 1.0f) {
    const float scale = hi - lo;
    Lanes lanes(lanes_);
    Index i = 0;
    F32x16 v;
    for (; i + kLanes <= n; i += kLanes) {
      lanes.open0(v);
      v = lo + scale * v;
      std::memcpy(out + i, &v, sizeof v);
    }
    if (i < n) {
      lanes.open0(v);
      v = lo + scale * v;
      std::memcpy(out + i, &v, sizeof(float) * static_cast<std::size_t>(n - i));
    }
    lanes.store(lanes_);
  }

  /// Fills out[0..n) with standard normal floats: Box-Muller on 16 lanes at a time, 32 values
  /// (16 cos, then 16 sin) per pair of uniform blocks. On a CPU with AVX-512, or with AVX2 + FMA,
  /// the transform is nnfuzz's own (a Cephes-style logarithm and one shared range reduction for
  /// sin and cos, 2.6x faster than Eigen's; the AVX-512 and AVX2 codes give the same bits),
  /// chosen at run time whatever the build flags; otherwise Eigen's vectorised log/sqrt/sin/cos
  /// for the build's instruction set. Both are tested against the normal CDF; their values differ
  /// in the last bits, so runs reproduce per kernel family (NoiseKernel). Throws
  /// std::invalid_argument on first use if NNFUZZ_NOISE_KERNEL names no kernel this CPU runs.
  void fill_normal(float* out, Index n) {
#if defined(NNFUZZ_X86_DISPATCH)
    switch (detail::active_noise_kernel()) {
      case NoiseKernel::avx512:
        fill_normal_avx512(out, n);
        return;
      case NoiseKernel::avx2:
        fill_normal_avx2(out, n);
        return;
      default:
        break;
    }
#endif
    fill_normal_generic(out, n);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // 16 lanes as one vector (GCC/Clang vector extensions: one AVX-512 register, or a few SSE/AVX
  // ones), so that a whole fill keeps the generator state in registers.
  // may_alias: F32x16 buffers are read as float arrays (Eigen::Map) in fill_normal.
  typedef std::uint32_t U32x16 __attribute__((vector_size(64), __may_alias__));
  typedef float F32x16 __attribute__((vector_size(64), __may_alias__));
  static_assert(kLanes == 16, "Lanes holds 16 lanes per vector");

  // The 16 xoshiro128+ lanes, loaded from the state for one fill and stored back after it.
  struct Lanes {
    U32x16 s0, s1, s2, s3;
    explicit Lanes(const std::uint32_t (&state)[4][kLanes]) {
      std::memcpy(&s0, state[0], sizeof s0);
      std::memcpy(&s1, state[1], sizeof s1);
      std::memcpy(&s2, state[2], sizeof s2);
      std::memcpy(&s3, state[3], sizeof s3);
    }
    void store(std::uint32_t (&state)[4][kLanes]) const {
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
#define NNFUZZ_FILL_NORMAL_LOOP(transform)                                                          \
 alignas(64) float c[kLanes], s[kLanes];                                                            \
 Lanes lanes(lanes_);                                                                               \
 for (Index i = 0; i < n; i += 2 * kLanes) {                                                        \
  const Index remaining = n - i;                                                                    \
  float* cos_out = remaining >= 2 * kLanes ? out + i : c;                                           \
  float* sin_out = remaining >= 2 * kLanes ? out + i + kLanes : s;                                  \
  transform(lanes, cos_out, sin_out);                                                               \
  if (remaining < 2 * kLanes) {                                                                     \
   const Index first = remaining < kLanes ? remaining : kLanes;                                     \
   std::memcpy(out + i, c, sizeof(float) * static_cast<std::size_t>(first));                        \
   if (remaining > kLanes)                                                                          \
    std::memcpy(out + i + kLanes, s, sizeof(float) * static_cast<std::size_t>(remaining - kLanes)); \
  }                                                                                                 \
 }                                                                                                  \
 lanes.store(lanes_);

  void fill_normal_generic(float* out, Index n) { NNFUZZ_FILL_NORMAL_LOOP(box_muller_generic) }
#if defined(__GNUC__) && !defined(__clang__)
// GCC's own AVX-512 intrinsic headers trip -Wmaybe-uninitialized in target-attributed code.
# pragma GCC diagnostic push
# pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(NNFUZZ_X86_DISPATCH)
  NNFUZZ_TARGET_AVX512 void fill_normal_avx512(float* out, Index n){NNFUZZ_FILL_NORMAL_LOOP(box_muller_avx512)}

  // 16 pairs: r = sqrt(-2 ln u1) with u1 in (0, 1]; theta = 2 pi u2 split into a quadrant q and
  // an angle a in [-pi/4, pi/4) exactly, in integers; sin a and cos a by minimax polynomials
  // (Cephes sinf/cosf), rotated into the quadrant by swaps and sign flips (no rounding).
  NNFUZZ_TARGET_AVX512_INLINE static void box_muller_avx512(Lanes& lanes, float* cos_out, float* sin_out) {
    U32x16 raw1, raw2;
    lanes.next(raw1);
    lanes.next(raw2);
    const __m512i r1 = reinterpret_cast<const __m512i&>(raw1), r2 = reinterpret_cast<const __m512i&>(raw2);
    const __m512 u1 =
        _mm512_mul_ps(_mm512_cvtepu32_ps(_mm512_add_epi32(_mm512_srli_epi32(r1, 8), _mm512_set1_epi32(1))),
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
  // ln x for x in [2^-24, 1] (Cephes logf: x = 2^e m, m in [sqrt(1/2), sqrt(2)), a degree-9
  // polynomial in m - 1).
  NNFUZZ_TARGET_AVX512_INLINE static __m512 log_unit(__m512 x) {
    const __m512i bits = _mm512_castps_si512(x);
    __m512i e = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(127));
    __m512 m = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFF)), _mm512_set1_epi32(0x3F800000)));
    const __mmask16 big = _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, _mm512_set1_ps(0.5f));
    e = _mm512_mask_add_epi32(e, big, e, _mm512_set1_epi32(1));
    const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f)), z = _mm512_mul_ps(f, f);
    __m512 y = _mm512_set1_ps(7.0376836292e-2f);
    for (const float coef : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                             -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
      y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(coef));
    y = _mm512_mul_ps(_mm512_mul_ps(y, f), z);
    const __m512 ef = _mm512_cvtepi32_ps(e);
    y = _mm512_fmadd_ps(ef, _mm512_set1_ps(-2.12194440e-4f), y);
    y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
    return _mm512_fmadd_ps(ef, _mm512_set1_ps(0.693359375f), _mm512_add_ps(f, y));
  }

  // The same transform on AVX2 + FMA: the 16 lanes as two halves of 8, every lane through the
  // same IEEE operations in the same order as box_muller_avx512 (integer shifts, the exact
  // quadrant reduction, the same FMAs; blends and sign masks instead of AVX-512 masks), so the
  // two kernels give the same bits. (raw >> 8) + 1 <= 2^24 fits a signed int: the signed
  // conversion is exact, as the unsigned one is.
  // The lanes live in 8 AVX2 registers (two halves of 8 lanes); the halves are independent, so
  // each is stepped and transformed in turn (the same values as the 16-lane step).
  NNFUZZ_TARGET_AVX2 void fill_normal_avx2(float* out, Index n) {
    alignas(64) float c[kLanes], s[kLanes];
    __m256i st[2][4];
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 4; ++w) st[h][w] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes_[w] + 8 * h));
    for (Index i = 0; i < n; i += 2 * kLanes) {
      const Index remaining = n - i;
      float* cos_out = remaining >= 2 * kLanes ? out + i : c;
      float* sin_out = remaining >= 2 * kLanes ? out + i + kLanes : s;
      for (int h = 0; h < 2; ++h) {
        const __m256i r1 = next_avx2(st[h]), r2 = next_avx2(st[h]);
        box_muller_avx2_half(r1, r2, cos_out + 8 * h, sin_out + 8 * h);
      }
      if (remaining < 2 * kLanes) {
        const Index first = remaining < kLanes ? remaining : kLanes;
        std::memcpy(out + i, c, sizeof(float) * static_cast<std::size_t>(first));
        if (remaining > kLanes)
          std::memcpy(out + i + kLanes, s, sizeof(float) * static_cast<std::size_t>(remaining - kLanes));
      }
    }
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 4; ++w) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes_[w] + 8 * h), st[h][w]);
  }
  // Lanes::next on 8 lanes.
  NNFUZZ_TARGET_AVX2_INLINE static __m256i next_avx2(__m256i (&st)[4]) {
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
  NNFUZZ_TARGET_AVX2_INLINE static void box_muller_avx2_half(__m256i r1, __m256i r2, float* cos_out, float* sin_out) {
    const __m256 u1 =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_srli_epi32(r1, 8), _mm256_set1_epi32(1))),
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
  // log_unit on 8 lanes (the same operations).
  NNFUZZ_TARGET_AVX2_INLINE static __m256 log_unit_avx2(__m256 x) {
    const __m256i bits = _mm256_castps_si256(x);
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127));
    __m256 m = _mm256_castsi256_ps(
        _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFF)), _mm256_set1_epi32(0x3F800000)));
    const __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
    m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
    e = _mm256_sub_epi32(e, _mm256_castps_si256(big));  // big lanes are all ones: -(-1) = +1
    const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f)), z = _mm256_mul_ps(f, f);
    __m256 y = _mm256_set1_ps(7.0376836292e-2f);
    for (const float coef : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                             -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
      y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(coef));
    y = _mm256_mul_ps(_mm256_mul_ps(y, f), z);
    const __m256 ef = _mm256_cvtepi32_ps(e);
    y = _mm256_fmadd_ps(ef, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    return _mm256_fmadd_ps(ef, _mm256_set1_ps(0.693359375f), _mm256_add_ps(f, y));
  }
#endif
#undef NNFUZZ_FILL_NORMAL_LOOP
#if defined(__GNUC__) && !defined(__clang__)
# pragma GCC diagnostic pop
#endif

  // 16 pairs with Eigen's vectorised log, sqrt, sin and cos.
  static void box_muller_generic(Lanes& lanes, float* cos_out, float* sin_out) {
    using Block = Eigen::Array<float, kLanes, 1>;
    alignas(64) F32x16 u1, u2;
    lanes.open1(u1);
    lanes.open0(u2);
    const Block r = (Eigen::Map<Block>(reinterpret_cast<float*>(&u1)).log() * -2.0f).sqrt();
    const Block theta = Eigen::Map<Block>(reinterpret_cast<float*>(&u2)) * 6.2831853071795864f;
    Eigen::Map<Block> cos_values(cos_out), sin_values(sin_out);
    cos_values = r * theta.cos();
    sin_values = r * theta.sin();
  }

  std::uint64_t s_[4];
  alignas(64) std::uint32_t lanes_[4][kLanes];
};

}  // namespace nnfuzz
