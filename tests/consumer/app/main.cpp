// nnfuzz consumer test: the program every consumer project (find_package, add_subdirectory,
// Meson subproject) builds against nnfuzz. It plants a bug in a tiny model, fuzzes it with the
// default policies, and exits 0 only when the fuzzer finds the bug: proof that the headers,
// their dependencies and the compile flags a consumer gets all work.
#include <nnfuzz/nnfuzz.hpp>  // first, before Eigen (F16C for Eigen::half under GCC)

#include <cstdio>

#if NNFUZZ_VERSION < 0x000100
#  error "nnfuzz consumer test: expected nnfuzz >= 0.1.0"
#endif

namespace {

/// s = mean of the 16 inputs; y = sqrt((s - 0.80)(s - 0.83)) is NaN exactly when s lies in the
/// narrow band (0.80, 0.83), far from the seeds at 0.1. Coverage is s itself, so coverage-guided
/// fuzzing walks s up, generation after generation, until it lands in the band.
struct BandModel {
  struct Output {
    nnfuzz::RowMatrix coverage;  // B x 1: s
    nnfuzz::RowMatrix y;         // B x 1
    template <class F>
    void for_each_tensor(F&& f) const {
      f("coverage", coverage);
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    out.y = ((out.coverage.array() - 0.80f) * (out.coverage.array() - 0.83f)).sqrt().matrix();
  }
};

}  // namespace

int main() {
  nnfuzz::FuzzOptions options;
  options.seed = 1;
  options.batch_size = 50;
  options.max_executions = 100000;

  auto fuzzer = nnfuzz::make_fuzzer(BandModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    nnfuzz::KdTreeCoverage(0.005f), nnfuzz::NonFiniteObjective(), options);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
  const nnfuzz::FuzzResult result = fuzzer.run(seeds);

  const nnfuzz::FuzzStats& st = result.stats;
  std::printf("nnfuzz %d.%d.%d consumer: %llu executions, %llu iterations, corpus %lld, %lld finding(s)\n",
              NNFUZZ_VERSION_MAJOR, NNFUZZ_VERSION_MINOR, NNFUZZ_VERSION_PATCH,
              static_cast<unsigned long long>(st.executions), static_cast<unsigned long long>(st.iterations),
              static_cast<long long>(st.corpus_size), static_cast<long long>(st.findings));
  if (!result.found()) {
    std::printf("FAIL: no finding (expected NaN in 'y' for inputs with mean in (0.80, 0.83))\n");
    return 1;
  }
  const nnfuzz::Finding& f = result.findings.front();
  const bool replays = fuzzer.replay(f.input);
  std::printf("finding: %s at execution %llu, depth %lld, input mean %.4f, replays: %s\n", f.what.c_str(),
              static_cast<unsigned long long>(f.execution), static_cast<long long>(f.depth),
              static_cast<double>(f.input.mean()), replays ? "yes" : "no");
  return replays ? 0 : 1;
}
