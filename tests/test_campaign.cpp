// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/campaign/sync_files.hpp>

#include "support/child_process.hpp"
#include "support/planted.hpp"
#include "support/temp_dir.hpp"

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include <zlib.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace nnfuzz;
namespace fs = std::filesystem;
using nnfuzz_test::Child;
using nnfuzz_test::fork_with_pipe;
using nnfuzz_test::planted_seeds;
using nnfuzz_test::PlantedModel;
using nnfuzz_test::read_all_and_close;

namespace {
struct TempDir : nnfuzz_test::TempDir {
  TempDir() : nnfuzz_test::TempDir("nnfuzz_campaign") {}
};
auto planted(std::uint64_t seed, std::uint64_t executions) { return nnfuzz_test::planted_nan_fuzzer(seed, executions); }
// Every finding with a new input is a file (no per-bug limit: campaign/bugs.hpp), as these
// tests of the file guarantees need; test_bugs.cpp tests the limit.
BugOptions every_input() {
  BugOptions o;
  o.samples_per_bug = 0;
  return o;
}
// Records the findings a printer would have printed: each must already be on disk, complete.
struct OnDiskCheck {
  const CampaignSaver* saver;
  int checked = 0;
  void on_finding(const Finding& f, const FuzzStats&) {
    REQUIRE(saver->finding_paths().size() == static_cast<std::size_t>(checked) + 1);
    const SavedFinding s = load_finding(saver->finding_paths().back());
    CHECK(s.finding.execution == f.execution);
    CHECK(s.finding.input == f.input);
    CHECK(s.finding.what == f.what);
    ++checked;
  }
};
}  // namespace

