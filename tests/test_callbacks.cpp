// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include "support/planted.hpp"

#include <regex>
#include <sstream>

using namespace nnfuzz;

TEST_CASE("ProgressPrinter writes libFuzzer-style status lines", "[callbacks]") {
  std::ostringstream os;
  FuzzOptions o;
  o.batch_size = 50;
  o.seed = 1;
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f),
                       NonFiniteObjective(), o);
  ProgressPrinter p(os, 0.0, 0.0);
  const FuzzResult r = f.run(nnfuzz_test::planted_seeds(), p);
  REQUIRE(r.found());
  const std::string s = os.str();
  // Four identical seeds: four corpus elements, one coverage vector.
  CHECK(std::regex_search(s, std::regex("#4\tINITED cov: 1 corp: 4 finds: 0 exec/s: ")));
  CHECK(std::regex_search(s, std::regex("#[0-9]+\tNEW    cov: [0-9]+ corp: [0-9]+ finds: 0 exec/s: [0-9.]+[kM]?\n")));
  CHECK(std::regex_search(s, std::regex("FOUND .*finds: 1.*\n    non-finite in 'y' \\(seed [0-3], depth [0-9]+")));
  CHECK(std::regex_search(s, std::regex("#[0-9]+\tDONE ")));
}

TEST_CASE("ProgressPrinter::budget() adds a progress bar against the budget", "[callbacks]") {
  std::ostringstream os;
  FuzzOptions o;
  o.batch_size = 100;
  o.max_executions = 2000;
  o.max_findings = 0;
  o.seed = 3;
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), NoCoverage(),
                       NonFiniteObjective(), o);
  ProgressPrinter p(os, 0.0, 0.0);
  p.budget(4000, 0);  // twice the run's executions: the run ends half-way through the bar
  f.run(nnfuzz_test::planted_seeds(), p);
  const std::string s = os.str();
  CHECK(std::regex_search(s, std::regex("#4\tINITED cov: 0 corp: 4 finds: 0 exec/s: [0-9.]+[kM]? \\[\\.{20}\\] 0%\n")));
  // The DONE line: 2,000 executions (the seeds count, as in max_executions) of 4,000: half the bar.
  INFO(s);
  CHECK(std::regex_search(s, std::regex("#2000\tDONE .* \\[#{10}\\.{10}\\] 50%\n")));
  // The seconds' share counts when it is the larger one: one hour of a 1 s budget is 100%.
  std::ostringstream os2;
  ProgressPrinter q(os2, 0.0, 0.0);
  q.budget(0, 1.0);
  FuzzStats st;
  st.executions = 10;
  st.seconds = 3600;
  q.on_end(st);
  CHECK(std::regex_search(os2.str(), std::regex("\\[#{20}\\] 100%\n")));
  CHECK_THROWS_WITH(q.budget(0, -1.0), Catch::Contains("ProgressPrinter::budget(): option 'seconds'"));
}

TEST_CASE("CsvLogger and StopOnPlateau", "[callbacks]") {
  std::ostringstream os;
  FuzzOptions o;
  o.batch_size = 20;
  o.max_executions = 1000000;
  o.seed = 2;
  // A coarse threshold: the corpus saturates quickly, then the plateau stops the run.
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, UniformSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.2f),
                       NonFiniteObjective(), o);
  CsvLogger log(os);
  StopOnPlateau plateau(5000);
  const FuzzResult r = f.run(nnfuzz_test::planted_seeds(), log, plateau);
  CHECK(r.stats.executions < 1000000);
  CHECK(r.stats.executions - r.stats.last_new_coverage_execution >= 5000);
  std::istringstream in(os.str());
  std::string line;
  std::getline(in, line);
  CHECK(line == "executions,corpus_size,findings");
  long last_exec = -1, rows = 0;
  while (std::getline(in, line)) {
    long e = 0, c = 0, k = 0;
    REQUIRE(std::sscanf(line.c_str(), "%ld,%ld,%ld", &e, &c, &k) == 3);
    CHECK(e >= last_exec);
    last_exec = e;
    ++rows;
  }
  CHECK(rows >= 2);
  CHECK(last_exec == long(r.stats.executions));
}

TEST_CASE("ProgressPrinter prints the radius CalibratedCoverage chose", "[callbacks]") {
  std::ostringstream os;
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 2000;
  o.seed = 3;
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), CalibratedCoverage(),
                       NonFiniteObjective(), o);
  ProgressPrinter p(os, 0.0, 0.0);
  f.run(nnfuzz_test::planted_seeds(), p);
  REQUIRE(f.coverage().calibrated());
  std::ostringstream expected;
  expected << "radius: " << f.coverage().radius() << " (chosen by the coverage policy)";
  CHECK(os.str().find(expected.str()) != std::string::npos);
}
