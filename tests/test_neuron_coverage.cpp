// SPDX-License-Identifier: MIT
// The field's coverage criteria (coverage/neuron.hpp, nlc.hpp) and the combinators (combine.hpp),
// against values worked out by hand in the comments.
#include <catch2/catch.hpp>
#include <nnfuzz/coverage/calibrated.hpp>
#include <nnfuzz/coverage/combine.hpp>
#include <nnfuzz/coverage/neuron.hpp>
#include <nnfuzz/coverage/nlc.hpp>
#include <nnfuzz/coverage/no_coverage.hpp>
#include <nnfuzz/fuzzer.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>

#include "support/alloc_tracker.hpp"

#include <limits>
#include <vector>

using namespace nnfuzz;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Observes the rows one batch at a time and returns the verdicts as a vector.
template <typename C>
std::vector<bool> verdicts(C& cov, const RowMatrix& rows) {
  Mask is_new;
  cov.observe(rows, is_new);
  REQUIRE(is_new.size() == rows.rows());
  return std::vector<bool>(is_new.data(), is_new.data() + is_new.size());
}

// Two layers of three neurons, four inputs (used by NC and TKNC).
RowMatrix two_layers() {
  RowMatrix m(4, 6);
  m << 0, 1, 2, 5, 5, 5,  //
      2, 1, 0, 1, 3, 2,   //
      4, 0, 4, 0, 0, 1,   //
      3, 2, 1, 0, 7, 0;
  return m;
}

// Profiling data for the range criteria: low = (0, 0, 1), high = (4, 2, 1); neuron 2's range is a point.
RowMatrix profile_rows() {
  RowMatrix p(2, 3);
  p << 0, 0, 1,  //
      4, 2, 1;
  return p;
}

// Five inputs for the range criteria.
RowMatrix range_rows() {
  RowMatrix m(5, 3);
  m << 0, 2, 1,         // a
      1, 1.9f, 5,       // b
      3.99f, -1, 0.5f,  // c
      0.5f, 1.75f, 1,   // d
      5, 0.25f, 1;      // e
  return m;
}

}  // namespace

TEST_CASE("NeuronCoverage, scaled per layer and per input: hand-computed", "[coverage][neuron]") {
  NeuronCoverage nc({3, 3}, 0.5f);
  nc.reset(6);
  CHECK(nc.total() == 6);
  // Scaled layer by layer, (x - min) / (max - min), covered when > 0.5:
  // r0 (0 1 2 | 5 5 5): layer 0 -> 0 .5 1: neuron 2; layer 1 constant -> 0: none.  new {2}
  // r1 (2 1 0 | 1 3 2): 1 .5 0: neuron 0; 0 1 .5: neuron 4.                         new {0, 4}
  // r2 (4 0 4 | 0 0 1): 1 0 1: neurons 0, 2 (seen); 0 0 1: neuron 5.                 new {5}
  // r3 (3 2 1 | 0 7 0): 1 .5 0: neuron 0 (seen); 0 1 0: neuron 4 (seen).             not new
  CHECK(verdicts(nc, two_layers()) == std::vector<bool>{true, true, true, false});
  CHECK(nc.covered() == 4);
  CHECK(nc.ratio() == Approx(4.0 / 6.0));
  CHECK(nc.size() == 3);
  CHECK(nc.is_covered(0));
  CHECK_FALSE(nc.is_covered(1));
  CHECK_FALSE(nc.is_covered(3));
  // Row by row, in separate batches: the same decisions (earlier rows of a batch count).
  nc.reset(6);
  const RowMatrix m = two_layers();
  std::vector<bool> one_by_one;
  for (Index i = 0; i < 4; ++i) one_by_one.push_back(verdicts(nc, m.row(i))[0]);
  CHECK(one_by_one == std::vector<bool>{true, true, true, false});
  CHECK(nc.covered() == 4);
}

