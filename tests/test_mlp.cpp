// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/models/mlp.hpp>

using namespace nnfuzz;
using H = Eigen::half;

namespace {
Mlp<float> random_net(std::vector<Index> sizes, std::uint64_t seed) {
  Mlp<float> net(sizes);
  net.init_truncated_normal(0, seed);  // He init
  Rng rng(seed + 1);
  for (auto& l : net.layers()) rng.fill_uniform(l.bias.data(), l.bias.size(), -0.1f, 0.1f);
  return net;
}
// Sequential half arithmetic, one rounding per product and per sum: the scalar reference.
RowMatrix half_reference(const Mlp<H>& net, const RowMatrix& x) {
  RowMatrix out(x.rows(), net.output_dim());
  for (Index r = 0; r < x.rows(); ++r) {
    Eigen::Matrix<H, 1, Eigen::Dynamic> a = x.row(r).cast<H>();
    for (std::size_t l = 0; l < net.layers().size(); ++l) {
      const auto& L = net.layers()[l];
      Eigen::Matrix<H, 1, Eigen::Dynamic> z(L.weights.cols());
      for (Index j = 0; j < L.weights.cols(); ++j) {
        H acc(0.0f);
        for (Index k = 0; k < L.weights.rows(); ++k)
          acc = H(float(acc) + float(H(float(a(k)) * float(L.weights(k, j)))));
        z(j) = H(float(acc) + float(L.bias(j)));
        if (l + 1 < net.layers().size() && float(z(j)) < 0) z(j) = H(0.0f);
      }
      a = z;
    }
    out.row(r) = a.cast<float>();
  }
  return out;
}
}  // namespace

TEST_CASE("Mlp: forward pass matches a hand computation and reports every layer", "[mlp]") {
  Mlp<float> net({2, 2, 1});
  net.layers()[0].weights << 1, -1, 2, 0.5;  // inputs x outputs
  net.layers()[0].bias << 0.5, -3;
  net.layers()[1].weights << 2, -1;
  net.layers()[1].bias << 0.25;
  RowMatrix x(2, 2);
  x << 1, 1,  // h = (1+2+0.5, -1+0.5-3) = (3.5, -3.5) -> relu (3.5, 0) -> 7 + 0.25
      -1, 0;  // h = (-1+0.5, 1-3) = (-0.5, -2) -> (0, 0) -> 0.25
  Mlp<float>::Trace t;
  net.forward(x, t);
  REQUIRE(t.pre.size() == 2);
  REQUIRE(t.post.size() == 1);
  CHECK(t.pre[0](0, 0) == 3.5f);
  CHECK(t.pre[0](0, 1) == -3.5f);
  CHECK(t.post[0](0, 1) == 0.0f);
  CHECK(t.logits()(0, 0) == 7.25f);
  CHECK(t.logits()(1, 0) == 0.25f);
  CHECK(net.sizes() == std::vector<Index>{2, 2, 1});
  CHECK(net.parameter_count() == 9);
  REQUIRE_THROWS_WITH(net.forward(RowMatrix(1, 3), t),
                      Catch::Contains("Mlp::forward()") && Catch::Contains("3 columns"));
  REQUIRE_THROWS_WITH(Mlp<float>({784}), Catch::Contains("Mlp()"));
  REQUIRE_THROWS_WITH(Mlp<float>({784, 0, 10}), Catch::Contains("layer size 1 is 0"));
}

