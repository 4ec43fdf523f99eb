// SPDX-License-Identifier: MIT
// nnfuzz benchmarks built the way a user builds: an outside project's own flags, not nnfuzz's.
// CMake builds this file twice: bench_user_o2 (-O2, no -march: what an installed package gives
// a project that asks for nothing) and bench_user_native (-O2 -march=native). Each benchmark
// takes the noise kernel as its argument (0 generic, 1 avx2, 2 avx512; skipped when the CPU
// lacks it), so one run measures every instruction set of the mutant path on one machine:
//
//   build/benchmarks/bench_user_o2 --benchmark_enable_random_interleaving=true
//
// BM_User_Mutate_*: one 784-value GaussianMutator mutant (items/s = mutants/s, batch of 100).
// BM_User_Forward: the user's own 784-64-10 float* MLP alone (items/s = inputs/s).
// BM_User_MlpForward: nnfuzz's Mlp<float> 784-200-100-10 at batch 100 in the user's build, through
// the generic SSE2 dense kernel (kernel:0), the AVX2 + FMA one (kernel:1) or the AVX-512 one (kernel:2); GFLOPS
// counter (issue #37).
// BM_User_Loop_*: the fuzz loop over that MLP through FunctionModel; the counter
// `forward_share` is the time inside the user's forward divided by the loop's time (the loop's
// executions/s as a fraction of the forward pass alone, measured in the same run).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/models/mlp.hpp>

#include <benchmark/benchmark.h>

#include "fma_peak.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

