// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include "support/alloc_tracker.hpp"

#include <cmath>

using namespace nnfuzz;

namespace {

// Two versions of a user's model as they may come: forward functions over raw floats, 2 inputs
// in [0, 1], 3 logits. Version 2 is version 1 with a planted regression: in the corner
// x0 > 0.9, x1 < 0.1 it boosts class 2 (a disagreement); where x0 + x1 > 1.6 it sharpens class 0
// without changing the prediction (a confidence regression only).
void forward_v1(const float* x, float* logits) {
  logits[0] = 4 * x[0];
  logits[1] = 4 * x[1];
  logits[2] = 1;
}
void forward_v2(const float* x, float* logits) {
  forward_v1(x, logits);
  if (x[0] > 0.9f && x[1] < 0.1f) logits[2] += 10;
  if (x[0] + x[1] > 1.6f) logits[0] += 6;
}

// The user's model: a forward function wrapped as a dense nnfuzz model, its logits in `logits`.
struct UserModel {
  struct Output {
    RowMatrix logits;
  };
  void (*forward)(const float*, float*) = forward_v1;
  Index dim = 2, classes = 3;
  Index input_dim() const { return dim; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.logits.resize(batch.rows(), classes);
    for (Index r = 0; r < batch.rows(); ++r) forward(batch.data() + r * batch.outerStride(), out.logits.row(r).data());
  }
};

// Another user's model: non-const evaluate, logits under another name, a coverage of its own.
struct ScoresModel {
  struct Output {
    RowMatrix scores;
    RowMatrix coverage;
  };
  void (*forward)(const float*, float*) = forward_v2;
  Index calls = 0;
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    ++calls;
    out.scores.resize(batch.rows(), 3);
    for (Index r = 0; r < batch.rows(); ++r) forward(batch.data() + r * batch.outerStride(), out.scores.row(r).data());
    out.coverage = out.scores.rowwise().sum();
  }
};

struct NoLogits {
  struct Output {
    RowMatrix probabilities;
  };
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>&, Output&) const {}
};

// Reads either model's logits.
struct AnyLogits {
  const RowMatrix& operator()(const UserModel::Output& o) const { return o.logits; }
  const RowMatrix& operator()(const ScoresModel::Output& o) const { return o.scores; }
};

}  // namespace

// The compile-time checks behind VersionPair's static_asserts.
static_assert(detail::extracts_logits<LogitsMember, UserModel::Output>::value, "logits member");
static_assert(!detail::extracts_logits<LogitsMember, NoLogits::Output>::value, "no logits member");
static_assert(!detail::extracts_logits<LogitsMember, ScoresModel::Output>::value, "scores is not logits");
static_assert(detail::extracts_logits<AnyLogits, ScoresModel::Output>::value, "extractor");

TEST_CASE("output_distance: max |dp| and KL(old||new) match a hand computation", "[versions]") {
  // softmax(0, 0) = (1/2, 1/2); softmax(ln 3, 0) = (3/4, 1/4).
  RowVector a(2), b(2);
  a << 0, 0;
  b << static_cast<float>(std::log(3.0)), 0;
  CHECK(output_distance(a, b) == Approx(0.25).epsilon(1e-6));
  CHECK(output_distance(a, b, OutputDistance::max_probability) == Approx(0.25).epsilon(1e-6));
  // KL = 1/2 ln((1/2)/(3/4)) + 1/2 ln((1/2)/(1/4)) = 1/2 ln(4/3).
  CHECK(output_distance(a, b, OutputDistance::kl_divergence) == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-6));
  CHECK(output_distance(a, a, OutputDistance::kl_divergence) == 0.0);
  // Shifting all logits of a row changes nothing; huge logits do not overflow.
  RowVector big = b.array() + 1000.0f;
  CHECK(output_distance(a, big) == Approx(0.25).epsilon(1e-4));
  RowVector bad = b;
  bad(1) = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(output_distance(a, bad)));
  REQUIRE_THROWS_WITH(output_distance(a, RowVector(3)), Catch::Contains("output_distance(): the rows have 2 and 3"));
}

