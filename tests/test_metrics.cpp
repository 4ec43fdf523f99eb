// SPDX-License-Identifier: MIT
// The regression metrics and their gate (regression/metrics.hpp), against hand-computed values.
#include <catch2/catch.hpp>
#include <nnfuzz/regression/metrics.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <cmath>
#include <limits>

using namespace nnfuzz;

TEST_CASE("percentile: linear between the closest ranks, as numpy", "[metrics]") {
  CHECK(percentile({4, 1, 3, 2}, 50) == 2.5);
  CHECK(percentile({1, 2, 3, 4}, 90) == Approx(3.7));
  CHECK(percentile({1, 2, 3, 4}, 0) == 1);
  CHECK(percentile({1, 2, 3, 4}, 100) == 4);
  CHECK(percentile({7}, 99) == 7);
  CHECK_THROWS_WITH(percentile({}, 50), Catch::Contains("percentile(): no values"));
  CHECK_THROWS_WITH(percentile({1}, 101), Catch::Contains("101"));
}

TEST_CASE("sqnr_db: 10 log10(signal / noise)", "[metrics]") {
  CHECK(sqnr_db(Eigen::RowVector2d(3, 4), Eigen::RowVector2d(3, 3)) == Approx(10 * std::log10(25.0)));  // 13.98 dB
  CHECK(sqnr_db(Eigen::RowVector2d(3, 4), Eigen::RowVector2d(3, 4)) == std::numeric_limits<double>::infinity());
  CHECK(sqnr_db(Eigen::RowVector2d(0, 0), Eigen::RowVector2d(0, 1)) == -std::numeric_limits<double>::infinity());
  // 1000 against 1001: 60 dB.
  CHECK(sqnr_db(Eigen::Matrix<double, 1, 1>(1000), Eigen::Matrix<double, 1, 1>(1001)) == Approx(60));
  CHECK(std::isnan(sqnr_db(Eigen::RowVector2d(1, std::numeric_limits<double>::infinity()), Eigen::RowVector2d(1, 1))));
}

namespace {
// Three rows, two classes; row 1's two logits swap (a disagreement), rows 0 and 2 are equal.
void three_rows(RowMatrix& a, RowMatrix& b) {
  a.resize(3, 2);
  b.resize(3, 2);
  a << 0, 0, 1, 0, 0, 2;
  b << 0, 0, 0, 1, 0, 2;
}
const double kl1 = (std::exp(1.0) - 1) / (std::exp(1.0) + 1);  // KL of softmax(1,0) against softmax(0,1): 0.4621
}  // namespace

TEST_CASE("logit_metrics: agreement, |dlogit|, KL percentiles and SQNR by hand", "[metrics]") {
  RowMatrix a, b;
  three_rows(a, b);
  const RegressionMetrics m = logit_metrics(a, b);
  CHECK(m.rows == 3);
  CHECK(m.agreements == 2);
  CHECK(m.top1_agreement == Approx(2.0 / 3));
  CHECK(m.max_abs_logit == 1);
  CHECK(m.mean_abs_logit == Approx(2.0 / 6));
  // p = (e, 1)/(e + 1), q = (1, e)/(e + 1): KL = p0 - p1 = (e - 1)/(e + 1).
  CHECK(kl1 == Approx(0.4621171573));
  REQUIRE(m.kl.size() == 3);
  CHECK(m.kl[0] == Approx(0).margin(1e-15));
  CHECK(m.kl[1] == Approx(kl1));
  CHECK(m.kl_mean == Approx(kl1 / 3));
  CHECK(m.kl_p50 == Approx(0).margin(1e-15));
  CHECK(m.kl_p90 == Approx(0.8 * kl1));  // sorted {0, 0, kl1}: rank 1.8
  CHECK(m.kl_p99 == Approx(0.98 * kl1));
  CHECK(m.kl_max == Approx(kl1));
  CHECK(m.sqnr_db == Approx(10 * std::log10(5.0 / 2.0)));  // signal 1 + 4, noise 1 + 1
  CHECK(m.non_finite_rows == 0);
  CHECK_THROWS_WITH(logit_metrics(a, b.leftCols(1)), Catch::Contains("logit_metrics()"));
  // A non-finite logit: left out of the KL figures, counted.
  b(2, 0) = std::numeric_limits<float>::infinity();
  const RegressionMetrics n = logit_metrics(a, b);
  CHECK(n.non_finite_rows == 1);
  CHECK(n.kl_max == Approx(kl1));
  CHECK(n.kl_p50 == Approx(kl1 / 2));
}