TEST_CASE("NeuronCoverage on raw activations: hand-computed", "[coverage][neuron]") {
  NeuronCoverage nc({3, 3}, 1.5f, NeuronScaling::none);
  nc.reset(6);
  // Covered when x > 1.5:
  // r0: 2 | 5 5 5 -> {2, 3, 4, 5} new;  r1: 2 | 3 2 -> {0, 4, 5}: 0 new;
  // r2: 4 4 | - -> {0, 2} seen: not new;  r3: 3 2 | 7 -> {0, 1, 4}: 1 new.
  CHECK(verdicts(nc, two_layers()) == std::vector<bool>{true, true, false, true});
  CHECK(nc.covered() == 6);
  CHECK(nc.ratio() == 1.0);
  // Without layers the whole vector is one layer: r0 scaled over 0..5 -> 0 .2 .4 1 1 1.
  NeuronCoverage whole({}, 0.5f);
  whole.reset(6);
  CHECK(verdicts(whole, two_layers().topRows(1)) == std::vector<bool>{true});
  CHECK(whole.covered() == 3);
  CHECK(whole.layers() == LayerWidths{6});
}

TEST_CASE("KMNCoverage, NBCoverage, SNACoverage with profiled ranges: hand-computed", "[coverage][neuron]") {
  // Ranges: neuron 0 [0, 4], neuron 1 [0, 2], neuron 2 [1, 1] (a point: no section can be covered).
  SECTION("KMNC, k = 4") {
    KMNCoverage kmnc({3}, 4);
    kmnc.profile(profile_rows());
    kmnc.reset(3);
    CHECK(kmnc.profiled());
    CHECK(kmnc.total() == 12);
    // Sections (element = 4 * neuron + section): neuron 0: [0,1) [1,2) [2,3) [3,4]; neuron 1: width 0.5.
    // a (0, 2, 1):       n0 s0 (0), n1 at high -> s3 (7).   new
    // b (1, 1.9, 5):     n0 s1 (1), n1 3.8 -> s3 (seen).     new
    // c (3.99, -1, 0.5): n0 s3 (3), n1 below the range.      new
    // d (0.5, 1.75, 1):  n0 s0, n1 3.5 -> s3: both seen.     not new
    // e (5, 0.25, 1):    n0 above the range, n1 s0 (4).      new
    CHECK(verdicts(kmnc, range_rows()) == std::vector<bool>{true, true, true, false, true});
    CHECK(kmnc.covered() == 5);
    CHECK(kmnc.ratio() == Approx(5.0 / 12.0));
    for (Index e : {0, 1, 3, 4, 7}) CHECK(kmnc.is_covered(e));
    CHECK(kmnc.low()(0) == 0);
    CHECK(kmnc.high()(1) == 2);
    // reset() keeps profiled ranges and forgets the sections.
    kmnc.reset(3);
    CHECK(kmnc.profiled());
    CHECK(kmnc.covered() == 0);
    CHECK(kmnc.high()(0) == 4);
  }
  SECTION("NBC") {
    NBCoverage nbc;
    nbc.profile(profile_rows());
    nbc.reset(3);
    CHECK(nbc.total() == 6);
    // Elements 2j (below low_j), 2j + 1 (above high_j).
    // a: inside everywhere: not new.  b: n2 5 > 1 (5): new.  c: n1 -1 < 0 (2), n2 0.5 < 1 (4): new.
    // d: inside: not new.  e: n0 5 > 4 (1): new.
    CHECK(verdicts(nbc, range_rows()) == std::vector<bool>{false, true, true, false, true});
    CHECK(nbc.covered() == 4);
    CHECK(nbc.ratio() == Approx(4.0 / 6.0));
    CHECK(nbc.size() == 3);
  }
  SECTION("SNAC") {
    SNACoverage snac;
    snac.profile(profile_rows());
    snac.reset(3);
    // b: n2 above (2); e: n0 above (0); the others stay below the highs.
    CHECK(verdicts(snac, range_rows()) == std::vector<bool>{false, true, false, false, true});
    CHECK(snac.covered() == 2);
    CHECK(snac.ratio() == Approx(2.0 / 3.0));
  }
  SECTION("profile() in several calls, and set_ranges()") {
    KMNCoverage a({}, 4), b({}, 4);
    a.profile(profile_rows().topRows(1));
    a.profile(profile_rows().bottomRows(1));
    RowVector lo(3), hi(3);
    lo << 0, 0, 1;
    hi << 4, 2, 1;
    b.set_ranges(lo, hi);
    a.reset(3);
    b.reset(3);
    CHECK(a.low() == lo);
    CHECK(a.high() == hi);
    CHECK(verdicts(a, range_rows()) == verdicts(b, range_rows()));
  }
}

