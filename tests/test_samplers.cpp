// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/samplers.hpp>

#include <cmath>
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
