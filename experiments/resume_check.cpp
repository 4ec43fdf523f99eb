// SPDX-License-Identifier: MIT
// Does a resumed campaign search as well as an uninterrupted one (issue #34)? Example 04's
// campaign (16 floats in, a score that is NaN when the row's mean is in (0.79, 0.81), the mean as
// coverage, CalibratedCoverage) run three ways per seed, each up to the same total budget and its
// first finding:
//   uninterrupted  one session of --budget executions;
//   resumed        stopped after --stop-at executions, corpus.bin written and read back
//                  (save_corpus / load_corpus), resumed for the rest of the budget;
//   recalibrated   the same, with the saved coverage state cleared (what resume() did before
//                  corpus.bin kept it: CalibratedCoverage recalibrated against the saved corpus).
// Prints one markdown row per way and composition (found / runs, median executions to the first
// finding, median radius the second session searched with) and, with --runs-csv, one line per run.
//   resume_check --seeds 10 --stop-at 300 --budget 50000 --masters 1,2,3
#include <nnfuzz/campaign/files.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

namespace {

using namespace nnfuzz;

// Example 04's model, as a user writes it: a float* forward and an Output with the score.
struct ScoreModel {
  struct Output {
    RowMatrix score, coverage;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("score", score);
    }
  };
  Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.score.resize(batch.rows(), 1);
    for (Index i = 0; i < batch.rows(); ++i) {
      const float* x = batch.row(i).data();
      out.score(i, 0) = std::sqrt(std::abs(std::accumulate(x, x + 16, 0.0f) / 16 - 0.8f) - 0.01f);
    }
    out.coverage = batch.rowwise().mean();
  }
};

struct Run {
  bool found = false;
  std::uint64_t executions = 0;  // of the first finding (0 when none)
  float radius = 0;              // the radius the last session searched with
};

template <typename F>
Run first_finding(const FuzzResult& r, const F& fuzzer) {
  Run run;
  run.found = !r.findings.empty();
  if (run.found) run.executions = r.findings.front().execution;
  run.radius = fuzzer.coverage().radius();
  return run;
}

// One seed, one way. `way`: 0 uninterrupted, 1 resumed, 2 recalibrated.
template <typename Make>
Run run_one(const Make& make, std::uint64_t seed, int way, std::uint64_t stop_at, std::uint64_t budget,
            const std::filesystem::path& scratch) {
  const RowMatrix seeds = RowVector::LinSpaced(4, 0.1f, 0.25f).transpose().replicate(1, 16);
  FuzzOptions o;
  o.seed = seed;
  o.max_findings = 1;
  o.max_executions = way == 0 ? budget : stop_at;
  auto first = make(o);
  const FuzzResult r1 = first.run(seeds);
  if (way == 0 || !r1.findings.empty()) return first_finding(r1, first);
  save_corpus(scratch.string(), first.corpus());
  Corpus saved = load_corpus(scratch.string());
  if (way == 2) saved.set_coverage_state({});
  o.max_executions = budget - saved.executions();
  auto second = make(o);
  return first_finding(second.resume(saved), second);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"resume_check: a resumed campaign against an uninterrupted one"};
  int seeds = 10;
  std::uint64_t stop_at = 300, budget = 50000;
  std::vector<std::uint64_t> masters{1, 2, 3};
  std::string csv;
  app.add_option("--seeds", seeds, "runs per master seed and way")->check(CLI::PositiveNumber);
  app.add_option("--stop-at", stop_at, "executions of the first session of a resumed run")->check(CLI::PositiveNumber);
  app.add_option("--budget", budget, "total executions of a run")->check(CLI::PositiveNumber);
  app.add_option("--masters", masters, "master seeds")->delimiter(',');
  app.add_option("--runs-csv", csv, "write one line per run here");
  CLI11_PARSE(app, argc, argv);
  if (stop_at >= budget) throw std::invalid_argument("resume_check: --stop-at must be below --budget");

  const auto example04 = [](const FuzzOptions& o) {
    return make_fuzzer(ScoreModel{}, RecentSampler(), GaussianMutator(0.05f), CalibratedCoverage(),
                       NonFiniteObjective(), o);
  };
  const auto defaults = [](const FuzzOptions& o) { return make_fuzzer(ScoreModel{}, o); };
  const std::filesystem::path scratch = std::filesystem::temp_directory_path() / "nnfuzz-resume-check";
  const char* ways[] = {"uninterrupted", "resumed", "recalibrated (state cleared)"};
  std::ofstream out;
  if (!csv.empty()) {
    out.open(csv);
    if (!out) throw std::runtime_error("resume_check: cannot write --runs-csv '" + csv + "'");
    out << "composition,way,master,seed,found,executions,radius\n";
  }
  std::cout << "| composition | way | found | median executions to it | median radius searched with |\n"
            << "|---|---|---|---|---|\n";
  for (int c = 0; c < 2; ++c) {
    for (int way = 0; way < 3; ++way) {
      int found = 0, total = 0;
      std::vector<double> execs, radii;
      for (const std::uint64_t m : masters) {
        for (int i = 0; i < seeds; ++i) {
          const std::uint64_t seed = m * 1000003 + static_cast<std::uint64_t>(i);
          std::filesystem::remove_all(scratch);
          const Run r = c == 0 ? run_one(example04, seed, way, stop_at, budget, scratch)
                               : run_one(defaults, seed, way, stop_at, budget, scratch);
          ++total;
          found += r.found;
          if (r.found) execs.push_back(static_cast<double>(r.executions));
          radii.push_back(r.radius);
          if (out)
            out << (c == 0 ? "example04" : "defaults") << ',' << ways[way] << ',' << m << ',' << seed << ',' << r.found
                << ',' << r.executions << ',' << r.radius << '\n';
        }
      }
      std::cout << "| " << (c == 0 ? "example 04 (RecentSampler, Gaussian 0.05, calibrated)" : "the defaults") << " | "
                << ways[way] << " | " << found << "/" << total << " | "
                << (execs.empty() ? std::string("-") : std::to_string(static_cast<long long>(median(execs)))) << " | "
                << median(radii) << " |\n";
    }
  }
  std::filesystem::remove_all(scratch);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "resume_check: " << e.what() << "\n";
  return 1;
}
