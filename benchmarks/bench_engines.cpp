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

}  // namespace

BENCHMARK_MAIN();
