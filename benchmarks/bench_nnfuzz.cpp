// SPDX-License-Identifier: MIT
// nnfuzz benchmarks (Google Benchmark): the forward-pass limit, the whole fuzz loop against it,
// coverage cost as the corpus grows, and mutation throughput. items/s = inputs (or vectors,
// or mutants) per second. Run all: scripts/bench.sh (writes JSON).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/targets/char_rnn_target.hpp>
#include <nnfuzz/models/mlp.hpp>
#include <nnfuzz/models/quantize.hpp>
#include <nnfuzz/targets/mlp_targets.hpp>
#include <nnfuzz/parallel.hpp>
#include <nnfuzz/mutators/structured.hpp>
#include <nnfuzz/objectives/text.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "fma_peak.hpp"

#include <chrono>
#include <limits>
#include <random>

namespace {

using namespace nnfuzz;

Mlp<float> mnist_mlp() {
  Mlp<float> net({784, 200, 100, 10});
  net.init_truncated_normal(0, 1);  // He init: logits of a realistic scale
  return net;
}
RowMatrix random_inputs(Index n, std::uint64_t seed) {
  RowMatrix x(n, 784);
  Rng rng(seed);
  rng.fill_uniform(x.data(), x.size(), 0, 1);
  return x;
}

// --- The limit: the forward pass alone -----------------------------------------------------
template <typename Net>
void forward(benchmark::State& state, const Net& net) {
  const RowMatrix x = random_inputs(state.range(0), 2);
  typename Net::Trace t;
  for (auto _ : state) {
    net.forward(x, t);
    benchmark::DoNotOptimize(t.logits().data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
void BM_Forward_Float(benchmark::State& s) { forward(s, mnist_mlp()); }
void BM_Forward_HalfArithmetic(benchmark::State& s) { forward(s, mnist_mlp().half_arithmetic()); }
void BM_Forward_HalfStorage(benchmark::State& s) { forward(s, mnist_mlp().half_storage()); }
// The int8 release candidate (quantize.hpp), calibrated on 500 inputs like the fuzzer's.
Int8Mlp mnist_int8() { return quantize_int8(mnist_mlp(), random_inputs(500, 4)); }
void BM_Forward_Int8(benchmark::State& s) { forward(s, mnist_int8()); }
void BM_Forward_FloatPlusHalfArithmetic(benchmark::State& state) {  // the pair target's model work
  const Mlp<float> f = mnist_mlp();
  const Mlp<Eigen::half> h = f.half_arithmetic();
  const RowMatrix x = random_inputs(state.range(0), 2);
  Mlp<float>::Trace tf;
  Mlp<Eigen::half>::Trace th;
  for (auto _ : state) {
    f.forward(x, tf);
    h.forward(x, th);
    benchmark::DoNotOptimize(th.pre.back().data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
// The float forward pass against the CPU's FMA peak (issue #37): the MNIST MLP's FLOPs per
// input are 2 · (784·200 + 200·100 + 100·10); `GFLOPS` is what the forward pass does, and
// BM_FmaPeak_Avx2 what one core can do at most (fma_peak.hpp). _Kernel: Mlp<float> as it runs
// (the AVX2 + FMA dense kernel); _Generic: under the `generic` kernel choice (the SSE2 kernel);
// _EigenGemm: the same layers through Eigen's GEMM, as Mlp<float> ran them before 0.2.
constexpr double kMnistFlops = 2.0 * (784 * 200 + 200 * 100 + 100 * 10);
void gflops(benchmark::State& state) {
  state.counters["GFLOPS"] = benchmark::Counter(
      kMnistFlops * static_cast<double>(state.iterations() * state.range(0)) * 1e-9, benchmark::Counter::kIsRate);
}
void BM_Forward_Float_Kernel(benchmark::State& s) {
  forward(s, mnist_mlp());
  gflops(s);
}
void BM_Forward_Float_Generic(benchmark::State& s) {
  set_noise_kernel(NoiseKernel::generic);
  forward(s, mnist_mlp());
  set_noise_kernel(NoiseKernel::automatic);
  gflops(s);
}
void BM_Forward_Float_EigenGemm(benchmark::State& state) {
  const Mlp<float> net = mnist_mlp();
  const RowMatrix x = random_inputs(state.range(0), 2);
  std::vector<RowMatrix> z(net.layers().size());
  for (auto _ : state) {
    for (std::size_t l = 0; l < z.size(); ++l) {
      const auto& layer = net.layers()[l];
      z[l].resize(x.rows(), layer.weights.cols());
      if (l == 0)
        z[l].noalias() = x * layer.weights;
      else
        z[l].noalias() = z[l - 1].cwiseMax(0.0f) * layer.weights;
      z[l].rowwise() += layer.bias;
    }
    benchmark::DoNotOptimize(z.back().data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  gflops(state);
}

// The host is shared: the throughput benchmarks run 5 times and report median, mean and spread;
// scripts/bench.sh interleaves the repetitions of different benchmarks at random, so that a busy
// spell on the host does not fall on one side of a ratio (loop vs forward pass).
void repeated(benchmark::internal::Benchmark* b) { b->Repetitions(5)->ReportAggregatesOnly(true); }
BENCHMARK(BM_Forward_Float)->Arg(1)->Arg(16)->Arg(64)->Arg(100)->Arg(256)->Apply(repeated);
BENCHMARK(BM_Forward_Float_Kernel)->Arg(100)->Apply(repeated);
BENCHMARK(BM_Forward_Float_Generic)->Arg(100)->Apply(repeated);
BENCHMARK(BM_Forward_Float_EigenGemm)->Arg(100)->Apply(repeated);
#if defined(NNFUZZ_X86_DISPATCH)
BENCHMARK(nnfuzz_bench::BM_FmaPeak_Avx2)->Apply(repeated);
BENCHMARK(nnfuzz_bench::BM_FmaPeak_Avx512)->Apply(repeated);
#endif
BENCHMARK(BM_Forward_HalfArithmetic)->Arg(1)->Arg(16)->Arg(64)->Arg(100)->Arg(256)->Apply(repeated);
BENCHMARK(BM_Forward_HalfStorage)->Arg(100)->Apply(repeated);
BENCHMARK(BM_Forward_Int8)->Arg(1)->Arg(16)->Arg(64)->Arg(100)->Arg(256)->Apply(repeated);
BENCHMARK(BM_Forward_FloatPlusHalfArithmetic)->Arg(100)->Apply(repeated);

// --- A user's own small model: a plain float* forward (784-32-10, ReLU) ---------------------
// What an outside project fuzzes: its own inference code, a few µs per input, with nnfuzz
// installed as a package (no -march imposed). The loop's share of this forward pass is the
// figure that depends most on the speed of nnfuzz's own kernels (noise, coverage).
struct UserModel {
  struct Output {
    RowMatrix coverage, logits;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("logits", logits);
    }
  };
  std::vector<float> w1 = std::vector<float>(784 * 32), w2 = std::vector<float>(32 * 10);
  RowMatrix hidden;
  UserModel() {
    Rng rng(9);
    rng.fill_normal(w1.data(), static_cast<Index>(w1.size()));
    rng.fill_normal(w2.data(), static_cast<Index>(w2.size()));
    for (float& v : w1) v *= 0.05f;
    for (float& v : w2) v *= 0.25f;
  }
  Index input_dim() const { return 784; }
  // The user's forward: raw pointers in, raw pointers out (Eigen maps stand in for their BLAS).
  void forward(const float* x, Index n, float* h, float* y) const {
    using M = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    using W = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    W hm(h, n, 32), ym(y, n, 10);
    hm.noalias() = M(x, n, 784) * M(w1.data(), 784, 32);
    hm = hm.cwiseMax(0.0f);
    ym.noalias() = hm * M(w2.data(), 32, 10);
  }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) {
    hidden.resize(batch.rows(), 32);
    out.logits.resize(batch.rows(), 10);
    forward(batch.data(), batch.rows(), hidden.data(), out.logits.data());
    out.coverage = out.logits;
  }
};
void BM_Forward_User(benchmark::State& state) {
  UserModel m;
  const RowMatrix x = random_inputs(state.range(0), 2);
  UserModel::Output out;
  for (auto _ : state) {
    m.evaluate(x, out);
    benchmark::DoNotOptimize(out.logits.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Forward_User)->Arg(100)->Apply(repeated);

// --- The loop: whole fuzz iterations -------------------------------------------------------
// Each benchmark iteration is one run() of 20,000 executions from 10 seeds.
// findings = hits reported per run; each batch with a hit costs one more evaluation (re-check).
template <typename Target, typename Coverage, typename Objective>
void loop(benchmark::State& state, Target target, Coverage coverage, Objective objective, bool recheck = true) {
  FuzzOptions o;
  o.batch_size = state.range(0);
  o.max_executions = 20000;
  o.max_findings = 0;
  o.seed = 1;
  o.recheck_findings = recheck;
  auto fuzzer = make_fuzzer(std::move(target), RecentSampler(), GaussianMutator(0.1f), std::move(coverage),
                            std::move(objective), o);
  const RowMatrix seeds = random_inputs(10, 3);
  std::uint64_t executions = 0;
  Index corpus = 0, findings = 0;
  for (auto _ : state) {
    const FuzzResult r = fuzzer.run(seeds);
    executions += r.stats.executions;
    corpus = r.stats.corpus_size;
    findings = r.stats.findings;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
  state.counters["corpus"] = static_cast<double>(corpus);
  state.counters["findings"] = static_cast<double>(findings);
}
void BM_Loop_Nan_KdTree(benchmark::State& s) {
  loop(s, NanTarget(mnist_mlp()), KdTreeCoverage(0.707f), NonFiniteObjective());
}
void BM_Loop_Nan_BruteForce(benchmark::State& s) {
  loop(s, NanTarget(mnist_mlp()), BruteForceCoverage(0.707f), NonFiniteObjective());
}
void BM_Loop_Nan_NoCoverage(benchmark::State& s) {
  loop(s, NanTarget(mnist_mlp()), NoCoverage(), NonFiniteObjective());
}
// The user's model with the default policies (CalibratedCoverage) and with random search.
void BM_Loop_User_Default(benchmark::State& s) { loop(s, UserModel(), CalibratedCoverage(), NonFiniteObjective()); }
void BM_Loop_User_NoCoverage(benchmark::State& s) { loop(s, UserModel(), NoCoverage(), NonFiniteObjective()); }
void BM_Loop_Pair_KdTree(benchmark::State& s) {
  loop(s, make_half_arithmetic_pair(mnist_mlp()), KdTreeCoverage(0.707f), DisagreementObjective(0, 1));
}
// The pair on an untrained network disagrees in nearly every batch: without the re-check, the
// loop's own overhead on the two forward passes.
void BM_Loop_Pair_KdTree_NoRecheck(benchmark::State& s) {
  loop(s, make_half_arithmetic_pair(mnist_mlp()), KdTreeCoverage(0.707f), DisagreementObjective(0, 1), false);
}
void BM_Loop_Pair_NoCoverage(benchmark::State& s) {
  loop(s, make_half_arithmetic_pair(mnist_mlp()), NoCoverage(), DisagreementObjective(0, 1));
}
// The float network against its int8 quantization (the release-candidate pair).
void BM_Loop_Pair_Int8_KdTree(benchmark::State& s) {
  loop(s, make_int8_pair(mnist_mlp(), random_inputs(500, 4)), KdTreeCoverage(0.707f), DisagreementObjective(0, 1));
}
// Both cores: run_parallel with independent workers, vs one worker (Arg = workers).
void BM_Loop_Nan_Parallel(benchmark::State& state) {
  FuzzOptions o;
  o.batch_size = 100;
  o.max_executions = 40000;
  o.max_findings = 0;
  o.seed = 1;
  auto fuzzer = make_fuzzer(NanTarget(mnist_mlp()), RecentSampler(), GaussianMutator(0.1f), KdTreeCoverage(0.707f),
                            NonFiniteObjective(), o);
  const RowMatrix seeds = random_inputs(10, 3);
  std::uint64_t executions = 0;
  for (auto _ : state) executions += run_parallel(fuzzer, seeds, static_cast<int>(state.range(0))).stats.executions;
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
}
// Two workers share the machine with whatever else runs on the host: median of 5.
BENCHMARK(BM_Loop_Nan_Parallel)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_Loop_Nan_KdTree)->Arg(16)->Arg(100)->Arg(256)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Nan_BruteForce)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Nan_NoCoverage)->Arg(16)->Arg(100)->Arg(256)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_User_Default)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_User_NoCoverage)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Pair_KdTree)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Pair_KdTree_NoRecheck)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Pair_NoCoverage)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_Pair_Int8_KdTree)->Arg(100)->Unit(benchmark::kMillisecond)->Apply(repeated);

// --- Coverage scaling: novelty check + insert per vector at a given corpus size ------------
// Points: uniform in a cube (random) or around 20 centres (clustered), with a radius small enough
// that nearly every vector is new (so each costs a query and an insert). The index is filled to
// N vectors in batches of 100 (the fuzz loop's batch); then N/10 fresh vectors are timed, in
// batches of 100 (one batch per iteration: the corpus grows by 10% during the measurement).
// Small sizes are repeated (fresh fill each time) and reported as the median.
// max_fill_ms: the slowest single batch of 100 while filling — a pause of the fuzz loop
// (nanoflann's dynamic index merges sub-trees on the calling thread: spikes).
template <typename Coverage>
void coverage_scaling(benchmark::State& state, Coverage cov, bool clustered) {
  const Index n = state.range(0), dim = state.range(1);
  Rng rng(5);
  RowMatrix centres(20, dim);
  rng.fill_uniform(centres.data(), centres.size(), -50, 50);
  auto fill = [&](RowMatrix& m) {
    if (clustered) {
      rng.fill_normal(m.data(), m.size());
      for (Index r = 0; r < m.rows(); ++r) m.row(r) = m.row(r) * 3.0f + centres.row(rng.uniform_index(20));
    } else {
      rng.fill_uniform(m.data(), m.size(), -50, 50);
    }
  };
  cov.reset(dim);
  Mask is_new;
  RowMatrix batch(100, dim);
  double worst_fill = 0;
  while (cov.size() < n) {
    fill(batch);
    const auto t0 = std::chrono::steady_clock::now();
    cov.observe(batch.topRows(std::min<Index>(100, n - cov.size())), is_new);
    worst_fill =
        std::max(worst_fill, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (auto _ : state) {
    state.PauseTiming();
    fill(batch);
    state.ResumeTiming();
    cov.observe(batch, is_new);
  }
  state.SetItemsProcessed(state.iterations() * 100);
  state.counters["max_fill_ms"] = worst_fill;
  state.counters["stored"] = static_cast<double>(cov.size());
}

// Registers Coverage_<name>/<N>/<dim> for N = 10^3 .. 10^6 (10^6 only where `big`, at 10-d).
template <typename Make>
void register_coverage(const std::string& name, Make make, bool clustered, bool big) {
  for (Index dim : {10, 100, 200})
    for (Index n : {1000, 10000, 100000, 1000000}) {
      if (n == 1000000 && !(big && dim == 10)) continue;  // 10^6: the KD-tree on logits only
      if (n == 100000 && dim == 200) continue;
      auto* b = benchmark::RegisterBenchmark(("BM_Coverage_" + name).c_str(),
                                             [=](benchmark::State& s) { coverage_scaling(s, make(), clustered); });
      b->Args({n, dim})->Iterations(std::max<Index>(1, n / 1000))->Unit(benchmark::kMicrosecond);
      if (n <= 10000) b->Repetitions(5)->ReportAggregatesOnly(true);
    }
}
const bool coverage_registered = [] {
  auto kd = [] { return KdTreeCoverage(1e-3f); };
  auto bf = [] { return BruteForceCoverage(1e-3f); };
  register_coverage("KdTree_Random", kd, false, true);
  register_coverage("KdTree_Clustered", kd, true, true);
  // Every rebuild on the calling thread: the pauses the background rebuilds remove.
  register_coverage(
      "KdTreeBlocking_Clustered", [] { return KdTreeCoverage(1e-3f, 16, std::numeric_limits<Index>::max()); }, true,
      true);
  register_coverage("BruteForce_Random", bf, false, false);
  register_coverage("BruteForce_Clustered", bf, true, false);
  register_coverage(
      "Auto_Clustered", [] { return AutoCoverage(1e-3f); }, true, false);
  return true;
}();

// --- Corpus memory: resident bytes of 10^6 MNIST inputs with 10-d coverage vectors ----------
long resident_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}
void BM_CorpusMemory(benchmark::State& state) {
  const Index n = state.range(0);
  for (auto _ : state) {
    const long before = resident_kib();
    Corpus c(784, 10);
    c.reserve(n);
    RowVector in = RowVector::Constant(784, 0.5f), cov = RowVector::Constant(10, 1.0f);
    for (Index i = 0; i < n; ++i) c.add(in.data(), cov.data(), i - 1, 0, 1, static_cast<std::uint64_t>(i));
    const double rss = 1024.0 * static_cast<double>(resident_kib() - before);
    const double raw = static_cast<double>(n) * (784 + 10) * sizeof(float);
    state.counters["resident_MB"] = rss / 1e6;
    state.counters["raw_MB"] = raw / 1e6;
    state.counters["ratio"] = rss / raw;
  }
}
BENCHMARK(BM_CorpusMemory)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);

// --- The character-level language model (TensorFuzz's third experiment) ------------------
// The experiment's shape: a GRU of H = 384 over 97 ids, 21-id prompts (boundary + 20 chars),
// 80 chars sampled at temperature 1. Weights are random: speed does not depend on training.
CharRnnTarget char_rnn_target() {
  CharRnn net({97, 32, 384});
  net.init(1);
  std::string symbols;
  for (char c = 32; c < 127; ++c) symbols.push_back(c);
  symbols.push_back('\n');
  return CharRnnTarget(std::move(net), Alphabet(symbols), 33, 80, 1.0f);
}
std::vector<InputValue> char_rnn_seeds(const CharRnnTarget& t, Index n) {
  std::vector<InputValue> seeds;
  Rng rng(4);
  for (Index i = 0; i < n; ++i) {
    seeds.push_back(t.prompt("Never put off until " + std::to_string(1000 + i)));
    rng.fill_uniform(seeds.back().floats[1].data(), seeds.back().floats[1].size(), 0.0f, 1.0f);
  }
  return seeds;
}
// The limit: generation alone (items/s = prompts continued; x 101 fed chars each).
void BM_Generate_CharRnn(benchmark::State& state) {
  CharRnnTarget t = char_rnn_target();
  const std::vector<InputValue> seeds = char_rnn_seeds(t, state.range(0));
  InputBatch batch;
  batch.reserve(t.input_layout(), state.range(0));
  for (Index r = 0; r < state.range(0); ++r) batch.set_row(r, seeds[static_cast<std::size_t>(r)]);
  CharRnnTarget::Output out;
  for (auto _ : state) {
    t.evaluate(batch, out);
    benchmark::DoNotOptimize(out.coverage.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["chars/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * state.range(0) * 80), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Generate_CharRnn)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->Apply(repeated);
// The experiment's loop: 6,400 executions from 10 seeds, blacklist objective, batch 64.
template <typename Coverage, typename Sampler>
void char_rnn_loop(benchmark::State& state, Coverage coverage, Sampler sampler) {
  CharRnnTarget t = char_rnn_target();
  const std::vector<InputValue> seeds = char_rnn_seeds(t, 10);
  StructuredMutatorOptions mo;
  mo.max_edits = 2;
  mo.max_distance = 8;
  mo.keep_prefix = 1;
  for (TokenId id = 1; id < 97; ++id) mo.alphabet.push_back(id);
  FuzzOptions o;
  o.batch_size = state.range(0);
  o.max_executions = 6400;
  o.max_findings = 0;
  o.seed = 1;
  auto fuzzer = make_fuzzer(std::move(t), sampler, StructuredMutator(mo), std::move(coverage),
                            BlacklistObjective({"xylophone"}), o);
  std::uint64_t executions = 0;
  for (auto _ : state) executions += fuzzer.run(seeds).stats.executions;
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
}
void BM_Loop_CharRnn_Calibrated(benchmark::State& s) { char_rnn_loop(s, CalibratedCoverage(), RecentSampler()); }
void BM_Loop_CharRnn_NoCoverage(benchmark::State& s) { char_rnn_loop(s, NoCoverage(), UniformSampler()); }
BENCHMARK(BM_Loop_CharRnn_Calibrated)->Arg(64)->Unit(benchmark::kMillisecond)->Apply(repeated);
BENCHMARK(BM_Loop_CharRnn_NoCoverage)->Arg(64)->Unit(benchmark::kMillisecond)->Apply(repeated);

// --- Mutation ------------------------------------------------------------------------------
template <typename Mutator>
void mutation(benchmark::State& state, Mutator m) {
  Rng rng(7);
  const RowVector parent = random_inputs(1, 8);
  RowMatrix batch(100, 784);
  for (auto _ : state) {
    m.mutate(parent, parent, batch, rng);
    benchmark::DoNotOptimize(batch.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
void BM_Mutate_Gaussian(benchmark::State& s) { mutation(s, GaussianMutator(0.1f)); }
void BM_Mutate_GaussianLinfBall(benchmark::State& s) { mutation(s, GaussianMutator(0.1f, MutationBounds{0, 1, 0.2f})); }
void BM_Mutate_Uniform(benchmark::State& s) { mutation(s, UniformMutator(0.1f)); }
// Baseline: std::normal_distribution over std::mt19937, the textbook way.
void BM_Mutate_StdNormalBaseline(benchmark::State& state) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  const RowVector parent = random_inputs(1, 8);
  RowMatrix batch(100, 784);
  for (auto _ : state) {
    for (Index r = 0; r < 100; ++r)
      for (Index c = 0; c < 784; ++c) batch(r, c) = std::min(1.0f, std::max(0.0f, parent(c) + normal(gen)));
    benchmark::DoNotOptimize(batch.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_Mutate_Gaussian)->Apply(repeated);
BENCHMARK(BM_Mutate_GaussianLinfBall)->Apply(repeated);
BENCHMARK(BM_Mutate_Uniform)->Apply(repeated);
BENCHMARK(BM_Mutate_StdNormalBaseline)->Apply(repeated);

}  // namespace

BENCHMARK_MAIN();
