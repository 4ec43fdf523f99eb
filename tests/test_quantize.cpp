// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include "support/blobs.hpp"
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/models/prune.hpp>
#include <nnfuzz/models/quantize.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>
#include <nnfuzz/models/train.hpp>

#include "support/alloc_tracker.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace nnfuzz;

namespace {
using nnfuzz_test::blobs;
Mlp<float> trained_blobs_net(const RowMatrix& x, const Eigen::VectorXi& y) {
  Mlp<float> net({8, 32, 16, 3});
  net.init_truncated_normal(0, 7);
  TrainOptions o;
  o.optimizer = Optimizer::adam;
  o.learning_rate = 0.01f;
  o.batch_size = 50;
  o.steps = 300;
  o.seed = 3;
  train(net, x, y, o);
  return net;
}
Mlp<float> random_net(std::vector<Index> sizes, std::uint64_t seed) {
  Mlp<float> net(sizes);
  net.init_truncated_normal(0, seed);
  Rng rng(seed + 1);
  for (auto& l : net.layers()) rng.fill_uniform(l.bias.data(), l.bias.size(), -0.2f, 0.2f);
  return net;
}
// The hand-computed example: 2 inputs, 2 hidden, 1 logit.
Mlp<float> tiny_net() {
  Mlp<float> net({2, 2, 1});
  net.layers()[0].weights << -1, 0.5,  // inputs x outputs
      0.25, 2;
  net.layers()[0].bias << 0.1f, -0.2f;
  net.layers()[1].weights << 1, -0.25;
  net.layers()[1].bias << 0.25f;
  return net;
}
}  // namespace

TEST_CASE("quantize_int8: weights, biases and ranges match a hand computation", "[quantize]") {
  const Mlp<float> net = tiny_net();
  RowMatrix cal(3, 2);
  cal << -1, 2.984375,  // input range [-1, 2.984375] = 255 steps of 1/64, 0.0 at code 64
      0.5, 1,           //
      0, 0;
  const Int8Mlp q = quantize_int8(net, cal);
  CHECK(q.sizes() == net.sizes());
  CHECK(q.input_params().scale == 0.015625f);
  CHECK(q.input_params().zero_point == 64);
  const Int8Layer& l0 = q.layers()[0];
  // Per column: scale = max|w| / 127; codes = round(w / scale): 0.5 / (2/127) = 31.75 -> 32.
  CHECK(l0.weight_scale(0) == 1.0f / 127.0f);
  CHECK(l0.weight_scale(1) == 2.0f / 127.0f);
  CHECK(l0.weights(0, 0) == -127);
  CHECK(l0.weights(1, 0) == 32);
  CHECK(l0.weights(0, 1) == 32);
  CHECK(l0.weights(1, 1) == 127);
  // Bias at scale (1/64)(1/127) = 1/8128 and (1/64)(2/127) = 1/4064: ±812.8 -> ±813.
  CHECK(l0.bias(0) == 813);
  CHECK(l0.bias(1) == -813);
  // Hidden range: the largest ReLU output over the calibration, row 0's second unit:
  // 0.5·(-1) + 2·2.984375 − 0.2 = 5.26875; zero point 0 (ReLU outputs are >= 0).
  CHECK(l0.output.scale == Approx(5.26875 / 255).epsilon(1e-6));
  CHECK(l0.output.zero_point == 0);
  const Int8Layer& l1 = q.layers()[1];
  CHECK(l1.weights(0, 0) == 127);
  CHECK(l1.weights(1, 0) == -32);  // -0.25 / (1/127) = -31.75
  CHECK(l1.bias(0) ==
        static_cast<std::int32_t>(std::nearbyint(0.25 / (double(l0.output.scale) * double(l1.weight_scale(0))))));
  CHECK(l1.bias(0) == 1537);  // 0.25 · 127 · 255 / 5.26875 = 1536.65
  // Close to the float logits on the calibration rows (steps of 1/64 and 5.27/255).
  const RowMatrix lf = net.logits(cal), lq = q.logits(cal);
  CHECK((lf - lq).cwiseAbs().maxCoeff() < 0.05f);
  CHECK((lf - lq).cwiseAbs().maxCoeff() > 0);
}

