// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/objectives.hpp>

#include <limits>

using namespace nnfuzz;

namespace {
struct Out {
  RowMatrix coverage, hidden, loss;
  template <class F>
  void for_each_tensor(F&& f) const {
    f("hidden", hidden);
    f("loss", loss);
  }
};
struct PairOut {
  RowMatrix coverage, reference, candidate;
};
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("NonFiniteObjective: NaN or Inf anywhere, named by the first tensor", "[objectives]") {
  Out o;
  o.hidden = RowMatrix::Zero(4, 3);
  o.loss = RowMatrix::Zero(4, 1);
  o.hidden(1, 2) = kNaN;
  o.loss(1, 0) = kNaN;
  o.loss(3, 0) = -kInf;
  NonFiniteObjective obj;
  Mask hits;
  const RowMatrix batch(4, 5);
  obj.check(batch, o, hits);
  CHECK_FALSE(hits(0));
  CHECK(hits(1));
  CHECK_FALSE(hits(2));
  CHECK(hits(3));
  CHECK(obj.describe(o, 1) == "non-finite in 'hidden'");
  CHECK(obj.describe(o, 3) == "non-finite in 'loss'");
}

TEST_CASE("DisagreementObjective: argmax differs, ties within the margin do not count", "[objectives]") {
  PairOut o;
  o.reference = RowMatrix(4, 3);
  o.candidate = RowMatrix(4, 3);
  o.reference << 1, 2, 3, 1, 2, 3, 1, 2, 3, 5, 5, 0;
  o.candidate << 1, 2, 3, 1, 4, 3, 1, 3.0001f, 3, 5, 5, 0;
  Mask hits;
  const RowMatrix batch(4, 1);
  DisagreementObjective strict;
  strict.check(batch, o, hits);
  CHECK_FALSE(hits(0));  // agree
  CHECK(hits(1));        // 2 vs 1, clear
  CHECK(hits(2));        // 2 vs 1 by 1e-4
  CHECK_FALSE(hits(3));  // exact tie in both: argmax agrees
  CHECK(strict.describe(o, 1) == "reference says 2, candidate says 1");
  DisagreementObjective tolerant(0.01f);
  tolerant.check(batch, o, hits);
  CHECK(hits(1));
  CHECK_FALSE(hits(2));  // a tie within rounding
  REQUIRE_THROWS_WITH(DisagreementObjective(-1), Catch::Contains("min_margin") && Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(DisagreementObjective(0, -2), Catch::Contains("half_ulps") && Catch::Contains("-2"));
  // One float16 ulp at 3 is 2^-9: a gap of 2^-9 is a tie under half_ulps = 1, 2^-8 is not.
  PairOut u;
  u.reference = RowMatrix(2, 2);
  u.candidate = RowMatrix(2, 2);
  u.reference << 1, 0, 1, 0;
  u.candidate << 3, 3 + 0x1p-9f, 3, 3 + 0x1p-8f;
  DisagreementObjective ulp(0, 1);
  CHECK(strict.disagrees(u, 0));
  CHECK_FALSE(ulp.disagrees(u, 0));
  CHECK(ulp.disagrees(u, 1));
  CHECK(half_ulp(3.0f) == 0x1p-9f);
  CHECK(half_ulp(0.0f) == 0x1p-24f);
}

TEST_CASE("AnyOf / AllOf combine objectives, callables included", "[objectives]") {
  Out o;
  o.hidden = RowMatrix::Zero(3, 2);
  o.loss = RowMatrix::Zero(3, 1);
  o.hidden(0, 0) = kInf;
  o.loss(2, 0) = 7;
  auto big_loss = [](const Out& out, Index r) { return out.loss(r, 0) > 5; };
  auto any = any_of(NonFiniteObjective(), big_loss);
  auto all = all_of(NonFiniteObjective(), big_loss);
  Mask hits;
  const RowMatrix batch(3, 1);
  any.check(batch, o, hits);
  CHECK(hits(0));
  CHECK_FALSE(hits(1));
  CHECK(hits(2));
  CHECK(any.describe(o, 0) == "non-finite in 'hidden'");
  CHECK(any.describe(o, 2) == "objective");  // a bare callable has no describe()
  all.check(batch, o, hits);
  CHECK(hits.count() == 0);
  o.loss(0, 0) = 9;
  all.check(batch, o, hits);
  CHECK(hits(0));
  CHECK(hits.count() == 1);
}

TEST_CASE("MarginFitness and WithFitness: distance to a disagreement", "[objectives][fitness]") {
  PairOut out;
  out.reference.resize(3, 3);
  out.candidate.resize(3, 3);
  out.reference << 5, 1, 0,  //
      5, 1, 0,               //
      5, 1, 0;
  out.candidate << 4, 1, 0,  // margin 3 for class 0: fitness -3
      2, 2.5f, 0,            // class 1 ahead by 0.5: fitness +0.5 (a disagreement)
      1, 1, 1;               // tie: fitness 0
  const MarginFitness f;
  CHECK(f(out, 0) == -3.0f);
  CHECK(f(out, 1) == 0.5f);
  CHECK(f(out, 2) == 0.0f);
  auto o = with_fitness(DisagreementObjective(), MarginFitness());
  Mask hits(3);
  const RowMatrix batch(3, 1);
  o.check(batch, out, hits);
  CHECK(!hits(0));
  CHECK(hits(1));
  CHECK(!hits(2));  // a tie is not a disagreement
  CHECK(o.fitness(out, 1) == 0.5f);
  CHECK(o.describe(out, 1) == "reference says 0, candidate says 1");
  // Any callable works as a fitness.
  auto g = with_fitness(DisagreementObjective(), [](const PairOut& p, Index r) { return p.candidate(r, 2); });
  CHECK(g.fitness(out, 2) == 1.0f);
}

TEST_CASE("NonFiniteObjective::fitness: log distance to overflow or underflow, from the tensors alone",
          "[objectives][fitness]") {
  Out o;
  o.hidden = RowMatrix::Zero(5, 3);
  o.loss = RowMatrix::Zero(5, 1);
  // Row 0: 2 and 1e-20 in one tensor (and a zero, which does not count): 1e-20 is 2^24 below
  // the row's largest, so underflow counts: ln 2^-149 - ln 1e-20 = -103.2789 + 46.0517.
  o.hidden(0, 0) = 2.0f;
  o.hidden(0, 1) = 1e-20f;
  o.loss(0, 0) = 1e-30f;  // alone in its tensor: no larger value to compare with, ordinary
  // Row 1: -1e30 (beyond 2^24) and 0.5: overflow is nearer, ln 1e30 - ln FLT_MAX.
  o.hidden(1, 0) = -1e30f;
  o.hidden(1, 1) = 0.5f;
  // Row 2: a NaN: 0 (fired). Row 3: all zeros, row 4 ordinary values: NaN ("unknown").
  o.hidden(2, 2) = kNaN;
  o.hidden(4, 0) = 0.3f;
  o.hidden(4, 1) = -1e-3f;
  o.loss(4, 0) = 7.0f;
  const NonFiniteObjective obj;
  CHECK(obj.fitness(o, 0) == Approx(-103.2789f + 46.0517f).margin(1e-3));
  CHECK(obj.fitness(o, 1) == Approx(69.0776f - 88.7228f).margin(1e-3));
  CHECK(obj.fitness(o, 2) == 0.0f);
  CHECK(std::isnan(obj.fitness(o, 3)));
  CHECK(std::isnan(obj.fitness(o, 4)));
  // A denormal is nearer still, and rising towards 0 as it shrinks.
  o.hidden(0, 1) = 1e-44f;
  CHECK(obj.fitness(o, 0) > -2.0f);
  CHECK(obj.fitness(o, 0) < 0.0f);
  static_assert(detail::has_fitness<NonFiniteObjective, Out>::value, "NonFinite has a fitness");
  static_assert(!detail::has_fitness<NonFiniteObjective, PairOut>::value, "only with for_each_tensor");
}

TEST_CASE("Stock fitness: disagreement margin, output distance, any_of best, all_of worst, negate none",
          "[objectives][fitness]") {
  PairOut o;
  o.reference = RowMatrix(2, 3);
  o.candidate = RowMatrix(2, 3);
  o.reference << 5, 1, 0,  //
      0, 0, 3;
  o.candidate << 4, 3, 0,  // agree on class 0, margin 3 - 4 = -1
      0, 2, 1;             // candidate prefers 1 over the reference's 2: 2 - 1 = +1
  const DisagreementObjective dis;
  CHECK(dis.fitness(o, 0) == Approx(-1.0f));
  CHECK(dis.fitness(o, 1) == Approx(1.0f));
  CHECK(MarginFitness()(o, 0) == dis.fitness(o, 0));
  const OutputDistanceObjective dist(0.25f);
  CHECK(dist.fitness(o, 0) == Approx(static_cast<float>(dist.distance(o, 0)) - 0.25f));
  o.candidate(0, 1) = kNaN;
  CHECK(std::isnan(dist.fitness(o, 0)));  // unknown
  o.candidate(0, 1) = 3;
  const auto any = any_of(dis, dist);
  const auto all = all_of(dis, dist);
  for (Index r = 0; r < 2; ++r) {
    CHECK(any.fitness(o, r) == std::max(dis.fitness(o, r), dist.fitness(o, r)));
    CHECK(all.fitness(o, r) == std::min(dis.fitness(o, r), dist.fitness(o, r)));
  }
  // A part without a fitness is left out; with none, no fitness at all; negate() has none.
  const auto callable = [](const PairOut&, Index) { return false; };
  CHECK(any_of(callable, dis).fitness(o, 0) == dis.fitness(o, 0));
  static_assert(!detail::has_fitness<AnyOf<decltype(callable)>, PairOut>::value, "no part has one");
  static_assert(!detail::has_fitness<Not<DisagreementObjective>, PairOut>::value, "negate has none");
  static_assert(detail::has_fitness<DisagreementObjective, PairOut>::value, "margin");
}
