// SPDX-License-Identifier: MIT
// TensorFuzz's third experiment: make a character-level language model (a GRU trained on
// Debian's fortunes) say what it must not — a blacklisted word, or one word many times in a row.
//
//   char_rnn train                       train the model (or load it from the cache), print samples
//   char_rnn blacklist                   apply the blacklist rule (below) and print the list
//   char_rnn fuzz --objective blacklist  10 runs of CGF and 10 of random search, and a table
//   char_rnn fuzz --objective repeat     the same for a word repeated --times times in a row
//   char_rnn fuzz --sync DIR --worker ID one CGF worker of a campaign shared through DIR
//                                        (docs/scaling.md), resumed from DIR/ID when it has one
//
// The fuzzed input is a prompt (the first --prompt-chars characters of a held-out fortune, then
// edited) plus the sampling noise (one uniform per generated character, so a finding replays bit
// for bit); the model samples at --temperature 0.5. The blacklist rule, fixed before any fuzzing
// (see default_blacklist()):
//   1. candidates: words (letters only, lower-cased) of at least 5 letters that occur at least
//      20 times in the training text — words the model has seen often enough to spell;
//   2. generate --n-chars characters at --temperature from every held-out prompt, with as many
//      noise draws each (from a fixed seed, 2018) as make --screen-chars (16 M) characters in
//      all — 4 times the text of one fuzz run of 50,000 executions x 80 characters, 6.6 times the
//      training text (749 prompts x 268 draws x 80 characters);
//   3. drop every candidate any of those continuations emits;
//   4. the blacklist is the 10 most frequent remaining candidates in the training text (ties:
//      alphabetical order).
// Why temperature 0.5: at 1.0 the model emits all but 3 of the qualifying words within
// the 16 M characters — any word it can spell, plain sampling says sooner or later, and there is
// nothing to search for. At 0.5 generation concentrates on likely text and 13 candidates remain.
// experiments/char_rnn_blacklist.txt holds the list the rule gives for the default model
// (`char_rnn blacklist` recomputes it, in about 2 minutes).
// The second rule (`blacklist --rare`, README, written before any run on it): words of 6-12
// letters occurring 8-19 times in training, never emitted in --screen-chars 8e6 (one
// 100,000-execution random-search run); the 10 most frequent remaining (ties alphabetical).
//
// --modes (issue #23, each composed explicitly, not from the library's defaults): random
// (random search), cgf (TensorFuzz's setting: RecentSampler + CalibratedCoverage on the mean
// state), fitness (FitnessSampler + keep_fitter on BlacklistObjective's progress fitness,
// NoCoverage), aim (random search + noise redrawn at the step of the best partial match and prompt
// edits near its end), projection (cgf on a --project-dims projection of the state),
// fitness-aim (fitness + aim), combination (fitness + aim + projection), fitness-cgf (fitness +
// cgf's coverage).
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/data/text.hpp>
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/models/char_rnn.hpp>
#include <nnfuzz/targets/char_rnn_target.hpp>
#include <nnfuzz/models/train_char_rnn.hpp>
#include <nnfuzz/mutators/structured.hpp>
#include <nnfuzz/objectives/text.hpp>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "cli_common.hpp"
#include "shared/flags.hpp"
#include "sync_common.hpp"

namespace fs = std::filesystem;
using nnfuzz::Index;

