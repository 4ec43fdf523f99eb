// SPDX-License-Identifier: MIT
// Fuzzing as a unit test (testing.hpp, testing/catch2.hpp): the report, the regression corpus,
// the environment overrides and bad input.
#include <catch2/catch.hpp>
#include <nnfuzz/testing/catch2.hpp>

#include "support/planted.hpp"
#include "support/temp_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace nnfuzz;
using nnfuzz_test::PlantedModel;
namespace fs = std::filesystem;

namespace {
// Version 1 of a model: its NaN band sits far from anything a short campaign reaches. Version 2
// (the planted regression) moves it next to the seeds.
PlantedModel version(int v) {
  PlantedModel m;
  if (v == 1)
    m.lo = 5.0f, m.hi = 5.1f;
  else
    m.lo = 0.13f, m.hi = 0.16f;
  return m;
}
auto fuzzer_for(int v) {
  FuzzOptions o;
  o.batch_size = 50;
  return make_fuzzer(version(v), RecentSampler(), GaussianMutator(0.05f), BruteForceCoverage(0.002f),
                     NonFiniteObjective(), o);
}
struct EnvVar {  // sets a variable for one scope
  const char* name;
  EnvVar(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~EnvVar() { ::unsetenv(name); }
};
}  // namespace

TEST_CASE("fuzz_test: passes on the good version, fails on the planted regression with a useful message", "[testing]") {
  nnfuzz_test::TempDir tmp("nnfuzz_testing");
  const std::string dir = tmp.dir.string();
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  FuzzTestOptions o;
  o.seed = 3;
  o.max_executions = 20000;
  o.regression_dir = dir;
  auto good = fuzzer_for(1);
  NNFUZZ_REQUIRE_NO_FINDING(good, seeds, o);
  const FuzzTestReport ok = fuzz_test(good, seeds, o);
  CHECK(ok.passed);
  CHECK(ok.executions >= 20000);
  CHECK(ok.message.empty());

  auto bad = fuzzer_for(2);
  const FuzzTestReport r = fuzz_test(bad, seeds, o);
  REQUIRE(!r.passed);
  CHECK(!r.from_regression);
  REQUIRE(r.files.size() == 2);  // the finding and its minimised form
  for (const auto& f : r.files) CHECK(fs::exists(f));
  CHECK_THAT(r.message, Catch::Contains("the objective fired: non-finite") && Catch::Contains("seed #") &&
                            Catch::Contains("saved: " + r.files[0]) && Catch::Contains("minimised: L0") &&
                            Catch::Contains("NNFUZZ_SEED=3") && Catch::Contains("fuzzer.replay("));
  // The saved input replays as the message says.
  CHECK(bad.replay(load_finding(r.files[0]).finding.input));
  CHECK(bad.replay(load_finding(r.files[1]).finding.input));

  // The next run replays the regression corpus first: it fails at once, without fuzzing.
  const FuzzTestReport again = fuzz_test(bad, seeds, o);
  CHECK(!again.passed);
  CHECK(again.from_regression);
  CHECK(again.executions == 0);
  CHECK(again.regression_inputs >= 1);
  CHECK_THAT(again.message, Catch::Contains("a saved regression input fires again") && Catch::Contains(dir));
  // The fixed version replays the saved inputs without firing, then fuzzes and passes.
  const FuzzTestReport fixed = fuzz_test(good, seeds, o);
  CHECK(fixed.passed);
  CHECK(fixed.regression_inputs == 2);
}

TEST_CASE("fuzz_test: one seed, one run; NNFUZZ_SEED and NNFUZZ_BUDGET override it", "[testing]") {
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  FuzzTestOptions o;
  o.max_executions = 5000;
  auto f = fuzzer_for(1);
  CHECK(fuzz_test(f, seeds, o).seed == 1);
  {
    EnvVar seed("NNFUZZ_SEED", "42"), budget("NNFUZZ_BUDGET", "3");
    const FuzzTestReport r = fuzz_test(f, seeds, o);
    CHECK(r.seed == 42);
    CHECK(r.executions >= 15000);
    CHECK(r.executions < 16000);
  }
  {
    EnvVar seed("NNFUZZ_SEED", "forty-two");
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("NNFUZZ_SEED='forty-two'"));
  }
  {
    EnvVar budget("NNFUZZ_BUDGET", "-1");
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("NNFUZZ_BUDGET='-1'"));
  }
}

TEST_CASE("fuzz_test: a missing regression directory or a corrupt regression file is a clear error", "[testing]") {
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto f = fuzzer_for(1);
  FuzzTestOptions o;
  o.regression_dir = "/nonexistent/nnfuzz-regressions";
  CHECK_THROWS_WITH(fuzz_test(f, seeds, o),
                    Catch::Contains("'regression_dir'") && Catch::Contains("/nonexistent/nnfuzz-regressions"));
  nnfuzz_test::TempDir tmp("nnfuzz_testing_bad");
  const std::string dir = tmp.dir.string();
  o.regression_dir = dir;
  o.max_executions = 1000;
  CHECK(fuzz_test(f, seeds, o).regression_inputs == 0);  // an empty corpus: nothing to replay yet
  fs::create_directories(fs::path(dir) / "findings");
  const std::string bad = (fs::path(dir) / "findings" / "finding-1-1-0.bin").string();
  std::ofstream(bad, std::ios::binary) << "not a finding";
  CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains(bad));
  // A regression input of another width (another model's corpus).
  fs::remove(bad);
  Finding other;
  other.input = RowVector::Zero(8);
  other.what = "x";
  save_finding(dir, other, 1);
  CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("does not fit this model") && Catch::Contains("8"));
}
