// SPDX-License-Identifier: MIT
// TensorFuzz's NaN experiment: fuzz an MNIST classifier with an unstabilised softmax / cross
// entropy for inputs that make it produce NaN or Inf, with coverage-guided fuzzing (CGF) and with
// the four named baselines (nnfuzz/baselines.hpp: random search, fitness only, TensorFuzz's CGF,
// the defaults), several runs each from the same seeds and RNG seeds.
//
//   mnist_nan --data data/mnist --runs 10 --executions 200000
//   mnist_nan --data data/mnist --executions 200000 --sync out/sync --worker 0   (one worker of a
//             campaign shared through out/sync: see docs/scaling.md and scripts/launch_local.sh)
// Prints a table per run and writes, under --out: PNGs of each finding (seed | found | diff),
// a CSV of corpus size vs executions per run, and corpus_growth.png (gnuplot).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"
#include "shared/flags.hpp"
#include "sync_common.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <iomanip>
#include <sstream>

namespace {

using namespace nnfuzz;

struct Settings {
  std::string data_dir = "data/mnist", out_dir = "out/mnist_nan", models_dir = "out/models";
  std::string recipe = "tf-nan", coverage = "sum-abs-logits", backend = "kdtree";
  std::vector<Baseline> baselines{kBaselines.begin(), kBaselines.end()};  // the table's rows
  ex::Scale scale{-1.0f, 1.0f};
  int runs = 10;
  std::uint64_t seed = 1;
  std::uint64_t executions = 200000;
  Index batch = 100;
  Index seeds = 10;
  float sigma = 0.2f;
  float sigma_range = 1.0f;
  float radius = nnfuzz::radius_from_squared(0.5f);
  bool progress = false;
  Index train_steps = 0;
  ex::SyncFlags sync;
  Index max_findings = 1;  // --sync only
  bool replay = false;     // --sync DIR --replay: check the campaign's directories instead of fuzzing
};

struct RunRow {
  std::string method;
  int run = 0;
  bool found = false;
  std::uint64_t executions = 0;
  double seconds = 0;
  Index corpus = 0;
  std::string what;
  bool replayed = false;
  float max_spread = 0;  // largest logit spread (max - min) in the corpus: how close it got
};

// Records when the first finding happened (the finding itself only has its execution count).
struct FirstFindingClock {
  double seconds = -1;
  void on_finding(const Finding&, const FuzzStats& st) {
    if (seconds < 0) seconds = st.seconds;
  }
};

// One run of one baseline (baselines.hpp), from the run's seeds.
RunRow fuzz_once(const Settings& s, Baseline baseline, int run, const NanTarget& target, const RowMatrix& seeds,
                 const ex::Data& data, const std::vector<Index>& seed_rows) {
  FuzzOptions o;
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.max_findings = 1;
  o.seed = s.seed * 1000 + static_cast<std::uint64_t>(run);  // the same RNG stream for every baseline
  BaselineSettings bs;
  bs.sigma = s.sigma;
  bs.bounds = MutationBounds{s.scale.lo, s.scale.hi};
  bs.radius = s.radius;
  const std::string method = baseline_name(baseline);
  return with_baseline(baseline, target, NonFiniteObjective(), bs, o, [&](auto& fuzzer) {
    const std::string csv = s.out_dir + "/csv/" + method + "-run" + std::to_string(run) + ".csv";
    std::ofstream csv_out = ex::open_output(csv);
    CsvLogger log(csv_out);
    FirstFindingClock clock;
    ProgressPrinter printer(std::cerr, 5.0, 1.0);
    const FuzzResult r = s.progress ? fuzzer.run(seeds, log, clock, printer) : fuzzer.run(seeds, log, clock);
    ex::close_output(csv_out, csv);
    RunRow row;
    row.method = method;
    row.run = run;
    row.corpus = r.stats.corpus_size;
    row.found = r.found();
    const Corpus& c = fuzzer.corpus();
    for (Index i = 0; i < c.size(); ++i) {
      const RowMatrix l = target.net().logits(c.input(i));
      row.max_spread = std::max(row.max_spread, l.maxCoeff() - l.minCoeff());
    }
    row.executions = row.found ? r.findings[0].execution : r.stats.executions;
    row.seconds = row.found ? clock.seconds : r.stats.seconds;
    if (row.found) {
      const Finding& f = r.findings[0];
      row.what = f.what.substr(f.what.find('\'') + 1);
      row.what.pop_back();
      row.replayed = fuzzer.replay(f.input);  // re-evaluated from the saved input: same verdict?
      // Picture: the data-set seed, the NaN input, and the difference.
      const RowMatrix one = f.input;
      const Index pred = argmax(target.net().logits(one).row(0));
      std::ostringstream name;
      name << s.out_dir << "/findings/" << method << "-run" << run << "-seed"
           << seed_rows[static_cast<std::size_t>(f.root)] << "-label"
           << data.train.labels(seed_rows[static_cast<std::size_t>(f.root)]) << "-pred" << pred << "-" << row.what
           << ".png";
      ex::write_triptych(name.str(), seeds.row(f.root), f.input, data.train.rows, data.train.cols, s.scale.lo,
                         s.scale.hi);
    }
    return row;
  });
}

void add_options(CLI::App& app, Settings& s) {
  nnfuzz_flags::data(app, s.data_dir);
  nnfuzz_flags::out(app, s.out_dir, "findings/, csv/, plots");
  nnfuzz_flags::models(app, s.models_dir);
  nnfuzz_flags::recipe(app, s.recipe, "tf-nan or adam");
  nnfuzz_flags::scale(app, s.scale);
  nnfuzz_flags::runs(app, s.runs);
  nnfuzz_flags::campaign(app, s, {"run r uses seed*1000 + r", "per run", ""});
  nnfuzz_flags::seeds(app, s.seeds, "data-set images per run");
  app.add_option("--coverage", s.coverage,
                 "coverage vector: sum-abs-logits (TensorFuzz), value-profile (+ max logit, logit spread) or logits")
      ->capture_default_str();
  nnfuzz_flags::backend(app, s.backend, "--sync workers");
  nnfuzz_flags::baselines(app, s.baselines);
  app.add_flag("--progress", s.progress, "print libFuzzer-style status lines while fuzzing");
  nnfuzz_flags::train_steps(app, s.train_steps);
  ex::add_sync_options(&app, s.sync);
  app.add_option("--max-findings", s.max_findings, "--sync: stop after this many findings (0: at the budget only)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--replay", s.replay,
               "--sync DIR: load every worker's directory (corpus, findings) and replay every finding; "
               "exit 1 unless all load and fire again");
}

void validate(const Settings& s) {
  ex::require_named(s.scale);
  if (s.replay && !s.sync.enabled()) throw std::invalid_argument("--replay needs --sync DIR");
  if (!s.replay) ex::check_sync_flags(s.sync);
  if (s.coverage != "sum-abs-logits" && s.coverage != "logits" && s.coverage != "value-profile")
    throw std::invalid_argument("--coverage must be sum-abs-logits, value-profile or logits, got '" + s.coverage + "'");
  if (s.backend != "kdtree" && s.backend != "brute")
    throw std::invalid_argument("--backend must be kdtree or brute, got '" + s.backend + "'");
}

// The data set itself: how many images already give a NaN? (TensorFuzz: none.)
Index count_nonfinite_images(const NanTarget& target, const ex::Data& data) {
  Index data_nans = 0;
  NanTarget::Output out;
  Mask hits;
  for (const auto* set : {&data.train.images, &data.test.images})
    for (Index first = 0; first < set->rows(); first += 1000) {
      const Index n = std::min<Index>(1000, set->rows() - first);
      target.evaluate(set->middleRows(first, n), out);
      NonFiniteObjective().check(set->middleRows(first, n), out, hits);
      data_nans += hits.count();
    }
  return data_nans;
}

// Every run of every baseline; run r's seeds are a random sample of training images, the same for all.
std::vector<RunRow> fuzz_all(const Settings& s, const NanTarget& target, const ex::Data& data) {
  std::vector<RunRow> rows;
  for (int run = 1; run <= s.runs; ++run) {
    Rng pick(s.seed * 7919 + static_cast<std::uint64_t>(run));
    std::vector<Index> seed_rows;
    RowMatrix seeds(s.seeds, data.train.images.cols());
    for (Index i = 0; i < s.seeds; ++i) {
      seed_rows.push_back(pick.uniform_index(data.train.images.rows()));
      seeds.row(i) = data.train.images.row(seed_rows.back());
    }
    for (Baseline b : s.baselines) rows.push_back(fuzz_once(s, b, run, target, seeds, data, seed_rows));
  }
  return rows;
}

void print_table(const Settings& s, const std::vector<RunRow>& rows) {
  std::cout << "method      run  found  executions  seconds  corpus  max spread  first non-finite  replayed\n";
  for (const auto& r : rows)
    std::cout << std::left << std::setw(12) << r.method << std::setw(5) << r.run << std::setw(7)
              << (r.found ? "yes" : "no") << std::setw(12) << r.executions << std::setw(9) << std::fixed
              << std::setprecision(2) << r.seconds << std::setw(8) << r.corpus << std::setw(12) << std::setprecision(1)
              << r.max_spread << std::setw(18) << (r.found ? r.what : "-")
              << (r.found ? (r.replayed ? "yes" : "NO") : "-") << "\n";
  // The summary table: one row per baseline (a NaN counts when it fired again on replay).
  std::string summary;
  std::cout << "\n| NaN hunt | runs that found a NaN | median executions to it | median corpus |\n|---|---|---|---|\n";
  std::cout << "| TensorFuzz (paper): CGF / random search | 10/10 / 0/10 | — | — |\n";
  for (Baseline b : s.baselines) {
    int found = 0;
    std::vector<double> to_first, corpus;
    for (const auto& r : rows)
      if (r.method == baseline_name(b)) {
        if (r.found && r.replayed) {
          ++found;
          to_first.push_back(static_cast<double>(r.executions));
        }
        corpus.push_back(static_cast<double>(r.corpus));
      }
    std::cout << "| " << baseline_label(b) << " | " << found << "/" << s.runs << " | ";
    if (to_first.empty())
      std::cout << "—";
    else
      std::cout << std::setprecision(0) << ex::median(to_first);
    std::cout << " | " << std::setprecision(0) << ex::median(corpus) << " |\n";
    summary += std::string(summary.empty() ? "" : ", ") + baseline_name(b) + " " + std::to_string(found) + "/" +
               std::to_string(s.runs);
  }
  std::cout << std::defaultfloat << "\nsummary: NaN found in " << summary
            << " runs (TensorFuzz: CGF 10/10, random search 0/10)\n";
}

// Corpus growth per baseline (the paper's figure).
void plot_corpus_growth(const Settings& s, const ex::Data& data) {
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,560\nset output '" << s.out_dir << "/corpus_growth.png'\n"
     << "set datafile separator ','\nset key left top\nset xlabel 'executions'\nset ylabel 'corpus size'\n"
     << "set title 'NaN hunt on " << data.name << " (" << s.recipe << "): corpus size per baseline'\nplot ";
  const char* colours[] = {"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c"};  // by Baseline
  bool first = true;
  for (Baseline b : s.baselines)
    for (int run = 1; run <= s.runs; ++run) {
      gp << (first ? "" : ", ") << "'" << s.out_dir << "/csv/" << baseline_name(b) << "-run" << run
         << ".csv' using 1:2 with lines lc rgb '" << colours[static_cast<int>(b)] << "' ";
      if (run == 1)
        gp << "title \"" << baseline_label(b) << "\"";  // the label holds an apostrophe
      else
        gp << "notitle";
      first = false;
    }
  gp << "\n";
  ex::gnuplot(s.out_dir + "/corpus_growth.gp", gp.str(), s.out_dir + "/corpus_growth.png", std::cout);
}

// --sync: one CGF worker of a shared campaign (run 1's seeds, this worker's RNG seed), resumed
// from its own directory when it has one; prints one summary line.
template <typename Coverage>
void sync_worker(const Settings& s, const NanTarget& target, Coverage coverage, const ex::Data& data) {
  Rng pick(s.seed * 7919 + 1);
  RowMatrix seeds(s.seeds, data.train.images.cols());
  for (Index i = 0; i < s.seeds; ++i)
    seeds.row(i) = data.train.images.row(pick.uniform_index(data.train.images.rows()));
  FuzzOptions o;
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.max_findings = s.max_findings;
  o.seed = worker_seed(s.seed, s.sync.worker);
  auto fuzzer = make_fuzzer(target, RecentSampler(),
                            GaussianMutator(s.sigma, MutationBounds{s.scale.lo, s.scale.hi}, s.sigma_range),
                            std::move(coverage), NonFiniteObjective(), o);
  SyncDirectory sync(s.sync.dir, s.sync.worker, ex::sync_options(s.sync, o.seed));
  ProgressPrinter printer(std::cerr, 5.0, 1.0);
  const FuzzResult r =
      s.progress ? ex::run_or_resume(fuzzer, seeds, sync, printer) : ex::run_or_resume(fuzzer, seeds, sync);
  ex::print_worker_summary(std::cout, sync, r);
  if (r.found())
    std::cout << "worker " << s.sync.worker << ": found " << r.findings[0].what << " at execution "
              << r.findings[0].execution << "\n";
  ex::check_stdout();
}

// --sync DIR --replay: every worker's directory under DIR loads (corpus.bin, findings/) and every
// finding fires again on this model, in a batch of --batch copies as it was found (the check of a
// campaign run by a job runner: tests/slurm/slurm_ci.sh). One line per worker and a total.
bool replay_campaign(const Settings& s, const NanTarget& target) {
  FuzzOptions o;
  o.batch_size = s.batch;
  auto fuzzer = make_fuzzer(target, RecentSampler(), GaussianMutator(s.sigma), NoCoverage(), NonFiniteObjective(), o);
  std::size_t workers = 0, findings = 0, fired = 0;
  for (const std::string& w : sync_workers(s.sync.dir)) {
    const std::string dir = s.sync.dir + "/" + w;
    const Corpus c = load_corpus(dir);
    const std::vector<SavedFinding> saved = load_findings(dir);
    std::size_t again = 0;
    for (const SavedFinding& f : saved) again += fuzzer.replay(f.finding.input);
    std::cout << "replay: worker " << w << ": corpus " << c.size() << " elements at " << c.executions()
              << " executions; " << saved.size() << " findings on disk, " << again << " fire again\n";
    ++workers;
    findings += saved.size();
    fired += again;
  }
  std::cout << "replay: " << workers << " workers, " << findings << " findings, " << fired << " fire again\n";
  ex::check_stdout();
  return workers > 0 && fired == findings;
}

void run_experiment(const Settings& s) {
  if (!s.sync.enabled()) {
    ex::fs::create_directories(s.out_dir + "/findings");
    ex::fs::create_directories(s.out_dir + "/csv");
  }

  const ex::Data data = ex::load_data(s.data_dir, s.scale);
  const Mlp<float> net = ex::train_or_load(ex::recipe(s.recipe, s.train_steps), data, s.scale, s.models_dir, std::cout);
  NanTarget target(net, s.coverage == "logits"          ? CoverageSignal::logits
                        : s.coverage == "value-profile" ? CoverageSignal::value_profile
                                                        : CoverageSignal::sum_abs_logits);
  // Declared as a user would: the defaults' DefaultMutator adds Square patches to an image.
  target.set_input_shape({1, data.train.rows, data.train.cols});
  if (s.replay) {
    if (!replay_campaign(s, target)) throw std::runtime_error("replay: a finding did not fire again, or no worker");
    return;
  }
  if (s.sync.enabled()) {
    if (s.backend == "kdtree")
      sync_worker(s, target, KdTreeCoverage(s.radius), data);
    else
      sync_worker(s, target, BruteForceCoverage(s.radius), data);
    return;
  }
  const Index data_nans = count_nonfinite_images(target, data);
  std::cout << "data set: " << data_nans << " of " << data.train.images.rows() + data.test.images.rows()
            << " images give a non-finite value\n";
  std::cout << "fuzzing: " << s.runs << " runs x " << s.executions << " executions, batch " << s.batch << ", sigma "
            << s.sigma << ", TensorFuzz's radius " << s.radius << " (L2), coverage " << s.coverage << ", " << s.seeds
            << " seeds, pixels " << s.scale.name() << "; rows: " << nnfuzz_flags::baseline_names(s.baselines) << "\n\n";
  print_table(s, fuzz_all(s, target, data));
  plot_corpus_growth(s, data);
  std::cout << "pictures of the findings: " << s.out_dir << "/findings/, plot: " << s.out_dir << "/corpus_growth.png\n";
  ex::check_stdout();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"nnfuzz: TensorFuzz's NaN experiment on an MNIST classifier, the four baselines"};
  add_options(app, s);
  return ex::driver_main("mnist_nan", app, argc, argv, [&] {
    validate(s);
    run_experiment(s);
  });
}
