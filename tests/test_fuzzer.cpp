// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include "support/planted.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

using namespace nnfuzz;
using nnfuzz_test::planted_seeds;
using nnfuzz_test::PlantedModel;

namespace {
FuzzOptions planted_options(std::uint64_t seed) {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 100000;
  o.seed = seed;
  return o;
}
template <typename Coverage>
auto planted_fuzzer(Coverage cov, std::uint64_t seed) {
  return make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), std::move(cov), NonFiniteObjective(),
                     planted_options(seed));
}
}  // namespace

TEST_CASE("Fuzzer: CGF finds the planted NaN band and random search does not", "[fuzzer]") {
  int cgf_found = 0, random_found = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto cgf = planted_fuzzer(KdTreeCoverage(0.005f), seed);
    const FuzzResult r = cgf.run(planted_seeds());
    if (r.found()) {
      ++cgf_found;
      const Finding& f = r.findings.front();
      CHECK(f.what == "non-finite in 'y'");
      CHECK(f.depth > 10);  // reached by many generations, not one jump
      CHECK(f.input.mean() > 0.8f);
      CHECK(f.input.mean() < 0.83f);
      CHECK(cgf.replay(f.input));
    }
    auto rnd = planted_fuzzer(NoCoverage(), seed);
    const FuzzResult q = rnd.run(planted_seeds());
    random_found += q.found();
    CHECK(q.stats.executions == 100000);
    CHECK(rnd.corpus().size() == 4);  // never grows
  }
  CHECK(cgf_found == 5);
  CHECK(random_found == 0);
}

TEST_CASE("Fuzzer: the same seed gives the same corpus and findings, bit for bit", "[fuzzer]") {
  auto run_once = [](std::uint64_t seed, Corpus& corpus_out) {
    auto f = planted_fuzzer(BruteForceCoverage(0.005f), seed);
    FuzzOptions o = f.options();
    o.max_findings = 0;  // collect all
    o.max_executions = 20000;
    f.set_options(o);
    FuzzResult r = f.run(planted_seeds());
    corpus_out = f.corpus();
    return r;
  };
  Corpus a, b, c;
  const FuzzResult ra = run_once(7, a), rb = run_once(7, b), rc = run_once(8, c);
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 10);
  for (Index i = 0; i < a.size(); ++i) {
    REQUIRE(a.input(i) == b.input(i));
    REQUIRE(a.entry(i).parent == b.entry(i).parent);
    REQUIRE(a.entry(i).execution == b.entry(i).execution);
  }
  REQUIRE(ra.findings.size() == rb.findings.size());
  for (std::size_t i = 0; i < ra.findings.size(); ++i) {
    REQUIRE(ra.findings[i].input == rb.findings[i].input);
    REQUIRE(ra.findings[i].execution == rb.findings[i].execution);
  }
  const bool same = a.size() == c.size() && a.input(a.size() - 1) == c.input(c.size() - 1);
  CHECK_FALSE(same);
}

TEST_CASE("Fuzzer: budgets are met exactly and lineage is recorded", "[fuzzer]") {
  auto f = planted_fuzzer(KdTreeCoverage(0.005f), 3);
  FuzzOptions o = f.options();
  o.max_executions = 1234;  // not a multiple of the batch: the last batch is short
  f.set_options(o);
  const FuzzResult r = f.run(planted_seeds(4));
  CHECK(r.stats.executions == 1234);
  CHECK(r.stats.iterations == (1234 - 4 + 49) / 50);
  CHECK(r.stats.seeds == 4);
  CHECK(r.stats.corpus_size == f.corpus().size());
  const Corpus& c = f.corpus();
  for (Index i = 4; i < c.size(); ++i) {
    const CorpusEntry& e = c.entry(i);
    REQUIRE(e.parent >= 0);
    REQUIRE(e.parent < i);
    REQUIRE(e.depth == c.entry(e.parent).depth + 1);
    REQUIRE(e.root == c.entry(e.parent).root);
    REQUIRE(e.execution > 0);
  }
  o.max_executions = 0;
  o.max_iterations = 7;
  f.set_options(o);
  CHECK(f.run(planted_seeds(4)).stats.iterations == 7);
}

