// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/coverage/auto.hpp>
#include <nnfuzz/coverage/brute_force.hpp>
#include <nnfuzz/coverage/calibrated.hpp>
#include <nnfuzz/coverage/combine.hpp>
#include <nnfuzz/coverage/kd_tree.hpp>
#include <nnfuzz/coverage/no_coverage.hpp>
#include <nnfuzz/rng.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace nnfuzz;

TEMPLATE_TEST_CASE("Coverage: new means at least the radius away from everything seen, batch included", "[coverage]",
                   KdTreeCoverage, BruteForceCoverage) {
  TestType cov(1.0f);
  cov.reset(2);
  Mask is_new;
  RowMatrix b(4, 2);
  b << 0, 0,     // new: nothing seen
      0.5, 0,    // within 1 of row 0 of the same batch: not new
      1.5, 0,    // 1.5 from row 0: new
      0, 0.999;  // 0.999 from row 0: not new
  cov.observe(b, is_new);
  CHECK(is_new(0));
  CHECK_FALSE(is_new(1));
  CHECK(is_new(2));
  CHECK_FALSE(is_new(3));
  CHECK(cov.size() == 2);
  RowMatrix c(2, 2);
  c << 3, 0,    // 1.5 from (1.5, 0): new
      0, -1.2;  // new
  cov.observe(c, is_new);
  CHECK(is_new(0));
  CHECK(is_new(1));
  cov.observe(c, is_new);  // seen now
  CHECK_FALSE(is_new(0));
  CHECK_FALSE(is_new(1));
  cov.reset(2);
  CHECK(cov.size() == 0);
  REQUIRE_THROWS_WITH(TestType(0.0f), Catch::Contains("radius") && Catch::Contains("got 0"));
  REQUIRE_THROWS_WITH(TestType(-2.0f), Catch::Contains("got -2"));
}

TEST_CASE("KdTreeCoverage and BruteForceCoverage agree on every novelty decision", "[coverage]") {
  Rng rng(11);
  for (Index dim : {1, 3, 10, 40}) {
    const float threshold = 0.3f * std::sqrt(float(dim));
    KdTreeCoverage kd(threshold);
    BruteForceCoverage bf(threshold);
    kd.reset(dim);
    bf.reset(dim);
    Mask a, b;
    RowMatrix batch(50, dim);
    Index disagreements = 0, fresh = 0;
    for (int it = 0; it < 600; ++it) {  // 600 batches x 50 rows x 4 dims = 120,000 decisions
      // Clustered points: a random centre per batch, spread so that about half are new early on.
      rng.fill_normal(batch.data(), batch.size());
      RowVector centre(dim);
      rng.fill_uniform(centre.data(), dim, -3, 3);
      batch = (batch * 0.4f).rowwise() + centre;
      kd.observe(batch, a);
      bf.observe(batch, b);
      disagreements += (a != b).count();
      fresh += a.count();
    }
    INFO("dim " << dim << " new " << fresh);
    CHECK(disagreements == 0);
    CHECK(kd.size() == bf.size());
    CHECK(fresh > 20);
    CHECK(fresh < 50000);
  }
}

TEMPLATE_TEST_CASE("Coverage: reset() to the same dimension decides like a new policy", "[coverage]", KdTreeCoverage,
                   BruteForceCoverage) {
  // reset() keeps the stored vectors' memory for reuse (detail::BasicRowStore): what was stored
  // before, in memory that is reused, must count for nothing.
  Rng rng(5);
  const Index dim = 10;
  RowMatrix before(5000, dim), after(300, dim);  // 5,000 x 10 floats: more than one chunk
  rng.fill_normal(before.data(), before.size());
  rng.fill_normal(after.data(), after.size());
  TestType reused(0.5f), fresh(0.5f);
  Mask a, b;
  reused.reset(dim);
  for (Index i = 0; i < before.rows(); i += 100) reused.observe(before.middleRows(i, 100), a);
  REQUIRE(reused.size() > 100);
  reused.reset(dim);
  fresh.reset(dim);
  CHECK(reused.size() == 0);
  for (Index i = 0; i < after.rows(); i += 50) {
    reused.observe(after.middleRows(i, 50), a);
    fresh.observe(after.middleRows(i, 50), b);
    CHECK((a == b).all());
  }
  CHECK(reused.size() == fresh.size());
}

