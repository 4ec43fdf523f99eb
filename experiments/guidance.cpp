// SPDX-License-Identifier: MIT
// Guidance compared: TensorFuzz's settings against a calibrated (and adaptive) novelty radius,
// seed schedules, an operator bandit and fitness guidance, on the same task at the same budget,
// several master seeds, each against random search.
//
//   guidance --task nan --masters 1,2,3 --guidance random,tensorfuzz,calibrated,power,fitness
//   guidance --task f16 --eps 0.2 --masters 1,2,3
// Tasks: `nan` (TensorFuzz's NaN hunt: runs of --seeds training images, first NaN ends a run) and
// `f16` (float32 vs float16 half arithmetic: one run per test image within an L-inf ball of
// --eps, first confirmed disagreement ends it). Prints one markdown row per guidance, and writes
// out/guidance/<task>[-eps]/runs.csv (one line per run).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"
#include "shared/flags.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

using namespace nnfuzz;

struct Settings {
  std::string task = "nan", data_dir = "data/mnist", out_dir = "out/guidance", models_dir = "out/models";
  std::string recipe;      // default by task: tf-nan / tf-quant
  std::string scale_name;  // default by task: pm1 / 01
  std::vector<std::string> guidance{"random", "fitness", "tensorfuzz", "default"};  // the four baselines
  std::vector<std::uint64_t> masters{1, 2, 3};
  int runs = 10;                 // nan: runs per master seed
  Index seeds = 10;              // nan: training images per run
  Index images = 100;            // f16: test images (one run each) per master seed
  float eps = 0.4f;              // f16: L-inf ball, in [0,1] pixel units
  std::uint64_t executions = 0;  // default by task: 200,000 / 10,000
  Index batch = 100;
  float sigma = 0;                                   // default by task: 0.2 on [-1,1] (nan), 0.1 on [0,1] (f16)
  float radius = nnfuzz::radius_from_squared(0.5f);  // TensorFuzz's fixed radius (squared 0.5)
  double target_rate = CalibrationOptions().target_rate;
  float coverage_scale = 1;  // multiplies the coverage vectors (the 10x experiment)
  int jobs = 0;
  Index train_steps = 0;
};

/// A coverage policy that sees the model's coverage vectors multiplied by `scale`: the same model
/// with logits (or Σ|logits|) `scale` times larger, as far as novelty is concerned.
template <typename Inner>
struct ScaledCoverage {
  /// Random search when the inner policy is (NoCoverage): FuzzOptions::keep_fitter follows it.
  static constexpr bool random_search = detail::is_random_search<Inner>::value;
  Inner inner;
  float scale = 1;
  RowMatrix buf;
  void reset(Index dim) { inner.reset(dim); }
  void observe(const Eigen::Ref<const RowMatrix>& v, Mask& is_new) {
    buf = v * scale;
    inner.observe(buf, is_new);
  }
  Index size() const { return inner.size(); }
  void seeds_done() {
    if constexpr (detail::has_seeds_done<Inner>::value) inner.seeds_done();
  }
  float radius() const {
    if constexpr (detail::has_radius<Inner>::value)
      return inner.radius();
    else
      return 0;
  }
};

struct RunResult {
  bool found = false;
  std::uint64_t executions = 0;  // to the first finding, or the budget
  Index corpus = 0;
  float radius = 0;  // the coverage radius at the end (0: none)
  Index adjustments = 0;
};

// One run of a fully composed fuzzer.
template <typename Target, typename Sampler, typename Mutator, typename Coverage, typename Objective>
RunResult run_one(const Settings& s, bool frontier, const Target& target, Sampler sampler, Mutator mutator,
                  Coverage coverage, Objective objective, const RowMatrix& seeds, std::uint64_t rng_seed) {
  FuzzOptions o;
  o.keep_fitter = frontier;  // set for every row: only the fitness rows keep the fitness frontier
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.max_findings = 1;
  o.seed = rng_seed;
  auto f = make_fuzzer(target, std::move(sampler), std::move(mutator),
                       ScaledCoverage<Coverage>{std::move(coverage), s.coverage_scale, {}}, std::move(objective), o);
  const FuzzResult r = f.run(seeds);
  RunResult out;
  out.found = r.found();
  out.executions = r.found() ? r.findings[0].execution : r.stats.executions;
  out.corpus = r.stats.corpus_size;
  out.radius = r.stats.coverage_radius;
  if constexpr (std::is_same<Coverage, CalibratedCoverage>::value)
    out.adjustments = f.coverage().inner.calibration().adjustments;
  return out;
}

