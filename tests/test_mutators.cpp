// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/mutators.hpp>

#include <cmath>
#include <limits>

using namespace nnfuzz;

TEST_CASE("GaussianMutator: noise of the requested sigma around the parent", "[mutators]") {
  Rng rng(1);
  GaussianMutator m(0.01f, MutationBounds{-10, 10});
  RowVector parent = RowVector::Constant(784, 0.5f);
  RowMatrix batch(100, 784);
  m.mutate(parent, parent, batch, rng);
  const Eigen::ArrayXXf diff = (batch.rowwise() - parent).array();
  const double mean = diff.mean();
  const double sd = std::sqrt((diff - mean).square().mean());
  CHECK(std::abs(mean) < 1e-4);
  CHECK(sd == Approx(0.01).epsilon(0.01));
}

TEST_CASE("Mutators: the L-inf ball around the root and the domain are never left", "[mutators]") {
  Rng rng(2);
  const float eps = 0.2f;
  const MutationBounds b{0.0f, 1.0f, eps};
  GaussianMutator g(0.3f, b);
  UniformMutator u(0.3f, b);
  RowVector root(50);
  for (Index i = 0; i < 50; ++i) root(i) = float(i) / 49;  // 0 and 1 at the ends: both clips bite
  RowMatrix batch(64, 50);
  for (int which = 0; which < 2; ++which) {
    RowVector parent = root;
    for (int gen = 0; gen < 200; ++gen) {
      if (which == 0)
        g.mutate(parent, root, batch, rng);
      else
        u.mutate(parent, root, batch, rng);
      REQUIRE(batch.allFinite());
      REQUIRE(batch.minCoeff() >= 0.0f);
      REQUIRE(batch.maxCoeff() <= 1.0f);
      REQUIRE(((batch.rowwise() - root).cwiseAbs().maxCoeff()) <= eps);
      parent = batch.row(gen % 64);  // perturbations pile up across generations
    }
    // Piling up reaches the edge of the ball.
    CHECK(((batch.rowwise() - root).cwiseAbs().maxCoeff()) > 0.9f * eps);
  }
}

TEST_CASE("UniformMutator: steps bounded by half_width", "[mutators]") {
  Rng rng(3);
  UniformMutator m(0.05f, MutationBounds{-100, 100});
  RowVector parent = RowVector::Zero(100);
  RowMatrix batch(50, 100);
  m.mutate(parent, parent, batch, rng);
  CHECK(batch.cwiseAbs().maxCoeff() <= 0.05f);
  CHECK(batch.cwiseAbs().maxCoeff() > 0.049f);
  CHECK(std::abs(batch.mean()) < 0.002);
}

TEST_CASE("Mutators: invalid options and seeds are rejected with the value named", "[mutators]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(GaussianMutator(0.0f), Catch::Contains("GaussianMutator()") && Catch::Contains("sigma"));
  REQUIRE_THROWS_WITH(GaussianMutator(nan), Catch::Contains("sigma") && Catch::Contains("nan"));
  REQUIRE_THROWS_WITH(GaussianMutator(0.1f, MutationBounds{1, 0}), Catch::Contains("lo=1 hi=0"));
  REQUIRE_THROWS_WITH(UniformMutator(0.1f, MutationBounds{0, 1, -0.5f}),
                      Catch::Contains("linf_radius") && Catch::Contains("-0.5"));
  REQUIRE_THROWS_WITH(UniformMutator(-1.0f), Catch::Contains("half_width") && Catch::Contains("-1"));
  GaussianMutator m(0.1f);
  RowMatrix seeds = RowMatrix::Constant(2, 3, 0.5f);
  REQUIRE_NOTHROW(m.check_seeds(seeds));
  seeds(1, 2) = 1.5f;
  REQUIRE_THROWS_WITH(m.check_seeds(seeds), Catch::Contains("seed 1 element 2 is 1.5"));
}