TEST_CASE("OutputDistanceObjective: threshold, describe(), options, and AnyOf with DisagreementObjective",
          "[versions][objectives]") {
  struct Out {
    RowMatrix reference, candidate;
  } out;
  out.reference.resize(3, 2);
  out.candidate.resize(3, 2);
  const float l3 = static_cast<float>(std::log(3.0));
  out.reference << 0, 0,  // (1/2, 1/2) vs (3/4, 1/4): |dp| 0.25, same argmax (first on ties)
      0, 0,               // identical
      0, l3;              // (1/4, 3/4) vs (3/4, 1/4): |dp| 0.5, classes 1 vs 0
  out.candidate << l3, 0, 0, 0, l3, 0;
  const RowMatrix batch(3, 1);
  Mask hits;
  OutputDistanceObjective low(0.2f);
  low.check(batch, out, hits);
  CHECK(hits(0));
  CHECK_FALSE(hits(1));
  CHECK(hits(2));
  CHECK(low.describe(out, 2) == "max |dp| 0.5 > 0.2: reference says 1, candidate says 0");
  OutputDistanceObjective high(0.3f);
  high.check(batch, out, hits);
  CHECK_FALSE(hits(0));
  CHECK(hits(2));
  OutputDistanceObjective kl(0.1f, OutputDistance::kl_divergence);
  kl.check(batch, out, hits);
  CHECK(hits(0));  // 0.1438
  CHECK_FALSE(hits(1));
  CHECK(kl.describe(out, 0) == "KL(old||new) 0.1438 > 0.1: reference says 0, candidate says 0");
  CHECK(kl.metric() == OutputDistance::kl_divergence);
  CHECK(kl.threshold() == 0.1f);

  // With DisagreementObjective: the disagreement is named first; the drift alone by the distance.
  auto both = any_of(DisagreementObjective(), OutputDistanceObjective(0.2f));
  both.check(batch, out, hits);
  CHECK(hits(0));
  CHECK_FALSE(hits(1));
  CHECK(hits(2));
  CHECK(both.describe(out, 2) == "reference says 1, candidate says 0");
  CHECK(both.describe(out, 0) == "max |dp| 0.25 > 0.2: reference says 0, candidate says 0");

  REQUIRE_THROWS_WITH(
      OutputDistanceObjective(-0.1f),
      Catch::Contains("OutputDistanceObjective(): option 'threshold' must be >= 0") && Catch::Contains("-0.1"));
  REQUIRE_THROWS_WITH(OutputDistanceObjective(std::numeric_limits<float>::quiet_NaN()),
                      Catch::Contains("option 'threshold'"));
  REQUIRE_THROWS_WITH(
      OutputDistanceObjective(1.0f),
      Catch::Contains("option 'threshold' must be below 1 for max_probability") && Catch::Contains("got 1"));
  CHECK_NOTHROW(OutputDistanceObjective(5.0f, OutputDistance::kl_divergence));
  CHECK_NOTHROW(OutputDistanceObjective(0.0f));
}

TEST_CASE("VersionPair: two user models' logits, coverage, and a const evaluate", "[versions][targets]") {
  const VersionPair pair(UserModel{forward_v1}, UserModel{forward_v2});
  static_assert(std::is_same<std::decay_t<decltype(pair)>, VersionPair<UserModel, UserModel>>::value, "CTAD");
  RowMatrix x(3, 2);
  x << 0.5f, 0.4f,   // the same
      0.95f, 0.05f,  // planted disagreement: v1 says 0 (3.8), v2 says 2 (11)
      0.85f, 0.8f;   // planted drift: both say 0
  decltype(pair)::Output out;
  pair.evaluate(x, out);  // const: both models' evaluate() are const
  CHECK(pair.input_dim() == 2);
  REQUIRE(out.reference.rows() == 3);
  REQUIRE(out.reference.cols() == 3);
  CHECK(out.reference(0, 0) == 2.0f);
  CHECK(out.reference(0, 1) == Approx(1.6f));
  CHECK(out.candidate.row(0) == out.reference.row(0));
  CHECK(out.candidate(1, 2) == 11.0f);
  CHECK(out.candidate(2, 0) == Approx(3.4f + 6));
  CHECK(out.coverage == out.reference);  // the old model's: its Output has no coverage, so its logits
  CHECK(out.old_output.logits == out.reference);
  CHECK(out.new_output.logits == out.candidate);
  DisagreementObjective d;
  CHECK_FALSE(d.disagrees(out, 0));
  CHECK(d.disagrees(out, 1));
  CHECK_FALSE(d.disagrees(out, 2));
  OutputDistanceObjective drift(0.3f);
  CHECK(drift.distance(out, 0) == 0.0);
  CHECK(drift.distance(out, 2) > 0.3);
  // NonFiniteObjective sees both logits.
  int tensors = 0;
  out.for_each_tensor([&](const char*, const auto&) { ++tensors; });
  CHECK(tensors == 2);

  // Different model types, a non-const model, an extractor, the new model's coverage.
  VersionPair mixed(UserModel{forward_v1}, ScoresModel{}, AnyLogits(), VersionCoverage::new_model);
  static_assert(std::is_same<decltype(mixed), VersionPair<UserModel, ScoresModel, AnyLogits>>::value, "CTAD");
  decltype(mixed)::Output mo;
  mixed.evaluate(x, mo);
  CHECK(mixed.new_model().calls == 1);
  CHECK(mo.reference == out.reference);
  CHECK(mo.candidate == out.candidate);
  CHECK(mo.coverage.cols() == 1);  // ScoresModel's own coverage
  CHECK(mo.coverage(1, 0) == Approx(out.candidate.row(1).sum()));
  // A generic lambda serves both Output types too.
  auto lambda = [](const auto& o) -> const RowMatrix& {
    if constexpr (std::is_same<std::decay_t<decltype(o)>, UserModel::Output>::value)
      return o.logits;
    else
      return o.scores;
  };
  VersionPair with_lambda(ScoresModel{forward_v1}, UserModel{forward_v2}, lambda);
  decltype(with_lambda)::Output lo;
  with_lambda.evaluate(x, lo);
  CHECK(lo.reference == out.reference);
  CHECK(lo.coverage.cols() == 1);  // the old model's own coverage
  const VersionPair by_coverage(UserModel{forward_v1}, UserModel{forward_v2}, VersionCoverage::new_model);
  static_assert(std::is_same<std::decay_t<decltype(by_coverage)>, VersionPair<UserModel, UserModel>>::value, "CTAD");
  by_coverage.evaluate(x, out);
  CHECK(out.coverage == out.candidate);
}

