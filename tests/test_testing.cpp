// SPDX-License-Identifier: MIT
// Fuzzing as a unit test (testing.hpp, testing/catch2.hpp): the report, the regression corpus,
// the environment overrides and bad input.
#include <catch2/catch.hpp>
#include <nnfuzz/targets/version_pair.hpp>
#include <nnfuzz/testing/catch2.hpp>

#include "support/child_process.hpp"
#include "support/planted.hpp"
#include "support/temp_dir.hpp"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
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

TEST_CASE("fuzz_test: one seed, one run - NNFUZZ_SEED and NNFUZZ_BUDGET override it", "[testing]") {
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

TEST_CASE("fuzz_test: NNFUZZ_SEED is parsed strictly - a budget out of range or rounding to 0 names the variable",
          "[testing]") {
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto f = fuzzer_for(1);
  FuzzTestOptions o;
  o.max_executions = 1000;
  for (const char* v : {" -5", "+5", " 5", "5 ", "0x10"}) {
    EnvVar seed("NNFUZZ_SEED", v);
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains(std::string("NNFUZZ_SEED='") + v + "'"));
  }
  {
    EnvVar seed("NNFUZZ_SEED", "18446744073709551615");  // the largest seed is a seed
    CHECK(fuzz_test(f, seeds, o).seed == 18446744073709551615ull);
  }
  {
    EnvVar budget("NNFUZZ_BUDGET", "100");
    o.max_executions = 1000000000000000000ull;  // 1e18 x 100 does not fit in 64 bits
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("NNFUZZ_BUDGET='100'") &&
                                                  Catch::Contains("1000000000000000000") &&
                                                  Catch::Contains("'max_executions'"));
    o.max_executions = std::numeric_limits<std::uint64_t>::max();
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("NNFUZZ_BUDGET='100'"));
  }
  {
    EnvVar budget("NNFUZZ_BUDGET", "1e-9");
    o.max_executions = 20000;
    CHECK_THROWS_WITH(fuzz_test(f, seeds, o), Catch::Contains("NNFUZZ_BUDGET='1e-9'") &&
                                                  Catch::Contains("budget of 0 executions") &&
                                                  Catch::Contains("20000"));
  }
}

TEST_CASE("fuzz_test: a finding that cannot be saved (read-only regression_dir) is still reported whole", "[testing]") {
  nnfuzz_test::TempDir tmp("nnfuzz_testing_ro");
  const std::string dir = (tmp.dir / "regressions").string();
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);  // 0755: not writable by the child
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  const std::string got = nnfuzz_test::run_unprivileged([&] {
    auto bad = fuzzer_for(2);
    FuzzTestOptions o;
    o.seed = 3;
    o.regression_dir = dir;
    const FuzzTestReport r = fuzz_test(bad, seeds, o);
    std::string out = r.passed ? "passed\n" : "failed\n";
    for (const auto& file : r.files) out += "file " + file + "\n";
    return out + r.message;
  });
  INFO(got);
  REQUIRE_THAT(got, Catch::StartsWith("failed\n"));
  CHECK_THAT(got, Catch::Contains("the objective fired: non-finite") && Catch::Contains("seed #") &&
                      Catch::Contains("cannot be saved in '" + dir) && Catch::Contains("NNFUZZ_SEED=3") &&
                      Catch::Contains("input:"));
  // The finding went to a fallback directory instead, and replays from there.
  const auto at = got.find("file ");
  REQUIRE(at != std::string::npos);
  const std::string file = got.substr(at + 5, got.find('\n', at) - at - 5);
  CHECK(file.rfind(dir, 0) != 0);
  auto bad = fuzzer_for(2);
  CHECK(bad.replay(load_finding(file).finding.input));
  fs::remove_all(fs::path(file).parent_path().parent_path());
}

TEST_CASE("fuzz_test: a saved regression input that is not finite is refused naming the file, not replayed",
          "[testing]") {
  nnfuzz_test::TempDir tmp("nnfuzz_testing_nan");
  const std::string dir = tmp.dir.string();
  Finding f;
  f.input = RowVector::Constant(16, 0.5f);
  f.what = "x";
  const std::string path = save_finding(dir, f, 1);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&bytes[bytes.size() - 4 - 4 * 16], &nan, 4);  // the first input float
  const std::uint32_t crc = detail::crc32_update(0, bytes.data(), bytes.size() - 4);
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + static_cast<std::size_t>(i)] = static_cast<char>(crc >> (8 * i));
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK_THROWS_WITH(load_finding(path), Catch::Contains(path) && Catch::Contains("non-finite"));
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto f2 = fuzzer_for(1);
  FuzzTestOptions o;
  o.regression_dir = dir;
  o.max_executions = 1000;
  CHECK_THROWS_WITH(fuzz_test(f2, seeds, o), Catch::Contains(path) && Catch::Contains("non-finite"));
}

