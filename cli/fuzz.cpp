// SPDX-License-Identifier: MIT
// nnfuzz command-line tool: `nnfuzz fuzz`: a campaign (or one worker of one) over an exported model, from seeds or
// resumed.
#include "commands.hpp"
#include "shared/flags.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace nnfuzz_cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The options of `nnfuzz fuzz`.
struct FuzzArgs {
  ModelSpec model;
  std::string against, objective = "nan", out, seeds, scale = "01", sync, worker, baseline;
  int workers = 1;
  std::uint64_t executions = 0, seed = 1;
  double seconds = 0;
  Index batch = 100, max_findings = 1, max_seeds = 0;
  float eps = 0;
  bool list_outputs = false, json = false, quiet = false;
};

// One worker's session: resumes `from` (a corpus) or starts from the seeds; `callbacks` include
// the saver (CampaignSaver or SyncDirectory). Teaches --objective label the roots' classes first.
template <typename F, typename... Callbacks>
nnfuzz::FuzzResult run_session(F& fuzzer, LabelHook* label, const nnfuzz::Corpus* from, const Seeds& seeds,
                               const std::string& seeds_path, Callbacks&... callbacks) {
  if (from) {
    if (label) {
      RowMatrix roots(from->size(), from->input_dim());
      Index k = 0;
      for (Index i = 0; i < from->size(); ++i)
        if (from->entry(i).parent < 0) roots.row(k++) = from->input(i);
      label->learn(roots.topRows(k));
    }
    return fuzzer.resume(*from, callbacks...);
  }
  if (label) label->learn(seeds.rows);
  try {
    return fuzzer.run(seeds.rows, callbacks...);
  } catch (const std::invalid_argument& e) {
    // Seeds the mutator refuses (outside its domain) are an input error of --seeds.
    throw UsageError("option --seeds '" + seeds_path + "': " + e.what());
  }
}

// Stops every in-process worker once they found `max` findings together (0: never).
struct SharedFindingLimit {
  std::atomic<Index> found{0};  ///< findings of all workers so far
  Index max = 0;                ///< --max-findings
  /// Counts a finding; stops this worker at the limit.
  bool on_finding(const nnfuzz::Finding&, const nnfuzz::FuzzStats&) { return ++found >= max && max > 0; }
  /// Stops the other workers once the limit is reached.
  bool on_batch(const nnfuzz::FuzzStats&) const { return max > 0 && found >= max; }
};

// The status lines of in-process workers on one stream: worker 0's ProgressPrinter writes to
// buffer() and this callback, after it in the run's list, hands its lines on under a lock; the
// other workers print only their FOUND lines (with their worker id).
class WorkerStatus {
 public:
  /// Worker `worker` of a run whose workers share `os` and `lock`.
  WorkerStatus(std::ostream& os, std::mutex& lock, std::size_t worker) : os_(&os), lock_(&lock), worker_(worker) {}
  /// Where worker 0's ProgressPrinter writes.
  std::ostream& buffer() { return buffer_; }
  /// Hands worker 0's lines on.
  void on_start(const nnfuzz::FuzzStats&) { flush(); }
  /// Hands worker 0's lines on.
  void on_batch(const nnfuzz::FuzzStats&) { flush(); }
  /// Hands worker 0's lines on.
  void on_end(const nnfuzz::FuzzStats&) { flush(); }
  /// Worker 0: its FOUND line; the others: a FOUND line naming the worker.
  void on_finding(const nnfuzz::Finding& f, const nnfuzz::FuzzStats& st) {
    if (worker_ == 0) return flush();
    const std::lock_guard<std::mutex> hold(*lock_);
    *os_ << "#" << st.executions << "\tFOUND  by worker " << worker_ << " finds: " << st.findings << "\n    " << f.what
         << " (seed " << f.root << ", depth " << f.depth << ", execution " << f.execution << ")\n"
         << std::flush;
  }

