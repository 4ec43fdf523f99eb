// SPDX-License-Identifier: MIT
// Structured inputs (input.hpp, mutators/structured.hpp) and the fuzzer, corpus, campaign files and
// run_parallel on a user's token model.
#include <catch2/catch.hpp>
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include "support/planted.hpp"
#include "support/temp_dir.hpp"
#include "support/token_model.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

using namespace nnfuzz;
using nnfuzz_test::token_seeds;
using nnfuzz_test::TokenModel;
namespace fs = std::filesystem;

namespace {
FuzzOptions token_options(std::uint64_t seed) {
  FuzzOptions o;
  o.batch_size = 20;
  o.max_executions = 20000;
  o.seed = seed;
  return o;
}
StructuredMutatorOptions edits() {
  StructuredMutatorOptions m;
  m.max_edits = 2;
  return m;
}
auto token_fuzzer(std::uint64_t seed, bool noise = false) {
  return make_fuzzer(TokenModel{noise}, RecentSampler(), StructuredMutator(edits()), BruteForceCoverage(0.5f),
                     NonFiniteObjective(), token_options(seed));
}
std::vector<InputValue> noisy_seeds() {
  auto seeds = token_seeds();
  for (auto& s : seeds) {
    s.tokens.emplace_back();
    s.floats.push_back(RowVector::Constant(4, 0.25f));
  }
  return seeds;
}
struct TempDir : nnfuzz_test::TempDir {
  TempDir() : nnfuzz_test::TempDir("nnfuzz_input") {}
};
}  // namespace

TEST_CASE("InputLayout, InputBatch and check_input", "[input]") {
  using Catch::Contains;
  InputLayout l;
  l.tokens("text", 10, 4).floats("noise", 3);
  CHECK(l.float_cells() == 3);
  CHECK(l.token_cells() == 5);
  CHECK(l.describe() == "tokens 'text' (vocab 10, max 4) + floats 'noise' (3)");
  CHECK_THROWS_WITH(InputLayout().tokens("t", 0, 4), Contains("'vocab'") && Contains("got 0"));
  CHECK_THROWS_WITH(InputLayout().floats("f", 0), Contains("'width'") && Contains("'f'"));
  InputValue v(l);
  v.tokens[0] = {3, 1, 4};
  v.floats[1] << 0.5f, 0.25f, 1.0f;
  InputBatch b;
  b.reserve(l, 2);
  b.set_row(1, v);
  CHECK(b.value(1) == v);
  CHECK(b.length(0, 1) == 3);
  CHECK(b.ids(0)(1, 3) == 0);  // padded
  std::vector<float> f(3);
  std::vector<TokenId> t(5);
  b.pack(1, f.data(), t.data());
  CHECK(t == std::vector<TokenId>{3, 1, 4, 0, 3});  // ids, padding, then the length
  CHECK(InputView(&l, f.data(), t.data()).value() == v);
  check_input("test", "v", l, v);
  InputValue bad = v;
  bad.tokens[0][1] = 10;
  CHECK_THROWS_WITH(check_input("test", "seed 0", l, bad),
                    Contains("seed 0 part 'text' token 1 is 10, outside [0, 10)"));
  bad = v;
  bad.tokens[0] = {1, 1, 1, 1, 1};
  CHECK_THROWS_WITH(check_input("test", "seed 0", l, bad), Contains("has 5 tokens (must be 1..4)"));
  bad = v;
  bad.floats[1](2) = std::nanf("");
  CHECK_THROWS_WITH(check_input("test", "seed 0", l, bad), Contains("part 'noise' element 2 is nan"));
  CHECK_THROWS_WITH(check_input("test", "seed 0", l, token_input({1})), Contains("has 1 parts"));
}