// The guidance settings, by name. `Task` supplies the target, the objective, its fitness, and
// the mutation bounds.
template <typename Task>
RunResult run_guidance(const Settings& s, const std::string& g, const Task& task, const RowMatrix& seeds,
                       std::uint64_t rng_seed) {
  const MutationBounds b = task.bounds;
  const auto& t = task.target;
  const GaussianMutator gauss(s.sigma, b);
  CalibrationOptions co;
  co.target_rate = s.target_rate;
  const CalibratedCoverage adaptive(co);
  co.adapt = false;
  const CalibratedCoverage fixed(co);
  auto objective = task.objective();
  auto fit = with_fitness(task.objective(), task.fitness());
  // The fitness frontier (FuzzOptions::keep_fitter) only where the row's name says fitness, and
  // in the defaults: the novelty rows are novelty alone, random search is random search.
  const bool frontier = g.find("fitness") != std::string::npos || g.rfind("default", 0) == 0;
  auto shaped = t;  // the image shape declared, as a user of the defaults would (Square patches)
  shaped.set_input_shape({1, 28, 28});
  auto bandit = make_bandit_mutator(GaussianMutator(s.sigma, b), GaussianMutator(s.sigma / 4, b),
                                    GaussianMutator(s.sigma * 4, b), ResetMutator(1, b, 28, 4));
  if (g == "random") return run_one(s, frontier, t, RecentSampler(), gauss, NoCoverage(), objective, seeds, rng_seed);
  if (g == "tensorfuzz")
    return run_one(s, frontier, t, RecentSampler(), gauss, KdTreeCoverage(s.radius), objective, seeds, rng_seed);
  if (g == "radius-x10")
    return run_one(s, frontier, t, RecentSampler(), gauss, KdTreeCoverage(s.radius * 10), objective, seeds, rng_seed);
  if (g == "radius-div10")
    return run_one(s, frontier, t, RecentSampler(), gauss, KdTreeCoverage(s.radius / 10), objective, seeds, rng_seed);
  if (g == "calibrated-static")
    return run_one(s, frontier, t, RecentSampler(), gauss, fixed, objective, seeds, rng_seed);
  if (g == "calibrated") return run_one(s, frontier, t, RecentSampler(), gauss, adaptive, objective, seeds, rng_seed);
  if (g == "multiscale")
    return run_one(s, frontier, t, RecentSampler(), GaussianMutator(s.sigma, b, 4.0f), adaptive, objective, seeds,
                   rng_seed);
  if (g == "probabilistic")
    return run_one(s, frontier, t, ProbabilisticSampler(), gauss, adaptive, objective, seeds, rng_seed);
  if (g == "power") return run_one(s, frontier, t, PowerSampler(), gauss, adaptive, objective, seeds, rng_seed);
  if (g == "bandit") return run_one(s, frontier, t, RecentSampler(), bandit, adaptive, objective, seeds, rng_seed);
  // Fitness only (Baseline::fitness_only): the defaults without coverage.
  if (g == "fitness")
    return run_one(s, frontier, shaped, DefaultSampler(), DefaultMutator(s.sigma, b), NoCoverage(), objective, seeds,
                   rng_seed);
  if (g == "fitness-calibrated")
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), gauss, adaptive, fit, seeds, rng_seed);
  if (g == "fitness-multiscale")
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), GaussianMutator(s.sigma, b, 4.0f), adaptive, fit,
                   seeds, rng_seed);
  if (g == "fitness-bandit")
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), bandit, adaptive, fit, seeds, rng_seed);
  if (g == "fitness-gauss")  // fitness alone with TensorFuzz's noise: the corpus grows only by fitter mutants
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), gauss, NoCoverage(), fit, seeds, rng_seed);
  const SquareMutator square(28, b);
  if (g == "square") return run_one(s, frontier, t, RecentSampler(), square, adaptive, objective, seeds, rng_seed);
  if (g == "fitness-square")
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), square, adaptive, fit, seeds, rng_seed);
  if (g == "fitness-square-bandit")
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(),
                   make_bandit_mutator(square, gauss, GaussianMutator(s.sigma, b, 4.0f)), adaptive, fit, seeds,
                   rng_seed);
  // The library's defaults as a user gets them (make_fuzzer(model, options)): DefaultSampler,
  // DefaultMutator, CalibratedCoverage and the objective's own fitness; the user declares the
  // image shape and the pixel domain (σ and bounds as every row here).
  if (g == "default") {
    return run_one(s, frontier, shaped, DefaultSampler(), DefaultMutator(s.sigma, b), CalibratedCoverage(), objective,
                   seeds, rng_seed);
  }
  if (g == "default-no-shape")  // the same, for a model that declares no shape: multi-scale noise only
    return run_one(s, frontier, t, DefaultSampler(), DefaultMutator(s.sigma, b), CalibratedCoverage(), objective, seeds,
                   rng_seed);
  if (g == "own-fitness-square")  // fitness-square with the objective's own fitness (no WithFitness)
    return run_one(s, frontier, t, FitnessSampler<RecentSampler>(), square, adaptive, objective, seeds, rng_seed);
  // The field's criteria, on the hidden layers (CoverageSignal::neurons), TensorFuzz's sampler and noise.
  const auto& nt = task.neuron_target;
  const LayerWidths layers = task.layers;
  if (g == "nc")
    return run_one(s, frontier, nt, RecentSampler(), gauss, NeuronCoverage(layers), objective, seeds, rng_seed);
  if (g == "kmnc")
    return run_one(s, frontier, nt, RecentSampler(), gauss, KMNCoverage(layers), objective, seeds, rng_seed);
  if (g == "nbc")
    return run_one(s, frontier, nt, RecentSampler(), gauss, NBCoverage(layers), objective, seeds, rng_seed);
  if (g == "snac")
    return run_one(s, frontier, nt, RecentSampler(), gauss, SNACoverage(layers), objective, seeds, rng_seed);
  if (g == "tknc")
    return run_one(s, frontier, nt, RecentSampler(), gauss, TKNCoverage(layers), objective, seeds, rng_seed);
  if (g == "nlc")
    return run_one(s, frontier, nt, RecentSampler(), gauss, NLCoverage(layers), objective, seeds, rng_seed);
  throw std::invalid_argument("--guidance: unknown name '" + g + "'");
}

