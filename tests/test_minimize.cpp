// SPDX-License-Identifier: MIT
// Minimisation of findings (minimize.hpp).
#include <catch2/catch.hpp>
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include "support/planted.hpp"

using namespace nnfuzz;

namespace {
// A user's model: y = x[3] + x[7]; it "fails" when y > 1. Only two elements matter.
struct TwoPixelModel {
  struct Output {
    RowMatrix coverage, y;
  };
  Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const RowMatrix>& b, Output& out) const {
    out.y = b.col(3) + b.col(7);
    out.coverage = out.y;
  }
};
auto fails = [](const TwoPixelModel::Output& out, Index r) { return out.y(r, 0) > 1.0f; };
}  // namespace

TEST_CASE("minimize: only the elements that matter stay, smaller in every norm, and it still fires", "[minimize]") {
  TwoPixelModel model;
  auto objective = fails;
  const RowVector root = RowVector::Zero(16);
  RowVector finding(16);
  Rng rng(3);
  rng.fill_uniform(finding.data(), 16, 0.6f, 1.0f);
  MinimizeOptions o;
  o.confirm_batch_size = 10;
  const MinimizeResult r = minimize(model, objective, root, finding, o);
  CHECK(r.before.l0 == 16);
  CHECK(r.after.l0 == 2);
  CHECK(r.input(3) != 0);
  CHECK(r.input(7) != 0);
  CHECK(r.after.l2 <= r.before.l2);
  CHECK(r.after.linf <= r.before.linf);
  CHECK(r.line_t < 1.0);
  // Just above the edge: the line search brought x3 + x7 close to 1.
  CHECK(r.input(3) + r.input(7) > 1.0f);
  CHECK(r.input(3) + r.input(7) < 1.0f + 0.05f);
  // The minimised input replays through a fuzzer of the same model and objective.
  FuzzOptions fo;
  fo.batch_size = 10;
  auto fz = make_fuzzer(model, UniformSampler(), GaussianMutator(0.1f), NoCoverage(), objective, fo);
  CHECK(fz.replay(r.input));
  CHECK(r.executions <= o.max_executions);
}

TEST_CASE("minimize: never larger than the original, on a planted NaN found by the fuzzer", "[minimize]") {
  using nnfuzz_test::PlantedModel;
  FuzzOptions fo;
  fo.batch_size = 50;
  fo.max_executions = 200000;
  fo.seed = 2;
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto fz = make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), BruteForceCoverage(0.002f),
                        NonFiniteObjective(), fo);
  MinimizeOptions mo;
  mo.confirm_batch_size = fo.batch_size;
  MinimizeFindings mini(mo);
  const FuzzResult res = fz.run(seeds, mini);
  REQUIRE(res.found());
  REQUIRE(mini.results().size() == res.findings.size());
  const MinimizeResult& m = mini.results().front();
  CHECK(m.after.l0 <= m.before.l0);
  CHECK(m.after.l2 <= m.before.l2);
  CHECK(m.after.linf <= m.before.linf);
  CHECK(fz.replay(m.input));
  // The NaN band is in the mean: the line search alone cannot leave it, resets can only move
  // whole elements back to 0.1 — the result is still a NaN, and no larger.
  PlantedModel::Output out;
  PlantedModel{}.evaluate(m.input.replicate(50, 1), out);
  CHECK(std::isnan(out.y(0, 0)));
}

TEST_CASE("minimize: bad input is refused clearly", "[minimize]") {
  TwoPixelModel model;
  auto objective = fails;
  const RowVector root = RowVector::Zero(16), ok = RowVector::Constant(16, 0.9f);
  CHECK_THROWS_WITH(minimize(model, objective, RowVector::Zero(15), ok),
                    Catch::Contains("minimize()") && Catch::Contains("15") && Catch::Contains("16"));
  RowVector nan = ok;
  nan(2) = std::nanf("");
  CHECK_THROWS_WITH(minimize(model, objective, root, nan), Catch::Contains("NaN"));
  CHECK_THROWS_WITH(minimize(model, objective, root, root), Catch::Contains("does not fire"));
  MinimizeOptions bad;
  bad.batch_size = 1;
  CHECK_THROWS_WITH(minimize(model, objective, root, ok, bad), Catch::Contains("'batch_size'"));
  CHECK(perturbation_size(root, ok).l0 == 16);
  CHECK_THROWS_WITH(perturbation_size(root, RowVector::Zero(3)), Catch::Contains("perturbation_size()"));
}

TEST_CASE("minimize: the budget holds from the first confirmation - a batch too large to allocate names the option",
          "[minimize]") {
  TwoPixelModel model;
  auto objective = fails;
  const RowVector root = RowVector::Zero(16), ok = RowVector::Constant(16, 0.9f);
  MinimizeOptions o;
  o.max_executions = 10;  // less than one confirmation of batch_size (64) copies
  CHECK_THROWS_WITH(minimize(model, objective, root, ok, o),
                    Catch::Contains("'max_executions'") && Catch::Contains("10") && Catch::Contains("64"));
  o.confirm_batch_size = 5;
  o.max_executions = 12;
  const MinimizeResult r = minimize(model, objective, root, ok, o);
  CHECK(r.executions <= 12);
  MinimizeOptions huge;
  huge.batch_size = Index{1} << 40;
  huge.max_executions = Index{1} << 50;  // the budget is not what stops it
  CHECK_THROWS_WITH(minimize(model, objective, root, ok, huge), Catch::Contains("minimize()") &&
                                                                    Catch::Contains("'batch_size'") &&
                                                                    Catch::Contains("1099511627776"));
}