TEST_CASE("Campaign: findings are on disk when reported - corpus and findings load back", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto f = planted(1, 60000);
  CampaignSaver saver(dir, 1, 0.05, every_input());  // checkpoints every 50 ms: several per run
  OnDiskCheck check{&saver};
  const FuzzResult r = f.run(planted_seeds(), saver, check);
  REQUIRE(r.found());
  CHECK(check.checked == static_cast<int>(r.findings.size()));
  const auto saved = load_findings(dir);
  REQUIRE(saved.size() == r.findings.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    CHECK(saved[i].finding.input == r.findings[i].input);
    CHECK(saved[i].finding.what == r.findings[i].what);
    CHECK(saved[i].run_seed == 1);
    CHECK(f.replay(saved[i].finding.input));  // replay from the saved input: same verdict
  }
  const Corpus back = load_corpus(dir);
  REQUIRE(back.size() == f.corpus().size());
  for (Index i = 0; i < back.size(); ++i) {
    REQUIRE(back.input(i) == f.corpus().input(i));
    REQUIRE(back.entry(i).parent == f.corpus().entry(i).parent);
    REQUIRE(back.entry(i).execution == f.corpus().entry(i).execution);
  }
  CHECK(saver.checkpoints() >= 2);
  for (const auto& e : fs::recursive_directory_iterator(dir))  // no temporaries left behind
    CHECK(e.path().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("Campaign: resume continues from a saved corpus, reproducibly", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto first = planted(2, 5000);
  CampaignSaver saver(dir, 2, 0.0);
  first.run(planted_seeds(), saver);
  const Corpus saved = load_corpus(dir);
  auto a = planted(2, 20000), b = planted(2, 20000);
  const FuzzResult ra = a.resume(saved);
  const FuzzResult rb = b.resume(load_corpus(dir));
  // Numbering goes on from where the saved session stopped (5,000 executions, saved with the
  // corpus), not from the last element added; the budget is this session's.
  const std::uint64_t last = saved.executions();
  CHECK(last == 5000);
  CHECK(ra.stats.executions == last + 20000);
  CHECK(a.corpus().size() >= saved.size());
  REQUIRE(a.corpus().size() == b.corpus().size());
  for (Index i = 0; i < a.corpus().size(); ++i) REQUIRE(a.corpus().input(i) == b.corpus().input(i));
  // Lineage of the old elements is kept; new ones descend from them.
  for (Index i = 0; i < saved.size(); ++i) CHECK(a.corpus().entry(i).parent == saved.entry(i).parent);
  for (Index i = saved.size(); i < a.corpus().size(); ++i) CHECK(a.corpus().entry(i).execution > last);
  // The rebuilt coverage holds exactly the corpus vectors: none of them is new to it.
  Mask m;
  RowMatrix vectors(saved.size(), saved.coverage_dim());
  for (Index i = 0; i < saved.size(); ++i) vectors.row(i) = saved.coverage(i);
  KdTreeCoverage copy = a.coverage();
  copy.observe(vectors, m);
  CHECK(m.count() == 0);
  REQUIRE_THROWS_WITH(a.resume(Corpus(16, 1)), Catch::Contains("Fuzzer::resume()") && Catch::Contains("empty"));
  REQUIRE_THROWS_WITH(a.resume(Corpus(7, 1)), Catch::Contains("Fuzzer::resume()"));
}

namespace {
// Example 04's model: 16 floats in [0, 1], one score, NaN when the row's mean is in (0.79, 0.81);
// the coverage is the mean. Its campaign (CalibratedCoverage, GaussianMutator(0.05),
// RecentSampler) calibrates a radius of ~0.002 on the first mutants.
struct ScoreModel {
  struct Output {
    RowMatrix score, coverage;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("score", score);
    }
  };
  Index input_dim() const { return 16; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    out.score = (out.coverage.array() - 0.8f).abs().unaryExpr([](float d) { return std::sqrt(d - 0.01f); }).matrix();
  }
};
auto score_fuzzer(std::uint64_t seed, std::uint64_t executions) {
  FuzzOptions o;
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = seed;
  return make_fuzzer(ScoreModel{}, RecentSampler(), GaussianMutator(0.05f), CalibratedCoverage(), NonFiniteObjective(),
                     o);
}
RowMatrix score_seeds() { return RowVector::LinSpaced(4, 0.1f, 0.25f).transpose().replicate(1, 16); }
// The coverage radius after a session's first batch.
struct FirstRadius {
  float radius = -1;
  void on_batch(const FuzzStats& st) {
    if (radius < 0) radius = st.coverage_radius;
  }
};
// The same choice of radius, from the same first mutants (the adaptation fields go on changing).
bool same_calibration(const Calibration& a, const Calibration& b) {
  return a.radius == b.radius && a.initial_radius == b.initial_radius && a.target_rate == b.target_rate &&
         a.samples == b.samples && a.median_distance == b.median_distance && a.adjustments == b.adjustments;
}
// A dense version-2 corpus.bin (before coverage states): 2 elements of 3 floats, coverage width 1.
std::vector<std::uint8_t> version2_corpus() {
  std::vector<std::uint8_t> b(detail::kCorpusMagic, detail::kCorpusMagic + 8);
  detail::put_u32(b, 2);
  detail::put_u32(b, 1);   // coverage_dim
  detail::put_u64(b, 2);   // count
  detail::put_u64(b, 90);  // executions
  detail::put_u32(b, 0);   // parts: dense
  detail::put_u32(b, 3);   // input_dim
  const float in[2][3] = {{0.1f, 0.2f, 0.3f}, {0.4f, 0.5f, 0.6f}}, cov[2] = {0.2f, 0.5f};
  for (int e = 0; e < 2; ++e) {
    for (std::int64_t v : {std::int64_t{e - 1}, std::int64_t{0}, std::int64_t{e}})
      detail::put_u64(b, static_cast<std::uint64_t>(v));
    detail::put_u64(b, e == 0 ? 0 : 77);  // execution
    detail::put_u64(b, 3);                // times picked
    detail::put_floats(b, in[e], 3);
    detail::put_floats(b, &cov[e], 1);
  }
  detail::seal(b);
  return b;
}
}  // namespace

TEST_CASE("Campaign: corpus.bin (version 3) keeps the coverage policy's state - round trip", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "s").string();
  const RowVector in = RowVector::Constant(4, 0.5f), cov = RowVector::Constant(2, 1.0f);
  Corpus c(4, 2);
  c.add(in.data(), cov.data(), -1, 0, 0, 0);
  c.add(in.data(), cov.data(), 0, 0, 1, 12);
  c.set_executions(40);
  CHECK(c.coverage_state().empty());
  save_corpus(dir, c);  // no state: 0 bytes of it
  CHECK(load_corpus(dir).coverage_state().empty());
  const std::vector<std::uint8_t> state = {0, 1, 2, 250, 255, 7, 0};
  c.set_coverage_state(state);
  save_corpus(dir, c);
  std::ifstream f(fs::path(dir) / "corpus.bin", std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(f), {}};
  REQUIRE(bytes.size() > 12);
  CHECK(detail::get_u32(reinterpret_cast<const std::uint8_t*>(bytes.data()) + 8) == 3);  // the format version
  const Corpus back = load_corpus(dir);
  CHECK(back.coverage_state() == state);
  CHECK(back.size() == 2);
  CHECK(back.executions() == 40);
  CHECK(back.entry(1).execution == 12);
  // Structured corpora carry it too.
  InputLayout layout;
  layout.tokens("text", 10, 4).floats("gain", 1);
  Corpus s(layout, 1);
  const TokenId ids[5] = {1, 2, 0, 0, 2};
  const float gain = 0.5f, one = 1.0f;
  s.add_cells(&gain, ids, &one, -1, 0, 0, 0);
  s.set_coverage_state(state);
  save_corpus(dir, s);
  const Corpus sb = load_corpus(dir);
  CHECK(sb.structured());
  CHECK(sb.coverage_state() == state);
  // A fuzzer's corpus carries its CalibratedCoverage's state, and reset() drops it.
  auto fz = score_fuzzer(3, 1000);
  fz.run(score_seeds());
  REQUIRE(fz.coverage().calibrated());
  CHECK(fz.corpus().coverage_state() == fz.coverage().save_state());
  CHECK(fz.corpus().coverage_state().size() == CalibratedCoverage::kStateBytes);
  Corpus copy = fz.corpus();
  copy.reset_like(fz.corpus());
  CHECK(copy.coverage_state().empty());
}

