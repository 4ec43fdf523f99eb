// SPDX-License-Identifier: MIT
// Tests of baselines.hpp (the four named searches) and of FuzzOptions::keep_fitter's automatic
// value: NoCoverage must be random search unless the user asks for the fitness frontier.
#include <catch2/catch.hpp>

#include <nnfuzz/baselines.hpp>

#include "support/planted.hpp"

#include <map>
#include <set>
#include <string>

using namespace nnfuzz;

namespace {

FuzzOptions options(std::uint64_t seed, std::uint64_t executions = 20000) {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.seed = seed;
  return o;
}

// Fitness = the coverage value s itself: higher is closer to the planted NaN band at 0.80.
auto fitness_objective() {
  return with_fitness(NonFiniteObjective(),
                      [](const nnfuzz_test::PlantedModel::Output& out, Index r) { return out.coverage(r, 0); });
}

}  // namespace

TEST_CASE("AutoFlag: automatic until assigned, then what was assigned", "[baselines][options]") {
  AutoFlag f;
  CHECK(f.is_automatic());
  CHECK(f.value_or(true));
  CHECK(!f.value_or(false));
  f = false;
  CHECK(!f.is_automatic());
  CHECK(!f.value_or(true));
  f = true;
  CHECK(f.value_or(false));
  CHECK(f == AutoFlag(true));
  CHECK(f != AutoFlag::automatic());
  CHECK(FuzzOptions().keep_fitter.is_automatic());
}

TEST_CASE("keep_fitter: automatic is off under NoCoverage (random search) and on under a coverage",
          "[baselines][fitness]") {
  // A radius nothing reaches: only the fitness frontier can grow the corpus.
  auto none = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.1f), NoCoverage(),
                          fitness_objective(), options(3));
  CHECK(!none.keeps_fitter());
  const FuzzResult r = none.run(nnfuzz_test::planted_seeds());
  CHECK(r.stats.corpus_size == 4);  // the seeds only: random search
  CHECK(!r.found());

  FuzzOptions on = options(3);
  on.keep_fitter = true;  // fitness only
  none.set_options(on);
  CHECK(none.keeps_fitter());
  const FuzzResult climbed = none.run(nnfuzz_test::planted_seeds());
  CHECK(climbed.stats.corpus_size > 4);
  CHECK(climbed.found());  // hill climbing on the fitness reaches the band

  auto covered = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.1f),
                             BruteForceCoverage(1000.0f), fitness_objective(), options(3));
  CHECK(covered.keeps_fitter());  // automatic: on under a real coverage policy
  FuzzOptions off = options(3);
  off.keep_fitter = false;
  covered.set_options(off);
  CHECK(!covered.keeps_fitter());
  CHECK(covered.run(nnfuzz_test::planted_seeds()).stats.corpus_size == 4);

  // No fitness: nothing to keep, whatever the option says.
  FuzzOptions forced = options(3, 1000);
  forced.keep_fitter = true;
  auto plain = make_fuzzer(nnfuzz_test::PlantedModel{}, RecentSampler(), GaussianMutator(0.1f), NoCoverage(),
                           NonFiniteObjective(), forced);
  CHECK(plain.keeps_fitter() ==
        Fuzzer<nnfuzz_test::PlantedModel, RecentSampler, GaussianMutator, NoCoverage, NonFiniteObjective>::kHasFitness);
}

TEST_CASE("Baseline names: one spelling each, parsed back, unknown names refused", "[baselines]") {
  std::set<std::string> names, labels;
  for (Baseline b : kBaselines) {
    names.insert(baseline_name(b));
    labels.insert(baseline_label(b));
    CHECK(parse_baseline(baseline_name(b)) == b);
  }
  CHECK(names == std::set<std::string>{"random", "fitness", "tensorfuzz", "default"});
  CHECK(labels.size() == 4);
  CHECK_THROWS_WITH(parse_baseline("cgf"), Catch::Contains("parse_baseline()") && Catch::Contains("'cgf'") &&
                                               Catch::Contains("random, fitness, tensorfuzz or default"));
  CHECK(baseline_options(Baseline::random_search, FuzzOptions()).keep_fitter == AutoFlag(false));
  CHECK(baseline_options(Baseline::fitness_only, FuzzOptions()).keep_fitter == AutoFlag(true));
  CHECK(baseline_options(Baseline::tensorfuzz, FuzzOptions()).keep_fitter == AutoFlag(false));
  CHECK(baseline_options(Baseline::defaults, FuzzOptions()).keep_fitter == AutoFlag(true));
}

