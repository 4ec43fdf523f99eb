// SPDX-License-Identifier: MIT
// nnfuzz: the command-line tool. Fuzz an exported network (ONNX through OpenCV DNN, TorchScript
// through LibTorch) for NaNs, for differences from another version, or for a changed class,
// without writing C++; replay, summarise and show the campaign directory it writes.
//
//   nnfuzz fuzz MODEL --seeds PATH --objective nan|disagree|distance[:T]|label [--against MODEL2] --out DIR
//   nnfuzz replay DIR|FILE    nnfuzz minimize DIR|FILE    nnfuzz whatsup DIR    nnfuzz show DIR
//
// Exit status: 0 nothing found, 1 found, 2 a usage or input error (the message names the file,
// the option and the value). See docs/cli.md.
#include "campaign.hpp"
#include "whatsup.hpp"

#include <CLI/CLI.hpp>

#include <stb/stb_image_write.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
using namespace nnfuzz_cli;
using nlohmann::json;

constexpr int kNothingFound = 0, kFound = 1, kError = 2;

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

json findings_json(const std::vector<nnfuzz::SavedFinding>& saved) {
  std::vector<nnfuzz::Finding> all;
  for (const auto& s : saved) all.push_back(s.finding);
  json groups = json::array();
  for (const nnfuzz::FindingGroup& g : nnfuzz::group_findings(all))
    groups.push_back({{"what", g.what},
                      {"root", g.root},
                      {"count", g.count},
                      {"first_file", saved[g.first].path},
                      {"first_execution", saved[g.first].finding.execution}});
  return groups;
}

void print_groups(std::ostream& os, const json& groups) {
  for (const json& g : groups)
    os << "  " << g["count"].get<std::size_t>() << " x " << g["what"].get<std::string>() << " (seed "
       << g["root"].get<Index>() << "; first at execution " << g["first_execution"].get<std::uint64_t>() << ": "
       << g["first_file"].get<std::string>() << ")\n";
}

// --out (or merge's OUT, `option` names it) must be a directory nnfuzz can write: checked before
// any model is loaded.
void check_out_dir(const std::string& out, const std::string& option = "option --out") {
  if (out.empty()) throw UsageError(option + " is empty");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UsageError(option + ": cannot create directory '" + out + "': " + ec.message());
  if (!fs::is_directory(out, ec)) throw UsageError(option + ": '" + out + "' is not a directory");
  const fs::path probe = fs::path(out) / ".nnfuzz-write-test";
  std::FILE* f = std::fopen(probe.string().c_str(), "w");
  if (!f) throw UsageError(option + ": directory '" + out + "' is not writable");
  std::fclose(f);
  fs::remove(probe, ec);
}