TEST_CASE("Int8Mlp: the forward pass matches a hand computation in integers", "[quantize]") {
  // Input x ≈ (code − 64)/64; layer 0 as quantize_int8 gives it above, its output in steps of
  // 1/32; layer 1: w = (1, −64/127), bias 0.25 at scale (1/32)(1/127) = 1/4064 -> 1016.
  Int8Layer l0, l1;
  l0.weights.resize(2, 2);
  l0.weights << -127, 32, 32, 127;
  l0.weight_scale.resize(2);
  l0.weight_scale << 1.0f / 127, 2.0f / 127;
  l0.bias.resize(2);
  l0.bias << 813, -813;
  l0.output = {1.0f / 32, 0};
  l1.weights.resize(2, 1);
  l1.weights << 127, -64;
  l1.weight_scale.resize(1);
  l1.weight_scale << 1.0f / 127;
  l1.bias.resize(1);
  l1.bias << 1016;
  const Int8Mlp q({1.0f / 64, 64}, {l0, l1});
  RowMatrix x(3, 2);
  x << 0.5, 1,                                             //
      -2, 10,                                              // saturates: codes 0 and 255
      std::numeric_limits<float>::quiet_NaN(), 0.0078125;  // NaN -> 0.0; 0.5 steps round to even
  Int8Mlp::Trace t;
  q.forward(x, t);
  // Input codes: x·64 + 64.
  CHECK(t.codes[0](0, 0) == 96);
  CHECK(t.codes[0](0, 1) == 128);
  CHECK(t.codes[0](1, 0) == 0);
  CHECK(t.codes[0](1, 1) == 255);
  CHECK(t.codes[0](2, 0) == 64);
  CHECK(t.codes[0](2, 1) == 64);  // 0.5 rounds to 0 (even)
  CHECK(t.codes[0].cols() == 4);  // padded to a multiple of 4 with zeros
  CHECK(t.codes[0](0, 2) == 0);
  // Sums of codes × weight codes: 96·(−127) + 128·32 = −8096, 96·32 + 128·127 = 19328.
  CHECK(t.sums[0](0, 0) == -8096);
  CHECK(t.sums[0](0, 1) == 19328);
  // + bias − 64 · Σ weight codes: −8096 + 813 + 64·95 = −1203, 19328 − 813 − 64·159 = 8339.
  // × (1/64)(1/127)·32 = 1/254: −4.7 -> ReLU -> 0; × (1/64)(2/127)·32 = 1/127: 65.66 -> 66.
  CHECK(t.codes[1](0, 0) == 0);
  CHECK(t.codes[1](0, 1) == 66);
  // Logit: 66·(−64) + 1016 = −3208 at scale (1/32)(1/127).
  CHECK(t.sums[1](0, 0) == 66 * -64);
  CHECK(t.logits()(0, 0) == static_cast<float>(-3208.0 * (double(1.0f / 32) * double(1.0f / 127))));
  // Float for comparison: h = ReLU(−0.5 + 0.25 + 0.1, 0.252 + 2 − 0.2) = (0, 2.052), logit −0.784.
  CHECK(t.logits()(0, 0) == Approx(-0.789).margin(0.001));
  CHECK(q.logits(x.topRows(1)) == t.logits().topRows(1));
  // Shapes that do not chain, bad scales and zero points are refused.
  REQUIRE_THROWS_WITH(Int8Mlp({0.0f, 0}, {l0, l1}), Catch::Contains("Int8Mlp()") && Catch::Contains("input scale"));
  REQUIRE_THROWS_WITH(Int8Mlp({1.0f, 300}, {l0, l1}), Catch::Contains("zero point") && Catch::Contains("300"));
  REQUIRE_THROWS_WITH(Int8Mlp({1.0f, 0}, {l1, l0}), Catch::Contains("layer 1 takes 2 inputs, layer 0 gives 1"));
  REQUIRE_THROWS_WITH(q.forward(RowMatrix(1, 3), t),
                      Catch::Contains("Int8Mlp::forward()") && Catch::Contains("3 columns"));
}