TEST_CASE("fuzz_test: a relative regression_dir resolves against NNFUZZ_REGRESSION_ROOT or base_dir, never the cwd",
          "[testing]") {
  nnfuzz_test::TempDir tmp("nnfuzz_testing_rel");
  fs::create_directories(tmp.dir / "corpus");
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto good = fuzzer_for(1);
  FuzzTestOptions o;
  o.max_executions = 500;
  o.regression_dir = "corpus";
  // Neither root: refused, saying what to set (the cwd would be the build directory under ctest).
  CHECK_THROWS_WITH(fuzz_test(good, seeds, o), Catch::Contains("'corpus' is relative") &&
                                                   Catch::Contains("NNFUZZ_REGRESSION_ROOT") &&
                                                   Catch::Contains("NNFUZZ_SOURCE_DIR"));
  o.base_dir = tmp.dir.string();
  CHECK(fuzz_test(good, seeds, o).regression_dir == (tmp.dir / "corpus").lexically_normal().string());
  {
    nnfuzz_test::TempDir other("nnfuzz_testing_root");
    fs::create_directories(other.dir / "corpus");
    EnvVar root("NNFUZZ_REGRESSION_ROOT", other.dir.c_str());  // the variable wins over base_dir
    CHECK(fuzz_test(good, seeds, o).regression_dir == (other.dir / "corpus").lexically_normal().string());
  }
  // An absolute directory is itself.
  o.regression_dir = (tmp.dir / "corpus").string();
  o.base_dir = "/elsewhere";
  CHECK(fuzz_test(good, seeds, o).regression_dir == (tmp.dir / "corpus").lexically_normal().string());
  // NNFUZZ_SOURCE_DIR is this file's directory; the glue fills base_dir and name from the test.
  // (A build that passes sources by a relative path, e.g. Meson, gives a relative __FILE__,
  // taken against the working directory: checked only where it resolves.)
  if (!fs::is_directory(fs::path(NNFUZZ_SOURCE_DIR) / "support")) {
    WARN("__FILE__ '" << __FILE__ << "' does not resolve from this working directory: skipped");
    return;
  }
  CHECK(fs::path(NNFUZZ_SOURCE_DIR).is_absolute());
  FuzzTestOptions rel;
  rel.max_executions = 500;
  rel.regression_dir = "support";  // tests/support exists; the good model writes nothing
  const FuzzTestReport r = detail::fuzz_test_from(__FILE__, "my test: v2", good, seeds, rel);
  CHECK(r.passed);
  CHECK(fs::path(r.regression_dir) == (fs::path(NNFUZZ_SOURCE_DIR) / "support" / "my_test__v2").lexically_normal());
  NNFUZZ_CHECK_NO_FINDING(good, seeds, rel);
}

TEST_CASE("fuzz_test: tests sharing a regression_dir keep their findings apart by name", "[testing]") {
  nnfuzz_test::TempDir tmp("nnfuzz_testing_ns");
  const std::string dir = tmp.dir.string();
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  // Another test, on inputs 8 wide, saved a finding in the shared directory under its name.
  Finding other;
  other.input = RowVector::Zero(8);
  other.what = "x";
  save_finding((tmp.dir / "narrow_test").string(), other, 1);
  FuzzTestOptions o;
  o.seed = 3;
  o.regression_dir = dir;
  o.name = "wide test";
  auto bad = fuzzer_for(2);
  const FuzzTestReport r = fuzz_test(bad, seeds, o);
  REQUIRE(!r.passed);
  CHECK(!r.from_regression);
  CHECK(r.regression_dir == (tmp.dir / "wide_test").string());
  REQUIRE(!r.files.empty());
  CHECK_THAT(r.files[0], Catch::StartsWith((tmp.dir / "wide_test" / "findings").string()));
  CHECK(fuzz_test(bad, seeds, o).from_regression);  // its own corpus, replayed first
  // Without names the two corpora mix: the error says how to keep them apart.
  save_finding(dir, other, 1);
  o.name.clear();
  CHECK_THROWS_WITH(fuzz_test(bad, seeds, o),
                    Catch::Contains("does not fit this model") && Catch::Contains("FuzzTestOptions::name"));
}

