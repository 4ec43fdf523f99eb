// SPDX-License-Identifier: MIT
// nnfuzz: fuzzing as a unit test — a deterministic, bounded campaign with a regression corpus,
// whose failure message says what fired, where it came from, and how to replay it.
//
//     auto fuzzer = nnfuzz::make_fuzzer(MyModel{}, options);
//     nnfuzz::FuzzTestOptions o;
//     o.regression_dir = "tests/regressions";
//     const nnfuzz::FuzzTestReport r = nnfuzz::fuzz_test(fuzzer, seeds, o);
//     REQUIRE(r.passed);  // Catch2: INFO(r.message) first; GoogleTest: EXPECT_TRUE(r.passed) << r.message
//
// or, with the glue headers, NNFUZZ_REQUIRE_NO_FINDING (testing/catch2.hpp) and
// EXPECT_TRUE(nnfuzz::finds_nothing(...)) (testing/gtest.hpp).
//
// After a failing test of two versions, the release report with the finding's picture:
//
//     nnfuzz::write_regression_report("report", {nnfuzz::candidate_report("v2", fuzzer.model(), seeds, r, o)},
//                                     report_options);  // ReportOptions: image shape, write_png
#pragma once

#include "../detail/config.hpp"
#include "../fuzzer.hpp"
#include "../campaign/saver.hpp"
#include "../minimize.hpp"
#include "../regression/localize.hpp"
#include "../regression/metrics.hpp"
#include "../regression/report.hpp"
#include "../tolerance.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace nnfuzz {

/// A fuzz campaign sized for a unit test: a fixed seed and an execution budget, no wall clock.
/// Two environment variables override it for a nightly run without recompiling:
///   NNFUZZ_SEED=<integer>     the run's seed instead of `seed`
///   NNFUZZ_BUDGET=<factor>    max_executions multiplied by this (e.g. 100 for a nightly run)
struct FuzzTestOptions {
  std::uint64_t seed = 1;                ///< FuzzOptions::seed (NNFUZZ_SEED overrides)
  std::uint64_t max_executions = 20000;  ///< budget (times NNFUZZ_BUDGET)
  /// Rows per model call; 0 keeps the fuzzer's own FuzzOptions::batch_size.
  Index batch_size = 0;
  /// A directory of findings saved by earlier runs (a campaign directory: DIR/findings/*.bin, as
  /// CampaignSaver and save_finding() write them; commit it next to the test, as OSS-Fuzz
  /// projects keep their crash inputs). Empty: none. Its findings are replayed first, before any
  /// fuzzing, so a fixed bug that comes back fails at once; a new finding is saved there (and
  /// its minimised form next to it, for dense inputs). The directory must exist.
  std::string regression_dir;
  /// Minimise a new finding towards its root seed (minimize.hpp) and report its size: dense
  /// inputs with minimize(), structured inputs (InputLayout) with minimize_edits() — the fewest
  /// edits from the seed (token edits, changed float elements) that still fire.
  bool minimize = true;
  /// The test's name: its findings live in regression_dir/<name>/ (characters other than
  /// letters, digits, '.', '-' and '_' become '_'), so tests that share one regression_dir,
  /// even with inputs of different widths, never replay each other's findings. Empty: directly
  /// in regression_dir. The glue (NNFUZZ_REQUIRE_NO_FINDING, finds_nothing(),
  /// NNFUZZ_EXPECT_NO_FINDING) fills it with the Catch2 / GoogleTest test's name when empty.
  std::string name;
  /// What a relative regression_dir is relative to (see resolve_regression_dir()): usually the
  /// test source's directory, NNFUZZ_SOURCE_DIR. The environment variable
  /// NNFUZZ_REGRESSION_ROOT, when set, takes precedence. The Catch2 macros and
  /// NNFUZZ_EXPECT_NO_FINDING fill it with their caller's source directory when empty.
  std::string base_dir;
  /// A release gate on two versions (a model whose Output has `reference` and `candidate`
  /// logits: VersionPair, PairTarget): when a threshold is set (MetricGate::active()), the
  /// pair is measured over `gate_rows` (regression/metrics.hpp) after the regression corpus is
  /// replayed and before fuzzing, and the test fails, naming each metric over its threshold.
  MetricGate gate;
  /// The data set the gate measures (rows = inputs); empty: the seeds.
  RowMatrix gate_rows;
  /// The tolerances a finding of a pair is localised with (regression/localize.hpp): when both
  /// versions name their tensors (can_localize()), the message names the first tensor over its
  /// tolerance and each tensor's error before it.
  TensorTolerances tolerances;
};

