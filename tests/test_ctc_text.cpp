// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/adapters/named_outputs.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/objectives/text.hpp>
#include <nnfuzz/targets/ctc_text.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace nnfuzz;

namespace {

// A recogniser over 2 floats, 3 steps, classes {blank, a, b, c}: step 0 writes c when x0 > 0.8
// (else a), step 1 writes a when x1 > 0.8 (else blank), step 2 writes b. Probabilities are
// softmaxes of logits that move with x, so the progress toward "cab" is smooth.
struct FakeRecogniser {
  using Output = NamedOutputs;
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>& x, Output& out) const {
    out.names = {"probs"};
    out.tensors.resize(1);
    RowMatrix& p = out.tensors[0];
    p.setZero(x.rows(), 12);
    for (Index r = 0; r < x.rows(); ++r) {
      const float l[3][4] = {{0, 1, 0, 8 * (x(r, 0) - 0.8f) + 1}, {1, 8 * (x(r, 1) - 0.8f) + 1, 0, 0}, {0, 0, 3, 0}};
      for (int t = 0; t < 3; ++t) {
        float z = 0;
        for (int k = 0; k < 4; ++k) z += std::exp(l[t][k]);
        for (int k = 0; k < 4; ++k) p(r, t * 4 + k) = std::exp(l[t][k]) / z;
      }
    }
    out.coverage = p;
  }
};

CtcTextModel<FakeRecogniser> model() { return {FakeRecogniser{}, CtcTextOptions{"probs", {"a", "b", "c"}}}; }

}  // namespace

TEST_CASE("CtcTextModel: greedy CTC decoding, char_prob and step_of", "[ctc_text]") {
  auto m = model();
  RowMatrix x(2, 2);
  x << 0.1f, 0.1f,   // a, blank, b -> "ab"
      0.95f, 0.95f;  // c, a, b -> "cab"
  CtcTextModel<FakeRecogniser>::Output out;
  m.evaluate(x, out);
  REQUIRE(out.texts.size() == 2);
  CHECK(out.texts[0] == "ab");
  CHECK(out.texts[1] == "cab");
  CHECK(out.step_of(0, 0) == 0);
  CHECK(out.step_of(0, 1) == 2);  // step 1 was a blank
  CHECK(out.step_of(0, 2) == -1);
  CHECK(out.char_prob(1, 0, 'c') == Approx(out["probs"](1, 0 * 4 + 3)));
  CHECK(out.char_prob(0, 1, 'b') == Approx(out["probs"](0, 2 * 4 + 2)));
  CHECK(out.char_prob(0, 0, 'z') == 0.0f);      // no key writes 'z'
  CHECK(std::isnan(out.char_prob(0, 5, 'a')));  // past the text
  CHECK(out.coverage.cols() == 12);             // the inner Output's members stay
  // Repeats merge: a recogniser that writes a, a, b reads "ab".
  CtcTextOptions same{"probs", {"a", "b", "c"}};
  CHECK(m.classes() == 4);
  CHECK(same.keys.size() == 3);
}

TEST_CASE("CtcTextModel: bad options and shapes are named", "[ctc_text]") {
  CHECK_THROWS_WITH((CtcTextModel<FakeRecogniser>(FakeRecogniser{}, CtcTextOptions{"", {"a"}})),
                    Catch::Contains("option 'probabilities' is empty"));
  CHECK_THROWS_WITH((CtcTextModel<FakeRecogniser>(FakeRecogniser{}, CtcTextOptions{"probs", {}})),
                    Catch::Contains("option 'keys' is empty"));
  CHECK_THROWS_WITH((CtcTextModel<FakeRecogniser>(FakeRecogniser{}, CtcTextOptions{"probs", {"a", ""}})),
                    Catch::Contains("key 2 (class 2) is empty"));
  // 12 values per row are not T x 5 classes.
  CtcTextModel<FakeRecogniser> wrong(FakeRecogniser{}, CtcTextOptions{"probs", {"a", "b", "c", "d"}});
  CtcTextModel<FakeRecogniser>::Output out;
  CHECK_THROWS_WITH(wrong.evaluate(RowMatrix::Zero(1, 2), out), Catch::Contains("not 1 x (steps x 5 classes)"));
  CtcTextModel<FakeRecogniser> missing(FakeRecogniser{}, CtcTextOptions{"logits", {"a", "b", "c"}});
  CHECK_THROWS_WITH(missing.evaluate(RowMatrix::Zero(1, 2), out), Catch::Contains("no output 'logits'"));
}