TEST_CASE("fuzz_test: the fuzzer's own options come back afterwards, also after an error", "[testing]") {
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto f = fuzzer_for(2);
  FuzzOptions mine = f.options();
  mine.seed = 99;
  mine.max_executions = 123456;
  mine.max_seconds = 30;
  mine.max_findings = 7;
  f.set_options(mine);
  FuzzTestOptions o;
  o.seed = 3;
  o.minimize = false;
  auto same = [&](const FuzzOptions& x) {
    return x.seed == 99 && x.max_executions == 123456 && x.max_seconds == 30 && x.max_findings == 7 &&
           x.batch_size == mine.batch_size;
  };
  CHECK(!fuzz_test(f, seeds, o).passed);  // a finding
  CHECK(same(f.options()));
  auto g = fuzzer_for(1);
  g.set_options(mine);
  o.batch_size = 10;
  o.max_executions = 500;
  CHECK(fuzz_test(g, seeds, o).passed);  // no finding
  CHECK(same(g.options()));
  nnfuzz_test::TempDir tmp("nnfuzz_testing_restore");
  Finding other;
  other.input = RowVector::Zero(8);
  other.what = "x";
  save_finding(tmp.dir.string(), other, 1);
  o.regression_dir = tmp.dir.string();
  CHECK_THROWS(fuzz_test(g, seeds, o));  // an error
  CHECK(same(g.options()));
}

TEST_CASE("fuzz_test: NNFUZZ_BUDGET=0.00001 is refused naming the variable and its value", "[testing]") {
  const RowMatrix seeds = nnfuzz_test::planted_seeds();
  auto f = fuzzer_for(1);
  FuzzTestOptions o;  // max_executions 20000 x 0.00001 = 0.2 executions
  EnvVar budget("NNFUZZ_BUDGET", "0.00001");
  try {
    fuzz_test(f, seeds, o);
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::StartsWith("fuzz_test(): environment variable NNFUZZ_BUDGET='0.00001'") &&
                      Catch::Contains("budget of 0 executions"));
    CHECK_THAT(m, !Catch::Contains("max_iterations") && !Catch::Contains("max_seconds"));
  }
}

namespace {
// A user's two-layer model in two versions: "hidden" is the input, "logits" the hidden values
// with class 1 scaled by `gain` — version 2 (gain 1.5) differs in its second layer only.
struct TwoLayer {
  struct Output {
    RowMatrix hidden, logits, coverage;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("hidden", hidden);
      f("logits", logits);
    }
  };
  float gain = 1;
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.hidden = batch;
    out.logits = batch;
    out.logits.col(1) *= gain;
    out.coverage = out.logits;
  }
};
auto pair_fuzzer(float gain) {
  FuzzOptions o;
  o.batch_size = 20;
  return make_fuzzer(VersionPair(TwoLayer{1}, TwoLayer{gain}), RecentSampler(), GaussianMutator(0.2f),
                     BruteForceCoverage(0.01f), DisagreementObjective(), o);
}
}  // namespace

TEST_CASE("fuzz_test: a pair's failure names the first diverging tensor and the metrics", "[testing]") {
  RowMatrix s = RowMatrix::Constant(2, 2, 0.5f);
  s.col(1).setConstant(0.25f);  // class 0 for both versions
  auto f = pair_fuzzer(1.5f);
  FuzzTestOptions o;
  o.minimize = false;
  const FuzzTestReport r = fuzz_test(f, s, o);
  REQUIRE(!r.passed);
  CHECK(r.first_diverging_tensor == "logits");
  CHECK_THAT(r.message, Catch::Contains("metrics on this input: top-1 agreement 0 (1 of 1 rows disagree)") &&
                            Catch::Contains("first diverging tensor: logits") &&
                            Catch::Contains("before it: hidden 0"));
  auto same = pair_fuzzer(1.0f);
  CHECK(fuzz_test(same, s, o).passed);
}