/// The directory of a source file, absolute: `source_dir(__FILE__)` (NNFUZZ_SOURCE_DIR) is
/// where a test's regression corpus is committed. A relative `file` (as some build systems,
/// e.g. Meson, pass sources to the compiler) is taken relative to the working directory.
inline std::string source_dir(const char* file) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(std::filesystem::path(file), ec);
  return (ec ? std::filesystem::path(file) : p).parent_path().string();
}

/// The directory of the source file that expands it (`FuzzTestOptions::base_dir = NNFUZZ_SOURCE_DIR;`).
#define NNFUZZ_SOURCE_DIR (::nnfuzz::source_dir(__FILE__))

/// Where fuzz_test() keeps a test's regression corpus: `regression_dir` itself when absolute;
/// a relative one is resolved against NNFUZZ_REGRESSION_ROOT when that environment variable is
/// set and not empty, else against `base_dir` — never against the working directory (under
/// ctest, the build directory), where a new corpus would silently start. Then, when `name` is
/// not empty, its sanitised form is appended. Empty regression_dir: empty (no corpus).
/// Throws std::invalid_argument for a relative regression_dir with neither root.
inline std::string resolve_regression_dir(const FuzzTestOptions& o) {
  namespace fs = std::filesystem;
  if (o.regression_dir.empty()) return {};
  fs::path dir(o.regression_dir);
  if (dir.is_relative()) {
    const char* root = std::getenv("NNFUZZ_REGRESSION_ROOT");
    if (root && *root)
      dir = fs::path(root) / dir;
    else if (!o.base_dir.empty())
      dir = fs::path(o.base_dir) / dir;
    else
      detail::fail("fuzz_test(): option 'regression_dir' '", o.regression_dir,
                   "' is relative, and neither the environment variable NNFUZZ_REGRESSION_ROOT nor option 'base_dir' "
                   "says relative to what (the working directory would be the build directory under ctest): set "
                   "base_dir = NNFUZZ_SOURCE_DIR (the test source's directory), set NNFUZZ_REGRESSION_ROOT, or give an "
                   "absolute path");
  }
  if (!o.name.empty()) {
    std::string safe = o.name;
    for (char& c : safe)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
            c == '_'))
        c = '_';
    if (safe == "." || safe == "..") safe = "_" + safe;
    dir /= safe;
  }
  return dir.lexically_normal().string();
}

/// The outcome of fuzz_test(): passed, or a message a test framework prints.
struct FuzzTestReport {
  bool passed = true;              ///< no finding, in the regression corpus or by fuzzing
  std::string message;             ///< what fired, its lineage, the files, how to replay (empty if passed)
  bool from_regression = false;    ///< the failure came from a saved regression input
  std::uint64_t seed = 0;          ///< the seed used (after NNFUZZ_SEED)
  std::uint64_t executions = 0;    ///< fuzzing executions (0 when a regression input fired)
  Index regression_inputs = 0;     ///< saved inputs replayed first
  std::vector<std::string> files;  ///< files written: the finding, then its minimised form
  std::string regression_dir;      ///< the corpus directory used (resolve_regression_dir()), empty for none
  bool gate_failed = false;        ///< the failure came from the metric gate
  RegressionMetrics metrics;       ///< the gate's metrics over gate_rows (rows 0 when not measured)
  /// The first diverging tensor of the failing input (a pair whose versions name their tensors;
  /// "" otherwise, or when no tensor is over its tolerance).
  std::string first_diverging_tensor;
  /// The input that failed the test: the new finding, or the saved regression input that fired
  /// again (its `input` is empty when the test passed, failed on the gate, or has structured
  /// inputs: see `value`). candidate_report() draws it.
  Finding finding;
  /// minimize()'s result for a new dense finding (empty: not minimised, or from the corpus).
  RowVector minimised;
  /// minimize_edits()'s result for a new structured finding: the input, the edits kept from its
  /// root seed and how many there were (edits_before 0 and no edits: not minimised, or from the
  /// corpus).
  EditMinimizeResult minimised_edits;
  /// True when passed (so `EXPECT_TRUE(report)` reads naturally).
  explicit operator bool() const { return passed; }
};