TEST_CASE("edit_distance: hand-computed values and the early exit", "[input]") {
  std::vector<Index> row;
  const std::vector<TokenId> kitten{1, 2, 3, 3, 4, 5}, sitting{6, 2, 3, 3, 2, 5, 7};  // k-i-t-t-e-n vs s-i-t-t-i-n-g
  CHECK(edit_distance(kitten.data(), 6, sitting.data(), 7, 10, row) == 3);
  CHECK(edit_distance(kitten.data(), 6, kitten.data(), 6, 10, row) == 0);
  CHECK(edit_distance(kitten.data(), 6, sitting.data(), 7, 2, row) == 3);  // limit + 1
  CHECK(edit_distance(kitten.data(), 1, sitting.data(), 7, 3, row) == 4);  // lengths alone exceed the limit
}

TEST_CASE("StructuredMutator: lengths, alphabet, the edit-distance ball and float parts", "[input]") {
  InputLayout l;
  l.tokens("text", 50, 8).floats("noise", 10);
  StructuredMutatorOptions o;
  o.max_edits = 3;
  o.max_distance = 2;
  o.alphabet = {5, 6, 7};
  o.float_fraction = 0.2f;
  StructuredMutator m(o);
  InputValue root(l);
  root.tokens[0] = {5, 6, 7, 5};
  root.floats[1] = RowVector::Constant(10, 0.5f);
  InputBatch src;
  src.reserve(l, 1);
  src.set_row(0, root);
  std::vector<float> f(10);
  std::vector<TokenId> t(9);
  src.pack(0, f.data(), t.data());
  const InputView view(&l, f.data(), t.data());
  InputBatch batch;
  batch.reserve(l, 500);
  Rng rng(3);
  m.mutate(view, view, batch, rng);
  std::vector<Index> row;
  int changed = 0;
  for (Index r = 0; r < batch.rows(); ++r) {
    const Index len = batch.length(0, r);
    REQUIRE(len >= 1);
    REQUIRE(len <= 8);
    for (Index i = 0; i < len; ++i) CHECK((batch.ids(0, r)[i] >= 5 && batch.ids(0, r)[i] <= 7));
    CHECK(edit_distance(batch.ids(0, r), len, root.tokens[0].data(), 4, 10, row) <= 2);
    changed += batch.value(r).tokens[0] != root.tokens[0];
    const auto noise = batch.floats(1).row(r);
    CHECK((noise.array() >= 0).all());
    CHECK((noise.array() <= 1).all());
    CHECK((noise.array() != 0.5f).count() <= 2);  // 20% of 10 elements redrawn
  }
  CHECK(changed > 400);  // most mutants differ (a substitution may write the same id back)
  StructuredMutatorOptions bad;
  bad.max_edits = 0;
  CHECK_THROWS_WITH(StructuredMutator(bad), Catch::Contains("'max_edits'"));
  bad.max_edits = 1;
  bad.float_fraction = 2;
  CHECK_THROWS_WITH(StructuredMutator(bad), Catch::Contains("'float_fraction'"));
  CHECK_THROWS_WITH(m.check_seeds({token_input({5, 9})}), Catch::Contains("not in the mutator's alphabet"));
}