TEST_CASE("Mlp: the half-arithmetic twin computes in half exactly - half storage sums in float", "[mlp]") {
  const Mlp<float> f = random_net({784, 200, 100, 10}, 1);
  const Mlp<H> h = f.half_arithmetic();
  const Mlp<float> s = f.half_storage();
  // Conversion: weights rounded to nearest half.
  CHECK(float(h.layers()[0].weights(3, 4)) == float(H(f.layers()[0].weights(3, 4))));
  CHECK(s.layers()[1].weights(7, 2) == float(H(f.layers()[1].weights(7, 2))));
  CHECK(s.rounds_activations_to_half());
  RowMatrix x(64, 784);
  Rng rng(2);
  rng.fill_uniform(x.data(), x.size(), 0, 1);
  const RowMatrix lf = f.logits(x), lh = h.logits(x), ls = s.logits(x), ref = half_reference(h, x);
  const float dh = (lh - lf).cwiseAbs().maxCoeff();
  const float ds = (ls - lf).cwiseAbs().maxCoeff();
  const float dref = (lh - ref).cwiseAbs().maxCoeff();
  INFO("half-arith vs float " << dh << ", half-storage vs float " << ds << ", half-arith vs scalar half ref " << dref);
  CHECK(dh > 0);        // it is not float
  CHECK(dh > 3 * ds);   // sums in half lose far more than half storage
  CHECK(dref == 0.0f);  // bit for bit the scalar float16 reference
  // Batch invariance: a row alone gives the same bits as inside a batch (replays hold).
  for (Index r : {Index(0), Index(13), Index(63)}) {
    CHECK(h.logits(x.row(r)) == lh.row(r));
    CHECK(f.logits(x.middleRows(r, 1)).isApprox(lf.row(r), 1e-5f));
  }
  // Storage semantics: every logit of the half-storage twin is a half value.
  CHECK((ls.cast<H>().cast<float>() - ls).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("Mlp: initialisers are seeded and within their ranges", "[mlp]") {
  Mlp<float> a({100, 50, 10}), b({100, 50, 10});
  a.init_uniform(0.25f, 3);
  b.init_uniform(0.25f, 3);
  CHECK(a.layers()[0].weights == b.layers()[0].weights);
  CHECK(a.layers()[0].weights.cwiseAbs().maxCoeff() <= 0.25f);
  CHECK(a.layers()[0].weights.cwiseAbs().maxCoeff() > 0.24f);
  a.init_truncated_normal(0.01f, 4);
  const auto& w = a.layers()[0].weights;
  CHECK(w.cwiseAbs().maxCoeff() <= 0.02f);
  const double sd = std::sqrt(w.array().square().mean());
  CHECK(sd == Approx(0.0088).epsilon(0.05));  // a N(0, 0.01) truncated at 2 sigma has sd 0.88 sigma
}

namespace {
// Restores the automatic kernel choice when a test leaves.
struct KernelChoice {
  explicit KernelChoice(NoiseKernel k) { set_noise_kernel(k); }
  ~KernelChoice() { set_noise_kernel(NoiseKernel::automatic); }
};
// Each output summed over k in order with one FMA per term (`fused`: what the AVX2 kernel
// computes), or a product and a sum per term (the SSE2 kernel; the volatile product keeps a
// native build from fusing them).
RowMatrix ordered_reference(const RowMatrix& x, const RowMatrix& w, bool fused) {
  RowMatrix z(x.rows(), w.cols());
  for (Index r = 0; r < x.rows(); ++r)
    for (Index j = 0; j < w.cols(); ++j) {
      float acc = 0;
      for (Index k = 0; k < x.cols(); ++k) {
        if (fused) {
          acc = std::fma(x(r, k), w(k, j), acc);
        } else {
          volatile float p = x(r, k) * w(k, j);
          acc = acc + p;
        }
      }
      z(r, j) = acc;
    }
  return z;
}
}  // namespace

TEST_CASE(
    "Mlp<float>: the AVX-512, AVX2 and SSE2 dense kernels sum each output in order, whatever the shape and the batch",
    "[mlp][kernel]") {
#if defined(NNFUZZ_X86_DISPATCH)
  if (!detail::cpu_has_avx2_fma()) {
    WARN("this CPU lacks AVX2 + FMA: the dense kernel is not used here");
    return;
  }
  Rng rng(11);
  if (!detail::cpu_has_avx512()) WARN("this CPU lacks AVX-512: the AVX-512 dense kernel is not tested here");
  // Row blocks of 6 (12 on AVX-512) and column panels of 16 (32) with every remainder, one and
  // two vectors, masks.
  for (Index rows : {1, 2, 5, 6, 7, 11, 12, 13, 25, 100})
    for (Index k : {1, 3, 64, 785})
      for (Index n : {1, 7, 8, 9, 10, 15, 16, 17, 24, 31, 32, 33, 48, 100, 200}) {
        RowMatrix x(rows, k), w(k, n);
        rng.fill_uniform(x.data(), x.size(), -1.0f, 1.0f);
        rng.fill_uniform(w.data(), w.size(), -1.0f, 1.0f);
        // z gets a guard column on each side: the masked stores write nothing outside the block.
        for (const char* kernel : {"AVX-512", "AVX2", "SSE2"}) {
          const bool fused = kernel[0] == 'A';
          RowMatrix guarded = RowMatrix::Constant(rows, n + 2, 7.0f);
          if (kernel[3] == '-') {
            if (!detail::cpu_has_avx512()) continue;  // said once below
            detail::dense_avx512(x.data(), rows, k, w.data(), k, n, n, guarded.data() + 1, n + 2);
          } else if (fused) {
            detail::dense_avx2(x.data(), rows, k, w.data(), k, n, n, guarded.data() + 1, n + 2);
          } else {
            detail::dense_sse2(x.data(), rows, k, w.data(), k, n, n, guarded.data() + 1, n + 2);
          }
          INFO(kernel << ": rows " << rows << ", k " << k << ", n " << n);
          const RowMatrix want = ordered_reference(x, w, fused);
          CHECK((guarded.middleCols(1, n).array() == want.array()).all());
          CHECK((guarded.col(0).array() == 7.0f).all());
          CHECK((guarded.col(n + 1).array() == 7.0f).all());
        }
      }
  // Through Mlp<float>: the AVX2 kernel on any automatic choice, the SSE2 one under `generic`;
  // both close to double precision, and each one's rows the same alone as in a batch.
  const Mlp<float> net = random_net({784, 200, 100, 10}, 5);
  RowMatrix x(37, 784);
  rng.fill_uniform(x.data(), x.size(), 0.0f, 1.0f);
  const RowMatrix fast = net.logits(x);
  if (detail::cpu_has_avx512()) {  // the AVX-512 kernel (the automatic choice here) and AVX2's: the same bits
    KernelChoice choice(NoiseKernel::avx2);
    CHECK((net.logits(x).array() == fast.array()).all());
  }
  RowMatrix generic;
  {
    KernelChoice choice(NoiseKernel::generic);
    generic = net.logits(x);
    for (Index r : {0, 5, 36}) CHECK((net.logits(x.row(r)).array() == generic.row(r).array()).all());
  }
  CHECK((fast - generic).cwiseAbs().maxCoeff() < 1e-4f);
  CHECK((fast.array() != generic.array()).any());  // fused and unfused sums: not one path
  for (Index r : {0, 5, 36}) CHECK((net.logits(x.row(r)).array() == fast.row(r).array()).all());
#else
  WARN("built without x86 dispatch: the dense kernel is not compiled");
#endif
}