TEST_CASE("KdTreeCoverage: vectors within rounding of the radius get the exact test's answer", "[coverage]") {
  // The leaves and the newest vectors are screened eight at a time with vector arithmetic; a
  // vector whose screened distance is within rounding of the radius must get
  // squared_distance_below's answer. Queries sit a few ulps inside and outside the radius of a
  // stored vector, at 3, 10 and 40 dimensions, with the stored vectors in the tail and in trees.
  Rng rng(23);
  for (Index dim : {3, 10, 40}) {
    for (std::size_t leaf : {std::size_t{1}, std::size_t{16}, std::size_t{64}}) {
      const float radius = 0.75f;
      KdTreeCoverage kd(radius, leaf);
      BruteForceCoverage bf(radius);
      kd.reset(dim);
      bf.reset(dim);
      RowMatrix stored(600, dim);
      rng.fill_uniform(stored.data(), stored.size(), -20, 20);
      Mask a, b;
      kd.observe(stored, a);
      bf.observe(stored, b);
      REQUIRE((a == b).all());
      RowMatrix queries(1, dim);
      Index disagreements = 0, inside = 0, outside = 0;
      const float r2 = radius * radius;
      for (int it = 0; it < 400; ++it) {
        const Index j = rng.uniform_index(kd.size());
        RowVector dir(dim);
        rng.fill_normal(dir.data(), dim);
        dir.normalize();
        // A step of the radius, nudged by a few ulps either way: the sum lands on both sides of r2.
        float step = radius;
        for (int k = static_cast<int>(rng.uniform_index(9)) - 4; k != 0; k += k > 0 ? -1 : 1)
          step = std::nextafter(step, k > 0 ? 2 * radius : 0.0f);
        queries.row(0) = kd.vector(j) + step * dir;
        const bool exact_inside = [&] {
          for (Index s = 0; s < kd.size(); ++s)
            if (detail::squared_distance_below(queries.row(0).data(), kd.vector(s).data(), dim, r2)) return true;
          return false;
        }();
        (exact_inside ? inside : outside) += 1;
        // A new query is remembered by both; the exact answer above was taken over everything stored.
        kd.observe(queries, a);
        bf.observe(queries, b);
        disagreements += (a(0) == exact_inside) + (b(0) == exact_inside);  // new == !inside
      }
      INFO("dim " << dim << " leaf " << leaf << " inside " << inside << " outside " << outside);
      CHECK(disagreements == 0);
      CHECK(inside > 20);
      CHECK(outside > 20);
    }
  }
}

TEST_CASE("AutoCoverage: the KD-tree from the start for at most 16 dimensions, brute force first above", "[coverage]") {
  Rng rng(29);
  for (Index dim : {10, 16, 17, 64}) {
    AutoCoverage automatic(0.5f);
    automatic.reset(dim);
    RowMatrix batch(10, dim);
    rng.fill_uniform(batch.data(), batch.size(), -10, 10);
    Mask is_new;
    automatic.observe(batch, is_new);
    INFO("dim " << dim);
    CHECK(automatic.using_kd_tree() == (dim <= AutoCoverage::kSmallDim));
    CHECK(automatic.size() == 10);
  }
  CHECK_THROWS_WITH(AutoCoverage(0.5f, -2),
                    Catch::Contains("AutoCoverage()") && Catch::Contains("switch_size") && Catch::Contains("-2"));
}

