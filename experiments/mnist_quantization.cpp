// SPDX-License-Identifier: MIT
// TensorFuzz's quantization experiment: search, within an L-inf ball around each of N test
// images, for inputs on which a float32 MNIST classifier and its float16 twin disagree, with
// the four named baselines (nnfuzz/baselines.hpp: random search, fitness only, TensorFuzz's CGF,
// the defaults), the same budget and RNG seed per seed image.
//
//   mnist_quantization --data data/mnist --seeds 100 --executions 10000 --eps 0.2,0.4
// Twins: half-arithmetic (inputs, weights and every sum in float16, as TensorFuzz's model) and
// half-storage (float16 weights and activations, float32 sums). Every disagreement is re-checked
// (evaluated again from the saved input, and not a tie within float16 rounding) before it counts.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"
#include "shared/flags.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cmath>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

using namespace nnfuzz;

struct Settings {
  std::string data_dir = "data/mnist", out_dir = "out/mnist_quantization", models_dir = "out/models";
  std::string recipe = "tf-quant";
  std::vector<Baseline> baselines{kBaselines.begin(), kBaselines.end()};  // the table's rows
  std::vector<std::string> twins{"half-arithmetic", "half-storage"};
  std::vector<float> eps{0.2f, 0.4f};
  ex::Scale scale;
  Index seeds = 100;
  std::uint64_t seed = 1;
  std::uint64_t executions = 10000;
  Index batch = 100;
  float sigma = 0.1f;
  float sigma_range = 1.0f;  // unused: the baselines fix their noise (kept for the shared --sigma-range flag)
  float radius = nnfuzz::radius_from_squared(0.5f);
  int jobs = 0;
  int pictures = 12;
  Index train_steps = 0;
};

enum class Verdict { none, confirmed, tie, not_reproduced };

// Classifies row r of an evaluated batch: a disagreement, a tie within float16 rounding, or none.
template <typename Output>
Verdict verdict_of_row(const Output& out, Index r, Index* ref_class, Index* cand_class) {
  const Index a = argmax(out.reference.row(r)), b = argmax(out.candidate.row(r));
  *ref_class = a;
  *cand_class = b;
  if (a == b) return Verdict::none;
  const float cand_gap = out.candidate(r, b) - out.candidate(r, a);
  const float ref_gap = out.reference(r, a) - out.reference(r, b);
  const float ulp = half_ulp(std::max(std::abs(out.candidate(r, a)), std::abs(out.candidate(r, b))));
  if (cand_gap <= ulp || ref_gap <= 0) return Verdict::tie;
  return Verdict::confirmed;
}

// Re-evaluates a saved input from scratch, in a batch of the shape it was found in.
template <typename Pair>
Verdict recheck(const Pair& pair, const RowVector& input, Index batch, Index* ref_class, Index* cand_class) {
  typename Pair::Output out;
  const RowMatrix copies = input.replicate(batch, 1);
  pair.evaluate(copies, out);
  const Verdict v = verdict_of_row(out, 0, ref_class, cand_class);
  return v == Verdict::none ? Verdict::not_reproduced : v;
}

// Counts disagreements and ties over a whole image set, evaluated in batches.
template <typename Pair>
std::pair<Index, Index> count_disagreements(const Pair& pair, const RowMatrix& images, Index batch) {
  typename Pair::Output out;
  Index confirmed = 0, ties = 0;
  for (Index first = 0; first < images.rows(); first += batch) {
    const Index n = std::min(batch, images.rows() - first);
    pair.evaluate(images.middleRows(first, n), out);
    for (Index r = 0; r < n; ++r) {
      Index a, b;
      const Verdict v = verdict_of_row(out, r, &a, &b);
      confirmed += v == Verdict::confirmed;
      ties += v == Verdict::tie;
    }
  }
  return {confirmed, ties};
}

struct SeedResult {
  bool found = false;            // confirmed disagreement
  bool tie = false;              // a hit that was only a tie within rounding
  std::uint64_t executions = 0;  // to the first confirmed disagreement (or the budget)
  Index corpus = 0;
  RowVector input;
  Index ref_class = -1, cand_class = -1;
};

