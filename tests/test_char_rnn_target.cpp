// SPDX-License-Identifier: MIT
// CharRnnTarget: a character-level language model fuzzed through its prompt and sampling noise.
#include <catch2/catch.hpp>
#include <nnfuzz/campaign/saver.hpp>
#include <nnfuzz/targets/char_rnn_target.hpp>
#include <nnfuzz/nnfuzz.hpp>

#include <filesystem>

using namespace nnfuzz;

namespace {
CharRnnTarget small_target(float temperature) {
  const Alphabet alphabet("ab .");
  CharRnn net(CharRnnShape{alphabet.size(), 4, 8});
  net.init(3);
  return CharRnnTarget(std::move(net), alphabet, 10, 12, temperature);
}
}  // namespace

TEST_CASE("CharRnnTarget: prompt + noise in, texts out - a finding replays bit for bit", "[char_rnn_target]") {
  CharRnnTarget target = small_target(1.0f);
  CHECK(target.input_layout().describe() == "tokens 'prompt' (vocab 5, max 10) + floats 'noise' (12)");
  const InputValue p = target.prompt("ab a");
  CHECK(target.prompt_text(p) == "ab a");
  CHECK_THROWS_WITH(target.prompt("abc"), Catch::Contains("'c'") || Catch::Contains("not in the alphabet"));
  CHECK_THROWS_WITH(target.prompt("aaaaaaaaaaaa"), Catch::Contains("at most 9"));

  FuzzOptions o;
  o.batch_size = 16;
  o.max_executions = 4000;
  o.seed = 5;
  StructuredMutatorOptions m;
  m.alphabet = {1, 2, 3, 4};  // the alphabet's bytes, not the boundary
  m.keep_prefix = 1;          // the start-of-text id stays
  m.float_fraction = 0.25f;   // 3 of the 12 uniforms redrawn per mutant
  const TextPredicateObjective bbbb([](const std::string& t) { return t.find("bbb") != std::string::npos; },
                                    "three b's");
  auto f = make_fuzzer(target, RecentSampler(), StructuredMutator(m), CalibratedCoverage(), bbbb, o);
  std::vector<InputValue> seeds{target.prompt("a"), target.prompt("b .")};
  Rng noise(11);
  for (InputValue& v : seeds) noise.fill_uniform(v.floats[1].data(), v.floats[1].size());  // sampling noise
  const FuzzResult r = f.run(seeds);
  REQUIRE(r.found());
  const Finding& x = r.findings.front();
  CHECK(x.what.find("three b's holds for:") == 0);
  CHECK(f.replay(x.value));
  // The model alone, on a batch of the shape the finding was found in (as replay() does: a
  // batch of another size may sum in another order and sample another text), gives the text
  // the finding reported.
  InputBatch copies;
  copies.reserve(target.input_layout(), o.batch_size);
  for (Index i = 0; i < o.batch_size; ++i) copies.set_row(i, x.value);
  CharRnnTarget::Output out;
  target.evaluate(copies, out);
  CHECK(x.what == "three b's holds for: " + detail::quoted_snippet(out.texts[0]));
  // Same seed, same run.
  auto g = make_fuzzer(target, RecentSampler(), StructuredMutator(m), CalibratedCoverage(), bbbb, o);
  const FuzzResult q = g.run(seeds);
  REQUIRE(q.found());
  CHECK(q.findings.front().value == x.value);
  // The campaign round trip keeps prompt and noise.
  const auto dir = std::filesystem::temp_directory_path() / ("nnfuzz_charrnn_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  save_finding(dir.string(), x, 5);
  CHECK(load_findings(dir.string()).front().finding.value == x.value);
  std::filesystem::remove_all(dir);
}

TEST_CASE("CharRnnTarget: greedy generation has no noise part - bad options are refused", "[char_rnn_target]") {
  CharRnnTarget greedy = small_target(0.0f);
  CHECK(greedy.input_layout().size() == 1);
  CHECK_THROWS_WITH(CharRnnTarget(CharRnn(CharRnnShape{7, 4, 8}), Alphabet("ab .."), 10, 12, 1.0f),
                    Catch::Contains("appears twice"));
  CHECK_THROWS_WITH(CharRnnTarget(CharRnn(CharRnnShape{7, 4, 8}), Alphabet("ab ."), 10, 12, 1.0f),
                    Catch::Contains("the alphabet has 5 ids, the network's vocabulary 7"));
  CHECK_THROWS_WITH(CharRnnTarget(CharRnn(CharRnnShape{5, 4, 8}), Alphabet("ab ."), 10, 0, 1.0f),
                    Catch::Contains("'n_chars'"));
}

TEST_CASE("CharRnnTarget: step probabilities of the generation, char_prob() and step_of()", "[char_rnn_target]") {
  for (const float temperature : {0.7f, 0.0f}) {
    CharRnnTarget target = small_target(temperature);
    InputBatch batch;
    batch.reserve(target.input_layout(), 3);
    Rng rng(4);
    for (Index r = 0; r < 3; ++r) {
      InputValue v = target.prompt(r == 1 ? "ab" : "b a");
      if (temperature > 0) rng.fill_uniform(v.floats[1].data(), v.floats[1].size());
      batch.set_row(r, v);
    }
    CharRnnTarget::Output out;
    target.evaluate(batch, out);
    REQUIRE(out.step_probs.rows() == 3);
    REQUIRE(out.step_probs.cols() == 12 * 5);
    for (Index r = 0; r < 3; ++r) {
      const std::string& t = out.texts[static_cast<std::size_t>(r)];
      for (Index j = 0; j < 12; ++j)  // each step's distribution sums to 1
        CHECK(out.step_probs.row(r).segment(j * 5, 5).sum() == Approx(1.0f).epsilon(1e-5));
      float emitted = 1;
      for (std::size_t pos = 0; pos < t.size(); ++pos) {
        CHECK(out.step_of(r, pos) >= 0);
        CHECK(out.step_of(r, pos) < 12);
        emitted = std::min(emitted, out.char_prob(r, pos, t[pos]));
      }
      CHECK(emitted > 0);                                  // what was emitted had a positive probability
      CHECK(out.char_prob(r, 0, 'q') == 0.0f);             // outside the alphabet
      CHECK(std::isnan(out.char_prob(r, t.size(), 'a')));  // past the text
      CHECK(out.step_of(r, t.size()) == -1);
      // Teacher-forced check: the probabilities are those of a forward pass over prompt + text.
      if (temperature == 0 && t.find('%') == std::string::npos) {
        const InputValue v = batch.value(r);
        TokenMatrix ids(1, static_cast<Index>(v.tokens[0].size() + t.size()));
        Index n = 0;
        for (TokenId id : v.tokens[0]) ids(0, n++) = id;
        for (char c : t) ids(0, n++) = target.alphabet().id(c);
        CharRnnTrace trace;
        target.net().forward(ids, Eigen::VectorXi::Constant(1, static_cast<int>(n)), trace);
        const Index at = static_cast<Index>(v.tokens[0].size()) - 1;  // logits after the prompt's last id
        RowVector l = trace.logits_at(0, at);
        const RowVector p = (l.array() - l.maxCoeff()).exp().matrix() / (l.array() - l.maxCoeff()).exp().sum();
        CHECK(out.char_prob(r, 0, 'a') == Approx(p(target.alphabet().id('a'))).epsilon(1e-4));
      }
    }
  }
}

TEST_CASE("CharRnnTarget::project_coverage(): a seeded low-dimensional sketch of the mean state", "[char_rnn_target]") {
  CharRnnTarget a = small_target(0.7f), b = small_target(0.7f), full = small_target(0.7f);
  a.project_coverage(3, 9);
  b.project_coverage(3, 9);
  CHECK(a.projection().rows() == 8);
  CHECK(a.projection().cols() == 3);
  CHECK(a.projection() == b.projection());  // same seed, same bits
  InputBatch batch;
  batch.reserve(a.input_layout(), 2);
  Rng rng(2);
  for (Index r = 0; r < 2; ++r) {
    InputValue v = a.prompt("ab");
    rng.fill_uniform(v.floats[1].data(), v.floats[1].size());
    batch.set_row(r, v);
  }
  CharRnnTarget::Output oa, ob, of;
  a.evaluate(batch, oa);
  b.evaluate(batch, ob);
  full.evaluate(batch, of);
  CHECK(oa.coverage.cols() == 3);
  CHECK(oa.coverage == ob.coverage);
  CHECK(of.coverage.cols() == 8);
  CHECK(oa.coverage.isApprox(of.coverage * a.projection(), 1e-5f));
  CharRnnTarget c = small_target(0.7f);
  c.project_coverage(3, 10);
  CHECK(c.projection() != a.projection());
  CHECK_THROWS_WITH(c.project_coverage(9), Catch::Contains("option 'dims' must be in [0, 8]"));
  c.project_coverage(0);
  CHECK(c.projection().size() == 0);
}

TEST_CASE("CharRnnTarget::check_words() refuses words the alphabet cannot spell", "[char_rnn_target]") {
  const CharRnnTarget target = small_target(0.5f);
  CHECK_NOTHROW(target.check_words({"ab", "BA"}));  // either case
  CHECK_THROWS_WITH(target.check_words({"ab", "abc"}),
                    Catch::Contains("check_words(): the word 'abc' holds 'c'") && Catch::Contains("cannot spell"));
}

namespace {
// A hand-set "repeat the last character" model over " Aab" (ids: boundary 0, ' ' 1, 'A' 2, 'a' 3,
// 'b' 4): one-hot embeddings, the update gate shut (z = 0), the candidate state tanh(100) = 1 at
// the fed id, logits ln 4 there and 0 elsewhere. At temperature 1 the character just fed comes
// again with probability 4/8 = 1/2, each other id with 1/8.
CharRnnTarget repeat_target(float temperature) {
  const Alphabet alphabet(" Aab");
  const Index V = alphabet.size();
  CharRnn net(CharRnnShape{V, V, V});
  CharRnnParams& p = net.params();
  p.embedding.setIdentity();
  p.w_input.block(0, 2 * V, V, V) = 100.0f * RowMatrix::Identity(V, V);  // n
  p.b_input.segment(V, V).setConstant(-100.0f);                          // z = 0: h' = n
  p.w_output = std::log(4.0f) * RowMatrix::Identity(V, V);
  return CharRnnTarget(std::move(net), alphabet, 4, 4, temperature);
}
}  // namespace

TEST_CASE("CharRnnTarget::word_likelihood: teacher-forced word probabilities, hand-computed", "[char_rnn_target]") {
  CharRnnTarget target = repeat_target(1.0f);
  InputValue v = target.prompt("a");
  // Inverse-CDF draws in id order: 'b' after 'a', ' ' after 'b', 'a' after ' ', 'b' after 'a'.
  v.floats[1] << 0.9f, 0.2f, 0.8f, 0.9f;
  REQUIRE(target.continuation(v) == "b ab");  // word starts: step 0 (after the prompt), step 2 (after ' ')
  const std::vector<WordLikelihood> r = target.word_likelihood(v, {"ab", "bb", "AA", "abab", "ababa"});
  REQUIRE(r.size() == 5);
  // "ab" at step 0: ab 1/2·1/8·P(end after b) 1/4 + Ab 1/8·1/8·1/4 = 5/256; at step 2 (the text
  // ends after it: no terminator): ab 1/8·1/8 + Ab 1/8·1/8 = 8/256 — the higher.
  CHECK(r[0].word == "ab");
  CHECK(r[0].probability == Approx(8.0 / 256).epsilon(1e-5));
  CHECK(r[0].step == 2);
  // "bb": teacher-forced, the second b follows a b fed (1/2), not the text's ' '. Step 2: 1/8·1/2.
  CHECK(r[1].probability == Approx(1.0 / 16).epsilon(1e-5));
  CHECK(r[1].step == 2);
  // "AA" is the word "aa", spelt aa, Aa and AA: step 0: aa 1/2·1/2·1/4 + Aa 1/8·1/8·1/4 + AA
  // 1/8·1/2·1/4 = 21/256; step 2: 1/8·1/2 + 1/8·1/8 + 1/8·1/2 = 36/256. ("ab" has no AB: the
  // alphabet has no 'B'.)
  CHECK(r[2].word == "aa");
  CHECK(r[2].probability == Approx(36.0 / 256).epsilon(1e-5));
  CHECK(r[2].step == 2);
  // "abab" fits only at step 0: 1/2·1/8·1/8·1/8 + 1/8·1/8·1/8·1/8 = 5/4096.
  CHECK(r[3].probability == Approx(5.0 / 4096).epsilon(1e-5));
  CHECK(r[3].step == 0);
  // Five letters do not fit in 4 generated characters.
  CHECK(r[4].probability == 0);
  CHECK(r[4].step == -1);

  // Greedy: the text is "aaaa" (one word start); probabilities are softmax(logits).
  CharRnnTarget greedy = repeat_target(0.0f);
  const InputValue g = greedy.prompt("a");
  REQUIRE(greedy.continuation(g) == "aaaa");
  const WordLikelihood aa = greedy.word_likelihood(g, {"aa"}).front();
  CHECK(aa.probability == Approx(21.0 / 256).epsilon(1e-5));  // aa 17/256 + AA 1/8·1/2·1/4
  CHECK(aa.step == 0);

  CHECK_THROWS_WITH(target.word_likelihood(v, {""}), Catch::Contains("word_likelihood()") && Catch::Contains("empty"));
  CHECK_THROWS_WITH(target.word_likelihood(v, {"a-b"}),
                    Catch::Contains("word_likelihood()") && Catch::Contains("'a-b'"));
  CHECK_THROWS_WITH(target.word_likelihood(v, {"zz"}),
                    Catch::Contains("word_likelihood()") && Catch::Contains("'zz'") && Catch::Contains("spell"));
  InputValue bad = v;
  bad.floats[1] = RowVector::Zero(3);
  CHECK_THROWS_WITH(target.word_likelihood(bad, {"ab"}), Catch::Contains("word_likelihood()"));
}