namespace {

using nnfuzz::Index;
using nnfuzz::NoiseKernel;

// --- Kernel argument -------------------------------------------------------------------------
const NoiseKernel kKernels[] = {NoiseKernel::generic, NoiseKernel::avx2, NoiseKernel::avx512};
const char* const kKernelNames[] = {"generic", "avx2", "avx512"};
// Forces the benchmark's kernel for its duration (false: the CPU lacks it, the run is skipped).
struct ForcedKernel {
  bool ok = true;
  explicit ForcedKernel(benchmark::State& state) {
    const auto k = static_cast<std::size_t>(state.range(0));
    try {
      nnfuzz::set_noise_kernel(kKernels[k]);
    } catch (const std::exception& e) {
      ok = false;
      state.SkipWithError(e.what());
      return;
    }
    state.SetLabel(kKernelNames[k]);
  }
  ~ForcedKernel() { nnfuzz::set_noise_kernel(NoiseKernel::automatic); }
};
void kernels(benchmark::internal::Benchmark* b) {
  b->ArgName("kernel")->Arg(0)->Arg(1)->Arg(2)->Repetitions(5)->ReportAggregatesOnly(true);
}

// --- Mutation: one 784-value mutant ----------------------------------------------------------
template <typename Mutator>
void mutation(benchmark::State& state, Mutator m) {
  ForcedKernel k(state);
  if (!k.ok) return;
  nnfuzz::Rng rng(7);
  nnfuzz::RowVector parent(784);
  rng.fill_uniform(parent.data(), 784, 0.0f, 1.0f);
  nnfuzz::RowMatrix batch(100, 784);
  for (auto _ : state) {
    m.mutate(parent, parent, batch, rng);
    benchmark::DoNotOptimize(batch.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
void BM_User_FillNormal(benchmark::State& state) {  // the noise alone, 784 values per item
  ForcedKernel k(state);
  if (!k.ok) return;
  nnfuzz::Rng rng(7);
  std::vector<float> x(784 * 100);
  for (auto _ : state) {
    rng.fill_normal(x.data(), static_cast<Index>(x.size()));
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
void BM_User_Mutate_Gaussian(benchmark::State& s) { mutation(s, nnfuzz::GaussianMutator(0.1f)); }
void BM_User_Mutate_GaussianLinfBall(benchmark::State& s) {
  mutation(s, nnfuzz::GaussianMutator(0.1f, nnfuzz::MutationBounds{0, 1, 0.2f}));
}
void BM_User_Mutate_GaussianMultiScale(benchmark::State& s) {
  mutation(s, nnfuzz::GaussianMutator(0.1f, nnfuzz::MutationBounds{}, 4.0f));
}
BENCHMARK(BM_User_FillNormal)->Apply(kernels);
BENCHMARK(BM_User_Mutate_Gaussian)->Apply(kernels);
BENCHMARK(BM_User_Mutate_GaussianLinfBall)->Apply(kernels);
BENCHMARK(BM_User_Mutate_GaussianMultiScale)->Apply(kernels);

void BM_User_MlpForward(benchmark::State& state) {
  ForcedKernel k(state);
  if (!k.ok) return;
  nnfuzz::Mlp<float> net({784, 200, 100, 10});
  net.init_truncated_normal(0, 1);
  nnfuzz::RowMatrix x(100, 784);
  nnfuzz::Rng rng(2);
  rng.fill_uniform(x.data(), x.size(), 0.0f, 1.0f);
  nnfuzz::Mlp<float>::Trace t;
  for (auto _ : state) {
    net.forward(x, t);
    benchmark::DoNotOptimize(t.logits().data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * (784 * 200 + 200 * 100 + 100 * 10) * 100e-9 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_User_MlpForward)->Apply(kernels);
#if defined(NNFUZZ_X86_DISPATCH)
BENCHMARK(nnfuzz_bench::BM_FmaPeak_Avx2)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(nnfuzz_bench::BM_FmaPeak_Avx512)->Repetitions(5)->ReportAggregatesOnly(true);
#endif

// --- The user's model: a 784-64-10 MLP over plain float arrays ------------------------------
// Written as a user would write it: loops over std::vector<float>, no BLAS, ReLU, row-major
// weights. Compiled with the benchmark's flags (the user's).
struct UserMlp {
  std::vector<float> w1, b1, w2, b2;
  double* forward_seconds = nullptr;  // where the loop benchmarks add the time spent here
  UserMlp() : w1(784 * 64), b1(64), w2(64 * 10), b2(10) {
    nnfuzz::Rng rng(9);
    rng.fill_uniform(w1.data(), static_cast<Index>(w1.size()), -0.08f, 0.08f);
    rng.fill_uniform(w2.data(), static_cast<Index>(w2.size()), -0.3f, 0.3f);
    rng.fill_uniform(b1.data(), 64, -0.1f, 0.1f);
  }
  void run(const float* in, Index rows, float* out) const {
    float h[64];
    for (Index r = 0; r < rows; ++r) {
      const float* x = in + r * 784;
      for (int j = 0; j < 64; ++j) h[j] = b1[static_cast<std::size_t>(j)];
      for (int i = 0; i < 784; ++i) {
        const float xi = x[i];
        const float* w = w1.data() + i * 64;
        for (int j = 0; j < 64; ++j) h[j] += xi * w[j];
      }
      for (int j = 0; j < 64; ++j) h[j] = h[j] > 0.0f ? h[j] : 0.0f;
      float* y = out + r * 10;
      for (int k = 0; k < 10; ++k) y[k] = b2[static_cast<std::size_t>(k)];
      for (int j = 0; j < 64; ++j)
        for (int k = 0; k < 10; ++k) y[k] += h[j] * w2[static_cast<std::size_t>(j * 10 + k)];
    }
  }
  void operator()(const float* in, Index rows, float* out) const {
    if (!forward_seconds) return run(in, rows, out);
    const auto t0 = std::chrono::steady_clock::now();
    run(in, rows, out);
    *forward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};
nnfuzz::RowMatrix user_seeds(Index n) {
  nnfuzz::RowMatrix x(n, 784);
  nnfuzz::Rng rng(3);
  rng.fill_uniform(x.data(), x.size(), 0.0f, 1.0f);
  return x;
}

void BM_User_Forward(benchmark::State& state) {  // the limit: the user's forward alone, 100 rows
  const UserMlp mlp;
  const nnfuzz::RowMatrix x = user_seeds(100);
  std::vector<float> out(100 * 10);
  for (auto _ : state) {
    mlp(x.data(), 100, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_User_Forward)->Repetitions(5)->ReportAggregatesOnly(true);

// Each iteration: one run() of 20,000 executions from 10 seeds, batch 100.
template <typename MakeFuzzer>
void user_loop(benchmark::State& state, MakeFuzzer make) {
  ForcedKernel k(state);
  if (!k.ok) return;
  double forward_seconds = 0, loop_seconds = 0;
  UserMlp mlp;
  mlp.forward_seconds = &forward_seconds;
  nnfuzz::FuzzOptions o;
  o.max_executions = 20000;
  o.max_findings = 0;
  o.seed = 1;
  auto fuzzer = make(nnfuzz::FunctionModel<UserMlp>(mlp, 784, 10), o);
  const nnfuzz::RowMatrix seeds = user_seeds(10);
  std::uint64_t executions = 0;
  Index corpus = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const nnfuzz::FuzzResult r = fuzzer.run(seeds);
    loop_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    executions += r.stats.executions;
    corpus = r.stats.corpus_size;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
  state.counters["corpus"] = static_cast<double>(corpus);
  state.counters["forward_share"] = loop_seconds > 0 ? forward_seconds / loop_seconds : 0.0;
}
// NoCoverage, multi-scale Gaussian noise (sigma_range 4): the loop's own overhead.
void BM_User_Loop_NoCoverage(benchmark::State& state) {
  user_loop(state, [](auto model, nnfuzz::FuzzOptions o) {
    return nnfuzz::make_fuzzer(std::move(model), nnfuzz::RecentSampler(),
                               nnfuzz::GaussianMutator(0.1f, nnfuzz::MutationBounds{}, 4.0f), nnfuzz::NoCoverage(),
                               nnfuzz::NonFiniteObjective(), o);
  });
}
// make_fuzzer(model, options): the default policies, whatever they are in this version.
void BM_User_Loop_Default(benchmark::State& state) {
  user_loop(state, [](auto model, nnfuzz::FuzzOptions o) { return nnfuzz::make_fuzzer(std::move(model), o); });
}
BENCHMARK(BM_User_Loop_NoCoverage)->Apply(kernels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_User_Loop_Default)->Apply(kernels)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
