// SPDX-License-Identifier: MIT
// Regression testing between model versions (the release scenario): the released model (the
// `adam` recipe) against release candidates — its float16 twin (half arithmetic), its int8
// quantization, 50% and 90% magnitude-pruned and fine-tuned copies, and a retrain with another
// seed — on the MNIST digits and Fashion-MNIST. Per candidate: test accuracy of both, the
// disagreements on the whole test set, then a search within L-inf balls around N test images for
// inputs on which the two disagree, coverage-guided (CGF) vs random search (NoCoverage) at the
// same budget per seed; every disagreement is re-checked, then minimised (minimize()).
//
//   model_regression --data data/mnist --fashion /usr/share/datasets/fashion-mnist
//       --candidates float16,int8,pruned50,pruned90,retrained --seeds 100 --executions 2000 --eps 0.1,0.2
//
// Each pair is a VersionPair of two models of the user's kind (a network wrapped as a dense
// nnfuzz model whose Output has `logits`). Writes OUT/results.md (the tables, also printed) and
// OUT/seeds.csv (one row per seed and configuration), and the release report OUT/report/
// (report.md, metrics.csv, layers.csv, a per-layer chart per candidate and up to --pictures
// PNGs per candidate: seed | found | minimised | difference).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "mnist_common.hpp"
#include "shared/flags.hpp"

#include <nnfuzz/minimize.hpp>
#include <nnfuzz/models/prune.hpp>
#include <nnfuzz/models/quantize.hpp>
#include <nnfuzz/regression/localize.hpp>
#include <nnfuzz/regression/metrics.hpp>
#include <nnfuzz/regression/report.hpp>
#include <nnfuzz/targets/version_pair.hpp>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <thread>

namespace {

using namespace nnfuzz;

struct Settings {
  std::string data_dir = "data/mnist", fashion_dir = "/usr/share/datasets/fashion-mnist";
  std::string out_dir = "out/model_regression", models_dir = "out/models";
  std::vector<std::string> candidates{"float16", "int8", "pruned50", "pruned90", "retrained"};
  std::vector<float> eps{0.1f, 0.2f};
  Index seeds = 100;
  std::uint64_t seed = 1;
  std::uint64_t executions = 2000;
  Index batch = 100;
  float sigma = 0.1f;
  float sigma_range = 1.0f;
  float radius = nnfuzz::radius_from_squared(0.5f);
  Index calibration = 500;
  Index finetune_steps = 1000;
  std::uint64_t minimize_executions = 4000;
  int jobs = 0;
  Index train_steps = 0;
  bool quick = false;
  int pictures = 6;
};

// A network (Mlp<float>, Mlp<Eigen::half>, Int8Mlp) as a dense nnfuzz model whose Output has
// `logits`: how a user's own model enters a VersionPair.
template <typename Net>
struct Classifier {
  struct Output {
    typename Net::Trace trace;
    RowMatrix logits;
    /// The trace's named tensors, where the network names them (Mlp: dense1, relu1, ..., logits;
    /// Int8Mlp's names them as reals from its codes): what localisation compares.
    template <class F, class T = typename Net::Trace>  // T: SFINAE in the immediate context
    auto for_each_tensor(F&& f) const -> decltype(std::declval<const T&>().for_each_tensor(f)) {
      return trace.for_each_tensor(f);
    }
  };
  Net net;
  Index input_dim() const { return net.input_dim(); }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    net.forward(batch, out.trace);
    out.logits = out.trace.logits().template cast<float>();
  }
};

template <typename Net>
using Pair = VersionPair<Classifier<Mlp<float>>, Classifier<Net>>;

// The objective of every search: the candidate's margin must exceed one float16 ulp of its logits
// (a smaller gap is a tie within rounding, for every candidate alike).
DisagreementObjective objective() { return DisagreementObjective(0.0f, 1.0f); }

struct SeedResult {
  bool found = false;            // a confirmed disagreement
  std::uint64_t executions = 0;  // to the first confirmed disagreement (or the budget)
  PerturbationSize before, after;
  RowVector input;      // the confirmed disagreement
  RowVector minimised;  // minimize()'s result
};

// Re-evaluates a saved input from scratch, in a batch of the shape it was found in.
template <typename P>
bool recheck(P& pair, const RowVector& input, Index batch) {
  typename P::Output out;
  const RowMatrix copies = input.replicate(batch, 1);
  pair.evaluate(copies, out);
  return objective().disagrees(out, 0);
}