TEST_CASE("with_baseline: each baseline composes its policies, and a planted bug separates them",
          "[baselines][planted]") {
  // SoftmaxBandModel: a NaN through a probability underflow once the input's mean passes ~0.861,
  // seeds at 0.1. NonFiniteObjective's own fitness (the logit spread) leads there. Fixed seeds
  // and budget; counts over 5 RNG seeds.
  const RowMatrix seeds = RowMatrix::Constant(4, 16, 0.1f);
  BaselineSettings s;
  s.sigma = 0.1f;
  std::map<Baseline, int> found;
  std::map<Baseline, Index> corpus;
  for (std::uint64_t seed = 1; seed <= 5; ++seed)
    for (Baseline b : kBaselines) {
      FuzzOptions o = options(seed, 30000);
      with_baseline(b, nnfuzz_test::SoftmaxBandModel{}, NonFiniteObjective(), s, o, [&](auto& fuzzer) {
        CHECK(fuzzer.keeps_fitter() == (b == Baseline::fitness_only || b == Baseline::defaults));
        const FuzzResult r = fuzzer.run(seeds);
        found[b] += r.found();
        corpus[b] = std::max(corpus[b], r.stats.corpus_size);
        if (b == Baseline::tensorfuzz) CHECK(r.stats.coverage_radius == Approx(radius_from_squared(0.5f)));
        if (b == Baseline::defaults) CHECK(r.stats.coverage_radius > 0);  // calibrated
        if (b == Baseline::fitness_only) {  // past the seeds, each element beat the best fitness before it
          const Corpus& c = fuzzer.corpus();
          for (Index i = 5; i < c.size(); ++i) CHECK(c.entry(i).fitness > c.entry(i - 1).fitness);
        }
      });
    }
  CHECK(found[Baseline::random_search] == 0);
  CHECK(corpus[Baseline::random_search] == 4);  // the corpus never grew: random search
  // Fitness only finds nothing here: NonFiniteObjective's fitness is NaN ("unknown") until a
  // probability falls 2^24 below its tensor's largest (input mean ~0.14), which mutants of the
  // seeds at 0.1 do not reach without a corpus to walk on; the defaults' coverage walks there.
  CHECK(found[Baseline::fitness_only] == 0);
  CHECK(found[Baseline::defaults] == 5);
  // The compile-time form gives the same run as the runtime one.
  auto f = make_baseline_fuzzer<Baseline::defaults>(nnfuzz_test::SoftmaxBandModel{}, NonFiniteObjective(), s,
                                                    options(2, 30000));
  const FuzzResult a = f.run(seeds);
  const FuzzResult b = with_baseline(Baseline::defaults, nnfuzz_test::SoftmaxBandModel{}, NonFiniteObjective(), s,
                                     options(2, 30000), [&](auto& g) { return g.run(seeds); });
  REQUIRE(a.found());
  REQUIRE(b.found());
  CHECK(a.findings[0].execution == b.findings[0].execution);
  CHECK(a.findings[0].input == b.findings[0].input);
}

TEST_CASE("with_baseline: bad settings are refused by the policies, naming the option", "[baselines]") {
  BaselineSettings s;
  s.sigma = -1;
  for (Baseline b : kBaselines)
    CHECK_THROWS_WITH(with_baseline(b, nnfuzz_test::PlantedModel{}, NonFiniteObjective(), s, options(1), [](auto&) {}),
                      Catch::Contains("sigma"));
  s.sigma = 0.1f;
  s.radius = 0;
  CHECK_THROWS_WITH(
      make_baseline_fuzzer<Baseline::tensorfuzz>(nnfuzz_test::PlantedModel{}, NonFiniteObjective(), s, options(1)),
      Catch::Contains("radius"));
}