namespace {

/// The text, split, and its alphabet.
struct TextData {
  std::vector<std::string> train, held_out;
  nnfuzz::Alphabet alphabet;
  std::vector<int> train_ids, held_out_ids;
};

TextData load_text(const std::string& dir) {
  const std::vector<std::string> texts = nnfuzz::to_printable_ascii(nnfuzz::read_fortunes(dir));
  nnfuzz::TextSplit split = nnfuzz::split_held_out(texts, 0.05, 0);
  if (split.train.empty() || split.held_out.empty())
    throw std::runtime_error("--text '" + dir + "': " + std::to_string(texts.size()) +
                             " fortunes give an empty training or held-out set (5% are held out): give more text");
  TextData d;
  d.alphabet = nnfuzz::Alphabet::of_texts(texts);
  d.train_ids = d.alphabet.encode_texts(split.train);
  d.held_out_ids = d.alphabet.encode_texts(split.held_out);
  d.train = std::move(split.train);
  d.held_out = std::move(split.held_out);
  return d;
}

/// The training recipe (its values name the cached weights file).
struct Recipe {
  Index hidden = 384, embed = 32, steps = 10000, batch = 64, bptt = 100;
  float learning_rate = 3e-3f, final_learning_rate = 3e-4f, dropout = 0.2f;
  int threads = 2;
  std::uint64_t seed = 1;
  std::string file_name() const {
    std::ostringstream s;
    s << "fortunes-gru-h" << hidden << "-e" << embed << "-s" << steps << "-d" << std::lround(dropout * 100) << "-r"
      << seed << ".bin";
    return s.str();
  }
};

nnfuzz::CharRnn train_or_load(const Recipe& r, const TextData& d, const std::string& models_dir,
                              const std::string& model_path) {
  const std::string path = model_path.empty() ? (fs::path(models_dir) / r.file_name()).string() : model_path;
  if (fs::exists(path)) {
    std::string symbols;
    nnfuzz::CharRnn net = nnfuzz::load_char_rnn(path, &symbols);
    if (net.vocab_size() != d.alphabet.size() || (!symbols.empty() && symbols != d.alphabet.symbols()))
      throw std::runtime_error("'" + path + "': a model of " + std::to_string(net.vocab_size()) +
                               " ids trained on another alphabet than this text's (" +
                               std::to_string(d.alphabet.size()) + " ids): delete it or pass --model");
    std::cout << "model: " << path << " (cached; H=" << net.hidden_size() << ")\n";
    return net;
  }
  if (!model_path.empty()) throw std::runtime_error("--model '" + model_path + "': no such file");
  nnfuzz::CharRnn net({d.alphabet.size(), r.embed, r.hidden});
  net.init(r.seed);
  nnfuzz::CharRnnTrainOptions o;
  o.batch_size = r.batch;
  o.bptt = r.bptt;
  o.steps = r.steps;
  o.learning_rate = r.learning_rate;
  o.final_learning_rate = r.final_learning_rate;
  o.dropout = r.dropout;
  o.threads = r.threads;
  o.seed = r.seed;
  o.eval_every = std::max<Index>(r.steps / 10, 1);
  o.progress = &std::cout;
  o.label = "char-rnn h" + std::to_string(r.hidden);
  std::cout << "training " << path << ": " << net.parameter_count() << " parameters, " << d.train_ids.size()
            << " training / " << d.held_out_ids.size() << " held-out characters\n";
  const nnfuzz::CharRnnTrainReport rep = nnfuzz::train_char_rnn(net, d.train_ids, d.held_out_ids, o);
  std::cout << "trained in " << std::fixed << std::setprecision(0) << rep.seconds << " s: train "
            << std::setprecision(3) << rep.train_bits_per_char << " bits/char, held-out " << rep.held_out_bits_per_char
            << " bits/char\n";
  fs::create_directories(fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path());
  nnfuzz::save_char_rnn(path, net, d.alphabet.symbols());
  return net;
}

/// The experiment's generation settings.
struct GenSettings {
  Index prompt_chars = 20, n_chars = 80;
  Index screen_chars = 16000000;  // the blacklist rule's sampled characters
  float temperature = 0.5f;
  Index max_prompt() const { return prompt_chars + 13; }  // boundary + prompt + room for edits
};

/// The first prompt_chars characters of each text (whole texts when shorter), at most `count`.
std::vector<std::string> prompts_of(const std::vector<std::string>& texts, Index prompt_chars, Index count) {
  std::vector<std::string> out;
  for (const auto& t : texts) {
    if (static_cast<Index>(out.size()) >= count) break;
    if (t.empty()) continue;
    out.push_back(t.substr(0, static_cast<std::size_t>(prompt_chars)));
  }
  return out;
}

/// Reads a file of one item a line (empty lines skipped). Throws naming the file.
std::vector<std::string> read_lines(const std::string& path, const char* option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string(option) + " '" + path + "': cannot open it");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw std::runtime_error(std::string(option) + " '" + path + "': the file holds no line");
  if (!nnfuzz::is_valid_utf8(std::accumulate(lines.begin(), lines.end(), std::string())))
    throw std::runtime_error(std::string(option) + " '" + path + "': not UTF-8 text");
  return lines;
}

bool all_letters(const std::string& w) {
  return std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
}

/// Word counts of texts (BlacklistObjective's words: letters, digits, apostrophes, lower-cased).
std::map<std::string, Index> word_counts(const std::vector<std::string>& texts) {
  std::map<std::string, Index> counts;
  std::vector<std::string> words;
  for (const auto& t : texts) {
    nnfuzz::detail::split_words(t, words);
    for (const auto& w : words) ++counts[w];
  }
  return counts;
}

/// Which words a blacklist rule takes as candidates (see the header comment).
struct BlacklistRule {
  std::size_t min_letters = 5, max_letters = 1000;
  Index min_count = 20, max_count = std::numeric_limits<Index>::max();
};

/// Applies a blacklist rule of the header comment (default: rule 1). Deterministic.
std::vector<std::string> default_blacklist(nnfuzz::CharRnnTarget& target, const TextData& d, const GenSettings& g,
                                           Index screen_chars, std::ostream& log, const BlacklistRule& rule = {}) {
  const std::map<std::string, Index> counts = word_counts(d.train);
  std::map<std::string, Index> candidates;
  for (const auto& [w, n] : counts)
    if (n >= rule.min_count && n <= rule.max_count && w.size() >= rule.min_letters && w.size() <= rule.max_letters &&
        all_letters(w))
      candidates.emplace(w, n);
  const std::size_t qualifying = candidates.size();
  const std::vector<std::string> prompts = prompts_of(d.held_out, g.prompt_chars, 1000000);
  nnfuzz::Rng rng(2018);
  const nnfuzz::InputLayout layout = target.input_layout();
  nnfuzz::InputBatch batch;
  nnfuzz::CharRnnTarget::Output out;
  const Index per_prompt = static_cast<Index>(prompts.size()) * g.n_chars;
  const Index kDraws = g.temperature > 0 ? (screen_chars + per_prompt - 1) / per_prompt : 1;
  batch.reserve(layout, kDraws);
  Index emitted_chars = 0;
  std::vector<std::string> words;
  for (const auto& p : prompts) {
    nnfuzz::InputValue v = target.prompt(p);
    for (Index k = 0; k < kDraws; ++k) {
      if (g.temperature > 0) rng.fill_uniform(v.floats[1].data(), v.floats[1].size(), 0.0f, 1.0f);
      batch.set_row(k, v);
    }
    target.evaluate(batch, out);
    for (const auto& t : out.texts) {
      emitted_chars += static_cast<Index>(t.size());
      nnfuzz::detail::split_words(t, words);
      for (const auto& w : words) candidates.erase(w);
    }
  }
  std::vector<std::pair<std::string, Index>> left(candidates.begin(), candidates.end());
  std::stable_sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  log << "blacklist rule: " << counts.size() << " distinct training words, " << qualifying << " of " << rule.min_letters
      << ".." << rule.max_letters << " letters and " << rule.min_count << ".." << rule.max_count << " occurrences; "
      << left.size() << " of them never emitted in " << prompts.size() << " x " << kDraws << " continuations ("
      << emitted_chars << " characters)\n";
  std::vector<std::string> list;
  for (std::size_t i = 0; i < left.size() && list.size() < 10; ++i) {
    log << "  " << left[i].first << " (" << left[i].second << " times in training)\n";
    list.push_back(left[i].first);
  }
  return list;
}

