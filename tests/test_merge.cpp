// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/merge.hpp>

#include "support/planted.hpp"
#include "support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

using namespace nnfuzz;
namespace fs = std::filesystem;
using Catch::Contains;
using nnfuzz_test::planted_nan_seeds;

namespace {
struct TempDir : nnfuzz_test::TempDir {
  TempDir() : nnfuzz_test::TempDir("nnfuzz_merge") {}
};
constexpr float kRadius = 0.005f;
auto planted(std::uint64_t seed, std::uint64_t executions) {
  return nnfuzz_test::planted_nan_fuzzer(seed, executions, kRadius);
}
std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
// How many of `c`'s coverage vectors are new to a coverage that has seen `seen`'s.
Index new_after(const Corpus& seen, const Corpus& c) {
  KdTreeCoverage cov(kRadius);
  cov.reset(seen.coverage_dim());
  Mask m;
  RowMatrix v(seen.size(), seen.coverage_dim());
  for (Index i = 0; i < seen.size(); ++i) v.row(i) = seen.coverage(i);
  cov.observe(v, m);
  v.resize(c.size(), c.coverage_dim());
  for (Index i = 0; i < c.size(); ++i) v.row(i) = c.coverage(i);
  cov.observe(v, m);
  return static_cast<Index>(m.count());
}
// Two campaigns from the same seeds: their corpora share the seeds, both found the seed's NaN.
struct TwoCampaigns {
  std::string a, b;
  FuzzResult ra, rb;
  explicit TwoCampaigns(const fs::path& root) : a((root / "a").string()), b((root / "b").string()) {
    auto fa = planted(1, 6000), fb = planted(2, 6000);
    CampaignSaver sa(a, 1, 0.0), sb(b, 2, 0.0);
    ra = fa.run(planted_nan_seeds(), sa);
    rb = fb.run(planted_nan_seeds(), sb);
  }
};
}  // namespace

TEST_CASE("merge_campaigns: two workers that found overlapping things become one reduced campaign", "[merge]") {
  TempDir t;
  const TwoCampaigns two(t.dir);
  REQUIRE(two.ra.findings.size() > 20);
  REQUIRE(two.rb.findings.size() > 20);
  const Corpus ca = load_corpus(two.a), cb = load_corpus(two.b);
  const std::string out = (t.dir / "merged").string();
  MergeOptions o;
  o.radius = kRadius;
  const MergeSummary s = merge_campaigns({two.a, two.b}, out, o);
  CHECK(s.campaigns == std::vector<std::string>{two.a, two.b});
  CHECK(s.elements_read == static_cast<std::size_t>(ca.size() + cb.size()));
  const Corpus m = load_corpus(out);
  CHECK(static_cast<std::size_t>(m.size()) == s.elements_kept);
  CHECK(m.size() < ca.size() + cb.size());  // the shared seeds (at least) are kept once
  // The union's coverage: nothing of either campaign is new to the merged corpus.
  CHECK(new_after(m, ca) == 0);
  CHECK(new_after(m, cb) == 0);
  // ... and nothing in it is redundant: each element adds coverage in merge order.
  CHECK(new_after(Corpus(m.input_dim(), m.coverage_dim()), m) == m.size());
  for (const CorpusEntry& e : m.entries()) CHECK((e.parent == -1 && e.root == e.id && e.depth == 0));
  CHECK(m.executions() == ca.executions() + cb.executions());
  CHECK(s.executions == m.executions());

  // Findings: each input once, grouped by bug, counts summed (the repeats only counted, too).
  CHECK(s.duplicate_inputs >= 1);  // the seed's own NaN, found by both
  std::set<std::uint64_t> inputs;
  const std::vector<SavedFinding> saved = load_findings(out);
  for (const SavedFinding& f : saved) CHECK(inputs.insert(finding_signature(f.finding)).second);
  CHECK(saved.size() == s.finding_files_written);
  CHECK(saved.size() == BugOptions().samples_per_bug);  // one bug, its first k distinct inputs
  const std::vector<Bug> bugs = load_bugs(out);
  REQUIRE(bugs.size() == 1);
  CHECK(bugs[0].signature == "non-finite in 'y'");
  CHECK(bugs[0].count == two.ra.findings.size() + two.rb.findings.size());
  CHECK(s.findings_reported == bugs[0].count);
  REQUIRE(s.bugs.size() == 1);
  CHECK(s.bugs[0].count == bugs[0].count);

  // Deterministic: merging again gives the same corpus, byte for byte.
  const std::string again = (t.dir / "again").string();
  merge_campaigns({two.a, two.b}, again, o);
  CHECK(slurp(fs::path(out) / "corpus.bin") == slurp(fs::path(again) / "corpus.bin"));
  CHECK(slurp(fs::path(out) / "bugs.bin").size() == slurp(fs::path(again) / "bugs.bin").size());

  // resume() reads the result, numbering on from the campaigns' executions; counts go on.
  auto g = planted(3, 2000);
  {
    CampaignSaver saver(out, 3, 0.0);
    const FuzzResult r = g.resume(load_corpus(out), saver);
    CHECK(r.stats.executions == m.executions() + 2000);
    CHECK(load_bugs(out).at(0).count == bugs[0].count + r.findings.size());
  }
}