TEST_CASE("Campaign: version-2 corpus files still load, without a coverage state", "[campaign]") {
  TempDir t;
  detail::write_file_atomic("test", (t.dir / "corpus.bin").string(), version2_corpus());
  const Corpus c = load_corpus(t.dir.string());
  REQUIRE(c.size() == 2);
  CHECK(c.input(1)(2) == 0.6f);
  CHECK(c.executions() == 90);
  CHECK(c.entry(1).times_picked == 3);
  CHECK(c.coverage_state().empty());
  // Resumed as before: CalibratedCoverage calibrates on the session's first mutants.
  FuzzOptions o;
  o.max_executions = 500;
  o.max_findings = 0;
  struct Dense3 {
    struct Output {
      RowMatrix coverage;
    };
    Index input_dim() const { return 3; }
    void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
      out.coverage = batch.rowwise().mean();
    }
  };
  auto f = make_fuzzer(
      Dense3{}, RecentSampler(), GaussianMutator(0.05f), CalibratedCoverage(),
      [](const Dense3::Output&, Index) { return false; }, o);
  const FuzzResult r = f.resume(c);
  CHECK(r.stats.executions == 590);
  CHECK(f.coverage().calibrated());
  CHECK(f.coverage().calibration().samples > 0);
  // Written back, it is version 3 with the state the session ended with.
  save_corpus(t.dir.string(), f.corpus());
  CHECK(load_corpus(t.dir.string()).coverage_state() == f.coverage().save_state());
}

TEST_CASE("Campaign: a malformed coverage state is refused with a message naming it", "[campaign]") {
  using Catch::Contains;
  TempDir t;
  const std::string dir = (t.dir / "bad").string();
  auto f = score_fuzzer(5, 600);
  f.run(score_seeds());
  const Corpus good = f.corpus();
  REQUIRE(good.coverage_state().size() == CalibratedCoverage::kStateBytes);
  // The loader keeps the bytes as they are; resume() hands them to the policy, which checks them.
  Corpus c = good;
  c.set_coverage_state({1, 2, 3});
  save_corpus(dir, c);
  auto g = score_fuzzer(5, 100);
  CHECK_THROWS_WITH(g.resume(load_corpus(dir)),
                    Contains("CalibratedCoverage::restore_state()") && Contains("3 bytes") && Contains("88"));
  std::vector<std::uint8_t> state = good.coverage_state();
  state[0] = 'X';
  c.set_coverage_state(state);
  CHECK_THROWS_WITH(g.resume(c),
                    Contains("CalibratedCoverage::restore_state()") && Contains("NNFZCALB") && Contains("XNFZCALB"));
  state = good.coverage_state();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(state.data() + 20, &nan, 4);  // the radius: after magic, version and width
  c.set_coverage_state(state);
  CHECK_THROWS_WITH(g.resume(c), Contains("CalibratedCoverage::restore_state()") && Contains("radius nan"));
  // Cleared, the corpus resumes as a version-2 one did.
  c.set_coverage_state({});
  CHECK_NOTHROW(g.resume(c));
  // The file: a state length past the limit, or past the end of the file, is refused by the loader.
  save_corpus(dir, good);
  const std::string file = (fs::path(dir) / "corpus.bin").string();
  std::ifstream in(file, std::ios::binary);
  std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(in), {}};
  in.close();
  REQUIRE(detail::get_u32(&b[40]) == CalibratedCoverage::kStateBytes);  // dense: after the input width
  auto with_length = [&](std::uint32_t len) {
    std::vector<std::uint8_t> x = b;
    x.resize(x.size() - 4);
    for (int i = 0; i < 4; ++i) x[40 + i] = static_cast<std::uint8_t>(len >> (8 * i));
    detail::seal(x);
    detail::write_file_atomic("test", file, x);
  };
  with_length((1u << 24) + 1);
  CHECK_THROWS_WITH(load_corpus(dir),
                    Contains("load_corpus()") && Contains(file) && Contains("coverage state of 16777217 bytes"));
  with_length(static_cast<std::uint32_t>(b.size()));
  CHECK_THROWS_WITH(load_corpus(dir), Contains("load_corpus()") && Contains(file));
  // The writer refuses the state the loader would refuse, before writing.
  save_corpus(dir, good);
  const auto size = fs::file_size(file);
  c = good;
  c.set_coverage_state(std::vector<std::uint8_t>((std::size_t{1} << 24) + 1));
  CHECK_THROWS_WITH(save_corpus(dir, c), Contains("save_corpus()") && Contains("coverage state of 16777217 bytes"));
  CHECK(fs::file_size(file) == size);
}

