// SPDX-License-Identifier: MIT
// Fuzzing a network where it really runs: the PyTorch-trained MNIST models of
// tools/train_torch_mnist.py, exported to ONNX (run by OpenCV DNN) and TorchScript (run by
// LibTorch), through nnfuzz's adapters (include/nnfuzz/adapters/).
//
//   engines nan        TensorFuzz's NaN hunt on the exported unsafe model (tf-nan), through each
//                      engine: CGF vs random search, as experiments/mnist_nan; every NaN input is
//                      then run by the other engines and by nnfuzz's own Eigen Mlp (NanTarget)
//   engines disagree   cross-engine disagreements: the same network in OpenCV DNN, LibTorch and
//                      (for the MLP) nnfuzz's Eigen Mlp: inputs where the top-1 class differs or
//                      the largest |Δ logit| exceeds --delta; CGF vs random search per seed
//   engines bf16       float32 vs LibTorch's bfloat16 on the CPU (the same TorchScript file):
//                      inputs where the top-1 class differs (beyond a one-bfloat16-ulp tie)
//
//   /usr/bin/python3 tools/train_torch_mnist.py     # once: trains and exports the models (~5 min)
//   engines nan --runs 10 --executions 200000
//   engines disagree --model mlp --seeds 100 --executions 2000
//   engines bf16 --model cnn --seeds 100 --executions 2000
#include "mnist_common.hpp"
#include "shared/flags.hpp"

#include <nnfuzz/adapters/libtorch.hpp>
#include <nnfuzz/adapters/opencv_dnn.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <iomanip>
#include <memory>
#include <sstream>