template <typename Pair>
SeedResult fuzz_seed(const Settings& s, const Pair& pair, Baseline baseline, float eps, const RowMatrix& seed_row,
                     std::uint64_t rng_seed) {
  FuzzOptions o;
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.max_findings = 1;
  o.seed = rng_seed;
  BaselineSettings bs;
  bs.sigma = s.sigma;
  bs.bounds = MutationBounds{s.scale.lo, s.scale.hi, eps};
  bs.radius = s.radius;
  // Gaps of one float16 ulp are ties, not disagreements.
  return with_baseline(baseline, pair, DisagreementObjective(0.0f, 1.0f), bs, o, [&](auto& fuzzer) {
    SeedResult r;
    const FuzzResult fr = fuzzer.run(seed_row);
    r.corpus = fr.stats.corpus_size;
    r.executions = fr.stats.executions;
    if (fr.found()) {
      const Verdict v = recheck(pair, fr.findings[0].input, s.batch, &r.ref_class, &r.cand_class);
      r.found = v == Verdict::confirmed;
      r.tie = v == Verdict::tie;
      if (r.found) {
        r.executions = fr.findings[0].execution;
        r.input = fr.findings[0].input;
      }
    }
    return r;
  });
}

struct Config {
  std::string twin, method;
  float eps;
  std::vector<SeedResult> results;
};

template <typename Pair>
void run_twin(const Settings& s, const std::string& twin, const Pair& pair, const ex::Data& data,
              const std::vector<Index>& seed_rows, std::vector<Config>& configs) {
  for (float eps : s.eps)
    for (Baseline baseline : s.baselines) {
      const std::string method = baseline_name(baseline);
      Config c{twin, method, eps, std::vector<SeedResult>(seed_rows.size())};
      // Seeds are independent fuzz runs: spread them over the cores. Each run's RNG seed depends
      // only on the seed index, so the table does not depend on --jobs.
      std::atomic<std::size_t> next{0};
      auto worker = [&]() {
        for (std::size_t i; (i = next++) < seed_rows.size();) {
          const RowMatrix seed = data.test.images.row(seed_rows[i]);
          const std::uint64_t rs = s.seed * 1000003 + i;
          c.results[i] = fuzz_seed(s, pair, baseline, eps, seed, rs);
        }
      };
      const int jobs = s.jobs > 0 ? s.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      std::vector<std::thread> threads;
      for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
      worker();
      for (auto& t : threads) t.join();
      configs.push_back(std::move(c));
      std::cerr << "  done: " << twin << " eps " << eps << " " << method << "\n";
    }
}

void add_options(CLI::App& app, Settings& s) {
  nnfuzz_flags::data(app, s.data_dir);
  nnfuzz_flags::out(app, s.out_dir, "findings/, csv/, plots");
  nnfuzz_flags::models(app, s.models_dir);
  nnfuzz_flags::recipe(app, s.recipe, "tf-quant or adam");
  nnfuzz_flags::scale(app, s.scale);
  app.add_option("--twins", s.twins, "float16 twins: half-arithmetic, half-storage")
      ->delimiter(',')
      ->capture_default_str();
  nnfuzz_flags::eps(app, s.eps);
  nnfuzz_flags::seeds(app, s.seeds, "test images to fuzz around");
  nnfuzz_flags::campaign(app, s, {"", "per seed image", "on the float logits"});
  nnfuzz_flags::baselines(app, s.baselines);
  nnfuzz_flags::jobs(app, s.jobs);
  app.add_option("--pictures", s.pictures, "PNGs written per configuration")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(s.pictures)>>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  nnfuzz_flags::train_steps(app, s.train_steps);
}

void validate(const Settings& s) {
  ex::require_named(s.scale);
  for (const auto& t : s.twins)
    if (t != "half-arithmetic" && t != "half-storage")
      throw std::invalid_argument("--twins must list half-arithmetic and/or half-storage, got '" + t + "'");
  for (float e : s.eps)
    if (!(e > 0)) throw std::invalid_argument("--eps values must be positive, got " + std::to_string(e));
}

// The first --seeds test images the float model classifies correctly.
std::vector<Index> pick_seeds(const Settings& s, const Mlp<float>& net, const ex::Data& data) {
  std::vector<Index> seed_rows;
  for (Index i = 0; i < data.test.images.rows() && static_cast<Index>(seed_rows.size()) < s.seeds; ++i)
    if (argmax(net.logits(data.test.images.row(i)).row(0)) == data.test.labels(i)) seed_rows.push_back(i);
  return seed_rows;
}

