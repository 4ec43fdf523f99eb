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