TEST_CASE("KdTreeCoverage: background rebuilds change no decision", "[coverage]") {
  // Tiny blocking limit and leaves: nearly every merge runs on the builder thread while the
  // queries go on, and results are installed at whatever moment the thread finishes.
  Rng rng(23);
  for (Index limit : {Index{8}, Index{100}, std::numeric_limits<Index>::max()}) {
    KdTreeCoverage kd(0.25f, 2, limit);
    BruteForceCoverage bf(0.25f);
    kd.reset(3);
    bf.reset(3);
    Mask a, b;
    RowMatrix batch(64, 3);
    Index disagreements = 0;
    for (int it = 0; it < 300; ++it) {
      rng.fill_uniform(batch.data(), batch.size(), -4, 4);
      kd.observe(batch, a);
      bf.observe(batch, b);
      disagreements += (a != b).count();
      if (it == 150) {  // a copy taken mid-rebuild is complete and independent
        KdTreeCoverage copy = kd;
        Mask c;
        copy.observe(batch, c);
        CHECK(c.count() == 0);
        CHECK(copy.size() == kd.size());
      }
    }
    INFO("limit " << limit << " stored " << kd.size());
    CHECK(disagreements == 0);
    CHECK(kd.size() == bf.size());
    CHECK(kd.size() > 5000);
    // Whether rebuilds ran in the background depends only on the limit, not on timing.
    CHECK((kd.background_rebuilds() > 0) == (limit != std::numeric_limits<Index>::max()));
    // Once the rebuilds are in, each tree outweighs all later ones: logarithmically many trees
    // (the newest hold at least 4 x leaf_size = 8 vectors).
    kd.finish_rebuilds();
    CHECK_FALSE(kd.rebuilding());
    CHECK(kd.tree_count() <= static_cast<std::size_t>(std::log2(double(kd.size()) / 8.0)) + 1);
  }
  REQUIRE_THROWS_WITH(KdTreeCoverage(1.0f, 16, 0), Catch::Contains("max_blocking_build") && Catch::Contains("got 0"));
}

TEMPLATE_TEST_CASE("Coverage: a vector with NaN or Inf is never new, never stored, and spoils nothing", "[coverage]",
                   KdTreeCoverage, BruteForceCoverage, AutoCoverage) {
  // NaN coverage is real: Σ|logits| of the very input that triggers a NaN. A stored NaN would
  // poison a KD-tree's bounding boxes (NaN comparisons prune everything) and a GEMM screen.
  Rng rng(29);
  TestType cov(0.5f);
  BruteForceCoverage clean(0.5f);  // sees the finite rows only
  cov.reset(1);
  clean.reset(1);
  RowMatrix batch(50, 1);
  Mask a, b;
  Index disagreements = 0, non_finite_new = 0, finite_rows = 0;
  for (int it = 0; it < 60; ++it) {
    rng.fill_uniform(batch.data(), batch.size(), -2000, 2000);
    for (Index r = 0; r < batch.rows(); ++r)
      if (rng.uniform_index(5) == 0)
        batch(r, 0) =
            rng.uniform_index(2) ? std::numeric_limits<float>::quiet_NaN() : -std::numeric_limits<float>::infinity();
    cov.observe(batch, a);
    std::vector<Index> finite;
    for (Index r = 0; r < batch.rows(); ++r) {
      if (std::isfinite(batch(r, 0)))
        finite.push_back(r);
      else
        non_finite_new += a(r);
    }
    RowMatrix f(static_cast<Index>(finite.size()), 1);
    for (std::size_t i = 0; i < finite.size(); ++i) f(static_cast<Index>(i), 0) = batch(finite[i], 0);
    clean.observe(f, b);
    for (std::size_t i = 0; i < finite.size(); ++i) disagreements += a(finite[i]) != b(static_cast<Index>(i));
    finite_rows += static_cast<Index>(finite.size());
  }
  CHECK(non_finite_new == 0);
  CHECK(disagreements == 0);
  CHECK(cov.size() == clean.size());
  CHECK(cov.size() > 1000);  // enough for the KD-tree to hold several trees
  CHECK(finite_rows < 60 * 50);
}

