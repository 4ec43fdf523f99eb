// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/bugs.hpp>
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include "support/planted.hpp"
#include "support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

using namespace nnfuzz;
namespace fs = std::filesystem;
using Catch::Contains;
using nnfuzz_test::planted_nan_seeds;

namespace {
struct TempDir : nnfuzz_test::TempDir {
  TempDir() : nnfuzz_test::TempDir("nnfuzz_bugs") {}
};
auto planted(std::uint64_t seed, std::uint64_t executions) { return nnfuzz_test::planted_nan_fuzzer(seed, executions); }
Finding finding(const std::string& what, const std::string& fired = "", float value = 0.5f) {
  Finding f;
  f.input = RowVector::Constant(4, value);
  f.what = what;
  f.fired = fired;
  f.execution = 7;
  return f;
}
std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "findings", ec)) n += e.path().extension() == ".bin";
  return n;
}
}  // namespace

TEST_CASE("bug_signature: what fired, the tensor or word, the class pair - never the varying part", "[bugs]") {
  CHECK(bug_signature(finding("non-finite in 'cross_entropy'", "cross_entropy")) == "non-finite in 'cross_entropy'");
  // A finding read from a file has no `fired`: the same signature.
  CHECK(bug_signature(finding("non-finite in 'cross_entropy'")) == "non-finite in 'cross_entropy'");
  CHECK(bug_signature(finding("word 'the' 4 times in a row in: \"the the the the\"", "the")) == "word 'the'");
  CHECK(bug_signature(finding("word 'the' 7 times in a row in: \"x the the\"", "the")) == "word 'the'");
  CHECK(bug_signature(finding("blacklisted word 'x' in: \"a x b\"", "x")) == "blacklisted word 'x'");
  CHECK(bug_signature(finding("reference says 3, candidate says 5")) == "reference says 3, candidate says 5");
  CHECK(bug_signature(finding("max |dp| 0.734 > 0.5: reference says 3, candidate says 5")) ==
        "reference says 3, candidate says 5");
  CHECK(bug_signature(finding("KL(old||new) 1.25 > 1: reference says 3, candidate says 5")) ==
        "reference says 3, candidate says 5");
  CHECK(bug_signature(finding("something odd", "part")) == "part");
  CHECK(bug_signature(finding("objective")) == "objective");
}

TEST_CASE("BugLog: the first samples_per_bug inputs of a bug are saved, the rest counted", "[bugs]") {
  BugOptions o;
  o.samples_per_bug = 2;
  BugLog log(o);
  const Finding a = finding("non-finite in 'y'", "y", 0.1f), b = finding("non-finite in 'y'", "y", 0.2f),
                c = finding("non-finite in 'y'", "y", 0.3f), d = finding("non-finite in 'z'", "z", 0.3f);
  REQUIRE(log.count(a));
  log.saved(a, "/x/findings/a.bin");
  REQUIRE(log.count(b));
  log.saved(b, "/x/findings/b.bin");
  CHECK_FALSE(log.count(c));  // its bug has its two files
  CHECK(log.count(d));        // another bug
  log.saved(d, "/x/findings/d.bin");
  CHECK_FALSE(log.count(d, /*may_save=*/false));
  REQUIRE(log.bugs().size() == 2);
  CHECK(log.bugs()[0].signature == "non-finite in 'y'");
  CHECK(log.bugs()[0].count == 3);
  CHECK(log.bugs()[0].files == std::vector<std::string>{"a.bin", "b.bin"});
  CHECK(log.bugs()[1].count == 2);
  CHECK(log.findings() == 5);
  CHECK(log.files() == 3);

  // min_distance: a finding of a known bug near a saved one (L-inf) is only counted.
  BugOptions near;
  near.samples_per_bug = 0;
  near.min_distance = 0.15;
  BugLog far(near);
  REQUIRE(far.count(a));
  far.saved(a, "/x/findings/a.bin");
  CHECK_FALSE(far.count(b));  // 0.1 away
  CHECK(far.count(c));        // 0.2 away
  BugOptions bad;
  bad.min_distance = -1;
  CHECK_THROWS_WITH(BugLog(bad), Contains("BugLog(): option 'min_distance'") && Contains("-1"));
}