namespace {

using namespace nnfuzz;

struct Settings {
  std::string data_dir = "data/mnist", models_dir = "out/models";
  std::string engine = "all", model = "mlp";
  int runs = 10;
  Index seeds = 10;
  std::uint64_t seed = 1;
  std::uint64_t executions = 200000;
  Index batch = 100;
  float sigma = 0.2f, sigma_range = 1.0f, radius = nnfuzz::radius_from_squared(0.5f), eps = 0.2f;
  float delta = 1e-4f, tie = 0.0f;
  int threads = 0;
};

std::string model_base(const Settings& s, const std::string& recipe) {
  const std::string name = ex::fs::path(s.data_dir).filename().string();
  return (ex::fs::path(s.models_dir) / (name + "-torch-" + recipe)).string();
}

// The model's description written by the training script (base.txt), on one line.
std::string model_info(const std::string& base) {
  std::ifstream in(base + ".txt");
  std::string line;
  std::getline(in, line);
  return line.empty() ? "no " + base + ".txt" : line;
}

void require_files(const std::string& base, std::initializer_list<const char*> exts) {
  for (const char* e : exts)
    if (!ex::fs::exists(base + e))
      throw std::runtime_error("no model file '" + base + e +
                               "': run /usr/bin/python3 tools/train_torch_mnist.py first (needs python3-torch, "
                               "python3-onnx)");
}

// ------------------------------------------------------------------ the NaN hunt
const std::vector<std::string> kUnsafeOutputs{"logits", "softmax", "cross_entropy", "hidden"};

OpenCvDnnOptions unsafe_cv() {
  OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  o.select.reduce = CoverageReduce::sum_abs;  // TensorFuzz's coverage: one number, Σ|logits|
  o.select.outputs = {"softmax", "cross_entropy"};
  return o;
}
LibTorchOptions unsafe_torch() {
  LibTorchOptions o;
  o.input_shape = {784};
  o.output_names = kUnsafeOutputs;
  o.select.coverage = {"logits"};
  o.select.reduce = CoverageReduce::sum_abs;
  o.select.outputs = {"softmax", "cross_entropy"};
  return o;
}

struct NanRow {
  std::string engine, method;
  int run = 0;
  bool found = false;
  std::uint64_t executions = 0;
  double seconds = 0;
  std::string what, others;
  float spread = 0;
};

// Which of the three implementations give a non-finite output on `x` (evaluated alone).
std::string nonfinite_in(const std::string& base, const RowVector& x) {
  const RowMatrix one = x;
  std::string s;
  auto say = [&](const char* name, bool bad) {
    s += std::string(s.empty() ? "" : " ") + name + (bad ? ":NaN" : ":ok");
  };
  Mask hits;
  {
    OpenCvDnnModel m(base + ".onnx", unsafe_cv());
    NamedOutputs o;
    m.evaluate(one, o);
    NonFiniteObjective().check(one, o, hits);
    say("opencv", hits(0));
  }
  {
    LibTorchModel m(base + ".pt", unsafe_torch());
    NamedOutputs o;
    m.evaluate(one, o);
    NonFiniteObjective().check(one, o, hits);
    say("libtorch", hits(0));
  }
  {
    const NanTarget t(load_mlp(base + ".bin"));
    NanTarget::Output o;
    t.evaluate(one, o);
    NonFiniteObjective().check(one, o, hits);
    say("eigen", hits(0));
  }
  return s;
}

template <typename Model, typename Coverage>
NanRow nan_once(const Settings& s, const std::string& engine, const std::string& method, int run, Model model,
                Coverage coverage, const RowMatrix& seeds, const std::string& base) {
  FuzzOptions o;
  o.batch_size = s.batch;
  o.max_executions = s.executions;
  o.seed = s.seed * 1000 + static_cast<std::uint64_t>(run);  // the same stream for CGF and random
  auto fuzzer = make_fuzzer(std::move(model), RecentSampler(), GaussianMutator(s.sigma, {-1.0f, 1.0f}, s.sigma_range),
                            std::move(coverage), NonFiniteObjective(), o);
  const FuzzResult r = fuzzer.run(seeds);
  NanRow row;
  row.engine = engine;
  row.method = method;
  row.run = run;
  row.found = r.found();
  row.executions = row.found ? r.findings[0].execution : r.stats.executions;
  row.seconds = r.stats.seconds;
  if (row.found) {
    const Finding& f = r.findings[0];
    row.what = f.what.substr(f.what.find('\'') + 1);
    row.what.pop_back();
    typename Model::Output out;
    const RowMatrix one = f.input;
    fuzzer.model().evaluate(one, out);
    const RowMatrix& l = out["logits"];
    row.spread = l.maxCoeff() - l.minCoeff();
    row.others = nonfinite_in(base, f.input);
  }
  return row;
}

void run_nan(const Settings& s) {
  const std::string base = model_base(s, "tf-nan-pm1");
  require_files(base, {".onnx", ".pt", ".bin"});
  ex::Scale scale{-1.0f, 1.0f};  // [-1, 1]: the tf-nan model's pixels
  const ex::Data data = ex::load_data(s.data_dir, scale);
  std::cout << "model: " << base << ".{onnx,pt,bin} (" << model_info(base) << ")\n";
  std::cout << "fuzzing: " << s.runs << " runs x " << s.executions << " executions per engine and method, batch "
            << s.batch << ", sigma " << s.sigma << " (range " << s.sigma_range << "), coverage sum|logits|, radius "
            << s.radius << ", RecentSampler, " << s.seeds << " training images as seeds, pixels [-1,1]\n\n";
  std::vector<NanRow> rows;
  for (int run = 1; run <= s.runs; ++run) {
    Rng pick(s.seed * 7919 + static_cast<std::uint64_t>(run));
    RowMatrix seeds(s.seeds, 784);
    for (Index i = 0; i < s.seeds; ++i)
      seeds.row(i) = data.train.images.row(pick.uniform_index(data.train.images.rows()));
    if (s.engine == "all" || s.engine == "opencv") {
      const OpenCvDnnModel m(base + ".onnx", unsafe_cv());
      rows.push_back(nan_once(s, "opencv", "cgf", run, m, KdTreeCoverage(s.radius), seeds, base));
      rows.push_back(nan_once(s, "opencv", "random", run, m, NoCoverage(), seeds, base));
    }
    if (s.engine == "all" || s.engine == "libtorch") {
      const LibTorchModel m(base + ".pt", unsafe_torch());
      rows.push_back(nan_once(s, "libtorch", "cgf", run, m, KdTreeCoverage(s.radius), seeds, base));
      rows.push_back(nan_once(s, "libtorch", "random", run, m, NoCoverage(), seeds, base));
    }
  }
  std::cout << "engine    method  run  found  executions  seconds  first non-finite  spread  non-finite in\n";
  for (const NanRow& r : rows)
    std::cout << std::left << std::setw(10) << r.engine << std::setw(8) << r.method << std::setw(5) << r.run
              << std::setw(7) << (r.found ? "yes" : "no") << std::setw(12) << r.executions << std::setw(9) << std::fixed
              << std::setprecision(2) << r.seconds << std::setw(18) << (r.found ? r.what : "-") << std::setw(8)
              << std::setprecision(1) << (r.found ? r.spread : 0.0f) << (r.found ? r.others : "-") << "\n";
  std::cout << "\n| engine | CGF | random search | median executions to the NaN (CGF) |\n|---|---|---|---|\n";
  for (const char* engine : {"opencv", "libtorch"}) {
    int cgf = 0, rnd = 0;
    std::vector<double> when;
    for (const NanRow& r : rows) {
      if (r.engine != engine || !r.found) continue;
      (r.method == "cgf" ? cgf : rnd) += 1;
      if (r.method == "cgf") when.push_back(static_cast<double>(r.executions));
    }
    if (s.engine != "all" && s.engine != engine) continue;
    std::cout << "| " << engine << " | " << cgf << "/" << s.runs << " | " << rnd << "/" << s.runs << " | "
              << (when.empty() ? std::string("-") : std::to_string(static_cast<long>(ex::median(when)))) << " |\n";
  }
}

// ------------------------------------------------------------------ several engines at once
/// One engine's forward pass: fills the logits of a batch.
struct Engine {
  std::string name;
  std::function<void(const Eigen::Ref<const RowMatrix>&, RowMatrix&)> logits;
  float tie_ulp_bits = 0;  ///< 7 for bfloat16: a top-1 change within one ulp of its logits is a tie
};

Engine opencv_engine(const std::string& path) {
  OpenCvDnnOptions o;
  o.input_shape = {784};
  o.select.coverage = {"logits"};
  auto m = std::make_shared<OpenCvDnnModel>(path, o);
  auto out = std::make_shared<NamedOutputs>();
  return {"opencv",
          [m, out](const Eigen::Ref<const RowMatrix>& x, RowMatrix& l) {
            m->evaluate(x, *out);
            l = out->tensors[0];
          },
          0.0f};
}
Engine torch_engine(const std::string& path, const std::vector<std::string>& names, torch::Dtype dtype) {
  LibTorchOptions o;
  o.input_shape = {784};
  o.output_names = names;
  o.select.coverage = {"logits"};
  o.dtype = dtype;
  auto m = std::make_shared<LibTorchModel>(path, o);
  auto out = std::make_shared<NamedOutputs>();
  return {dtype == torch::kBFloat16 ? "libtorch-bf16" : "libtorch",
          [m, out](const Eigen::Ref<const RowMatrix>& x, RowMatrix& l) {
            m->evaluate(x, *out);
            l = out->tensors[0];
          },
          dtype == torch::kBFloat16 ? 7.0f : 0.0f};
}
Engine eigen_engine(const std::string& path) {
  auto net = std::make_shared<Mlp<float>>(load_mlp(path));
  auto trace = std::make_shared<MlpTrace<float>>();
  return {"eigen",
          [net, trace](const Eigen::Ref<const RowMatrix>& x, RowMatrix& l) {
            net->forward(x, *trace);
            l = trace->logits();
          },
          0.0f};
}

/// The same network in several engines, as one Model: coverage = the first engine's logits.
/// Copies share the engines (one thread).
struct MultiEngine {
  struct Output {
    RowMatrix coverage;
    std::vector<RowMatrix> logits;  // per engine
    template <class F>
    void for_each_tensor(F&& f) const {
      for (const RowMatrix& l : logits) f("logits", l);
    }
  };
  std::vector<Engine> engines;
  Index input_dim() const { return 784; }
  void evaluate(const Eigen::Ref<const RowMatrix>& x, Output& out) const {
    out.logits.resize(engines.size());
    for (std::size_t i = 0; i < engines.size(); ++i) engines[i].logits(x, out.logits[i]);
    out.coverage = out.logits[0];
  }
};

/// Fires when two engines' top-1 classes differ (each preferring its own class by more than a
/// tie) or when their logits differ by more than `delta` anywhere. Keeps the largest |Δ| seen per pair.
struct EngineDisagreement {
  const std::vector<Engine>* engines = nullptr;
  float delta = 1e-4f, tie = 0.0f;
  std::vector<float> max_delta;  // per pair (i < j), over every batch checked
  bool top1_only = false;