void write_text(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream o(tmp);
    o << text;
    if (!o) throw UsageError("cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, path);
}

// What must agree between campaigns merged (and workers of one sync directory): the model(s),
// the objective and the input range. Returns the first that differs ("" when none does).
std::string campaign_difference(const CampaignSettings& x, const CampaignSettings& y) {
  const json a = to_json(x), b = to_json(y);
  for (const char* k : {"model", "against", "objective", "scale", "baseline"})
    if (a.at(k) != b.at(k)) return k == std::string("scale") ? "scale (input range)" : k;
  return "";
}

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
      std::cout << json{{"model", spec.path},        {"engine", spec.engine},     {"input_shape", spec.input_shape},
                        {"outputs", m.a->outputs()}, {"coverage", spec.coverage}, {"logits", spec.logits}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << "model: " << spec.path << " (" << spec.engine << "), input " << shape_text(spec.input_shape)
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

// The campaign directory a FILE argument belongs to (DIR/findings/x.bin -> DIR).
std::string campaign_of(const std::string& path, bool& is_file) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError("'" + path + "' does not exist");
  is_file = !fs::is_directory(path, ec);
  if (!is_file) return path;
  const fs::path dir = fs::absolute(path).parent_path();
  if (dir.filename() != "findings")
    throw UsageError("'" + path + "' is not a finding file of a campaign directory (DIR/findings/*.bin)");
  // DIR/minimized/findings/x.bin (nnfuzz minimize) belongs to DIR too.
  const fs::path owner = dir.parent_path();
  if (owner.filename() == "minimized" && !fs::exists(owner / "nnfuzz.json", ec)) return owner.parent_path().string();
  return owner.string();
}

int run_replay(const std::string& target, bool as_json) {
  bool is_file = false;
  const std::string dir = campaign_of(target, is_file);
  CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  try {
    findings = is_file ? std::vector<nnfuzz::SavedFinding>{nnfuzz::load_finding(target)} : nnfuzz::load_findings(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  OpenModels m = open_models(s, 0);
  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  int fired = 0;
  json rows = json::array();
  with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
    std::optional<nnfuzz::Corpus> corpus;
    for (const nnfuzz::SavedFinding& f : findings) {
      if (f.finding.input.size() != fuzzer.model().input_dim())
        throw UsageError("finding file '" + f.path + "' holds an input of " + std::to_string(f.finding.input.size()) +
                         " values, the model takes " + std::to_string(fuzzer.model().input_dim()));
      if (label) {
        if (!corpus) corpus = nnfuzz::load_corpus(dir);
        const RowMatrix root = corpus->input(f.finding.root);
        label->learn(root);
        label->state->set_root(root.row(0));
      }
      const bool again = fuzzer.replay(f.finding.input);
      fired += again;
      rows.push_back({{"file", f.path}, {"what", f.finding.what}, {"fires", again}});
      if (!as_json)
        std::cout << f.path << ": " << (again ? "fires again" : "does not fire") << " (" << f.finding.what << ")\n";
    }
  });
  if (as_json)
    std::cout << json{{"campaign", dir}, {"findings", findings.size()}, {"fire_again", fired}, {"replayed", rows}}.dump(
                     2)
              << "\n";
  else
    std::cout << fired << " of " << findings.size() << " finding(s) fire again\n";
  return fired > 0 ? kFound : kNothingFound;
}

// The last session's summary of a campaign directory (what `fuzz --json` printed): DIR/session.json
// in a sync worker's directory (its stats.json is SyncDirectory's), else DIR/stats.json; null when
// there is none.
json read_summary(const fs::path& dir) {
  for (const char* name : {"session.json", "stats.json"}) {
    std::ifstream in(dir / name);
    if (!in) continue;
    json j = json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.contains("executions_per_second")) return j;
  }
  return nullptr;
}

/// The options of `nnfuzz merge`.
struct MergeArgs {
  std::string out;                  ///< the merged campaign directory (new or empty)
  std::vector<std::string> inputs;  ///< campaign directories of the command, or sync directories
  float radius = 0;                 ///< 0: the first campaign's coverage radius
  std::size_t samples_per_bug = nnfuzz::BugOptions{}.samples_per_bug;
  bool queues = true, json = false;
};