TEST_CASE("Range criteria take their ranges from the seeds by default", "[coverage][neuron]") {
  KMNCoverage kmnc({}, 4);
  kmnc.reset(3);
  CHECK_FALSE(kmnc.profiled());
  RowMatrix seeds(3, 3);
  seeds << 0, 0, 1,  //
      kNaN, 9, 9,    // skipped: not new, does not widen the ranges
      4, 2, 1;
  // Before seeds_done(): every finite seed is new and kept.
  CHECK(verdicts(kmnc, seeds) == std::vector<bool>{true, false, true});
  CHECK(kmnc.covered() == 0);
  kmnc.seeds_done();
  CHECK(kmnc.profiled());
  CHECK(kmnc.high()(1) == 2);  // not 9
  // The seeds' own sections: seed 0: n0 s0 (0), n1 s0 (4); seed 1: n0 s3 (3), n1 s3 (7).
  CHECK(kmnc.covered() == 4);
  CHECK(kmnc.size() == 2);
  // a (0, 2, 1) covers 0 and 7: seen; b (1, 1.9, 5) covers 1: new.
  CHECK(verdicts(kmnc, range_rows().topRows(2)) == std::vector<bool>{false, true});
  CHECK(kmnc.size() == 3);

  // NBC from the seeds starts at 0: no seed lies outside its own ranges.
  NBCoverage nbc;
  nbc.reset(3);
  verdicts(nbc, seeds);
  nbc.seeds_done();
  CHECK(nbc.covered() == 0);
  CHECK(verdicts(nbc, range_rows()) == std::vector<bool>{false, true, true, false, true});

  // No finite seed: the first finite rows after seeds_done() give the ranges.
  SNACoverage snac;
  snac.reset(3);
  RowMatrix bad = RowMatrix::Constant(1, 3, kNaN);
  CHECK(verdicts(snac, bad) == std::vector<bool>{false});
  snac.seeds_done();
  CHECK_FALSE(snac.profiled());
  CHECK(verdicts(snac, profile_rows()) == std::vector<bool>{true, true});
  CHECK(snac.profiled());
  CHECK(verdicts(snac, range_rows()) == std::vector<bool>{false, true, false, false, true});

  // profile() while seeds are being kept: the ranges are the profile's, the kept seeds are marked.
  KMNCoverage late({}, 4);
  late.reset(3);
  verdicts(late, seeds);
  late.profile(profile_rows());
  CHECK(late.profiled());
  CHECK(late.covered() == 4);

  // A new reset() forgets ranges that came from seeds.
  kmnc.reset(3);
  CHECK_FALSE(kmnc.profiled());
}

TEST_CASE("TKNCoverage: top-k per layer, DeepHunter's union", "[coverage][neuron]") {
  TKNCoverage tknc({3, 3}, 1);
  tknc.reset(6);
  // k = 1, ties to the lower index:
  // r0 (0 1 2 | 5 5 5): {2}, {3}: new.  r1 (2 1 0 | 1 3 2): {0}, {4}: new.
  // r2 (4 0 4 | 0 0 1): {0} (tie with 2), {5}: new.  r3 (3 2 1 | 0 7 0): {0}, {4}: not new.
  CHECK(verdicts(tknc, two_layers()) == std::vector<bool>{true, true, true, false});
  CHECK(tknc.covered() == 5);
  CHECK_FALSE(tknc.is_covered(1));
  CHECK(tknc.ratio() == Approx(5.0 / 6.0));

  TKNCoverage two({3, 3}, 2);
  two.reset(6);
  // k = 2: r0 {1, 2} {3, 4}; r1 {0, 1} {4, 5}: new; r2 {0, 2} {5, 3}: not new (all seen).
  CHECK(verdicts(two, two_layers().topRows(3)) == std::vector<bool>{true, true, false});
  CHECK(two.covered() == 6);

  // k above a layer's width is capped: every neuron of the layer is in its top k.
  TKNCoverage wide({2, 1}, 5);
  wide.reset(3);
  CHECK(verdicts(wide, profile_rows().topRows(1)) == std::vector<bool>{true});
  CHECK(wide.covered() == 3);
}

