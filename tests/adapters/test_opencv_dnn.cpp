// SPDX-License-Identifier: MIT
// Tests of nnfuzz/adapters/opencv_dnn.hpp on the small ONNX models that
// tools/train_torch_mnist.py --test-models writes (ctest fixture adapters.models).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/adapters/opencv_dnn.hpp>
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

nnfuzz::OpenCvDnnOptions mlp_options() {
  nnfuzz::OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"hidden"};
  o.select.outputs = {"logits"};
  return o;
}

// OpenCV called directly, without the adapter: the reference.
std::vector<cv::Mat> direct(const std::string& file, RowMatrix x, const std::vector<std::string>& names) {
  cv::dnn::Net net = cv::dnn::readNetFromONNX(model_path(file));
  const int sizes[2] = {static_cast<int>(x.rows()), 784};
  net.setInput(cv::Mat(2, sizes, CV_32F, x.data()));
  std::vector<cv::Mat> outs;
  net.forward(outs, names);
  for (auto& m : outs) m = m.clone();
  return outs;
}

RowMatrix as_matrix(const cv::Mat& m) {
  return Eigen::Map<const RowMatrix>(m.ptr<float>(), m.size[0], static_cast<Index>(m.total() / m.size[0]));
}

}  // namespace

TEST_CASE("OpenCvDnnModel: outputs equal OpenCV called directly, and nnfuzz's Mlp", "[adapters][opencv]") {
  if (!have("tiny-mlp.onnx")) return;
  nnfuzz::OpenCvDnnModel model(model_path("tiny-mlp.onnx"), mlp_options());
  CHECK(model.input_dim() == 784);
  CHECK(model.fetched() == std::vector<std::string>{"hidden", "logits"});
  CHECK(model.widths() == std::vector<Index>{32, 10});
  const RowMatrix x = random_batch(7, 1);
  nnfuzz::NamedOutputs out;
  model.evaluate(x, out);
  const auto ref = direct("tiny-mlp.onnx", x, {"logits", "hidden"});
  REQUIRE(out["logits"].rows() == 7);
  REQUIRE(out["logits"].cols() == 10);
  CHECK(out["logits"] == as_matrix(ref[0]));  // the same engine: bit for bit
  CHECK(out["hidden"] == as_matrix(ref[1]));
  CHECK(out.coverage == out["hidden"]);
  // The same weights in nnfuzz's own Mlp (written by the script): a three-way check's third leg.
  const nnfuzz::Mlp<float> mlp = nnfuzz::load_mlp(model_path("tiny-mlp.bin"));
  CHECK((mlp.logits(x) - out["logits"]).cwiseAbs().maxCoeff() < 1e-5f);
  // Another batch size, then the first again: blobs are reallocated and still right.
  nnfuzz::NamedOutputs one;
  model.evaluate(x.topRows(1), one);
  CHECK((one["logits"] - out["logits"].topRows(1)).cwiseAbs().maxCoeff() < 1e-6f);
  model.evaluate(x, one);
  CHECK(one["logits"] == out["logits"]);
}

