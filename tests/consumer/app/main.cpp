// SPDX-License-Identifier: MIT
// nnfuzz consumer test: the program every consumer project (find_package, add_subdirectory,
// Meson subproject) builds against the nnfuzz *core* (Eigen, nanoflann, threads: no zlib). It is
// written the way a user writes it: the model is the user's own inference code (a plain float*
// forward over contiguous rows) with a planted bug, fuzzed with the default policies
// (Fuzzer<Model>), the campaign saved to a directory and loaded back. Exits 0 only when the
// fuzzer finds the bug, the finding is on disk and replays.
#include <nnfuzz/nnfuzz.hpp>  // first, before Eigen (F16C for Eigen::half under GCC)
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#if NNFUZZ_VERSION < 0x000200
# error "nnfuzz consumer test: expected nnfuzz >= 0.2.0"
#endif

namespace {

// The user's inference code: n inputs of 16 floats, row after row. y is NaN exactly when the
// mean s of an input lies in the narrow band (0.80, 0.83), far from the seeds at 0.1.
void forward(const float* x, long n, float* mean, float* y) {
  for (long r = 0; r < n; ++r) {
    float s = 0;
    for (int c = 0; c < 16; ++c) s += x[r * 16 + c];
    s /= 16;
    mean[r] = s;
    y[r] = std::sqrt((s - 0.80f) * (s - 0.83f));
  }
}

struct BandModel {
  struct Output {
    nnfuzz::RowMatrix coverage;  // B x 1: s
    nnfuzz::RowMatrix y;         // B x 1
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.coverage.resize(batch.rows(), 1);
    out.y.resize(batch.rows(), 1);
    forward(batch.data(), static_cast<long>(batch.rows()), out.coverage.data(), out.y.data());  // contiguous rows
  }
};

// The user's token model: sequences of ids in [0, 8), NaN when one holds four 5s in a row.
struct RunModel {
  struct Output {
    nnfuzz::RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  nnfuzz::InputLayout input_layout() const { return nnfuzz::InputLayout().tokens("ids", 8, 12); }
  void evaluate(const nnfuzz::InputBatch& batch, Output& out) const {
    out.coverage.resize(batch.rows(), 1);
    out.y.resize(batch.rows(), 1);
    for (nnfuzz::Index r = 0; r < batch.rows(); ++r) {
      const int* ids = batch.ids(0, r);  // engine-ready: contiguous int32 ids, then padding
      int run = 0, best = 0;
      for (nnfuzz::Index i = 0; i < batch.length(0, r); ++i) best = std::max(best, run = ids[i] == 5 ? run + 1 : 0);
      out.coverage(r, 0) = static_cast<float>(best);
      out.y(r, 0) = best >= 4 ? std::nanf("") : 0.0f;
    }
  }
};

// Structured inputs from the installed package: token seeds, the shipped text mutator, replay.
bool fuzz_tokens() {
  nnfuzz::FuzzOptions options;
  options.seed = 2;
  options.batch_size = 20;
  options.max_executions = 50000;
  auto fuzzer = nnfuzz::make_fuzzer(RunModel{}, nnfuzz::RecentSampler(), nnfuzz::StructuredMutator(),
                                    nnfuzz::BruteForceCoverage(0.5f), nnfuzz::NonFiniteObjective(), options);
  const nnfuzz::FuzzResult r = fuzzer.run(std::vector<nnfuzz::InputValue>{nnfuzz::token_input({1, 2, 3})});
  std::printf("token model: %s after %llu executions\n", r.found() ? "four 5s found" : "nothing",
              static_cast<unsigned long long>(r.stats.executions));
  return r.found() && fuzzer.replay(r.findings.front().value);
}

// The user's own schedule, written against the documented feedback hook: picks the newest
// element and counts the batches it hears about.
struct CountingSampler {
  long* batches;
  nnfuzz::Index pick(const nnfuzz::Corpus& corpus, nnfuzz::Rng&) const { return corpus.size() - 1; }
  void feedback(const nnfuzz::BatchFeedback& b, const nnfuzz::Corpus&) { *batches += b.rows > 0; }
};

// Guidance from the installed package (docs/guidance.md): a fitness the user writes (how close
// the mean is to the band), the fittest parents picked more often, an operator bandit, and a
// calibrated radius OR'ed with a neuron criterion.
bool fuzz_with_guidance() {
  nnfuzz::FuzzOptions options;
  options.seed = 3;
  options.batch_size = 50;
  options.max_executions = 100000;
  auto fitness = [](const BandModel::Output& out, nnfuzz::Index r) { return -std::abs(out.coverage(r, 0) - 0.815f); };
  nnfuzz::CalibrationOptions calibration;
  calibration.window = 500;
  auto fuzzer =
      nnfuzz::make_fuzzer(BandModel{}, nnfuzz::FitnessSampler<nnfuzz::RecentSampler>(),
                          nnfuzz::make_bandit_mutator(nnfuzz::GaussianMutator(0.01f), nnfuzz::GaussianMutator(0.05f)),
                          nnfuzz::any_of(nnfuzz::CalibratedCoverage(calibration), nnfuzz::KMNCoverage({1}, 10)),
                          nnfuzz::with_fitness(nnfuzz::NonFiniteObjective(), fitness), options);
  const nnfuzz::FuzzResult r = fuzzer.run(nnfuzz::RowMatrix::Constant(4, 16, 0.1f));
  const auto& arms = fuzzer.mutator().batches();
  std::printf("guidance: %s after %llu executions, best fitness %g, bandit batches %llu / %llu\n",
              r.found() ? "NaN found" : "nothing", static_cast<unsigned long long>(r.stats.executions),
              static_cast<double>(r.stats.best_fitness), static_cast<unsigned long long>(arms[0]),
              static_cast<unsigned long long>(arms[1]));
  long heard = 0;
  auto own = nnfuzz::make_fuzzer(BandModel{}, CountingSampler{&heard}, nnfuzz::GaussianMutator(0.05f),
                                 nnfuzz::CalibratedCoverage(), nnfuzz::NonFiniteObjective(), options);
  const nnfuzz::FuzzResult o = own.run(nnfuzz::RowMatrix::Constant(4, 16, 0.1f));
  std::printf("own sampler: heard %ld batches of %llu\n", heard, static_cast<unsigned long long>(o.stats.iterations));
  return r.found() && fuzzer.replay(r.findings.front().input) && r.stats.best_fitness > -0.015f &&
         heard == static_cast<long>(o.stats.iterations);
}

// Two workers of one campaign sharing a sync directory (docs/scaling.md): the second, started
// after the first, imports what the first found.
bool fuzz_two_workers(const std::string& dir) {
  nnfuzz::FuzzOptions options;
  options.batch_size = 50;
  options.max_executions = 3000;
  options.max_findings = 0;
  nnfuzz::SyncOptions sync_options;
  sync_options.interval_executions = 500;  // deterministic: sync by executions
  nnfuzz::Index imported = 0;
  for (const char* worker : {"0", "1"}) {
    options.seed = worker[0] == '0' ? 7 : 8;
    auto fuzzer = nnfuzz::make_fuzzer(BandModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.02f),
                                      nnfuzz::KdTreeCoverage(0.001f), nnfuzz::NonFiniteObjective(), options);
    nnfuzz::SyncDirectory sync(dir, worker, sync_options);
    const nnfuzz::FuzzResult r = fuzzer.run(nnfuzz::RowMatrix::Constant(2, 16, 0.1f), sync);
    imported = r.stats.imported;
  }
  std::printf("sync: the second worker imported %lld elements of the first\n", static_cast<long long>(imported));
  return imported > 0 && nnfuzz::sync_workers(dir).size() == 2;
}

}  // namespace