/// One finding of a run, as the table shows it.
struct Hit {
  std::string word;  // what fired: the blacklisted or repeated word
  std::uint64_t execution = 0;
  double seconds = 0;
  std::string prompt, continuation;
  nnfuzz::InputValue value, root;  // the finding and its seed (for --minimize)
};

/// Records findings; retires found blacklisted words so one run hunts for all of them.
struct HitRecorder {
  nnfuzz::CharRnnTarget* target;
  nnfuzz::BlacklistObjective* blacklist;    // the fuzzer's (null for the repeated-word objective)
  const nnfuzz::BlacklistObjective* names;  // an unretired copy, to name the word of each finding
  const nnfuzz::RepeatedWordObjective* repeat;
  std::vector<Hit>* hits;
  const std::vector<nnfuzz::InputValue>* seeds;
  void on_finding(const nnfuzz::Finding& f, const nnfuzz::FuzzStats& s) {
    Hit h;
    h.value = f.value;
    h.root = (*seeds)[static_cast<std::size_t>(f.root)];
    h.continuation = target->continuation(f.value);
    h.prompt = target->prompt_text(f.value);
    h.execution = f.execution;
    h.seconds = s.seconds;
    if (blacklist) {
      // A batch can hold two hits of one word: the second is named by the full list.
      h.word = names->first_match(h.continuation);
      blacklist->retire(h.word);
    } else {
      h.word = repeat->repeated(h.continuation);
    }
    hits->push_back(std::move(h));
  }
};

struct RunResult {
  std::vector<Hit> hits;
  nnfuzz::FuzzStats stats;
  /// Per blacklisted word: the likelihood report, P(the model says it) teacher-forced along the
  /// generation of the run's input that came closest to it (CharRnnTarget::word_likelihood()).
  std::vector<double> likelihood;
};

/// Per blacklisted word, the kKeep inputs whose texts came closest to it in a run: the best
/// progress toward that word alone (BlacklistObjective's measure, one word at a time). Progress
/// and likelihood do not rank inputs alike (aimed noise reaches a word through unlikely
/// characters), so the report takes the most likely of several.
struct ClosestInputs {
  static constexpr std::size_t kKeep = 8;
  std::vector<std::vector<std::string>> words;  // one word each
  std::vector<std::vector<float>> best;         // per word, up to kKeep scores
  std::vector<std::vector<nnfuzz::InputValue>> inputs;

  void offer(std::size_t w, float score, const nnfuzz::InputValue& v) {
    std::vector<float>& b = best[w];
    if (b.size() < kKeep) {
      b.push_back(score);
      inputs[w].push_back(v);
      return;
    }
    const auto low = static_cast<std::size_t>(std::min_element(b.begin(), b.end()) - b.begin());
    if (score > b[low]) {
      b[low] = score;
      inputs[w][low] = v;
    }
  }
};

/// The run's BlacklistObjective, also recording ClosestInputs (for the likelihood report).
class ProbedBlacklist : public nnfuzz::BlacklistObjective {
 public:
  ProbedBlacklist(const std::vector<std::string>& words, std::shared_ptr<ClosestInputs> closest)
      : nnfuzz::BlacklistObjective(words), closest_(std::move(closest)) {
    for (const auto& w : words) closest_->words.push_back({nnfuzz::BlacklistObjective({w}).words().front()});
    closest_->best.resize(words.size());
    closest_->inputs.resize(words.size());
  }
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, nnfuzz::Mask& hits) {
    nnfuzz::BlacklistObjective::check(batch, out, hits);
    ClosestInputs& c = *closest_;
    for (Index r = 0; r < batch.rows(); ++r)
      for (std::size_t w = 0; w < c.words.size(); ++w) {
        const float score =
            nnfuzz::detail::word_progress(out, r, out.texts[static_cast<std::size_t>(r)], c.words[w]).score;
        if (score >= 0) c.offer(w, score, batch.value(r));
      }
  }

 private:
  std::shared_ptr<ClosestInputs> closest_;
};

/// Everything one run needs.
struct Experiment {
  GenSettings gen;
  std::vector<std::string> blacklist;
  Index times = 3;  // repeated-word objective
  std::vector<std::string> prompts;
  std::uint64_t max_executions = 0;
  double max_seconds = 0;
  Index batch = 64, max_edits = 2, max_distance = 8;
  float noise_fraction = 0.1f, target_rate = 0.1f;
  double max_rate = 0;  // CalibratedCoverage's random-walk cap (0: off, the README's published runs)
  bool blacklist_objective = true;
  nnfuzz::SyncDirectory* sync = nullptr;  // --sync: this process is one worker of a shared campaign
  Index project_dims = 16;                // coverage on a seeded projection of the mean state
  Index tail = 4;                         // prompt edits near the end (aimed rows)
  Index minimize = 0;                     // --minimize: findings minimised (ddmin) per mode
};