TEST_CASE("StructuredMutator: dictionary splices insert whole words, within max_len", "[input]") {
  InputLayout l;
  l.tokens("text", 50, 7);
  StructuredMutatorOptions o;
  o.max_edits = 1;
  o.keep_prefix = 1;
  o.dictionary = {{40, 41, 42}};
  o.insert_weight = o.delete_weight = o.substitute_weight = o.swap_weight = 0;  // splices only
  StructuredMutator m(o);
  const InputValue root = token_input({1, 5, 6, 7});
  InputBatch src;
  src.reserve(l, 1);
  src.set_row(0, root);
  std::vector<TokenId> t(8);  // 7 ids and the length
  src.pack(0, nullptr, t.data());
  const InputView view(&l, nullptr, t.data());
  InputBatch batch;
  batch.reserve(l, 200);
  Rng rng(5);
  m.mutate(view, view, batch, rng);
  std::set<Index> positions;
  for (Index r = 0; r < batch.rows(); ++r) {
    const std::vector<TokenId> ids = batch.value(r).tokens[0];
    REQUIRE(ids.size() == 7);
    CHECK(ids[0] == 1);  // the kept prefix
    const auto at = std::search(ids.begin(), ids.end(), o.dictionary[0].begin(), o.dictionary[0].end());
    REQUIRE(at != ids.end());
    positions.insert(at - ids.begin());
    std::vector<TokenId> rest(ids.begin(), at);
    rest.insert(rest.end(), at + 3, ids.end());
    CHECK(rest == root.tokens[0]);  // the word inserted whole, nothing else changed
  }
  CHECK(positions == std::set<Index>{1, 2, 3, 4});
  // A full sequence has no room for the word: the edit becomes a substitution.
  src.set_row(0, token_input({1, 5, 6, 7, 8, 9, 10}));
  src.pack(0, nullptr, t.data());
  m.mutate(view, view, batch, rng);
  for (Index r = 0; r < batch.rows(); ++r) CHECK(batch.length(0, r) == 7);
  StructuredMutatorOptions bad;
  bad.dictionary = {{}};
  CHECK_THROWS_WITH(StructuredMutator(bad), Catch::Contains("'dictionary' word 0 is empty"));
  bad.dictionary = {{3, -1}};
  CHECK_THROWS_WITH(StructuredMutator(bad), Catch::Contains("negative id -1"));
}

TEST_CASE("Fuzzer on a token model: CGF finds the planted word, replays it - one seed, one run", "[input][fuzzer]") {
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto f = token_fuzzer(seed);
    const FuzzResult r = f.run(token_seeds());
    if (!r.found()) continue;
    ++found;
    const Finding& x = r.findings.front();
    CHECK(x.input.size() == 0);
    REQUIRE(x.value.tokens.size() == 1);
    const auto& ids = x.value.tokens[0];
    CHECK(std::search_n(ids.begin(), ids.end(), 3, 7) != ids.end());
    CHECK(f.replay(x.value));
    CHECK(f.corpus().structured());
  }
  CHECK(found == 5);
  auto a = token_fuzzer(9), b = token_fuzzer(9);
  const FuzzResult ra = a.run(token_seeds()), rb = b.run(token_seeds());
  REQUIRE(a.corpus().size() == b.corpus().size());
  for (Index i = 0; i < a.corpus().size(); ++i) CHECK(a.corpus().view(i).value() == b.corpus().view(i).value());
  CHECK(ra.stats.executions == rb.stats.executions);
}

TEST_CASE("Fuzzer on a two-part model (tokens + noise) - run_parallel", "[input][fuzzer]") {
  auto f = token_fuzzer(2, /*noise=*/true);
  const FuzzResult r = f.run(noisy_seeds());
  REQUIRE(r.found());
  CHECK(r.findings.front().value.floats[1].size() == 4);
  CHECK(f.replay(r.findings.front().value));
  const ParallelFuzzResult p = run_parallel(f, noisy_seeds(), 2);
  CHECK(p.stats.seeds == 2);
  CHECK(p.workers.size() == 2);
}

TEST_CASE("Fuzzer on a token model: bad seeds and a mutator that writes bad ids are clear errors", "[input][fuzzer]") {
  using Catch::Contains;
  auto f = token_fuzzer(1);
  CHECK_THROWS_WITH(f.run(std::vector<InputValue>{}), Contains("no seeds"));
  CHECK_THROWS_WITH(f.run(std::vector<InputValue>{token_input({1, 12})}),
                    Contains("Fuzzer::run(): seed 0 part 'text' token 1 is 12, outside [0, 10)"));
  struct Broken {
    void mutate(const InputView& parent, const InputView&, InputBatch& batch, Rng&) {
      for (Index r = 0; r < batch.rows(); ++r) batch.set_row(r, parent);
      batch.ids(0)(0, 0) = 99;
    }
  };
  auto g = make_fuzzer(TokenModel{}, RecentSampler(), Broken{}, NoCoverage(), NonFiniteObjective(), token_options(1));
  CHECK_THROWS_WITH(g.run(token_seeds()), Contains("the mutator wrote token 99 at position 0 of row 0 of part 'text'"));
}

