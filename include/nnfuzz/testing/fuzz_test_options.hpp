// SPDX-License-Identifier: MIT
// nnfuzz: what fuzz_test() (testing/fuzz_test.hpp) takes and gives: FuzzTestOptions, the
// regression directory it resolves, FuzzTestReport, and the environment variables that resize
// a test campaign (NNFUZZ_SEED, NNFUZZ_BUDGET).
#pragma once

#include "../detail/config.hpp"
#include "../fuzz_types.hpp"
#include "../minimize_edits.hpp"
#include "../regression/metrics.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
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
}  // namespace detail
}  // namespace nnfuzz