/// How one row of the table searches (issue #23): sampler, coverage, fitness and aim, composed
/// explicitly so the rows do not depend on the library's defaults.
struct Guidance {
  std::string name;
  bool fitness = false;  // FitnessSampler over the inner sampler, FuzzOptions::keep_fitter
  bool aim = false;      // aimed noise (InputFocus) and prompt edits near the end
  int coverage = 0;      // 0: none, 1: calibrated on the 384-d (H-d) mean state, 2: on the projection
  bool uniform = false;  // the inner sampler: uniform over the seeds (random search) or RecentSampler
};

/// The rows of the table, by name.
Guidance guidance_of(const std::string& name) {
  if (name == "random") return {name, false, false, 0, true};  // random search
  // The four baselines' names (nnfuzz/baselines.hpp) for this model: random, fitness,
  // tensorfuzz (= cgf: TensorFuzz's CGF, its radius calibrated, a fixed one means nothing on a
  // 384-d state) and default (= combination: the guided search this experiment's README rows use).
  if (name == "cgf" || name == "tensorfuzz") return {name, false, false, 1, false};  // TensorFuzz's setting
  if (name == "fitness") return {name, true, false, 0, false};                       // progress fitness alone
  if (name == "aim") return {name, false, true, 0, true};           // aimed mutations alone (no fitness)
  if (name == "projection") return {name, false, false, 2, false};  // cheap coverage alone
  if (name == "fitness-aim") return {name, true, true, 0, false};   // fitness + aim
  if (name == "combination" || name == "default") return {name, true, true, 2, false};  // fitness + aim + projection
  if (name == "fitness-cgf") return {name, true, false, 1, false};                      // fitness + 384-d coverage
  throw std::runtime_error(
      "--modes: unknown mode '" + name +
      "' (random, fitness, tensorfuzz, default; cgf = tensorfuzz, combination = default; aim, projection, "
      "fitness-aim, fitness-cgf)");
}

// CGF's coverage: CalibratedCoverage at --target-rate, its random-walk cap at --max-rate (0: off).
nnfuzz::CalibratedCoverage calibrated_coverage(const Experiment& e) {
  nnfuzz::CalibrationOptions o;
  o.target_rate = e.target_rate;
  o.adapt = e.max_rate > 0;
  if (o.adapt) o.max_rate = e.max_rate;
  return nnfuzz::CalibratedCoverage(o);
}

/// Fuzzes from the seeds, or with --sync as one worker (resumed from its directory if it can be).
template <class F, class Rec>
nnfuzz::FuzzResult fuzz(F& fz, const std::vector<nnfuzz::InputValue>& seeds, Rec& rec, const Experiment& e) {
  return e.sync ? ex::run_or_resume(fz, seeds, *e.sync, rec) : fz.run(seeds, rec);
}

template <class Coverage, class Sampler>
RunResult run_one(const Experiment& e, nnfuzz::CharRnnTarget target, Coverage coverage, Sampler sampler,
                  std::uint64_t seed, const Guidance& g) {
  nnfuzz::Rng rng(nnfuzz::detail::mix_seed(seed, 0x5eed5));
  std::vector<nnfuzz::InputValue> seeds;
  std::vector<std::vector<nnfuzz::TokenId>> dictionary;
  std::vector<std::string> words;
  for (const auto& p : e.prompts) {
    seeds.push_back(target.prompt(p));
    if (e.gen.temperature > 0)
      rng.fill_uniform(seeds.back().floats[1].data(), seeds.back().floats[1].size(), 0.0f, 1.0f);
    nnfuzz::detail::split_words(p, words);  // splice words of the seed prompts (lower-cased)
    for (const auto& w : words) {
      bool spellable = std::all_of(w.begin(), w.end(), [&](char c) { return target.alphabet().contains(c); });
      if (spellable) dictionary.push_back(target.alphabet().encode(" " + w));
    }
  }
  nnfuzz::StructuredMutatorOptions mo;
  mo.max_edits = e.max_edits;
  mo.max_distance = e.max_distance;
  mo.keep_prefix = 1;  // the boundary id that starts every prompt
  for (int id = 1; id < target.alphabet().size(); ++id) mo.alphabet.push_back(id);
  mo.dictionary = std::move(dictionary);
  mo.float_fraction = e.noise_fraction;
  mo.lo = 0;
  mo.hi = 1;
  auto focus = std::make_shared<nnfuzz::InputFocus>();
  if (g.aim) {
    mo.tail = e.tail;
    if (e.gen.temperature > 0) mo.focus = focus;
  }
  nnfuzz::FuzzOptions fo;
  fo.keep_fitter = g.fitness;
  fo.batch_size = e.batch;
  fo.max_executions = e.max_executions;
  fo.max_seconds = e.max_seconds;
  fo.max_findings = e.blacklist_objective ? 0 : 1;
  fo.seed = seed;
  RunResult r;
  nnfuzz::CharRnnTarget observer = target;  // HitRecorder's own copy (the fuzzer owns `target`)
  if (e.blacklist_objective) {
    auto closest = std::make_shared<ClosestInputs>();
    ProbedBlacklist objective(e.blacklist, closest);
    if (g.aim) objective.focus(focus);
    auto fz = nnfuzz::make_fuzzer(std::move(target), sampler, nnfuzz::StructuredMutator(mo), std::move(coverage),
                                  std::move(objective), fo);
    const nnfuzz::BlacklistObjective names(e.blacklist);
    HitRecorder rec{&observer, &fz.objective(), &names, nullptr, &r.hits, &seeds};
    const nnfuzz::FuzzResult res = fuzz(fz, seeds, rec, e);
    r.stats = res.stats;
    for (std::size_t w = 0; w < e.blacklist.size(); ++w) {
      double p = 0;
      for (const nnfuzz::InputValue& v : closest->inputs[w])
        p = std::max(p, observer.word_likelihood(v, closest->words[w]).front().probability);
      r.likelihood.push_back(p);
    }
  } else {
    const nnfuzz::RepeatedWordObjective repeat(static_cast<int>(e.times));
    auto fz =
        nnfuzz::make_fuzzer(std::move(target), sampler, nnfuzz::StructuredMutator(mo), std::move(coverage), repeat, fo);
    HitRecorder rec{&observer, nullptr, nullptr, &repeat, &r.hits, &seeds};
    const nnfuzz::FuzzResult res = fuzz(fz, seeds, rec, e);
    r.stats = res.stats;
  }
  return r;
}