TEST_CASE("quantize_int8: a trained net keeps its accuracy - int8 logits are close to float", "[quantize]") {
  RowMatrix x, xt;
  Eigen::VectorXi y, yt;
  blobs(x, y, 2000, 1);
  blobs(xt, yt, 1000, 2);
  const Mlp<float> net = trained_blobs_net(x, y);
  const double af = accuracy(net, xt, yt);
  REQUIRE(af > 0.95);
  const RowMatrix lf = net.logits(xt), lf_cal = net.logits(x.topRows(300));
  const float mean_logit = lf.cwiseAbs().mean(), spread = lf_cal.cwiseAbs().maxCoeff();
  struct Case {
    const char* name;
    Int8Options o;
  };
  Int8Options pt, pct, ql;
  pt.per_channel = false;
  pct.percentile = 99.9f;
  ql.quantize_logits = true;
  for (const Case& c :
       {Case{"default", {}}, Case{"per tensor", pt}, Case{"percentile 99.9", pct}, Case{"quantized logits", ql}}) {
    const Int8Mlp q = quantize_int8(net, x.topRows(300), c.o);
    const RowMatrix lq = q.logits(xt);
    const double aq = accuracy(q, xt, yt);
    Index agree = 0;
    for (Index r = 0; r < xt.rows(); ++r) {
      Index a = 0, b = 0;
      lf.row(r).maxCoeff(&a);
      lq.row(r).maxCoeff(&b);
      agree += a == b;
    }
    // Inputs outside the calibrated range saturate (held-out rows do): the mean error is small,
    // the largest is bounded on the calibration rows themselves.
    const float mean_err = (lq - lf).cwiseAbs().mean();
    const float cal_err = (q.logits(x.topRows(300)) - lf_cal).cwiseAbs().maxCoeff();
    INFO(c.name << ": float accuracy " << af << ", int8 " << aq << ", argmax agreement " << agree << "/" << xt.rows()
                << ", mean |logit error| " << mean_err << " (mean |logit| " << mean_logit
                << "), on the calibration rows max " << cal_err << " (max |logit| " << spread << ")");
    CHECK(std::abs(aq - af) < 0.01);
    CHECK(agree >= xt.rows() * 99 / 100);
    CHECK(mean_err < 0.02f * mean_logit);
    CHECK(mean_err > 0);
    CHECK(cal_err < (c.o.percentile < 100 ? 0.1f : 0.05f) * spread);
  }
  // The calibration decides: the same inputs give the same bits.
  CHECK(quantize_int8(net, x.topRows(300)).logits(xt) == quantize_int8(net, x.topRows(300)).logits(xt));
}

TEST_CASE("Int8Mlp: a row gives the same bits alone and in any batch, with every kernel", "[quantize]") {
  // Sizes that exercise the padding (50 inputs, 37 and 21 units) and batches that are not a
  // multiple of the kernels' row blocks.
  const Mlp<float> net = random_net({50, 37, 21, 10}, 4);
  RowMatrix cal(200, 50), x(23, 50);
  Rng rng(5);
  rng.fill_uniform(cal.data(), cal.size(), -1, 1);
  rng.fill_uniform(x.data(), x.size(), -1.2f, 1.2f);  // some beyond the calibrated range
  const Int8Mlp q = quantize_int8(net, cal);
  const RowMatrix all = q.logits(x);
  for (Index r = 0; r < x.rows(); ++r) REQUIRE(q.logits(x.row(r)) == all.row(r));
  CHECK(q.logits(x.middleRows(7, 9)) == all.middleRows(7, 9));
  CHECK(q.logits(x.topRows(0)).rows() == 0);

  // The kernels compute the same integers, on random codes and weights of every size class.
  for (Index rows : {1, 5, 6, 13}) {
    for (Index quads : {1, 7}) {
      for (Index n_pad : {16, 48, 64, 80, 208}) {
        Int8Trace::Codes codes(rows, 4 * quads);
        std::vector<std::int8_t> w(static_cast<std::size_t>(quads * n_pad * 4));
        for (Index i = 0; i < codes.size(); ++i) codes.data()[i] = static_cast<std::uint8_t>(rng.uniform_index(256));
        for (auto& v : w) v = static_cast<std::int8_t>(static_cast<int>(rng.uniform_index(255)) - 127);
        Int8Trace::Sums ref(rows, n_pad), got(rows, n_pad);
        detail::int8_gemm(detail::Int8Kernel::scalar, codes.data(), rows, quads, w.data(), n_pad, ref.data());
        for (auto k : {detail::Int8Kernel::avx2, detail::Int8Kernel::avx512_vnni}) {
          if (!detail::int8_kernel_available(k)) continue;
          got.setConstant(-1);
          detail::int8_gemm(k, codes.data(), rows, quads, w.data(), n_pad, got.data());
          INFO("kernel " << static_cast<int>(k) << " rows " << rows << " quads " << quads << " n_pad " << n_pad);
          CHECK(got == ref);
        }
      }
    }
  }
  // The extremes: 255 × 127 everywhere, at the largest fan-in, does not overflow.
  const Index quads = detail::kInt8MaxFanIn / 4;
  Int8Trace::Codes codes = Int8Trace::Codes::Constant(2, 4 * quads, 255);
  std::vector<std::int8_t> w(static_cast<std::size_t>(quads * 16 * 4), 127);
  for (std::size_t i = 0; i < w.size(); i += 64) std::fill(w.begin() + i, w.begin() + i + 4, -127);  // column 0
  for (auto k : {detail::Int8Kernel::scalar, detail::Int8Kernel::avx2, detail::Int8Kernel::avx512_vnni}) {
    if (!detail::int8_kernel_available(k)) continue;
    Int8Trace::Sums s(2, 16);
    detail::int8_gemm(k, codes.data(), 2, quads, w.data(), 16, s.data());
    CHECK(s(1, 0) == -std::int64_t{255} * 127 * detail::kInt8MaxFanIn);
    CHECK(s(1, 1) == std::int64_t{255} * 127 * detail::kInt8MaxFanIn);
  }
}