 private:
  void flush() {
    if (worker_ != 0 || buffer_.tellp() == 0) return;
    const std::lock_guard<std::mutex> hold(*lock_);
    *os_ << buffer_.str() << std::flush;
    buffer_.str("");
  }
  std::ostream* os_;
  std::mutex* lock_;
  std::size_t worker_;
  std::ostringstream buffer_;
};

// The session summary (stats.json, --json) and its text form.
json session_summary(const std::string& out, const CampaignSettings& s, bool resumed, const json& groups,
                     std::size_t total, std::size_t this_session, const nnfuzz::FuzzStats& st, int workers,
                     int signal) {
  return json{{"out", out},
              {"model", s.model.path},
              {"objective", s.objective},
              {"resumed", resumed},
              {"found", total > 0},
              {"findings_this_session", this_session},
              {"findings_total", total},
              {"groups", groups},
              {"executions", st.executions},
              {"seconds", st.seconds},
              {"executions_per_second", st.executions_per_second},
              {"corpus_size", st.corpus_size},
              {"coverage_radius", st.coverage_radius},
              {"workers", workers},
              {"stopped_by_signal", signal != 0}};
}

void print_summary(const json& j) {
  const std::size_t total = j["findings_total"];
  std::cout << (total == 0 ? "nothing found" : std::to_string(total) + " finding(s)") << " in "
            << j["executions"].get<std::uint64_t>() << " executions (" << std::fixed << std::setprecision(1)
            << j["seconds"].get<double>() << " s this session, " << std::setprecision(0)
            << j["executions_per_second"].get<double>() << " exec/s";
  if (j["workers"].get<int>() > 1) std::cout << ", " << j["workers"].get<int>() << " workers";
  std::cout << "), corpus " << j["corpus_size"].get<Index>() << "; campaign directory " << j["out"].get<std::string>()
            << "\n";
  print_groups(std::cout, j["groups"]);
  if (total > 0) std::cout << "replay: nnfuzz replay " << j["out"].get<std::string>() << "\n";
}

// Replaces DIR's corpus.bin, findings/ and bugs.bin with the merge of its in-process workers
// (DIR/workers/<i>), so that every other subcommand reads DIR as a one-worker campaign.
void merge_workers(const fs::path& dir, float radius) {
  const fs::path tmp = dir / ".merge-tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  nnfuzz::MergeOptions o;
  o.radius = radius > 0 ? radius : 1e-6f;
  nnfuzz::merge_campaigns({(dir / "workers").string()}, tmp.string(), o);
  for (const char* name : {"corpus.bin", "findings", "bugs.bin"}) {
    fs::remove_all(dir / name);
    if (fs::exists(tmp / name)) fs::rename(tmp / name, dir / name);
  }
  fs::remove_all(tmp);
}

