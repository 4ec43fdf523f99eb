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
#include "fuzz_test_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace nnfuzz {

namespace detail {
/// "top-1 agreement 0.98 (2 of 100 rows disagree), max |dlogit| 0.5, mean |dlogit| 0.01, KL p50/p99/max
/// 0.001/0.02/0.1, SQNR 35.2 dB".
inline std::string describe_metrics(const RegressionMetrics& m) {
  return message("top-1 agreement ", m.top1_agreement, " (", m.rows - m.agreements, " of ", m.rows,
                 " rows disagree), max |dlogit| ", m.max_abs_logit, ", mean |dlogit| ", m.mean_abs_logit,
                 ", KL p50/p99/max ", m.kl_p50, "/", m.kl_p99, "/", m.kl_max, ", SQNR ", m.sqnr_db, " dB",
                 m.non_finite_rows ? message(", ", m.non_finite_rows, " rows with a non-finite logit") : std::string());
}
/// A model whose outputs are a pair of versions on dense rows (VersionPair, PairTarget): the
/// metric gate and the localisation measure rows, so they exist for these models only (the one
/// test of the input kind after the loop: a pair of structured models has nothing to measure).
template <typename Model>
struct is_dense_pair : std::integral_constant<bool, !has_input_layout<Model>::value &&
                                                        has_reference_candidate<typename Model::Output>::value> {};

/// For a pair of versions: the lines a failure message gets about a finding's input (its
/// metrics, and where the versions part when they name their tensors); sets `first`. Empty for
/// other models.
template <typename Model>
std::string pair_lines(Model& model, const Finding& f, const TensorTolerances& tol, std::string& first) {
  using Out = typename Model::Output;
  std::string s;
  if constexpr (is_dense_pair<Model>::value) {
    const RowMatrix row = f.input;
    s += "  metrics on this input: " + describe_metrics(measure_pair(model, row)) + "\n";
    if constexpr (can_localize<Out>()) {
      const Localization l = localize_rows(model, row, tol).front();
      first = l.first_tensor();
      s += "  " + l.describe() + "\n";
    }
  }
  return s;
}
/// A finding's input as text (its values; "part p:" before each when it has several), for a message that
/// must carry an input no file holds.
inline std::string input_text(const Finding& x) {
  std::ostringstream t;
  t.precision(9);
  const std::vector<FindingPart> parts = input_parts(x);
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (parts.size() > 1) t << (p ? "; " : "") << "part " << p << ":";
    for (std::size_t i = 0; i < parts[p].size; ++i) {
      t << (i || parts.size() > 1 ? " " : "");
      if (parts[p].ids)
        t << parts[p].ids[i];
      else
        t << parts[p].floats[i];
    }
  }
  return t.str();
}
/// What minimisation did, in one line (the overload for the model's input kind).
template <typename Model>
std::string describe_minimised_for(const Model&, const MinimizeResult& r, const Finding& f) {
  return describe_minimised(r, f);
}
template <typename Model>
std::string describe_minimised_for(const Model& m, const EditMinimizeResult& r, const Finding& f) {
  return describe_minimised(r, f, m.input_layout());
}
/// Keeps a minimiser's result in the report's member for it.
inline void keep_minimised(FuzzTestReport& report, const MinimizeResult& r) { report.minimised = r.input; }
inline void keep_minimised(FuzzTestReport& report, const EditMinimizeResult& r) { report.minimised_edits = r; }
/// The seed a finding grew from, when `seeds` holds it.
inline bool has_root(const RowMatrix& seeds, const Finding& f) { return f.root >= 0 && f.root < seeds.rows(); }
inline bool has_root(const std::vector<InputValue>& seeds, const Finding& f) {
  return f.root >= 0 && static_cast<std::size_t>(f.root) < seeds.size();
}
inline Eigen::Ref<const RowVector> root_of(const RowMatrix& seeds, const Finding& f) { return seeds.row(f.root); }
inline const InputValue& root_of(const std::vector<InputValue>& seeds, const Finding& f) {
  return seeds[static_cast<std::size_t>(f.root)];
}
/// A finding's lineage, for messages.
inline std::string lineage(const Finding& f) {
  return message("seed #", f.root, ", ", f.depth, " mutation", f.depth == 1 ? "" : "s", " deep, execution ",
                 f.execution);
}
}  // namespace detail

