// SPDX-License-Identifier: MIT
// Tests of include/nnfuzz/function_model.hpp (FunctionModel) and Fuzzer's with_*() setters.
#include <catch2/catch.hpp>

#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <cmath>
#include <string>

using namespace nnfuzz;

namespace {
// A user's forward function: 4 floats in, 2 out; the second output is sqrt(x0 - 0.9): NaN below.
void user_forward(const float* in, Index rows, float* out) {
  for (Index r = 0; r < rows; ++r, in += 4, out += 2) {
    out[0] = in[0] + in[1] + in[2] + in[3];
    out[1] = std::sqrt(0.9f - in[0]);  // NaN when the first input passes 0.9
  }
}
// The same with a hidden layer of 3 floats.
void user_forward_hidden(const float* in, Index rows, float* out, float* hidden) {
  user_forward(in, rows, out);
  for (Index r = 0; r < rows; ++r, in += 4, hidden += 3)
    for (int h = 0; h < 3; ++h) hidden[h] = in[h] * 2.0f;
}
// Equal element by element, NaN equal to NaN (the planted output is NaN on purpose).
bool same(const RowMatrix& a, const RowMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.array() == b.array() || (a.array().isNaN() && b.array().isNaN())).all();
}
}  // namespace

TEST_CASE("FunctionModel: a float* forward as a Model - outputs, hidden coverage, tensors", "[function_model]") {
  FunctionModel model(user_forward, 4, 2);
  CHECK(model.input_dim() == 4);
  CHECK(model.output_dim() == 2);
  CHECK(model.hidden_dim() == 0);
  RowMatrix batch(2, 4);
  batch << 0.1f, 0.2f, 0.3f, 0.4f, 1.0f, 0.0f, 0.0f, 0.0f;
  FunctionModel<decltype(&user_forward)>::Output out;
  model.evaluate(batch, out);
  CHECK(out.logits(0, 0) == Approx(1.0f));
  CHECK(out.logits(0, 1) == Approx(std::sqrt(0.8f)));
  CHECK(std::isnan(out.logits(1, 1)));
  CHECK(same(out.coverage, out.logits));  // no hidden layer: the output is the coverage
  std::string names;
  out.for_each_tensor([&](const char* n, const auto&) { names += std::string(n) + " "; });
  CHECK(names == "output ");

  FunctionModel hidden(user_forward_hidden, 4, 2, 3);
  FunctionModel<decltype(&user_forward_hidden)>::Output ho;
  hidden.evaluate(batch, ho);
  CHECK(ho.coverage.cols() == 3);
  CHECK(ho.coverage(0, 2) == Approx(0.6f));
  names.clear();
  ho.for_each_tensor([&](const char* n, const auto&) { names += std::string(n) + " "; });
  CHECK(names == "hidden output ");

  // A lambda holding state works the same.
  int calls = 0;
  auto lambda = [&calls](const float* in, Index rows, float* dst) {
    ++calls;
    user_forward(in, rows, dst);
  };
  FunctionModel<decltype(lambda)> lm(lambda, 4, 2);
  FunctionModel<decltype(lambda)>::Output lo;
  lm.evaluate(batch, lo);
  CHECK(calls == 1);
  CHECK(same(lo.logits, out.logits));
}

TEST_CASE("FunctionModel: bad widths and batches are refused naming the value", "[function_model]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(FunctionModel(user_forward, 0, 2), Contains("FunctionModel()") && Contains("got 0 and 2"));
  CHECK_THROWS_WITH(FunctionModel(user_forward, 4, 2, 3), Contains("'hidden_dim' is 3"));
  CHECK_THROWS_WITH(FunctionModel(user_forward_hidden, 4, 2), Contains("'hidden_dim' (>= 1), got 0"));
  FunctionModel model(user_forward, 4, 2);
  FunctionModel<decltype(&user_forward)>::Output out;
  CHECK_THROWS_WITH(model.evaluate(RowMatrix::Zero(2, 5), out), Contains("has 5 columns, the model takes 4"));
  const RowMatrix wide = RowMatrix::Zero(2, 8);
  CHECK_THROWS_WITH(model.evaluate(wide.leftCols(4), out), Contains("not contiguous"));
}

TEST_CASE("FunctionModel: the defaults find the planted NaN - with_*() replace one policy",
          "[function_model][fuzzer]") {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 20000;
  o.seed = 3;
  const RowMatrix seeds = RowMatrix::Constant(2, 4, 0.5f);
  auto fuzzer = make_fuzzer(FunctionModel(user_forward, 4, 2), o);
  const FuzzResult r = fuzzer.run(seeds);
  REQUIRE(r.found());
  CHECK(r.findings[0].input(0) > 0.9f);
  CHECK(r.findings[0].fired == "output");
  CHECK(fuzzer.replay(r.findings[0].input));

  // with_*(): the same fuzzer with one policy replaced, the options kept.
  auto random = make_fuzzer(FunctionModel(user_forward, 4, 2), o).with_coverage(NoCoverage());
  static_assert(std::is_same<decltype(random.coverage()), NoCoverage&>::value, "coverage replaced");
  CHECK(random.options().seed == 3);
  const FuzzResult rr = random.run(seeds);
  CHECK(rr.stats.corpus_size == 2);  // random search: the corpus never grows

  auto mutated = make_fuzzer(FunctionModel(user_forward, 4, 2), o)
                     .with_mutator(GaussianMutator(0.2f))
                     .with_sampler(UniformSampler())
                     .with_objective(NonFiniteObjective());
  CHECK(mutated.mutator().sigma() == 0.2f);
  CHECK(mutated.run(seeds).found());
}

TEST_CASE("FunctionModel: two releases of a float* model as a VersionPair", "[function_model][versions]") {
  auto v2 = [](const float* in, Index rows, float* out) {
    user_forward(in, rows, out);
    for (Index r = 0; r < rows; ++r)
      if (in[4 * r + 1] > 0.8f) out[2 * r] = -10.0f;  // the new release answers class 1 there
  };
  VersionPair pair(FunctionModel(user_forward, 4, 2), FunctionModel<decltype(v2)>(v2, 4, 2));
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 20000;
  o.seed = 1;
  auto fuzzer = make_fuzzer(pair, o).with_objective(DisagreementObjective());
  const FuzzResult r = fuzzer.run(RowMatrix::Constant(2, 4, 0.3f));
  REQUIRE(r.found());
  CHECK(r.findings[0].input(1) > 0.8f);
}