TEST_CASE("Campaign: a CalibratedCoverage campaign stopped after 300 executions resumes with its radius",
          "[campaign]") {
  // Issue #34: resume() used to recalibrate against the whole saved corpus, and a campaign
  // stopped early came back with a radius ~20x smaller that found nothing in 50,000 executions.
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto first = score_fuzzer(7, 300);
  Calibration before;
  {
    CampaignSaver saver(dir, 7);
    first.run(score_seeds(), saver);
    before = first.coverage().calibration();
  }
  REQUIRE(first.coverage().calibrated());
  REQUIRE(before.radius > 0);
  const Corpus saved = load_corpus(dir);
  CHECK(saved.executions() == 300);
  REQUIRE(saved.coverage_state() == first.coverage().save_state());
  auto resume = [&](const Corpus& c, FuzzResult& r) {
    auto f = score_fuzzer(7, 5000);
    FirstRadius at_first;
    r = f.resume(c, at_first);
    return std::make_pair(at_first.radius, f);
  };
  FuzzResult ra, rb, rc;
  auto [radius_a, a] = resume(saved, ra);
  auto [radius_b, b] = resume(load_corpus(dir), rb);
  // Not recalibrated: the radius, and what calibration learned, are those it stopped with.
  CHECK(radius_a == before.radius);
  CHECK(same_calibration(a.coverage().calibration(), before));
  // Deterministic: one directory, one seed, one run.
  CHECK(radius_b == radius_a);
  REQUIRE(a.corpus().size() == b.corpus().size());
  for (Index i = 0; i < a.corpus().size(); ++i) REQUIRE(a.corpus().input(i) == b.corpus().input(i));
  REQUIRE(ra.findings.size() == rb.findings.size());
  for (std::size_t i = 0; i < ra.findings.size(); ++i) CHECK(ra.findings[i].execution == rb.findings[i].execution);
  CHECK(a.corpus().coverage_state() == b.corpus().coverage_state());
  // ProgressPrinter shows the radius it resumed with, and no new choice.
  std::ostringstream printed, expected;
  auto p = score_fuzzer(7, 1000);
  ProgressPrinter progress(printed);
  p.resume(saved, progress);
  expected << "radius: " << before.radius << " (on resume)\n";
  CHECK_THAT(printed.str(), Catch::Contains(expected.str()));
  CHECK_THAT(printed.str(), !Catch::Contains("chosen by the coverage policy"));
  // The replayed corpus is not a window of mutants: the counters go on from the saved ones.
  CalibratedCoverage replayed;
  replayed.reset(1);
  replayed.restore_state(saved.coverage_state());
  Mask m;
  RowMatrix vectors(saved.size(), 1);
  for (Index i = 0; i < saved.size(); ++i) vectors.row(i) = saved.coverage(i);
  replayed.observe(vectors, m);
  replayed.seeds_done();
  CHECK(replayed.save_state() == saved.coverage_state());
  // With the state cleared (the behaviour before): recalibrated against the saved corpus, smaller.
  Corpus cleared = saved;
  cleared.set_coverage_state({});
  auto [radius_c, c] = resume(cleared, rc);
  CHECK(radius_c < before.radius);
  CHECK(c.coverage().calibration().initial_radius == radius_c);
}