template <typename P, typename Coverage>
SeedResult fuzz_seed(const Settings& s, const P& pair, Coverage coverage, float eps, const RowMatrix& seed_row,
                     std::uint64_t rng_seed) {
  FuzzOptions o;
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.max_findings = 1;
  o.seed = rng_seed;
  auto fuzzer =
      make_fuzzer(pair, RecentSampler(), GaussianMutator(s.sigma, MutationBounds{0.0f, 1.0f, eps}, s.sigma_range),
                  std::move(coverage), objective(), o);
  const FuzzResult fr = fuzzer.run(seed_row);
  SeedResult r;
  r.executions = fr.stats.executions;
  if (!fr.found()) return r;
  P local = pair;
  const Finding& f = fr.findings.front();
  if (!recheck(local, f.input, s.batch)) return r;
  r.found = true;
  r.executions = f.execution;
  r.input = f.input;
  MinimizeOptions mo;
  mo.confirm_batch_size = s.batch;
  mo.max_executions = static_cast<Index>(s.minimize_executions);
  DisagreementObjective d = objective();
  const MinimizeResult m = minimize(local, d, seed_row.row(0), f.input, mo);
  r.before = m.before;
  r.after = m.after;
  r.minimised = m.input;
  return r;
}

struct Config {
  std::string data, candidate, method;
  float eps = 0;
  std::vector<Index> seed_rows;
  std::vector<SeedResult> results;
};

struct ModelRow {
  std::string data, candidate;
  double acc_old = 0, acc_new = 0;
  Index test_disagreements = 0, test_images = 0;
  Index seeds = 0;
};

// The first --seeds test images the old model classifies correctly and the candidate agrees on.
template <typename P>
std::vector<Index> pick_seeds(const Settings& s, P& pair, const ex::Data& data) {
  std::vector<Index> rows;
  typename P::Output out;
  for (Index first = 0; first < data.test.images.rows() && static_cast<Index>(rows.size()) < s.seeds;
       first += s.batch) {
    const Index n = std::min(s.batch, data.test.images.rows() - first);
    pair.evaluate(data.test.images.middleRows(first, n), out);
    for (Index r = 0; r < n && static_cast<Index>(rows.size()) < s.seeds; ++r)
      if (argmax(out.reference.row(r)) == data.test.labels(first + r) &&
          argmax(out.candidate.row(r)) == argmax(out.reference.row(r)))
        rows.push_back(first + r);
  }
  return rows;
}

template <typename P>
Index count_disagreements(P& pair, const RowMatrix& images, Index batch) {
  typename P::Output out;
  const DisagreementObjective d = objective();
  Index n_dis = 0;
  for (Index first = 0; first < images.rows(); first += batch) {
    const Index n = std::min(batch, images.rows() - first);
    pair.evaluate(images.middleRows(first, n), out);
    for (Index r = 0; r < n; ++r) n_dis += d.disagrees(out, r);
  }
  return n_dis;
}