TEST_CASE("MetricGate: names every threshold broken, passes otherwise", "[metrics]") {
  RowMatrix a, b;
  three_rows(a, b);
  const RegressionMetrics m = logit_metrics(a, b);
  MetricGate gate;
  CHECK(!gate.active());
  CHECK(gate.violations(m).empty());
  gate.max_kl_p99 = 0.5;
  CHECK(gate.active());
  CHECK(gate.violations(m).empty());
  gate.min_top1_agreement = 0.9;
  gate.min_sqnr_db = 30;
  const std::string v = gate.violations(m);
  CHECK_THAT(v, Catch::StartsWith("top-1 agreement 0.666667 < 0.9 (1 of 3 rows disagree)"));
  CHECK_THAT(v, Catch::Contains("; logits SQNR 3.9794 dB < 30 dB"));
  CHECK_THAT(v, !Catch::Contains("KL"));
  gate.max_kl_p99 = 0.1;
  CHECK_THAT(gate.violations(m), Catch::Contains("KL p99 0.452875 > 0.1"));
  gate.min_top1_agreement = 2;
  CHECK_THROWS_WITH(gate.violations(m), Catch::Contains("MetricGate: option 'min_top1_agreement'"));
}

namespace {
// A linear model y = x W (2 inputs, 2 classes); version 2 scales class 1 by `gain`.
struct Linear {
  struct Output {
    RowMatrix logits;
  };
  float gain = 1;
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.logits = batch;
    out.logits.col(1) *= gain;
  }
};
}  // namespace

TEST_CASE("measure_pair / finding_inputs: the metrics of a VersionPair over rows, in batches", "[metrics]") {
  Linear v2;
  v2.gain = 2;
  VersionPair pair(Linear{}, v2);
  RowMatrix rows(5, 2);
  rows << 1, 0, 0, 1, 1, 0.75f, 0.5f, 0.5f, 3, 1;
  const RegressionMetrics m = measure_pair(pair, rows, 2);
  // Row 2: (1, .75) -> (1, 1.5) flips to class 1; row 3: (.5, .5) -> (.5, 1) flips too.
  CHECK(m.rows == 5);
  CHECK(m.agreements == 3);
  CHECK(m.max_abs_logit == 1);  // row 4: 1 -> 2
  CHECK(m.mean_abs_logit == Approx((0 + 1 + 0.75 + 0.5 + 1) / 10.0));
  Linear::Output o1, o2;
  Linear{}.evaluate(rows, o1);
  v2.evaluate(rows, o2);
  const RegressionMetrics whole = logit_metrics(o1.logits, o2.logits);
  CHECK(m.kl_p99 == Approx(whole.kl_p99));
  CHECK(m.sqnr_db == Approx(whole.sqnr_db));
  std::vector<Finding> findings(2);
  findings[0].input = rows.row(2);
  findings[1].input = rows.row(3);
  const RowMatrix fi = finding_inputs(findings);
  CHECK(fi.rows() == 2);
  CHECK(measure_pair(pair, fi).top1_agreement == 0);
  findings[1].input = RowVector::Zero(3);
  CHECK_THROWS_WITH(finding_inputs(findings), Catch::Contains("finding_inputs(): finding 1 has 3 values"));
  CHECK_THROWS_WITH(measure_pair(pair, RowMatrix::Zero(2, 3)), Catch::Contains("measure_pair()"));
}