TEST_CASE("NLCoverage: Welford covariance, value = sum of |cov|, hand-computed", "[coverage][nlc]") {
  NLCoverage nlc({2});
  nlc.reset(2);
  RowMatrix x(5, 2);
  x << 0, 0,  // first: new (sets the mean); value 0
      2, 0,   // n 1 -> 2: C = 1/4 * dd^T, d = (2, 0) -> [[1, 0], [0, 0]]; value 1, gain 1: new
      1, 0,   // d = (0, 0): C -> 2/3 C, value 2/3: gain -1/3: not new, nothing changes
      1, 3,   // d = (0, 3): C = 2/3 [[1,0],[0,0]] + 2/9 [[0,0],[0,9]] = diag(2/3, 2); value 8/3: new
      3, 3;   // d = (2, 2): C = 3/4 C + 3/16 [[4,4],[4,4]] = [[1.25, .75], [.75, 2.25]]; value 5: new
  CHECK(verdicts(nlc, x) == std::vector<bool>{true, true, false, true, true});
  CHECK(nlc.value() == Approx(5.0));
  CHECK(nlc.count(0) == 4);
  CHECK(nlc.size() == 4);
  const Eigen::MatrixXd c = nlc.covariance(0);
  CHECK(c(0, 0) == Approx(1.25));
  CHECK(c(0, 1) == Approx(0.75));
  CHECK(c(1, 0) == Approx(0.75));
  CHECK(c(1, 1) == Approx(2.25));
  CHECK(nlc.mean(0)(0) == Approx(1.5));  // the population statistics of (0,0) (2,0) (1,3) (3,3)
  CHECK(nlc.mean(0)(1) == Approx(1.5));

  // Relative tolerance: the last input's gain 7/3 is below 1.0 x the value 8/3.
  NLCoverage strict({2}, 1.0);
  strict.reset(2);
  CHECK(verdicts(strict, x) == std::vector<bool>{true, true, false, true, false});
  CHECK(strict.value() == Approx(8.0 / 3.0));

  // Layer-wise: only the layers with a positive gain are updated.
  NLCoverage layered({1, 1});
  layered.reset(2);
  // (0,0) new; (2,0): layer 0 var 1 (gain 1), layer 1 gain 0 -> new, only layer 0 updated
  // (layer 1 keeps n = 1); (1,0): gains -1/3 and 0: not new; (1,3): layer 0 gain -1/3 (kept),
  // layer 1: n 1 -> 2, d = 3: var 9/4 (gain 9/4): new.
  CHECK(verdicts(layered, x.topRows(4)) == std::vector<bool>{true, true, false, true});
  CHECK(layered.count(0) == 2);
  CHECK(layered.count(1) == 2);
  CHECK(layered.layer_value(0) == Approx(1.0));
  CHECK(layered.layer_value(1) == Approx(9.0 / 4.0));
  CHECK(layered.value() == Approx(13.0 / 4.0));

  // profile(): rows enter unconditionally and survive reset().
  NLCoverage prof({2});
  prof.profile(x.topRows(2));
  CHECK(prof.value() == Approx(1.0));
  prof.reset(2);
  CHECK(prof.count(0) == 2);
  CHECK(verdicts(prof, x.middleRows(2, 2)) == std::vector<bool>{false, true});
  prof.reset(2);
  CHECK(prof.value() == Approx(1.0));
}

TEMPLATE_TEST_CASE("A row with a NaN or an infinity is never new and covers nothing", "[coverage][neuron]",
                   NeuronCoverage, KMNCoverage, NBCoverage, SNACoverage, TKNCoverage, NLCoverage) {
  TestType cov;
  cov.reset(3);
  RowMatrix seeds = profile_rows();
  Mask is_new;
  cov.observe(seeds, is_new);
  if constexpr (detail::has_seeds_done<TestType>::value) cov.seeds_done();
  RowMatrix bad(3, 3);
  bad << kNaN, 100, -100,  //
      std::numeric_limits<float>::infinity(), 0, 0, -100, 100, kNaN;
  const Index before = cov.size();
  CHECK(verdicts(cov, bad) == std::vector<bool>{false, false, false});
  CHECK(cov.size() == before);
}