// merge_campaigns() over campaign directories of the command (or sync directories of its
// workers): every campaign must have been made with the same model(s), objective and scale; OUT
// gets the first's nnfuzz.json, so every other subcommand (and `fuzz`, resuming) takes it.
int run_merge(const MergeArgs& a) {
  std::vector<std::string> campaigns;
  for (const std::string& in : a.inputs) {
    std::error_code ec;
    if (!fs::exists(in, ec)) throw UsageError("merge: input directory '" + in + "' does not exist");
    try {
      for (const std::string& d : nnfuzz::detail::merge_sources(in)) campaigns.push_back(d);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("merge: ") + e.what());
    }
  }
  // Campaigns of `nnfuzz fuzz` (an nnfuzz.json each) must agree on what they fuzzed; those of a
  // C++ program (its own sync or campaign directories: no nnfuzz.json) are merged as they are,
  // and OUT gets no nnfuzz.json. One of each is refused: OUT could not say what it is.
  const auto has_settings = [](const std::string& d) {
    std::error_code e;
    return fs::exists(fs::path(d) / "nnfuzz.json", e);
  };
  const bool of_cli = has_settings(campaigns.front());
  std::optional<CampaignSettings> first;
  if (of_cli) first = read_settings(campaigns.front());
  for (std::size_t i = 1; i < campaigns.size(); ++i) {
    if (has_settings(campaigns[i]) != of_cli)
      throw UsageError("merge: campaign '" + campaigns[i] + (of_cli ? "' has no" : "' has an") +
                       " nnfuzz.json, unlike '" + campaigns.front() +
                       "': merge campaigns of the nnfuzz command with each other, those of a program with each other");
    if (!of_cli) continue;
    const std::string differs = campaign_difference(read_settings(campaigns[i]), *first);
    if (!differs.empty())
      throw UsageError("merge: campaign '" + campaigns[i] + "' was not made with the " + differs + " of '" +
                       campaigns.front() + "' (compare their nnfuzz.json)");
  }
  nnfuzz::MergeOptions o;
  o.radius = a.radius;
  if (o.radius <= 0) {
    const json summary = read_summary(campaigns.front());
    if (!summary.is_null()) o.radius = summary.value("coverage_radius", 0.0f);
    if (!(o.radius > 0))
      throw UsageError("merge: campaign '" + campaigns.front() +
                       "' does not say its coverage radius (no session summary): give --radius");
  }
  o.bugs.samples_per_bug = a.samples_per_bug;
  o.read_queues = a.queues;
  std::error_code ec;
  if (fs::exists(a.out, ec) && !fs::is_empty(a.out, ec))
    throw UsageError("merge: OUT '" + a.out + "' is not empty; merge into a new directory");
  check_out_dir(a.out, "merge: OUT");
  nnfuzz::MergeSummary r;
  try {
    r = nnfuzz::merge_campaigns(campaigns, a.out, o);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("merge: ") + e.what());
  }
  if (first) {
    CampaignSettings merged = *first;
    merged.seeds = "merged: " + campaigns.front() + (campaigns.size() > 1 ? " and others" : "");
    write_settings(a.out, merged);
  }
  json bugs = json::array();
  for (const nnfuzz::Bug& b : r.bugs)
    bugs.push_back({{"signature", b.signature}, {"what", b.what}, {"count", b.count}, {"files", b.files.size()}});
  const json summary{{"out", a.out},
                     {"campaigns", r.campaigns},
                     {"radius", o.radius},
                     {"executions", r.executions},
                     {"elements_read", r.elements_read},
                     {"elements_kept", r.elements_kept},
                     {"finding_files_read", r.finding_files_read},
                     {"duplicate_inputs", r.duplicate_inputs},
                     {"finding_files_written", r.finding_files_written},
                     {"findings_reported", r.findings_reported},
                     {"bugs", bugs},
                     {"nnfuzz_json", first.has_value()}};
  if (a.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "merged " << r.campaigns.size() << " campaign(s), " << r.executions << " executions, into " << a.out
              << ": corpus " << r.elements_kept << " of " << r.elements_read << " elements (radius " << o.radius
              << "), " << r.finding_files_written << " finding file(s) of " << r.finding_files_read << " ("
              << r.duplicate_inputs << " duplicate inputs), " << r.findings_reported << " finding(s) counted\n";
    for (const nnfuzz::Bug& b : r.bugs)
      std::cout << "  " << b.count << " x " << b.what << " (" << b.files.size() << " file(s))\n";
    if (!first)
      std::cout << "  " << a.out << " has no nnfuzz.json (the inputs were not made by `nnfuzz fuzz`): resume it "
                << "with your program (Fuzzer::resume(), a worker's --sync directory)\n";
  }
  return r.finding_files_written > 0 ? kFound : kNothingFound;
}

