// SPDX-License-Identifier: MIT
// Tests of nnfuzz/adapters/libtorch.hpp on the small TorchScript models that
// tools/train_torch_mnist.py --test-models writes (ctest fixture adapters.models).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/adapters/libtorch.hpp>
#include <nnfuzz/models/mlp_file.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "adapter_support.hpp"
#include "support/alloc_tracker.hpp"

namespace {

using nnfuzz::Index;
using nnfuzz::RowMatrix;

using adapter_test::have;
using adapter_test::model_path;
using adapter_test::random_batch;

nnfuzz::LibTorchOptions mlp_options() {
  nnfuzz::LibTorchOptions o;
  o.input_shape = {784};
  o.output_names = {"logits", "hidden"};
  o.select.coverage = {"hidden"};
  o.select.outputs = {"logits"};
  return o;
}

RowMatrix as_matrix(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return Eigen::Map<const RowMatrix>(c.data_ptr<float>(), c.size(0), c.numel() / c.size(0));
}

std::string message_of(const std::function<void()>& make) {
  try {
    make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace

TEST_CASE("LibTorchModel: outputs equal LibTorch called directly, and nnfuzz's Mlp", "[adapters][libtorch]") {
  if (!have("tiny-mlp.pt")) return;
  nnfuzz::LibTorchModel model(model_path("tiny-mlp.pt"), mlp_options());
  CHECK(model.input_dim() == 784);
  CHECK(model.fetched() == std::vector<std::string>{"hidden", "logits"});
  CHECK(model.module_outputs() == std::vector<std::string>{"logits", "hidden"});
  RowMatrix x = random_batch(7, 1);
  nnfuzz::NamedOutputs out;
  model.evaluate(x, out);
  torch::jit::Module direct = torch::jit::load(model_path("tiny-mlp.pt"));
  torch::NoGradGuard no_grad;
  const auto r = direct.forward({torch::from_blob(x.data(), {7, 784}, torch::kFloat32)}).toTuple();
  CHECK(out["logits"] == as_matrix(r->elements()[0].toTensor()));  // the same engine: bit for bit
  CHECK(out["hidden"] == as_matrix(r->elements()[1].toTensor()));
  CHECK(out.coverage == out["hidden"]);
  const nnfuzz::Mlp<float> mlp = nnfuzz::load_mlp(model_path("tiny-mlp.bin"));
  CHECK((mlp.logits(x) - out["logits"]).cwiseAbs().maxCoeff() < 1e-5f);
  // The dict-returning module names its outputs itself; the same numbers.
  nnfuzz::LibTorchOptions o = mlp_options();
  o.output_names = {};
  nnfuzz::LibTorchModel dict(model_path("tiny-mlp-dict.pt"), o);
  nnfuzz::NamedOutputs d;
  dict.evaluate(x, d);
  CHECK(d["logits"] == out["logits"]);
  CHECK(d["hidden"] == out["hidden"]);
}

TEST_CASE("LibTorchModel: a CNN with N x 1 x 28 x 28 input, tuple names, coverage reductions", "[adapters][libtorch]") {
  if (!have("tiny-cnn.pt")) return;
  nnfuzz::LibTorchOptions o = mlp_options();
  nnfuzz::LibTorchModel flat(model_path("tiny-cnn.pt"), o);
  o.input_shape = {1, 28, 28};
  o.select.coverage = {"logits", "hidden"};
  o.select.outputs = {};
  o.select.reduce = nnfuzz::CoverageReduce::sum_abs;
  nnfuzz::LibTorchModel image(model_path("tiny-cnn.pt"), o);
  const RowMatrix x = random_batch(5, 2);
  nnfuzz::NamedOutputs a, b;
  flat.evaluate(x, a);
  image.evaluate(x, b);
  CHECK(a["hidden"].cols() == 64);
  CHECK((a["logits"] - b["logits"]).cwiseAbs().maxCoeff() < 1e-5f);
  REQUIRE(b.coverage.cols() == 2);
  CHECK(b.coverage.col(0).isApprox(b["logits"].cwiseAbs().rowwise().sum()));
  // Unnamed tuple elements are "0", "1", ….
  o = mlp_options();
  o.output_names = {};
  o.select.coverage = {"1"};
  o.select.outputs = {"0"};
  nnfuzz::LibTorchModel unnamed(model_path("tiny-cnn.pt"), o);
  unnamed.evaluate(x, b);
  CHECK(b["0"] == a["logits"]);
}

TEST_CASE("LibTorchModel: clear errors", "[adapters][libtorch]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(message_of([] { nnfuzz::LibTorchModel("/nonexistent/m.pt", mlp_options()); }),
             Contains("LibTorchModel(): TorchScript file '/nonexistent/m.pt' does not exist"));
  if (!have("tiny-mlp.pt") || !have("tiny-argmax.pt") || !have("tiny-mlp.onnx")) return;
  const std::string path = model_path("tiny-mlp.pt");
  CHECK_THAT(message_of([&] { nnfuzz::LibTorchModel(model_path("tiny-mlp.onnx"), mlp_options()); }),
             Contains("LibTorchModel(): LibTorch cannot load file '"));
  nnfuzz::LibTorchOptions o = mlp_options();
  o.select.outputs = {"logit"};
  const std::string unknown = message_of([&] { nnfuzz::LibTorchModel(path, o); });
  CHECK_THAT(unknown, Contains("has no output 'logit'"));
  CHECK_THAT(unknown, Contains("its outputs are: logits, hidden"));
  o = mlp_options();
  o.output_names = {"logits"};
  CHECK_THAT(message_of([&] { nnfuzz::LibTorchModel(path, o); }),
             Contains("option 'output_names' has 1 names, file '" + path + "' returns a tuple of 2"));
  o = mlp_options();
  o.input_shape = {28, 28, 2};
  CHECK_THAT(message_of([&] { nnfuzz::LibTorchModel(path, o); }),
             Contains("option 'input_shape' {28, 28, 2} (1568 floats per input) does not fit file '" + path +
                      "': LibTorch says: RuntimeError: mat1 and mat2 shapes cannot be multiplied"));
  o = mlp_options();
  o.output_names = {"logits", "label"};
  o.select.coverage = {"logits"};
  o.select.outputs = {"label"};
  CHECK_THAT(message_of([&] { nnfuzz::LibTorchModel(model_path("tiny-argmax.pt"), o); }),
             Contains("output 'label' of file '" + model_path("tiny-argmax.pt") +
                      "' is a Long tensor, not a floating-point one"));
  nnfuzz::LibTorchModel model(path, mlp_options());
  nnfuzz::NamedOutputs out;
  CHECK_THAT(message_of([&] { model.evaluate(RowMatrix::Zero(2, 785), out); }),
             Contains("LibTorchModel::evaluate(): the batch has 785 columns, the module takes 784"));
}

TEST_CASE("LibTorchModel: bfloat16 runs close to float32, and allocations per evaluate()", "[adapters][libtorch]") {
  if (!have("tiny-mlp.pt")) return;
  nnfuzz::LibTorchModel f32(model_path("tiny-mlp.pt"), mlp_options());
  nnfuzz::LibTorchOptions o = mlp_options();
  o.dtype = torch::kBFloat16;
  nnfuzz::LibTorchModel bf16(model_path("tiny-mlp.pt"), o);
  const RowMatrix x = random_batch(16, 3);
  nnfuzz::NamedOutputs a, b;
  f32.evaluate(x, a);
  bf16.evaluate(x, b);
  const float diff = (a["logits"] - b["logits"]).cwiseAbs().maxCoeff();
  CHECK(diff > 0.0f);  // it did run in another precision
  CHECK(diff < 0.1f);
  // The float module is untouched by the other adapter's conversion (each loaded its own).
  f32.evaluate(x, b);
  CHECK(a["logits"] == b["logits"]);
  auto count = [&](Index rows) {
    const RowMatrix y = random_batch(rows, 4);
    f32.evaluate(y, a);
    nnfuzz_test::g_alloc_count = 0;
    f32.evaluate(y, a);
    return nnfuzz_test::g_alloc_count.load();
  };
  const std::size_t at10 = count(10), at100 = count(100);
  CHECK(at10 == at100);  // nothing per input
  WARN("LibTorch: " << at100 << " operator-new allocations per evaluate() (LibTorch's tensors and dispatch)");
}

TEST_CASE("LibTorchModel: a short fuzz run is reproducible, and the planted NaN is found", "[adapters][libtorch]") {
  if (!have("tiny-cnn.pt") || !have("planted-nan.pt")) return;
  nnfuzz::FuzzOptions fo;
  fo.max_executions = 1000;
  fo.seed = 3;
  auto run = [&] {
    auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::LibTorchModel(model_path("tiny-cnn.pt"), mlp_options()),
                                      nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}),
                                      nnfuzz::BruteForceCoverage(0.05f), nnfuzz::NonFiniteObjective(), fo);
    return fuzzer.run(random_batch(4, 5));
  };
  const nnfuzz::FuzzResult r1 = run(), r2 = run();
  CHECK(!r1.found());
  CHECK(r1.stats.corpus_size > 4);
  CHECK(r1.stats.corpus_size == r2.stats.corpus_size);

  nnfuzz::LibTorchOptions o;
  o.input_shape = {784};
  o.output_names = {"logits", "softmax", "cross_entropy", "hidden"};
  o.select.coverage = {"logits"};
  o.select.reduce = nnfuzz::CoverageReduce::sum_abs;
  o.select.outputs = {"softmax", "cross_entropy"};
  fo.max_executions = 5000;
  fo.seed = 1;
  auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::LibTorchModel(model_path("planted-nan.pt"), o), nnfuzz::RecentSampler(),
                                    nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}), nnfuzz::KdTreeCoverage(0.707f),
                                    nnfuzz::NonFiniteObjective(), fo);
  const nnfuzz::FuzzResult r = fuzzer.run(RowMatrix::Zero(2, 784));
  REQUIRE(r.found());
  CHECK(r.findings[0].depth >= 1);         // the seeds themselves are finite
  CHECK(r.findings[0].input(0) > 0.005f);  // pixel 0 moved off 0: the planted trigger
  CHECK(fuzzer.replay(r.findings[0].input));
}