TEMPLATE_TEST_CASE("The criteria allocate nothing per batch once sized", "[coverage][neuron]", NeuronCoverage,
                   KMNCoverage, NBCoverage, SNACoverage, TKNCoverage, NLCoverage) {
  auto cov = any_of(TestType({3, 3}), Columns<TestType>(0, 3, TestType({3})));
  cov.reset(6);
  RowMatrix batch = two_layers();
  Mask is_new;
  cov.observe(batch, is_new);  // the seeds
  cov.seeds_done();
  cov.observe(batch, is_new);  // warm up
  const std::size_t before = nnfuzz_test::g_alloc_count.load();
  for (int it = 0; it < 20; ++it) {
    batch.array() += 0.37f;  // new values: some rows new, some not
    cov.observe(batch, is_new);
  }
  CHECK(nnfuzz_test::g_alloc_count.load() == before);
}

TEST_CASE("Neuron criteria reject bad options and mismatched widths, naming the function", "[coverage][neuron]") {
  using Catch::Contains;
  NeuronCoverage nc({3, 2});
  REQUIRE_THROWS_WITH(nc.reset(6), Contains("NeuronCoverage::reset()") && Contains("{3, 2}") &&
                                       Contains("adds up to 5") && Contains("6 elements"));
  REQUIRE_THROWS_WITH(TKNCoverage({3, 0}), Contains("TKNCoverage()") && Contains("layer 1 has width 0"));
  REQUIRE_THROWS_WITH(KMNCoverage({}, 0), Contains("KMNCoverage()") && Contains("'k'") && Contains("got 0"));
  REQUIRE_THROWS_WITH(TKNCoverage({}, -1), Contains("TKNCoverage()") && Contains("got -1"));
  REQUIRE_THROWS_WITH(NeuronCoverage({}, 1.0f), Contains("'threshold'") && Contains("[0, 1)"));
  REQUIRE_THROWS_WITH(NeuronCoverage({}, kNaN, NeuronScaling::none), Contains("'threshold'"));
  KMNCoverage kmnc;
  REQUIRE_THROWS_WITH(kmnc.profile(RowMatrix(0, 3)), Contains("KMNCoverage::profile()") && Contains("no finite row"));
  REQUIRE_THROWS_WITH(kmnc.profile(RowMatrix::Constant(2, 3, kNaN)), Contains("no finite row"));
  kmnc.profile(profile_rows());
  REQUIRE_THROWS_WITH(kmnc.reset(4), Contains("KMNCoverage::reset()") && Contains("3 neurons"));
  REQUIRE_THROWS_WITH(kmnc.profile(RowMatrix::Zero(1, 4)), Contains("4 columns"));
  RowVector lo(2), hi(2);
  lo << 0, 3;
  hi << 1, 2;
  REQUIRE_THROWS_WITH(SNACoverage().set_ranges(lo, hi), Contains("SNACoverage::set_ranges()") && Contains("neuron 1"));
  kmnc.reset(3);
  Mask is_new;
  REQUIRE_THROWS_WITH(kmnc.observe(RowMatrix::Zero(1, 2), is_new), Contains("KMNCoverage::observe()"));
  REQUIRE_THROWS_WITH(NLCoverage({}, -1.0), Contains("NLCoverage()") && Contains("'tolerance'"));
  REQUIRE_THROWS_WITH(NLCoverage({}, 0.0, 4).reset(5), Contains("NLCoverage::reset()") && Contains("max_layer_width"));
  REQUIRE_THROWS_WITH(NLCoverage({2, 2}).reset(3), Contains("NLCoverage::reset()") && Contains("adds up to 4"));
  REQUIRE_THROWS_WITH(NLCoverage().profile(RowMatrix::Constant(1, 2, kNaN)), Contains("no finite row"));
}