TEST_CASE("NoCoverage: nothing is ever new", "[coverage]") {
  NoCoverage c;
  c.reset(3);
  Mask m;
  c.observe(RowMatrix::Random(10, 3), m);
  CHECK(m.size() == 10);
  CHECK(m.count() == 0);
  CHECK(c.size() == 0);
}

TEST_CASE("radius_from_squared converts TensorFuzz's squared radius", "[coverage]") {
  CHECK(radius_from_squared(0.5f) == Approx(0.70710678f));
  REQUIRE_THROWS_WITH(radius_from_squared(-1), Catch::Contains("radius_from_squared()"));
}

TEST_CASE("AutoCoverage switches to the KD-tree and keeps every decision", "[coverage]") {
  Rng rng(17);
  AutoCoverage automatic(0.5f, 500);
  BruteForceCoverage exact(0.5f);
  automatic.reset(4);
  exact.reset(4);
  Mask a, b;
  RowMatrix batch(100, 4);
  Index disagreements = 0;
  for (int it = 0; it < 200; ++it) {
    rng.fill_uniform(batch.data(), batch.size(), -10, 10);
    automatic.observe(batch, a);
    exact.observe(batch, b);
    disagreements += (a != b).count();
  }
  CHECK(disagreements == 0);
  CHECK(automatic.using_kd_tree());
  CHECK(automatic.size() == exact.size());
  AutoCoverage wide(0.5f, 10, 16);  // 16 dimensions and more stay on brute force
  wide.reset(32);
  RowMatrix w(100, 32);
  rng.fill_uniform(w.data(), w.size(), -10, 10);
  wide.observe(w, a);
  wide.observe(w, a);
  CHECK_FALSE(wide.using_kd_tree());
}

TEST_CASE("KdTreeCoverage copies are deep and independent", "[coverage]") {
  KdTreeCoverage a(1.0f);
  a.reset(2);
  Mask m;
  RowMatrix p(2, 2);
  p << 0, 0, 5, 5;
  a.observe(p, m);
  KdTreeCoverage b = a;
  RowMatrix q(1, 2);
  q << 10, 10;
  b.observe(q, m);
  CHECK(m(0));
  CHECK(b.size() == 3);
  CHECK(a.size() == 2);
  a.observe(p, m);  // the original still knows its vectors
  CHECK(m.count() == 0);
}

TEST_CASE("CalibratedCoverage: the radius is the (1 - target) quantile of the first mutants' seed distances",
          "[coverage]") {
  CalibratedCoverage cov(0.1);
  cov.reset(1);
  Mask is_new;
  RowMatrix seeds(2, 1);
  seeds << 0.0f, 100.0f;
  cov.observe(seeds, is_new);  // seeds: all kept
  CHECK(is_new.all());
  CHECK(cov.size() == 2);
  CHECK(!cov.calibrated());
  cov.seeds_done();
  RowMatrix first(10, 1);
  for (Index i = 0; i < 10; ++i) first(i, 0) = static_cast<float>(i + 1);  // nearest-seed distances 1..10
  cov.observe(first, is_new);
  // Rank round(0.9 * 9) = 8 of the sorted distances: 9. "New" is distance >= radius, so the
  // radius sits just above 9: only the mutant at 10 is new (10% of the batch).
  REQUIRE(cov.calibrated());
  CHECK(cov.radius() == std::nextafter(9.0f, 100.0f));
  CHECK(cov.calibration().samples == 10);
  CHECK(cov.calibration().median_distance == 6.0f);  // rank round(0.5 * 9) = 5 (0-based)
  CHECK(is_new.count() == 1);
  CHECK(is_new(9));
  CHECK(cov.size() == 3);
  // From now on an ordinary novelty test at that radius.
  RowMatrix next(2, 1);
  next << 18.5f, 30.0f;  // 8.5 from 10: not new; 20 from 10 and 70 from 100: new
  cov.observe(next, is_new);
  CHECK(!is_new(0));
  CHECK(is_new(1));
}