int jobs_of(const Settings& s) {
  return s.jobs > 0 ? s.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The release gate the report applies to every candidate: PyTorch's SQNR >= 30 dB on the logits,
// 99% top-1 agreement and a KL p99 of 0.01 nats over the test set.
MetricGate release_gate() {
  MetricGate g;
  g.min_top1_agreement = 0.99;
  g.max_kl_p99 = 0.01;
  g.min_sqnr_db = 30;
  return g;
}

// What localisation compares each tensor under: float16 candidates in float16 ulps, the float
// ones with a float32 atol / rtol.
TensorTolerances tolerances_for(const std::string& candidate) {
  if (candidate == "float16") return TensorTolerances(Tolerance::float16(4));
  return TensorTolerances(Tolerance::float32(1e-4, 1e-3));
}

template <typename Net>
void run_candidate(const Settings& s, const ex::Data& data, const std::string& name, const Mlp<float>& old_net,
                   Net candidate, std::vector<ModelRow>& models, std::vector<Config>& configs,
                   std::vector<CandidateReport>& reports) {
  Pair<Net> pair(Classifier<Mlp<float>>{old_net}, Classifier<Net>{std::move(candidate)});
  ModelRow m;
  m.data = data.name;
  m.candidate = name;
  m.acc_old = accuracy(pair.old_model().net, data.test.images, data.test.labels);
  m.acc_new = accuracy(pair.new_model().net, data.test.images, data.test.labels);
  m.test_disagreements = count_disagreements(pair, data.test.images, s.batch);
  m.test_images = data.test.images.rows();
  const std::vector<Index> seed_rows = pick_seeds(s, pair, data);
  m.seeds = static_cast<Index>(seed_rows.size());
  models.push_back(m);
  std::cout << data.name << " " << name << ": test accuracy " << 100 * m.acc_old << "% -> " << 100 * m.acc_new << "%, "
            << m.test_disagreements << " test-set disagreements; fuzzing " << seed_rows.size() << " seeds\n";
  for (float eps : s.eps)
    for (const std::string method : {"cgf", "random"}) {
      Config c{data.name, name, method, eps, seed_rows, std::vector<SeedResult>(seed_rows.size())};
      // Seeds are independent fuzz runs: spread them over the cores. Each run's RNG seed depends
      // only on the master seed and the seed index, so the table does not depend on --jobs.
      std::atomic<std::size_t> next{0};
      auto worker = [&]() {
        for (std::size_t i; (i = next++) < seed_rows.size();) {
          const RowMatrix seed = data.test.images.row(seed_rows[i]);
          const std::uint64_t rs = s.seed * 1000003 + i;
          if (method == "random")
            c.results[i] = fuzz_seed(s, pair, NoCoverage(), eps, seed, rs);
          else
            c.results[i] = fuzz_seed(s, pair, KdTreeCoverage(s.radius), eps, seed, rs);
        }
      };
      std::vector<std::thread> threads;
      for (int j = 1; j < jobs_of(s); ++j) threads.emplace_back(worker);
      worker();
      for (auto& t : threads) t.join();
      configs.push_back(std::move(c));
    }
  // The report: metrics over the test set and over every confirmed finding of this candidate
  // (all eps and methods), the gate's verdict, and where each finding parts.
  CandidateReport cr;
  cr.name = data.name + " " + name;
  cr.data = measure_pair(pair, data.test.images, s.batch);
  cr.gate = release_gate().violations(cr.data);
  cr.gated = true;
  std::vector<Finding> found;
  for (std::size_t k = configs.size() - 2 * s.eps.size(); k < configs.size(); ++k)
    for (std::size_t i = 0; i < configs[k].results.size(); ++i) {
      const SeedResult& r = configs[k].results[i];
      if (!r.found) continue;
      Finding f;
      f.input = r.input;
      found.push_back(std::move(f));
      cr.images.push_back({data.test.images.row(configs[k].seed_rows[i]), r.input, r.minimised});
    }
  if (!found.empty()) cr.findings = measure_pair(pair, finding_inputs(found), s.batch);
  if constexpr (can_localize<typename Pair<Net>::Output>()) {
    if (!found.empty()) {
      // int8: each tensor within 2 quantisation steps of its own scale (Int8Mlp::tolerances()).
      TensorTolerances tol = tolerances_for(name);
      if constexpr (std::is_same<Net, Int8Mlp>::value) tol = pair.new_model().net.tolerances(2);
      cr.where = localize_findings(pair, found, tol);
    }
  }
  std::cout << cr.name << ": gate " << (cr.gate.empty() ? "passed" : "failed: " + cr.gate) << "; " << found.size()
            << " findings";
  for (const DivergenceGroup& g : group_by_first_tensor(cr.where))
    std::cout << ", " << g.count << " part at " << (g.tensor.empty() ? "none" : g.tensor);
  std::cout << "\n";
  reports.push_back(std::move(cr));
}

// Trains (or loads from the model cache) a pruned and fine-tuned copy of the old model.
Mlp<float> pruned(const Settings& s, const ex::Data& data, const ex::Recipe& r, const Mlp<float>& old_net,
                  float fraction) {
  const int pct = static_cast<int>(std::lround(100 * fraction));
  const std::string path = (ex::fs::path(s.models_dir) / (data.name + "-" + r.name + "-pruned" + std::to_string(pct) +
                                                          "-ft" + std::to_string(s.finetune_steps) + "-01.bin"))
                               .string();
  if (ex::fs::exists(path)) {
    std::cout << "model pruned" << pct << ": loaded " << path << "\n";
    return load_mlp(path);
  }
  Mlp<float> net = old_net;
  const PruneMasks masks = prune_magnitude(net, fraction);
  TrainOptions o = r.train;
  o.steps = s.finetune_steps;
  o.seed = r.train.seed + 100;
  o.progress = &std::cout;
  o.label = "fine-tune pruned" + std::to_string(pct);
  if (o.steps > 0) train_pruned(net, data.train.images, data.train.labels, masks, o);
  save_mlp(path, net);
  std::cout << "model pruned" << pct << ": saved " << path << "\n";
  return net;
}

void run_data(const Settings& s, const std::string& dir, std::vector<ModelRow>& models, std::vector<Config>& configs,
              std::vector<CandidateReport>& reports) {
  const ex::Scale scale;
  const ex::Data data = ex::load_data(dir, scale);
  const ex::Recipe recipe = ex::recipe("adam", s.train_steps);
  const Mlp<float> old_net = ex::train_or_load(recipe, data, scale, s.models_dir, std::cout);
  for (const std::string& c : s.candidates) {
    if (c == "float16") {
      run_candidate(s, data, c, old_net, old_net.half_arithmetic(), models, configs, reports);
    } else if (c == "int8") {
      const Index n = std::min(s.calibration, data.train.images.rows());
      run_candidate(s, data, c, old_net, quantize_int8(old_net, data.train.images.topRows(n)), models, configs,
                    reports);
    } else if (c == "pruned50" || c == "pruned90") {
      run_candidate(s, data, c, old_net, pruned(s, data, recipe, old_net, c == "pruned50" ? 0.5f : 0.9f), models,
                    configs, reports);
    } else {  // retrained: the same recipe, another seed (initialisation and shuffling)
      ex::Recipe again = recipe;
      again.train.seed = recipe.train.seed + 1;
      again.name += "-seed" + std::to_string(again.train.seed);
      run_candidate(s, data, c, old_net, ex::train_or_load(again, data, scale, s.models_dir, std::cout), models,
                    configs, reports);
    }
  }
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// The two markdown tables; the per-seed CSV.
std::string report(const Settings& s, const std::vector<ModelRow>& models, const std::vector<Config>& configs,
                   double seconds) {
  std::ostringstream md;
  md << "# Regression testing between model versions\n\n"
     << "Old model: the `adam` recipe" << (s.train_steps > 0 ? " (" + std::to_string(s.train_steps) + " steps)" : "")
     << ", pixels [0,1]. Fuzzing: " << s.seeds << " test seeds (the old model right, the candidate agreeing) x "
     << s.executions << " executions, batch " << s.batch << ", sigma " << s.sigma << ", CGF = KdTreeCoverage("
     << s.radius << ") on the old logits, random = NoCoverage; master seed " << s.seed << ". A disagreement "
     << "counts when the candidate's margin exceeds one float16 ulp and it fires again from the saved input; "
     << "minimize() then shrinks it (at most " << s.minimize_executions << " executions). Run time "
     << fixed(seconds, 0) << " s.\n\n";
  md << "| data | candidate | old accuracy | candidate accuracy | test-set disagreements |\n"
     << "|---|---|---|---|---|\n";
  for (const ModelRow& m : models)
    md << "| " << m.data << " | " << m.candidate << " | " << fixed(100 * m.acc_old, 2) << "% | "
       << fixed(100 * m.acc_new, 2) << "% | " << m.test_disagreements << " / " << m.test_images << " |\n";
  md << "\n| data | candidate | eps | method | seeds with a disagreement | median executions to first | "
        "median L0 before → after | median L2 before → after | median L-inf before → after |\n"
     << "|---|---|---|---|---|---|---|---|---|\n";
  const std::string csv_path = s.out_dir + "/seeds.csv";
  std::ofstream csv = ex::open_output(csv_path);
  csv << "data,candidate,eps,method,seed_index,test_image,found,executions,l0_before,l2_before,linf_before,l0_after,"
         "l2_after,linf_after\n";
  for (const Config& c : configs) {
    std::vector<double> to_first, l0b, l2b, lib, l0a, l2a, lia;
    for (std::size_t i = 0; i < c.results.size(); ++i) {
      const SeedResult& r = c.results[i];
      csv << c.data << ',' << c.candidate << ',' << c.eps << ',' << c.method << ',' << i << ',' << c.seed_rows[i] << ','
          << r.found << ',' << r.executions << ',' << r.before.l0 << ',' << r.before.l2 << ',' << r.before.linf << ','
          << r.after.l0 << ',' << r.after.l2 << ',' << r.after.linf << '\n';
      if (!r.found) continue;
      to_first.push_back(static_cast<double>(r.executions));
      l0b.push_back(static_cast<double>(r.before.l0));
      l2b.push_back(r.before.l2);
      lib.push_back(r.before.linf);
      l0a.push_back(static_cast<double>(r.after.l0));
      l2a.push_back(r.after.l2);
      lia.push_back(r.after.linf);
    }
    const double n = static_cast<double>(c.results.size());
    auto span = [](const std::vector<double>& b, const std::vector<double>& a, int digits) {
      return b.empty() ? std::string("-") : fixed(ex::median(b), digits) + " → " + fixed(ex::median(a), digits);
    };
    md << "| " << c.data << " | " << c.candidate << " | " << c.eps << " | " << c.method << " | " << to_first.size()
       << "/" << c.results.size() << " (" << fixed(n > 0 ? 100.0 * static_cast<double>(to_first.size()) / n : 0, 0)
       << "%) | " << (to_first.empty() ? std::string("-") : fixed(ex::median(to_first), 0)) << " | "
       << span(l0b, l0a, 0) << " | " << span(l2b, l2a, 2) << " | " << span(lib, lia, 3) << " |\n";
  }
  ex::close_output(csv, csv_path);
  return md.str();
}

void add_options(CLI::App& app, Settings& s) {
  nnfuzz_flags::data(app, s.data_dir, "MNIST digits; empty: skipped");
  app.add_option("--fashion", s.fashion_dir, "Fashion-MNIST directory (same format); empty: skipped")
      ->capture_default_str();
  nnfuzz_flags::out(app, s.out_dir, "results.md, seeds.csv");
  nnfuzz_flags::models(app, s.models_dir);
  app.add_option("--candidates", s.candidates, "release candidates: float16, int8, pruned50, pruned90, retrained")
      ->delimiter(',')
      ->capture_default_str();
  nnfuzz_flags::eps(app, s.eps);
  nnfuzz_flags::seeds(app, s.seeds, "test images to fuzz around, per candidate");
  nnfuzz_flags::campaign(app, s, {"", "per seed image, CGF and random alike", "CGF, on the old logits"});
  app.add_option("--calibration", s.calibration, "training images that calibrate the int8 ranges")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(s.calibration)>>())
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--finetune-steps", s.finetune_steps, "fine-tuning steps of the pruned models")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(s.finetune_steps)>>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--minimize-executions", s.minimize_executions, "minimize() budget per disagreement")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(s.minimize_executions)>>())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--pictures", s.pictures, "report pictures (seed | found | minimised | difference) per candidate")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  nnfuzz_flags::jobs(app, s.jobs);
  nnfuzz_flags::train_steps(app, s.train_steps);
  app.add_flag("--quick", s.quick,
               "a small run (10 seeds, 300 executions, 100 fine-tuning steps, 1000 minimisation executions) unless "
               "those options are given");
}