TEST_CASE("Int8Mlp: a forward pass at an unchanged batch size allocates nothing", "[quantize]") {
  const Mlp<float> net = random_net({784, 200, 100, 10}, 6);
  RowMatrix x(100, 784);
  Rng rng(7);
  rng.fill_uniform(x.data(), x.size(), 0, 1);
  const Int8Mlp q = quantize_int8(net, x);
  Int8Mlp::Trace t;
  q.forward(x, t);
  const std::size_t before = nnfuzz_test::g_alloc_count.load();
  q.forward(x, t);
  CHECK(nnfuzz_test::g_alloc_count.load() == before);
}

TEST_CASE("quantize_int8: bad calibration, weights and options are refused with their values", "[quantize]") {
  Mlp<float> net = tiny_net();
  RowMatrix cal = RowMatrix::Zero(4, 2);
  REQUIRE_THROWS_WITH(quantize_int8(net, RowMatrix::Zero(4, 3)), Catch::Contains("quantize_int8()") &&
                                                                     Catch::Contains("'calibration' has 3 columns") &&
                                                                     Catch::Contains("takes 2"));
  REQUIRE_THROWS_WITH(quantize_int8(net, RowMatrix(0, 2)),
                      Catch::Contains("quantize_int8()") && Catch::Contains("'calibration' is empty"));
  cal(2, 1) = std::numeric_limits<float>::infinity();
  REQUIRE_THROWS_WITH(quantize_int8(net, cal), Catch::Contains("quantize_int8()") && Catch::Contains("'calibration'") &&
                                                   Catch::Contains("inf") && Catch::Contains("row 2, column 1"));
  cal(2, 1) = 0;
  Int8Options o;
  o.percentile = 40;
  REQUIRE_THROWS_WITH(quantize_int8(net, cal, o),
                      Catch::Contains("quantize_int8()") && Catch::Contains("'percentile'") && Catch::Contains("40"));
  net.layers()[1].weights(1, 0) = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(quantize_int8(net, cal), Catch::Contains("quantize_int8()") &&
                                                   Catch::Contains("weight (1, 0) of layer 1") &&
                                                   Catch::Contains("nan"));
  net = tiny_net();
  net.layers()[0].bias(1) = -std::numeric_limits<float>::infinity();
  REQUIRE_THROWS_WITH(quantize_int8(net, cal), Catch::Contains("bias 1 of layer 0") && Catch::Contains("-inf"));
  REQUIRE_THROWS_WITH(quantize_int8(Mlp<float>({70000, 1}), RowMatrix::Zero(1, 70000)),
                      Catch::Contains("70000 inputs") && Catch::Contains("65536"));
  REQUIRE_THROWS_WITH(quantize_int8(Mlp<float>(), RowMatrix::Zero(1, 1)), Catch::Contains("no layers"));
  // An all-zero calibration (range {0}) and an all-zero column are valid.
  const Int8Mlp q = quantize_int8(Mlp<float>({2, 3, 2}), cal);
  CHECK(q.logits(cal) == RowMatrix::Zero(4, 2));
}