TEST_CASE("OpenCvDnnModel: a CNN, input shapes N x 784 and N x 1 x 28 x 28, coverage reductions",
          "[adapters][opencv]") {
  if (!have("tiny-cnn.onnx")) return;
  nnfuzz::OpenCvDnnOptions o = mlp_options();
  nnfuzz::OpenCvDnnModel flat(model_path("tiny-cnn.onnx"), o);
  o.input_shape = {1, 28, 28};
  o.select.coverage = {"logits", "hidden"};
  o.select.outputs = {};
  nnfuzz::OpenCvDnnModel image(model_path("tiny-cnn.onnx"), o);
  CHECK(image.input_dim() == 784);
  const RowMatrix x = random_batch(5, 2);
  nnfuzz::NamedOutputs a, b;
  flat.evaluate(x, a);
  image.evaluate(x, b);
  CHECK(a["hidden"].cols() == 64);
  CHECK((a["logits"] - b["logits"]).cwiseAbs().maxCoeff() < 1e-5f);
  REQUIRE(b.coverage.cols() == 74);  // logits then hidden, concatenated
  CHECK(b.coverage.leftCols(10) == b["logits"]);
  CHECK(b.coverage.rightCols(64) == b["hidden"]);
  o.select.reduce = nnfuzz::CoverageReduce::sum_abs;
  nnfuzz::OpenCvDnnModel reduced(model_path("tiny-cnn.onnx"), o);
  reduced.evaluate(x, b);
  REQUIRE(b.coverage.cols() == 2);
  CHECK(b.coverage.col(0).isApprox(b["logits"].cwiseAbs().rowwise().sum()));
  CHECK(b.coverage.col(1).isApprox(b["hidden"].cwiseAbs().rowwise().sum()));
}

TEST_CASE("OpenCvDnnModel: clear errors", "[adapters][opencv]") {
  auto message = [](auto&& make) {
    try {
      make();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(message([] { nnfuzz::OpenCvDnnModel("/nonexistent/m.onnx", mlp_options()); }),
             Contains("OpenCvDnnModel(): ONNX file '/nonexistent/m.onnx' does not exist"));
  if (!have("tiny-mlp.onnx")) return;
  const std::string path = model_path("tiny-mlp.onnx");
  CHECK_THAT(message([&] { nnfuzz::OpenCvDnnModel(path.substr(0, path.rfind('/')), mlp_options()); }),
             Contains("is not a regular file"));
  nnfuzz::OpenCvDnnOptions o = mlp_options();
  o.select.coverage = {"hiden"};
  const std::string unknown = message([&] { nnfuzz::OpenCvDnnModel(path, o); });
  CHECK_THAT(unknown, Contains("has no output 'hiden'"));
  CHECK_THAT(unknown, Contains("its outputs are: hidden, logits"));
  o = mlp_options();
  o.input_shape = {100};
  CHECK_THAT(message([&] { nnfuzz::OpenCvDnnModel(path, o); }),
             Contains("option 'input_shape' {100} (100 floats per input) does not fit"));
  o.input_shape = {};
  CHECK_THAT(message([&] { nnfuzz::OpenCvDnnModel(path, o); }), Contains("option 'input_shape' is empty"));
  o = mlp_options();
  o.select.coverage = {};
  CHECK_THAT(message([&] { nnfuzz::OpenCvDnnModel(path, o); }), Contains("option 'coverage' is empty"));
  nnfuzz::OpenCvDnnModel model(path, mlp_options());
  nnfuzz::NamedOutputs out;
  CHECK_THAT(message([&] { model.evaluate(RowMatrix::Zero(2, 783), out); }),
             Contains("OpenCvDnnModel::evaluate(): the batch has 783 columns, the network takes 784"));
  model.evaluate(RowMatrix::Zero(2, 784), out);
  CHECK_THAT(message([&] { (void)out["softmax"]; }), Contains("no output 'softmax'; fetched: hidden, logits"));
  std::vector<uchar> junk(100, 7);
  CHECK_THAT(message([&] { nnfuzz::OpenCvDnnModel(junk, mlp_options()); }),
             Contains("OpenCvDnnModel(): OpenCV cannot read ONNX bytes as ONNX"));
}

TEST_CASE("OpenCvDnnModel: steady state allocates nothing per input, and copies are independent",
          "[adapters][opencv]") {
  if (!have("tiny-mlp.onnx")) return;
  nnfuzz::OpenCvDnnModel model(model_path("tiny-mlp.onnx"), mlp_options());
  nnfuzz::NamedOutputs out;
  auto count = [&](Index rows) {
    const RowMatrix x = random_batch(rows, 3);
    model.evaluate(x, out);  // warm up at this batch size
    model.evaluate(x, out);
    nnfuzz_test::g_alloc_count = 0;
    model.evaluate(x, out);
    return nnfuzz_test::g_alloc_count.load();
  };
  const std::size_t at10 = count(10), at100 = count(100);
  INFO("operator new calls per evaluate(): " << at10 << " at batch 10, " << at100 << " at batch 100");
  // OpenCV's bookkeeping only, nothing per input: it varies by a few with the batch (OpenCV splits
  // larger batches into more parallel_for chunks: 20 at 10 rows, 23 at 100 here), never by the
  // 90 extra inputs.
  CHECK(at100 <= at10 + 8);
  CHECK(at100 < 64);
  WARN("OpenCV DNN: " << at100 << " small heap allocations per evaluate() in the steady state (OpenCV's own)");
  // A copy reads the network again: used in turn with other batch sizes, both stay right.
  nnfuzz::OpenCvDnnModel copy = model;
  const RowMatrix x = random_batch(9, 4);
  nnfuzz::NamedOutputs a, b;
  model.evaluate(x, a);
  copy.evaluate(x.topRows(3), b);
  model.evaluate(x, b);
  CHECK(a["logits"] == b["logits"]);
}

TEST_CASE("OpenCvDnnModel: a short fuzz run, reproducible", "[adapters][opencv]") {
  if (!have("tiny-cnn.onnx")) return;
  nnfuzz::OpenCvDnnOptions o = mlp_options();
  nnfuzz::FuzzOptions fo;
  fo.max_executions = 1000;
  fo.seed = 3;
  auto run = [&] {
    auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::OpenCvDnnModel(model_path("tiny-cnn.onnx"), o), nnfuzz::RecentSampler(),
                                      nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}), nnfuzz::BruteForceCoverage(0.05f),
                                      nnfuzz::NonFiniteObjective(), fo);
    return fuzzer.run(random_batch(4, 5));
  };
  const nnfuzz::FuzzResult r1 = run(), r2 = run();
  CHECK(!r1.found());
  CHECK(r1.stats.executions >= 1000);
  CHECK(r1.stats.corpus_size > 4);  // the hidden layer's coverage grew the corpus
  CHECK(r1.stats.corpus_size == r2.stats.corpus_size);
}

