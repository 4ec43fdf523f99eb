// SPDX-License-Identifier: MIT
// A campaign kept in a directory: findings and corpus checkpoints saved as they happen
// (CampaignSaver), a clean stop on Ctrl-C or kill (StopOnSignal: the final checkpoint is still
// written), a session resumed from the checkpoint on disk (with the coverage radius the stopped
// session had: corpus.bin keeps CalibratedCoverage's state), then the findings loaded, grouped
// and replayed.   Usage: 04_campaign_resume [DIR [EXECUTIONS [FINDINGS]]]
// DIR: default a temporary directory, removed at the end; one that holds a campaign (say, stopped
// by Ctrl-C) is resumed. A session stops after EXECUTIONS (50000) or FINDINGS (5; 0 = no limit).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/saver.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <numeric>

// Your inference code: n rows of 16 floats in [0, 1] in, one score per row out. The bug: the
// score is NaN when the row's mean falls in (0.79, 0.81), far from the seeds' 0.1 to 0.25.
void score_forward(const float* x, long n, float* score) {
  for (long i = 0; i < n; ++i, x += 16)
    score[i] = std::sqrt(std::abs(std::accumulate(x, x + 16, 0.0f) / 16 - 0.8f) - 0.01f);
}

struct ScoreModel {
  struct Output {
    nnfuzz::RowMatrix score, coverage;  // B x 1 each
    template <class F>
    void for_each_tensor(F&& f) const {
      f("score", score);
    }  // for NonFiniteObjective
  };
  nnfuzz::Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, Output& out) const {
    out.score.resize(batch.rows(), 1);
    score_forward(batch.data(), static_cast<long>(batch.rows()), out.score.data());
    out.coverage = batch.rowwise().mean();  // new behaviour: a new mean
  }
};

namespace fs = std::filesystem;

int main(int argc, char** argv) try {
  std::string dir = argc > 1 ? argv[1] : (fs::temp_directory_path() / "nnfuzz-campaign-XXXXXX").string();
  if (argc < 2 && !mkdtemp(dir.data())) throw std::runtime_error("cannot create a temporary directory");
  nnfuzz::FuzzOptions options;
  options.max_executions = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 50000;  // per session
  options.max_findings = argc > 3 ? std::atol(argv[3]) : 5;
  options.seed = 7;
  auto fuzzer = nnfuzz::make_fuzzer(ScoreModel{}, nnfuzz::RecentSampler(), nnfuzz::GaussianMutator(0.05f),
                                    nnfuzz::CalibratedCoverage(), nnfuzz::NonFiniteObjective(), options);
  nnfuzz::StopOnSignal stop;  // Ctrl-C / SIGTERM: stop after the current batch
  nnfuzz::ProgressPrinter progress(std::cout, 1.0, 0.2);
  std::size_t reported = 0;
  if (!fs::exists(fs::path(dir) / "corpus.bin")) {   // session 1: a new campaign
    nnfuzz::CampaignSaver saver(dir, options.seed);  // pass it first: what is printed is on disk
    const nnfuzz::RowMatrix seeds = nnfuzz::RowVector::LinSpaced(4, 0.1f, 0.25f).transpose().replicate(1, 16);
    reported += fuzzer.run(seeds, saver, stop, progress).findings.size();
  }                        // the saver's lock on DIR is released here
  if (!stop.received()) {  // session 2, as after a restart: from the checkpoint on disk
    const nnfuzz::Corpus corpus = nnfuzz::load_corpus(dir);
    std::cout << "resuming " << dir << ": corpus of " << corpus.size() << " elements\n";
    nnfuzz::CampaignSaver saver(dir, options.seed);
    reported += fuzzer.resume(corpus, saver, stop, progress).findings.size();
  }
  if (stop.received()) {  // the final checkpoint is on disk: say how to go on
    std::cout << "stopped by signal " << stop.received() << "; checkpoint of " << nnfuzz::load_corpus(dir).size()
              << " elements in " << dir << "; run `04_campaign_resume " << dir << "` to resume\n";
    return 0;
  }
  // Everything on disk: load the findings, group them by what fired and root seed, replay them.
  const std::vector<nnfuzz::SavedFinding> saved = nnfuzz::load_findings(dir);
  std::vector<nnfuzz::Finding> all;  // group_findings() takes Findings
  for (const nnfuzz::SavedFinding& s : saved) all.push_back(s.finding);
  const auto replayed =
      std::count_if(all.begin(), all.end(), [&](const nnfuzz::Finding& f) { return fuzzer.replay(f.input); });
  std::cout << saved.size() << " findings on disk (" << reported << " reported by this process), " << replayed
            << " fire again on replay; groups:\n";
  for (const nnfuzz::FindingGroup& g : nnfuzz::group_findings(all))
    std::cout << "  " << g.count << " x " << g.what << " from seed " << g.root << ", first at execution "
              << all[g.first].execution << '\n';
  if (argc < 2) fs::remove_all(dir);
  return !saved.empty() && saved.size() >= reported && static_cast<std::size_t>(replayed) == saved.size() ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "04_campaign_resume: " << e.what() << '\n';
  return 1;
}