int run_fuzz(FuzzArgs& a, bool workers_given) {
  CampaignSettings s;
  s.model = a.model;
  s.objective = a.objective;
  check_objective(a.objective);
  s.scale = parse_scale(a.scale);
  s.eps = a.eps;
  s.batch = a.batch;
  s.workers = a.workers;
  if (!a.baseline.empty()) {
    try {
      nnfuzz::parse_baseline(a.baseline);
    } catch (const std::invalid_argument&) {
      throw UsageError("option --baseline: '" + a.baseline +
                       "' is not a baseline (random, fitness, tensorfuzz or default)");
    }
    s.baseline = a.baseline;
  }
  if (!a.against.empty()) {
    s.against = a.model;
    s.against->path = a.against;
    s.against->engine.clear();
    s.against->dtype = "float32";
  } else if (is_pair_objective(a.objective) && a.model.dtype != "float32") {
    s.against = a.model;  // the same file in another precision: float32 vs --dtype
    s.model.dtype = "float32";
  }
  if (a.eps < 0 || !std::isfinite(a.eps)) throw UsageError("option --eps: must be >= 0, got " + std::to_string(a.eps));
  if (a.list_outputs) {
    Index width = 0;
    if (!a.seeds.empty()) width = load_seeds(a.seeds, s.scale).rows.cols();
    OpenModels m = open_models(s, width);
    const ModelSpec& spec = m.a->spec();
    if (a.json) {
      std::cout << json{{"model", spec.path},
                        {"engine", spec.engine},
                        {"input_shape", spec.input_shape},
                        {"outputs", m.a->outputs()},
                        {"coverage", spec.coverage},
                        {"logits", spec.logits},
                        {"prepared", m.a->prepared_path()}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << "model: " << spec.path << " (" << spec.engine << "), input " << shape_text(spec.input_shape)
                << (m.a->prepared_path().empty() ? "" : ", run as its prepared copy " + m.a->prepared_path())
                << "\noutputs:\n";
      for (const std::string& n : m.a->outputs())
        std::cout << "  " << n << (n == spec.coverage ? "   [coverage]" : "") << (n == spec.logits ? "   [logits]" : "")
                  << "\n";
    }
    return kNothingFound;
  }
  // Where the campaign is: --out, or the worker's directory of a sync directory.
  const bool sync = !a.sync.empty();
  if (!a.worker.empty() && !sync) throw UsageError("option --worker '" + a.worker + "' needs --sync DIR");
  if (sync) {
    if (!a.out.empty())
      throw UsageError("option --out '" + a.out + "': not with --sync (the campaign directory is SYNC/ID)");
    if (a.worker.empty()) throw UsageError("option --sync '" + a.sync + "' needs --worker ID");
    if (!nnfuzz::is_worker_id(a.worker))
      throw UsageError("option --worker: '" + a.worker +
                       "' is not a worker id (1..64 characters of [A-Za-z0-9._-], not starting with '.')");
    if (a.workers > 1)
      throw UsageError("option --workers " + std::to_string(a.workers) +
                       ": not with --sync (one worker per process: start one nnfuzz per --worker ID)");
    a.out = (fs::path(a.sync) / a.worker).string();
  }
  if (a.out.empty()) throw UsageError("option --out DIR is required (the campaign directory)");
  check_out_dir(a.out, sync ? "option --sync" : "option --out");
  const bool resume = fs::exists(fs::path(a.out) / "corpus.bin");
  Seeds seeds;
  if (resume) {
    const CampaignSettings before = read_settings(a.out);
    auto same = [&](const std::string& what, const std::string& was, const std::string& now) {
      if (was != now)
        throw UsageError("option --out: campaign directory '" + a.out + "' was made with " + what + " '" + was +
                         "', this command says '" + now + "' (use another --out for another campaign)");
    };
    same("model", before.model.path, fs::weakly_canonical(fs::absolute(s.model.path)).string());
    same("--objective", before.objective, s.objective);
    same("--against", before.against ? before.against->path : "",
         s.against ? fs::weakly_canonical(fs::absolute(s.against->path)).string() : "");
    if (workers_given) same("--workers", std::to_string(before.workers), std::to_string(a.workers));
    if (!a.baseline.empty()) same("--baseline", before.baseline, a.baseline);
    s = before;  // the campaign goes on as it was made
  } else {
    if (a.seeds.empty())
      throw UsageError("option --seeds PATH is required (directory '" + a.out + "' holds no campaign to resume)");
    seeds = load_seeds(a.seeds, s.scale);
    if (a.max_seeds > 0 && seeds.rows.rows() > a.max_seeds) {
      const RowMatrix first = seeds.rows.topRows(a.max_seeds);
      seeds.rows = first;
      seeds.names.resize(static_cast<std::size_t>(a.max_seeds));
    }
    s.seeds = fs::weakly_canonical(fs::absolute(a.seeds)).string();
    s.height = seeds.height;
    s.width = seeds.width;
    s.channels = seeds.channels;
    // Seeds without a geometry (.npy rows, CSV) of a model whose input is an image (--input-shape
    // C,H,W with 1 or 3 channels): the images are the model's, so `show` can draw them.
    const auto& shape = s.model.input_shape;
    if (s.height == 0 && shape.size() == 3 && (shape[0] == 1 || shape[0] == 3) &&
        shape[0] * shape[1] * shape[2] == seeds.rows.cols()) {
      s.channels = static_cast<int>(shape[0]);
      s.height = static_cast<int>(shape[1]);
      s.width = static_cast<int>(shape[2]);
    }
    s.model.path = fs::weakly_canonical(fs::absolute(s.model.path)).string();
    if (s.against) s.against->path = fs::weakly_canonical(fs::absolute(s.against->path)).string();
  }
  OpenModels m = open_models(s, resume ? 0 : seeds.rows.cols());
  if (!resume && seeds.rows.cols() != m.a->input_dim())
    throw UsageError("option --seeds: '" + a.seeds + "' holds seeds of " + std::to_string(seeds.rows.cols()) +
                     " values, model file '" + s.model.path + "' takes " + std::to_string(m.a->input_dim()) +
                     " (input shape " + shape_text(s.model.input_shape) + "; --input-shape sets it)");
  if (sync && !resume)  // a worker joining a sync directory runs the campaign its peers run
    for (const std::string& peer : nnfuzz::sync_workers(a.sync)) {
      const fs::path file = fs::path(a.sync) / peer / "nnfuzz.json";
      const std::string differs = peer != a.worker && fs::exists(file)
                                      ? campaign_difference(read_settings(file.parent_path().string()), s)
                                      : "";
      if (!differs.empty())
        throw UsageError("option --sync: worker '" + peer + "' of '" + a.sync + "' runs another campaign (its " +
                         differs + " differs: see " + file.string() + ")");
    }
  if (!resume) write_settings(a.out, s);

  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  o.seed = sync ? nnfuzz::worker_seed(a.seed, a.worker) : a.seed;
  o.max_findings = a.max_findings;
  o.max_executions = a.executions;
  o.max_seconds = a.seconds;
  if (a.executions == 0 && a.seconds <= 0) o.max_executions = 100000;
  std::ostringstream sink;
  std::ostream& status = a.quiet || a.json ? static_cast<std::ostream&>(sink) : std::cerr;
  nnfuzz::StopOnSignal stop;
  const fs::path out(a.out);
  if (resume)
    status << "nnfuzz: resuming '" << a.out << "' (" << nnfuzz::load_corpus(a.out).executions()
           << " executions so far)\n";
  std::vector<nnfuzz::FuzzResult> results(static_cast<std::size_t>(s.workers));
  const auto start = std::chrono::steady_clock::now();
  if (s.workers == 1) {
    with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
      std::ofstream csv_file(out / "stats.csv", std::ios::app);
      nnfuzz::CsvLogger csv(csv_file, fs::file_size(out / "stats.csv") == 0);
      nnfuzz::ProgressPrinter progress(status);
      progress.budget(o.max_executions, o.max_seconds);
      const std::optional<nnfuzz::Corpus> from = resume ? std::optional(nnfuzz::load_corpus(a.out)) : std::nullopt;
      if (sync) {
        nnfuzz::SyncOptions so;
        so.run_seed = o.seed;
        nnfuzz::SyncDirectory saver(a.sync, a.worker, so);
        results[0] = run_session(fuzzer, label, from ? &*from : nullptr, seeds, a.seeds, saver, stop, csv, progress);
      } else {
        nnfuzz::CampaignSaver saver(a.out, o.seed);
        results[0] = run_session(fuzzer, label, from ? &*from : nullptr, seeds, a.seeds, saver, stop, csv, progress);
      }
    });
  } else {
    // In-process workers: each its own model instance (an OpenCV net is not thread-safe) and
    // fuzzer, one worker of the sync directory DIR/workers; merged into DIR at the end.
    const auto lock = nnfuzz::detail::lock_campaign("nnfuzz fuzz", a.out);
    const auto n = static_cast<std::uint64_t>(s.workers);
    SharedFindingLimit limit;
    std::mutex status_lock;
    limit.max = a.max_findings;
    const std::optional<nnfuzz::Corpus> merged = resume ? std::optional(nnfuzz::load_corpus(a.out)) : std::nullopt;
    std::vector<std::exception_ptr> errors(results.size());
    auto work = [&](std::size_t w) {
      try {
        const std::string id = std::to_string(w);
        nnfuzz::FuzzOptions wo = o;
        wo.seed = nnfuzz::worker_seed(a.seed, id);
        if (o.max_executions > 0)
          wo.max_executions = std::max<std::uint64_t>(1, o.max_executions / n + (w < o.max_executions % n));
        OpenModels own{m.a, m.b};
        with_fuzzer(s, own, wo, [&](auto& fuzzer, LabelHook* label) {
          nnfuzz::SyncOptions so;
          so.run_seed = wo.seed;
          nnfuzz::SyncDirectory saver((out / "workers").string(), id, so);
          if (!resume || !saver.resumable()) write_settings(saver.worker_dir(), s);
          const std::optional<nnfuzz::Corpus> own_corpus =
              saver.resumable() ? std::optional(nnfuzz::load_corpus(saver.worker_dir())) : std::nullopt;
          const nnfuzz::Corpus* from = own_corpus ? &*own_corpus : merged ? &*merged : nullptr;
          WorkerStatus lines(status, status_lock, w);
          nnfuzz::ProgressPrinter progress(lines.buffer());  // printed by worker 0 only
          progress.budget(wo.max_executions, wo.max_seconds);
          results[w] = run_session(fuzzer, label, from, seeds, a.seeds, saver, stop, limit, progress, lines);
        });
      } catch (...) {
        errors[w] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < results.size(); ++w) threads.emplace_back(work, w);
    work(0);
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    float radius = 0;
    for (const nnfuzz::FuzzResult& r : results) radius = std::max(radius, r.stats.coverage_radius);
    merge_workers(out, radius);
  }
  // The session, all workers together.
  nnfuzz::FuzzStats st = results[0].stats;
  std::size_t this_session = 0;
  for (std::size_t w = 0; w < results.size(); ++w) {
    this_session += results[w].findings.size();
    if (w == 0) continue;
    st.executions += results[w].stats.executions;
    st.coverage_radius = std::max(st.coverage_radius, results[w].stats.coverage_radius);
  }
  if (s.workers > 1) {
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    st.executions_per_second = 0;
    for (const nnfuzz::FuzzResult& r : results) st.executions_per_second += r.stats.executions_per_second;
    st.corpus_size = nnfuzz::load_corpus(a.out).size();
  }
  const auto all = nnfuzz::load_findings(a.out);
  const json summary =
      session_summary(a.out, s, resume, findings_json(all), all.size(), this_session, st, s.workers, stop.received());
  write_text(out / (sync ? "session.json" : "stats.json"), summary.dump(2) + "\n");
  if (a.json)
    std::cout << summary.dump(2) << "\n";
  else
    print_summary(summary);
  return all.empty() ? kNothingFound : kFound;
}

}  // namespace

