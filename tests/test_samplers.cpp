// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/samplers.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace nnfuzz;

namespace {
Corpus corpus_of(Index n) {
  Corpus c(1, 1);
  for (Index i = 0; i < n; ++i) {
    const float v = float(i);
    c.add(&v, &v, -1, i, 0, 0);
  }
  return c;
}
// Pearson chi-square of observed counts against expected probabilities.
double chi2(const std::vector<long>& counts, const std::vector<double>& p, long n) {
  double x = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double e = p[i] * n;
    if (e > 0) x += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x;
}
template <typename S>
std::vector<long> histogram(S& s, const Corpus& c, long n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<long> h(static_cast<std::size_t>(c.size()));
  for (long i = 0; i < n; ++i) {
    const Index k = s.pick(c, rng);
    REQUIRE(k >= 0);
    REQUIRE(k < c.size());
    ++h[static_cast<std::size_t>(k)];
  }
  return h;
}
}  // namespace

TEST_CASE("UniformSampler: every element equally likely", "[samplers]") {
  const Corpus c = corpus_of(20);
  UniformSampler s;
  const long n = 200000;
  const auto h = histogram(s, c, n, 1);
  CHECK(chi2(h, std::vector<double>(20, 1.0 / 20), n) < 43.8);  // 19 dof, p = 0.001
}

TEST_CASE("RecentSampler: TensorFuzz's rule, 5 newest + 1 random", "[samplers]") {
  const Index size = 20;
  const Corpus c = corpus_of(size);
  RecentSampler s;
  const long n = 300000;
  const auto h = histogram(s, c, n, 2);
  // P(k) = 1/6 * [k among the 5 newest] + 1/6 * 1/20.
  std::vector<double> p(size);
  for (Index k = 0; k < size; ++k) p[k] = (k >= size - 5 ? 1.0 / 6 : 0.0) + 1.0 / 6 / size;
  CHECK(chi2(h, p, n) < 43.8);
  // A corpus smaller than the window: uniform over newest-and-random reservoir still valid.
  const Corpus small = corpus_of(2);
  const auto hs = histogram(s, small, 30000, 3);
  CHECK(chi2(hs, {0.5, 0.5}, 30000) < 10.8);
  REQUIRE_THROWS_WITH(RecentSampler(0), Catch::Contains("RecentSampler()") && Catch::Contains("got 0"));
}

TEST_CASE("ExponentialRecencySampler: p_k proportional to exp((k - n + 1) / scale)", "[samplers]") {
  const Index size = 30;
  const Corpus c = corpus_of(size);
  for (double scale : {1.0, 4.0, 50.0}) {
    ExponentialRecencySampler s(scale);
    const long n = 200000;
    const auto h = histogram(s, c, n, 4);
    std::vector<double> p(size);
    double z = 0;
    for (Index k = 0; k < size; ++k) z += p[k] = std::exp((k - size + 1) / scale);
    for (auto& v : p) v /= z;
    // Pool the tail bins with tiny expectations so chi-square stays valid.
    std::vector<long> hp;
    std::vector<double> pp;
    long acc = 0;
    double pacc = 0;
    for (Index k = 0; k < size; ++k) {
      acc += h[k];
      pacc += p[k];
      if (pacc * n >= 20) {
        hp.push_back(acc);
        pp.push_back(pacc);
        acc = 0;
        pacc = 0;
      }
    }
    if (pacc > 0) {
      hp.back() += acc;
      pp.back() += pacc;
    }
    INFO("scale " << scale << " bins " << hp.size());
    CHECK(chi2(hp, pp, n) < 60);  // <= 29 dof, p < 0.001
  }
  REQUIRE_THROWS_WITH(ExponentialRecencySampler(-1), Catch::Contains("scale") && Catch::Contains("-1"));
}

TEST_CASE("ProbabilisticSampler: DeepHunter's 1 - f/gamma, floored at p_min", "[samplers][schedules]") {
  Corpus c = corpus_of(4);
  // Picked 0, 10, 19 and 40 times: P = 1, 0.5, 0.05, p_min 0.01 (gamma 20).
  const std::uint64_t picks[] = {0, 10, 19, 40};
  for (Index i = 0; i < 4; ++i) c.set_times_picked(i, picks[i]);
  ProbabilisticSampler s(20, 0.01);
  CHECK(s.probability(0) == 1.0);
  CHECK(s.probability(10) == Approx(0.5));
  CHECK(s.probability(19) == Approx(0.05));
  CHECK(s.probability(40) == 0.01);
  const long n = 200000;
  const auto h = histogram(s, c, n, 3);
  const double total = 1 + 0.5 + 0.05 + 0.01;
  CHECK(chi2(h, {1 / total, 0.5 / total, 0.05 / total, 0.01 / total}, n) < 16.3);  // 3 dof, p = 0.001
  CHECK_THROWS_WITH(ProbabilisticSampler(0), Catch::Contains("'gamma'"));
  CHECK_THROWS_WITH(ProbabilisticSampler(20, 0), Catch::Contains("'p_min'"));
}