TEST_CASE("LibTorchModel: a dtype without CPU kernels is blamed on 'dtype', not on 'input_shape'",
          "[adapters][libtorch]") {
  using Catch::Matchers::Contains;
  if (!have("tiny-mlp.pt")) return;
  nnfuzz::LibTorchOptions o = mlp_options();
  o.dtype = torch::kFloat16;  // addmm has no Half kernel on the CPU
  const std::string m = message_of([&] { nnfuzz::LibTorchModel(model_path("tiny-mlp.pt"), o); });
  CHECK_THAT(m, Contains("option 'dtype' Half") && Contains("not implemented for 'Half'"));
  CHECK_THAT(m, !Contains("option 'input_shape'"));
}

TEST_CASE("LibTorchModel: TorchScript code that does not compile keeps LibTorch's first line and position",
          "[adapters][libtorch]") {
  using Catch::Matchers::Contains;
  if (!have("bad-code.pt")) return;
  const std::string m = message_of([&] { nnfuzz::LibTorchModel(model_path("bad-code.pt"), mlp_options()); });
  // LibTorch says "expected ident but found 'return' here:" and then where: keep both.
  CHECK_THAT(m, Contains("LibTorch cannot load") && Contains("bad-code.pt"));
  CHECK_THAT(m, Contains("expected") && Contains("here"));
  CHECK_THAT(m, Contains("line "));
}

