// SPDX-License-Identifier: MIT
// Tolerances that know the arithmetic (tolerance.hpp) and the objective on them
// (objectives/logit_tolerance.hpp), against hand-computed ulps and quantisation steps.
#include <catch2/catch.hpp>
#include <nnfuzz/objectives/logit_tolerance.hpp>
#include <nnfuzz/tolerance.hpp>

#include <cmath>
#include <limits>

using namespace nnfuzz;

TEST_CASE("float16_ulp / bfloat16_ulp: the spacing of the reduced formats", "[tolerance]") {
  CHECK(float16_ulp(1.0) == 0.0009765625);  // 2^-10
  CHECK(float16_ulp(1.999) == 0.0009765625);
  CHECK(float16_ulp(-1000.0) == 0.5);                // 2^9 <= 1000 < 2^10: 2^-1
  CHECK(float16_ulp(65504.0) == 32.0);               // the largest float16: 2^15 binade
  CHECK(float16_ulp(1e-6) == std::ldexp(1.0, -24));  // subnormal spacing
  CHECK(float16_ulp(0.0) == std::ldexp(1.0, -24));
  CHECK(bfloat16_ulp(1.0) == 0.0078125);  // 2^-7
  CHECK(bfloat16_ulp(3.0) == 0.015625);   // 2^(1-7)
  CHECK(bfloat16_ulp(1e-39) == std::ldexp(1.0, -133));
}

TEST_CASE("Tolerance: a one-ulp tie is within, two ulps are not", "[tolerance]") {
  const Tolerance t = Tolerance::float16(1);
  CHECK(!t.exceeded(1.0, 1.0009765625));  // one float16 ulp above 1
  CHECK(t.ratio(1.0, 1.0009765625) == 1.0);
  CHECK(t.exceeded(1.0, 1.001953125));  // two
  CHECK(t.units(1.0, 1.001953125) == 2.0);
  // Neighbours across a power of two are one ulp apart (the spacing at the smaller magnitude).
  CHECK(t.units(2.0, 1.9990234375) == 1.0);
  CHECK(!t.exceeded(2.0, 1.9990234375));
  CHECK(t.units(2.0, 2.001953125) == 1.0);
  // At 1000 a float16 ulp is 0.5: a difference of 0.75 is within 2 ulps, 1.25 is not.
  const Tolerance two = Tolerance::float16(2);
  CHECK(!two.exceeded(1000.0, 1000.75));
  CHECK(two.exceeded(1000.0, 1001.25));
  CHECK(two.allowed(1000.0, 1000.75) == 1.0);
  // bfloat16: at 3 the spacing is 2^-6.
  const Tolerance bf = Tolerance::bfloat16(1);
  CHECK(!bf.exceeded(3.0, 3.015625));
  CHECK(bf.exceeded(3.0, 3.03125));
  CHECK(bf.units(3.0, 3.03125) == 2.0);
  CHECK(t.describe() == "float16, 1 ulp");
  CHECK(two.describe() == "float16, 2 ulps");
}

TEST_CASE("Tolerance: int8 counts quantisation steps of the tensor's scale", "[tolerance]") {
  const Tolerance t = Tolerance::int8(0.25, 1);
  CHECK(!t.exceeded(1.0, 1.25));  // one step
  CHECK(t.exceeded(1.0, 1.5));    // two steps: a regression
  CHECK(t.units(1.0, 1.5) == 2.0);
  CHECK(t.units(-3.0, -3.75) == 3.0);
  CHECK(t.ratio(1.0, 0.5) == 2.0);
  const Tolerance s = Tolerance::int8(0.05, 1);
  CHECK(!s.exceeded(1.0, 1.04));
  CHECK(s.exceeded(1.0, 1.1));
  CHECK(s.units(1.0, 1.1) == Approx(2.0));
  CHECK(Tolerance::int8(0.05, 2).describe() == "int8, 2 steps of 0.05");
}

TEST_CASE("Tolerance: float32 is atol + rtol x |reference|", "[tolerance]") {
  const Tolerance t = Tolerance::float32(0.01, 0.1);
  CHECK(t.allowed(2.0, 0.0) == Approx(0.21));
  CHECK(t.allowed(-2.0, 0.0) == Approx(0.21));
  CHECK(!t.exceeded(2.0, 2.2));
  CHECK(t.exceeded(2.0, 2.25));
  CHECK(t.ratio(2.0, 2.25) == Approx(0.25 / 0.21));
  CHECK(t.units(2.0, 2.25) == 0.25);  // absolute
  CHECK(Tolerance::float32(0).exceeded(1.0, 1.0000001));
  CHECK(!Tolerance::float32(0).exceeded(1.0, 1.0));
  CHECK(Tolerance::float32(0).ratio(1.0, 1.5) == std::numeric_limits<double>::infinity());
}

