// SPDX-License-Identifier: MIT
// nnfuzz: the batch-invariant float kernels of CharRnn (internal): row_invariant_affine() and
// one GRU step, every output one fixed chain of FMAs whatever batch a row is in.
#pragma once

#include "../config.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace nnfuzz {

namespace detail {

using FloatPacket = Eigen::internal::packet_traits<float>::type;
/// Floats per packet of this build (16 with AVX-512, 8 with AVX, 4 with SSE, 1 without SIMD).
constexpr Index kFloatLanes = Eigen::internal::packet_traits<float>::size;

#if defined(EIGEN_VECTORIZE_AVX512) || defined(EIGEN_VECTORIZE_AVX)
// Eigen's masked packet loads and stores (AVX-512 and AVX: masked-out lanes read as zero and are never touched).
using PacketMask = std::conditional<kFloatLanes == 16, std::uint16_t, std::uint8_t>::type;
# define NNFUZZ_MASKED_PACKETS 1
#endif

/// A packet of p[0..n), zero-padded (n <= kFloatLanes; reads nothing past p + n).
inline FloatPacket load_part(const float* p, Index n) {
  if (n == kFloatLanes) return Eigen::internal::ploadu<FloatPacket>(p);
#if defined(NNFUZZ_MASKED_PACKETS)
  return Eigen::internal::ploadu<FloatPacket>(p, static_cast<PacketMask>((1u << n) - 1));
#else
  float buf[kFloatLanes] = {};
  std::copy(p, p + n, buf);
  return Eigen::internal::ploadu<FloatPacket>(buf);
#endif
}
/// Writes the first n lanes of v to p[0..n).
inline void store_part(float* p, const FloatPacket& v, Index n) {
  if (n == kFloatLanes) return Eigen::internal::pstoreu(p, v);
#if defined(NNFUZZ_MASKED_PACKETS)
  Eigen::internal::pstoreu(p, v, static_cast<PacketMask>((1u << n) - 1));
#else
  float buf[kFloatLanes];
  Eigen::internal::pstoreu(buf, v);
  std::copy(buf, buf + n, p);
#endif
}

// R rows x C packets of out = bias + a · w, the inner index k running from 0 up, one FMA (or
// multiply-add) per term: the same sequence of operations for an output whatever R and C are.
// With `part` < kFloatLanes (C = 1 only), only the first `part` columns exist: `w` and `bias` are
// read through a zero-padded packet and only `part` outputs are written.
template <int R, int C>
inline void affine_tile(const float* a, Index lda, Index depth, const float* w, Index ldw, const float* bias,
                        float* out, Index ldo, Index part = kFloatLanes) {
  using namespace Eigen::internal;
  FloatPacket acc[R][C];
  for (int c = 0; c < C; ++c) {
    const FloatPacket b = bias ? load_part(bias + c * kFloatLanes, part) : pset1<FloatPacket>(0.0f);
    for (int r = 0; r < R; ++r) acc[r][c] = b;
  }
  if (part == kFloatLanes) {
    for (Index k = 0; k < depth; ++k) {
      FloatPacket wk[C];
      for (int c = 0; c < C; ++c) wk[c] = ploadu<FloatPacket>(w + k * ldw + c * kFloatLanes);
      for (int r = 0; r < R; ++r) {
        const FloatPacket ak = pset1<FloatPacket>(a[r * lda + k]);
        for (int c = 0; c < C; ++c) acc[r][c] = pmadd(ak, wk[c], acc[r][c]);
      }
    }
  } else {
    for (Index k = 0; k < depth; ++k) {
      const FloatPacket wk = load_part(w + k * ldw, part);
      for (int r = 0; r < R; ++r) acc[r][0] = pmadd(pset1<FloatPacket>(a[r * lda + k]), wk, acc[r][0]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) store_part(out + r * ldo + c * kFloatLanes, acc[r][c], part);
}

template <int C>
inline void affine_rows(const float* a, Index rows, Index lda, Index depth, const float* w, Index ldw,
                        const float* bias, float* out, Index ldo, Index part = kFloatLanes) {
  Index r = 0;
  for (; r + 8 <= rows; r += 8) affine_tile<8, C>(a + r * lda, lda, depth, w, ldw, bias, out + r * ldo, ldo, part);
  for (; r + 4 <= rows; r += 4) affine_tile<4, C>(a + r * lda, lda, depth, w, ldw, bias, out + r * ldo, ldo, part);
  for (; r < rows; ++r) affine_tile<1, C>(a + r * lda, lda, depth, w, ldw, bias, out + r * ldo, ldo, part);
}

/// out[r][c] = bias[c] + Σ_k a[r][k] · w[k][c] for r < rows, c < cols (`a`: rows x depth with
/// row stride lda; `w`: depth x cols, row-major, contiguous; `out`: row stride ldo; `bias` may
/// be null). Every output is one chain of FMAs over k in increasing order, started from its bias,
/// whatever tile it falls in, so row r's result depends on row r of `a` only: not on `rows`, nor
/// on the other rows, nor on where the row sits. Register-blocked (8 rows x 3 packets; 1 row x 8
/// packets for fewer than 4 rows); as fast as Eigen's GEMM or faster for the RNN's shapes.
inline void row_invariant_affine(const float* a, Index rows, Index depth, Index lda, const float* w, Index cols,
                                 const float* bias, float* out, Index ldo) {
  auto at = [&](Index c) { return bias ? bias + c : nullptr; };
  Index c = 0;
  if (rows < 4) {  // one row at a time: more independent chains per row
    for (; c + 8 * kFloatLanes <= cols; c += 8 * kFloatLanes)
      affine_rows<8>(a, rows, lda, depth, w + c, cols, at(c), out + c, ldo);
  } else {
    for (; c + 3 * kFloatLanes <= cols; c += 3 * kFloatLanes)
      affine_rows<3>(a, rows, lda, depth, w + c, cols, at(c), out + c, ldo);
  }
  for (; c + kFloatLanes <= cols; c += kFloatLanes)
    affine_rows<1>(a, rows, lda, depth, w + c, cols, at(c), out + c, ldo);
  if (c < cols) affine_rows<1>(a, rows, lda, depth, w + c, cols, at(c), out + c, ldo, cols - c);
}

/// One GRU step for one row (PyTorch's equations): with gx = x·W_i + b_i and gh = h·W_h + b_h
/// (each 3H: r, z, n parts), r = σ(gx_r + gh_r), z = σ(gx_z + gh_z), n = tanh(gx_n + r ⊙ gh_n),
/// h' = (1 - z) ⊙ n + z ⊙ h. Every element goes through the same packet code (a partial last
/// packet is padded), so the result of an element depends on its inputs only. `h_out` may be
/// `h`. `gates` (r, z, n: 3H) may be null.
inline void gru_step_row(const float* gx, const float* gh, const float* h, Index H, float* gates, float* h_out) {
  using namespace Eigen::internal;
  const scalar_logistic_op<float> sigmoid;
  for (Index j = 0; j < H; j += kFloatLanes) {
    const Index n = std::min(kFloatLanes, H - j);
    const FloatPacket r = sigmoid.packetOp(padd(load_part(gx + j, n), load_part(gh + j, n)));
    const FloatPacket z = sigmoid.packetOp(padd(load_part(gx + H + j, n), load_part(gh + H + j, n)));
    const FloatPacket c = ptanh(pmadd(r, load_part(gh + 2 * H + j, n), load_part(gx + 2 * H + j, n)));
    const FloatPacket hp = load_part(h + j, n);
    const FloatPacket hn = pmadd(z, psub(hp, c), c);
    if (gates) {
      store_part(gates + j, r, n);
      store_part(gates + H + j, z, n);
      store_part(gates + 2 * H + j, c, n);
    }
    store_part(h_out + j, hn, n);
  }
}

constexpr char kCharRnnMagic[8] = {'N', 'N', 'F', 'Z', 'R', 'N', 'N', '1'};
constexpr std::uint32_t kCharRnnVersion = 1;
constexpr std::uint32_t kCharRnnCellGru = 1;
constexpr std::uint64_t kCharRnnMaxParams = std::uint64_t{1} << 28;

}  // namespace detail

}  // namespace nnfuzz