// The table, one row per configuration, with csv/seeds.csv (one row per seed) and up to
// --pictures PNGs of confirmed disagreements per configuration.
void report(const Settings& s, const ex::Data& data, const std::vector<Index>& seed_rows,
            const std::vector<Config>& configs) {
  std::cout << "\ntwin             eps    method      seeds with a confirmed disagreement  median executions to first  "
               "ties\n";
  const std::string csv_path = s.out_dir + "/csv/seeds.csv";
  std::ofstream csv = ex::open_output(csv_path);
  csv << "twin,eps,method,seed_index,test_image,found,tie,executions,corpus_size\n";
  for (const Config& c : configs) {
    std::vector<double> to_first;
    Index found = 0, ties = 0, pics = 0;
    for (std::size_t i = 0; i < c.results.size(); ++i) {
      const SeedResult& r = c.results[i];
      csv << c.twin << ',' << c.eps << ',' << c.method << ',' << i << ',' << seed_rows[i] << ',' << r.found << ','
          << r.tie << ',' << r.executions << ',' << r.corpus << '\n';
      if (r.found) {
        ++found;
        to_first.push_back(static_cast<double>(r.executions));
        if (pics++ < s.pictures) {
          std::ostringstream name;
          name << s.out_dir << "/findings/" << c.twin << "-eps" << c.eps << "-" << c.method << "-test" << seed_rows[i]
               << "-float" << r.ref_class << "-half" << r.cand_class << ".png";
          ex::write_triptych(name.str(), data.test.images.row(seed_rows[i]), r.input, data.test.rows, data.test.cols,
                             s.scale.lo, s.scale.hi);
        }
      }
      ties += r.tie;
    }
    const double pct = 100.0 * static_cast<double>(found) / static_cast<double>(c.results.size());
    std::cout << std::left << std::setw(17) << c.twin << std::setw(7) << c.eps << std::setw(12) << c.method
              << std::right << std::setw(5) << found << "/" << std::left << std::setw(5) << c.results.size()
              << std::right << std::setw(6) << std::fixed << std::setprecision(0) << pct << "%" << std::setw(22) << ""
              << std::setw(10);
    if (to_first.empty())
      std::cout << "-";
    else
      std::cout << ex::median(to_first);
    std::cout << std::setw(20) << ties << "\n" << std::defaultfloat;
  }
  ex::close_output(csv, csv_path);
  std::cout << "(TensorFuzz: 70% of seeds with CGF, none with random search, at radius 0.4 on [-1,1] pixels)\n";
  // The same as a markdown table: one row per baseline, one column per (twin, eps).
  std::cout << "\n| float32 vs float16 |";
  std::vector<std::pair<std::string, float>> columns;
  for (const Config& c : configs)
    if (std::find(columns.begin(), columns.end(), std::make_pair(c.twin, c.eps)) == columns.end())
      columns.emplace_back(c.twin, c.eps);
  for (const auto& col : columns) std::cout << " " << col.first << ", L-inf " << col.second << " |";
  std::cout << "\n|---|";
  for (std::size_t k = 0; k < columns.size(); ++k) std::cout << "---|";
  std::cout << "\n| TensorFuzz (paper), L-inf 0.4 on [-1,1]: CGF / random search |";
  for (std::size_t k = 0; k < columns.size(); ++k) std::cout << " 70% / 0% |";
  std::cout << "\n";
  for (Baseline b : s.baselines) {
    std::cout << "| " << baseline_label(b) << " |";
    for (const auto& col : columns)
      for (const Config& c : configs)
        if (c.method == baseline_name(b) && c.twin == col.first && c.eps == col.second) {
          Index found = 0;
          for (const SeedResult& r : c.results) found += r.found;
          std::cout << " " << found << "/" << c.results.size() << " |";
        }
    std::cout << "\n";
  }
}