TEST_CASE("CtcTextModel: the fuzzer makes the recogniser read a blacklisted word (planted)", "[ctc_text]") {
  // Seeds read "ab"; "cab" needs x0 and x1 above 0.8. Fixed seed and budget.
  RowMatrix seeds(2, 2);
  seeds << 0.1f, 0.1f, 0.2f, 0.15f;
  FuzzOptions o;
  o.max_executions = 20000;
  o.seed = 3;
  o.keep_fitter = true;  // the progress fitness from char_prob() leads there
  auto f = make_fuzzer(model(), FitnessSampler<RecentSampler>(), GaussianMutator(0.1f, MutationBounds{0, 1}),
                       KdTreeCoverage(0.05f), BlacklistObjective({"cab"}), o);
  const FuzzResult r = f.run(seeds);
  REQUIRE(!r.findings.empty());
  CtcTextModel<FakeRecogniser>::Output out;
  auto m = model();
  m.evaluate(r.findings.front().input, out);
  CHECK(out.texts[0] == "cab");
}

TEST_CASE("MisreadObjective: any reading but the expected text, the first diverging character named", "[ctc_text]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(MisreadObjective("  "), Contains("MisreadObjective()") && Contains("empty"));
  MisreadObjective o(" ab ");
  CHECK(o.expected() == "ab");
  auto m = model();
  CtcTextModel<FakeRecogniser>::Output out;
  RowMatrix x(4, 2);
  x << 0.1f, 0.1f, 0.5f, 0.1f, 0.9f, 0.1f, 0.9f, 0.9f;  // "ab", "ab" (less sure of 'a'), "cb", "cab"
  m.evaluate(x, out);
  REQUIRE(out.texts == std::vector<std::string>{"ab", "ab", "cb", "cab"});
  Mask hits = Mask::Constant(4, false);
  o.check(x, out, hits);
  CHECK((!hits(0) && !hits(1) && hits(2) && hits(3)));
  // Fitness: 1 - the least probability of an expected character; rises as the reading weakens.
  const float p_a = out.char_prob(0, 0, 'a'), p_b = out.char_prob(0, 1, 'b');
  CHECK(o.fitness(out, 0) == Approx(1.0f - std::min(p_a, p_b)));
  CHECK(o.fitness(out, 1) > o.fitness(out, 0));
  CHECK(o.fitness(out, 2) == 1.0f);
  CHECK(o.describe(out, 2) == "reads \"cb\" for \"ab\": 'c' for 'a' at position 0");
  CHECK(o.fired(out, 3) == "cab");
  out.texts[3] = " aab";
  CHECK(o.describe(out, 3) == "reads \"aab\" for \"ab\": 'a' for 'b' at position 1");
  out.texts[1] = "a ";
  CHECK(o.describe(out, 1) == "reads \"a\" for \"ab\": ends before 'b' at position 1");
  out.texts[1] = "abc";
  CHECK(o.describe(out, 1) == "reads \"abc\" for \"ab\": extra 'c' at position 2");
}

TEST_CASE("MisreadObjective: its fitness climbs to a misreading that random search misses (planted)", "[ctc_text]") {
  // The seed reads "ab"; a misreading needs x0 above 0.8 ("cb"), 0.7 away from the seed: 14
  // standard deviations of the noise for a mutant of the seed. Fixed seed and budget.
  RowMatrix seed(1, 2);
  seed << 0.1f, 0.1f;
  FuzzOptions o;
  o.max_executions = 4000;
  o.seed = 5;
  const GaussianMutator noise(0.05f, MutationBounds{0, 1});
  o.keep_fitter = false;
  const FuzzResult random =
      make_fuzzer(model(), UniformSampler(), noise, NoCoverage(), MisreadObjective("ab"), o).run(seed);
  CHECK(random.findings.empty());
  o.keep_fitter = true;
  const FuzzResult guided =
      make_fuzzer(model(), FitnessSampler<RecentSampler>(), noise, NoCoverage(), MisreadObjective("ab"), o).run(seed);
  REQUIRE(!guided.findings.empty());
  CHECK_THAT(guided.findings.front().what, Catch::Contains("for \"ab\""));
  CtcTextModel<FakeRecogniser>::Output out;
  auto m = model();
  m.evaluate(guided.findings.front().input, out);
  CHECK(out.texts[0] != "ab");
}