TEST_CASE("Campaign: malformed corpus and finding files are rejected, naming the file", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto f = planted(1, 60000);
  CampaignSaver saver(dir, 1, 0.0);
  f.run(planted_seeds(), saver);
  const std::string corpus = dir + "/corpus.bin";
  std::ifstream in(corpus, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  in.close();
  auto write = [&](const std::vector<char>& b) {
    std::ofstream(corpus, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  using Catch::Contains;
  std::vector<char> b = bytes;
  b[100] ^= 1;
  write(b);
  REQUIRE_THROWS_WITH(load_corpus(dir), Contains("load_corpus()") && Contains(corpus) && Contains("CRC-32"));
  b = bytes;
  b.resize(b.size() / 2);
  write(b);
  REQUIRE_THROWS_WITH(load_corpus(dir), Contains("load_corpus()") && Contains(corpus));
  b = bytes;
  b[0] = 'X';
  write(b);
  REQUIRE_THROWS_WITH(load_corpus(dir), Contains("wrong magic"));
  REQUIRE_THROWS_WITH(load_corpus((t.dir / "missing").string()),
                      Contains("load_corpus()") && Contains("does not exist"));
  const auto found = load_findings(dir);
  REQUIRE_FALSE(found.empty());
  std::ofstream(found[0].path, std::ios::binary | std::ios::app) << "junk";
  REQUIRE_THROWS_WITH(load_findings(dir), Contains("load_findings()") && Contains(found[0].path));
  // An unwritable directory: a clear error, not a crash.
  const fs::path ro = t.dir / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (::geteuid() != 0) {  // root ignores permissions
    REQUIRE_THROWS_WITH(save_corpus(ro.string(), f.corpus()), Contains("save_corpus()") && Contains("cannot create"));
  } else if (fs::is_directory("/sys") && !fs::exists("/sys/nnfuzz_campaign")) {
    // Root (as in CI): sysfs refuses new directories even to root.
    const std::string sys = "/sys/nnfuzz_campaign";
    REQUIRE_THROWS_WITH(save_corpus(sys, f.corpus()),
                        Contains("save_corpus()") && Contains("cannot create") && Contains(sys));
    Finding one;
    one.input = RowVector::Zero(2);
    REQUIRE_THROWS_WITH(save_finding(sys, one, 1), Contains("save_finding()") && Contains("cannot create"));
  }
  fs::permissions(ro, fs::perms::owner_all);
}

namespace {
// Starts a campaign in a child process `rounds` times, SIGKILLs it at a random moment, and checks
// that every finding it reported is on disk and that the directory loads and resumes.
void kill_campaigns(int rounds, std::uint64_t pick_seed) {
  TempDir t;
  Rng pick(pick_seed);
  int kills = 0, reported_total = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string dir = (t.dir / ("kill" + std::to_string(round))).string();
    // The campaign: a long run that keeps finding the planted NaN; each finding is reported on
    // the pipe (as a printer would print it) after the saver has written it.
    const Child child = fork_with_pipe([&](int fd) {
      struct Reporter {
        int fd;
        void on_finding(const Finding& f, const FuzzStats&) {
          const std::string line = std::to_string(f.execution) + "\n";
          if (::write(fd, line.data(), line.size()) < 0) std::_Exit(3);
        }
      } reporter{fd};
      auto f = planted(static_cast<std::uint64_t>(round + 1), 50000000);
      CampaignSaver saver(dir, 1, 0.05, every_input());
      f.run(planted_seeds(), saver, reporter);
    });
    ::usleep(static_cast<useconds_t>(150000 + pick.uniform_index(600000)));  // 0.15 - 0.75 s
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    kills += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    const std::string got = read_all_and_close(child.read_fd);
    std::vector<std::uint64_t> reported;
    for (std::size_t at = 0, nl; (nl = got.find('\n', at)) != std::string::npos; at = nl + 1)
      reported.push_back(std::stoull(got.substr(at, nl - at)));
    reported_total += static_cast<int>(reported.size());
    const auto saved = load_findings(dir);  // loads: no torn file
    for (std::uint64_t e : reported) {
      bool there = false;
      for (const auto& s : saved) there = there || s.finding.execution == e;
      INFO("round " << round << " reported execution " << e);
      CHECK(there);
    }
    if (fs::exists(fs::path(dir) / "corpus.bin")) {
      const Corpus c = load_corpus(dir);
      auto resumed = planted(7, 2000);
      CHECK(resumed.resume(c).stats.iterations > 0);
    }
  }
  CHECK(kills == rounds);
  CHECK(reported_total > 0);  // the kills did land while findings were being made
}
}  // namespace

TEST_CASE("Campaign: SIGKILL at random moments loses no reported finding - the directory loads and resumes",
          "[campaign]") {
  kill_campaigns(5, 99);
}

TEST_CASE("Campaign: 40 more SIGKILLs", "[campaign][.slow]") { kill_campaigns(40, 2026); }

TEST_CASE("Campaign: findings group by signature with counts", "[campaign]") {
  std::vector<Finding> f(5);
  const char* what[] = {"non-finite in 'y'", "non-finite in 'y'", "non-finite in 'loss'", "non-finite in 'y'",
                        "non-finite in 'y'"};
  const Index root[] = {0, 0, 0, 1, 0};
  for (int i = 0; i < 5; ++i) {
    f[i].what = what[i];
    f[i].root = root[i];
    f[i].execution = static_cast<std::uint64_t>(100 - i);
  }
  const auto g = group_findings(f);
  REQUIRE(g.size() == 3);
  CHECK(g[0].what == "non-finite in 'y'");
  CHECK(g[0].root == 0);
  CHECK(g[0].count == 3);
  CHECK(g[0].first == 4);  // the earliest execution of the group
  CHECK(g[1].count == 1);
  CHECK(g[2].root == 1);
}

TEST_CASE("Campaign: a full disk (file-size quota) gives a clear error, not a crash", "[campaign]") {
  // RLIMIT_FSIZE makes writes past 8 KiB fail with EFBIG, as a full quota would; run in a child
  // so the limit does not leak into the other tests. Works as root, unlike a read-only directory.
  TempDir t;
  const std::string dir = (t.dir / "full").string();
  auto f = planted(1, 20000);
  f.run(planted_seeds(100));  // a corpus of well over 8 KiB
  REQUIRE(f.corpus().memory_bytes() > 2 * 8192);
  const Child child = fork_with_pipe([&](int fd) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{8192, 8192};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    std::string msg = "no error";
    try {
      save_corpus(dir, f.corpus());
    } catch (const std::invalid_argument& e) {
      msg = e.what();
    }
    if (::write(fd, msg.data(), msg.size()) < 0) std::_Exit(3);
  });
  const std::string msg = read_all_and_close(child.read_fd);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  INFO(msg);
  CHECK(msg.find("save_corpus(): cannot write") != std::string::npos);
  CHECK(msg.find("File too large") != std::string::npos);
  // Nothing half-written is left where a loader would look.
  CHECK_FALSE(fs::exists(fs::path(dir) / "corpus.bin"));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().string().find(".tmp.") == std::string::npos);
}

// --- Campaigns under abuse (issue 16) ---

namespace {
// A model whose coverage is NaN for inputs with a negative first element: a seed can start with
// a non-finite coverage vector (a seed that is already a finding).
struct NanCoverageModel {
  struct Output {
    RowMatrix coverage, y;
    template <class F>
    void for_each_tensor(F&& f) const {
      f("y", y);
    }
  };
  Index input_dim() const { return 4; }
  void evaluate(const Eigen::Ref<const RowMatrix>& batch, Output& out) const {
    out.coverage = batch.rowwise().mean();
    for (Index r = 0; r < batch.rows(); ++r)
      if (batch(r, 0) < 0) out.coverage(r, 0) = std::numeric_limits<float>::quiet_NaN();
    out.y = out.coverage;
  }
};
}  // namespace