TEST_CASE("CalibratedCoverage: waits while every mutant sits on a seed - rejects bad options", "[coverage]") {
  CalibratedCoverage cov;
  cov.reset(2);
  Mask is_new;
  const RowMatrix seed = RowMatrix::Constant(1, 2, 0.5f);
  cov.observe(seed, is_new);
  cov.seeds_done();
  cov.observe(RowMatrix::Constant(5, 2, 0.5f), is_new);  // constant coverage: nothing to measure
  CHECK(!cov.calibrated());
  CHECK(!is_new.any());
  RowMatrix moved = RowMatrix::Constant(5, 2, 0.5f);
  moved(4, 0) = 0.75f;
  cov.observe(moved, is_new);
  CHECK(cov.calibrated());
  CHECK(cov.radius() > 0);
  CHECK_THROWS_WITH(CalibratedCoverage(0.0), Catch::Contains("'target_rate' must be in (0, 1)"));
  CHECK_THROWS_WITH(CalibratedCoverage(std::nan("")), Catch::Contains("'target_rate'"));
}

TEST_CASE("calibrate_radius: the quantile of nearest-reference distances, non-finite rows skipped", "[coverage]") {
  RowMatrix refs(2, 1), mutants(12, 1);
  refs << 0.0f, 100.0f;
  for (Index i = 0; i < 10; ++i) mutants(i, 0) = static_cast<float>(i + 1);  // distances 1..10
  mutants(10, 0) = std::numeric_limits<float>::quiet_NaN();
  mutants(11, 0) = std::numeric_limits<float>::infinity();
  float median = 0;
  CHECK(calibrate_radius(refs, mutants, 0.1, &median) == std::nextafter(9.0f, 100.0f));
  CHECK(median == 6.0f);
  // Target 0.5: rank round(0.5 * 9) = 5 -> distance 6.
  CHECK(calibrate_radius(refs, mutants, 0.5) == std::nextafter(6.0f, 100.0f));
  CHECK(calibrate_radius(refs, RowMatrix::Zero(3, 1), 0.1) == 0.0f);  // all on a reference
  CHECK_THROWS_WITH(calibrate_radius(refs, mutants, 1.0), Catch::Contains("calibrate_radius(): option 'target_rate'"));
  CHECK_THROWS_WITH(calibrate_radius(RowMatrix(0, 1), mutants, 0.1), Catch::Contains("no reference vectors"));
  CHECK_THROWS_WITH(calibrate_radius(refs, RowMatrix::Zero(3, 2), 0.1), Catch::Contains("2"));
}

TEST_CASE("set_radius: every back-end judges later vectors at the new radius", "[coverage]") {
  RowMatrix a(1, 2), b(1, 2);
  a << 0.0f, 0.0f;
  b << 3.0f, 4.0f;  // 5 from a
  auto check = [&](auto cov) {
    Mask m;
    cov.reset(2);
    cov.observe(a, m);
    cov.set_radius(6.0f);
    cov.observe(b, m);
    CHECK(!m(0));
    cov.set_radius(5.0f);  // "new" is distance >= radius
    cov.observe(b, m);
    CHECK(m(0));
    CHECK(cov.radius() == 5.0f);
    CHECK_THROWS_WITH(cov.set_radius(0.0f), Catch::Contains("set_radius(): option 'radius'"));
  };
  check(BruteForceCoverage(1.0f));
  check(KdTreeCoverage(1.0f));
  check(AutoCoverage(1.0f));
}