TEST_CASE("OpenCvDnnModel: the planted NaN is found through OpenCV (NonFiniteObjective)", "[adapters][opencv]") {
  if (!have("planted-nan.onnx")) return;
  nnfuzz::OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  o.select.reduce = nnfuzz::CoverageReduce::sum_abs;
  o.select.outputs = {"softmax", "cross_entropy"};
  nnfuzz::OpenCvDnnModel model(model_path("planted-nan.onnx"), o);
  const RowMatrix seeds = RowMatrix::Zero(2, 784);  // pixel 0 = 0: finite
  nnfuzz::NamedOutputs out;
  model.evaluate(seeds, out);
  REQUIRE(nnfuzz::detail::all_finite(out["cross_entropy"]));
  nnfuzz::FuzzOptions fo;
  fo.max_executions = 5000;
  fo.seed = 1;
  auto fuzzer = nnfuzz::make_fuzzer(model, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.1f, {0.0f, 1.0f}),
                                    nnfuzz::KdTreeCoverage(0.707f), nnfuzz::NonFiniteObjective(), fo);
  const nnfuzz::FuzzResult r = fuzzer.run(seeds);
  REQUIRE(r.found());
  // Pixel 0 moved off 0: the planted trigger. OpenCV gives p0 = 0 already at l0 ~ -82.70
  // (pixel 0 ~ 0.009), long before float's own underflow at a spread of ~104 (see below).
  CHECK(r.findings[0].input(0) > 0.005f);
  // Why: OpenCV's importer rewrote the unsafe exp(l) / sum exp(l) into its own Softmax layer,
  // which subtracts the maximum (and flushes tiny probabilities to 0 early).
  bool softmax_layer = false;
  for (const std::string& name : model.net().getLayerNames())
    softmax_layer = softmax_layer || model.net().getLayer(name)->type == "Softmax";
  CHECK(softmax_layer);
  CHECK_THAT(r.findings[0].what, Catch::Matchers::StartsWith("non-finite in '"));
  CHECK(fuzzer.replay(r.findings[0].input));
}

