// SPDX-License-Identifier: MIT
// nnfuzz consumer test: a program written against nnfuzz 0.1 — its documented header paths
// (io/, models/versions.hpp, models/targets.hpp, testing.hpp, text_*.hpp, coverage/threshold.hpp)
// and its `threshold` names — built unchanged against this release, which must compile it with
// deprecation warnings only (run.sh checks each warning names the new path) and run it right.
// The user's own code: two releases of a float* scorer, the second with a planted regression.
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/coverage/threshold.hpp>
#include <nnfuzz/io/campaign.hpp>
#include <nnfuzz/io/sync.hpp>
#include <nnfuzz/io/text.hpp>
#include <nnfuzz/io/weights.hpp>
#include <nnfuzz/models/char_rnn_target.hpp>
#include <nnfuzz/models/targets.hpp>
#include <nnfuzz/models/versions.hpp>
#include <nnfuzz/testing.hpp>
#include <nnfuzz/text_mutators.hpp>
#include <nnfuzz/text_objectives.hpp>
#ifdef V01_WITH_IDX  // nnfuzz::models (0.1's name of nnfuzz::data): the IDX reader and zlib
# include <nnfuzz/io/idx.hpp>
#endif

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

// The user's scorer: two classes from the mean s of 8 floats. Release 2 flips its answer when s
// lies in (0.70, 0.72), far from the seeds at 0.2.
void score(const float* x, long n, bool release2, float* logits) {
  for (long r = 0; r < n; ++r) {
    float s = 0;
    for (int c = 0; c < 8; ++c) s += x[r * 8 + c];
    s /= 8;
    const bool flip = release2 && s > 0.70f && s < 0.72f;
    logits[2 * r] = flip ? s : 1 - s;
    logits[2 * r + 1] = flip ? 1 - s : s;
  }
}

struct Scorer {
  bool release2 = false;
  struct Output {
    nnfuzz::RowMatrix coverage, logits;
  };
  nnfuzz::Index input_dim() const { return 8; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.logits.resize(batch.rows(), 2);
    score(batch.data(), static_cast<long>(batch.rows()), release2, out.logits.data());
    out.coverage = out.logits.leftCols(1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path work = argc > 1 ? argv[1] : "v01_work";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  const nnfuzz::RowMatrix seeds = nnfuzz::RowMatrix::Constant(4, 8, 0.2f);

  // coverage/threshold.hpp and the threshold names of 0.1.
  nnfuzz::KdTreeCoverage coverage(nnfuzz::coverage_threshold_from_squared(0.0004f));
  check(std::fabs(coverage.threshold() - 0.02f) < 1e-6f, "coverage_threshold_from_squared() and threshold()");
  coverage.set_threshold(0.01f);
  check(coverage.threshold() == 0.01f, "set_threshold()");

  // models/versions.hpp + io/campaign.hpp: the regression between releases, saved and resumed.
  nnfuzz::FuzzOptions options;
  options.seed = 3;
  options.max_executions = 200000;
  auto fuzzer = nnfuzz::make_fuzzer(nnfuzz::VersionPair<Scorer, Scorer>(Scorer{false}, Scorer{true}),
                                    nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f, {0.0f, 1.0f}), coverage,
                                    nnfuzz::DisagreementObjective(), options);
  const std::string dir = (work / "campaign").string();
  nnfuzz::FuzzResult r;
  {
    nnfuzz::CampaignSaver saver(dir, options.seed);
    r = fuzzer.run(seeds, saver);
  }
  check(r.found(), "VersionPair + DisagreementObjective find release 2's regression");
  check(!nnfuzz::load_findings(dir).empty(), "CampaignSaver wrote the finding; load_findings() reads it");
  const nnfuzz::Corpus corpus = nnfuzz::load_corpus(dir);
  check(corpus.size() >= 4, "load_corpus() reads the corpus back");
  const nnfuzz::FuzzResult resumed = fuzzer.resume(corpus);
  check(resumed.found(), "resume() from the saved corpus");

  // io/sync.hpp: one worker of a sync directory.
  {
    nnfuzz::SyncDirectory sync((work / "sync").string(), "w0");
    check(fuzzer.run(seeds, sync).found(), "SyncDirectory as a run() argument");
  }

  // testing.hpp: release 1 against itself passes a unit-test campaign.
  auto same = nnfuzz::make_fuzzer(nnfuzz::VersionPair<Scorer, Scorer>(Scorer{false}, Scorer{false}),
                                  nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f, {0.0f, 1.0f}),
                                  nnfuzz::KdTreeCoverage(0.01f), nnfuzz::DisagreementObjective(), options);
  nnfuzz::FuzzTestOptions campaign;
  campaign.max_executions = 5000;
  check(nnfuzz::fuzz_test(same, seeds, campaign).passed, "fuzz_test() passes on identical releases");

  // io/weights.hpp + models/targets.hpp: an MLP saved, loaded and wrapped as a NaN target.
  nnfuzz::Mlp<float> net({8, 4, 2});
  net.init_uniform(0.5f, 7);
  const std::string weights = (work / "net.bin").string();
  nnfuzz::save_mlp(weights, net);
  nnfuzz::NanTarget target(nnfuzz::load_mlp(weights));
  check(target.input_dim() == 8, "save_mlp() / load_mlp() / NanTarget");

  // io/text.hpp, text_mutators.hpp, text_objectives.hpp.
  check(nnfuzz::parse_fortunes("one\n%\ntwo\n%\n").size() == 2, "parse_fortunes()");
  nnfuzz::StructuredMutatorOptions edits;
  edits.max_distance = 4;
  nnfuzz::StructuredMutator mutator(edits);
  nnfuzz::BlacklistObjective blacklist({"debian"});
  (void)mutator;
  (void)blacklist;

#ifdef V01_WITH_IDX
  const std::string idx = (work / "images.idx").string();
  nnfuzz::write_idx(idx, nnfuzz::IdxArray{{2, 3}, {1, 2, 3, 4, 5, 6}});
  check(nnfuzz::read_idx(idx).data.size() == 6, "write_idx() / read_idx()");
#endif
  std::printf("%s\n", failures ? "the 0.1-style program FAILED" : "the 0.1-style program runs");
  return failures ? 1 : 0;
}