const std::vector<std::string> kGuidance{"random",
                                         "tensorfuzz",
                                         "radius-x10",
                                         "radius-div10",
                                         "calibrated-static",
                                         "calibrated",
                                         "multiscale",
                                         "probabilistic",
                                         "power",
                                         "bandit",
                                         "fitness",
                                         "fitness-calibrated",
                                         "fitness-multiscale",
                                         "fitness-bandit",
                                         "fitness-gauss",
                                         "square",
                                         "fitness-square",
                                         "fitness-square-bandit",
                                         "own-fitness-square",
                                         "default",
                                         "default-no-shape",
                                         "nc",
                                         "kmnc",
                                         "nbc",
                                         "snac",
                                         "tknc",
                                         "nlc"};

struct NanTask {
  NanTarget target, neuron_target;
  LayerWidths layers;
  MutationBounds bounds;
  NonFiniteObjective objective() const { return {}; }
  LogitSpreadFitness fitness() const { return {}; }
};
struct F16Task {
  HalfArithmeticPair target, neuron_target;
  LayerWidths layers;
  MutationBounds bounds;
  DisagreementObjective objective() const { return DisagreementObjective(0.0f, 1.0f); }  // one-ulp gaps are ties
  MarginFitness fitness() const { return {}; }
};

struct Job {
  std::string guidance;
  std::uint64_t master = 0;
  int index = 0;  // run (nan) or image (f16)
  RunResult result;
};

// Runs every (guidance, master, run) job on --jobs threads.
template <typename Task, typename SeedsOf>
void run_jobs(const Settings& s, const Task& task, SeedsOf seeds_of, std::vector<Job>& jobs) {
  std::atomic<std::size_t> next{0};
  std::mutex log_mutex;
  std::size_t done = 0;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      Job& j = jobs[i];
      std::uint64_t rng_seed = 0;
      const RowMatrix seeds = seeds_of(j.master, j.index, &rng_seed);
      j.result = run_guidance(s, j.guidance, task, seeds, rng_seed);
      const std::lock_guard<std::mutex> lock(log_mutex);
      if (++done % 50 == 0 || done == jobs.size()) std::cerr << "  " << done << "/" << jobs.size() << " runs\n";
    }
  };
  const int n = s.jobs > 0 ? s.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int k = 1; k < n; ++k) threads.emplace_back(worker);
  worker();
  for (auto& th : threads) th.join();
}

