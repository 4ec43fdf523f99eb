// SPDX-License-Identifier: MIT
// nnfuzz: the fuzzer's random number generator: one 64-bit seed, bit-for-bit reproducible.
#pragma once

#include "detail/config.hpp"
#include "detail/kernels/noise.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <limits>

#include <atomic>
#include <cstdlib>

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
  static constexpr int kLanes = detail::kNoiseLanes;  ///< bulk lanes; one block yields 16 floats

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
    detail::NoiseLanes lanes(lanes_);
    Index i = 0;
    detail::F32x16 v;
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
        detail::fill_normal_avx512(lanes_, out, n);
        return;
      case NoiseKernel::avx2:
        detail::fill_normal_avx2(lanes_, out, n);
        return;
      default:
        break;
    }
#endif
    detail::fill_normal_generic(lanes_, out, n);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  std::uint64_t s_[4];
  alignas(64) std::uint32_t lanes_[4][kLanes];
};

}  // namespace nnfuzz