TEST_CASE("ResetMutator: `count` elements redrawn in the domain, or one patch", "[mutators]") {
  const RowVector parent = RowVector::Constant(16, 0.5f);
  RowMatrix batch(50, 16);
  Rng rng(11);
  ResetMutator m(3, MutationBounds{0.0f, 1.0f});
  m.mutate(parent, parent, batch, rng);
  for (Index r = 0; r < batch.rows(); ++r) {
    const Index changed = (batch.row(r).array() != 0.5f).count();
    CHECK(changed >= 1);
    CHECK(changed <= 3);  // positions may repeat
    CHECK(batch.row(r).minCoeff() >= 0.0f);
    CHECK(batch.row(r).maxCoeff() <= 1.0f);
  }
  // Patch mode on a 4 x 4 image: a 2 x 2 square of adjacent cells, inside the L-inf ball.
  ResetMutator p(1, MutationBounds{0.0f, 1.0f, 0.25f}, 4, 2);
  p.mutate(parent, parent, batch, rng);
  for (Index r = 0; r < batch.rows(); ++r) {
    Index lo_y = 4, hi_y = -1, lo_x = 4, hi_x = -1;
    for (Index i = 0; i < 16; ++i)
      if (batch(r, i) != 0.5f) {
        lo_y = std::min(lo_y, i / 4), hi_y = std::max(hi_y, i / 4);
        lo_x = std::min(lo_x, i % 4), hi_x = std::max(hi_x, i % 4);
      }
    if (hi_y >= 0) {
      CHECK(hi_y - lo_y <= 1);
      CHECK(hi_x - lo_x <= 1);
    }
    CHECK((batch.row(r).array() - 0.5f).abs().maxCoeff() <= 0.25f);
  }
  CHECK_THROWS_WITH(ResetMutator(0), Catch::Contains("'count'"));
  CHECK_THROWS_WITH(ResetMutator(1, {}, 4, 5), Catch::Contains("'patch'"));
  RowMatrix odd(2, 15);
  CHECK_THROWS_WITH(p.mutate(RowVector::Constant(15, 0.5f), RowVector::Constant(15, 0.5f), odd, rng),
                    Catch::Contains("option 'width' = 4"));
}

TEST_CASE("BanditMutator: tries each operator, then favours the one that pays", "[mutators]") {
  auto m = make_bandit_mutator(UniformMutator(0.01f), UniformMutator(0.2f), UniformMutator(0.05f));
  const RowVector parent = RowVector::Constant(4, 0.5f);
  RowMatrix batch(10, 4);
  Rng rng(12);
  // Operator 1 (the widest steps) "pays": its batches add 5 of 10 mutants, the others none.
  for (int it = 0; it < 200; ++it) {
    m.mutate(parent, parent, batch, rng);
    const bool wide = (batch.rowwise() - parent).cwiseAbs().maxCoeff() > 0.05f;
    BatchFeedback fb;
    fb.rows = 10;
    fb.added = wide ? 5 : 0;
    m.feedback(fb);
  }
  const auto& n = m.batches();
  CHECK(n[0] + n[1] + n[2] == 200);
  CHECK(n[0] >= 2);  // warm-up: each tried twice
  CHECK(n[2] >= 2);
  CHECK(n[1] > 170);  // epsilon 0.1 leaves ~2/3 * 10% to the others
  CHECK(m.mean_reward(1) == Approx(0.5));
  m.reset();
  CHECK(m.batches()[1] == 0);
  CHECK_THROWS_WITH(BanditMutator<GaussianMutator>(std::make_tuple(GaussianMutator()), 2.0),
                    Catch::Contains("'epsilon'"));
  CHECK_THROWS_WITH(BanditMutator<GaussianMutator>(std::make_tuple(GaussianMutator()), 0.1, 0.0),
                    Catch::Contains("'decay'"));
  // check_seeds asks every operator.
  auto strict = make_bandit_mutator(GaussianMutator(0.1f, MutationBounds{0.0f, 1.0f}));
  CHECK_THROWS_WITH(strict.check_seeds(RowMatrix::Constant(1, 4, 2.0f)), Catch::Contains("outside"));
}

TEST_CASE("BanditMutator: with a fitness, the operator that climbs wins over the one that scatters", "[mutators]") {
  auto m = make_bandit_mutator(UniformMutator(0.01f), UniformMutator(0.2f));
  const RowVector parent = RowVector::Constant(4, 0.5f);
  RowMatrix batch(10, 4);
  Rng rng(13);
  float fitness[10];
  // Operator 0 (small steps) adds many mutants to the corpus but none is fitter than the parent;
  // operator 1 adds few, and its best mutant rises 0.5 above the parent: progress is the reward.
  for (int it = 0; it < 200; ++it) {
    m.mutate(parent, parent, batch, rng);
    const bool wide = (batch.rowwise() - parent).cwiseAbs().maxCoeff() > 0.05f;
    for (float& f : fitness) f = wide ? -1.0f : -2.5f;
    fitness[3] = wide ? -0.5f : -2.0f;
    BatchFeedback fb;
    fb.rows = 10;
    fb.added = wide ? 1 : 8;
    fb.fitness = fitness;
    fb.parent_fitness = -1.0f;
    m.feedback(fb);
  }
  CHECK(m.batches()[1] > 170);
  CHECK(m.mean_reward(1) == Approx(0.5));
  CHECK(m.mean_reward(0) == Approx(0.0));
}