TEST_CASE("Fuzzer: callbacks see events and can stop the run", "[fuzzer]") {
  struct Counter {
    int starts = 0, batches = 0, ends = 0, news = 0;
    void on_start(const FuzzStats&) { ++starts; }
    bool on_batch(const FuzzStats&) { return ++batches >= 10; }
    void on_new_coverage(const FuzzStats&, Index) { ++news; }
    void on_end(const FuzzStats&) { ++ends; }
  } counter;
  auto f = planted_fuzzer(KdTreeCoverage(0.005f), 3);
  const FuzzResult r = f.run(planted_seeds(), counter);
  CHECK(counter.starts == 1);
  CHECK(counter.batches == 10);
  CHECK(counter.ends == 1);
  CHECK(counter.news > 0);
  CHECK(r.stats.iterations == 10);
}

TEST_CASE("Fuzzer: bad seeds and options are rejected with the value named", "[fuzzer]") {
  auto f = planted_fuzzer(KdTreeCoverage(0.005f), 3);
  REQUIRE_THROWS_WITH(f.run(RowMatrix(0, 16)), Catch::Contains("Fuzzer::run()") && Catch::Contains("no seeds"));
  REQUIRE_THROWS_WITH(f.run(RowMatrix::Zero(2, 15)), Catch::Contains("15 columns") && Catch::Contains("takes 16"));
  RowMatrix s = planted_seeds();
  s(2, 3) = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(f.run(s), Catch::Contains("seed 2 element 3 is nan"));
  s(2, 3) = -0.5f;
  REQUIRE_THROWS_WITH(f.run(s), Catch::Contains("seed 2 element 3 is -0.5") && Catch::Contains("domain"));
  FuzzOptions o;
  o.batch_size = 0;
  REQUIRE_THROWS_WITH(f.set_options(o), Catch::Contains("batch_size") && Catch::Contains("got 0"));
  o = FuzzOptions();
  o.max_executions = 0;
  REQUIRE_THROWS_WITH(f.set_options(o), Catch::Contains("no budget"));
}

TEST_CASE("Fuzzer: a model whose coverage has the wrong shape is reported", "[fuzzer]") {
  struct Broken {
    struct Output {
      RowMatrix coverage;
    };
    Index input_dim() const { return 2; }
    void evaluate(const Eigen::Ref<const RowMatrix>&, Output& out) const { out.coverage = RowMatrix::Zero(1, 1); }
  };
  auto f = make_fuzzer(Broken{}, UniformSampler(), GaussianMutator(), NoCoverage(),
                       [](const Broken::Output&, Index) { return false; });
  REQUIRE_THROWS_WITH(f.run(RowMatrix::Zero(3, 2)), Catch::Contains("1 rows for a batch of 3"));
}

TEST_CASE("Fuzzer: a seed that already fails is a depth-0 finding", "[fuzzer]") {
  auto f = planted_fuzzer(NoCoverage(), 1);
  RowMatrix s = planted_seeds(3);
  s.row(1).setConstant(0.815f);
  const FuzzResult r = f.run(s);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].root == 1);
  CHECK(r.findings[0].depth == 0);
  CHECK(r.findings[0].parent == -1);
  CHECK(r.stats.executions == 3);
}

#include "support/alloc_tracker.hpp"

