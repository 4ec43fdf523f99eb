// SPDX-License-Identifier: MIT
// Engine benchmarks (Google Benchmark): each engine's own batched forward pass on the
// PyTorch-trained MNIST networks (OpenCV DNN on the ONNX file, LibTorch on the TorchScript file,
// nnfuzz's Eigen Mlp on the same MLP's weights), at batch 1/16/64/100, and the fuzz loop through
// each adapter at batch 100 (KdTreeCoverage on Σ|logits| + NonFiniteObjective, and NoCoverage):
// loop / forward at batch 100 is the share of the engine's limit that the fuzzer reaches.
// items/s = inputs (executions) per second.
//
// Models: tools/train_torch_mnist.py's files in $NNFUZZ_ENGINE_MODELS (default out/models:
// mnist-torch-mlp-adam-01.{onnx,pt,bin}, mnist-torch-cnn-01.{onnx,pt}); a benchmark whose file
// is missing is skipped with an error saying so. Every engine runs on one thread
// (cv::setNumThreads(1), at::set_num_threads(1); Eigen is single-threaded here), so that the
// figures compare engines per core; the host is shared: compare ratios within a run.
//
//   bench_engines --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/adapters/libtorch.hpp>
#include <nnfuzz/adapters/opencv_dnn.hpp>
#include <nnfuzz/models/mlp_file.hpp>
#include <nnfuzz/models/mlp.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

using namespace nnfuzz;

std::string model_file(const std::string& name) {
  const char* dir = std::getenv("NNFUZZ_ENGINE_MODELS");
  return std::string(dir ? dir : "out/models") + "/mnist-torch-" + name;
}
bool have(benchmark::State& state, const std::string& path) {
  if (std::filesystem::exists(path)) return true;
  state.SkipWithError(("no " + path + ": run /usr/bin/python3 tools/train_torch_mnist.py").c_str());
  return false;
}
RowMatrix random_inputs(Index n, std::uint64_t seed) {
  RowMatrix x(n, 784);
  Rng rng(seed);
  rng.fill_uniform(x.data(), x.size(), 0, 1);
  return x;
}
void one_thread() {
  cv::setNumThreads(1);
  at::set_num_threads(1);
}

OpenCvDnnOptions cv_options() {
  OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  o.select.reduce = CoverageReduce::sum_abs;
  o.select.outputs = {"hidden"};
  return o;
}
LibTorchOptions torch_options(bool cnn) {
  LibTorchOptions o;
  o.input_shape = {784};
  if (cnn) o.output_names = {"logits", "hidden"};  // the MLP returns a dict: named by its keys
  o.select.coverage = {"logits"};
  o.select.reduce = CoverageReduce::sum_abs;
  o.select.outputs = {"hidden"};
  return o;
}

/// nnfuzz's own Mlp as a Model with the same outputs (logits, hidden; coverage Σ|logits|).
struct EigenMlpModel {
  struct Output {
    MlpTrace<float> trace;
    RowMatrix coverage;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("logits", trace.logits());
      f("hidden", trace.post.back());
    }
  };
  Mlp<float> net;
  Index input_dim() const { return net.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& x, Output& out) const {
    net.forward(x, out.trace);
    out.coverage = out.trace.logits().cwiseAbs().rowwise().sum();
  }
};