int run_whatsup(const std::string& dir, bool as_json) {
  const CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  json j{{"campaign", dir}, {"model", s.model.path}, {"objective", s.objective}};
  try {
    findings = nnfuzz::load_findings(dir);
    if (fs::exists(fs::path(dir) / "corpus.bin")) {
      const nnfuzz::Corpus c = nnfuzz::load_corpus(dir);
      j["corpus_size"] = c.size();
      j["executions"] = c.executions();
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const json last = read_summary(dir);
  if (!last.is_null())
    j["last_session"] = {{"executions_per_second", last.value("executions_per_second", 0.0)},
                         {"seconds", last.value("seconds", 0.0)}};
  j["findings"] = findings.size();
  j["groups"] = findings_json(findings);
  if (as_json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "campaign " << dir << ": " << s.model.path << ", objective " << s.objective << "\n";
    if (j.contains("corpus_size"))
      std::cout << "  " << j["executions"].get<std::uint64_t>() << " executions, corpus "
                << j["corpus_size"].get<Index>() << "\n";
    if (j.contains("last_session"))
      std::cout << "  last session: " << std::fixed << std::setprecision(1)
                << j["last_session"]["seconds"].get<double>() << " s, " << std::setprecision(0)
                << j["last_session"]["executions_per_second"].get<double>() << " exec/s\n";
    std::cout << "  " << findings.size() << " finding(s)" << (findings.empty() ? "" : ":") << "\n";
    print_groups(std::cout, j["groups"]);
  }
  return findings.empty() ? kNothingFound : kFound;
}

// Each finding shrunk towards its seed (minimize()), saved to DIR/minimized/findings/ (replay
// takes those files as findings of DIR).
int run_minimize(const std::string& target, Index budget, bool as_json) {
  bool is_file = false;
  const std::string dir = campaign_of(target, is_file);
  CampaignSettings s = read_settings(dir);
  std::vector<nnfuzz::SavedFinding> findings;
  nnfuzz::Corpus corpus;
  try {
    findings = is_file ? std::vector<nnfuzz::SavedFinding>{nnfuzz::load_finding(target)} : nnfuzz::load_findings(dir);
    if (!findings.empty()) corpus = nnfuzz::load_corpus(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  OpenModels m = open_models(s, 0);
  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  const std::string to = (fs::path(dir) / "minimized").string();
  json rows = json::array();
  int kept = 0;
  with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
    nnfuzz::MinimizeOptions mo;
    mo.confirm_batch_size = s.batch;
    mo.max_executions = budget;
    for (const nnfuzz::SavedFinding& f : findings) {
      if (f.finding.root < 0 || f.finding.root >= corpus.size() || f.finding.input.size() != corpus.input_dim())
        throw UsageError("finding file '" + f.path + "' does not fit the campaign's corpus (seed " +
                         std::to_string(f.finding.root) + ")");
      const nnfuzz::RowVector root = corpus.input(f.finding.root);
      if (label) {
        label->learn(RowMatrix(root));
        label->state->set_root(root);
      }
      const nnfuzz::MinimizeResult r = nnfuzz::minimize(fuzzer.model(), fuzzer.objective(), root, f.finding.input, mo);
      nnfuzz::Finding small = f.finding;
      small.input = r.input;
      const std::string path = nnfuzz::save_finding(to, small, f.run_seed);
      ++kept;
      rows.push_back({{"file", f.path},
                      {"minimized", path},
                      {"l0_before", r.before.l0},
                      {"l0_after", r.after.l0},
                      {"linf_before", r.before.linf},
                      {"linf_after", r.after.linf},
                      {"executions", r.executions}});
      if (!as_json)
        std::cout << f.path << " -> " << path << ": " << r.before.l0 << " -> " << r.after.l0
                  << " elements changed, L-inf " << r.before.linf << " -> " << r.after.linf << " (" << r.executions
                  << " executions)\n";
    }
  });
  if (as_json) std::cout << json{{"campaign", dir}, {"minimized", rows}}.dump(2) << "\n";
  if (!as_json && findings.empty()) std::cout << "no findings in " << dir << "\n";
  return findings.empty() ? kNothingFound : kFound;
}

// One PNG per finding group: seed | found | difference magnified (images only).
int run_show(const std::string& dir, const std::string& out_dir, int zoom, bool as_json) {
  const CampaignSettings s = read_settings(dir);
  if (s.height <= 0 || s.width <= 0)
    throw UsageError("campaign directory '" + dir + "': its seeds ('" + s.seeds +
                     "') were not images, so there is nothing to draw (nnfuzz whatsup lists the findings)");
  std::vector<nnfuzz::SavedFinding> findings;
  nnfuzz::Corpus corpus;
  try {
    findings = nnfuzz::load_findings(dir);
    if (!findings.empty()) corpus = nnfuzz::load_corpus(dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const std::string to = out_dir.empty() ? (fs::path(dir) / "show").string() : out_dir;
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) throw UsageError("option --png-dir: cannot create '" + to + "': " + ec.message());
  std::vector<nnfuzz::Finding> all;
  for (const auto& f : findings) all.push_back(f.finding);
  const auto groups = nnfuzz::group_findings(all);
  const int h = s.height, w = s.width, c = s.channels, gap = 2;
  const Index plane = static_cast<Index>(h) * w;
  json written = json::array();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const nnfuzz::Finding& f = all[groups[g].first];
    if (f.input.size() != plane * c || f.root >= corpus.size())
      throw UsageError("finding '" + findings[groups[g].first].path + "' does not fit the seed images' size");
    const nnfuzz::RowVector seed = corpus.input(f.root);
    const nnfuzz::RowVector diff = (f.input - seed).cwiseAbs();
    const float dmax = std::max(diff.maxCoeff(), 1e-12f);
    const int W = (3 * w + 2 * gap) * zoom, H = h * zoom;
    std::vector<unsigned char> img(static_cast<std::size_t>(W) * H * c, 255);
    auto put = [&](int panel, const nnfuzz::RowVector& v, bool magnify) {
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
          for (int ch = 0; ch < c; ++ch) {
            const float val = v(ch * plane + y * w + x);
            const float unit = magnify ? val / dmax : (val - s.scale.lo) / (s.scale.hi - s.scale.lo);
            const auto px = static_cast<unsigned char>(std::lround(255.0f * std::clamp(unit, 0.0f, 1.0f)));
            for (int dy = 0; dy < zoom; ++dy)
              for (int dx = 0; dx < zoom; ++dx)
                img[(static_cast<std::size_t>(y * zoom + dy) * W + (panel * (w + gap) + x) * zoom + dx) * c + ch] = px;
          }
    };
    put(0, seed, false);
    put(1, f.input, false);
    put(2, diff, true);
    const std::string path = (fs::path(to) / ("group-" + std::to_string(g + 1) + ".png")).string();
    if (!stbi_write_png(path.c_str(), W, H, c, img.data(), W * c)) throw UsageError("cannot write '" + path + "'");
    written.push_back({{"png", path}, {"what", f.what}, {"count", groups[g].count}, {"max_abs_difference", dmax}});
    if (!as_json)
      std::cout << path << ": " << groups[g].count << " x " << f.what << " (seed " << f.root
                << " | found | difference x" << std::setprecision(3) << 1.0f / dmax << ", max |d| " << dmax << ")\n";
  }
  if (as_json) std::cout << json{{"campaign", dir}, {"groups", written}}.dump(2) << "\n";
  if (!as_json && groups.empty()) std::cout << "no findings in " << dir << "\n";
  return groups.empty() ? kNothingFound : kFound;
}

std::vector<std::int64_t> parse_shape(const std::vector<std::string>& parts) {
  std::vector<std::int64_t> shape;
  for (const std::string& p : parts) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(p, &used);
      if (used != p.size() || v < 1) throw std::invalid_argument("");
      shape.push_back(v);
    } catch (const std::exception&) {
      throw UsageError("option --input-shape: '" + p + "' is not a positive whole number");
    }
  }
  return shape;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "nnfuzz: coverage-guided fuzzing of an exported neural network (ONNX via OpenCV DNN, TorchScript "
      "via LibTorch).\nExit status: 0 nothing found, 1 found, 2 usage or input error. See docs/cli.md."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nnfuzz " + std::to_string(NNFUZZ_VERSION_MAJOR) + "." +
                                        std::to_string(NNFUZZ_VERSION_MINOR) + "." +
                                        std::to_string(NNFUZZ_VERSION_PATCH));

  FuzzArgs fa;
  std::vector<std::string> shape;
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
  fuzz->add_option("--executions", fa.executions, "execution budget of this session (default 100000)");
  fuzz->add_option("--seconds", fa.seconds, "wall-clock budget of this session")->check(CLI::PositiveNumber);
  fuzz->add_option("--seed", fa.seed, "the RNG seed (one seed, one run)")->capture_default_str();
  fuzz->add_option("--batch", fa.batch, "mutants per model call")->check(CLI::Range(1, 100000))->capture_default_str();
  fuzz->add_option("--max-findings", fa.max_findings, "stop after this many findings (0 = never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  fuzz->add_option("--engine", fa.model.engine, "opencv or libtorch (default: by the file's extension)")
      ->check(CLI::IsMember({"opencv", "libtorch"}));
  fuzz->add_option("--input-shape", shape,
                   "one input's shape without the batch axis, e.g. 784 or 1,28,28 "
                   "(default: from the ONNX file, else the seeds' width)")
      ->delimiter(',');
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
  fuzz->add_option("--scale", fa.scale, "input range LO,HI (or 01, pm1): bytes map onto it, floats must lie in it")
      ->capture_default_str();
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

  std::string target, png_dir;
  bool rjson = false, wjson = false, sjson = false;
  CLI::App* replay = app.add_subcommand("replay", "run a campaign's findings again: do they still fire?");
  replay->add_option("TARGET", target, "a campaign directory, or one finding file in DIR/findings/")->required();
  replay->add_flag("--json", rjson, "machine-readable output");
  Index min_budget = 20000;
  bool mjson = false;
  CLI::App* minimize = app.add_subcommand("minimize", "shrink each finding towards its seed while it still fires");
  minimize->add_option("TARGET", target, "a campaign directory, or one finding file in DIR/findings/")->required();
  minimize->add_option("--executions", min_budget, "model executions per finding")
      ->check(CLI::Range(Index{1000}, Index{1} << 40))
      ->capture_default_str();
  minimize->add_flag("--json", mjson, "machine-readable output");
  CLI::App* whatsup = app.add_subcommand(
      "whatsup", "a campaign's state: executions, corpus, findings grouped; of a sync directory, one line per worker");
  whatsup->add_option("DIR", target, "the campaign directory, or a sync directory (--sync of the workers)")->required();
  whatsup->add_flag("--json", wjson, "machine-readable output");
  bool wcsv = false;
  double stale = 60;
  whatsup->add_flag("--csv", wcsv, "of a sync directory: every worker's plot.csv as one CSV, ordered by time");
  whatsup->add_option("--stale", stale, "of a sync directory: seconds without an update after which a worker is stale")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI::App* show =
      app.add_subcommand("show", "PNGs of a campaign's findings (seed | found | difference), one per group");
  show->add_option("DIR", target, "the campaign directory")->required();
  show->add_option("--png-dir", png_dir, "where to write them (default DIR/show)");
  int zoom = 4;
  show->add_option("--zoom", zoom, "pixels per input pixel")->check(CLI::Range(1, 64))->capture_default_str();
  show->add_flag("--json", sjson, "machine-readable output");

  MergeArgs ma;
  CLI::App* merge = app.add_subcommand(
      "merge",
      "merge campaign directories (or sync directories of workers) into one: corpora reduced, findings by bug");
  merge->add_option("OUT", ma.out, "the merged campaign directory (new or empty)")->required();
  merge
      ->add_option("DIR", ma.inputs,
                   "campaign directories of nnfuzz fuzz, or sync directories (--sync of the workers, "
                   "nnfuzz's or your program's), or campaign directories of your program")
      ->required();
  merge
      ->add_option("--radius", ma.radius,
                   "L2 novelty radius the corpora are reduced with (default: the first campaign's coverage radius)")
      ->check(CLI::PositiveNumber);
  merge->add_option("--samples-per-bug", ma.samples_per_bug, "finding files kept per bug (0 = all)")
      ->capture_default_str();
  merge->add_flag("!--no-queues", ma.queues, "read only the workers' corpus.bin, not their queue files");
  merge->add_flag("--json", ma.json, "machine-readable output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kError;
  }
  try {
    if (fuzz->parsed()) {
      fa.model.input_shape = parse_shape(shape);
      return run_fuzz(fa, fuzz->count("--workers") > 0);
    }
    if (replay->parsed()) return run_replay(target, rjson);
    if (minimize->parsed()) return run_minimize(target, min_budget, mjson);
    if (whatsup->parsed()) {
      if (is_sync_directory(target)) return run_sync_whatsup(target, wcsv, wjson, stale);
      if (wcsv) throw UsageError("whatsup: --csv is for a sync directory; '" + target + "' is not one");
      return run_whatsup(target, wjson);
    }
    if (show->parsed()) return run_show(target, png_dir, zoom, sjson);
    if (merge->parsed()) return run_merge(ma);
  } catch (const std::exception& e) {
    std::cerr << "nnfuzz: " << e.what() << "\n";
    return kError;
  }
  return kError;
}