TEST_CASE("Fuzzer: the loop allocates nothing per input", "[fuzzer]") {
  // Random search (the corpus never grows, so corpus chunks cannot be the cause): count heap
  // allocations of a run of 10 batches and of 1000 batches. Per-run set-up allocates; the loop
  // itself must not, so both counts are equal.
  auto count = [](std::uint64_t executions) {
    auto f = planted_fuzzer(NoCoverage(), 1);
    FuzzOptions o = f.options();
    o.max_executions = executions;
    o.max_findings = 0;
    f.set_options(o);
    const RowMatrix seeds = planted_seeds();
    f.run(seeds);  // warm up: buffers sized
    nnfuzz_test::g_alloc_count = 0;
    f.run(seeds);
    return nnfuzz_test::g_alloc_count.load();
  };
  CHECK(count(504) == count(50004));
}

namespace {
// A flaky model: its NaN fires only on every other evaluate() call, so re-evaluation fails.
struct Flaky {
  struct Output {
    RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  int* calls;
  Index input_dim() const { return 2; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage = batch.col(0);
    out.y = RowMatrix::Zero(batch.rows(), 1);
    if ((*calls)++ % 2 == 1) out.y(0, 0) = std::numeric_limits<float>::quiet_NaN();
  }
};
}  // namespace

TEST_CASE("Fuzzer: findings are re-checked - a hit that does not reproduce is dropped and counted", "[fuzzer]") {
  int calls = 0;
  FuzzOptions o;
  o.batch_size = 4;
  o.max_iterations = 10;
  o.max_executions = 0;
  o.max_findings = 0;
  auto f = make_fuzzer(Flaky{&calls}, UniformSampler(), GaussianMutator(), NoCoverage(), NonFiniteObjective(), o);
  const FuzzResult r = f.run(RowMatrix::Constant(1, 2, 0.5f));
  CHECK(r.findings.empty());
  CHECK(r.stats.unconfirmed > 0);
  o.recheck_findings = false;
  f.set_options(o);
  calls = 0;
  CHECK(f.run(RowMatrix::Constant(1, 2, 0.5f)).found());
}

// --- What a new user hit (issue 15): a user's own float* forward, objectives that only set the
// rows they fire on, strided seeds, the default policies, bad samplers and re-entrant runs.
namespace {
// The user's inference code: a plain float* forward over n contiguous row-major inputs.
void user_forward(const float* x, Index n, Index dim, float* mean, float* y) {
  for (Index r = 0; r < n; ++r) {
    float s = 0;
    for (Index c = 0; c < dim; ++c) s += x[r * dim + c];
    s /= static_cast<float>(dim);
    mean[r] = s;
    y[r] = std::sqrt((s - 0.80f) * (s - 0.83f));
  }
}
struct PtrModel {
  struct Output {
    RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage.resize(batch.rows(), 1);
    out.y.resize(batch.rows(), 1);
    user_forward(batch.data(), batch.rows(), 16, out.coverage.data(), out.y.data());
  }
};
// Sets hits(r) only for the rows it fires on, as objectives.hpp documents.
struct SetsOnlyHits {
  template <typename Out>
  void check(const Eigen::Ref<const RowMatrix>& batch, const Out& out, Mask& hits) const {
    for (Index r = 0; r < batch.rows(); ++r)
      if (!std::isfinite(out.y(r, 0))) hits(r) = true;
  }
};
}  // namespace

TEST_CASE("Fuzzer: an objective that only sets its hit rows works through the re-check", "[fuzzer]") {
  FuzzOptions o = planted_options(2);
  o.max_findings = 3;
  auto f = make_fuzzer(PtrModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f), SetsOnlyHits(), o);
  const FuzzResult r = f.run(planted_seeds());
  REQUIRE(r.found());
  CHECK(r.stats.unconfirmed == 0);
  for (const Finding& x : r.findings) CHECK((x.input.mean() > 0.8f && x.input.mean() < 0.83f));
  // The batch-callable shape, through the same path.
  auto lambda = [](const Eigen::Ref<const RowMatrix>& batch, const PtrModel::Output& out, Mask& hits) {
    for (Index row = 0; row < batch.rows(); ++row)
      if (!std::isfinite(out.y(row, 0))) hits(row) = true;
  };
  auto g = make_fuzzer(PtrModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f), lambda, o);
  const FuzzResult q = g.run(planted_seeds());
  REQUIRE(q.found());
  CHECK(q.stats.unconfirmed == 0);
  CHECK(q.findings.front().execution == r.findings.front().execution);
}