std::string one_line(std::string s, std::size_t max = 70) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A minimised finding's edits in characters: prompt edits as `'e'>'a'@12` (substitution),
/// `+'x'@3` (insertion before prompt position 3), `-'c'@7` (erasure), positions in the seed's
/// prompt text; then the noise steps that differ from the seed's.
std::string edits_text(const nnfuzz::CharRnnTarget& t, const nnfuzz::InputValue& root,
                       const std::vector<nnfuzz::InputEdit>& edits) {
  using K = nnfuzz::InputEdit::Kind;
  const auto& ids = root.tokens[0];
  const Index skip = !ids.empty() && ids[0] == nnfuzz::Alphabet::kBoundary ? 1 : 0;
  auto ch = [&](nnfuzz::TokenId id) { return "'" + one_line(t.alphabet().decode(&id, 1)) + "'"; };
  std::string s, noise;
  for (const auto& x : edits) {
    if (x.kind == K::set_float) {
      noise += (noise.empty() ? "" : ",") + std::to_string(x.position);
      continue;
    }
    const std::string at = "@" + std::to_string(x.position - skip);
    s += s.empty() ? "" : " ";
    if (x.kind == K::substitute) s += ch(ids[static_cast<std::size_t>(x.position)]) + ">" + ch(x.token) + at;
    if (x.kind == K::insert) s += "+" + ch(x.token) + at;
    if (x.kind == K::erase) s += "-" + ch(ids[static_cast<std::size_t>(x.position)]) + at;
  }
  if (!noise.empty()) s += (s.empty() ? "" : " ") + std::string("noise@") + noise;
  return s.empty() ? "(none)" : s;
}

/// Prints the table of one mode's runs and returns the words found by any run; with
/// e.minimize, the first e.minimize words' example findings minimised (ddmin over the edits from
/// their seed: prompt edits and changed noise steps, minimize_edits()).
std::set<std::string> report(const std::string& mode, const std::vector<RunResult>& runs, const Experiment& e,
                             const nnfuzz::CharRnnTarget& target, std::ostream& os) {
  std::set<std::string> found;
  std::map<std::string, int> runs_per_word;
  std::map<std::string, const Hit*> example;
  std::vector<double> first_exec, first_sec, words_per_run;
  double execs = 0, secs = 0;
  for (const auto& r : runs) {
    std::set<std::string> mine;
    for (const auto& h : r.hits) {
      if (!mine.insert(h.word).second) continue;
      ++runs_per_word[h.word];
      if (!example.count(h.word)) example[h.word] = &h;
      found.insert(h.word);
    }
    words_per_run.push_back(static_cast<double>(mine.size()));
    if (!r.hits.empty()) {
      first_exec.push_back(static_cast<double>(r.hits.front().execution));
      first_sec.push_back(r.hits.front().seconds);
    }
    execs += static_cast<double>(r.stats.executions);
    secs += r.stats.seconds;
  }
  const std::size_t target_words = e.blacklist_objective ? e.blacklist.size() : 0;
  os << "\n## " << mode << ": " << runs.size() << " runs, " << std::fixed << std::setprecision(0) << execs
     << " executions in " << secs << " s of compute (" << execs / std::max(secs, 1e-9) << " exec/s per run)\n";
  if (e.blacklist_objective)
    os << "words found by any run: " << found.size() << " of " << target_words
       << "; median words per run: " << std::setprecision(1) << median(words_per_run) << "\n";
  else
    os << "runs with a word " << e.times << "+ times in a row: " << first_exec.size() << " of " << runs.size() << "\n";
  os << "median time to a run's first finding (runs that found one): " << std::setprecision(0) << median(first_exec)
     << " executions, " << std::setprecision(1) << median(first_sec) << " s\n";
  if (!found.empty()) {
    os << "| word | runs | prompt | continuation |\n|---|---|---|---|\n";
    for (const auto& w : found) {
      const Hit& h = *example[w];
      os << "| " << w << " | " << runs_per_word[w] << " | `" << one_line(h.prompt, 40) << "` | `"
         << one_line(h.continuation) << "` |\n";
    }
  }
  if (e.minimize > 0 && !found.empty()) {
    os << "\nminimised findings (ddmin over the edits from the seed):\n"
       << "| word | edits found -> kept | minimised prompt | kept edits | continuation |\n|---|---|---|---|---|\n";
    Index done = 0;
    for (const auto& w : found) {
      if (done++ == e.minimize) break;
      const Hit& h = *example[w];
      nnfuzz::CharRnnTarget model = target;
      nnfuzz::EditMinimizeOptions mo;
      mo.batch_size = mo.confirm_batch_size = e.batch;
      nnfuzz::EditMinimizeResult m;
      if (e.blacklist_objective) {
        nnfuzz::BlacklistObjective objective({w});
        m = nnfuzz::minimize_edits(model, objective, h.root, h.value, mo);
      } else {
        nnfuzz::RepeatedWordObjective objective(static_cast<int>(e.times));
        m = nnfuzz::minimize_edits(model, objective, h.root, h.value, mo);
      }
      os << "| " << w << " | " << m.edits_before << " -> " << m.edits.size() << (m.minimal ? "" : " (budget)") << " | `"
         << one_line(model.prompt_text(m.input), 40) << "` | " << edits_text(model, h.root, m.edits) << " | `"
         << one_line(model.continuation(m.input)) << "` |\n";
    }
  }
  return found;
}

