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