TEST_CASE("Int8Pair: the fuzzer finds a planted float/int8 disagreement, and it replays", "[quantize][targets]") {
  // Identity hidden layer; logits (h0, h1 + 0.001). Float says 0 when x0 > x1 + 0.001; int8
  // rounds the inputs to steps of 1/255 and the bias to 32/(255·127): it says 1 whenever x0 and
  // x1 share a step. Inputs in the same step with x0 − x1 in (0.001, 1/255) disagree.
  Mlp<float> net({2, 2, 2});
  net.layers()[0].weights << 1, 0, 0, 1;
  net.layers()[1].weights << 1, 0, 0, 1;
  net.layers()[1].bias << 0, 0.001f;
  RowMatrix cal(2, 2);
  cal << 0, 0, 1, 1;
  Int8Pair pair = make_int8_pair(net, cal);
  CHECK(pair.candidate().layers()[1].bias(1) == 32);
  Int8Pair::Output out;
  RowMatrix x(2, 2);
  x << 0.499f, 0.497f,  // float: 0.499 > 0.498 says 0; int8: both code 127 (127.2 and 126.7) says 1
      0.9f, 0.1f;       // both say 0
  pair.evaluate(x, out);
  DisagreementObjective d;
  CHECK(d.disagrees(out, 0));
  CHECK_FALSE(d.disagrees(out, 1));

  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 20000;
  o.seed = 1;
  auto fuzzer = make_fuzzer(make_int8_pair(net, cal), RecentSampler(), GaussianMutator(0.1f), KdTreeCoverage(0.01f),
                            DisagreementObjective(), o);
  RowMatrix seeds(4, 2);
  seeds << 0.2, 0.7, 0.8, 0.3, 0.5, 0.6, 0.1, 0.1;
  const FuzzResult r = fuzzer.run(seeds);
  REQUIRE(r.found());
  const RowVector& f = r.findings.front().input;
  INFO("finding (" << f(0) << ", " << f(1) << "): " << r.findings.front().what << " after "
                   << r.findings.front().execution << " executions");
  CHECK(std::abs(f(0) - f(1)) < 2.0f / 255);  // within a step of each other
  pair.evaluate(f, out);
  CHECK(d.disagrees(out, 0));
  CHECK(fuzzer.replay(f));
}