TEST_CASE("CalibratedCoverage: grows the radius while windows accept more than max_rate, never shrinks it",
          "[coverage]") {
  CalibrationOptions o;
  o.target_rate = 0.1;
  o.window = 10;
  o.max_rate = 0.1;
  o.patience = 1;
  CalibratedCoverage cov(o);
  cov.reset(1);
  Mask is_new;
  RowMatrix seeds(2, 1);
  seeds << 0.0f, 100.0f;
  cov.observe(seeds, is_new);
  cov.seeds_done();
  RowMatrix first(10, 1);
  for (Index i = 0; i < 10; ++i) first(i, 0) = static_cast<float>(i + 1);
  cov.observe(first, is_new);  // the calibration batch (1 of 10 new): not part of a window
  const float r0 = std::nextafter(9.0f, 100.0f);
  CHECK(cov.radius() == r0);
  CHECK(cov.calibration().adjustments == 0);
  RowMatrix one_new = RowMatrix::Constant(10, 1, 1.0f);
  one_new(0, 0) = 500.0f;
  cov.observe(one_new, is_new);  // window 1: 1 of 10 new (rate 0.1, not above max_rate)
  CHECK(is_new.count() == 1);
  CHECK(cov.calibration().window_rate == Approx(0.1));
  CHECK(cov.calibration().adjustments == 0);
  // Window 2: every vector new (far apart): rate 1 > 0.1, factor sqrt(10) clamped to 2.
  RowMatrix far(10, 1);
  for (Index i = 0; i < 10; ++i) far(i, 0) = 1000.0f * static_cast<float>(i + 1);
  cov.observe(far, is_new);
  CHECK(is_new.all());
  CHECK(cov.calibration().adjustments == 1);
  CHECK(cov.radius() == 2 * r0);
  // Window 3: 4 of 10 new: factor sqrt(4) = 2 again.
  RowMatrix some(10, 1);
  for (Index i = 0; i < 10; ++i) some(i, 0) = i < 4 ? 20000.0f + 100.0f * static_cast<float>(i) : 1000.0f;
  cov.observe(some, is_new);
  CHECK(is_new.count() == 4);
  CHECK(cov.radius() == 4 * r0);
  // Window 4: nothing new: the radius stays (a falling rate is the corpus covering its space).
  cov.observe(RowMatrix::Constant(10, 1, 1000.0f), is_new);
  CHECK(!is_new.any());
  CHECK(cov.calibration().adjustments == 2);
  CHECK(cov.radius() == 4 * r0);
  CHECK(cov.calibration().initial_radius == r0);
  // Without adaptation the first radius stays.
  o.adapt = false;
  CalibratedCoverage fixed(o);
  fixed.reset(1);
  fixed.observe(seeds, is_new);
  fixed.seeds_done();
  fixed.observe(first, is_new);
  fixed.observe(far, is_new);
  CHECK(fixed.radius() == r0);
  CHECK(fixed.calibration().adjustments == 0);
  o.adapt = true;
  o.window = 0;
  CHECK_THROWS_WITH(CalibratedCoverage(o), Catch::Contains("'window'"));
  o.window = 10;
  o.max_rate = 0;
  CHECK_THROWS_WITH(CalibratedCoverage(o), Catch::Contains("'max_rate'"));
  o.max_rate = 0.1;
  o.patience = 0;
  CHECK_THROWS_WITH(CalibratedCoverage(o), Catch::Contains("'patience'"));
}

TEST_CASE("CalibratedCoverage: a burst of new mutants shorter than `patience` windows leaves the radius",
          "[coverage]") {
  CalibrationOptions o;
  o.target_rate = 0.1;
  o.window = 10;
  o.max_rate = 0.1;  // patience 3
  CalibratedCoverage cov(o);
  cov.reset(1);
  Mask is_new;
  RowMatrix seeds(1, 1);
  seeds << 0.0f;
  cov.observe(seeds, is_new);
  cov.seeds_done();
  RowMatrix first(10, 1);
  for (Index i = 0; i < 10; ++i) first(i, 0) = static_cast<float>(i + 1);
  cov.observe(first, is_new);
  const float r0 = cov.radius();
  float next = 1000;
  auto window = [&](bool all_new) {
    RowMatrix v(10, 1);
    for (Index i = 0; i < 10; ++i) v(i, 0) = all_new ? (next += 1000) : 1.0f;
    cov.observe(v, is_new);
  };
  window(true);
  window(true);
  window(false);  // two high windows, then a low one: the count starts again
  window(true);
  window(true);
  CHECK(cov.radius() == r0);
  window(true);  // the third high window in a row
  CHECK(cov.radius() == 2 * r0);
  window(true);  // still high: grows again
  CHECK(cov.radius() == 4 * r0);
  CHECK(cov.calibration().adjustments == 2);
}