TEST_CASE("Campaign: a seed with a non-finite coverage vector saves, loads and resumes", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "nan_seed").string();
  FuzzOptions o;
  o.batch_size = 20;
  o.max_executions = 400;
  o.max_findings = 0;
  auto f = make_fuzzer(NanCoverageModel{}, RecentSampler(), GaussianMutator(0.05f, {-1.0f, 1.0f}),
                       BruteForceCoverage(0.01f), NonFiniteObjective(), o);
  RowMatrix seeds = RowMatrix::Constant(3, 4, 0.5f);
  seeds(1, 0) = -0.5f;  // its coverage is NaN
  {
    CampaignSaver saver(dir, 1);
    f.run(seeds, saver);
  }
  const Corpus back = load_corpus(dir);  // used to throw: "element 1 holds a non-finite value"
  REQUIRE(back.size() == f.corpus().size());
  CHECK(std::isnan(back.coverage(1)(0)));
  CHECK_NOTHROW(f.resume(back));
}

TEST_CASE("Campaign: the writer refuses, before writing, every corpus the loader refuses", "[campaign]") {
  using Catch::Contains;
  TempDir t;
  const std::string dir = (t.dir / "w").string();
  const std::string file = (fs::path(dir) / "corpus.bin").string();
  RowVector in = RowVector::Constant(4, 0.5f), cov = RowVector::Constant(2, 1.0f);
  // A good corpus first: it must stay intact through every refused write below.
  Corpus good(4, 2);
  good.add(in.data(), cov.data(), -1, 0, 0, 0);
  save_corpus(dir, good);
  const auto before = fs::file_size(file);
  REQUIRE(load_corpus(dir).size() == 1);

  CHECK_THROWS_WITH(save_corpus(dir, Corpus(4, 2)), Contains("save_corpus()") && Contains("no elements"));
  Corpus zero_cov(4, 0);
  zero_cov.add(in.data(), cov.data(), -1, 0, 0, 0);
  CHECK_THROWS_WITH(save_corpus(dir, zero_cov), Contains("coverage width 0"));
  Corpus nan_input(4, 2);
  RowVector bad = in;
  bad(2) = std::numeric_limits<float>::infinity();
  nan_input.add(bad.data(), cov.data(), -1, 0, 0, 0);
  CHECK_THROWS_WITH(save_corpus(dir, nan_input), Contains("element 0 has a non-finite input"));
  Corpus lineage(4, 2);
  lineage.add(in.data(), cov.data(), 3, 0, 1, 5);  // parent after itself
  CHECK_THROWS_WITH(save_corpus(dir, lineage), Contains("inconsistent lineage"));
  {
    const Index wide = (Index{1} << 24) + 1;  // one past the loader's limit
    Corpus too_wide(1, wide);
    RowVector big = RowVector::Zero(wide);
    too_wide.add(in.data(), big.data(), -1, 0, 0, 0);
    CHECK_THROWS_WITH(save_corpus(dir, too_wide), Contains("coverage width 16777217"));
  }
  CHECK(fs::file_size(file) == before);
  CHECK(load_corpus(dir).size() == 1);
  // Edges the loader accepts, written and read back: width 1 and non-finite coverage.
  Corpus edge(1, 1);
  const float one = 1.0f, inf = std::numeric_limits<float>::infinity();
  edge.add(&one, &inf, -1, 0, 0, 0);
  edge.add(&one, &one, 0, 0, 1, 9);
  save_corpus(dir, edge);
  const Corpus e2 = load_corpus(dir);
  CHECK(e2.size() == 2);
  CHECK(e2.coverage(0)(0) == inf);
  // Findings: widths outside the loader's range are refused before writing.
  Finding empty;
  CHECK_THROWS_WITH(save_finding(dir, empty, 1), Contains("save_finding()") && Contains("width 0"));
}

TEST_CASE("Campaign: input_parts() sees both input kinds as parts, and files, signatures and refusals go through it",
          "[campaign]") {
  using Catch::Contains;
  TempDir t;
  const std::string dir = (t.dir / "parts").string();
  Finding dense;
  dense.input = RowVector::LinSpaced(3, 0.0f, 1.0f);
  REQUIRE_FALSE(dense.structured());
  const std::vector<FindingPart> d = input_parts(dense);
  REQUIRE(d.size() == 1);
  CHECK((d[0].kind == InputPart::Kind::floats && d[0].size == 3 && d[0].floats == dense.input.data() && !d[0].ids));

  Finding text;
  text.value = InputValue(InputLayout().tokens("prompt", 10, 4).floats("noise", 2));
  text.value.tokens[0] = {3, 1, 4};
  text.value.floats[1] << 0.5f, -0.25f;
  REQUIRE(text.structured());
  const std::vector<FindingPart> p = input_parts(text);
  REQUIRE(p.size() == 2);
  CHECK((p[0].kind == InputPart::Kind::tokens && p[0].size == 3 && p[0].ids[2] == 4 && !p[0].floats));
  CHECK((p[1].kind == InputPart::Kind::floats && p[1].size == 2 && p[1].floats[1] == -0.25f));

  // Both round-trip through their file format (version 1 and 2) with their signature.
  for (const Finding* f : {&dense, &text}) {
    const SavedFinding back = load_finding(save_finding(dir, *f, 7));
    CHECK(back.finding.input == f->input);
    CHECK(back.finding.value == f->value);
    CHECK(finding_signature(back.finding) == finding_signature(*f));
  }
  CHECK(finding_signature(dense) != finding_signature(text));
  Finding moved = dense;
  moved.input(1) += 0.125f;
  CHECK(finding_signature(moved) != finding_signature(dense));

  // Refusals name the part: a slot with ids and floats, a negative id, a NaN in a float part.
  Finding both = text;
  both.value.floats[0] = RowVector::Ones(2);
  CHECK_THROWS_WITH(save_finding(dir, both, 1), Contains("save_finding(): finding part 0") && Contains("not both"));
  Finding negative = text;
  negative.value.tokens[0][1] = -2;
  CHECK_THROWS_WITH(save_finding(dir, negative, 1), Contains("part 0 holds a negative token id -2"));
  Finding nan = text;
  nan.value.floats[1](0) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(save_finding(dir, nan, 1), Contains("part 1 holds a non-finite input value"));
  Finding uneven = text;
  uneven.value.floats.pop_back();
  CHECK_THROWS_WITH(save_finding(dir, uneven, 1), Contains("2 token and 1 float part slots"));
  CHECK(load_findings(dir).size() == 2);  // nothing refused was written
}