TEST_CASE("DefaultMutator: TensorFuzz's noise, multi-scale noise, or Square patches, by what the run offers",
          "[mutators][defaults]") {
  const MutationBounds b{0, 1, 0.2f};
  DefaultMutator m(0.1f, b);
  const RowVector root = RowVector::Constant(64, 0.5f);
  RowMatrix batch(20, 64), expect(20, 64);
  RunSetup s;
  s.input_dim = 64;
  // No fitness: exactly GaussianMutator(sigma, bounds), draw for draw.
  m.prepare(s);
  CHECK(m.mode() == DefaultMutator::Mode::noise);
  Rng r1(3), r2(3);
  m.mutate(root, root, batch, r1);
  GaussianMutator(0.1f, b).mutate(root, root, expect, r2);
  CHECK(batch == expect);
  // A fitness, no image: multi-scale noise (sigma_range 4).
  s.fitness = true;
  m.prepare(s);
  CHECK(m.mode() == DefaultMutator::Mode::multiscale_noise);
  m.mutate(root, root, batch, r1);
  GaussianMutator(0.1f, b, 4.0f).mutate(root, root, expect, r2);
  CHECK(batch == expect);
  // A fitness and an image {1, 8, 8}: the bandit tries Square patches first (a patch at the
  // ball's corner: every changed element moved by exactly 0.2), then the noise.
  s.input_shape = {1, 8, 8};
  REQUIRE(s.is_image());
  CHECK(s.image_width() == 8);
  m.prepare(s);
  m.reset();
  CHECK(m.mode() == DefaultMutator::Mode::square_or_noise);
  m.mutate(root, root, batch, r1);
  for (Index r = 0; r < batch.rows(); ++r) {
    const Eigen::ArrayXf d = (batch.row(r) - root).array().abs().transpose();
    CHECK((d > 0).count() >= 1);
    CHECK(((d == 0) || (d - 0.2f).abs() < 1e-6f).all());
  }
  CHECK(m.batches()[0] == 1);
  // Not an image: {64} or a long thin strip; a shape that does not hold input_dim is refused.
  s.input_shape = {64};
  CHECK_FALSE(s.is_image());
  s.input_shape = {2, 32};
  CHECK_FALSE(s.is_image());
  s.input_shape = {1, 8, 9};
  CHECK_THROWS_WITH(m.prepare(s), Catch::Contains("DefaultMutator::prepare()") && Catch::Contains("72"));
  CHECK_THROWS_WITH(DefaultMutator(0.0f), Catch::Contains("DefaultMutator(): option 'sigma'"));
  CHECK_THROWS_WITH(DefaultMutator(0.1f, {}, 0.5f), Catch::Contains("DefaultMutator(): option 'sigma_range'"));
  CHECK_THROWS_WITH(DefaultMutator(0.1f, MutationBounds{1, 0}), Catch::Contains("DefaultMutator()"));
  CHECK_THROWS_WITH(m.check_seeds(RowMatrix::Constant(1, 64, 2.0f)), Catch::Contains("outside the mutator's domain"));
}

#include <algorithm>
#include <cstring>
#include <vector>

namespace {
// The reference for the mutant path: the product rounded to float before the sum (a volatile
// keeps the compiler from fusing them), then max(x, lower) and min(x, upper) in std's order.
float reference_mutant(float noise, float s, float parent, float lower, float upper) {
  volatile float product = noise * s;
  const float sum = product + parent;
  return std::min(std::max(sum, lower), upper);
}
}  // namespace