namespace detail {
/// NNFUZZ_SEED as an unsigned integer, or `def` when it is unset or empty.
inline std::uint64_t env_seed(std::uint64_t def) {
  const char* v = std::getenv("NNFUZZ_SEED");
  if (!v || !*v) return def;
  // Digits only: strtoull() alone would take " -5" (blanks, a sign) as 2^64 - 5.
  std::uint64_t x = 0;
  for (const char* c = v; *c; ++c) {
    if (*c < '0' || *c > '9' || x > (~std::uint64_t{0} - static_cast<std::uint64_t>(*c - '0')) / 10)
      fail("fuzz_test(): environment variable NNFUZZ_SEED='", v,
           "' is not an unsigned integer (decimal digits only, at most 18446744073709551615)");
    x = x * 10 + static_cast<std::uint64_t>(*c - '0');
  }
  return x;
}
/// NNFUZZ_BUDGET as a positive factor, or 1 when it is unset or empty.
inline double env_budget() {
  const char* v = std::getenv("NNFUZZ_BUDGET");
  if (!v || !*v) return 1.0;
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (errno != 0 || *end != '\0' || !(x > 0) || !(x < 1e9))
    fail("fuzz_test(): environment variable NNFUZZ_BUDGET='", v, "' is not a positive factor (e.g. 10)");
  return x;
}
/// The execution budget: `max_executions` times NNFUZZ_BUDGET (exactly max_executions when the
/// variable is unset). Refuses, naming the variable, its value and the result, a product that
/// does not fit in 64 bits or that rounds down to 0 executions.
inline std::uint64_t budget_executions(std::uint64_t max_executions, double factor) {
  const char* v = std::getenv("NNFUZZ_BUDGET");
  if (!v || !*v) return max_executions;
  const long double product = static_cast<long double>(max_executions) * static_cast<long double>(factor);
  if (!(product < 18446744073709551616.0L))
    fail("fuzz_test(): environment variable NNFUZZ_BUDGET='", v, "' times option 'max_executions' (", max_executions,
         ") is ", static_cast<double>(product),
         " executions, more than a 64-bit count holds (18446744073709551615): lower one of them");
  const auto budget = static_cast<std::uint64_t>(product);
  if (budget < 1)
    fail("fuzz_test(): environment variable NNFUZZ_BUDGET='", v, "' times option 'max_executions' (", max_executions,
         ") is a budget of 0 executions (", static_cast<double>(product), "): raise NNFUZZ_BUDGET");
  return budget;
}
/// "top-1 agreement 0.98 (2 of 100 rows disagree), max |dlogit| 0.5, mean |dlogit| 0.01, KL p50/p99/max
/// 0.001/0.02/0.1, SQNR 35.2 dB".
inline std::string describe_metrics(const RegressionMetrics& m) {
  return message("top-1 agreement ", m.top1_agreement, " (", m.rows - m.agreements, " of ", m.rows,
                 " rows disagree), max |dlogit| ", m.max_abs_logit, ", mean |dlogit| ", m.mean_abs_logit,
                 ", KL p50/p99/max ", m.kl_p50, "/", m.kl_p99, "/", m.kl_max, ", SQNR ", m.sqnr_db, " dB",
                 m.non_finite_rows ? message(", ", m.non_finite_rows, " rows with a non-finite logit") : std::string());
}
/// For a pair of versions: the lines a failure message gets about one input (its metrics, and
/// where the versions part when they name their tensors); sets `first`. Empty for other models.
template <typename Model>
std::string pair_lines(Model& model, const RowVector& input, const TensorTolerances& tol, std::string& first) {
  using Out = typename Model::Output;
  std::string s;
  if constexpr (has_reference_candidate<Out>::value) {
    const RowMatrix row = input;
    s += "  metrics on this input: " + describe_metrics(measure_pair(model, row)) + "\n";
    if constexpr (can_localize<Out>()) {
      const Localization l = localize_rows(model, row, tol).front();
      first = l.first_tensor();
      s += "  " + l.describe() + "\n";
    }
  }
  return s;
}
/// A finding's lineage, for messages.
inline std::string lineage(const Finding& f) {
  return message("seed #", f.root, ", ", f.depth, " mutation", f.depth == 1 ? "" : "s", " deep, execution ",
                 f.execution);
}
}  // namespace detail

