// SPDX-License-Identifier: MIT
// Where two versions part (regression/localize.hpp): a planted pair whose second layer alone
// differs, the float16 twin, grouping, and the errors.
#include <catch2/catch.hpp>
#include <nnfuzz/models/mlp.hpp>
#include <nnfuzz/models/quantize.hpp>
#include <nnfuzz/regression/localize.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <string>
#include <vector>

using namespace nnfuzz;

namespace {
// A user's model built on Mlp<float>: its Output names its tensors through the trace.
struct TracedMlp {
  struct Output {
    MlpTrace<float> trace;
    RowMatrix logits;
    template <class F>
    void for_each_tensor(F&& f) const {
      trace.for_each_tensor(f);
    }
  };
  Mlp<float> net;
  Index input_dim() const { return net.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    net.forward(batch, out.trace);
    out.logits = out.trace.logits();
  }
};

Mlp<float> planted_net() {
  Mlp<float> net({4, 6, 5, 3});
  net.init_uniform(0.5f, 7);
  return net;
}
}  // namespace

TEST_CASE("MlpTrace::for_each_tensor: dense1, relu1, ..., logits in the order computed", "[localize]") {
  const Mlp<float> net = planted_net();
  MlpTrace<float> t;
  net.forward(RowMatrix::Constant(2, 4, 0.5f), t);
  std::vector<std::string> names;
  t.for_each_tensor([&](const std::string& n, const auto& m) {
    names.push_back(n);
    CHECK(m.rows() == 2);
  });
  CHECK(names == std::vector<std::string>{"dense1", "relu1", "dense2", "relu2", "logits"});
}