TEST_CASE("Mutant path: every code path gives the same bits as a scalar reference (no FMA)", "[mutators]") {
  // detail::scale_add_clip's generic and AVX2 paths on rows whose width leaves every tail length
  // (1..7 lanes), strided rows, scale + add + clip and clip alone, per-element and scalar bounds;
  // values include signed zeros, bounds exactly hit, and products whose FMA would round
  // differently.
  Rng rng(21);
  for (const Index cols : {Index{1}, Index{7}, Index{8}, Index{13}, Index{784}, Index{789}}) {
    INFO("cols = " << cols);
    const Index rows = 5, stride = cols + 3;
    std::vector<float> noise(static_cast<std::size_t>(rows * stride)), parent(static_cast<std::size_t>(cols)),
        lower(parent.size()), upper(parent.size()), scale(static_cast<std::size_t>(rows));
    rng.fill_normal(noise.data(), static_cast<Index>(noise.size()));
    rng.fill_uniform(parent.data(), cols, -1.0f, 1.0f);
    for (Index c = 0; c < cols; ++c) {
      lower[c] = parent[c] - 0.15f;
      upper[c] = parent[c] + 0.15f;
    }
    for (Index r = 0; r < rows; ++r) scale[r] = 0.1f * static_cast<float>(r + 1) / 3.0f;
    noise[0] = -0.0f;
    parent[0] = -0.0f;  // -0 * s + -0 = -0: max against lower (< 0) keeps the sign
    if (cols > 1) noise[1] = 1.0f / 3.0f;
    for (const bool per_element : {false, true})
      for (const bool with_scale : {false, true}) {
        INFO("per_element " << per_element << ", scale " << with_scale);
        const detail::ClipBounds b{per_element ? lower.data() : nullptr, per_element ? upper.data() : nullptr, -0.2f,
                                   0.2f};
        std::vector<float> expected = noise;
        for (Index r = 0; r < rows; ++r)
          for (Index c = 0; c < cols; ++c) {
            float& x = expected[static_cast<std::size_t>(r * stride + c)];
            const float lo = per_element ? lower[c] : b.lo, hi = per_element ? upper[c] : b.hi;
            x = with_scale ? reference_mutant(x, scale[r], parent[c], lo, hi) : std::min(std::max(x, lo), hi);
          }
        std::vector<float> generic = noise;
        detail::scale_add_clip_generic(detail::RowsView{generic.data(), rows, cols, stride},
                                       with_scale ? scale.data() : nullptr, parent.data(), b);
        CHECK(std::memcmp(generic.data(), expected.data(), sizeof(float) * expected.size()) == 0);
#if defined(NNFUZZ_X86_DISPATCH)
        if (detail::cpu_has_avx2_fma()) {
          std::vector<float> avx2 = noise;
          const detail::RowsView v{avx2.data(), rows, cols, stride};
          const float* s = with_scale ? scale.data() : nullptr;
          if (with_scale)
            per_element ? detail::scale_add_clip_avx2<true, true>(v, s, parent.data(), b)
                        : detail::scale_add_clip_avx2<true, false>(v, s, parent.data(), b);
          else
            per_element ? detail::scale_add_clip_avx2<false, true>(v, s, parent.data(), b)
                        : detail::scale_add_clip_avx2<false, false>(v, s, parent.data(), b);
          CHECK(std::memcmp(avx2.data(), expected.data(), sizeof(float) * expected.size()) == 0);
        }
#endif
      }
  }
}

TEST_CASE("GaussianMutator: AVX2 and AVX-512 noise kernels give the same mutants", "[mutators]") {
  // The whole mutant path (noise, sigma, multi-scale sigma, parent, domain, ball) on each
  // kernel of nnfuzz's own family this CPU runs: the same bits.
  std::vector<NoiseKernel> kernels;
  if (detail::cpu_has_avx512()) kernels.push_back(NoiseKernel::avx512);
  if (detail::cpu_has_avx2_fma()) kernels.push_back(NoiseKernel::avx2);
  if (kernels.size() < 2) {
    WARN("this CPU lacks AVX-512 or AVX2: one kernel only");
    return;
  }
  std::vector<RowMatrix> out;
  for (const NoiseKernel k : kernels) {
    set_noise_kernel(k);
    Rng rng(4);
    RowVector parent(789);
    rng.fill_uniform(parent.data(), parent.cols(), 0.0f, 1.0f);
    GaussianMutator plain(0.1f), ball(0.1f, MutationBounds{0, 1, 0.05f}), multi(0.1f, MutationBounds{}, 4.0f);
    RowMatrix all(30, 789);
    plain.mutate(parent, parent, all.topRows(10), rng);
    ball.mutate(parent, parent, all.middleRows(10, 10), rng);
    multi.mutate(parent, parent, all.bottomRows(10), rng);
    out.push_back(all);
  }
  set_noise_kernel(NoiseKernel::automatic);
  CHECK(std::memcmp(out[0].data(), out[1].data(), sizeof(float) * static_cast<std::size_t>(out[0].size())) == 0);
}

TEST_CASE("GaussianMutator: the ball follows the root when it changes between batches", "[mutators]") {
  // The ball's bounds are remembered per root: a new root (or the old one again) gets its own.
  GaussianMutator m(0.5f, MutationBounds{0, 1, 0.05f});
  Rng rng(8);
  const RowVector a = RowVector::Constant(16, 0.3f), b = RowVector::Constant(16, 0.7f);
  RowMatrix batch(20, 16);
  for (const RowVector* root : {&a, &b, &a}) {
    m.mutate(*root, *root, batch, rng);
    CHECK(((batch.rowwise() - *root).cwiseAbs().maxCoeff()) <= 0.05f);
  }
}