namespace detail {
/// fuzz_test(), part 1: replays the saved findings in `dir`; true (and `report` filled) when
/// one fires again.
template <typename FuzzerT>
bool replay_regressions(FuzzerT& fuzzer, const std::string& dir, const FuzzTestOptions& options,
                        FuzzTestReport& report) {
  namespace fs = std::filesystem;
  FuzzTestOptions unnamed = options;
  unnamed.name.clear();
  const std::string root = resolve_regression_dir(unnamed);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    fail("fuzz_test(): option 'regression_dir' '", options.regression_dir, "' (", root,
         ") is not a directory (create it: it keeps the findings of earlier runs)");
  for (const SavedFinding& s : load_findings(dir)) {
    ++report.regression_inputs;
    bool fired = false;
    try {
      fired = fuzzer.replay(FuzzerT::Space::finding_input(s.finding));
    } catch (const std::invalid_argument& e) {
      fail("fuzz_test(): regression input '", s.path, "' does not fit this model: ", e.what(),
           options.name.empty() ? " (tests that share a regression_dir need FuzzTestOptions::name, which keeps "
                                  "each test's findings in a directory of its own)"
                                : "");
    }
    if (!fired) continue;
    report.passed = false;
    report.from_regression = true;
    report.finding = s.finding;
    const std::string where = pair_lines(fuzzer.model(), s.finding, options.tolerances, report.first_diverging_tensor);
    report.message =
        message("nnfuzz: a saved regression input fires again: '", s.path, "'\n  first found: ", s.finding.what, "\n",
                where, "  replay: nnfuzz::load_finding(\"", s.path, "\") and fuzzer.replay(...) (no fuzzing was done)");
    return true;
  }
  return false;
}

/// fuzz_test(), part 2: the metric gate over options.gate_rows (or the seeds); true (and
/// `report` filled) when it fails.
template <typename FuzzerT, typename Seeds>
bool gate_fails(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options, FuzzTestReport& report) {
  options.gate.validate();
  using Model = std::decay_t<decltype(fuzzer.model())>;
  if constexpr (is_dense_pair<Model>::value) {
    const RowMatrix& seed_rows = seeds;
    const RowMatrix& rows = options.gate_rows.size() > 0 ? options.gate_rows : seed_rows;
    report.metrics = measure_pair(fuzzer.model(), rows, options.batch_size > 0 ? options.batch_size : Index{256});
    const std::string broken = options.gate.violations(report.metrics);
    if (broken.empty()) return false;
    report.passed = false;
    report.gate_failed = true;
    report.message = message("nnfuzz: the metric gate failed over ", report.metrics.rows, " ",
                             options.gate_rows.size() > 0 ? "gate rows" : "seeds", ": ", broken,
                             "\n  metrics: ", describe_metrics(report.metrics), "\n  (no fuzzing was done)");
    return true;
  } else {
    fail(
        "fuzz_test(): option 'gate' needs a pair of versions on dense inputs: a model whose Output has RowMatrix "
        "members `reference` and `candidate` (VersionPair, PairTarget)");
  }
}

/// fuzz_test(), part 3: saves findings in regression_dir; when a finding cannot be saved there
/// (a read-only file system, no space), in a fallback directory, and the message says why: a
/// finding that fired is never lost behind an I/O error (unsaved() then asks for its values in
/// the message).
class FindingFiles {
 public:
  FindingFiles(std::string dir, std::uint64_t seed, FuzzTestReport& report, std::ostringstream& m)
      : dir_(std::move(dir)), seed_(seed), report_(report), m_(m) {}
  void save(const Finding& x, const char* label, const char* note) {
    namespace fs = std::filesystem;
    try {
      report_.files.push_back(save_finding(dir_, x, seed_));
      m_ << "  " << label << ": " << report_.files.back() << note << "\n";
      return;
    } catch (const std::exception& e) {
      m_ << "  cannot be saved in '" << dir_ << "' (" << label << "): " << e.what() << "\n";
    }
    unsaved_ = true;
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) return;
    const fs::path fallback = tmp / ("nnfuzz-unsaved-findings-" + std::to_string(static_cast<long>(::getuid())));
    try {
      report_.files.push_back(save_finding(fallback.string(), x, seed_));
      m_ << "  " << label << " instead: " << report_.files.back()
         << " (copy it into regression_dir's findings/ to replay it first)\n";
    } catch (const std::exception& e) {
      m_ << "  nor in '" << fallback.string() << "': " << e.what() << "\n";
    }
  }
  bool unsaved() const { return unsaved_; }