  float tie_of(std::size_t e, float a, float b) const {
    const float bits = (*engines)[e].tie_ulp_bits;
    if (bits <= 0) return tie;
    return std::max(tie, std::ldexp(1.0f, std::ilogb(std::max(std::abs(a), std::abs(b))) - static_cast<int>(bits)));
  }
  // 0: agree; 1: top-1 differs; 2: |Δ| > delta.
  int verdict(const MultiEngine::Output& out, Index r, std::size_t i, std::size_t j) const {
    const auto a = out.logits[i].row(r), b = out.logits[j].row(r);
    const Index ca = argmax(a), cb = argmax(b);
    if (ca != cb && a(ca) - a(cb) > tie_of(i, a(ca), a(cb)) && b(cb) - b(ca) > tie_of(j, b(ca), b(cb))) return 1;
    if (!top1_only && (a - b).cwiseAbs().maxCoeff() > delta) return 2;
    return 0;
  }
  template <typename Batch>
  void check(const Batch& batch, const MultiEngine::Output& out, Mask& hits) {
    const std::size_t n = out.logits.size();
    max_delta.resize(n * (n - 1) / 2, 0.0f);
    hits.setConstant(batch.rows(), false);
    std::size_t p = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j, ++p) {
        max_delta[p] = std::max(max_delta[p], (out.logits[i] - out.logits[j]).cwiseAbs().maxCoeff());
        for (Index r = 0; r < batch.rows(); ++r) hits(r) = hits(r) || verdict(out, r, i, j) != 0;
      }
  }
  std::string describe(const MultiEngine::Output& out, Index r) const {
    for (std::size_t i = 0; i < out.logits.size(); ++i)
      for (std::size_t j = i + 1; j < out.logits.size(); ++j) {
        const int v = verdict(out, r, i, j);
        if (v == 1)
          return "top1: " + (*engines)[i].name + " says " + std::to_string(argmax(out.logits[i].row(r))) + ", " +
                 (*engines)[j].name + " says " + std::to_string(argmax(out.logits[j].row(r)));
        if (v == 2)
          return "delta: " + (*engines)[i].name + " vs " + (*engines)[j].name + " " +
                 std::to_string((out.logits[i].row(r) - out.logits[j].row(r)).cwiseAbs().maxCoeff());
      }
    return "objective";
  }
};