template <class F>
std::vector<RunResult> run_all(int runs, int threads, F one) {
  std::vector<RunResult> out(static_cast<std::size_t>(runs));
  std::atomic<int> next{0};
  std::mutex io;
  auto worker = [&] {
    for (int i; (i = next.fetch_add(1)) < runs;) {
      out[static_cast<std::size_t>(i)] = one(i);
      std::lock_guard<std::mutex> lock(io);
      std::cout << "  run " << i << ": " << out[static_cast<std::size_t>(i)].hits.size() << " finding(s), "
                << out[static_cast<std::size_t>(i)].stats.executions << " executions, corpus "
                << out[static_cast<std::size_t>(i)].stats.corpus_size << "\n"
                << std::flush;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return out;
}

/// The command line: the shared options, then `fuzz`'s.
struct Args {
  std::string text_dir = nnfuzz::default_fortunes_dir(), models_dir = "out/models", model_path,
              out_dir = "out/char_rnn";
  Recipe recipe;
  GenSettings gen;
  int threads = 2;
  std::string blacklist_file, prompts_file, objective = "blacklist", modes = "random,fitness,tensorfuzz,default";
  Experiment e;
  int runs = 10;
  std::uint64_t master_seed = 1;
  Index n_prompts = 100;
  ex::SyncFlags sync_flags;
  bool rare = false;
};

/// The options every subcommand reads (text, model, generation).
void add_shared_options(CLI::App& app, Args& a) {
  app.add_option("--text", a.text_dir, "directory of fortune files (Debian's fortunes)")->capture_default_str();
  nnfuzz_flags::models(app, a.models_dir, "trained char-RNNs");
  app.add_option("--model", a.model_path, "a weights file to load instead of the cached recipe");
  app.add_option("--hidden", a.recipe.hidden, "GRU width")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--embed", a.recipe.embed, "embedding width")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--train-steps", a.recipe.steps, "training steps")  // the count itself, not an override
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(a.recipe.steps)>>())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--dropout", a.recipe.dropout, "dropout before the output layer")
      ->check(CLI::Range(0.0, 0.95))
      ->capture_default_str();
  app.add_option("--train-seed", a.recipe.seed, "initialisation and batch seed")->capture_default_str();
  app.add_option("--jobs", a.threads, "training threads, and fuzz runs at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--prompt-chars", a.gen.prompt_chars, "characters of each held-out fortune used as a prompt")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--n-chars", a.gen.n_chars, "characters generated per prompt")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--screen-chars", a.gen.screen_chars,
                 "blacklist rule: characters sampled from the held-out prompts (the rule's 16 M; less for a demo)")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(a.gen.screen_chars)>>())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--temperature", a.gen.temperature, "sampling temperature (0: greedy, no noise input)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
}