 private:
  std::string dir_;
  std::uint64_t seed_;
  FuzzTestReport& report_;
  std::ostringstream& m_;
  bool unsaved_ = false;
};

/// fuzz_test(), part 4: the campaign, with the test's seed and budget and max_findings 1 (the
/// fuzzer's own options come back however this returns: the test's settings must not leak into
/// the caller's later runs).
template <typename FuzzerT, typename Seeds>
FuzzResult run_campaign(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options, std::uint64_t seed,
                        double factor, FuzzOptions& used) {
  struct Restore {
    FuzzerT& f;
    FuzzOptions saved;
    ~Restore() { f.set_options(saved); }
  } restore{fuzzer, fuzzer.options()};
  used = fuzzer.options();
  used.seed = seed;
  used.max_executions = budget_executions(options.max_executions, factor);
  used.max_iterations = 0;
  used.max_seconds = 0;
  used.max_findings = 1;
  if (options.batch_size > 0) used.batch_size = options.batch_size;
  fuzzer.set_options(used);
  return fuzzer.run(seeds);
}

/// fuzz_test(), part 5: the message of a new finding `f` — what fired, the lineage, a pair's
/// metrics, the files, the minimised form (the model's input kind's minimiser), how to replay.
template <typename FuzzerT, typename Seeds>
void report_finding(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options, const std::string& dir,
                    const FuzzResult& r, const FuzzOptions& used, FuzzTestReport& report) {
  const Finding& f = r.findings.front();
  report.passed = false;
  report.finding = f;
  std::ostringstream m;
  m << "nnfuzz: the objective fired: " << f.what << "\n  after " << r.stats.executions << " executions (seed "
    << report.seed << ", budget " << used.max_executions << "), from " << lineage(f) << "\n";
  m << pair_lines(fuzzer.model(), f, options.tolerances, report.first_diverging_tensor);
  FindingFiles files(dir, report.seed, report, m);
  if (!dir.empty()) files.save(f, "saved", " (replayed first by every later run)");
  if (options.minimize && has_root(seeds, f)) {
    MinimizeOptions mo;
    mo.confirm_batch_size = used.batch_size;
    mo.max_executions = std::max<Index>(mo.max_executions, 4 * used.batch_size);  // room for confirmations
    auto objective = fuzzer.objective();  // a copy: the fuzzer's objective keeps its state
    const auto mr = minimize_finding(fuzzer.model(), objective, root_of(seeds, f), f, mo);
    keep_minimised(report, mr);
    m << "  minimised: " << describe_minimised_for(fuzzer.model(), mr, f) << "\n";
    if (!dir.empty()) files.save(minimised_finding(f, mr), "minimised input", "");
  }
  if (files.unsaved()) m << "  input: " << input_text(f) << "\n";
  m << "  replay: fuzzer.replay(nnfuzz::load_finding(\"" << (report.files.empty() ? "<file>" : report.files.front())
    << "\").finding." << FuzzerT::Space::kFindingMember << "), or rerun with NNFUZZ_SEED=" << report.seed;
  report.message = m.str();
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
  FuzzTestReport report;
  report.seed = detail::env_seed(options.seed);
  const double factor = detail::env_budget();
  if (options.max_executions < 1) detail::fail("fuzz_test(): option 'max_executions' must be >= 1, got 0");
  if (options.batch_size < 0) detail::fail("fuzz_test(): option 'batch_size' must be >= 0, got ", options.batch_size);
  const std::string dir = resolve_regression_dir(options);
  report.regression_dir = dir;
  if (!dir.empty() && detail::replay_regressions(fuzzer, dir, options, report)) return report;
  if (options.gate.active() && detail::gate_fails(fuzzer, seeds, options, report)) return report;
  FuzzOptions used;
  const FuzzResult r = detail::run_campaign(fuzzer, seeds, options, report.seed, factor, used);
  report.executions = r.stats.executions;
  if (r.found()) detail::report_finding(fuzzer, seeds, options, dir, r, used, report);
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