TEST_CASE("Campaign: two writers in one directory lose nothing", "[campaign]") {
  using Catch::Contains;
  TempDir t;
  const std::string dir = (t.dir / "shared").string();
  // Two savers on one directory: the second is refused, naming the holder.
  {
    CampaignSaver first(dir, 1);
    CHECK_THROWS_WITH(CampaignSaver(dir, 2),
                      Contains("CampaignSaver()") && Contains("in use by process " + std::to_string(::getpid())));
  }
  CHECK_NOTHROW(CampaignSaver(dir, 3));  // released with the first
  // Two processes writing findings with the same execution numbers at once: every one lands.
  constexpr int kEach = 400;
  auto writer = [&](int) {
    Finding f;
    f.input = RowVector::Constant(8, 0.25f);
    for (int i = 0; i < kEach; ++i) {
      f.execution = static_cast<std::uint64_t>(i);
      save_finding(dir, f, 7);
    }
  };
  const Child a = fork_with_pipe(writer), b = fork_with_pipe(writer);
  for (const Child& c : {a, b}) {
    int status = 0;
    ::waitpid(c.pid, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    ::close(c.read_fd);
  }
  CHECK(load_findings(dir).size() == 2 * kEach);
}

TEST_CASE("Campaign: SIGTERM and SIGINT end a run with a final checkpoint (StopOnSignal)", "[campaign]") {
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir t;
    const std::string dir = (t.dir / "sig").string();
    const Child child = fork_with_pipe([&](int fd) {
      struct Ready {
        int fd;
        bool told = false;
        void on_batch(const FuzzStats& st) {
          if (!told && st.corpus_size > 20) {
            told = true;
            if (::write(fd, "go\n", 3) != 3) std::_Exit(3);
          }
        }
      } ready{fd};
      auto f = planted(5, 500000000);
      CampaignSaver saver(dir, 5, 1e6);  // no periodic checkpoint: only the first and the final one
      StopOnSignal stop;
      const FuzzResult r = f.run(planted_seeds(), saver, stop, ready);
      const std::string line = std::to_string(r.stats.corpus_size) + " " + std::to_string(stop.received()) + "\n";
      if (::write(fd, line.data(), line.size()) < 0) std::_Exit(3);
    });
    char buf[3];
    REQUIRE(::read(child.read_fd, buf, 3) == 3);  // the corpus grew past the first checkpoint
    ::usleep(100000);
    ::kill(child.pid, sig);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    INFO("signal " << sig);
    REQUIRE(WIFEXITED(status));  // returned from run(), not killed
    CHECK(WEXITSTATUS(status) == 0);
    const std::string got = read_all_and_close(child.read_fd);
    const Index final_size = std::stoll(got);
    CHECK(got.find(" " + std::to_string(sig)) != std::string::npos);
    CHECK(final_size > 20);
    CHECK(load_corpus(dir).size() == final_size);  // the final checkpoint is the whole corpus
  }
}

TEST_CASE("Campaign: CampaignSaver validates its options - bad paths are clear errors", "[campaign]") {
  using Catch::Contains;
  TempDir t;
  const std::string dir = (t.dir / "opts").string();
  CHECK_THROWS_WITH(CampaignSaver(dir, 1, std::nan("")), Contains("'checkpoint_seconds'") && Contains("nan"));
  CHECK_THROWS_WITH(CampaignSaver(dir, 1, -1.0), Contains("'checkpoint_seconds'"));
  CHECK_THROWS_WITH(CampaignSaver("", 1), Contains("'dir' is empty"));
  // corpus.bin that is not a regular file; findings/ that is a file.
  fs::create_directories(fs::path(dir) / "corpus.bin");
  CHECK_THROWS_WITH(load_corpus(dir), Contains("load_corpus()") && Contains("is not a regular file"));
  const std::string other = (t.dir / "other").string();
  fs::create_directories(other);
  std::ofstream(fs::path(other) / "findings") << "not a directory";
  CHECK_THROWS_WITH(load_findings(other), Contains("load_findings()") && Contains("is not a directory"));
  if (::geteuid() != 0) {  // root reads anything
    const fs::path unreadable = fs::path(other) / "corpus.bin";
    std::ofstream(unreadable) << "0123456789abcdef0123";
    fs::permissions(unreadable, fs::perms::none);
    CHECK_THROWS_WITH(load_corpus(other), Contains("cannot open") && Contains("Permission denied"));
  }
}