/// Runs a unit-test campaign with `fuzzer` (its policies and options; for the campaign the seed,
/// budget and max_findings = 1 are set from `options`, and the fuzzer's own FuzzOptions are
/// restored before it returns or throws) from `seeds` (a RowMatrix, or a vector of InputValue
/// for structured models):
///  1. every input of the test's corpus (resolve_regression_dir(options)) is replayed (Fuzzer::replay); the first that
///  fires
///     fails the test, naming the file — no fuzzing happens;
///  2. then the campaign runs; a finding fails the test: it is saved to regression_dir (if set),
///     minimised (dense inputs: minimize(); structured: minimize_edits()), and the message gives what fired, the
///     lineage, the files and the code that replays it. A finding that cannot be saved there (a read-only file system)
///     is saved in <tmp>/nnfuzz-unsaved-findings-<uid>/ instead, and the message gives the error and the input's
///     values: it is reported whole all the same.
/// Throws std::invalid_argument for a regression_dir that does not exist or is not a directory
/// or is relative with nothing to resolve it against,
/// a corrupt regression file (naming it; a non-finite saved input is one), a regression input
/// of another shape, a bad NNFUZZ_SEED, or an NNFUZZ_BUDGET whose product with max_executions
/// does not fit in 64 bits or rounds to 0.
template <typename FuzzerT, typename Seeds>
FuzzTestReport fuzz_test(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options = {}) {
  namespace fs = std::filesystem;
  FuzzTestReport report;
  report.seed = detail::env_seed(options.seed);
  const double factor = detail::env_budget();
  if (options.max_executions < 1) detail::fail("fuzz_test(): option 'max_executions' must be >= 1, got 0");
  if (options.batch_size < 0) detail::fail("fuzz_test(): option 'batch_size' must be >= 0, got ", options.batch_size);
  const std::string dir = resolve_regression_dir(options);
  report.regression_dir = dir;
  if (!dir.empty()) {
    FuzzTestOptions unnamed = options;
    unnamed.name.clear();
    const std::string root = resolve_regression_dir(unnamed);
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      detail::fail("fuzz_test(): option 'regression_dir' '", options.regression_dir, "' (", root,
                   ") is not a directory (create it: it keeps the findings of earlier runs)");
    for (const SavedFinding& s : load_findings(dir)) {
      ++report.regression_inputs;
      bool fired = false;
      try {
        if constexpr (FuzzerT::kStructured)
          fired = fuzzer.replay(s.finding.value);
        else
          fired = fuzzer.replay(s.finding.input);
      } catch (const std::invalid_argument& e) {
        detail::fail("fuzz_test(): regression input '", s.path, "' does not fit this model: ", e.what(),
                     options.name.empty() ? " (tests that share a regression_dir need FuzzTestOptions::name, which "
                                            "keeps each test's findings in a directory of its own)"
                                          : "");
      }
      if (fired) {
        report.passed = false;
        report.from_regression = true;
        report.finding = s.finding;
        std::string where;
        if constexpr (!FuzzerT::kStructured) {
          auto model = fuzzer.model();
          where = detail::pair_lines(model, s.finding.input, options.tolerances, report.first_diverging_tensor);
        }
        report.message = detail::message(
            "nnfuzz: a saved regression input fires again: '", s.path, "'\n  first found: ", s.finding.what, "\n",
            where, "  replay: nnfuzz::load_finding(\"", s.path, "\") and fuzzer.replay(...) (no fuzzing was done)");
        return report;
      }
    }
  }
  if (options.gate.active()) {
    options.gate.validate();
    using Out = typename std::decay_t<decltype(fuzzer.model())>::Output;
    if constexpr (!FuzzerT::kStructured && detail::has_reference_candidate<Out>::value) {
      const RowMatrix& seed_rows = seeds;
      const RowMatrix& rows = options.gate_rows.size() > 0 ? options.gate_rows : seed_rows;
      auto model = fuzzer.model();
      report.metrics = measure_pair(model, rows, options.batch_size > 0 ? options.batch_size : Index{256});
      const std::string broken = options.gate.violations(report.metrics);
      if (!broken.empty()) {
        report.passed = false;
        report.gate_failed = true;
        report.message =
            detail::message("nnfuzz: the metric gate failed over ", report.metrics.rows, " ",
                            options.gate_rows.size() > 0 ? "gate rows" : "seeds", ": ", broken,
                            "\n  metrics: ", detail::describe_metrics(report.metrics), "\n  (no fuzzing was done)");
        return report;
      }
    } else {
      detail::fail(
          "fuzz_test(): option 'gate' needs a pair of versions on dense inputs: a model whose Output has RowMatrix "
          "members `reference` and `candidate` (VersionPair, PairTarget)");
    }
  }
  // The fuzzer's own options come back however this returns (a finding, an exception): the
  // test's campaign settings must not leak into the caller's later runs.
  struct Restore {
    FuzzerT& f;
    FuzzOptions saved;
    ~Restore() { f.set_options(saved); }
  } restore{fuzzer, fuzzer.options()};
  FuzzOptions fo = fuzzer.options();
  fo.seed = report.seed;
  fo.max_executions = detail::budget_executions(options.max_executions, factor);
  fo.max_iterations = 0;
  fo.max_seconds = 0;
  fo.max_findings = 1;
  if (options.batch_size > 0) fo.batch_size = options.batch_size;
  fuzzer.set_options(fo);
  const FuzzResult r = fuzzer.run(seeds);
  report.executions = r.stats.executions;
  if (!r.found()) return report;
  const Finding& f = r.findings.front();
  report.passed = false;
  report.finding = f;
  std::ostringstream m;
  m << "nnfuzz: the objective fired: " << f.what << "\n  after " << r.stats.executions << " executions (seed "
    << report.seed << ", budget " << fo.max_executions << "), from " << detail::lineage(f) << "\n";
  if constexpr (!FuzzerT::kStructured) {
    auto model = fuzzer.model();
    m << detail::pair_lines(model, f.input, options.tolerances, report.first_diverging_tensor);
  }
  // Saves a finding in regression_dir; if it cannot be (a read-only file system, no space), in
  // a fallback directory, and the message says why and gives the input itself: a finding that
  // fired is never lost behind an I/O error.
  bool unsaved = false;
  auto save = [&](const Finding& x, const char* label, const char* note) {
    try {
      report.files.push_back(save_finding(dir, x, report.seed));
      m << "  " << label << ": " << report.files.back() << note << "\n";
      return;
    } catch (const std::exception& e) {
      m << "  cannot be saved in '" << dir << "' (" << label << "): " << e.what() << "\n";
    }
    unsaved = true;
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (!ec) {
      const fs::path fallback = tmp / ("nnfuzz-unsaved-findings-" + std::to_string(static_cast<long>(::getuid())));
      try {
        report.files.push_back(save_finding(fallback.string(), x, report.seed));
        m << "  " << label << " instead: " << report.files.back()
          << " (copy it into regression_dir's findings/ to replay it first)\n";
        return;
      } catch (const std::exception& e) {
        m << "  nor in '" << fallback.string() << "': " << e.what() << "\n";
      }
    }
  };
  auto input_text = [](const Finding& x) {
    std::ostringstream t;
    t.precision(9);
    if constexpr (FuzzerT::kStructured) {
      for (std::size_t p = 0; p < x.value.tokens.size(); ++p) {
        t << (p ? "; " : "") << "part " << p << ":";
        if (!x.value.tokens[p].empty())
          for (TokenId id : x.value.tokens[p]) t << " " << id;
        else
          for (float v : x.value.floats[p]) t << " " << v;
      }
    } else {
      for (Index c = 0; c < x.input.cols(); ++c) t << (c ? " " : "") << x.input(c);
    }
    return t.str();
  };
  if (!dir.empty()) save(f, "saved", " (replayed first by every later run)");
  if constexpr (!FuzzerT::kStructured) {
    if (options.minimize) {
      MinimizeOptions mo;
      mo.confirm_batch_size = fo.batch_size;
      mo.max_executions = std::max<Index>(mo.max_executions, 4 * fo.batch_size);  // room for confirmations
      const RowMatrix& seed_rows = seeds;
      auto model = fuzzer.model();
      auto objective = fuzzer.objective();
      const MinimizeResult mr = minimize(model, objective, seed_rows.row(f.root), f.input, mo);
      report.minimised = mr.input;
      m << "  minimised: L0 " << mr.before.l0 << " -> " << mr.after.l0 << ", L2 " << mr.before.l2 << " -> "
        << mr.after.l2 << ", Linf " << mr.before.linf << " -> " << mr.after.linf << "\n";
      if (!dir.empty()) {
        Finding small = f;
        small.input = mr.input;
        small.what = "minimised: " + f.what;
        save(small, "minimised input", "");
      }
    }
  }
  if constexpr (FuzzerT::kStructured) {
    if (options.minimize && f.root >= 0 && static_cast<std::size_t>(f.root) < seeds.size()) {
      EditMinimizeOptions mo;
      mo.confirm_batch_size = fo.batch_size;
      mo.max_executions = std::max<Index>(mo.max_executions, 4 * fo.batch_size);  // room for confirmations
      auto model = fuzzer.model();
      auto objective = fuzzer.objective();
      const InputValue& root = seeds[static_cast<std::size_t>(f.root)];
      report.minimised_edits = minimize_edits(model, objective, root, f.value, mo);
      const EditMinimizeResult& mr = report.minimised_edits;
      const InputLayout layout = model.input_layout();
      m << "  minimised: " << mr.edits_before << " edit" << (mr.edits_before == 1 ? "" : "s") << " from seed #"
        << f.root << " -> " << mr.edits.size() << (mr.minimal ? "" : " (budget spent before ddmin ended)");
      for (std::size_t i = 0; i < mr.edits.size() && i < 8; ++i) m << (i ? "; " : ": ") << mr.edits[i].describe(layout);
      if (mr.edits.size() > 8) m << "; ...";
      m << "\n";
      if (!dir.empty()) {
        Finding small = f;
        small.value = mr.input;
        small.what = "minimised: " + f.what;
        save(small, "minimised input", "");
      }
    }
  }
  if (unsaved) m << "  input: " << input_text(f) << "\n";
  m << "  replay: fuzzer.replay(nnfuzz::load_finding(\"" << (report.files.empty() ? "<file>" : report.files.front())
    << "\").finding." << (FuzzerT::kStructured ? "value" : "input") << "), or rerun with NNFUZZ_SEED=" << report.seed;
  report.message = m.str();
  return report;
}