void add_fuzz_command(CLI::App& app, Command& run) {
  struct Options {
    FuzzArgs fa;
    std::vector<std::string> shape;
  };
  auto opt = std::make_shared<Options>();
  FuzzArgs& fa = opt->fa;
  std::vector<std::string>& shape = opt->shape;
  CLI::App* fuzz = app.add_subcommand("fuzz", "fuzz MODEL from seed inputs; writes (or resumes) a campaign directory");
  fuzz->add_option("MODEL", fa.model.path, "the model: .onnx (OpenCV DNN) or .pt TorchScript (LibTorch)")->required();
  fuzz->add_option("--seeds", fa.seeds,
                   "seed inputs: a directory of PNGs, an IDX file, a .npy file or a CSV (not needed to resume)");
  fuzz->add_option("--max-seeds", fa.max_seeds, "use only the first N seeds (0 = all)")->check(CLI::NonNegativeNumber);
  fuzz->add_option("--objective", fa.objective,
                   "nan (a NaN/Inf in any output), disagree (MODEL and --against predict different classes), "
                   "distance[:T] (a class probability moves by more than T, default 0.5), label (the class "
                   "differs from the seed's)")
      ->capture_default_str();
  fuzz->add_option("--against", fa.against, "the other version, for disagree and distance");
  fuzz->add_option("--out", fa.out, "campaign directory (corpus, findings, stats); an existing one is resumed");
  nnfuzz_flags::executions(*fuzz, fa.executions, "of this session; default 100000, or none with --seconds");
  fuzz->add_option("--seconds", fa.seconds, "wall-clock budget of this session")->check(CLI::PositiveNumber);
  nnfuzz_flags::seed(*fuzz, fa.seed, "one seed, one run");
  nnfuzz_flags::batch(*fuzz, fa.batch);
  fuzz->add_option("--max-findings", fa.max_findings, "stop after this many findings (0 = never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  fuzz->add_option("--engine", fa.model.engine, "opencv or libtorch (default: by the file's extension)")
      ->check(CLI::IsMember({"opencv", "libtorch"}));
  fuzz->add_option("--input-shape", shape,
                   "one input's shape without the batch axis, e.g. 784 or 1,28,28 "
                   "(default: from the ONNX file, else the seeds' width)")
      ->delimiter(',');
  fuzz->add_flag("!--no-prepare", fa.model.prepare,
                 "an ONNX file OpenCV DNN refuses is an error (default: fuzz its prepared copy, as nnfuzz prepare "
                 "writes it, cached)");
  fuzz->add_option("--output-names", fa.model.output_names, "names of a TorchScript module's tuple outputs, in order")
      ->delimiter(',');
  fuzz->add_option("--coverage", fa.model.coverage,
                   "output whose values are the coverage (default: logits, else the first)");
  fuzz->add_flag("--coverage-sum-abs", fa.model.sum_abs,
                 "coverage = one number per input, the sum of |values| (TensorFuzz's NaN set-up)");
  fuzz->add_option("--logits", fa.model.logits, "output holding the class scores (default: logits, else the first)");
  fuzz->add_option("--dtype", fa.model.dtype,
                   "LibTorch precision: float32, bf16, fp16, float64; with disagree/distance and no --against, "
                   "MODEL in float32 is compared with MODEL in this precision")
      ->capture_default_str();
  nnfuzz_flags::scale(*fuzz, fa.scale, "float seeds must lie in it");
  fuzz->add_option("--baseline", fa.baseline,
                   "the search: default (the defaults), random (random search: no coverage, no fitness), fitness "
                   "(fitness only: no coverage), tensorfuzz (TensorFuzz's CGF: fixed radius 0.707, Gaussian noise)");
  fuzz->add_option("--eps", fa.eps, "keep mutants within this L-inf distance of their seed (0 = no bound)");
  fuzz->add_option("--workers", fa.workers,
                   "in-process workers, each with its own model instance, sharing what they find (DIR/workers)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  fuzz->add_option("--sync", fa.sync,
                   "a sync directory shared by worker processes (instead of --out: the campaign is SYNC/ID)");
  fuzz->add_option("--worker", fa.worker, "this process' worker id in the --sync directory ([A-Za-z0-9._-])");
  fuzz->add_flag("--list-outputs", fa.list_outputs,
                 "print the model's outputs (and which are coverage and logits), then exit");
  fuzz->add_flag("--json", fa.json, "print a machine-readable summary on stdout");
  fuzz->add_flag("-q,--quiet", fa.quiet, "no status lines on stderr (--json implies it)");

  fuzz->callback([opt, fuzz, &run] {
    const bool workers_given = fuzz->count("--workers") > 0;
    run = [opt, workers_given] {
      opt->fa.model.input_shape = parse_shape(opt->shape);
      return run_fuzz(opt->fa, workers_given);
    };
  });
}

}  // namespace nnfuzz_cli