TEST_CASE("Campaign: temporary files of dead writers are removed when a campaign is opened", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "stale").string();
  fs::create_directories(fs::path(dir) / "findings");
  // A pid that does not run: a child that has exited and been reaped.
  const pid_t dead = ::fork();
  if (dead == 0) std::_Exit(0);
  ::waitpid(dead, nullptr, 0);
  const auto stale1 = fs::path(dir) / ("corpus.bin.tmp." + std::to_string(dead) + ".0");
  const auto stale2 = fs::path(dir) / "findings" / ("finding-5-1-0.bin.tmp." + std::to_string(dead) + ".3");
  const auto live = fs::path(dir) / ("corpus.bin.tmp." + std::to_string(::getpid()) + ".99");
  for (const auto& p : {stale1, stale2, live}) std::ofstream(p) << "partial";
  CampaignSaver saver(dir, 1);
  CHECK(saver.stale_files_removed() == 2);
  CHECK(!fs::exists(stale1));
  CHECK(!fs::exists(stale2));
  CHECK(fs::exists(live));
}

TEST_CASE("Campaign: nnfuzz's CRC-32 equals zlib's, at every length and alignment", "[campaign]") {
  Rng rng(11);
  std::vector<std::uint8_t> data(70000);
  for (auto& b : data) b = static_cast<std::uint8_t>(rng.uniform_index(256));
  for (std::size_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096, 69999}) {
    for (std::size_t off : {0, 1, 5}) {
      if (off + n > data.size()) continue;
      const auto ours = detail::crc32_update(0, data.data() + off, n);
      const auto zlibs = static_cast<std::uint32_t>(crc32(0L, data.data() + off, static_cast<uInt>(n)));
      CHECK(ours == zlibs);
    }
  }
  // Continuing a CRC over pieces equals one pass.
  const auto whole = detail::crc32_update(0, data.data(), data.size());
  CHECK(detail::crc32_update(detail::crc32_update(0, data.data(), 12345), data.data() + 12345, data.size() - 12345) ==
        whole);
}

TEST_CASE("Campaign: CRC-32 over more than 4 GiB checks every byte", "[campaign][.slow]") {
  // A sparse 4 GiB + 1 KiB file, mapped: zlib's crc32_z over size_t lengths is the reference; a
  // byte changed at 2.9 GB changes the checksum (a 32-bit length would only cover size mod 2^32).
  TempDir t;
  const auto path = t.dir / "big.bin";
  const std::size_t size = (std::size_t{1} << 32) + 1024;
  {
    std::ofstream(path).put('\0');
    fs::resize_file(path, size);
  }
  const int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  auto* p = static_cast<std::uint8_t*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  REQUIRE(p != MAP_FAILED);
  p[size - 1] = 0x5a;
  const auto before = detail::crc32_update(0, p, size);
  CHECK(before == static_cast<std::uint32_t>(crc32_z(0L, p, size)));
  p[std::size_t{2900000000}] ^= 1;
  const auto after = detail::crc32_update(0, p, size);
  CHECK(after != before);
  CHECK(after == static_cast<std::uint32_t>(crc32_z(0L, p, size)));
  ::munmap(p, size);
  ::close(fd);
}

TEST_CASE("Campaign: a corpus or findings/ the user may not read says so (EACCES), never 'missing' or empty",
          "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  using Catch::Contains;
  auto f = planted(1, 60000);
  CampaignSaver saver(dir, 1);
  const FuzzResult r = f.run(planted_seeds(), saver);
  REQUIRE(r.found());
  REQUIRE(!load_findings(dir).empty());
  // A directory only its owner (root in CI) may enter; then a file only its owner may read.
  fs::permissions(dir, fs::perms::owner_all);
  std::string got = nnfuzz_test::run_unprivileged([&] {
    std::string out;
    try {
      load_corpus(dir);
      out += "corpus loaded\n";
    } catch (const std::exception& e) {
      out += std::string("corpus: ") + e.what() + "\n";
    }
    try {
      out += "findings: " + std::to_string(load_findings(dir).size()) + "\n";
    } catch (const std::exception& e) {
      out += std::string("findings: ") + e.what() + "\n";
    }
    return out;
  });
  INFO(got);
  CHECK_THAT(got, Contains("corpus: load_corpus()") && Contains("Permission denied") && !Contains("does not exist"));
  CHECK_THAT(got, Contains("findings: load_findings()") && Contains((fs::path(dir) / "findings").string()));
  fs::permissions(dir, fs::perms::all);
  fs::permissions(fs::path(dir) / "corpus.bin", fs::perms::owner_read | fs::perms::owner_write);
  got = nnfuzz_test::run_unprivileged([&] {
    try {
      load_corpus(dir);
      return std::string("corpus loaded");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  CHECK_THAT(got, Contains("load_corpus()") && Contains("corpus.bin") && Contains("Permission denied"));
}

TEST_CASE("Campaign: a finding with a non-finite input is refused by the writer and the loader", "[campaign]") {
  using Catch::Contains;
  TempDir t;
  Finding f;
  f.input = RowVector::Constant(16, 0.5f);
  f.input(3) = std::numeric_limits<float>::infinity();
  f.what = "x";
  CHECK_THROWS_WITH(save_finding(t.dir.string(), f, 1), Contains("save_finding()") && Contains("non-finite"));
}
