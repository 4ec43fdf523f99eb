// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>

using namespace nnfuzz;

TEST_CASE("NanTarget: unsafe softmax and cross entropy turn non-finite on a wide logit spread", "[targets]") {
  // One linear layer: logits = x * W, with W chosen so that x = (a) gives logits (a*60, -a*60).
  Mlp<float> net({1, 2});
  net.layers()[0].weights << 60, -60;
  NanTarget t(net, CoverageSignal::sum_abs_logits);
  NanTarget::Output out;
  RowMatrix x(3, 1);
  x << 0.1, 0.9, 1.6;  // spreads 12, 108 (p underflows to 0), 192 (exp overflows)
  t.evaluate(x, out);
  NonFiniteObjective obj;
  Mask hits;
  obj.check(x, out, hits);
  CHECK_FALSE(hits(0));
  CHECK(hits(1));
  CHECK(hits(2));
  CHECK(obj.describe(out, 1) == "non-finite in 'cross_entropy'");  // 0 * log(0): the paper's NaN
  CHECK(obj.describe(out, 2) == "non-finite in 'softmax'");        // exp(96) = inf
  CHECK(out.coverage.cols() == 1);
  CHECK(out.coverage(0, 0) == Approx(12.0f));
  NanTarget raw(net, CoverageSignal::logits);
  raw.evaluate(x, out);
  CHECK(out.coverage.cols() == 2);
}

TEST_CASE("PairTarget: float vs half twins, with DisagreementObjective", "[targets]") {
  Mlp<float> net({3, 4, 3});
  net.init_truncated_normal(0, 3);
  auto pa = make_half_arithmetic_pair(net);
  auto ps = make_half_storage_pair(net);
  decltype(pa)::Output oa;
  decltype(ps)::Output os;
  RowMatrix x = RowMatrix::Random(20, 3);
  pa.evaluate(x, oa);
  ps.evaluate(x, os);
  CHECK(oa.reference == os.reference);
  CHECK(oa.coverage == oa.reference);
  CHECK((oa.candidate - oa.reference).cwiseAbs().maxCoeff() < 0.05f);
  CHECK((oa.candidate - oa.reference).cwiseAbs().maxCoeff() > 0);
  CHECK(pa.input_dim() == 3);
  REQUIRE_THROWS_WITH(HalfStoragePair(net, Mlp<float>({3, 5, 3})), Catch::Contains("PairTarget()"));
  // An exactly tied pair of logits in the twin never counts as a disagreement.
  DisagreementObjective d;
  os.reference = RowMatrix(1, 3);
  os.candidate = RowMatrix(1, 3);
  os.reference << 1, 2, 0;
  os.candidate << 2, 2, 0;
  CHECK_FALSE(d.disagrees(os, 0));
}