void run_pairs(const Settings& s, bool bf16) {
  const std::string recipe = s.model == "cnn" ? "cnn-01" : "mlp-adam-01";
  const std::string base = model_base(s, recipe);
  require_files(base, {".onnx", ".pt"});
  const ex::Data data = ex::load_data(s.data_dir, ex::Scale{});
  // The MLP's TorchScript returns a dict (names from its keys); the CNN's a tuple.
  const std::vector<std::string> names =
      s.model == "cnn" ? std::vector<std::string>{"logits", "hidden"} : std::vector<std::string>{};
  MultiEngine model;
  if (bf16) {
    model.engines = {torch_engine(base + ".pt", names, torch::kFloat32),
                     torch_engine(base + ".pt", names, torch::kBFloat16)};
  } else {
    model.engines = {opencv_engine(base + ".onnx"), torch_engine(base + ".pt", names, torch::kFloat32)};
    if (s.model == "mlp" && ex::fs::exists(base + ".bin")) model.engines.push_back(eigen_engine(base + ".bin"));
  }
  std::string engine_list;
  for (const Engine& e : model.engines) engine_list += (engine_list.empty() ? "" : ", ") + e.name;
  std::cout << "model: " << base << " (" << model_info(base) << ")\nengines: " << engine_list << "\n";

  EngineDisagreement objective;
  objective.engines = &model.engines;
  objective.delta = s.delta;
  objective.tie = s.tie;
  objective.top1_only = bf16;
  // The test set first: what the data set alone shows.
  MultiEngine::Output out;
  Mask hits;
  Index test_hits = 0;
  std::vector<Index> good;  // correctly classified by the first engine: the seeds
  for (Index first = 0; first < data.test.images.rows(); first += 100) {
    const Index n = std::min<Index>(100, data.test.images.rows() - first);
    const auto x = data.test.images.middleRows(first, n);
    model.evaluate(x, out);
    objective.check(x, out, hits);
    test_hits += hits.count();
    for (Index r = 0; r < n; ++r)
      if (!hits(r) && argmax(out.logits[0].row(r)) == data.test.labels(first + r)) good.push_back(first + r);
  }
  const std::vector<float> test_delta = objective.max_delta;
  std::cout << "test set: " << test_hits << " of " << data.test.images.rows() << " images fire the objective ("
            << (bf16 ? "top-1 differs beyond a bfloat16-ulp tie" : "top-1 differs, or max |d logit| > ")
            << (bf16 ? "" : std::to_string(s.delta)) << ")\n";
  std::cout << "fuzzing: " << s.seeds << " seeds (correctly classified test images), " << s.executions
            << " executions each, batch " << s.batch << ", sigma " << s.sigma << ", L-inf " << s.eps
            << " around the seed, coverage = " << model.engines[0].name << " logits, radius " << s.radius << "\n\n";

  struct Tally {
    int top1 = 0, delta = 0;
    std::vector<double> when;
    std::vector<float> max_delta;
    std::vector<std::string> examples;
  } cgf, rnd;
  const Index nseeds = std::min<Index>(s.seeds, static_cast<Index>(good.size()));
  for (Index k = 0; k < nseeds; ++k) {
    const RowMatrix seed = data.test.images.row(good[static_cast<std::size_t>(k)]);
    for (int method = 0; method < 2; ++method) {
      FuzzOptions o;
      o.batch_size = s.batch;
      o.max_executions = s.executions;
      o.seed = s.seed * 100000 + static_cast<std::uint64_t>(k);
      MutationBounds b{0.0f, 1.0f, s.eps};
      Tally& t = method == 0 ? cgf : rnd;
      FuzzResult r;
      std::vector<float> md;
      if (method == 0) {
        auto f = make_fuzzer(model, RecentSampler(), GaussianMutator(s.sigma, b, s.sigma_range),
                             KdTreeCoverage(s.radius), objective, o);
        r = f.run(seed);
        md = f.objective().max_delta;
      } else {
        auto f =
            make_fuzzer(model, RecentSampler(), GaussianMutator(s.sigma, b, s.sigma_range), NoCoverage(), objective, o);
        r = f.run(seed);
        md = f.objective().max_delta;
      }
      t.max_delta.resize(md.size(), 0.0f);
      for (std::size_t p = 0; p < md.size(); ++p) t.max_delta[p] = std::max(t.max_delta[p], md[p]);
      if (!r.found()) continue;
      const std::string& what = r.findings[0].what;
      (what.rfind("top1", 0) == 0 ? t.top1 : t.delta) += 1;
      t.when.push_back(static_cast<double>(r.findings[0].execution));
      if (t.examples.size() < 5)
        t.examples.push_back("seed " + std::to_string(good[static_cast<std::size_t>(k)]) + ": " + what);
    }
  }
  std::vector<std::string> pairs;
  for (std::size_t i = 0; i < model.engines.size(); ++i)
    for (std::size_t j = i + 1; j < model.engines.size(); ++j)
      pairs.push_back(model.engines[i].name + " vs " + model.engines[j].name);
  std::cout << "| method | seeds with a top-1 difference | seeds with max |d logit| > delta only | median executions "
               "to it |\n|---|---|---|---|\n";
  for (int m = 0; m < 2; ++m) {
    const Tally& t = m == 0 ? cgf : rnd;
    std::cout << "| " << (m == 0 ? "CGF" : "random search") << " | " << t.top1 << "/" << nseeds << " | "
              << (bf16 ? std::string("-") : std::to_string(t.delta) + "/" + std::to_string(nseeds)) << " | "
              << (t.when.empty() ? std::string("-") : std::to_string(static_cast<long>(ex::median(t.when)))) << " |\n";
  }
  std::cout << "\n| pair | max |d logit| on the test set | during CGF | during random search |\n|---|---|---|---|\n";
  for (std::size_t p = 0; p < pairs.size(); ++p)
    std::cout << "| " << pairs[p] << " | " << std::scientific << std::setprecision(2) << test_delta[p] << " | "
              << (p < cgf.max_delta.size() ? cgf.max_delta[p] : 0.0f) << " | "
              << (p < rnd.max_delta.size() ? rnd.max_delta[p] : 0.0f) << " |\n";
  std::cout << std::defaultfloat;
  for (const auto& e : cgf.examples) std::cout << "CGF finding: " << e << "\n";
  for (const auto& e : rnd.examples) std::cout << "random finding: " << e << "\n";
}