/// A candidate of the release report (regression/report.hpp) from a fuzz test of a pair of
/// versions (a model whose Output has `reference` and `candidate` logits: VersionPair,
/// PairTarget), named `name`: `data` is the pair measured over options.gate_rows (empty: over
/// `seeds`), with the gate's verdict when options.gate is active; when the test failed on an
/// input (report.finding), `findings` is that input's metrics, `where` its localisation under
/// options.tolerances (when both versions name their tensors, can_localize()) and `images` its
/// picture's panels: the seed it grew from (seeds.row(finding.root), when in range), the input
/// and report.minimised. Write it with write_regression_report(dir, {candidate}, ReportOptions);
/// with ReportOptions::image and write_png (regression/png.hpp) the picture is drawn. Throws
/// std::invalid_argument when the rows measured or the finding do not have the pair's width.
template <typename Pair>
CandidateReport candidate_report(const std::string& name, Pair& pair, const RowMatrix& seeds,
                                 const FuzzTestReport& report, const FuzzTestOptions& options = {}) {
  using Out = typename std::decay_t<Pair>::Output;
  static_assert(detail::has_reference_candidate<Out>::value,
                "nnfuzz: candidate_report() needs a pair of versions: a model whose Output has RowMatrix members "
                "`reference` and `candidate` (VersionPair, PairTarget)");
  CandidateReport c;
  c.name = name;
  c.data = measure_pair(pair, options.gate_rows.size() > 0 ? options.gate_rows : seeds);
  if (options.gate.active()) {
    c.gated = true;
    c.gate = options.gate.violations(c.data);
  }
  const Finding& f = report.finding;
  if (f.input.size() == 0) return c;
  const RowMatrix found = f.input;
  c.findings = measure_pair(pair, found);
  if constexpr (can_localize<Out>()) c.where = localize_rows(pair, found, options.tolerances);
  if (f.root >= 0 && f.root < seeds.rows() && seeds.cols() == f.input.size())
    c.images.push_back({seeds.row(f.root), f.input, report.minimised});
  return c;
}

namespace detail {
/// fuzz_test() as the glue macros call it: `file` (the caller's __FILE__) fills an empty
/// base_dir with its directory, `test_name` an empty name.
template <typename FuzzerT, typename Seeds>
FuzzTestReport fuzz_test_from(const char* file, const std::string& test_name, FuzzerT& fuzzer, const Seeds& seeds,
                              FuzzTestOptions options = {}) {
  if (options.name.empty()) options.name = test_name;
  if (options.base_dir.empty() && file) options.base_dir = source_dir(file);
  return fuzz_test(fuzzer, seeds, options);
}
}  // namespace detail

}  // namespace nnfuzz