TEST_CASE("PowerSampler: energy (1 + children) / (1 + picks), updated from feedback", "[samplers][schedules]") {
  Corpus c(1, 1);
  const float v = 0;
  for (int i = 0; i < 3; ++i) c.add(&v, &v, -1, i, 0, 0);
  PowerSampler s;
  Rng rng(4);
  (void)s.pick(c, rng);  // takes in the three seeds, energy 1 each
  // Element 1 is picked once and produces two children (ids 3, 4).
  c.mark_picked(1);
  c.add(&v, &v, 1, 1, 1, 10);
  c.add(&v, &v, 1, 1, 1, 10);
  CHECK(c.entry(1).children == 2);
  BatchFeedback fb;
  fb.parent = 1;
  fb.rows = 10;
  fb.added = 2;
  fb.first_added = 3;
  s.feedback(fb, c);
  // Energies: 1, 3/2, 1, 1, 1.
  CHECK(s.energy(c.entry(1)) == Approx(1.5));
  const long n = 200000;
  const auto h = histogram(s, c, n, 5);
  const double t = 5.5;
  CHECK(chi2(h, {1 / t, 1.5 / t, 1 / t, 1 / t, 1 / t}, n) < 18.5);  // 4 dof, p = 0.001
  // reset() (a new run) starts from the corpus again.
  s.reset();
  Corpus small = corpus_of(2);
  for (int i = 0; i < 100; ++i) CHECK(s.pick(small, rng) < 2);
  CHECK_THROWS_WITH(PowerSampler(-1), Catch::Contains("'productivity'"));
}

TEST_CASE("FenwickWeights: prefix sums and draws match a plain array", "[samplers][schedules]") {
  detail::FenwickWeights w;
  std::vector<double> plain;
  Rng rng(6);
  for (int i = 0; i < 37; ++i) {
    const double x = 0.5 + rng.uniform();
    w.append(x);
    plain.push_back(x);
    if (i % 5 == 0) {
      const Index k = rng.uniform_index(w.size());
      w.set(k, 2.0);
      plain[static_cast<std::size_t>(k)] = 2.0;
    }
  }
  double acc = 0;
  for (Index i = 0; i < w.size(); ++i) {
    CHECK(w.prefix(i) == Approx(acc));
    // A point inside element i's range finds i.
    CHECK(w.find(acc + 0.5 * plain[static_cast<std::size_t>(i)]) == i);
    acc += plain[static_cast<std::size_t>(i)];
  }
  CHECK(w.total() == Approx(acc));
}

TEST_CASE("FitnessSampler: the fittest elements get `share` of the picks", "[samplers][fitness]") {
  Corpus c = corpus_of(10);
  for (Index i = 0; i < 10; ++i) c.set_fitness(i, i == 3 ? 5.0f : (i == 7 ? 4.0f : float(-i)));
  c.set_fitness(9, std::numeric_limits<float>::quiet_NaN());  // unknown: never among the fittest
  FitnessSampler<UniformSampler> s(UniformSampler(), 0.5, 2);
  const long n = 100000;
  const auto h = histogram(s, c, n, 7);
  // P(3) = P(7) = 0.5/2 + 0.5/10; others 0.5/10.
  std::vector<double> p(10, 0.05);
  p[3] = p[7] = 0.3;
  CHECK(chi2(h, p, n) < 27.9);  // 9 dof, p = 0.001
  std::vector<Index> best = s.fittest();
  std::sort(best.begin(), best.end());
  CHECK(best == std::vector<Index>{3, 7});
  CHECK_THROWS_WITH(FitnessSampler<>(RecentSampler(), 1.5), Catch::Contains("'share'"));
  CHECK_THROWS_WITH(FitnessSampler<>(RecentSampler(), 0.5, 0), Catch::Contains("'top'"));
}