TEST_CASE("Tolerance: non-finite values and bad options", "[tolerance]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tolerance t = Tolerance::float16(100);
  CHECK(!t.exceeded(nan, nan));
  CHECK(!t.exceeded(inf, inf));
  CHECK(t.exceeded(inf, -inf));
  CHECK(t.exceeded(1.0, nan));
  CHECK(t.exceeded(nan, 1.0));
  CHECK(t.units(1.0, inf) == inf);
  CHECK_THROWS_WITH(Tolerance::int8(0), Catch::Contains("Tolerance(): option 'scale'") && Catch::Contains("got 0"));
  CHECK_THROWS_WITH(Tolerance::float16(-1), Catch::Contains("option 'ulps'") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(Tolerance::float32(nan), Catch::Contains("option 'atol'"));
  CHECK_THROWS_WITH(Tolerance::float32(0, -0.5), Catch::Contains("option 'rtol'") && Catch::Contains("-0.5"));
  Tolerance bad = Tolerance::int8(0.1);
  bad.steps = inf;
  CHECK_THROWS_WITH(TensorTolerances().set("x", bad), Catch::Contains("option 'steps'"));
}

TEST_CASE("TensorTolerances: one per name, a fallback for the rest", "[tolerance]") {
  TensorTolerances tol(Tolerance::float16(2));
  tol.set("logits", Tolerance::int8(0.05)).set("dense1", Tolerance::float32(0.1));
  CHECK(tol.of("relu1").format == NumberFormat::float16);
  CHECK(tol.of("relu1").ulps == 2);
  CHECK(tol.of("logits").format == NumberFormat::int8);
  CHECK(tol.of("dense1").atol == 0.1);
  tol.set("logits", Tolerance::int8(0.1, 3));
  CHECK(tol.tensors.size() == 2);
  CHECK(tol.of("logits").steps == 3);
  const TensorTolerances defaults;
  CHECK(defaults.of("x").format == NumberFormat::float32);
  CHECK(defaults.of("x").atol == 1e-5);
}

TEST_CASE("tensor_error: element-wise errors in units, the worst element, float against half", "[tolerance]") {
  Eigen::RowVector3d ref(1.0, 2.0, 4.0);
  Eigen::RowVector3d cand(1.0009765625, 2.00390625, 4.0);  // 1 ulp, 2 ulps (2^-9 each at 2), 0
  const TensorError e = tensor_error(ref, cand, Tolerance::float16(1));
  CHECK(e.size == 3);
  CHECK(e.exceeded == 1);
  CHECK(e.exceeds());
  CHECK(e.worst == 1);
  CHECK(e.max_units == 2.0);
  CHECK(e.max_ratio == 2.0);
  CHECK(e.max_abs == 0.00390625);
  CHECK(e.mean_abs == Approx((0.0009765625 + 0.00390625) / 3));
  // A float16 tensor against its float reference: 1/3 rounds to 0.333251953125 in float16,
  // a third of an ulp (2^-12 at 1/3) below float(1/3).
  Eigen::Matrix<float, 1, 2> f(1.0f / 3.0f, 1.0f);
  Eigen::Matrix<Eigen::half, 1, 2> h = f.cast<Eigen::half>();
  const TensorError eh = tensor_error(f, h, Tolerance::float16(0.5));
  CHECK(!eh.exceeds());
  CHECK(eh.max_units == Approx((static_cast<double>(1.0f / 3.0f) - 0.333251953125) / std::ldexp(1.0, -12)));
  CHECK_THROWS_WITH(tensor_error(ref, Eigen::RowVector2d(1, 2), Tolerance()), Catch::Contains("tensor_error()"));
}

namespace {
struct LogitsOut {
  RowMatrix reference, candidate;
};
}  // namespace

TEST_CASE("ToleranceObjective: fires on a logit two int8 steps off, not on one", "[tolerance]") {
  LogitsOut out;
  out.reference.resize(3, 2);
  out.candidate.resize(3, 2);
  out.reference << 1, 2, 1, 2, 1, 2;
  out.candidate << 1.25f, 2, 1.5f, 2, 1, 1.25f;
  const ToleranceObjective obj(Tolerance::int8(0.25, 1));
  Mask hits;
  obj.check(out.reference, out, hits);
  CHECK(!hits(0));
  CHECK(hits(1));
  CHECK(hits(2));
  CHECK_THAT(obj.describe(out, 1), Catch::StartsWith("logit 0 off by 2 steps (int8, 1 step of 0.25): 1 -> 1.5"));
  CHECK_THAT(obj.describe(out, 2), Catch::StartsWith("logit 1 off by 3 steps"));
  CHECK_THROWS_WITH(ToleranceObjective(Tolerance::int8(0.25, -1)), Catch::Contains("'steps'"));
}

TEST_CASE("disagreement_objective(Tolerance): the tie margin in ulps or steps", "[tolerance]") {
  const DisagreementObjective h = disagreement_objective(Tolerance::float16(2));
  CHECK(h.min_margin() == 0);
  CHECK(h.half_ulps() == 2);
  const DisagreementObjective q = disagreement_objective(Tolerance::int8(0.25, 2));
  CHECK(q.min_margin() == 0.5f);
  CHECK(q.half_ulps() == 0);
  CHECK(disagreement_objective(Tolerance::float32(0.1)).min_margin() == 0.1f);
  // A flip by 0.25 (one step) is a tie under two steps; by 0.75, a disagreement.
  LogitsOut out;
  out.reference.resize(2, 2);
  out.candidate.resize(2, 2);
  out.reference << 1, 0, 1, 0;
  out.candidate << 1, 1.25f, 1, 1.75f;
  CHECK(!q.disagrees(out, 0));
  CHECK(q.disagrees(out, 1));
  CHECK_THROWS_WITH(disagreement_objective(Tolerance::bfloat16(1)),
                    Catch::Contains("disagreement_objective()") && Catch::Contains("bfloat16"));
  CHECK_THROWS_WITH(disagreement_objective(Tolerance::float32(0.1, 0.01)), Catch::Contains("'rtol' 0.01"));
}