template <typename Model>
void forward(benchmark::State& state, Model model) {
  const RowMatrix x = random_inputs(state.range(0), 2);
  typename Model::Output out;
  for (auto _ : state) {
    model.evaluate(x, out);
    benchmark::DoNotOptimize(out.coverage.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// One run() of 10,000 executions from 10 seeds per benchmark iteration.
template <typename Model, typename Coverage>
void loop(benchmark::State& state, Model model, Coverage coverage) {
  FuzzOptions o;
  o.batch_size = state.range(0);
  o.max_executions = 10000;
  o.max_findings = 0;
  o.seed = 1;
  auto fuzzer = make_fuzzer(std::move(model), RecentSampler(), GaussianMutator(0.1f), std::move(coverage),
                            NonFiniteObjective(), o);
  const RowMatrix seeds = random_inputs(10, 3);
  std::uint64_t executions = 0;
  Index corpus = 0;
  for (auto _ : state) {
    const FuzzResult r = fuzzer.run(seeds);
    executions += r.stats.executions;
    corpus = r.stats.corpus_size;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
  state.counters["corpus"] = static_cast<double>(corpus);
}

#define NNFUZZ_ENGINE_BENCH(name, file, make)                                 \
 void BM_Forward_##name(benchmark::State& s) {                                \
  one_thread();                                                               \
  if (have(s, model_file(file))) forward(s, make);                            \
 }                                                                            \
 void BM_Loop_##name##_KdTree(benchmark::State& s) {                          \
  one_thread();                                                               \
  if (have(s, model_file(file))) loop(s, make, KdTreeCoverage(0.707f));       \
 }                                                                            \
 void BM_Loop_##name##_NoCoverage(benchmark::State& s) {                      \
  one_thread();                                                               \
  if (have(s, model_file(file))) loop(s, make, NoCoverage());                 \
 }                                                                            \
 BENCHMARK(BM_Forward_##name)->Arg(1)->Arg(16)->Arg(64)->Arg(100);            \
 BENCHMARK(BM_Loop_##name##_KdTree)->Arg(100)->Unit(benchmark::kMillisecond); \
 BENCHMARK(BM_Loop_##name##_NoCoverage)->Arg(100)->Unit(benchmark::kMillisecond);

NNFUZZ_ENGINE_BENCH(Mlp_OpenCv, "mlp-adam-01.onnx", OpenCvDnnModel(model_file("mlp-adam-01.onnx"), cv_options()))
NNFUZZ_ENGINE_BENCH(Mlp_LibTorch, "mlp-adam-01.pt", LibTorchModel(model_file("mlp-adam-01.pt"), torch_options(false)))
NNFUZZ_ENGINE_BENCH(Mlp_Eigen, "mlp-adam-01.bin", EigenMlpModel{load_mlp(model_file("mlp-adam-01.bin"))})
NNFUZZ_ENGINE_BENCH(Cnn_OpenCv, "cnn-01.onnx", OpenCvDnnModel(model_file("cnn-01.onnx"), cv_options()))
NNFUZZ_ENGINE_BENCH(Cnn_LibTorch, "cnn-01.pt", LibTorchModel(model_file("cnn-01.pt"), torch_options(true)))

// PaddleOCR's production models (issue #35 item 4), as prepared by tests/realmodels/paddleocr.sh
// into BUILD/realmodels (default build/realmodels; $NNFUZZ_OCR_MODELS): the text-direction
// classifier cls.onnx (3x48x192) and the recogniser rec.onnx (3x48x320), through OpenCvDnnModel
// at batch 4 as `nnfuzz fuzz` runs them (coverage: the model's softmax, the command's default).
// Their inputs are text lines in [-1, 1]: seeds are uniform there, mutants clipped to it.
std::string ocr_file(const std::string& name) {
  const char* dir = std::getenv("NNFUZZ_OCR_MODELS");
  return std::string(dir ? dir : "build/realmodels") + "/" + name;
}
bool have_ocr(benchmark::State& state, const std::string& path) {
  if (std::filesystem::exists(path)) return true;
  state.SkipWithError(("no " + path + ": run ctest -R realmodels.paddleocr (it prepares the models)").c_str());
  return false;
}
OpenCvDnnModel ocr_model(const std::string& name, std::vector<int> shape, const std::string& output) {
  OpenCvDnnOptions o;
  o.input_shape = std::move(shape);
  o.select.coverage = {output};
  return OpenCvDnnModel(ocr_file(name), o);
}
RowMatrix ocr_inputs(Index n, Index dim) {
  RowMatrix x(n, dim);
  Rng rng(5);
  rng.fill_uniform(x.data(), x.size(), -1, 1);
  return x;
}
void ocr_forward(benchmark::State& state, OpenCvDnnModel model) {
  const RowMatrix x = ocr_inputs(state.range(0), model.input_dim());
  OpenCvDnnModel::Output out;
  for (auto _ : state) {
    model.evaluate(x, out);
    benchmark::DoNotOptimize(out.coverage.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
// One run() of `executions` from 4 seeds: the defaults (make_fuzzer) or random search
// (NoCoverage, no fitness), the NaN/Inf objective, inputs in [-1, 1].
template <bool kDefaults>
void ocr_loop(benchmark::State& state, OpenCvDnnModel model, std::uint64_t executions) {
  FuzzOptions o;
  o.batch_size = state.range(0);
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = 1;
  const RowMatrix seeds = ocr_inputs(4, model.input_dim());
  std::uint64_t done = 0;
  auto count = [&](auto& fuzzer) {
    for (auto _ : state) done += fuzzer.run(seeds).stats.executions;
  };
  if constexpr (kDefaults) {
    auto fuzzer = make_fuzzer(std::move(model), o).with_mutator(DefaultMutator(0.1f, MutationBounds{-1.0f, 1.0f}));
    count(fuzzer);
  } else {
    auto fuzzer = make_fuzzer(std::move(model), UniformSampler(), GaussianMutator(0.1f, MutationBounds{-1.0f, 1.0f}),
                              NoCoverage(), NonFiniteObjective(), o);
    count(fuzzer);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(done));
}

#define NNFUZZ_OCR_BENCH(name, file, shape, output, executions)                                    \
 void BM_Forward_##name(benchmark::State& s) {                                                     \
  cv::setNumThreads(1);                                                                            \
  if (have_ocr(s, ocr_file(file))) ocr_forward(s, ocr_model(file, shape, output));                 \
 }                                                                                                 \
 void BM_Loop_##name##_Defaults(benchmark::State& s) {                                             \
  cv::setNumThreads(1);                                                                            \
  if (have_ocr(s, ocr_file(file))) ocr_loop<true>(s, ocr_model(file, shape, output), executions);  \
 }                                                                                                 \
 void BM_Loop_##name##_Random(benchmark::State& s) {                                               \
  cv::setNumThreads(1);                                                                            \
  if (have_ocr(s, ocr_file(file))) ocr_loop<false>(s, ocr_model(file, shape, output), executions); \
 }                                                                                                 \
 BENCHMARK(BM_Forward_##name)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);                      \
 BENCHMARK(BM_Loop_##name##_Defaults)->Arg(4)->Unit(benchmark::kMillisecond);                      \
 BENCHMARK(BM_Loop_##name##_Random)->Arg(4)->Unit(benchmark::kMillisecond);

NNFUZZ_OCR_BENCH(OcrCls, "cls.onnx", (std::vector<int>{3, 48, 192}), "softmax_0.tmp_0", 200)
NNFUZZ_OCR_BENCH(OcrRec, "rec.onnx", (std::vector<int>{3, 48, 320}), "softmax_11.tmp_0", 40)

}  // namespace

BENCHMARK_MAIN();