namespace {
// A protobuf writer, enough for a hand-made ONNX model: x (N x 24) MatMul W (24 x 32) -> y.
std::string pb_varint(std::uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7f) | 0x80);
  return s + static_cast<char>(v);
}
std::string pb_int(int field, std::uint64_t v) {
  return pb_varint(static_cast<std::uint64_t>(field) << 3) + pb_varint(v);
}
std::string pb_bytes(int field, const std::string& b) {
  return pb_varint((static_cast<std::uint64_t>(field) << 3) | 2) + pb_varint(b.size()) + b;
}
// `dims` declared; `floats` values stored, as raw_data or as float_data.
std::vector<uchar> matmul_onnx(std::vector<std::uint64_t> dims, std::size_t floats, bool raw) {
  std::string tensor;
  for (auto d : dims) tensor += pb_int(1, d);
  tensor += pb_int(2, 1) + pb_bytes(8, "W");
  std::string data;
  for (std::size_t i = 0; i < floats; ++i) {
    const float v = 0.01f * static_cast<float>(i % 17);
    data.append(reinterpret_cast<const char*>(&v), 4);
  }
  tensor += raw ? pb_bytes(9, data) : pb_bytes(4, data);  // float_data packed
  const std::string node =
      pb_bytes(1, "x") + pb_bytes(1, "W") + pb_bytes(2, "y") + pb_bytes(3, "mm") + pb_bytes(4, "MatMul");
  auto value_info = [](const std::string& name, std::uint64_t width) {  // N x width floats
    const std::string shape = pb_bytes(2, pb_bytes(1, pb_bytes(2, "N")) + pb_bytes(1, pb_int(1, width)));
    return pb_bytes(1, name) + pb_bytes(2, pb_bytes(1, pb_int(1, 1) + shape));
  };
  const std::string graph = pb_bytes(1, node) + pb_bytes(2, "g") + pb_bytes(5, tensor) +
                            pb_bytes(11, value_info("x", 24)) + pb_bytes(12, value_info("y", 32));
  const std::string model = pb_int(1, 7) + pb_bytes(8, pb_bytes(1, "") + pb_int(2, 13)) + pb_bytes(7, graph);
  return std::vector<uchar>(model.begin(), model.end());
}
nnfuzz::OpenCvDnnOptions matmul_options() {
  nnfuzz::OpenCvDnnOptions o;
  o.input_shape = {24};
  o.select.coverage = {"y"};
  return o;
}
}  // namespace

TEST_CASE("OpenCvDnnModel: an initializer holding less data than its shape is refused before OpenCV reads it",
          "[adapters][opencv]") {
  using Catch::Matchers::Contains;
  // The hand-made model is valid as written: OpenCV reads and runs it.
  nnfuzz::OpenCvDnnModel good(matmul_onnx({24, 32}, 24 * 32, true), matmul_options());
  CHECK(good.widths() == std::vector<Index>{32});
  CHECK(nnfuzz::OpenCvDnnModel(matmul_onnx({24, 32}, 24 * 32, false), matmul_options()).widths() ==
        std::vector<Index>{32});
  // Declared 2400 x 32, data for 24 x 32 (raw_data), or 100 values (float_data): OpenCV would
  // read past the data (SIGSEGV); refused naming the tensor.
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(matmul_onnx({2400, 32}, 24 * 32, true), matmul_options()),
                    Contains("OpenCvDnnModel()") && Contains("initializer 'W'") && Contains("{2400, 32}") &&
                        Contains("needs 307200 bytes of raw_data, holds 3072"));
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(matmul_onnx({24, 32}, 100, false), matmul_options()),
                    Contains("initializer 'W'") && Contains("needs 768 stored values, holds 100"));
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(matmul_onnx({24, 32}, 100, true), matmul_options()),
                    Contains("initializer 'W'") && Contains("holds 400"));
}