TEST_CASE("fuzz_test: the failing input and its minimised form make a report's candidate", "[testing]") {
  RowMatrix s = RowMatrix::Constant(2, 2, 0.5f);
  s.col(1).setConstant(0.25f);
  nnfuzz_test::TempDir tmp("nnfuzz_candidate_report");
  auto f = pair_fuzzer(1.5f);
  FuzzTestOptions o;
  o.regression_dir = tmp.dir.string();
  o.gate.min_sqnr_db = 1;  // met over the seeds: the report says "passed"
  const FuzzTestReport r = fuzz_test(f, s, o);
  REQUIRE(!r.passed);
  REQUIRE(r.finding.input.size() == 2);
  CHECK(r.minimised.size() == 2);
  auto pair = f.model();
  const CandidateReport c = candidate_report("v2", pair, s, r, o);
  CHECK(c.name == "v2");
  CHECK(c.data.rows == 2);
  CHECK(c.data.top1_agreement == 1);
  CHECK((c.gated && c.gate.empty()));
  CHECK(c.findings.rows == 1);
  CHECK(c.findings.top1_agreement == 0);
  REQUIRE(c.where.size() == 1);
  CHECK(c.where[0].first_tensor() == "logits");
  REQUIRE(c.images.size() == 1);
  CHECK(c.images[0].seed == s.row(r.finding.root));
  CHECK(c.images[0].found == r.finding.input);
  CHECK(c.images[0].minimised == r.minimised);
  // The next run fails from the corpus: the saved input, not minimised again.
  const FuzzTestReport again = fuzz_test(f, s, o);
  REQUIRE(again.from_regression);
  CHECK(again.finding.input == r.finding.input);
  CHECK(again.minimised.size() == 0);
  CHECK(candidate_report("v2", pair, s, again, o).images.at(0).minimised.size() == 0);
  // A test that passed gives the data set's metrics alone.
  auto same = pair_fuzzer(1.0f);
  FuzzTestOptions plain;
  plain.max_executions = 100;
  const FuzzTestReport ok = fuzz_test(same, s, plain);
  REQUIRE(ok.passed);
  auto same_pair = same.model();
  const CandidateReport good = candidate_report("v1", same_pair, s, ok, plain);
  CHECK((good.data.rows == 2 && good.findings.rows == 0 && good.where.empty() && good.images.empty() && !good.gated));
}

TEST_CASE("fuzz_test: the metric gate fails a pair over a data set before fuzzing", "[testing]") {
  RowMatrix s = RowMatrix::Constant(2, 2, 0.5f);
  s.col(1).setConstant(0.25f);
  RowMatrix data(4, 2);
  data << 1, 0, 1, 0.9f, 0.2f, 0.1f, 0.3f, 0.15f;  // row 1 flips under gain 1.5 (0.9 x 1.5 > 1)
  auto f = pair_fuzzer(1.5f);
  FuzzTestOptions o;
  o.gate.min_top1_agreement = 0.99;
  o.gate_rows = data;
  const FuzzTestReport r = fuzz_test(f, s, o);
  REQUIRE(!r.passed);
  CHECK(r.gate_failed);
  CHECK(r.executions == 0);
  CHECK(r.metrics.rows == 4);
  CHECK(r.metrics.agreements == 3);
  CHECK_THAT(r.message,
             Catch::StartsWith("nnfuzz: the metric gate failed over 4 gate rows: top-1 agreement 0.75 < 0.99") &&
                 Catch::Contains("KL p50/p99/max"));
  // The same versions pass a gate they meet, and then fuzz.
  o.gate.min_top1_agreement = 0.7;
  o.gate.min_sqnr_db = 5;
  o.max_executions = 200;
  auto same = pair_fuzzer(1.0f);
  const FuzzTestReport ok = fuzz_test(same, s, o);
  CHECK(ok.passed);
  CHECK(ok.metrics.top1_agreement == 1);
  CHECK(ok.executions >= 200);
  // A gate on a model that is not a pair is refused.
  auto single = fuzzer_for(1);
  CHECK_THROWS_WITH(fuzz_test(single, nnfuzz_test::planted_seeds(), o),
                    Catch::Contains("fuzz_test(): option 'gate' needs a pair of versions"));
}

TEST_CASE("fuzz_test: a structured finding is minimised to the fewest edits from its seed (ddmin)", "[testing]") {
  using nnfuzz_test::PlantedTokenModel;
  FuzzOptions fo;
  fo.batch_size = 16;
  auto f = nnfuzz_test::planted_token_fuzzer(fo);
  const std::vector<InputValue> seeds = nnfuzz_test::planted_token_seeds();
  FuzzTestOptions o;
  o.seed = 4;
  o.max_executions = 20000;
  const FuzzTestReport r = fuzz_test(f, seeds, o);
  INFO(r.message);
  REQUIRE(!r.passed);
  const EditMinimizeResult& m = r.minimised_edits;
  CHECK(m.edits_before > 2);  // the mutants wandered: more edits than the two that matter
  CHECK(m.edits.size() == 2);
  CHECK(m.minimal);
  CHECK(f.replay(m.input));
  CHECK_THAT(r.message, Catch::Contains("minimised: ") && Catch::Contains(" -> 2: tokens: "));
}
