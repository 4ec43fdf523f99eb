// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include "support/planted.hpp"

using namespace nnfuzz;
using nnfuzz_test::planted_seeds;
using nnfuzz_test::PlantedModel;

namespace {
auto planted(std::uint64_t seed, std::uint64_t executions, Index max_findings) {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.max_findings = max_findings;
  o.seed = seed;
  return make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f),
                     NonFiniteObjective(), o);
}
}  // namespace

TEST_CASE("run_parallel: one worker is exactly Fuzzer::run", "[parallel]") {
  auto f = planted(3, 20000, 0);
  const ParallelFuzzResult p = run_parallel(f, planted_seeds(), 1);
  const FuzzResult r = f.run(planted_seeds());
  REQUIRE(p.workers.size() == 1);
  CHECK(p.stats.executions == r.stats.executions);
  CHECK(p.stats.corpus_size == r.stats.corpus_size);
  REQUIRE(p.findings.size() == r.findings.size());
  for (std::size_t i = 0; i < r.findings.size(); ++i) CHECK(p.findings[i].input == r.findings[i].input);
}

TEST_CASE("run_parallel: budgets split, results reproducible per seed and worker count", "[parallel]") {
  auto f = planted(5, 30001, 0);
  const ParallelFuzzResult a = run_parallel(f, planted_seeds(), 2);
  const ParallelFuzzResult b = run_parallel(f, planted_seeds(), 2);
  REQUIRE(a.workers.size() == 2);
  CHECK(a.workers[0].stats.executions == 15001);
  CHECK(a.workers[1].stats.executions == 15000);
  CHECK(a.stats.executions == 30001);
  REQUIRE(a.findings.size() == b.findings.size());
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    CHECK(a.findings[i].input == b.findings[i].input);
    CHECK(a.findings[i].execution == b.findings[i].execution);
  }
  for (std::size_t i = 1; i < a.findings.size(); ++i) CHECK(a.findings[i - 1].execution <= a.findings[i].execution);
  // The two workers explore differently (different RNG seeds).
  const auto& s0 = a.workers[0].stats;
  const auto& s1 = a.workers[1].stats;
  CHECK((s0.corpus_size != s1.corpus_size || s0.last_new_coverage_execution != s1.last_new_coverage_execution ||
         s0.findings != s1.findings));
}

TEST_CASE("run_parallel: workers find the planted bug - bad arguments and worker errors surface", "[parallel]") {
  auto f = planted(1, 200000, 1);
  const ParallelFuzzResult p = run_parallel(f, planted_seeds(), 2);
  CHECK(p.found());
  CHECK(p.workers[0].found());
  CHECK(p.workers[1].found());
  REQUIRE_THROWS_WITH(run_parallel(f, planted_seeds(), 0),
                      Catch::Contains("run_parallel()") && Catch::Contains("got 0"));
  REQUIRE_THROWS_WITH(run_parallel(f, RowMatrix::Zero(2, 3), 2), Catch::Contains("3 columns"));
}