void add_common(CLI::App& app, Settings& s) {
  nnfuzz_flags::data(app, s.data_dir);
  nnfuzz_flags::models(app, s.models_dir, "tools/train_torch_mnist.py's models");
  nnfuzz_flags::campaign(app, s, {"", "per run (nan) or per seed (disagree, bf16)", ""});
  app.add_option("--engine-threads", s.threads, "engine threads: cv::setNumThreads and at::set_num_threads (0 = leave)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app{"nnfuzz: fuzz PyTorch-trained MNIST models through OpenCV DNN and LibTorch"};
  app.require_subcommand(1);
  CLI::App* nan = app.add_subcommand("nan", "NaN hunt on the unsafe model through each engine, CGF vs random");
  CLI::App* dis = app.add_subcommand("disagree", "cross-engine disagreements (OpenCV, LibTorch, Eigen Mlp)");
  CLI::App* bf = app.add_subcommand("bf16", "float32 vs LibTorch bfloat16 disagreements");
  Settings sn = s;
  sn.sigma = 0.2f;
  add_common(*nan, sn);
  nnfuzz_flags::runs(*nan, sn.runs, "per engine and method");
  nnfuzz_flags::seeds(*nan, sn.seeds, "per run (nan) or one campaign each (disagree, bf16)");
  nan->add_option("--engine", sn.engine, "opencv, libtorch or all")
      ->check(CLI::IsMember({"opencv", "libtorch", "all"}))
      ->capture_default_str();
  Settings sd = s;
  sd.sigma = 0.1f;
  sd.seeds = 100;
  sd.executions = 2000;
  for (auto [sub, st] : {std::pair{dis, &sd}, std::pair{bf, &sd}}) {
    add_common(*sub, *st);
    sub->add_option("--model", st->model, "mlp (784-200-100-10) or cnn")
        ->check(CLI::IsMember({"mlp", "cnn"}))
        ->capture_default_str();
    nnfuzz_flags::seeds(*sub, st->seeds, "per run (nan) or one campaign each (disagree, bf16)");
    nnfuzz_flags::eps(*sub, st->eps);
    sub->add_option("--tie", st->tie, "absolute logit margin below which a top-1 difference is a tie")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
  }
  dis->add_option("--delta", sd.delta, "max |d logit| between two engines that counts as a disagreement")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const Settings& st = nan->parsed() ? sn : sd;
    if (st.threads > 0) {
      cv::setNumThreads(st.threads);
      at::set_num_threads(st.threads);
    }
    std::cout << "threads: OpenCV " << cv::getNumThreads() << ", LibTorch intra-op " << at::get_num_threads() << "\n";
    if (nan->parsed()) run_nan(sn);
    if (dis->parsed()) run_pairs(sd, false);
    if (bf->parsed()) run_pairs(sd, true);
    ex::check_stdout();
  } catch (const std::exception& e) {
    std::cerr << "engines: " << e.what() << "\n";
    return 1;
  }
}