namespace {
// A scripted part: new when column 0 is positive; counts seeds_done() calls; optional radius.
struct SignCoverage {
  float t = 0.5f;
  int seeds_done_calls = 0;
  Index dim = 0, accepted = 0;
  const float* last_data = nullptr;
  Index last_cols = 0;
  void reset(Index d) { dim = d; }
  void observe(const Eigen::Ref<const RowMatrix>& v, Mask& is_new) {
    last_data = v.data();
    last_cols = v.cols();
    is_new = (v.col(0).array() > 0);
    accepted += is_new.count();
  }
  Index size() const { return accepted; }
  void seeds_done() { ++seeds_done_calls; }
  float radius() const { return t; }
};
}  // namespace

TEST_CASE("AnyCoverage, AllCoverage and Columns", "[coverage][combine]") {
  RowMatrix v(4, 3);
  v << 1, -1, 9,  // part on column 0 says new, on column 1 not
      -1, 1, 9,   //
      1, 1, 9,    //
      -1, -1, 9;
  auto any = any_of(Columns<SignCoverage>(0, 1), Columns<SignCoverage>(1, 2, SignCoverage{0.25f}));
  auto all = all_of(Columns<SignCoverage>(0, 1), Columns<SignCoverage>(1, 1), NoCoverage());
  any.reset(3);
  all.reset(3);
  CHECK(verdicts(any, v) == std::vector<bool>{true, true, true, false});
  CHECK(verdicts(all, v) == std::vector<bool>{false, false, false, false});  // NoCoverage never agrees
  CHECK(any.size() == 3);
  // Each part saw its own columns, without a copy, and observed every row.
  const auto& second = any.part<1>();
  CHECK(second.first() == 1);
  CHECK(second.policy().last_cols == 2);
  CHECK(second.policy().last_data == v.data() + 1);
  CHECK(second.policy().dim == 2);
  CHECK(any.part<0>().policy().size() == 2);
  // seeds_done() and radius() are forwarded (the first part's radius).
  any.seeds_done();
  CHECK(any.part<0>().policy().seeds_done_calls == 1);
  CHECK(any.part<1>().policy().seeds_done_calls == 1);
  CHECK(any.radius() == 0.5f);
  static_assert(detail::has_radius<decltype(any)>::value, "radius forwarded");
  static_assert(!detail::has_radius<AnyCoverage<NoCoverage, KMNCoverage>>::value, "no radius when no part has one");
  static_assert(!detail::has_radius<Columns<NoCoverage>>::value, "Columns forwards only what exists");

  auto both = AllCoverage(SignCoverage{}, Columns<SignCoverage>(1, 1));
  both.reset(3);
  CHECK(verdicts(both, v) == std::vector<bool>{false, false, true, false});
  CHECK(both.size() == 1);

  REQUIRE_THROWS_WITH(Columns<NoCoverage>(2, 2).reset(3),
                      Catch::Contains("Columns::reset()") && Catch::Contains("[2, 4)"));
  REQUIRE_THROWS_WITH(Columns<NoCoverage>(0, 0), Catch::Contains("Columns()"));
}

TEST_CASE("Combining L2 novelty on the logits with KMNC on the hidden neurons", "[coverage][combine]") {
  // Coverage = 3 hidden neurons then 1 logit. KMNC takes its ranges from the seeds, the
  // calibrated radius from the first mutants: both through the forwarded seeds_done().
  auto cov = any_of(Columns<KMNCoverage>(0, 3, KMNCoverage({3}, 4)),
                    Columns<CalibratedCoverage>(3, 1, CalibratedCoverage(0.5)));
  cov.reset(4);
  RowMatrix seeds(2, 4);
  seeds << 0, 0, 1, 0,  //
      4, 2, 1, 1;
  CHECK(verdicts(cov, seeds) == std::vector<bool>{true, true});
  cov.seeds_done();
  CHECK(cov.part<0>().policy().profiled());
  CHECK(cov.part<0>().policy().covered() == 4);
  RowMatrix mutants(2, 4);
  // The L2 part calibrates on these: distances to the nearest seed logit 0 and 0.5, radius just
  // above their median 0.5, so neither is new for it.
  mutants << 1, 1, 1, 0,  // new sections for neuron 0 (s1) and neuron 1 (s2): new
      0, 0, 1, 0.5f;      // KMNC: the sections of seed 0, seen; L2: inside the radius: not new
  CHECK(verdicts(cov, mutants) == std::vector<bool>{true, false});
  CHECK(cov.part<1>().policy().calibrated());
  CHECK(cov.radius() > 0);
}