TEST_CASE("OpenCvDnnModel: an input_shape whose product overflows or cannot be allocated names the option",
          "[adapters][opencv]") {
  using Catch::Matchers::Contains;
  nnfuzz::OpenCvDnnOptions o = matmul_options();
  o.input_shape = {65536, 65536, 65536, 65536};
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(matmul_onnx({24, 32}, 24 * 32, true), o),
                    Contains("option 'input_shape' {65536, 65536, 65536, 65536}") && Contains("overflows"));
  o.input_shape = {1048576, 1048576};
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(matmul_onnx({24, 32}, 24 * 32, true), o),
                    Contains("option 'input_shape' {1048576, 1048576}") && Contains("cannot allocate"));
}

// Two releases of one exported network (release-v1.onnx, and release-v2.onnx: v1 with its second
// layer perturbed) as a VersionPair of adapter models naming every layer (EngineOutputs::layers).
namespace {
nnfuzz::OpenCvDnnOptions release_options() { return adapter_test::release_options<nnfuzz::OpenCvDnnOptions>(); }
}  // namespace

TEST_CASE("OpenCvDnnModel: select.layers orders for_each_tensor, and names are checked", "[adapters][opencv]") {
  if (!have("release-v1.onnx")) return;
  nnfuzz::OpenCvDnnModel m(model_path("release-v1.onnx"), release_options());
  CHECK(m.fetched() == std::vector<std::string>{"logits", "dense1", "relu1", "dense2", "relu2"});
  nnfuzz::NamedOutputs out;
  m.evaluate(random_batch(3, 5), out);
  // OpenCV fuses a ReLU into the layer before it unless both are fetched: dense1 is before it.
  adapter_test::check_layer_order(out, 3);
  nnfuzz::OpenCvDnnOptions bad = release_options();
  bad.select.layers.push_back("dense9");
  CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(model_path("release-v1.onnx"), bad),
                    Catch::Contains("no output 'dense9'") && Catch::Contains("'select.layers'"));
  bad.select.layers = {"dense1", "dense1"};
  CHECK_THROWS_WITH(
      nnfuzz::OpenCvDnnModel(model_path("release-v1.onnx"), bad),
      Catch::Contains("OpenCvDnnModel()") && Catch::Contains("option 'layers' names output 'dense1' twice"));
}

TEST_CASE("OpenCvDnnModel: two releases as a VersionPair: found, localised to the layer that changed",
          "[adapters][opencv]") {
  if (!have("release-v1.onnx") || !have("release-v2.onnx")) return;
  adapter_test::check_releases_part_at_dense2(nnfuzz::OpenCvDnnModel(model_path("release-v1.onnx"), release_options()),
                                              nnfuzz::OpenCvDnnModel(model_path("release-v2.onnx"), release_options()));
}