TEST_CASE("localize: a planted pair whose layer 2 alone differs parts at dense2", "[localize]") {
  TracedMlp v1{planted_net()}, v2{planted_net()};
  v2.net.layers()[1].bias(0) += 0.5f;  // layer 2 alone
  VersionPair pair(v1, v2);
  static_assert(can_localize<decltype(pair)::Output>(), "a VersionPair of traced models localises");
  Rng rng(3);
  RowMatrix rows(6, 4);
  for (Index r = 0; r < rows.rows(); ++r)
    for (Index c = 0; c < 4; ++c) rows(r, c) = static_cast<float>(rng.uniform());
  const std::vector<Localization> where = localize_rows(pair, rows, TensorTolerances(Tolerance::float32(1e-6, 1e-6)));
  REQUIRE(where.size() == 6);
  for (const Localization& l : where) {
    REQUIRE(l.tensors.size() == 5);
    CHECK(l.diverges());
    CHECK(l.first == 2);
    CHECK(l.first_tensor() == "dense2");
    CHECK(l.tensors[0].error.max_abs == 0);  // dense1
    CHECK(l.tensors[1].error.max_abs == 0);  // relu1
    CHECK(l.tensors[0].sqnr_db == std::numeric_limits<double>::infinity());
    CHECK(l.tensors[2].error.max_abs == Approx(0.5));  // dense2: the planted bias, one value of five
    CHECK(l.tensors[2].error.exceeded == 1);
    CHECK(l.tensors[2].error.worst == 0);
    CHECK_THAT(l.describe(), Catch::StartsWith("first diverging tensor: dense2 (max error 0.5") &&
                                 Catch::Contains("1 of 5 values") && Catch::Contains("before it: dense1 0, relu1 0"));
  }
  // Tolerant enough for the bias: nothing parts.
  const std::vector<Localization> loose = localize_rows(pair, rows, TensorTolerances(Tolerance::float32(10)));
  CHECK(!loose[0].diverges());
  CHECK_THAT(loose[0].describe(), Catch::StartsWith("no tensor over its tolerance (dense1 0"));
  // Per-tensor tolerances: dense2 forgiven, the first over its own is then a later tensor (or none).
  TensorTolerances per(Tolerance::float32(1e-6, 1e-6));
  per.set("dense2", Tolerance::float32(1));
  for (const Localization& l : localize_rows(pair, rows, per)) CHECK(l.first != 2);
  // Grouped by the first diverging tensor: all six at dense2.
  const std::vector<DivergenceGroup> g = group_by_first_tensor(where);
  REQUIRE(g.size() == 1);
  CHECK(g[0].tensor == "dense2");
  CHECK(g[0].count == 6);
  CHECK(g[0].members == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  // Findings: their inputs, localised the same way.
  std::vector<Finding> findings(2);
  findings[0].input = rows.row(4);
  findings[1].input = rows.row(1);
  const std::vector<Localization> lf = localize_findings(pair, findings, TensorTolerances(Tolerance::float32(1e-6)));
  CHECK(lf.size() == 2);
  CHECK(lf[1].first_tensor() == "dense2");
  CHECK_THROWS_WITH(localize_rows(pair, RowMatrix::Zero(1, 5), TensorTolerances()),
                    Catch::Contains("localize_rows(): the rows have 5 values"));
}

TEST_CASE("localize: the float16 twin parts at its first layer under a float32 tolerance, never in ulps",
          "[localize]") {
  const Mlp<float> net = planted_net();
  HalfArithmeticPair pair = make_half_arithmetic_pair(net);
  static_assert(can_localize<HalfArithmeticPair::Output>(), "PairTarget's two traces localise");
  static_assert(can_localize<Int8Pair::Output>(), "Int8Trace names its tensors as reals");
  RowMatrix rows = RowMatrix::Constant(1, 4, 0.3f);
  rows(0, 1) = 0.7f;
  const Localization strict = localize_rows(pair, rows, TensorTolerances(Tolerance::float32(0)))[0];
  CHECK(strict.first_tensor() == "dense1");
  const Localization loose = localize_rows(pair, rows, TensorTolerances(Tolerance::float16(64)))[0];
  CHECK(!loose.diverges());
  for (const TensorDivergence& t : loose.tensors) CHECK(t.error.max_units < 64);
}

TEST_CASE("group_by_first_tensor: in the order computed, 'none' last", "[localize]") {
  auto at = [](Index first) {
    Localization l;
    for (const char* n : {"dense1", "relu1", "logits"}) l.tensors.push_back({n, Tolerance(), TensorError(), 0});
    l.first = first;
    return l;
  };
  const std::vector<Localization> ls = {at(2), at(-1), at(0), at(2), at(0), at(2)};
  const std::vector<DivergenceGroup> g = group_by_first_tensor(ls);
  REQUIRE(g.size() == 3);
  CHECK(g[0].tensor == "dense1");
  CHECK(g[0].members == std::vector<std::size_t>{2, 4});
  CHECK(g[1].tensor == "logits");
  CHECK(g[1].count == 3);
  CHECK(g[2].tensor.empty());
  CHECK(g[2].count == 1);
}

namespace {
struct OneTensor {
  RowMatrix t;
  const char* name = "a";
  template <class F>
  void for_each_tensor(F&& f) const {
    f(name, t);
  }
};
}  // namespace

TEST_CASE("localize: tensors of different widths, no tensor in common, a row out of range", "[localize]") {
  OneTensor a{RowMatrix::Zero(1, 3)}, b{RowMatrix::Zero(1, 4)};
  CHECK_THROWS_WITH(localize(a, b, 0, TensorTolerances()),
                    Catch::Contains("localize(): tensor 'a' has 3 values per input in the old version, 4"));
  b.t = RowMatrix::Zero(1, 3);
  b.name = "b";
  CHECK_THROWS_WITH(localize(a, b, 0, TensorTolerances()), Catch::Contains("no tensor in common"));
  CHECK_THROWS_WITH(localize(a, a, 1, TensorTolerances()), Catch::Contains("tensor 'a' has 1 rows, asked for row 1"));
}

namespace {
// A user's int8 model: its Output names its tensors through the Int8Trace.
struct TracedInt8 {
  struct Output {
    Int8Trace trace;
    RowMatrix logits;
    template <class F>
    void for_each_tensor(F&& f) const {
      trace.for_each_tensor(f);
    }
  };
  Int8Mlp net;
  Index input_dim() const { return net.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    net.forward(batch, out.trace);
    out.logits = out.trace.logits();
  }
};
}  // namespace

TEST_CASE("Int8Trace::for_each_tensor: real tensors by MlpTrace's names, and int8 pairs localise in steps",
          "[localize][quantize]") {
  const Mlp<float> net = planted_net();
  Rng rng(5);
  RowMatrix calib(64, 4);
  rng.fill_uniform(calib.data(), calib.size(), 0.0f, 1.0f);
  const Int8Mlp q = quantize_int8(net, calib);
  Int8Trace t;
  CHECK_THROWS_WITH(t.for_each_tensor([](const std::string&, const RowMatrix&) {}),
                    Catch::Contains("Int8Trace::for_each_tensor()") && Catch::Contains("no Int8Mlp::forward()"));
  const RowMatrix x = calib.topRows(3);
  q.forward(x, t);
  std::vector<std::string> names;
  t.for_each_tensor([&](const std::string& n, const RowMatrix& m) {
    names.push_back(n);
    CHECK(m.rows() == 3);
    if (n == "relu1") {  // hand-computed: scale x (code - zero point), the codes the kernel wrote
      const QuantParams& p = q.layers()[0].output;
      CHECK(m.cols() == 6);
      CHECK(m(1, 2) == p.scale * static_cast<float>(static_cast<int>(t.codes[1](1, 2)) - p.zero_point));
    }
    if (n == "logits") CHECK(m == t.logits());
  });
  CHECK(names == std::vector<std::string>{"dense1", "relu1", "dense2", "relu2", "logits"});

  // Against its float original, per tensor in quantisation steps: within a few steps, nothing over 4.
  Int8Pair pair(net, q);
  const TensorTolerances steps = q.tolerances(4);
  CHECK(steps.of("relu2").format == NumberFormat::int8);
  CHECK(steps.of("relu2").scale == Approx(q.layers()[1].output.scale));
  const Localization close = localize_rows(pair, x.topRows(1), steps)[0];
  CHECK(!close.diverges());
  CHECK(close.tensors[1].error.max_units <= 2.0);  // relu1: rounding, and the input's own rounding

  // Two int8 releases whose second layer alone differs: bit for bit before it, parting at dense2.
  std::vector<Int8Layer> layers = q.layers();
  layers[1].bias(0) += 2000;  // a change of many steps in layer 2's first output
  VersionPair v(TracedInt8{q}, TracedInt8{Int8Mlp(q.input_params(), layers, q.quantizes_logits())});
  static_assert(can_localize<decltype(v)::Output>(), "a VersionPair of int8 models localises");
  const Localization l = localize_rows(v, x.topRows(1), steps)[0];
  CHECK(l.first_tensor() == "dense2");
  CHECK(l.tensors[0].error.max_units == 0);
  CHECK(l.tensors[1].error.max_units == 0);
  CHECK(l.tensors[2].error.max_units > 4);
}