TEST_CASE("Fuzzer: an objective that resizes its mask is refused clearly", "[fuzzer]") {
  auto bad = [](const Eigen::Ref<const RowMatrix>&, const PtrModel::Output&, Mask& hits) { hits.resize(1); };
  auto f =
      make_fuzzer(PtrModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f), bad, planted_options(1));
  CHECK_THROWS_WITH(f.run(planted_seeds()), Catch::Contains("resized its 'hits' mask to 1 rows for a batch of 4"));
}

TEST_CASE("Fuzzer: seeds given as a block of a wider matrix reach the model contiguous", "[fuzzer]") {
  RowMatrix wide = RowMatrix::Constant(4, 20, 7.0f);  // columns 16..19 are not part of the input
  wide.leftCols(16) = planted_seeds();
  wide(1, 3) = 0.3f;  // distinct seeds, so a wrong stride would show in their coverage
  wide(2, 5) = 0.5f;
  const RowMatrix packed = wide.leftCols(16);
  FuzzOptions o = planted_options(4);
  o.max_executions = 3000;
  auto a =
      make_fuzzer(PtrModel{}, RecentSampler(), GaussianMutator(0.05f), BruteForceCoverage(0.005f), SetsOnlyHits(), o);
  auto b = a;
  a.run(wide.leftCols(16));
  b.run(packed);
  REQUIRE(a.corpus().size() == b.corpus().size());
  for (Index i = 0; i < a.corpus().size(); ++i) {
    CHECK(a.corpus().input(i) == b.corpus().input(i));
    CHECK(a.corpus().coverage(i) == b.corpus().coverage(i));
  }
  CHECK(a.corpus().coverage(1)(0) == Approx((0.1f * 15 + 0.3f) / 16));
}

TEST_CASE("Fuzzer: the default policies compile and find the planted bug", "[fuzzer]") {
  // Fuzzer<Model>: DefaultSampler, DefaultMutator (sigma 0.1 on [0,1], multi-scale with the
  // objective's fitness), CalibratedCoverage, NonFiniteObjective; and make_fuzzer(model,
  // options) for the same with options.
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    FuzzOptions o = planted_options(seed);
    auto f = make_fuzzer(PtrModel{}, o);
    static_assert(std::is_same<decltype(f), Fuzzer<PtrModel>>::value, "defaults");
    const FuzzResult r = f.run(planted_seeds());
    CHECK(f.coverage().calibrated());
    CHECK(f.coverage().radius() > 0);
    CHECK(r.stats.coverage_radius == f.coverage().radius());
    found += r.found();
  }
  CHECK(found == 5);
  Fuzzer<PtrModel> plain{PtrModel{}};
  CHECK(plain.options().max_executions == 100000);
}

TEST_CASE("Fuzzer: a sampler that picks outside the corpus is refused, not a heap overflow", "[fuzzer]") {
  struct BadSampler {
    Index pick(const Corpus& c, Rng&) const { return c.size(); }
  };
  auto f =
      make_fuzzer(PtrModel{}, BadSampler(), GaussianMutator(0.05f), NoCoverage(), SetsOnlyHits(), planted_options(1));
  CHECK_THROWS_WITH(f.run(planted_seeds()), Catch::Contains("the sampler picked element 4 of a corpus of 4"));
}