namespace {
// A CalibratedCoverage over 1-d vectors, calibrated on seeds {0, 100} and mutants 1..10 (radius
// just above 9), adapting every 10 mutants with patience 2.
CalibratedCoverage calibrated_1d() {
  CalibrationOptions o;
  o.target_rate = 0.1;
  o.window = 10;
  o.max_rate = 0.1;
  o.patience = 2;
  CalibratedCoverage cov(o);
  cov.reset(1);
  Mask is_new;
  RowMatrix seeds(2, 1);
  seeds << 0.0f, 100.0f;
  cov.observe(seeds, is_new);
  cov.seeds_done();
  RowMatrix first(10, 1);
  for (Index i = 0; i < 10; ++i) first(i, 0) = static_cast<float>(i + 1);
  cov.observe(first, is_new);
  return cov;
}
// `n` vectors far from each other and from everything before them (all new at any radius here).
RowMatrix far_apart(Index n, float& next) {
  RowMatrix v(n, 1);
  for (Index i = 0; i < n; ++i) v(i, 0) = (next += 1000.0f);
  return v;
}
}  // namespace

TEST_CASE("CalibratedCoverage: restore_state() takes up the radius and the adaptation, and the replay is no window",
          "[coverage]") {
  CalibratedCoverage original = calibrated_1d();
  const float r0 = original.radius();
  REQUIRE(r0 == std::nextafter(9.0f, 100.0f));
  Mask is_new;
  float next = 1000;
  original.observe(far_apart(10, next), is_new);  // one high window (patience 2: no growth yet)
  original.observe(far_apart(5, next), is_new);   // half a window
  REQUIRE(original.radius() == r0);
  const std::vector<std::uint8_t> state = original.save_state();
  REQUIRE(state.size() == CalibratedCoverage::kStateBytes);
  CHECK(std::string(state.begin(), state.begin() + 8) == "NNFZCALB");

  // A fresh policy (same options) takes the state up; the 40 vectors it observes next, until
  // seeds_done(), rebuild its coverage (all new, far apart) without counting in a window.
  CalibratedCoverage restored = calibrated_1d();
  restored.reset(1);
  restored.restore_state(state);
  CHECK(restored.calibrated());
  CHECK(restored.radius() == r0);
  float replay_next = 1e7f;
  restored.observe(far_apart(40, replay_next), is_new);
  CHECK(is_new.all());
  restored.seeds_done();
  CHECK(restored.radius() == r0);
  CHECK(restored.calibration().adjustments == 0);
  CHECK(restored.save_state() == state);  // the window counters as saved
  // The next 5 mutants complete the saved half window: the second high window in a row, so the
  // radius grows in both, at the same execution.
  float a = 1e8f, b = 1e8f;
  original.observe(far_apart(5, a), is_new);
  restored.observe(far_apart(5, b), is_new);
  CHECK(original.radius() == 2 * r0);
  CHECK(restored.radius() == original.radius());
  CHECK(restored.calibration().adjustments == 1);
  CHECK(restored.save_state() == original.save_state());

  // A state saved before calibration: restored, the policy is as after reset() (the next
  // vectors are the references the first mutants calibrate against).
  CalibratedCoverage fresh;
  fresh.reset(1);
  const std::vector<std::uint8_t> uncalibrated = fresh.save_state();
  CalibratedCoverage again(0.1);
  again.reset(1);
  again.restore_state(uncalibrated);
  CHECK(!again.calibrated());
  RowMatrix seeds(2, 1);
  seeds << 0.0f, 100.0f;
  again.observe(seeds, is_new);
  CHECK(is_new.all());
  again.seeds_done();
  RowMatrix first(10, 1);
  for (Index i = 0; i < 10; ++i) first(i, 0) = static_cast<float>(i + 1);
  again.observe(first, is_new);
  CHECK(again.radius() == r0);
}