TEST_CASE("CampaignSaver: one bug found thousands of times is a few files and a count - resumed, it counts on",
          "[bugs][campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto f = planted(1, 20000);
  FuzzResult r;
  const std::size_t k = BugOptions().samples_per_bug;
  {
    CampaignSaver saver(dir, 1, 0.05);
    r = f.run(planted_nan_seeds(), saver);
    CHECK(saver.finding_paths().size() == k);
  }
  REQUIRE(r.findings.size() > 100);  // nearly every mutant of the NaN seed fires
  CHECK(files_in(dir) == k);
  std::vector<Bug> bugs = load_bugs(dir);
  REQUIRE(bugs.size() == 1);
  CHECK(bugs[0].signature == "non-finite in 'y'");
  CHECK(bugs[0].count == r.findings.size());  // nothing reported is lost: every finding counted
  CHECK(bugs[0].files.size() == k);
  for (const std::string& name : bugs[0].files) CHECK(fs::exists(fs::path(dir) / "findings" / name));

  // Resumed on its directory: counts and samples go on (no new file: the bug has its k).
  auto g = planted(1, 5000);
  CampaignSaver again(dir, 1, 0.05);
  CHECK(again.bugs().findings() == r.findings.size());
  const FuzzResult r2 = g.resume(load_corpus(dir), again);
  REQUIRE(r2.found());
  CHECK(files_in(dir) == k);
  bugs = load_bugs(dir);
  REQUIRE(bugs.size() == 1);
  CHECK(bugs[0].count == r.findings.size() + r2.findings.size());

  // samples_per_bug = 0: every new input is a file, as before bugs.bin.
  const std::string all = (t.dir / "all").string();
  BugOptions every;
  every.samples_per_bug = 0;
  auto h = planted(1, 3000);
  CampaignSaver saver_all(all, 1, 0.05, every);
  const FuzzResult r3 = h.run(planted_nan_seeds(), saver_all);
  CHECK(files_in(all) == r3.findings.size());
  CHECK(load_bugs(all).at(0).count == r3.findings.size());
}

TEST_CASE("load_bugs: a finding file bugs.bin does not name (a kill before the save) is counted", "[bugs]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  BugLog log;
  const Finding a = finding("non-finite in 'y'", "y", 0.1f);
  REQUIRE(log.count(a));
  log.saved(a, save_finding(dir, a, 3));
  REQUIRE_FALSE(log.count(a, false));  // a repeat, counted only
  log.save(dir);
  save_finding(dir, finding("non-finite in 'y'", "", 0.2f), 3);  // after the last save
  save_finding(dir, finding("reference says 1, candidate says 2", "", 0.3f), 3);
  const std::vector<Bug> bugs = load_bugs(dir);
  REQUIRE(bugs.size() == 2);
  CHECK(bugs[0].signature == "non-finite in 'y'");
  CHECK(bugs[0].count == 3);
  CHECK(bugs[0].files.size() == 2);
  CHECK(bugs[1].signature == "reference says 1, candidate says 2");
  CHECK(bugs[1].count == 1);
  // No bugs.bin at all: every file is a finding of its bug.
  const std::string bare = (t.dir / "bare").string();
  save_finding(bare, a, 1);
  CHECK(load_bugs(bare).at(0).count == 1);
  CHECK(load_bugs((t.dir / "none").string()).empty());
}

TEST_CASE("load_bugs: a corrupted or truncated bugs.bin is refused naming it", "[bugs]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  save_bugs(dir, {{"non-finite in 'y'", "non-finite in 'y'", 12, {}}});
  const std::string path = (fs::path(dir) / "bugs.bin").string();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  CHECK(load_bugs(dir).at(0).count == 12);
  bytes[20] ^= 1;
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK_THROWS_WITH(load_bugs(dir), Contains("load_bugs(): file '" + path + "' is corrupted"));
  std::ofstream(path, std::ios::binary) << bytes.substr(0, 10);
  CHECK_THROWS_WITH(load_bugs(dir), Contains("load_bugs()") && Contains(path));
}

TEST_CASE("SyncDirectory: repeats of a known bug are counted in bugs.bin and stats.json, not written", "[bugs][sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  SyncOptions o;
  o.interval_seconds = 0;
  o.interval_executions = 1000;
  o.bugs.samples_per_bug = 3;
  auto f = planted(1, 10000);
  SyncDirectory w(sync, "0", o);
  const FuzzResult r = f.run(planted_nan_seeds(), w);
  REQUIRE(r.findings.size() > 50);
  CHECK(w.counters().findings == 3);
  CHECK(w.counters().findings + w.counters().duplicate_findings + w.counters().repeat_findings == r.findings.size());
  CHECK(files_in(w.worker_dir()) == 3);
  const std::vector<Bug> bugs = load_bugs(w.worker_dir());
  REQUIRE(bugs.size() == 1);
  CHECK(bugs[0].count == r.findings.size());
  std::ifstream in((fs::path(w.worker_dir()) / "stats.json").string());
  const std::string stats{std::istreambuf_iterator<char>(in), {}};
  CHECK_THAT(stats, Contains("\"repeat_findings\": " + std::to_string(w.counters().repeat_findings)));
  CHECK_THAT(stats, Contains("\"reported_findings\": " + std::to_string(r.findings.size())));
  CHECK_THAT(stats, Contains("\"bug_counts\": [\n    {\"signature\": \"non-finite in 'y'\", \"count\": " +
                             std::to_string(r.findings.size()) + ", \"files\": 3}"));
}