TEST_CASE("prune_magnitude: the fraction is exact per layer - fine-tuning keeps the pruned weights at zero",
          "[quantize][prune]") {
  RowMatrix x, xt;
  Eigen::VectorXi y, yt;
  blobs(x, y, 2000, 1);
  blobs(xt, yt, 1000, 2);
  Mlp<float> net = trained_blobs_net(x, y);
  const Mlp<float> dense = net;
  const double a0 = accuracy(net, xt, yt);
  const PruneMasks masks = prune_magnitude(net, 0.7f);
  REQUIRE(masks.size() == 3);
  for (std::size_t l = 0; l < 3; ++l) {
    const RowMatrix& w = net.layers()[l].weights;
    const RowMatrix& w0 = dense.layers()[l].weights;
    const auto expect = static_cast<Index>(std::llround(0.7 * static_cast<double>(w.size())));  // 179, 358, 34
    INFO("layer " << l);
    CHECK((w.array() == 0).count() == expect);
    CHECK((masks[l].array() == 0).count() == expect);
    // The pruned ones are the smallest: every kept |w| >= every pruned |w|.
    const float kept_min = (masks[l].array() != 0).select(w0.cwiseAbs(), 1e30f).minCoeff();
    const float pruned_max = (masks[l].array() == 0).select(w0.cwiseAbs(), -1.0f).maxCoeff();
    CHECK(kept_min >= pruned_max);
    CHECK(((masks[l].array() != 0).select(w - w0, 0.0f)).cwiseAbs().maxCoeff() == 0.0f);  // kept: unchanged
    CHECK(net.layers()[l].bias == dense.layers()[l].bias);
  }
  const double a_pruned = accuracy(net, xt, yt);

  TrainOptions o;
  o.optimizer = Optimizer::adam;
  o.learning_rate = 0.005f;
  o.batch_size = 50;
  o.steps = 150;
  o.seed = 9;
  int calls = 0;
  o.after_step = [&calls](Mlp<float>&) { ++calls; };  // the user's hook still runs
  const Mlp<float> before = net;
  train_pruned(net, x, y, masks, o);
  CHECK(calls == 150);
  const double a_tuned = accuracy(net, xt, yt);
  INFO("accuracy dense " << a0 << ", pruned 70% " << a_pruned << ", fine-tuned " << a_tuned);
  for (std::size_t l = 0; l < 3; ++l) {
    const RowMatrix& w = net.layers()[l].weights;
    CHECK(((masks[l].array() == 0).select(w, 0.0f)).cwiseAbs().maxCoeff() == 0.0f);
    for (Index i = 0; i < w.size(); ++i)
      if (masks[l].data()[i] == 0) REQUIRE_FALSE(std::signbit(w.data()[i]));  // +0, never -0
    CHECK(((masks[l].array() != 0).select(w - before.layers()[l].weights, 0.0f)).cwiseAbs().maxCoeff() > 0);
  }
  CHECK(a_tuned > 0.95);
  CHECK(a_tuned >= a_pruned - 0.005);
  // The pruned, fine-tuned net quantizes like any other.
  CHECK(std::abs(accuracy(quantize_int8(net, x.topRows(300)), xt, yt) - a_tuned) < 0.01);

  // Exact with ties: 10 equal weights, 3 pruned (the first 3).
  Mlp<float> flat({5, 2});
  flat.layers()[0].weights.setConstant(0.5f);
  prune_magnitude(flat, 0.3f);
  CHECK((flat.layers()[0].weights.array() == 0).count() == 3);
  CHECK(flat.layers()[0].weights(0, 0) == 0.0f);
  CHECK(flat.layers()[0].weights(1, 1) == 0.5f);
  Mlp<float> all = dense;
  prune_magnitude(all, 1.0f);
  CHECK(all.layers()[0].weights.cwiseAbs().maxCoeff() == 0.0f);
  Mlp<float> none = dense;
  prune_magnitude(none, 0.0f);
  CHECK(none.layers()[1].weights == dense.layers()[1].weights);

  REQUIRE_THROWS_WITH(prune_magnitude(none, 1.5f),
                      Catch::Contains("prune_magnitude()") && Catch::Contains("'fraction'") && Catch::Contains("1.5"));
  REQUIRE_THROWS_WITH(prune_magnitude(none, std::nanf("")), Catch::Contains("'fraction'"));
  REQUIRE_THROWS_WITH(apply_masks(none, PruneMasks(2)), Catch::Contains("apply_masks(): 2 masks for 3 layers"));
  REQUIRE_THROWS_WITH(train_pruned(none, x, y, {masks[1], masks[0], masks[2]}, o),
                      Catch::Contains("apply_masks(): mask 0 is 32 x 16"));
}

TEST_CASE("quantize_int8: a column of denormal weights gets a usable scale, no NaN code", "[quantize]") {
  for (const bool per_channel : {true, false}) {
    Mlp<float> net = tiny_net();
    net.layers()[0].weights.col(1).setConstant(1e-44f);  // denormal: max / 127 underflows to 0
    if (!per_channel) net.layers()[0].weights.col(0).setConstant(2e-44f);
    RowMatrix cal(3, 2);
    cal << 0, 0, 1, 1, -1, 0.5f;
    Int8Options o;
    o.per_channel = per_channel;
    INFO("per_channel " << per_channel);
    const Int8Mlp q = quantize_int8(net, cal, o);
    for (const auto& L : q.layers())
      for (Index j = 0; j < L.weight_scale.size(); ++j) {
        CHECK(L.weight_scale(j) >= std::numeric_limits<float>::min());
        CHECK(std::isfinite(L.weight_scale(j)));
      }
    CHECK(q.layers()[0].weights.col(1).cwiseAbs().maxCoeff() == 0);  // 1e-44 is 0 to int8
    // The logits stay close to the float network's (the tiny weights are ~0 there too).
    MlpTrace<float> t;
    net.forward(cal, t);
    const RowMatrix il = q.logits(cal);
    CHECK((il - t.logits()).cwiseAbs().maxCoeff() < 0.05f);
  }
}

TEST_CASE("quantize_int8: a calibration row that drives an activation to infinity is refused naming layer and row",
          "[quantize]") {
  Mlp<float> net = tiny_net();
  net.layers()[0].weights(0, 1) = 3e38f;
  RowMatrix cal(3, 2);
  cal << 0, 0, 0.5f, 0, 2, 0;  // row 2: 2 x 3e38 overflows to +inf in hidden unit 1
  REQUIRE_THROWS_WITH(quantize_int8(net, cal), Catch::Contains("quantize_int8()") && Catch::Contains("row 2") &&
                                                   Catch::Contains("layer 0") && Catch::Contains("inf"));
}