TEST_CASE("VersionPair: an evaluate at an unchanged batch size allocates nothing", "[versions][targets]") {
  VersionPair pair(UserModel{forward_v1}, UserModel{forward_v2});
  decltype(pair)::Output out;
  const RowMatrix x = RowMatrix::Constant(16, 2, 0.5f);
  pair.evaluate(x, out);
  nnfuzz_test::g_alloc_count = 0;
  pair.evaluate(x, out);
  CHECK(nnfuzz_test::g_alloc_count == 0);
}

TEST_CASE("VersionPair: different input widths and logit widths are refused, naming both", "[versions][targets]") {
  UserModel wide{forward_v1};
  wide.dim = 3;
  REQUIRE_THROWS_WITH(VersionPair(UserModel{forward_v1}, wide),
                      Catch::Contains("VersionPair(): the old model takes 2 floats per input, the new model 3"));
  // A new version with two classes (its forward writes two logits: the model must not write
  // past the row it was given).
  UserModel fewer{[](const float* in, float* logits) {
    logits[0] = 4 * in[0];
    logits[1] = 4 * in[1];
  }};
  fewer.classes = 2;
  VersionPair pair(UserModel{forward_v1}, fewer);
  decltype(pair)::Output out;
  const RowMatrix x = RowMatrix::Constant(4, 2, 0.5f);
  REQUIRE_THROWS_WITH(pair.evaluate(x, out), Catch::Contains("VersionPair::evaluate(): the old model gives 3 logits "
                                                             "per input, the new model 2"));
  // An extractor that loses rows.
  VersionPair short_rows(UserModel{forward_v1}, UserModel{forward_v2},
                         [](const UserModel::Output& o) { return Eigen::Ref<const RowMatrix>(o.logits.topRows(1)); });
  decltype(short_rows)::Output so;
  REQUIRE_THROWS_WITH(short_rows.evaluate(x, so), Catch::Contains("a batch of 4 inputs gave 1 rows of old logits"));
}

TEST_CASE("VersionPair: the fuzzer finds the planted disagreement, it replays and minimises", "[versions][targets]") {
  // Seeds far from the corner x0 > 0.9, x1 < 0.1; coverage of the old logits guides towards it.
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 20000;
  o.seed = 3;
  auto pair = VersionPair(UserModel{forward_v1}, UserModel{forward_v2});
  auto fuzzer =
      make_fuzzer(pair, RecentSampler(), GaussianMutator(0.1f), KdTreeCoverage(0.2f), DisagreementObjective(), o);
  RowMatrix seeds(2, 2);
  seeds << 0.5f, 0.5f, 0.6f, 0.3f;
  const FuzzResult r = fuzzer.run(seeds);
  REQUIRE(r.found());
  const Finding& f = r.findings.front();
  INFO("finding (" << f.input(0) << ", " << f.input(1) << ") after " << f.execution << " executions");
  CHECK(f.input(0) > 0.9f);
  CHECK(f.input(1) < 0.1f);
  CHECK(f.what == "reference says 0, candidate says 2");
  CHECK(fuzzer.replay(f.input));
  DisagreementObjective d;
  MinimizeResult m = minimize(pair, d, seeds.row(f.root), f.input);
  CHECK(m.after.linf <= m.before.linf);
  CHECK(m.input(0) > 0.9f);
  CHECK(m.input(1) < 0.1f);

  // The confidence regression alone: OutputDistanceObjective finds it, and names the drift.
  FuzzOptions o2 = o;
  o2.seed = 5;
  auto drift = make_fuzzer(pair, RecentSampler(), GaussianMutator(0.1f), KdTreeCoverage(0.2f),
                           any_of(DisagreementObjective(), OutputDistanceObjective(0.3f)), o2);
  RowMatrix up(1, 2);
  up << 0.7f, 0.7f;
  const FuzzResult r2 = drift.run(up);
  REQUIRE(r2.found());
  const Finding& g = r2.findings.front();
  INFO("finding (" << g.input(0) << ", " << g.input(1) << "): " << g.what);
  CHECK((g.what.rfind("max |dp|", 0) == 0 || g.what.rfind("reference says", 0) == 0));
  CHECK(drift.replay(g.input));
}
