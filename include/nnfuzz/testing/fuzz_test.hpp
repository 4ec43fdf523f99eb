// SPDX-License-Identifier: MIT
// nnfuzz: fuzzing as a unit test — a deterministic, bounded campaign with a regression corpus,
// whose failure message says what fired, where it came from, and how to replay it.
//
//     auto fuzzer = nnfuzz::make_fuzzer(MyModel{}, options);
//     const nnfuzz::FuzzTestReport r = nnfuzz::fuzz_test(fuzzer, seeds, {.regression_dir = "tests/regressions"});
//     REQUIRE(r.passed);  // Catch2: INFO(r.message) first; GoogleTest: EXPECT_TRUE(r.passed) << r.message
//
// or, with the glue headers, NNFUZZ_REQUIRE_NO_FINDING (testing_catch2.hpp) and
// EXPECT_TRUE(nnfuzz::finds_nothing(...)) (testing_gtest.hpp).
#pragma once

#include "../detail/config.hpp"
#include "../fuzzer.hpp"
#include "../campaign/saver.hpp"
#include "../minimize.hpp"

#include <cerrno>
#include <cstdlib>
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
  /// Minimise a new dense finding towards its root seed (minimize.hpp) and report its size.
  bool minimize = true;
};

/// The outcome of fuzz_test(): passed, or a message a test framework prints.
struct FuzzTestReport {
  bool passed = true;              ///< no finding, in the regression corpus or by fuzzing
  std::string message;             ///< what fired, its lineage, the files, how to replay (empty if passed)
  bool from_regression = false;    ///< the failure came from a saved regression input
  std::uint64_t seed = 0;          ///< the seed used (after NNFUZZ_SEED)
  std::uint64_t executions = 0;    ///< fuzzing executions (0 when a regression input fired)
  Index regression_inputs = 0;     ///< saved inputs replayed first
  std::vector<std::string> files;  ///< files written: the finding, then its minimised form
  /// True when passed (so `EXPECT_TRUE(report)` reads naturally).
  explicit operator bool() const { return passed; }
};

namespace detail {
/// NNFUZZ_SEED as an unsigned integer, or `def` when it is unset or empty.
inline std::uint64_t env_seed(std::uint64_t def) {
  const char* v = std::getenv("NNFUZZ_SEED");
  if (!v || !*v) return def;
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || v[0] == '-')
    fail("fuzz_test(): environment variable NNFUZZ_SEED='", v, "' is not an unsigned integer");
  return static_cast<std::uint64_t>(x);
}
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
inline std::string lineage(const Finding& f) {
  return message("seed #", f.root, ", ", f.depth, " mutation", f.depth == 1 ? "" : "s", " deep, execution ",
                 f.execution);
}
}  // namespace detail

/// Runs a unit-test campaign with `fuzzer` (its policies and options; the seed, budget and
/// max_findings = 1 are set from `options`) from `seeds` (a RowMatrix, or a vector of InputValue
/// for structured models):
///  1. every input of options.regression_dir is replayed (Fuzzer::replay); the first that fires
///     fails the test, naming the file — no fuzzing happens;
///  2. then the campaign runs; a finding fails the test: it is saved to regression_dir (if set),
///     minimised (dense inputs), and the message gives what fired, the lineage, the files and the
///     code that replays it.
/// Throws std::invalid_argument for a regression_dir that does not exist or is not a directory,
/// a corrupt regression file (naming it), a regression input of another shape, or a bad
/// NNFUZZ_SEED / NNFUZZ_BUDGET.
template <typename FuzzerT, typename Seeds>
FuzzTestReport fuzz_test(FuzzerT& fuzzer, const Seeds& seeds, const FuzzTestOptions& options = {}) {
  namespace fs = std::filesystem;
  FuzzTestReport report;
  report.seed = detail::env_seed(options.seed);
  const double factor = detail::env_budget();
  if (options.max_executions < 1) detail::fail("fuzz_test(): option 'max_executions' must be >= 1, got 0");
  if (options.batch_size < 0) detail::fail("fuzz_test(): option 'batch_size' must be >= 0, got ", options.batch_size);
  const std::string& dir = options.regression_dir;
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      detail::fail("fuzz_test(): option 'regression_dir' '", dir,
                   "' is not a directory (create it: it keeps the findings of earlier runs)");
    for (const SavedFinding& s : load_findings(dir)) {
      ++report.regression_inputs;
      bool fired = false;
      try {
        if constexpr (FuzzerT::kStructured)
          fired = fuzzer.replay(s.finding.value);
        else
          fired = fuzzer.replay(s.finding.input);
      } catch (const std::invalid_argument& e) {
        detail::fail("fuzz_test(): regression input '", s.path, "' does not fit this model: ", e.what());
      }
      if (fired) {
        report.passed = false;
        report.from_regression = true;
        report.message = detail::message("nnfuzz: a saved regression input fires again: '", s.path,
                                         "'\n  first found: ", s.finding.what, "\n  replay: nnfuzz::load_finding(\"",
                                         s.path, "\") and fuzzer.replay(...) (no fuzzing was done)");
        return report;
      }
    }
  }
  FuzzOptions fo = fuzzer.options();
  fo.seed = report.seed;
  fo.max_executions = static_cast<std::uint64_t>(static_cast<double>(options.max_executions) * factor);
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
  std::ostringstream m;
  m << "nnfuzz: the objective fired: " << f.what << "\n  after " << r.stats.executions << " executions (seed "
    << report.seed << ", budget " << fo.max_executions << "), from " << detail::lineage(f) << "\n";
  if (!dir.empty()) {
    report.files.push_back(save_finding(dir, f, report.seed));
    m << "  saved: " << report.files.back() << " (replayed first by every later run)\n";
  }
  if constexpr (!FuzzerT::kStructured) {
    if (options.minimize) {
      MinimizeOptions mo;
      mo.confirm_batch_size = fo.batch_size;
      const RowMatrix& seed_rows = seeds;
      auto model = fuzzer.model();
      auto objective = fuzzer.objective();
      const MinimizeResult mr = minimize(model, objective, seed_rows.row(f.root), f.input, mo);
      m << "  minimised: L0 " << mr.before.l0 << " -> " << mr.after.l0 << ", L2 " << mr.before.l2 << " -> "
        << mr.after.l2 << ", Linf " << mr.before.linf << " -> " << mr.after.linf << "\n";
      if (!dir.empty()) {
        Finding small = f;
        small.input = mr.input;
        small.what = "minimised: " + f.what;
        report.files.push_back(save_finding(dir, small, report.seed));
        m << "  minimised input: " << report.files.back() << "\n";
      }
    }
  }
  m << "  replay: fuzzer.replay(nnfuzz::load_finding(\"" << (report.files.empty() ? "<file>" : report.files.front())
    << "\").finding." << (FuzzerT::kStructured ? "value" : "input") << "), or rerun with NNFUZZ_SEED=" << report.seed;
  report.message = m.str();
  return report;
}

}  // namespace nnfuzz