// Networks that cannot run a batch right. The exports (tools/train_torch_mnist.py --test-models):
// batch1-flatten.onnx was exported at batch 1 (its flatten a Reshape to [1, 784]); batch-mix.onnx
// flattens the whole batch (x.reshape(1, -1)) for a softmax. OpenCV 4.6 throws on a batch of 2 of
// either. A silent one is built by hand: a Softmax over axis 0, which mixes the rows.
TEST_CASE("OpenCvDnnModel: a network that cannot run a batch runs one input per forward(), said once",
          "[adapters][opencv]") {
  std::vector<std::string> said;
  nnfuzz::OpenCvDnnOptions o = mlp_options();
  o.on_per_row = [&](const std::string& why) { said.push_back(why); };
  const RowMatrix x = random_batch(5, 11);
  // Each row's answer as the row alone: what a user means by "the model's output for this input".
  auto check_rows = [&](nnfuzz::OpenCvDnnModel& model, const char* name) {
    nnfuzz::OpenCvDnnModel::Output all, one;
    model.evaluate(x, all);
    REQUIRE(all[name].rows() == 5);
    for (Index r = 0; r < 5; ++r) {
      model.evaluate(x.row(r), one);
      CHECK(all[name].row(r) == one[name].row(0));
      CHECK(all.coverage.row(r) == one.coverage.row(0));
    }
  };
  SECTION("exported at batch 1") {
    o.input_shape = {1, 28, 28};
    nnfuzz::OpenCvDnnModel model(model_path("batch1-flatten.onnx"), o);
    CHECK(model.per_row());
    REQUIRE(said.size() == 1);
    CHECK_THAT(said[0], Catch::Contains("batch1-flatten.onnx") && Catch::Contains("OpenCV fails on a batch of 2") &&
                            Catch::Contains("one input per forward()"));
    check_rows(model, "logits");
    nnfuzz::OpenCvDnnModel copy(model);  // copies do not check (nor say it) again
    CHECK(copy.per_row());
    check_rows(copy, "logits");
    CHECK(said.size() == 1);
    o.batching = nnfuzz::OpenCvBatching::batched;
    CHECK_THROWS_WITH(nnfuzz::OpenCvDnnModel(model_path("batch1-flatten.onnx"), o),
                      Catch::Contains("does not run batches right") && Catch::Contains("OpenCvBatching::batched"));
  }
  SECTION("a flatten that forgets the batch axis") {
    nnfuzz::OpenCvDnnModel model(model_path("batch-mix.onnx"), o);
    CHECK(model.per_row());
    REQUIRE(said.size() == 1);
    check_rows(model, "logits");
    o.batching = nnfuzz::OpenCvBatching::per_row;  // asked for, not a fallback: nothing said
    nnfuzz::OpenCvDnnModel asked(model_path("batch-mix.onnx"), o);
    CHECK(asked.per_row());
    CHECK(said.size() == 1);
  }
  SECTION("rows that mix silently") {
    cv::dnn::Net net;
    cv::dnn::LayerParams softmax;
    softmax.set("axis", 0);
    net.addLayerToPrev("mix", "Softmax", softmax);
    cv::dnn::LayerParams power;
    power.set("scale", 2.0f);
    net.addLayerToPrev("scaled", "Power", power);
    net.setInputsNames({"input"});
    o.select.coverage = {"mix"};
    o.select.outputs = {"scaled"};
    nnfuzz::OpenCvDnnModel model(net, o);
    CHECK(model.per_row());
    REQUIRE(said.size() == 1);
    CHECK_THAT(said[0], Catch::Contains("the cv::dnn::Net given") && Catch::Contains("differs from the row run alone"));
    check_rows(model, "scaled");
    nnfuzz::OpenCvDnnModel::Output out;
    model.evaluate(x, out);
    CHECK((out["scaled"].array() == 2.0f).all());  // a softmax over one row's batch of 1
  }
  SECTION("a network that runs batches right stays batched, and per_row answers the same") {
    nnfuzz::OpenCvDnnModel model(model_path("tiny-mlp.onnx"), o);
    CHECK_FALSE(model.per_row());
    o.batching = nnfuzz::OpenCvBatching::per_row;
    nnfuzz::OpenCvDnnModel rows(model_path("tiny-mlp.onnx"), o);
    CHECK(rows.per_row());
    nnfuzz::OpenCvDnnModel::Output a, b;
    model.evaluate(x, a);
    rows.evaluate(x, b);
    CHECK(a["logits"].isApprox(b["logits"], 1e-5f));
    CHECK(said.empty());
  }
}