void report(const Settings& s, const std::vector<Job>& jobs, const std::string& dir) {
  const std::string csv_path = dir + "/runs.csv";
  std::ofstream csv = ex::open_output(csv_path);
  csv << "guidance,master,index,found,executions,corpus,radius,adjustments\n";
  for (const Job& j : jobs)
    csv << j.guidance << ',' << j.master << ',' << j.index << ',' << j.result.found << ',' << j.result.executions << ','
        << j.result.corpus << ',' << j.result.radius << ',' << j.result.adjustments << '\n';
  ex::close_output(csv, csv_path);
  std::cout << "\n| guidance |";
  for (auto m : s.masters) std::cout << " master " << m << " |";
  std::cout << " all | median executions to first | median corpus |\n|---|";
  for (std::size_t k = 0; k <= s.masters.size(); ++k) std::cout << "---|";
  std::cout << "---|---|\n";
  for (const std::string& g : s.guidance) {
    // The four baselines by their table names (nnfuzz/baselines.hpp), the other rows by theirs.
    std::string label = g;
    for (Baseline b : kBaselines)
      if (g == baseline_name(b)) label = std::string(baseline_label(b)) + " (`" + g + "`)";
    std::cout << "| " << label << " |";
    int all = 0, total = 0;
    std::vector<double> to_first, corpus;
    for (auto m : s.masters) {
      int found = 0, n = 0;
      for (const Job& j : jobs)
        if (j.guidance == g && j.master == m) {
          ++n;
          found += j.result.found;
          if (j.result.found) to_first.push_back(static_cast<double>(j.result.executions));
          corpus.push_back(static_cast<double>(j.result.corpus));
        }
      std::cout << " " << found << "/" << n << " |";
      all += found;
      total += n;
    }
    std::cout << " " << std::fixed << std::setprecision(0) << 100.0 * all / std::max(1, total) << "% |";
    if (to_first.empty())
      std::cout << " — |";
    else
      std::cout << " " << ex::median(to_first) << " |";
    std::cout << " " << ex::median(corpus) << " |\n" << std::defaultfloat;
  }
  std::cout << "\nper-run results: " << csv_path << "\n";
}