TEST_CASE("merge_campaigns: a sync directory is read worker by worker", "[merge][sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  SyncOptions so;
  so.interval_seconds = 0;
  so.interval_executions = 1000;
  FuzzResult r0, r1;
  {
    auto f0 = planted(1, 4000), f1 = planted(2, 4000);
    SyncDirectory w0(sync, "0", so), w1(sync, "1", so);
    r0 = f0.run(planted_nan_seeds(), w0);
    r1 = f1.run(planted_nan_seeds(), w1);  // imports 0's elements: the corpora overlap
  }
  const std::string out = (t.dir / "merged").string();
  MergeOptions o;
  o.radius = kRadius;
  const MergeSummary s = merge_campaigns({sync}, out, o);
  CHECK(s.campaigns == std::vector<std::string>{(fs::path(sync) / "0").string(), (fs::path(sync) / "1").string()});
  const Corpus m = load_corpus(out);
  CHECK(new_after(m, load_corpus((fs::path(sync) / "0").string())) == 0);
  CHECK(new_after(m, load_corpus((fs::path(sync) / "1").string())) == 0);
  CHECK(s.findings_reported == r0.findings.size() + r1.findings.size());
  std::set<std::uint64_t> inputs;
  for (const SavedFinding& f : load_findings(out)) CHECK(inputs.insert(finding_signature(f.finding)).second);
}

TEST_CASE("merge_campaigns: bad arguments are refused naming the option or the directory", "[merge]") {
  TempDir t;
  const TwoCampaigns two(t.dir);
  MergeOptions o;
  CHECK_THROWS_WITH(merge_campaigns({two.a}, (t.dir / "x").string(), o),
                    Contains("merge_campaigns(): option 'radius'"));
  o.radius = kRadius;
  CHECK_THROWS_WITH(merge_campaigns({}, (t.dir / "x").string(), o), Contains("merge_campaigns(): no input"));
  CHECK_THROWS_WITH(merge_campaigns({two.a}, two.b, o), Contains("output directory '" + two.b + "' is not empty"));
  const std::string nothing = (t.dir / "nothing").string();
  fs::create_directories(nothing);
  CHECK_THROWS_WITH(merge_campaigns({nothing}, (t.dir / "x").string(), o),
                    Contains("input '" + nothing + "' is neither a campaign directory"));
  // Another model's campaign (inputs of 8 floats, not 16).
  const std::string other = (t.dir / "other").string();
  Corpus c(8, 1);
  const RowVector in = RowVector::Constant(8, 0.1f);
  const float cov[1] = {0.1f};
  c.add(in.data(), cov, -1, 0, 0, 0);
  save_corpus(other, c);
  CHECK_THROWS_WITH(merge_campaigns({two.a, other}, (t.dir / "y").string(), o),
                    Contains("merge_campaigns(): '" + (fs::path(other) / "corpus.bin").string()) &&
                        Contains("must come from the same model"));
}
