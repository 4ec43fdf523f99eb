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