// First contact as the README shows it: the user's own float* forward, FunctionModel, the default
// policies; then with_coverage() swaps one policy for random search.
bool fuzz_function_model() {
  // The user's inference code, rows of 16 floats in, 2 floats out: the second is NaN when the
  // first input passes 0.95.
  auto my_forward = [](const float* in, nnfuzz::Index rows, float* out) {
    for (nnfuzz::Index r = 0; r < rows; ++r, in += 16, out += 2) {
      out[0] = in[1] - in[2];
      out[1] = std::sqrt(0.95f - in[0]);
    }
  };
  nnfuzz::FuzzOptions options;
  options.max_executions = 50000;
  options.seed = 5;
  auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::FunctionModel<decltype(my_forward)>(my_forward, 16, 2), options);
  const nnfuzz::FuzzResult r = fuzzer.run(nnfuzz::RowMatrix::Constant(2, 16, 0.5f));
  auto random = nnfuzz::make_fuzzer(nnfuzz::FunctionModel<decltype(my_forward)>(my_forward, 16, 2), options)
                    .with_coverage(nnfuzz::NoCoverage());
  const nnfuzz::FuzzResult rr = random.run(nnfuzz::RowMatrix::Constant(2, 16, 0.5f));
  std::printf("FunctionModel: defaults %s after %llu executions (fired: '%s'); random search corpus %lld\n",
              r.found() ? "found the NaN" : "found nothing", static_cast<unsigned long long>(r.stats.executions),
              r.found() ? r.findings[0].fired.c_str() : "", static_cast<long long>(rr.stats.corpus_size));
  return r.found() && r.findings[0].fired == "output" && fuzzer.replay(r.findings[0].input) &&
         rr.stats.corpus_size == 2;
}