// Two releases of one traced network (release-v1.pt, release-v2.pt: a tuple named by
// output_names) as a VersionPair of adapter models naming every layer (EngineOutputs::layers).
namespace {
nnfuzz::LibTorchOptions release_options() {
  nnfuzz::LibTorchOptions o = adapter_test::release_options<nnfuzz::LibTorchOptions>();
  o.output_names = {"logits", "dense1", "relu1", "dense2", "relu2"};  // the traced tuple's elements
  return o;
}
}  // namespace

TEST_CASE("LibTorchModel: select.layers orders for_each_tensor, and names are checked", "[adapters][libtorch]") {
  if (!have("release-v1.pt")) return;
  nnfuzz::LibTorchModel m(model_path("release-v1.pt"), release_options());
  nnfuzz::NamedOutputs out;
  m.evaluate(random_batch(3, 5), out);
  adapter_test::check_layer_order(out, 3);
  nnfuzz::LibTorchOptions bad = release_options();
  bad.select.layers.push_back("dense9");
  CHECK_THAT(message_of([&] { nnfuzz::LibTorchModel(model_path("release-v1.pt"), bad); }),
             Catch::Contains("no output 'dense9'") && Catch::Contains("'select.layers'"));
}

TEST_CASE("LibTorchModel: two releases as a VersionPair: found, localised to the layer that changed",
          "[adapters][libtorch]") {
  if (!have("release-v1.pt") || !have("release-v2.pt")) return;
  adapter_test::check_releases_part_at_dense2(nnfuzz::LibTorchModel(model_path("release-v1.pt"), release_options()),
                                              nnfuzz::LibTorchModel(model_path("release-v2.pt"), release_options()));
}