/// `fuzz`'s options: the objective, the seeds, the rows and the search's settings.
void add_fuzz_options(CLI::App& fuzz, Args& a) {
  Experiment& e = a.e;
  fuzz.add_option("--objective", a.objective, "blacklist or repeat")
      ->check(CLI::IsMember({"blacklist", "repeat"}))
      ->capture_default_str();
  fuzz.add_option("--blacklist", a.blacklist_file, "file of blacklisted words, one a line (default: the rule's list)");
  fuzz.add_option("--prompts", a.prompts_file, "file of seed prompts, one a line (default: held-out fortunes)");
  fuzz.add_option("--n-prompts", a.n_prompts, "held-out prompts used as seeds (without --prompts)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  fuzz.add_option("--times", e.times, "repeated-word objective: times in a row")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  nnfuzz_flags::runs(fuzz, a.runs, "per mode");
  fuzz.add_option("--modes", a.modes,
                  "comma-separated rows: the four baselines random, fitness, tensorfuzz (= cgf), default (= "
                  "combination); or aim, projection, fitness-aim, fitness-cgf")
      ->capture_default_str();
  nnfuzz_flags::seed(fuzz, a.master_seed, "run i uses a seed mixed from it and i");
  fuzz.add_option("--executions", e.max_executions, "execution budget (per run; 0: none, then --max-seconds)")
      ->transform(nnfuzz_flags::integer_count<std::decay_t<decltype(e.max_executions)>>())
      ->capture_default_str();
  fuzz.add_option("--max-seconds", e.max_seconds, "seconds per run (0: none; not reproducible)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  nnfuzz_flags::batch(fuzz, e.batch);
  fuzz.add_option("--max-edits", e.max_edits, "character edits per mutant (1..N)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  fuzz.add_option("--max-distance", e.max_distance, "edit-distance bound to the seed prompt (0: none)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  fuzz.add_option("--noise-fraction", e.noise_fraction, "fraction of the noise resampled per mutant")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  nnfuzz_flags::target_rate(fuzz, e.target_rate);
  fuzz.add_option("--max-rate", e.max_rate,
                  "CGF: grow the radius when more than this share of a window of mutants is new (0: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  fuzz.add_option("--project-dims", e.project_dims,
                  "modes projection, combination: coverage on a seeded projection of the mean state to this many dims")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  fuzz.add_option("--tail", e.tail, "aimed modes: prompt edits in the last N characters (half of the mutants)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  fuzz.add_option("--minimize", e.minimize,
                  "minimise the example findings of this many words per mode (ddmin over prompt edits and noise)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  nnfuzz_flags::out(fuzz, a.out_dir, "results-<objective>.md");
  ex::add_sync_options(&fuzz, a.sync_flags);
  fuzz.add_flag("--rare", a.rare, "without --blacklist: the second rule's list");
}

/// `train`: held-out bits per character and three sample continuations.
void print_samples(const nnfuzz::CharRnn& net, const TextData& d, nnfuzz::CharRnnTarget& target,
                   const GenSettings& gen) {
  std::cout << "held-out: " << std::setprecision(3) << nnfuzz::char_rnn_bits_per_char(net, d.held_out_ids)
            << " bits/char\n";
  nnfuzz::Rng rng(7);
  for (const auto& p : prompts_of(d.held_out, gen.prompt_chars, 3)) {
    nnfuzz::InputValue v = target.prompt(p);
    if (gen.temperature > 0) rng.fill_uniform(v.floats[1].data(), v.floats[1].size(), 0.0f, 1.0f);
    std::cout << "  \"" << one_line(p) << "\" -> \"" << one_line(target.continuation(v), 200) << "\"\n";
  }
}

/// Refuses a blacklist word the model's alphabet cannot spell. BlacklistObjective matches
/// case-insensitively: "Cat" is spelt by "cat" or "CAT", so a letter counts as spellable when
/// the alphabet holds it in either case.
void check_spellable(const std::vector<std::string>& words, const nnfuzz::Alphabet& alphabet) {
  for (const auto& w : words)
    for (char c : w)
      if (!alphabet.contains(c) && !alphabet.contains(static_cast<char>(std::tolower(static_cast<unsigned char>(c)))) &&
          !alphabet.contains(static_cast<char>(std::toupper(static_cast<unsigned char>(c)))))
        throw std::runtime_error("--blacklist: the word '" + w + "' holds '" +
                                 nnfuzz::detail::describe_byte(static_cast<unsigned char>(c)) +
                                 "', which the model's alphabet cannot spell");
}

/// The seed prompts (held-out fortunes or --prompts), each checked against the model.
std::vector<std::string> seed_prompts(const Args& a, const TextData& d, const nnfuzz::CharRnnTarget& target) {
  std::vector<std::string> prompts = a.prompts_file.empty() ? prompts_of(d.held_out, a.gen.prompt_chars, a.n_prompts)
                                                            : read_lines(a.prompts_file, "--prompts");
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    try {
      (void)target.prompt(prompts[i]);
    } catch (const std::exception& err) {
      throw std::runtime_error("prompt " + std::to_string(i + 1) + " ('" + one_line(prompts[i], 40) +
                               "'): " + err.what());
    }
  }
  return prompts;
}

/// One mode's word-by-word likelihood: per word, the highest over the runs, and the runs that found it.
struct ModeLikelihood {
  std::string mode;
  std::vector<double> best;
  std::vector<int> found;
};
ModeLikelihood likelihood_of(const std::string& mode, const std::vector<RunResult>& results, const Experiment& e) {
  ModeLikelihood l{mode, std::vector<double>(e.blacklist.size(), 0.0), std::vector<int>(e.blacklist.size(), 0)};
  nnfuzz::BlacklistObjective names(e.blacklist);
  for (const auto& r : results) {
    std::set<std::string> mine;
    for (const auto& h : r.hits) mine.insert(h.word);
    for (std::size_t w = 0; w < l.best.size(); ++w) {
      l.best[w] = std::max(l.best[w], r.likelihood[w]);
      l.found[w] += mine.count(names.words()[w]) ? 1 : 0;
    }
  }
  return l;
}

/// The likelihood report (issue #23): how close the model came to saying each word.
void write_likelihood(const std::vector<ModeLikelihood>& likelihood, const Experiment& e, std::ostream& table) {
  table << "\nlikelihood report: per word, runs that found it, and the highest P(the model says it) over the "
           "runs, teacher-forced along the generations of each run's 8 inputs closest to it:\n| word |";
  for (const auto& l : likelihood) table << " " << l.mode << ": runs | max P |";
  table << "\n|---|";
  for (std::size_t i = 0; i < likelihood.size(); ++i) table << "---|---|";
  table << "\n";
  const nnfuzz::BlacklistObjective names(e.blacklist);
  for (std::size_t w = 0; w < e.blacklist.size(); ++w) {
    table << "| " << names.words()[w] << " |";
    for (const auto& l : likelihood)
      table << " " << l.found[w] << " | " << std::scientific << std::setprecision(2) << l.best[w] << std::fixed << " |";
    table << "\n";
  }
}

/// A mode's runs, each composed from its Guidance (sampler, coverage, fitness).
std::vector<RunResult> run_mode(const Guidance& g, const Args& a, const Experiment& e,
                                const nnfuzz::CharRnnTarget& target) {
  nnfuzz::CharRnnTarget projected = target;
  projected.project_coverage(e.project_dims, 23);
  return run_all(a.runs, a.threads, [&](int i) -> RunResult {
    const std::uint64_t seed = nnfuzz::detail::mix_seed(a.master_seed, static_cast<std::uint64_t>(i));
    const nnfuzz::CharRnnTarget& t = g.coverage == 2 ? projected : target;
    auto with_inner = [&](auto inner) -> RunResult {
      auto with_sampler = [&](auto sampler) -> RunResult {
        if (g.coverage == 0) return run_one(e, t, nnfuzz::NoCoverage(), sampler, seed, g);
        return run_one(e, t, calibrated_coverage(e), sampler, seed, g);
      };
      if (g.fitness) return with_sampler(nnfuzz::FitnessSampler<decltype(inner)>(inner, 0.5, 8));
      return with_sampler(inner);
    };
    if (g.uniform) return with_inner(nnfuzz::UniformSampler());
    return with_inner(nnfuzz::RecentSampler());
  });
}

/// The table's name of a mode: the four baselines by their common names.
std::string row_name(const std::string& mode) {
  if (mode == "cgf" || mode == "tensorfuzz") return "TensorFuzz's CGF";
  if (mode == "random") return "random search";
  if (mode == "fitness") return "fitness only";
  if (mode == "default" || mode == "combination") return "the defaults (" + mode + ")";
  return mode;
}

/// `fuzz`: every mode's runs, the table and (blacklist) the likelihood report, to stdout and
/// OUT/results-<objective>.md.
void run_fuzz(Args& a, const TextData& d, nnfuzz::CharRnnTarget& target, const BlacklistRule& rule) {
  Experiment& e = a.e;
  e.gen = a.gen;
  e.blacklist_objective = a.objective == "blacklist";
  if (e.max_executions == 0 && !(e.max_seconds > 0))
    throw std::runtime_error("fuzz: set --executions or --max-seconds");
  ex::check_sync_flags(a.sync_flags);
  std::unique_ptr<nnfuzz::SyncDirectory> sync;
  if (a.sync_flags.enabled()) {  // one run, CGF, this worker's seed
    a.runs = 1;
    a.modes = "cgf";
    a.master_seed = nnfuzz::worker_seed(a.master_seed, a.sync_flags.worker);
    sync = std::make_unique<nnfuzz::SyncDirectory>(a.sync_flags.dir, a.sync_flags.worker,
                                                   ex::sync_options(a.sync_flags, a.master_seed));
    e.sync = sync.get();
  }
  if (e.blacklist_objective) {
    e.blacklist = a.blacklist_file.empty() ? default_blacklist(target, d, a.gen, a.gen.screen_chars, std::cout, rule)
                                           : read_lines(a.blacklist_file, "--blacklist");
    if (e.blacklist.empty())
      throw std::runtime_error(
          "the blacklist rule left no word: the model emitted every qualifying word within "
          "--screen-chars; give a --blacklist file or another --temperature");
    check_spellable(e.blacklist, d.alphabet);
  }
  e.prompts = seed_prompts(a, d, target);
  fs::create_directories(a.out_dir);
  std::ostringstream table;
  table << "# char_rnn fuzz --objective " << a.objective << ": " << e.prompts.size() << " seed prompts, "
        << a.gen.n_chars << " chars at temperature " << a.gen.temperature << ", " << e.max_executions
        << " executions per run, master seed " << a.master_seed << "\n";
  std::vector<ModeLikelihood> likelihood;
  std::istringstream ms(a.modes);
  for (std::string mode; std::getline(ms, mode, ',');) {
    const Guidance g = guidance_of(mode);
    std::cout << mode << ": " << a.runs << " runs\n";
    const std::vector<RunResult> results = run_mode(g, a, e, target);
    report(row_name(mode), results, e, target, table);
    if (e.blacklist_objective) likelihood.push_back(likelihood_of(mode, results, e));
  }
  if (!likelihood.empty()) write_likelihood(likelihood, e, table);
  std::cout << table.str();
  ex::write_text_file((fs::path(a.out_dir) / ("results-" + a.objective + ".md")).string(), table.str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"TensorFuzz's character-level language model experiment: blacklisted and repeated words"};
  app.require_subcommand(1);
  Args a;
  add_shared_options(app, a);
  CLI::App* train = app.add_subcommand("train", "train the model (or load it), print held-out bits/char and samples");
  CLI::App* blk = app.add_subcommand("blacklist", "apply the blacklist rule and print the list");
  CLI::App* fuzz = app.add_subcommand("fuzz", "CGF vs random search on the blacklist or repeated-word objective");
  add_fuzz_options(*fuzz, a);
  blk->add_flag("--rare", a.rare, "the second rule: words of 6-12 letters occurring 8-19 times (README)");
  CLI11_PARSE(app, argc, argv);
  BlacklistRule rule;
  if (a.rare) rule = {6, 12, 8, 19};
  try {
    const TextData d = load_text(a.text_dir);
    std::cout << "text: " << d.train.size() << " training and " << d.held_out.size() << " held-out fortunes, "
              << d.alphabet.size() << " ids\n";
    a.recipe.threads = a.threads;
    nnfuzz::CharRnn net = train_or_load(a.recipe, d, a.models_dir, a.model_path);
    nnfuzz::CharRnnTarget target(net, d.alphabet, a.gen.max_prompt(), a.gen.n_chars, a.gen.temperature);
    if (*train) print_samples(net, d, target, a.gen);
    if (*blk) default_blacklist(target, d, a.gen, a.gen.screen_chars, std::cout, rule);
    if (*fuzz) run_fuzz(a, d, target, rule);
    ex::check_stdout();
  } catch (const std::exception& err) {
    std::cerr << "char_rnn: " << err.what() << "\n";
    return 1;
  }
}