TEST_CASE("Fuzzer: run() from one of its own callbacks is refused", "[fuzzer]") {
  auto f = make_fuzzer(PtrModel{}, planted_options(1));
  struct Reenter {
    Fuzzer<PtrModel>* f;
    void on_start(const FuzzStats&) { f->run(planted_seeds()); }
  } cb{&f};
  CHECK_THROWS_WITH(f.run(planted_seeds(), cb), Catch::Contains("already running"));
  // The guard is released: a later run works.
  CHECK_NOTHROW(f.run(planted_seeds()));
}

TEST_CASE("Fuzzer: a batch_size too large to allocate is a clear error", "[fuzzer]") {
  FuzzOptions o = planted_options(1);
  o.batch_size = Index{1} << 40;
  auto f = make_fuzzer(PtrModel{}, o);
  CHECK_THROWS_WITH(f.run(planted_seeds()), Catch::Contains("option 'batch_size' = 1099511627776"));
}

namespace {
// Records every feedback and reset; picks the newest element.
struct RecordingSampler {
  std::vector<BatchFeedback>* log;
  int* resets;
  Index pick(const Corpus& c, Rng&) const { return c.size() - 1; }
  void feedback(const BatchFeedback& fb, const Corpus& c) {
    CHECK(fb.parent >= 0);
    CHECK(fb.parent < c.size());
    if (fb.added > 0) CHECK(fb.first_added + fb.added == c.size());
    log->push_back(fb);
  }
  void reset() { ++*resets; }
};
}  // namespace

TEST_CASE("Fuzzer: samplers and mutators hear each batch's feedback, and reset() at each run", "[fuzzer][feedback]") {
  std::vector<BatchFeedback> log;
  int resets = 0;
  FuzzOptions o;
  o.batch_size = 10;
  o.max_executions = 200;
  o.max_findings = 0;
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, RecordingSampler{&log, &resets}, GaussianMutator(0.05f),
                       KdTreeCoverage(0.01f), NonFiniteObjective(), o);
  const FuzzResult r = f.run(nnfuzz_test::planted_seeds());
  CHECK(resets == 1);
  REQUIRE(log.size() == r.stats.iterations);
  Index added = 0;
  for (const BatchFeedback& fb : log) {
    CHECK(fb.rows == (&fb == &log.back() ? 6 : 10));  // 4 seeds + 19 x 10 + 6 = 200
    CHECK(fb.fitness != nullptr);  // NonFiniteObjective has its own fitness (NaN here: no value near an edge)
    added += fb.added;
  }
  CHECK(added + 4 == r.stats.corpus_size);
  // Children counts follow the lineage.
  const Corpus& c = f.corpus();
  std::vector<std::uint64_t> children(static_cast<std::size_t>(c.size()));
  for (const CorpusEntry& e : c.entries())
    if (e.parent >= 0) ++children[static_cast<std::size_t>(e.parent)];
  for (Index i = 0; i < c.size(); ++i) CHECK(c.entry(i).children == children[static_cast<std::size_t>(i)]);
  f.run(nnfuzz_test::planted_seeds());
  CHECK(resets == 2);
}

TEST_CASE("Fuzzer: a fitness objective records fitness and keeps fitter mutants", "[fuzzer][fitness]") {
  // Fitness = the coverage value s itself (closer to the NaN band at 0.80 means higher). With a
  // coverage radius no mutant can reach, only fitness grows the corpus.
  auto objective = with_fitness(
      NonFiniteObjective(), [](const nnfuzz_test::PlantedModel::Output& out, Index r) { return out.coverage(r, 0); });
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = 20000;
  o.seed = 3;
  auto f = make_fuzzer(nnfuzz_test::PlantedModel{}, FitnessSampler<RecentSampler>(RecentSampler(), 1.0, 1),
                       GaussianMutator(0.1f), BruteForceCoverage(1000.0f), objective, o);
  const FuzzResult r = f.run(nnfuzz_test::planted_seeds());
  CHECK(r.stats.corpus_size > 4);  // every element past the seeds is a fitness improvement
  const Corpus& c = f.corpus();
  for (Index i = 4; i < c.size(); ++i) CHECK(c.entry(i).fitness > c.entry(i - 1).fitness);
  CHECK(r.stats.best_fitness == c.entry(c.size() - 1).fitness);
  CHECK(r.found());  // hill-climbing the fitness reaches the planted band
  // keep_fitter off: nothing grows the corpus, random search around the seeds finds nothing.
  o.keep_fitter = false;
  f.set_options(o);
  const FuzzResult off = f.run(nnfuzz_test::planted_seeds());
  CHECK(off.stats.corpus_size == 4);
  CHECK(!off.found());
}