TEST_CASE("CoverageSignal::neurons and neuron_layers()", "[coverage][neuron][targets]") {
  Mlp<float> net({4, 3, 2, 2});
  net.init_uniform(1.0f, 7);
  CHECK(neuron_layers(net) == LayerWidths{3, 2});
  CHECK(neuron_layers(net, CoverageSignal::neurons_and_logits) == LayerWidths{3, 2, 2});
  CHECK(neuron_layers(net, CoverageSignal::logits) == LayerWidths{2});
  CHECK(neuron_layers(net, CoverageSignal::sum_abs_logits) == LayerWidths{1});
  REQUIRE_THROWS_WITH(neuron_layers(Mlp<float>({4, 2})), Catch::Contains("no hidden layer"));
  RowMatrix x(3, 4);
  x << 0.1f, 0.9f, 0.3f, 0.5f,  //
      1, 0, 0, 1,               //
      -1, 0.5f, 0.2f, 0;
  NanTarget target(net, CoverageSignal::neurons);
  NanTarget::Output out;
  target.evaluate(x, out);
  REQUIRE(out.coverage.rows() == 3);
  REQUIRE(out.coverage.cols() == 5);
  CHECK(out.coverage.leftCols(3) == out.trace.post[0]);
  CHECK(out.coverage.rightCols(2) == out.trace.post[1]);
  NanTarget with_logits(net, CoverageSignal::neurons_and_logits);
  with_logits.evaluate(x, out);
  REQUIRE(out.coverage.cols() == 7);
  CHECK(out.coverage.rightCols(2) == out.trace.logits());
  auto pair = make_half_storage_pair(net, CoverageSignal::neurons);
  decltype(pair)::Output pout;
  pair.evaluate(x, pout);
  REQUIRE(pout.coverage.cols() == 5);
  CHECK(pout.coverage.leftCols(3) == pout.reference_trace.post[0]);
}

TEST_CASE("A Fuzzer with KMNCoverage over a tiny network's neurons grows the corpus", "[coverage][neuron][fuzzer]") {
  Mlp<float> net({4, 6, 5, 3});
  net.init_uniform(1.0f, 3);
  RowMatrix seeds(4, 4);
  seeds << 0.1f, 0.2f, 0.3f, 0.4f,  //
      0.5f, 0.5f, 0.5f, 0.5f,       //
      0.9f, 0.1f, 0.9f, 0.1f,       //
      0.3f, 0.7f, 0.2f, 0.6f;
  FuzzOptions options;
  options.batch_size = 50;
  options.max_executions = 2004;
  options.seed = 1;
  Fuzzer<NanTarget, RecentSampler, GaussianMutator, KMNCoverage> fuzzer(
      NanTarget(net, CoverageSignal::neurons), RecentSampler(), GaussianMutator(0.1f),
      KMNCoverage(neuron_layers(net), 10), NonFiniteObjective(), options);
  const FuzzResult result = fuzzer.run(seeds);
  const KMNCoverage& kmnc = fuzzer.coverage();
  CHECK(kmnc.profiled());                          // ranges from the seeds
  CHECK(kmnc.total() == 11 * 10);                  // 6 + 5 neurons, 10 sections each
  CHECK(result.stats.corpus_size > 4);             // mutants covered new sections
  CHECK(result.stats.corpus_size == kmnc.size());  // every seed, then every new mutant
  CHECK(kmnc.ratio() > 0);
  CHECK(kmnc.ratio() < 1);
  CHECK(result.stats.coverage_radius == 0);  // no radius(): nothing to report as a radius
  INFO("KMNC " << 100 * kmnc.ratio() << "%, corpus " << result.stats.corpus_size);
}