void apply_quick(const CLI::App& app, Settings& s) {
  if (!s.quick) return;
  if (app.count("--seeds") == 0) s.seeds = 10;
  if (app.count("--executions") == 0) s.executions = 300;
  if (app.count("--finetune-steps") == 0) s.finetune_steps = 100;
  if (app.count("--minimize-executions") == 0) s.minimize_executions = 1000;
}

void validate(const Settings& s) {
  for (const auto& c : s.candidates)
    if (c != "float16" && c != "int8" && c != "pruned50" && c != "pruned90" && c != "retrained")
      throw std::invalid_argument("--candidates must list float16, int8, pruned50, pruned90, retrained; got '" + c +
                                  "'");
  for (float e : s.eps)
    if (!(e > 0 && e <= 1)) throw std::invalid_argument("--eps values must be in (0, 1], got " + std::to_string(e));
  if (s.data_dir.empty() && s.fashion_dir.empty())
    throw std::invalid_argument("--data and --fashion are both empty: no data set to run on");
}

void run_experiment(const Settings& s) {
  const auto start = std::chrono::steady_clock::now();
  ex::fs::create_directories(s.out_dir);
  std::vector<ModelRow> models;
  std::vector<Config> configs;
  std::vector<CandidateReport> reports;
  for (const std::string& dir : {s.data_dir, s.fashion_dir})
    if (!dir.empty()) run_data(s, dir, models, configs, reports);
  ReportOptions ro;
  ro.title = "Release report: model_regression";
  ro.image = {28, 28, 0.0f, 1.0f};  // the digits and Fashion-MNIST, pixels [0,1]
  ro.write_png = write_png;
  ro.max_pictures = static_cast<std::size_t>(s.pictures);
  const ReportFiles rf = write_regression_report(s.out_dir + "/report", reports, ro);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string md = report(s, models, configs, seconds);
  const std::string path = s.out_dir + "/results.md";
  ex::write_text_file(path, md);
  std::cout << "\n"
            << md << "\ntables: " << path << ", per-seed CSV: " << s.out_dir
            << "/seeds.csv, release report: " << rf.markdown << " (" << rf.metrics_csv << ", " << rf.layers_csv
            << ")\n";
  ex::check_stdout();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{
      "nnfuzz: regression testing between model versions (float16, int8, pruned, retrained) on MNIST and "
      "Fashion-MNIST, CGF vs random search"};
  add_options(app, s);
  return ex::driver_main("model_regression", app, argc, argv, [&] {
    apply_quick(app, s);
    validate(s);
    run_experiment(s);
  });
}