TEST_CASE("Fuzzer: adaptive policies stay reproducible (one seed, one run)", "[fuzzer][feedback]") {
  FuzzOptions o;
  o.batch_size = 20;
  o.max_executions = 4000;
  o.max_findings = 0;
  o.seed = 9;
  auto make = [&] {
    return make_fuzzer(nnfuzz_test::PlantedModel{}, PowerSampler(),
                       make_bandit_mutator(GaussianMutator(0.02f), GaussianMutator(0.1f), ResetMutator(2)),
                       CalibratedCoverage(), NonFiniteObjective(), o);
  };
  auto a = make();
  auto b = make();
  const FuzzResult ra = a.run(nnfuzz_test::planted_seeds());
  const FuzzResult rb = b.run(nnfuzz_test::planted_seeds());
  const FuzzResult ra2 = a.run(nnfuzz_test::planted_seeds());  // the same fuzzer again: state was reset
  REQUIRE(ra.stats.corpus_size == rb.stats.corpus_size);
  REQUIRE(ra.stats.corpus_size == ra2.stats.corpus_size);
  for (Index i = 0; i < ra.stats.corpus_size; ++i) {
    CHECK(a.corpus().input(i) == b.corpus().input(i));
    CHECK(a.corpus().entry(i).parent == b.corpus().entry(i).parent);
  }
  CHECK(a.mutator().batches() == b.mutator().batches());
}

TEST_CASE("Fuzzer: a copy taken inside a callback is not running - it runs later", "[fuzzer]") {
  auto f = make_fuzzer(PtrModel{}, planted_options(1));
  using F = decltype(f);
  struct Snapshot {
    F* f;
    std::vector<F>* copies;
    void on_start(const FuzzStats&) {
      copies->push_back(*f);  // copy-constructed mid-run
      copies->push_back(make_fuzzer(PtrModel{}, planted_options(2)));
      copies->back() = *f;  // copy-assigned mid-run
    }
  };
  std::vector<F> copies;
  copies.reserve(2);
  f.run(planted_seeds(), Snapshot{&f, &copies});
  REQUIRE(copies.size() == 2);
  for (auto& c : copies) CHECK_NOTHROW(c.run(planted_seeds()));
  // The original is released too.
  CHECK_NOTHROW(f.run(planted_seeds()));
}

