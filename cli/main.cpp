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

#include <CLI/CLI.hpp>

#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using namespace nnfuzz_cli;
using nlohmann::json;

constexpr int kNothingFound = 0, kFound = 1, kError = 2;

/// The options of `nnfuzz fuzz`.
struct FuzzArgs {
  ModelSpec model;
  std::string against, objective = "nan", out, seeds, scale = "01";
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

// --out must be a directory nnfuzz can write: checked before any model is loaded.
void check_out_dir(const std::string& out) {
  if (out.empty()) throw UsageError("option --out is empty");
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw UsageError("option --out: cannot create directory '" + out + "': " + ec.message());
  if (!fs::is_directory(out, ec)) throw UsageError("option --out: '" + out + "' is not a directory");
  const fs::path probe = fs::path(out) / ".nnfuzz-write-test";
  std::FILE* f = std::fopen(probe.string().c_str(), "w");
  if (!f) throw UsageError("option --out: directory '" + out + "' is not writable");
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

int run_fuzz(FuzzArgs& a) {
  CampaignSettings s;
  s.model = a.model;
  s.objective = a.objective;
  check_objective(a.objective);
  s.scale = parse_scale(a.scale);
  s.eps = a.eps;
  s.batch = a.batch;
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
  if (a.out.empty()) throw UsageError("option --out DIR is required (the campaign directory)");
  check_out_dir(a.out);
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
  if (!resume) write_settings(a.out, s);

  nnfuzz::FuzzOptions o;
  o.batch_size = s.batch;
  o.seed = a.seed;
  o.max_findings = a.max_findings;
  o.max_executions = a.executions;
  o.max_seconds = a.seconds;
  if (a.executions == 0 && a.seconds <= 0) o.max_executions = 100000;
  int code = kNothingFound;
  with_fuzzer(s, m, o, [&](auto& fuzzer, LabelHook* label) {
    nnfuzz::CampaignSaver saver(a.out, a.seed);
    nnfuzz::StopOnSignal stop;
    std::ofstream csv_file(fs::path(a.out) / "stats.csv", std::ios::app);
    const bool header = fs::file_size(fs::path(a.out) / "stats.csv") == 0;
    nnfuzz::CsvLogger csv(csv_file, header);
    std::ostringstream sink;
    nnfuzz::ProgressPrinter progress(a.quiet ? static_cast<std::ostream&>(sink) : std::cerr);
    nnfuzz::FuzzResult r;
    if (resume) {
      const nnfuzz::Corpus corpus = nnfuzz::load_corpus(a.out);
      if (label) {
        RowMatrix roots(corpus.size(), corpus.input_dim());
        Index k = 0;
        for (Index i = 0; i < corpus.size(); ++i)
          if (corpus.entry(i).parent < 0) roots.row(k++) = corpus.input(i);
        label->learn(roots.topRows(k));
      }
      if (!a.quiet)
        std::cerr << "nnfuzz: resuming '" << a.out << "' (" << corpus.size() << " corpus elements, "
                  << corpus.executions() << " executions so far)\n";
      r = fuzzer.resume(corpus, saver, stop, csv, progress);
    } else {
      if (label) label->learn(seeds.rows);
      try {
        r = fuzzer.run(seeds.rows, saver, stop, csv, progress);
      } catch (const std::invalid_argument& e) {
        // Seeds the mutator refuses (outside its domain) are an input error of --seeds.
        throw UsageError("option --seeds '" + a.seeds + "': " + e.what());
      }
    }
    const auto all = nnfuzz::load_findings(a.out);
    const json groups = findings_json(all);
    const json summary{{"out", a.out},
                       {"model", s.model.path},
                       {"objective", s.objective},
                       {"resumed", resume},
                       {"found", !all.empty()},
                       {"findings_this_session", r.findings.size()},
                       {"findings_total", all.size()},
                       {"groups", groups},
                       {"executions", r.stats.executions},
                       {"seconds", r.stats.seconds},
                       {"executions_per_second", r.stats.executions_per_second},
                       {"corpus_size", r.stats.corpus_size},
                       {"coverage_radius", r.stats.coverage_radius},
                       {"stopped_by_signal", stop.received()}};
    write_text(fs::path(a.out) / "stats.json", summary.dump(2) + "\n");
    if (a.json) {
      std::cout << summary.dump(2) << "\n";
    } else {
      std::cout << (all.empty() ? "nothing found" : std::to_string(all.size()) + " finding(s)") << " in "
                << r.stats.executions << " executions (" << std::fixed << std::setprecision(1) << r.stats.seconds
                << " s this session, " << std::setprecision(0) << r.stats.executions_per_second << " exec/s), corpus "
                << r.stats.corpus_size << "; campaign directory " << a.out << "\n";
      print_groups(std::cout, groups);
      if (!all.empty()) std::cout << "replay: nnfuzz replay " << a.out << "\n";
    }
    code = all.empty() ? kNothingFound : kFound;
  });
  return code;
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
  std::ifstream st(fs::path(dir) / "stats.json");
  if (st) {
    const json last = json::parse(st, nullptr, false);
    if (!last.is_discarded())
      j["last_session"] = {{"executions_per_second", last.value("executions_per_second", 0.0)},
                           {"seconds", last.value("seconds", 0.0)}};
  }
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
  fuzz->add_option("--eps", fa.eps, "keep mutants within this L-inf distance of their seed (0 = no bound)");
  fuzz->add_flag("--list-outputs", fa.list_outputs,
                 "print the model's outputs (and which are coverage and logits), then exit");
  fuzz->add_flag("--json", fa.json, "print a machine-readable summary on stdout");
  fuzz->add_flag("-q,--quiet", fa.quiet, "no status lines on stderr");

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
  CLI::App* whatsup = app.add_subcommand("whatsup", "a campaign's state: executions, corpus, findings grouped");
  whatsup->add_option("DIR", target, "the campaign directory")->required();
  whatsup->add_flag("--json", wjson, "machine-readable output");
  CLI::App* show =
      app.add_subcommand("show", "PNGs of a campaign's findings (seed | found | difference), one per group");
  show->add_option("DIR", target, "the campaign directory")->required();
  show->add_option("--png-dir", png_dir, "where to write them (default DIR/show)");
  int zoom = 4;
  show->add_option("--zoom", zoom, "pixels per input pixel")->check(CLI::Range(1, 64))->capture_default_str();
  show->add_flag("--json", sjson, "machine-readable output");

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
      return run_fuzz(fa);
    }
    if (replay->parsed()) return run_replay(target, rjson);
    if (minimize->parsed()) return run_minimize(target, min_budget, mjson);
    if (whatsup->parsed()) return run_whatsup(target, wjson);
    if (show->parsed()) return run_show(target, png_dir, zoom, sjson);
  } catch (const std::exception& e) {
    std::cerr << "nnfuzz: " << e.what() << "\n";
    return kError;
  }
  return kError;
}