void run_experiment(Settings s) {
  const bool nan = s.task == "nan";
  if (s.recipe.empty()) s.recipe = nan ? "tf-nan" : "tf-quant";
  const ex::Scale scale = ex::Scale::parse(s.scale_name.empty() ? (nan ? "pm1" : "01") : s.scale_name);
  ex::require_named(scale);
  if (s.executions == 0) s.executions = nan ? 200000 : 10000;
  if (!(s.sigma > 0)) s.sigma = nan ? 0.2f : 0.1f;
  for (const auto& g : s.guidance)
    if (std::find(kGuidance.begin(), kGuidance.end(), g) == kGuidance.end())
      throw std::invalid_argument(
          "--guidance: unknown name '" + g +
          "' (known: random, tensorfuzz, radius-x10, "
          "radius-div10, calibrated-static, calibrated, multiscale, probabilistic, power, "
          "bandit, fitness, fitness-calibrated, fitness-multiscale, fitness-bandit, fitness-gauss, square, "
          "fitness-square, fitness-square-bandit, own-fitness-square, default, default-no-shape, nc, kmnc, nbc, snac, "
          "tknc, nlc)");
  const ex::Data data = ex::load_data(s.data_dir, scale);
  const Mlp<float> net = ex::train_or_load(ex::recipe(s.recipe, s.train_steps), data, scale, s.models_dir, std::cout);
  std::ostringstream dir;
  dir << s.out_dir << "/" << data.name << "-" << s.task;
  if (!nan) dir << "-eps" << s.eps;
  if (s.coverage_scale != 1) dir << "-cov" << s.coverage_scale;
  ex::fs::create_directories(dir.str());
  std::vector<Job> jobs;
  for (const auto& g : s.guidance)
    for (auto m : s.masters)
      for (int i = 0; i < (nan ? s.runs : static_cast<int>(s.images)); ++i) jobs.push_back({g, m, i, {}});
  std::cout << "task " << s.task << " on " << data.name << " (" << s.recipe << ", pixels " << scale.name()
            << "): " << s.executions << " executions per run, batch " << s.batch << ", sigma " << s.sigma
            << ", coverage " << (nan ? "sum |logits|" : "logits") << " x " << s.coverage_scale << ", fixed radius "
            << s.radius << ", calibrated target rate " << s.target_rate;
  if (!nan) std::cout << ", L-inf " << s.eps;
  std::cout << "; " << jobs.size() << " runs\n";
  if (nan) {
    const NanTask task{NanTarget(net, CoverageSignal::sum_abs_logits), NanTarget(net, CoverageSignal::neurons),
                       neuron_layers(net), MutationBounds{scale.lo, scale.hi}};
    // Run r of master m: --seeds random training images (as mnist_nan), RNG seed m * 1000 + r.
    run_jobs(
        s, task,
        [&](std::uint64_t m, int r, std::uint64_t* rng_seed) {
          Rng pick(m * 7919 + static_cast<std::uint64_t>(r) + 1);
          RowMatrix seeds(s.seeds, data.train.images.cols());
          for (Index i = 0; i < s.seeds; ++i)
            seeds.row(i) = data.train.images.row(pick.uniform_index(data.train.images.rows()));
          *rng_seed = m * 1000 + static_cast<std::uint64_t>(r) + 1;
          return seeds;
        },
        jobs);
  } else {
    const F16Task task{make_half_arithmetic_pair(net), make_half_arithmetic_pair(net, CoverageSignal::neurons),
                       neuron_layers(net), MutationBounds{scale.lo, scale.hi, s.eps * scale.factor()}};
    // Master m: --images random correctly classified test images, one run each.
    std::map<std::uint64_t, std::vector<Index>> rows;
    for (auto m : s.masters) {
      Rng pick(m * 104729);
      std::vector<Index>& v = rows[m];
      for (Index tries = 0; static_cast<Index>(v.size()) < s.images && tries < 100 * s.images; ++tries) {
        const Index i = pick.uniform_index(data.test.images.rows());
        if (argmax(net.logits(data.test.images.row(i)).row(0)) == data.test.labels(i)) v.push_back(i);
      }
    }
    run_jobs(
        s, task,
        [&](std::uint64_t m, int i, std::uint64_t* rng_seed) {
          *rng_seed = m * 1000003 + static_cast<std::uint64_t>(i);
          const std::vector<Index>& v = rows.at(m);
          return RowMatrix(data.test.images.row(v[static_cast<std::size_t>(i) % v.size()]));
        },
        jobs);
  }
  report(s, jobs, dir.str());
  ex::check_stdout();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{
      "nnfuzz: guidance compared (TensorFuzz, calibrated radius, schedules, bandit, fitness) vs random search"};
  app.add_option("--task", s.task, "nan (NaN hunt) or f16 (float32 vs float16 disagreements)")->capture_default_str();
  nnfuzz_flags::data(app, s.data_dir);
  nnfuzz_flags::out(app, s.out_dir);
  nnfuzz_flags::models(app, s.models_dir);
  nnfuzz_flags::recipe(app, s.recipe, "default tf-nan for nan, tf-quant for f16");
  nnfuzz_flags::scale(app, s.scale_name, "default pm1 for nan, 01 for f16");
  app.add_option("--guidance", s.guidance, "comma-separated guidance names (see the README's table)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--masters", s.masters, "comma-separated master seeds")->delimiter(',')->capture_default_str();
  nnfuzz_flags::runs(app, s.runs, "nan: per master seed");
  nnfuzz_flags::seeds(app, s.seeds, "nan: training images per run");
  app.add_option("--images", s.images, "f16: test images (one run each) per master seed")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(s.images)>>())
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  nnfuzz_flags::eps(app, s.eps, "f16, on [0,1] pixels");
  nnfuzz_flags::executions(app, s.executions, "per run; default 200000 for nan, 10000 for f16");
  nnfuzz_flags::batch(app, s.batch);
  nnfuzz_flags::sigma(app, s.sigma, "default 0.2 for nan on [-1,1], 0.1 for f16 on [0,1]");
  nnfuzz_flags::radius(app, s.radius, "tensorfuzz, radius-x10, radius-div10");
  nnfuzz_flags::target_rate(app, s.target_rate);
  app.add_option("--coverage-scale", s.coverage_scale, "multiply the coverage vectors (10x larger or smaller logits)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  nnfuzz_flags::jobs(app, s.jobs);
  nnfuzz_flags::train_steps(app, s.train_steps);
  CLI11_PARSE(app, argc, argv);
  try {
    ex::pin_eigen_cache_sizes();  // NNFUZZ_EIGEN_CACHE_SIZES (scripts/reproduce.sh --quick)
    if (s.task != "nan" && s.task != "f16")
      throw std::invalid_argument("--task must be nan or f16, got '" + s.task + "'");
    run_experiment(s);
  } catch (const std::exception& e) {
    std::cerr << "guidance: " << e.what() << "\n";
    return 1;
  }
}