// Fraction of seeds with a confirmed disagreement after n executions, per baseline.
void plot_found_vs_executions(const Settings& s, const ex::Data& data, const std::vector<Config>& configs) {
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,560\nset output '" << s.out_dir << "/found_vs_executions.png'\n"
     << "set datafile separator ','\nset key left top\nset xlabel 'executions per seed'\n"
     << "set ylabel 'seeds with a confirmed disagreement (%)'\nset yrange [0:100]\n"
     << "set title 'float32 vs float16 on " << data.name << ": the four baselines'\nplot ";
  int k = 0;
  for (const Config& c : configs) {
    std::ostringstream fn;
    fn << s.out_dir << "/csv/" << c.twin << "-eps" << c.eps << "-" << c.method << "-cumulative.csv";
    std::vector<double> ex_found;
    for (const auto& r : c.results)
      if (r.found) ex_found.push_back(static_cast<double>(r.executions));
    std::sort(ex_found.begin(), ex_found.end());
    std::ofstream cum = ex::open_output(fn.str());
    cum << "0,0\n";
    for (std::size_t i = 0; i < ex_found.size(); ++i)
      cum << ex_found[i] << ',' << 100.0 * static_cast<double>(i + 1) / static_cast<double>(c.results.size()) << '\n';
    cum << s.executions << ',' << 100.0 * static_cast<double>(ex_found.size()) / static_cast<double>(c.results.size())
        << '\n';
    ex::close_output(cum, fn.str());
    gp << (k > 0 ? ", " : "") << "'" << fn.str() << "' using 1:2 with steps lw 2 dt " << (k % 4 + 1) << " lc "
       << k / 4 + 1 << " title '" << c.twin << " eps " << c.eps << " " << c.method << "'";
    ++k;
  }
  gp << "\n";
  ex::gnuplot(s.out_dir + "/found_vs_executions.gp", gp.str(), s.out_dir + "/found_vs_executions.png", std::cout);
}

void run_experiment(const Settings& s) {
  ex::fs::create_directories(s.out_dir + "/findings");
  ex::fs::create_directories(s.out_dir + "/csv");
  const ex::Data data = ex::load_data(s.data_dir, s.scale);
  const Mlp<float> net = ex::train_or_load(ex::recipe(s.recipe, s.train_steps), data, s.scale, s.models_dir, std::cout);
  auto pa = make_half_arithmetic_pair(net);
  auto ps = make_half_storage_pair(net);
  // Declared as a user would: the defaults' DefaultMutator adds Square patches to an image.
  pa.set_input_shape({1, data.test.rows, data.test.cols});
  ps.set_input_shape({1, data.test.rows, data.test.cols});

  // The test set itself (TensorFuzz: no disagreement on the test set).
  for (const auto& twin : s.twins) {
    const auto [confirmed, ties] = twin == "half-arithmetic" ? count_disagreements(pa, data.test.images, s.batch)
                                                             : count_disagreements(ps, data.test.images, s.batch);
    std::cout << "test set, float32 vs " << twin << ": " << confirmed << " disagreements (+" << ties << " ties) in "
              << data.test.images.rows() << " images\n";
  }
  const std::vector<Index> seed_rows = pick_seeds(s, net, data);
  std::cout << "fuzzing " << seed_rows.size() << " seeds x " << s.executions << " executions, batch " << s.batch
            << ", sigma " << s.sigma << ", coverage float logits, TensorFuzz's radius " << s.radius << " (L2), pixels "
            << s.scale.name() << "; rows: " << nnfuzz_flags::baseline_names(s.baselines) << "\n";

  std::vector<Config> configs;
  for (const auto& twin : s.twins) {
    if (twin == "half-arithmetic")
      run_twin(s, twin, pa, data, seed_rows, configs);
    else
      run_twin(s, twin, ps, data, seed_rows, configs);
  }
  report(s, data, seed_rows, configs);
  plot_found_vs_executions(s, data, configs);
  std::cout << "pictures: " << s.out_dir << "/findings/, per-seed CSV: " << s.out_dir
            << "/csv/seeds.csv, plot: " << s.out_dir << "/found_vs_executions.png\n";
  ex::check_stdout();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"nnfuzz: TensorFuzz's float32 vs float16 disagreement experiment on MNIST, the four baselines"};
  add_options(app, s);
  return ex::driver_main("mnist_quantization", app, argc, argv, [&] {
    validate(s);
    run_experiment(s);
  });
}