TEST_CASE("Fuzzer: the defaults follow the objective's fitness and the model's declared shape", "[fuzzer][defaults]") {
  FuzzOptions o = planted_options(3);
  o.max_executions = 2000;
  o.max_findings = 1;
  // An Output with for_each_tensor: NonFiniteObjective has a fitness there, so the defaults use
  // it: the noise is multi-scale, and every corpus element records its fitness — known once a
  // probability is far below its row's largest (SoftmaxBandModel), "unknown" (NaN) where every
  // value is ordinary (PlantedModel).
  auto f = make_fuzzer(nnfuzz_test::SoftmaxBandModel{}, o);
  static_assert(decltype(f)::kHasFitness, "NonFiniteObjective's fitness");
  f.run(RowMatrix::Constant(4, 16, 0.3f));
  CHECK(f.mutator().mode() == DefaultMutator::Mode::multiscale_noise);
  for (Index i = 0; i < f.corpus().size(); ++i) CHECK(f.corpus().entry(i).fitness <= 0.0f);  // 0: fired
  auto p = make_fuzzer(PlantedModel{}, o);
  p.run(planted_seeds());
  CHECK(std::isnan(p.corpus().entry(0).fitness));
  // A model that declares an image shape gets Square patches too.
  auto forward = [](const float* in, Index rows, float* out) {
    for (Index r = 0; r < rows; ++r) out[r] = in[r * 16] - 0.5f;
  };
  FunctionModel<decltype(forward)> image(forward, 16, 1);
  image.set_input_shape({1, 4, 4});
  auto g = make_fuzzer(image, o);
  g.run(planted_seeds());
  CHECK(g.mutator().mode() == DefaultMutator::Mode::square_or_noise);
  CHECK_THROWS_WITH(image.set_input_shape({1, 4, 5}),
                    Catch::Contains("FunctionModel::set_input_shape()") && Catch::Contains("20"));
  // An objective without a fitness: today's defaults, draw for draw (RecentSampler, Gaussian σ 0.1).
  const auto no_fitness = [](const PlantedModel::Output& out, Index r) { return !(out.y(r, 0) == out.y(r, 0)); };
  auto h = make_fuzzer(PlantedModel{}, o).with_objective(no_fitness);
  static_assert(!decltype(h)::kHasFitness, "a callable has no fitness");
  auto old = make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(), CalibratedCoverage(), no_fitness, o);
  const FuzzResult rh = h.run(planted_seeds()), ro = old.run(planted_seeds());
  CHECK(h.mutator().mode() == DefaultMutator::Mode::noise);
  REQUIRE(h.corpus().size() == old.corpus().size());
  for (Index i = 0; i < h.corpus().size(); ++i) CHECK(h.corpus().input(i) == old.corpus().input(i));
  CHECK(rh.stats.executions == ro.stats.executions);
}

TEST_CASE("Fuzzer: the defaults follow NonFiniteObjective's fitness to an underflow faster than TensorFuzz's set-up",
          "[fuzzer][defaults]") {
  // Fixed seeds and budget: the median executions to the NaN over 10 seeds, the defaults against
  // TensorFuzz's set-up (RecentSampler, GaussianMutator, no fitter mutants kept); random search
  // (the defaults without coverage or fitness picks) never gets there.
  std::vector<double> now, before;
  int random_found = 0;
  const RowMatrix seeds = RowMatrix::Constant(4, 16, 0.1f);
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    FuzzOptions o = planted_options(seed);
    o.max_findings = 1;
    const FuzzResult a = make_fuzzer(nnfuzz_test::SoftmaxBandModel{}, o).run(seeds);
    FuzzOptions tf = o;
    tf.keep_fitter = false;
    const FuzzResult b = make_fuzzer(nnfuzz_test::SoftmaxBandModel{}, RecentSampler(), GaussianMutator(),
                                     CalibratedCoverage(), NonFiniteObjective(), tf)
                             .run(seeds);
    random_found += make_fuzzer(nnfuzz_test::SoftmaxBandModel{}, o)
                        .with_coverage(NoCoverage())
                        .with_sampler(RecentSampler())
                        .run(seeds)
                        .found();
    REQUIRE(a.found());
    CHECK(a.findings[0].fired == "cross_entropy");
    CHECK(a.stats.best_fitness > -10.0f);  // the fitness climbed to the edge
    now.push_back(static_cast<double>(a.findings[0].execution));
    before.push_back(b.found() ? static_cast<double>(b.findings[0].execution) : 1e9);
  }
  std::sort(now.begin(), now.end());
  std::sort(before.begin(), before.end());
  const double m_now = (now[4] + now[5]) / 2, m_before = (before[4] + before[5]) / 2;
  INFO("median executions: defaults " << m_now << ", TensorFuzz's set-up " << m_before);
  CHECK(m_now < m_before);
  CHECK(random_found == 0);
}
