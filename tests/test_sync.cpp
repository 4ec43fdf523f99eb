// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/campaign/sync.hpp>

#include "support/alloc_tracker.hpp"
#include "support/child_process.hpp"
#include "support/planted.hpp"
#include "support/temp_dir.hpp"
#include "support/token_model.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <sys/wait.h>

using namespace nnfuzz;
namespace fs = std::filesystem;
using Catch::Contains;
using nnfuzz_test::planted_seeds;
using nnfuzz_test::PlantedModel;

namespace {
struct TempDir : nnfuzz_test::TempDir {
  TempDir() : nnfuzz_test::TempDir("nnfuzz_sync") {}
};
// An objective that never fires: most tests are about the corpus, and each finding is a durable
// write (an fsync), which a shared CI disk makes slow.
struct Never {
  bool operator()(const PlantedModel::Output&, Index) const { return false; }
};
template <typename Objective = Never>
auto planted(std::uint64_t seed, std::uint64_t executions, Objective objective = Objective()) {
  FuzzOptions o;
  o.batch_size = 50;
  o.max_executions = executions;
  o.max_findings = 0;
  o.seed = seed;
  return make_fuzzer(PlantedModel{}, RecentSampler(), GaussianMutator(0.05f), KdTreeCoverage(0.005f), objective, o);
}
// Syncs by executions only: deterministic.
SyncOptions every(std::uint64_t executions) {
  SyncOptions o;
  o.interval_seconds = 0;
  o.interval_executions = executions;
  o.checkpoint_seconds = 1e9;  // at the first sync and at the end
  return o;
}
// Every element of a worker's queue files, read as one corpus.
Corpus queued(const std::string& sync, const std::string& worker, std::uint64_t* files = nullptr) {
  const std::string q = (fs::path(sync) / worker / "queue").string();
  Corpus all(16, 1);
  std::uint64_t n = 0;
  for (; fs::exists(fs::path(q) / sync_queue_name(n)); ++n) {
    const Corpus c = load_corpus(q, sync_queue_name(n));
    for (Index i = 0; i < c.size(); ++i) all.add(c.input(i).data(), c.coverage(i).data(), -1, all.size(), 0, 0);
  }
  if (files) *files = n;
  return all;
}
// How many of `c`'s coverage vectors are new to (a copy of) a fuzzer's coverage.
template <typename Cov>
Index new_to(const Cov& coverage, const Corpus& c) {
  if (c.empty()) return 0;
  Cov copy = coverage;
  RowMatrix v(c.size(), c.coverage_dim());
  for (Index i = 0; i < c.size(); ++i) v.row(i) = c.coverage(i);
  Mask m;
  copy.observe(v, m);
  return static_cast<Index>(m.count());
}
// A chunk file of two dense elements of width `dim` at SYNC/<worker>/queue/<seq>.
std::string write_chunk(const std::string& sync, const std::string& worker, std::uint64_t seq, Index dim = 16,
                        float value = 0.5f) {
  Corpus c(dim, 1);
  const RowVector in = RowVector::Constant(dim, value);
  const float cov[1] = {value};
  c.add(in.data(), cov, -1, 0, 0, 1);
  const float cov2[1] = {value + 0.1f};
  c.add(in.data(), cov2, -1, 1, 0, 2);
  const std::string q = (fs::path(sync) / worker / "queue").string();
  save_corpus(q, c, sync_queue_name(seq));
  return (fs::path(q) / sync_queue_name(seq)).string();
}
// A corpus of one dense element (16 zeros, coverage -1): a worker's own corpus, for direct calls.
Corpus one_element() {
  Corpus c(16, 1);
  const RowVector x = RowVector::Zero(16);
  const float cov[1] = {-1};
  c.add(x.data(), cov, -1, 0, 0, 0);
  return c;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST_CASE("Sync: a late joiner takes every element its peer queued - imports are not queued again", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  auto fa = planted(1, 20000);
  SyncDirectory a(sync, "a", every(1000));
  fa.run(planted_seeds(), a);
  REQUIRE(a.counters().exported > 0);
  std::uint64_t files = 0;
  const Corpus from_a = queued(sync, "a", &files);
  CHECK(files == a.counters().queue_files);
  CHECK(static_cast<std::uint64_t>(from_a.size()) == a.counters().exported);
  // A's queue holds exactly the elements it found itself (not its seeds).
  CHECK(from_a.size() == fa.corpus().size() - planted_seeds().rows());

  auto fb = planted(2, 2000);
  SyncDirectory b(sync, "b", every(1000));
  const FuzzResult rb = fb.run(planted_seeds(), b);
  CHECK(b.counters().files_read == files);
  CHECK(b.counters().offered == a.counters().exported);
  CHECK(rb.stats.imported > 0);
  CHECK(static_cast<std::uint64_t>(rb.stats.imported) <= b.counters().offered);
  CHECK(new_to(fb.coverage(), from_a) == 0);  // caught up: nothing of A's is new to B
  // Imported elements are roots (parent -1, root = itself) and are not in B's queue.
  Index imported = 0, own = 0;
  for (const CorpusEntry& e : fb.corpus().entries()) {
    if (e.id < planted_seeds().rows()) continue;
    if (e.parent < 0) {
      CHECK(e.root == e.id);
      CHECK(e.depth == 0);
      ++imported;
    } else {
      ++own;
    }
  }
  CHECK(imported == rb.stats.imported);
  CHECK(static_cast<Index>(b.counters().exported) == own);
  CHECK(b.watermarks().at("a") == files);
  CHECK(b.errors().empty());
}

TEST_CASE("Sync: findings are deduplicated across workers by the signature of their input", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  RowMatrix seeds = planted_seeds();
  seeds.row(3).setConstant(0.815f);  // a seed inside the NaN band: every worker finds it first
  auto fa = planted(1, 12000, NonFiniteObjective());
  FuzzOptions few = fa.options();
  few.max_findings = 6;
  fa.set_options(few);
  SyncDirectory a(sync, "a", every(1000));
  const FuzzResult ra = fa.run(seeds, a);
  REQUIRE(ra.findings.size() >= 2);
  CHECK(a.counters().findings == ra.findings.size());  // all distinct inputs
  auto fb = planted(2, 12000, NonFiniteObjective());
  few.seed = 2;
  fb.set_options(few);
  SyncDirectory b(sync, "b", every(1000));
  const FuzzResult rb = fb.run(seeds, b);
  CHECK(b.counters().duplicate_findings >= 1);  // the seed's finding, already on disk from A
  CHECK(b.counters().findings + b.counters().duplicate_findings + b.counters().repeat_findings == rb.findings.size());
  std::set<std::uint64_t> signatures;
  std::size_t files = 0;
  for (const char* w : {"a", "b"})
    for (const SavedFinding& s : load_findings((fs::path(sync) / w).string())) {
      ++files;
      signatures.insert(finding_signature(s.finding));
    }
  CHECK(files == signatures.size());  // no input written twice in the campaign
  CHECK(files == a.counters().findings + b.counters().findings);
  // A restarted worker knows the campaign's findings from the start.
  Finding seed_finding = ra.findings.front();
  REQUIRE(seed_finding.depth == 0);
  SyncDirectory c(sync, "c", every(1000));
  c.on_finding(seed_finding, FuzzStats{});
  CHECK(c.counters().duplicate_findings == 1);
  CHECK(finding_signature(seed_finding) == finding_signature(load_findings(a.worker_dir()).front().finding));
}

TEST_CASE("Sync: a peer's temporary file is never read - a torn or foreign file is rejected naming it", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  // A writer caught between create and rename: only a temporary name exists.
  const std::string valid = write_chunk(sync, "p", 0);
  const std::string bytes = slurp(valid);
  fs::rename(valid, valid + ".tmp.999999.0");
  std::ofstream(valid + ".tmp.999999.1", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  {
    auto f = planted(1, 2000);
    SyncDirectory s(sync, "w", every(500));
    f.run(planted_seeds(), s);
    CHECK(s.counters().files_read == 0);
    CHECK(s.counters().bad_files == 0);
    CHECK(s.errors().empty());
    CHECK(s.watermarks().at("p") == 0);
  }
  // A torn file under the final name (a file system that broke the protocol): skipped and
  // reported, naming it; the run goes on. With strict, it stops the run with that message.
  std::ofstream(valid, std::ios::binary) << bytes.substr(0, bytes.size() - 9);
  {
    auto f = planted(1, 2000);
    SyncDirectory s(sync, "x", every(500));
    const FuzzResult r = f.run(planted_seeds(), s);
    CHECK(r.stats.executions == 2000);
    REQUIRE(s.errors().size() == 1);
    CHECK_THAT(s.errors()[0], Contains(valid) && Contains("load_corpus()"));
    CHECK(s.counters().bad_files == 1);
    CHECK(s.watermarks().at("p") == 1);  // not read again
  }
  {
    auto f = planted(1, 2000);
    SyncOptions o = every(500);
    o.strict = true;
    SyncDirectory s(sync, "y", o);
    REQUIRE_THROWS_WITH(f.run(planted_seeds(), s), Contains(valid));
  }
  // Another model's elements (inputs of 8 floats): refused, naming the file and both shapes.
  const std::string foreign = write_chunk(sync, "q", 0, 8);
  auto f = planted(1, 2000);
  SyncDirectory s(sync, "z", every(500));
  f.run(planted_seeds(), s);
  bool named = false;
  for (const auto& e : s.errors())
    named = named || (e.find(foreign) != std::string::npos && e.find("same model") != std::string::npos);
  CHECK(named);
  // Bad ids and a second worker with one id are refused.
  REQUIRE_THROWS_WITH(SyncDirectory(sync, "../a"), Contains("worker id '../a'"));
  REQUIRE_THROWS_WITH(SyncDirectory(sync, ""), Contains("worker id"));
  REQUIRE_THROWS_WITH(SyncDirectory(sync, "z"), Contains("in use by process"));
}

TEST_CASE("Sync: a watermark per peer — a sync reads only the files written since the last one", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  for (std::uint64_t i = 0; i < 40; ++i) write_chunk(sync, "p", i, 16, 0.01f * static_cast<float>(i));
  for (int i = 0; i < 200; ++i)  // clutter a reader must not list or open
    std::ofstream((fs::path(sync) / "p" / "queue" / ("000000000999.bin.tmp.1." + std::to_string(i))).string()) << "x";
  SyncDirectory w(sync, "w", every(100));
  Corpus mine = one_element(), incoming(16, 1);
  FuzzStats st;
  w.on_start(st);
  w.on_corpus(mine, st);
  w.on_import(mine, incoming, st);
  CHECK(w.counters().files_read == 40);
  CHECK(incoming.size() == 80);
  for (std::uint64_t round = 0; round < 5; ++round) {
    for (std::uint64_t k = 0; k <= round; ++k) write_chunk(sync, "p", 40 + round * (round + 1) / 2 + k);
    const std::uint64_t before = w.counters().files_read;
    incoming.reset(16, 1);
    st.executions += 100;
    w.on_import(mine, incoming, st);
    CHECK(w.counters().files_read - before == round + 1);  // the new files, whatever the total
    CHECK(incoming.size() == static_cast<Index>(2 * (round + 1)));
  }
  // Not due yet: nothing is read.
  write_chunk(sync, "p", 55);
  incoming.reset(16, 1);
  st.executions += 50;
  w.on_import(mine, incoming, st);
  CHECK(incoming.size() == 0);
  // A worker that joins later (a new directory) is found at the next sync, from its file 0.
  write_chunk(sync, "late", 0);
  incoming.reset(16, 1);
  st.executions += 100;
  w.on_import(mine, incoming, st);
  CHECK(incoming.size() == 4);  // p's file 55 and late's file 0
  CHECK(w.watermarks().at("late") == 1);
  CHECK(w.watermarks().at("p") == 56);
}

TEST_CASE("Sync: a restarted worker takes back what it queued after its last checkpoint", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  SyncOptions o = every(100);
  Corpus c(16, 1), incoming(16, 1);
  const RowVector x = RowVector::Zero(16);
  const float v0[1] = {0}, v1[1] = {1}, v2[1] = {2};
  c.add(x.data(), v0, -1, 0, 0, 0);
  FuzzStats st;
  {
    SyncDirectory a(sync, "a", o);  // checkpoints at its first sync only
    a.on_start(st);
    a.on_corpus(c, st);
    st.executions = 100;
    a.on_import(c, incoming, st);
    CHECK(a.counters().checkpoints == 1);
    c.add(x.data(), v1, 0, 0, 1, 150);  // found by this worker
    c.add(x.data(), v2, 1, 0, 2, 180);
    st.executions = 200;
    a.on_import(c, incoming, st);  // queued, not checkpointed; then the process dies
    CHECK(a.counters().exported == 2);
    CHECK(a.counters().checkpoints == 1);
  }
  SyncDirectory a(sync, "a", o);
  REQUIRE(a.resumable());
  const Corpus back = load_corpus(a.worker_dir());
  CHECK(back.size() == 1);
  st = FuzzStats{};
  st.executions = back.executions();
  a.on_start(st);
  a.on_corpus(back, st);
  a.on_import(back, incoming, st);
  CHECK(a.counters().restored == 2);
  REQUIRE(incoming.size() == 2);
  CHECK(incoming.coverage(0)(0) == 1);
  CHECK(incoming.coverage(1)(0) == 2);
  CHECK(a.counters().offered == 0);  // its own, not a peer's
}

TEST_CASE("Sync: token inputs are shared as dense ones are", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  StructuredMutatorOptions edits;
  edits.max_edits = 2;
  FuzzOptions o;
  o.batch_size = 20;
  o.max_executions = 4000;
  o.max_findings = 0;
  auto token_fuzzer = [&](std::uint64_t seed) {
    o.seed = seed;
    return make_fuzzer(
        nnfuzz_test::TokenModel{true}, RecentSampler(), StructuredMutator(edits), BruteForceCoverage(0.5f),
        [](const nnfuzz_test::TokenModel::Output&, Index) { return false; }, o);
  };
  std::vector<InputValue> seeds = nnfuzz_test::token_seeds();
  for (auto& s : seeds) {
    s.tokens.emplace_back();
    s.floats.push_back(RowVector::Constant(4, 0.25f));
  }
  auto fa = token_fuzzer(1);
  SyncDirectory a(sync, "a", every(200));
  fa.run(seeds, a);
  REQUIRE(a.counters().exported > 0);
  auto fb = token_fuzzer(2);
  SyncDirectory b(sync, "b", every(200));
  const FuzzResult rb = fb.run(seeds, b);
  CHECK(b.counters().offered == a.counters().exported);
  CHECK(rb.stats.imported > 0);
  for (const CorpusEntry& e : fb.corpus().entries())
    if (e.parent < 0 && e.id >= static_cast<Index>(seeds.size())) {  // an import: the same input as A's
      const InputValue v = fb.corpus().view(e.id).value();
      CHECK(v.tokens[0].size() >= 1);
      CHECK(v.floats[1].size() == 4);
    }
  // B's restart resumes from its own directory with the tokens intact.
  b.on_end(rb.stats);
  const Corpus back = load_corpus(b.worker_dir());
  CHECK(back.size() == fb.corpus().size());
  CHECK(back.layout() == fb.corpus().layout());
}

TEST_CASE("Sync: stats.json and plot.csv are written for monitors", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  auto f = planted(1, 5000);
  SyncDirectory s(sync, "w-1", every(1000));
  f.run(planted_seeds(), s);
  const std::string json = slurp(s.worker_dir() + "/stats.json");
  CHECK_THAT(json, Contains("\"worker\": \"w-1\"") && Contains("\"executions\": 5000") && Contains("\"finished\": 1") &&
                       Contains("\"pid\": " + std::to_string(::getpid())));
  CHECK(json.front() == '{');
  CHECK(json.substr(json.size() - 2) == "}\n");
  std::ifstream plot(s.worker_dir() + "/plot.csv");
  std::string line;
  std::getline(plot, line);
  CHECK(line == "unix_time,seconds,executions,execs_per_sec,corpus,coverage,findings,imported,exported");
  int rows = 0;
  while (std::getline(plot, line)) ++rows;
  CHECK(rows == static_cast<int>(s.counters().syncs) + 1);  // each sync, and the end
  CHECK(sync_workers(sync) == std::vector<std::string>{"w-1"});
}

namespace {
// Starts worker "a" in a child process, SIGKILLs it at a random moment while worker "b" runs
// beside it, then checks: every finding "a" reported is on disk; every queue file loads; "b"
// took every element "a" queued; "a" restarted resumes from its directory and holds (in its
// coverage) every element it had queued — nothing is lost.
void kill_workers(int rounds, std::uint64_t pick_seed) {
  TempDir t;
  Rng pick(pick_seed);
  int kills = 0, reported_total = 0;
  std::uint64_t restored_total = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string sync = (t.dir / ("kill" + std::to_string(round))).string();
    SyncOptions o = every(500);
    o.checkpoint_seconds = 0.2;  // so that kills land between checkpoints too
    o.interval_seconds = 0;
    o.bugs.samples_per_bug = 0;  // every new input a file: the guarantee tested here (test_bugs.cpp: the limit)
    const auto child = nnfuzz_test::fork_with_pipe([&](int fd) {
      const nnfuzz_test::PipeReporter reporter{fd};
      auto f = planted(static_cast<std::uint64_t>(round + 1), 50000000, NonFiniteObjective());
      SyncDirectory a(sync, "a", o);
      f.run(planted_seeds(), a, reporter);
    });
    auto fb = planted(100 + static_cast<std::uint64_t>(round), 3000);
    SyncDirectory b(sync, "b", every(500));
    fb.run(planted_seeds(), b);
    ::usleep(static_cast<useconds_t>(100000 + pick.uniform_index(400000)));  // 0.1 - 0.5 s
    if (round == 0 && fs::exists(fs::path(sync) / "a" / "stats.json"))
      CHECK_THROWS_WITH(SyncDirectory(sync, "a"), Contains("in use by process"));
    ::kill(child.pid, SIGKILL);
    int status = 0;
    ::waitpid(child.pid, &status, 0);
    kills += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    const std::vector<std::uint64_t> reported = nnfuzz_test::read_reported(child.read_fd);
    reported_total += static_cast<int>(reported.size());
    const auto saved = load_findings((fs::path(sync) / "a").string());
    for (std::uint64_t e : reported) {
      bool there = false;
      for (const auto& s : saved) there = there || s.finding.execution == e;
      INFO("round " << round << " reported execution " << e);
      CHECK(there);
    }
    const Corpus from_a = queued(sync, "a");  // every file loads: no torn file
    // The survivor goes on and takes everything the dead worker queued.
    auto fb2 = planted(200 + static_cast<std::uint64_t>(round), 1000);
    SyncDirectory b2(sync, "c", every(500));
    fb2.run(planted_seeds(), b2);
    CHECK(b2.counters().offered >= static_cast<std::uint64_t>(from_a.size()));
    CHECK(new_to(fb2.coverage(), from_a) == 0);
    // The dead worker restarts from its own directory and loses nothing it had queued.
    auto fa = planted(7, 1000);
    SyncDirectory a(sync, "a", every(500));
    const FuzzResult ra = a.resumable() ? fa.resume(load_corpus(a.worker_dir()), a) : fa.run(planted_seeds(), a);
    CHECK(ra.stats.iterations > 0);
    CHECK(new_to(fa.coverage(), from_a) == 0);
    restored_total += a.counters().restored;
  }
  CHECK(kills == rounds);
  CHECK(reported_total > 0);
  INFO("elements taken back after restarts: " << restored_total);
}
}  // namespace

TEST_CASE("Sync: SIGKILL of a worker loses nothing - the others go on - it resumes from its directory", "[sync]") {
  kill_workers(3, 7);
}

TEST_CASE("Sync: 20 more SIGKILLs", "[sync][.slow]") { kill_workers(20, 2026); }

namespace {
// One sync of worker `s` holding `mine` (found by itself from element 1 on), importing into `incoming`.
void sync_once(SyncDirectory& s, const Corpus& mine, Corpus& incoming, std::uint64_t executions) {
  FuzzStats st;
  st.executions = executions;
  s.on_start(st);
  s.on_corpus(mine, st);
  s.on_import(mine, incoming, st);
}
bool any_error_has(const SyncDirectory& s, const std::string& a, const std::string& b = "") {
  for (const auto& e : s.errors())
    if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("Sync: a restarted worker never overwrites its own queue files - it numbers after the highest", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  for (std::uint64_t i = 0; i < 4; ++i) write_chunk(sync, "a", i, 16, 0.1f * static_cast<float>(i + 1));
  const fs::path q = fs::path(sync) / "a" / "queue";
  fs::remove(q / sync_queue_name(1));  // lost (a broken disk, an operator)
  const std::string before2 = slurp((q / sync_queue_name(2)).string()),
                    before3 = slurp((q / sync_queue_name(3)).string());
  SyncDirectory a(sync, "a", every(100));
  CHECK(a.counters().queue_files == 4);
  CHECK(a.counters().gaps == 1);
  CHECK(any_error_has(a, (q / sync_queue_name(1)).string(), "missing"));
  // Its next export goes after the highest file; files 2 and 3 are untouched.
  Corpus mine(16, 1), incoming(16, 1);
  const RowVector x = RowVector::Zero(16);
  const float v0[1] = {0}, v1[1] = {7};
  mine.add(x.data(), v0, -1, 0, 0, 0);
  mine.add(x.data(), v1, 0, 0, 1, 5);
  FuzzStats st;
  a.on_start(st);
  a.on_corpus(mine, st);  // marks both as there before: add one more found by itself
  mine.add(x.data(), v1, 1, 0, 2, 6);
  st.executions = 100;
  a.on_import(mine, incoming, st);
  CHECK(a.counters().exported == 1);
  CHECK(fs::exists(q / sync_queue_name(4)));
  CHECK(!fs::exists(q / sync_queue_name(1)));
  CHECK(slurp((q / sync_queue_name(2)).string()) == before2);
  CHECK(slurp((q / sync_queue_name(3)).string()) == before3);
}

TEST_CASE(
    "Sync: a gap in a peer's queue is waited on for gap_seconds, then reported and skipped (or stops a strict run)",
    "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  write_chunk(sync, "p", 0, 16, 0.1f);
  write_chunk(sync, "p", 2, 16, 0.3f);
  write_chunk(sync, "p", 3, 16, 0.4f);
  const std::string missing = (fs::path(sync) / "p" / "queue" / sync_queue_name(1)).string();
  Corpus mine(16, 1), incoming(16, 1);
  const RowVector x = RowVector::Zero(16);
  const float v0[1] = {-1};
  mine.add(x.data(), v0, -1, 0, 0, 0);
  {
    SyncOptions o = every(100);
    o.gap_seconds = 1e9;  // still waiting: file 1 may yet appear (a slow shared file system)
    SyncDirectory w(sync, "w", o);
    sync_once(w, mine, incoming, 100);
    CHECK(incoming.size() == 2);
    CHECK(w.watermarks().at("p") == 1);
    CHECK(w.errors().empty());
    CHECK(w.counters().gaps == 0);
  }
  {
    incoming.reset(16, 1);
    SyncOptions o = every(100);
    o.gap_seconds = 0;
    SyncDirectory w(sync, "w2", o);
    sync_once(w, mine, incoming, 100);
    CHECK(incoming.size() == 6);  // files 0, 2 and 3
    CHECK(w.watermarks().at("p") == 4);
    CHECK(w.counters().gaps == 1);
    CHECK(any_error_has(w, missing, "gap"));
  }
  {
    incoming.reset(16, 1);
    SyncOptions o = every(100);
    o.gap_seconds = 0;
    o.strict = true;
    SyncDirectory w(sync, "w3", o);
    CHECK_THROWS_WITH(sync_once(w, mine, incoming, 100), Contains(missing) && Contains("gap"));
  }
  SyncOptions bad = every(100);
  bad.gap_seconds = -1;
  CHECK_THROWS_WITH(SyncDirectory(sync, "w4", bad), Contains("'gap_seconds'") && Contains("-1"));
}

TEST_CASE("Sync: a queue file that is a symlink loop is reported by name, counted, and in stats.json", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  write_chunk(sync, "p", 0);
  const fs::path loop = fs::path(sync) / "p" / "queue" / sync_queue_name(1);
  fs::create_symlink(loop, loop);
  write_chunk(sync, "p", 2);
  Corpus mine(16, 1), incoming(16, 1);
  const RowVector x = RowVector::Zero(16);
  const float v0[1] = {-1};
  mine.add(x.data(), v0, -1, 0, 0, 0);
  SyncDirectory w(sync, "w", every(100));
  sync_once(w, mine, incoming, 100);
  CHECK(any_error_has(w, loop.string(), "symbolic links"));
  CHECK(w.counters().bad_files == 1);
  CHECK(incoming.size() == 4);  // files 0 and 2: the loop is skipped as a bad file
  w.on_end(FuzzStats{});
  const std::string json = slurp(w.worker_dir() + "/stats.json");
  CHECK_THAT(json, Contains("\"errors\": 1") && Contains("symbolic links"));
}

TEST_CASE("Sync: a peer's queue/ this worker may not read (EACCES) is reported once, never taken as empty", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  write_chunk(sync, "p", 0);
  write_chunk(sync, "ok", 0);
  fs::permissions(sync, fs::perms::all);  // the unprivileged worker creates its own directory
  fs::permissions(fs::path(sync) / "p" / "queue", fs::perms::owner_all);
  const std::string got = nnfuzz_test::run_unprivileged([&] {
    Corpus mine(16, 1), incoming(16, 1);
    const RowVector x = RowVector::Zero(16);
    const float v0[1] = {-1};
    mine.add(x.data(), v0, -1, 0, 0, 0);
    SyncDirectory w(sync, "w", every(100));
    sync_once(w, mine, incoming, 100);
    FuzzStats st;
    st.executions = 200;
    w.on_import(mine, incoming, st);  // a second sync: the same error is not repeated
    std::string out = "imported " + std::to_string(incoming.size()) + " errors " + std::to_string(w.errors().size()) +
                      " bad " + std::to_string(w.counters().bad_files) + "\n";
    for (const auto& e : w.errors()) out += e + "\n";
    return out;
  });
  INFO(got);
  CHECK_THAT(got, Contains("imported 2 errors 1 bad 1"));
  CHECK_THAT(got, Contains((fs::path(sync) / "p" / "queue").string()) && Contains("Permission denied"));
}

TEST_CASE("Sync: a huge garbage queue file is refused by its header, never read whole", "[sync]") {
  TempDir t;
  const std::string sync = (t.dir / "s").string();
  const fs::path q = fs::path(sync) / "p" / "queue";
  fs::create_directories(q);
  const std::string garbage = (q / sync_queue_name(0)).string();
  std::ofstream(garbage, std::ios::binary) << "garbage!garbage!";
  fs::resize_file(garbage, std::uintmax_t{64} << 20);  // sparse: 64 MiB of zeros
  // A valid header (a dense corpus of 2 elements of 16 floats) on a file of the wrong size.
  const std::string valid = write_chunk(sync, "p", 1);
  const std::string lying = (q / sync_queue_name(2)).string();
  fs::copy_file(valid, lying);
  fs::resize_file(lying, std::uintmax_t{64} << 20);
  nnfuzz_test::g_largest_alloc = 0;
  CHECK_THROWS_WITH(load_corpus(q.string(), sync_queue_name(0)), Contains(garbage) && Contains("magic"));
  CHECK(nnfuzz_test::g_largest_alloc.load() < (std::size_t{1} << 20));
  nnfuzz_test::g_largest_alloc = 0;
  CHECK_THROWS_WITH(load_corpus(q.string(), sync_queue_name(2)), Contains(lying) && Contains("claims 2 elements"));
  CHECK(nnfuzz_test::g_largest_alloc.load() < (std::size_t{1} << 20));
}

namespace {
// Gives every file and directory below `dir` (and itself) the modification time `t`.
void set_times(const fs::path& dir, fs::file_time_type t) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) fs::last_write_time(e.path(), t);
  fs::last_write_time(dir, t);
}
}  // namespace

TEST_CASE("Sync: a peer whose clock is years ahead or behind - no step depends on time ordering", "[sync]") {
  // Workers on other machines: the times on a peer's files are its clock's (or the file
  // server's), not this worker's. A time that stays the same across the peer's writes is the
  // worst case (a clock stuck in the past or future, or a coarse time granularity).
  using namespace std::chrono_literals;
  const auto years = std::chrono::duration_cast<fs::file_time_type::duration>(24h * 365 * 40);
  for (const bool ahead : {true, false}) {
    INFO((ahead ? "ahead" : "behind"));
    TempDir t;
    const std::string sync = (t.dir / "s").string();
    const RowMatrix seeds = nnfuzz_test::planted_nan_seeds();  // the peer has findings
    const fs::file_time_type stuck = fs::file_time_type::clock::now() + (ahead ? years : -years);
    std::vector<Finding> found;
    {
      auto fa = planted(1, 3000, NonFiniteObjective());
      SyncDirectory a(sync, "a", every(1000));
      found = fa.run(seeds, a).findings;
      REQUIRE(a.counters().exported > 0);
      REQUIRE(a.counters().findings > 0);
    }
    set_times(fs::path(sync) / "a", stuck);
    SyncDirectory b(sync, "b", every(100));
    Corpus mine = one_element(), incoming(16, 1);
    FuzzStats st;
    b.on_start(st);
    b.on_corpus(mine, st);
    b.on_import(mine, incoming, st);
    const std::uint64_t files = b.counters().files_read;
    CHECK(files > 0);
    CHECK(static_cast<std::uint64_t>(incoming.size()) == b.counters().offered);
    b.on_finding(found.front(), st);  // the peer's finding: known
    CHECK(b.counters().duplicate_findings == 1);
    // The peer writes again; its times stay where its clock is.
    std::uint64_t next = 0;
    while (fs::exists(fs::path(sync) / "a" / "queue" / sync_queue_name(next))) ++next;
    write_chunk(sync, "a", next, 16, 0.7f);
    Finding later = found.front();
    later.input.setConstant(0.8151f);
    later.execution = 99999;
    save_finding((fs::path(sync) / "a").string(), later, 1);
    set_times(fs::path(sync) / "a", stuck);
    incoming.reset(16, 1);
    st.executions += 100;
    b.on_import(mine, incoming, st);
    CHECK(b.counters().files_read == files + 1);  // the new queue file
    CHECK(incoming.size() == 2);
    b.on_finding(later, st);  // the new finding file was listed: its input is known
    CHECK(b.counters().duplicate_findings == 2);
    CHECK(b.counters().findings == 0);
    CHECK(b.errors().empty());
  }
}