TEST_CASE("Campaign v2: a token campaign saves, loads, resumes - structured findings round-trip", "[input][campaign]") {
  TempDir t;
  const std::string dir = (t.dir / "tok").string();
  auto f = token_fuzzer(4, true);
  FuzzOptions o = f.options();
  o.max_findings = 0;
  o.max_executions = 3000;
  f.set_options(o);
  FuzzResult r;
  {
    CampaignSaver saver(dir, 4);
    r = f.run(noisy_seeds(), saver);
  }
  REQUIRE(r.found());
  const Corpus back = load_corpus(dir);
  REQUIRE(back.structured());
  CHECK(back.layout() == TokenModel{true}.input_layout());
  REQUIRE(back.size() == f.corpus().size());
  for (Index i = 0; i < back.size(); ++i) CHECK(back.view(i).value() == f.corpus().view(i).value());
  CHECK(back.executions() == r.stats.executions);
  const auto saved = load_findings(dir);
  // A few files per bug, every finding counted under its bug (campaign/bugs.hpp).
  std::uint64_t counted = 0, files = 0;
  for (const Bug& b : load_bugs(dir)) {
    counted += b.count;
    files += b.files.size();
    CHECK(b.files.size() <= BugOptions().samples_per_bug);
  }
  CHECK(counted == r.findings.size());
  REQUIRE(saved.size() == files);
  CHECK(saved.front().finding.value == r.findings.front().value);
  CHECK(f.replay(saved.front().finding.value));
  // Resume numbers on from where the session stopped (Corpus::executions()), not from the last
  // element added.
  o.max_executions = 1000;
  f.set_options(o);
  const FuzzResult more = f.resume(back);
  CHECK(more.stats.executions == r.stats.executions + 1000);
  // A dense fuzzer refuses the token corpus, naming both sides.
  auto dense = make_fuzzer(nnfuzz_test::PlantedModel{}, FuzzOptions{});
  CHECK_THROWS_WITH(dense.resume(back), Catch::Contains("tokens 'text' (vocab 10, max 16)"));
}

TEST_CASE("Campaign: version-1 corpus files still load", "[input][campaign]") {
  TempDir t;
  // A version-1 corpus.bin as nnfuzz 0.1 wrote it: 2 elements of 3 floats, coverage width 1.
  std::vector<std::uint8_t> b(detail::kCorpusMagic, detail::kCorpusMagic + 8);
  detail::put_u32(b, 1);
  detail::put_u32(b, 3);
  detail::put_u32(b, 1);
  detail::put_u64(b, 2);
  const float in[2][3] = {{0.1f, 0.2f, 0.3f}, {0.4f, 0.5f, 0.6f}}, cov[2] = {1.5f, 2.5f};
  for (int e = 0; e < 2; ++e) {
    for (std::int64_t v : {std::int64_t{e - 1}, std::int64_t{0}, std::int64_t{e}})
      detail::put_u64(b, static_cast<std::uint64_t>(v));
    detail::put_u64(b, e == 0 ? 0 : 77);  // execution
    detail::put_u64(b, 3);                // times picked
    detail::put_floats(b, in[e], 3);
    detail::put_floats(b, &cov[e], 1);
  }
  detail::seal(b);
  detail::write_file_atomic("test", (t.dir / "corpus.bin").string(), b);
  const Corpus c = load_corpus(t.dir.string());
  REQUIRE(c.size() == 2);
  CHECK(!c.structured());
  CHECK(c.input(1)(2) == 0.6f);
  CHECK(c.entry(1).execution == 77);
  CHECK(c.executions() == 0);  // unknown in version 1: resume falls back to the last element
  // Written back, it is version 2 and loads the same.
  save_corpus(t.dir.string(), c);
  const Corpus d = load_corpus(t.dir.string());
  CHECK(d.input(1) == c.input(1));
  CHECK(d.entry(1).times_picked == 3);
}