// A user's classifier whose unsafe softmax (exp(l) / sum exp(l), then -log p of the predicted class
// summed over the one-hot vector) turns NaN when a probability underflows to 0: 16 inputs, their
// mean s, logits (60 s, -60 s); out: 2 logits, 2 probabilities, the loss.
struct SoftmaxBandClassifier {
  void operator()(const float* in, nnfuzz::Index rows, float* out) const {
    for (nnfuzz::Index r = 0; r < rows; ++r, in += 16, out += 5) {
      float s = 0;
      for (int c = 0; c < 16; ++c) s += in[c] / 16;
      out[0] = 60 * s;
      out[1] = -60 * s;
      const float e0 = std::exp(out[0]), e1 = std::exp(out[1]);
      out[2] = e0 / (e0 + e1);
      out[3] = e1 / (e0 + e1);
      const int label = out[0] >= out[1] ? 0 : 1;
      out[4] = -((label == 0 ? 1.0f : 0.0f) * std::log(out[2]) + (label == 1 ? 1.0f : 0.0f) * std::log(out[3]));
    }
  }
};

// The defaults against TensorFuzz's set-up, as a user compares them from the README: a user's
// classifier whose unsafe softmax (exp(l) / sum exp(l), then -log p of the predicted class
// summed over the one-hot vector) turns NaN when a probability underflows to 0. The defaults
// follow NonFiniteObjective's own fitness; TensorFuzz's set-up is the same fuzzer with
// RecentSampler, GaussianMutator and no fitter mutants kept. Median executions over 10 seeds.
bool fuzz_defaults_vs_tensorfuzz() {
  const SoftmaxBandClassifier classifier{};
  using Model = nnfuzz::FunctionModel<SoftmaxBandClassifier>;
  std::vector<double> now, before;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    nnfuzz::FuzzOptions options;
    options.max_executions = 100000;
    options.seed = seed;
    const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
    const nnfuzz::FuzzResult a = nnfuzz::make_fuzzer(Model(classifier, 16, 5), options).run(seeds);
    options.keep_fitter = false;
    const nnfuzz::FuzzResult b = nnfuzz::make_fuzzer(Model(classifier, 16, 5), options)
                                     .with_sampler(nnfuzz::RecentSampler())
                                     .with_mutator(nnfuzz::GaussianMutator())
                                     .run(seeds);
    now.push_back(a.found() ? static_cast<double>(a.findings[0].execution) : 1e12);
    before.push_back(b.found() ? static_cast<double>(b.findings[0].execution) : 1e12);
  }
  std::sort(now.begin(), now.end());
  std::sort(before.begin(), before.end());
  const double m_now = (now[4] + now[5]) / 2, m_before = (before[4] + before[5]) / 2;
  std::printf("defaults vs TensorFuzz's set-up, softmax underflow: median %.0f vs %.0f executions (10 seeds)\n", m_now,
              m_before);
  return now[9] < 1e12 && m_now < m_before;
}