TEST_CASE("CalibratedCoverage: restore_state() refuses a malformed state, naming the value", "[coverage]") {
  using Catch::Contains;
  const std::vector<std::uint8_t> good = calibrated_1d().save_state();
  auto refused = [&](std::vector<std::uint8_t> state, Index dim = 1) {
    CalibratedCoverage cov;
    cov.reset(dim);
    cov.restore_state(state);
  };
  auto with = [&](std::size_t at, auto value) {
    std::vector<std::uint8_t> s = good;
    std::memcpy(s.data() + at, &value, sizeof value);
    return s;
  };
  const char* fn = "CalibratedCoverage::restore_state()";
  CHECK_THROWS_WITH(refused({}), Contains(fn) && Contains("0 bytes"));
  CHECK_THROWS_WITH(refused(std::vector<std::uint8_t>(good.begin(), good.end() - 1)), Contains("87 bytes"));
  CHECK_THROWS_WITH(refused(with(0, std::uint8_t{'X'})), Contains(fn) && Contains("'XNFZCALB'"));
  CHECK_THROWS_WITH(refused(with(8, std::uint32_t{2})), Contains(fn) && Contains("version 2"));
  CHECK_THROWS_WITH(refused(good, 3), Contains(fn) && Contains("vectors of 1 elements, reset() said 3"));
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(refused(with(20, nan)), Contains(fn) && Contains("radius nan"));
  CHECK_THROWS_WITH(refused(with(20, inf)), Contains(fn) && Contains("radius inf"));
  CHECK_THROWS_WITH(refused(with(20, -1.0f)), Contains(fn) && Contains("radius -1"));
  CHECK_THROWS_WITH(refused(with(24, 100.0f)), Contains(fn) && Contains("initial_radius 100"));
  CHECK_THROWS_WITH(refused(with(28, 1.0)), Contains(fn) && Contains("target_rate 1"));
  CHECK_THROWS_WITH(refused(with(44, nan)), Contains(fn) && Contains("median_distance nan"));
  CHECK_THROWS_WITH(refused(with(56, 2.0)), Contains(fn) && Contains("window_rate 2"));
  CHECK_THROWS_WITH(refused(with(36, std::int64_t{-1})), Contains(fn) && Contains("samples -1"));
  CHECK_THROWS_WITH(refused(with(72, std::int64_t{5})), Contains(fn) && Contains("window 5 new of 0"));
  // Only right after reset(): the vectors observed before would be lost.
  CalibratedCoverage busy;
  busy.reset(1);
  Mask m;
  busy.observe(RowMatrix::Zero(1, 1), m);
  CHECK_THROWS_WITH(busy.restore_state(good), Contains(fn) && Contains("1 vectors were observed since reset()"));
  // The good state itself is taken up.
  CHECK_NOTHROW(refused(good));
}

TEST_CASE("Columns forwards save_state() / restore_state() to a policy that keeps a state", "[coverage]") {
  static_assert(detail::has_coverage_state<Columns<CalibratedCoverage>>::value, "Columns forwards the state");
  static_assert(!detail::has_coverage_state<Columns<KdTreeCoverage>>::value, "a stateless policy stays stateless");
  static_assert(!detail::has_coverage_state<AnyCoverage<CalibratedCoverage>>::value, "combinations keep none");
  Columns<CalibratedCoverage> cols(1, 1, calibrated_1d());
  cols.reset(3);
  const CalibratedCoverage inner = calibrated_1d();
  cols.restore_state(inner.save_state());
  CHECK(cols.radius() == inner.radius());
  CHECK(cols.save_state() == inner.save_state());
  // The inner policy checks the state's width: Columns hands it the width it sees (1 column).
  Columns<CalibratedCoverage> wide(0, 2, calibrated_1d());
  wide.reset(3);
  CHECK_THROWS_WITH(wide.restore_state(inner.save_state()),
                    Catch::Matchers::Contains("CalibratedCoverage::restore_state()") &&
                        Catch::Matchers::Contains("coverage vectors of 1 elements, reset() said 2"));
}
