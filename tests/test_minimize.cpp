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
  auto objective = fz.objective();
  const MinimizeResult again =
      minimize_finding(fz.model(), objective, seeds.row(res.findings.front().root), res.findings.front(), mo);
  CHECK(again.input == m.input);  // the stage is minimize_finding() on the run's own model
  CHECK_THAT(describe_minimised(again, res.findings.front()), Catch::StartsWith("L0 "));
  // The NaN band is in the mean: the line search alone cannot leave it, resets can only move
  // whole elements back to 0.1 — the result is still a NaN, and no larger.
  PlantedModel::Output out;
  PlantedModel{}.evaluate(m.input.replicate(50, 1), out);
  CHECK(std::isnan(out.y(0, 0)));
}

TEST_CASE("MinimizeFindings: a structured model's findings are minimised to their fewest edits, as it runs",
          "[minimize][edits]") {
  using nnfuzz_test::PlantedTokenModel;
  FuzzOptions fo;
  fo.batch_size = 16;
  fo.max_executions = 20000;
  fo.max_findings = 2;
  fo.seed = 4;
  auto fz = nnfuzz_test::planted_token_fuzzer(fo);
  const std::vector<InputValue> seeds = nnfuzz_test::planted_token_seeds();
  MinimizeFindings mini;
  const FuzzResult res = fz.run(seeds, mini);
  REQUIRE(res.found());
  CHECK(mini.results().empty());
  REQUIRE(mini.edit_results().size() == res.findings.size());
  for (std::size_t i = 0; i < res.findings.size(); ++i) {
    const EditMinimizeResult& m = mini.edit_results()[i];
    INFO("finding " << i << ": " << describe_minimised(m, res.findings[i], PlantedTokenModel{}.input_layout()));
    CHECK(m.edits_before >= 2);
    CHECK(m.edits.size() == 2);  // 3 and 7, whatever else the mutants changed
    CHECK(m.minimal);
    CHECK(fz.replay(m.input));
    CHECK(m.input == apply_edits(PlantedTokenModel{}.input_layout(), seeds.front(), m.edits));
    // The same as minimize_finding() on the finding afterwards (deterministic, the fuzzer's batch).
    auto objective = fz.objective();
    MinimizeOptions mo;
    mo.confirm_batch_size = fo.batch_size;
    const EditMinimizeResult again = minimize_finding(fz.model(), objective, seeds.front(), res.findings[i], mo);
    CHECK(again.input == m.input);
    const Finding small = minimised_finding(res.findings[i], again);
    CHECK(small.value == m.input);
    CHECK(small.what == "minimised: " + res.findings[i].what);
  }
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

using nnfuzz_test::planted_value;
using nnfuzz_test::PlantedTokenModel;
namespace {
const nnfuzz_test::PlantedTokensFire both_planted;
}  // namespace

TEST_CASE("input_edits / apply_edits: a shortest script, any subset applies to the root", "[minimize][edits]") {
  const InputLayout layout = PlantedTokenModel{}.input_layout();
  const InputValue root = planted_value({0, 1, 2, 4, 5, 6, 8, 1}, {0, 0, 0, 0, 0, 0});
  const InputValue finding = planted_value({0, 3, 2, 7, 4, 9, 6, 1, 9}, {0.5f, 0, 0.25f, 0, 0, 1});
  const std::vector<InputEdit> e = input_edits(layout, root, finding);
  // 5 token edits (the edit distance) + 3 changed floats.
  REQUIRE(e.size() == 8);
  CHECK(e[0].describe(layout) == "tokens: substitute [1] -> 3");
  CHECK(e[1].describe(layout) == "tokens: insert 7 before [3]");
  CHECK(e[2].describe(layout) == "tokens: substitute [4] -> 9");
  // "8 1" -> "1 9": two substitutions tie with an erasure and an insertion; substitutions win.
  CHECK(e[3].describe(layout) == "tokens: substitute [6] -> 1");
  CHECK(e[4].describe(layout) == "tokens: substitute [7] -> 9");
  CHECK(e[5].describe(layout) == "noise[0] = 0.5");
  CHECK(apply_edits(layout, root, e) == finding);
  CHECK(apply_edits(layout, root, {}) == root);
  CHECK(apply_edits(layout, root, {e[1], e[3]}).tokens[0] == std::vector<TokenId>{0, 1, 2, 7, 4, 5, 6, 1, 1});
  const InputValue shorter = planted_value({0, 2, 4, 5, 6, 8, 1, 3}, {0, 0, 0, 0, 0, 0});
  const std::vector<InputEdit> e2 = input_edits(layout, root, shorter);
  REQUIRE(e2.size() == 2);
  CHECK(e2[0].describe(layout) == "tokens: erase [1]");
  CHECK(e2[1].describe(layout) == "tokens: insert 3 before [8]");
  CHECK(apply_edits(layout, root, {e2[1]}).tokens[0] == std::vector<TokenId>{0, 1, 2, 4, 5, 6, 8, 1, 3});
  CHECK(input_edits(layout, root, root).empty());
  // Random pairs: the script's length is the edit distance plus the changed floats, and it replays.
  Rng rng(5);
  for (int t = 0; t < 200; ++t) {
    InputValue a(layout), b(layout);
    for (InputValue* v : {&a, &b}) {
      const Index n = 1 + static_cast<Index>(rng.uniform_index(12));
      for (Index i = 0; i < n; ++i) v->tokens[0].push_back(static_cast<TokenId>(rng.uniform_index(3)));
      for (Index c = 0; c < 6; ++c) v->floats[1](c) = rng.uniform_index(2) ? 0.5f : 0.0f;
    }
    CHECK(apply_edits(layout, a, input_edits(layout, a, b)) == b);
  }
}

TEST_CASE("minimize_edits: ddmin on a planted token model keeps exactly the two edits that matter",
          "[minimize][edits]") {
  PlantedTokenModel model;
  auto objective = both_planted;
  const InputLayout layout = model.input_layout();
  const InputValue root = planted_value({0, 1, 2, 4, 5, 6, 8, 1}, {0, 0, 0, 0, 0, 0});
  // 10 edits: 5 token edits (3 and 7 among them) and 5 changed noise elements.
  const InputValue finding = planted_value({0, 3, 2, 7, 4, 9, 6, 1, 9}, {0.5f, 0.75f, 0.25f, 0, 0.125f, 1});
  EditMinimizeOptions o;
  o.batch_size = 4;
  o.confirm_batch_size = 3;
  const EditMinimizeResult r = minimize_edits(model, objective, root, finding, o);
  CHECK(r.edits_before == 10);
  REQUIRE(r.edits.size() == 2);
  CHECK(r.edits[0].describe(layout) == "tokens: substitute [1] -> 3");
  CHECK(r.edits[1].describe(layout) == "tokens: insert 7 before [3]");
  CHECK(r.minimal);
  CHECK(r.input == apply_edits(layout, root, r.edits));
  CHECK(r.input.tokens[0] == std::vector<TokenId>{0, 3, 2, 7, 4, 5, 6, 8, 1});
  CHECK(r.input.floats[1] == root.floats[1]);
  CHECK(r.executions <= o.max_executions);
  // Deterministic, and the result replays through a fuzzer of the same model and objective.
  const EditMinimizeResult again = minimize_edits(model, objective, root, finding, o);
  CHECK(again.input == r.input);
  CHECK(again.executions == r.executions);
  FuzzOptions fo;
  fo.batch_size = 3;
  auto fz = make_fuzzer(model, UniformSampler(), StructuredMutator(), NoCoverage(), objective, fo);
  CHECK(fz.replay(r.input));
  // A root that fires already needs no edit.
  const EditMinimizeResult none = minimize_edits(model, objective, finding, finding, o);
  CHECK(none.edits.empty());
  CHECK(none.minimal);
  // A budget that runs out keeps what it has: it still fires, not necessarily minimal.
  EditMinimizeOptions tight = o;
  tight.max_executions = 8;
  const EditMinimizeResult cut = minimize_edits(model, objective, root, finding, tight);
  CHECK(cut.executions <= 8);
  CHECK(!cut.minimal);
  CHECK(fz.replay(cut.input));
}

TEST_CASE("minimize_edits / apply_edits: bad input is refused clearly", "[minimize][edits]") {
  PlantedTokenModel model;
  auto objective = both_planted;
  const InputLayout layout = model.input_layout();
  const InputValue root = planted_value({0, 1, 2}, {0, 0, 0, 0, 0, 0});
  const InputValue finding = planted_value({3, 7}, {0, 0, 0, 0, 0, 0});
  CHECK_THROWS_WITH(minimize_edits(model, objective, root, root),
                    Catch::Contains("minimize_edits()") && Catch::Contains("does not fire"));
  InputValue wrong = root;
  wrong.floats[1] = RowVector::Zero(5);
  CHECK_THROWS_WITH(minimize_edits(model, objective, wrong, finding),
                    Catch::Contains("minimize_edits()") && Catch::Contains("the root") && Catch::Contains("5"));
  wrong = root;
  wrong.tokens[0] = {1, 10};
  CHECK_THROWS_WITH(minimize_edits(model, objective, root, wrong),
                    Catch::Contains("the finding") && Catch::Contains("10"));
  EditMinimizeOptions bad;
  bad.batch_size = 0;
  CHECK_THROWS_WITH(minimize_edits(model, objective, root, finding, bad),
                    Catch::Contains("minimize_edits()") && Catch::Contains("'batch_size'") && Catch::Contains("0"));
  bad = {};
  bad.confirm_batch_size = 10;
  bad.max_executions = 9;
  CHECK_THROWS_WITH(minimize_edits(model, objective, root, finding, bad),
                    Catch::Contains("'max_executions'") && Catch::Contains("9") && Catch::Contains("10"));
  InputEdit e{0, InputEdit::Kind::substitute, 3, 1, 0};
  CHECK_THROWS_WITH(apply_edits(layout, root, {e}), Catch::Contains("apply_edits()") && Catch::Contains("position 3"));
  e = {1, InputEdit::Kind::erase, 0, 0, 0};
  CHECK_THROWS_WITH(apply_edits(layout, root, {e}), Catch::Contains("apply_edits()") && Catch::Contains("wrong kind"));
  e = {0, InputEdit::Kind::erase, 1, 0, 0};
  CHECK_THROWS_WITH(apply_edits(layout, root, {e, InputEdit{0, InputEdit::Kind::substitute, 1, 4, 0}}),
                    Catch::Contains("second edit"));
  e = {1, InputEdit::Kind::set_float, 0, 0, std::nanf("")};
  CHECK_THROWS_WITH(apply_edits(layout, root, {e}), Catch::Contains("apply_edits()") && Catch::Contains("non-finite"));
  e = {2, InputEdit::Kind::set_float, 0, 0, 0};
  CHECK_THROWS_WITH(apply_edits(layout, root, {e}), Catch::Contains("part 2"));
}