// The four baselines by name (nnfuzz/baselines.hpp), as docs/guidance.md shows them, on a user's
// own float* classifier whose unsafe softmax turns NaN when a probability underflows (logits
// 60 s, -60 s for s the input's mean): random search never leaves the seeds' neighbourhood and
// its corpus stays the seeds; the defaults walk there on coverage, then follow NonFiniteObjective's
// fitness (which says nothing until a probability falls 2^24 below the largest: fitness only
// does not get off the seeds).
bool fuzz_baselines() {
  const SoftmaxBandClassifier classifier{};
  using Model = nnfuzz::FunctionModel<SoftmaxBandClassifier>;
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 16, 0.1f);
  nnfuzz::BaselineSettings settings;  // σ 0.1 on [0, 1], TensorFuzz's radius
  nnfuzz::FuzzOptions options;
  options.max_executions = 100000;
  options.seed = 4;
  int found[4] = {0, 0, 0, 0};
  long corpus[4] = {0, 0, 0, 0};
  for (nnfuzz::Baseline b : nnfuzz::kBaselines)
    nnfuzz::with_baseline(b, Model(classifier, 16, 5), nnfuzz::NonFiniteObjective(), settings, options,
                          [&](auto& fuzzer) {
                            const nnfuzz::FuzzResult r = fuzzer.run(seeds);
                            found[static_cast<int>(b)] = r.found();
                            corpus[static_cast<int>(b)] = static_cast<long>(r.stats.corpus_size);
                          });
  std::printf(
      "baselines on a user's classifier: found (corpus) random %d (%ld), fitness %d (%ld), tensorfuzz %d "
      "(%ld), default %d (%ld)\n",
      found[0], corpus[0], found[1], corpus[1], found[2], corpus[2], found[3], corpus[3]);
  return found[0] == 0 && corpus[0] == 4 && found[3] == 1;
}

int main() {
  if (!fuzz_baselines()) {
    std::printf("FAIL: random search was not random search, or the defaults missed the NaN past 0.7\n");
    return 1;
  }
  if (!fuzz_defaults_vs_tensorfuzz()) {
    std::printf("FAIL: the default policies did not find the underflow NaN faster than TensorFuzz's set-up\n");
    return 1;
  }
  if (!fuzz_function_model()) {
    std::printf("FAIL: FunctionModel with the default policies did not find the planted NaN\n");
    return 1;
  }
  if (!fuzz_tokens()) {
    std::printf("FAIL: the token model's planted run of 5s was not found or does not replay\n");
    return 1;
  }
  {
    const std::string sync_dir =
        (std::filesystem::temp_directory_path() / ("nnfuzz_consumer_sync_" + std::to_string(::getpid()))).string();
    const bool ok = fuzz_two_workers(sync_dir);
    std::filesystem::remove_all(sync_dir);
    if (!ok) {
      std::printf("FAIL: the second worker imported nothing from the sync directory\n");
      return 1;
    }
  }
  if (!fuzz_with_guidance()) {
    std::printf("FAIL: the guidance run did not find the band, or the feedback hook was not called per batch\n");
    return 1;
  }
  nnfuzz::FuzzOptions options;
  options.seed = 1;
  options.batch_size = 50;
  options.max_executions = 100000;
  nnfuzz::Fuzzer<BandModel> fuzzer(BandModel{});  // default policies
  fuzzer.set_options(options);

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("nnfuzz_consumer_" + std::to_string(::getpid()))).string();
  nnfuzz::FuzzResult result;
  {
    nnfuzz::CampaignSaver saver(dir, options.seed);
    result = fuzzer.run(nnfuzz::RowMatrix::Constant(4, 16, 0.1f), saver);
  }
  const nnfuzz::FuzzStats& st = result.stats;
  std::printf("nnfuzz %d.%d.%d consumer: %llu executions, corpus %lld, radius %g, %lld finding(s)\n",
              NNFUZZ_VERSION_MAJOR, NNFUZZ_VERSION_MINOR, NNFUZZ_VERSION_PATCH,
              static_cast<unsigned long long>(st.executions), static_cast<long long>(st.corpus_size),
              static_cast<double>(st.coverage_radius), static_cast<long long>(st.findings));
  const auto saved = nnfuzz::load_findings(dir);
  const nnfuzz::Corpus corpus = nnfuzz::load_corpus(dir);
  std::filesystem::remove_all(dir);
  if (!result.found() || saved.size() != result.findings.size() || corpus.size() != st.corpus_size) {
    std::printf("FAIL: expected a NaN in 'y', on disk (%zu findings, corpus %lld)\n", saved.size(),
                static_cast<long long>(corpus.size()));
    return 1;
  }
  const nnfuzz::Finding& f = saved.front().finding;
  const bool replays = fuzzer.replay(f.input);
  std::printf("finding: %s at execution %llu, depth %lld, input mean %.4f, replays: %s\n", f.what.c_str(),
              static_cast<unsigned long long>(f.execution), static_cast<long long>(f.depth),
              static_cast<double>(f.input.mean()), replays ? "yes" : "no");
  return replays ? 0 : 1;
}
