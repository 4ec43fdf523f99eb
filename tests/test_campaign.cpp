#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/io/campaign.hpp>

#include "support/planted.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace nnfuzz;
namespace fs = std::filesystem;
using nnfuzz_test::planted_seeds;
using nnfuzz_test::PlantedModel;

namespace {
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("nnfuzz_campaign_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
};
auto planted(std::uint64_t seed, std::uint64_t executions) {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = seed;
  return make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f), NonFiniteObjective(), o);
}
// A child process running body(write_fd) then exiting 0, with a pipe back to the parent.
struct Child {
  pid_t pid;
  int read_fd;  // the parent's end of the pipe
};
template <typename Body>
Child fork_with_pipe(Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    body(fds[1]);
    std::_Exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}
// Everything a child wrote on a pipe, until it closed its end.
std::string read_all_and_close(int fd) {
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return got;
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

TEST_CASE("Campaign: findings are on disk when reported; corpus and findings load back", "[campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "c").string();
  auto f = planted(1, 60000);
  CampaignSaver saver(dir, 1, 0.05);  // checkpoints every 50 ms: several per run
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
  std::uint64_t last = 0;
  for (const auto& e : saved.entries()) last = std::max(last, e.execution);
  CHECK(ra.stats.executions == last + 20000);  // numbering goes on; the budget is this session's
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
  auto write = [&](const std::vector<char>& b) { std::ofstream(corpus, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size())); };
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
  REQUIRE_THROWS_WITH(load_corpus((t.dir / "missing").string()), Contains("load_corpus()") && Contains("does not exist"));
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
    REQUIRE_THROWS_WITH(save_corpus(sys, f.corpus()), Contains("save_corpus()") && Contains("cannot create") && Contains(sys));
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
      CampaignSaver saver(dir, 1, 0.05);
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

TEST_CASE("Campaign: SIGKILL at random moments loses no reported finding; the directory loads and resumes", "[campaign]") {
  kill_campaigns(5, 99);
}

TEST_CASE("Campaign: 40 more SIGKILLs", "[campaign][.slow]") { kill_campaigns(40, 2026); }


TEST_CASE("Campaign: findings group by signature with counts", "[campaign]") {
  std::vector<Finding> f(5);
  const char* what[] = {"non-finite in 'y'", "non-finite in 'y'", "non-finite in 'loss'", "non-finite in 'y'", "non-finite in 'y'"};
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
