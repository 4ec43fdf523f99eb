// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/mutators/structured.hpp>
#include <nnfuzz/objectives/text.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <regex>

using namespace nnfuzz;

namespace {
struct TextOutput {
  std::vector<std::string> texts;
};
template <typename O>
Mask run(O& objective, const TextOutput& out) {
  const RowMatrix batch(static_cast<Index>(out.texts.size()), 1);
  Mask hits = Mask::Constant(batch.rows(), false);
  objective.check(batch, out, hits);
  return hits;
}
}  // namespace

TEST_CASE("RepeatedWordObjective: a word n times in a row, case-insensitive, whole words", "[text_objectives]") {
  RepeatedWordObjective o(3);
  const TextOutput out{{"the the the end", "The, the. THE!", "the the end the", "then the the", "a b c"}};
  const Mask hits = run(o, out);
  CHECK(hits(0));
  CHECK(hits(1));
  CHECK(!hits(2));
  CHECK(!hits(3));  // "then" is another word
  CHECK(!hits(4));
  CHECK(o.describe(out, 1) == "word 'the' 3 times in a row in: \"The, the. THE!\"");
  CHECK_THROWS_WITH(RepeatedWordObjective(1), Catch::Contains("'times' must be >= 2, got 1"));
}

TEST_CASE("BlacklistObjective: whole words only - bad blacklists are refused", "[text_objectives]") {
  BlacklistObjective o({"Cat", "dog's"});
  const TextOutput out{{"my cat.", "category", "the dog's bowl", "dogs", "CAT"}};
  const Mask hits = run(o, out);
  CHECK(hits(0));
  CHECK(!hits(1));
  CHECK(hits(2));
  CHECK(!hits(3));
  CHECK(hits(4));
  CHECK(o.describe(out, 0) == "blacklisted word 'cat' in: \"my cat.\"");
  CHECK_THROWS_WITH(BlacklistObjective({}), Catch::Contains("empty"));
  CHECK_THROWS_WITH(BlacklistObjective({"two words"}), Catch::Contains("'two words' holds ' '"));
}

TEST_CASE("BlacklistObjective: retired words fire no more", "[text_objectives]") {
  BlacklistObjective o({"cat", "dog"});
  const TextOutput out{{"a cat", "a dog", "a cat and a dog"}};
  CHECK(o.retire("CAT"));
  CHECK(!o.retire("cat"));  // already retired
  CHECK(!o.retire("cow"));
  const Mask hits = run(o, out);
  CHECK(!hits(0));
  CHECK(hits(1));
  CHECK(hits(2));
  CHECK(o.first_match(out.texts[2]) == "dog");
  CHECK(o.retire("dog"));
  CHECK(o.words().empty());
  CHECK(run(o, out).count() == 0);
}

TEST_CASE("TextPredicateObjective: any predicate, e.g. a regex", "[text_objectives]") {
  const std::regex digits("[0-9]{3}");
  TextPredicateObjective o([&](const std::string& t) { return std::regex_search(t, digits); }, "three digits");
  const TextOutput out{{"call 555 now", "no numbers", "12"}};
  const Mask hits = run(o, out);
  CHECK(hits(0));
  CHECK(!hits(1));
  CHECK(!hits(2));
  CHECK(o.describe(out, 0) == "three digits holds for: \"call 555 now\"");
}

namespace {
// A text output with the progress members: char_prob(row, pos, c) from a table per position
// (default `rest`), one step per character.
struct ProbOutput {
  std::vector<std::string> texts;
  std::vector<std::vector<std::pair<char, float>>> probs;  // per position of row 0: (char, p)
  float rest = 0.01f;
  float char_prob(Index row, std::size_t pos, char c) const {
    if (pos >= texts[static_cast<std::size_t>(row)].size()) return std::numeric_limits<float>::quiet_NaN();
    if (pos < probs.size())
      for (const auto& [ch, p] : probs[pos])
        if (ch == c) return p;
    return rest;
  }
  Index step_of(Index row, std::size_t pos) const {
    return pos < texts[static_cast<std::size_t>(row)].size() ? static_cast<Index>(pos) : -1;
  }
};
}  // namespace

TEST_CASE("BlacklistObjective: progress = longest prefix at a word start + p(next char), retired words, case",
          "[text_objectives]") {
  BlacklistObjective o({"zebra", "cat"});
  ProbOutput out{{"a zeb and"}, {}, 0.01f};
  out.probs.resize(9);
  out.probs[5] = {{'r', 0.25f}, {'R', 0.05f}};  // position 5 (' ' after "zeb"): the model's 'r'/'R' there
  // "zeb" at position 2: 3 + p('r') + p('R') = 3.3; "cat" nowhere: at most 0 + p('c') + p('C').
  CHECK(o.fitness(out, 0) == Approx(3.3f));
  CHECK(o.progress(out, 0) == Approx(3.3f));
  // Case-insensitive text; a prefix inside a word does not count ("azeb" has no word start at z).
  out.texts = {"a ZEB and"};
  CHECK(o.fitness(out, 0) == Approx(3.3f));
  out.texts = {"azeb and"};
  CHECK(o.fitness(out, 0) == Approx(0.02f));  // only p('z') + p('Z') or p('c') + p('C') at a word start
  // A whole word followed by a letter ("cats"): length + p(a terminator at the next position).
  out.texts = {"cats"};
  out.probs.assign(4, {});
  out.probs[3] = {{' ', 0.5f}, {'.', 0.25f}};
  CHECK(o.fitness(out, 0) == Approx(3.0f + 0.75f + 6 * 0.01f));  // + the other terminators at `rest`
  // A whole word fires: length + 1.
  out.texts = {"a cat."};
  CHECK(o.fitness(out, 0) == Approx(4.0f));
  // The text ends inside a prefix: the next character is unknown (p = 0).
  out.texts = {"zeb"};
  CHECK(o.fitness(out, 0) == Approx(3.0f));
  // Retiring a word: S = longest word + 2 = 7 per retired word, so every later text scores above
  // any earlier one; "zebra" no longer counts.
  out.texts = {"a zeb and"};
  out.probs.assign(9, {});
  out.probs[5] = {{'r', 0.25f}};
  CHECK(o.retire("zebra"));
  CHECK(o.retired() == 1);
  CHECK(o.fitness(out, 0) == Approx(7.0f + 0.02f));  // best "cat" progress: 0 + p('c') + p('C')
  CHECK(o.retire("cat"));
  CHECK(o.fitness(out, 0) == Approx(14.0f));
  // An Output without char_prob(): no fitness (the objective fires as before).
  static_assert(!detail::has_fitness<BlacklistObjective, TextOutput>::value, "no char_prob, no fitness");
  static_assert(detail::has_fitness<BlacklistObjective, ProbOutput>::value, "char_prob gives a fitness");
}

TEST_CASE("BlacklistObjective::focus() records the step of the next needed character per input", "[text_objectives]") {
  auto focus = std::make_shared<InputFocus>();
  BlacklistObjective o({"zebra"});
  o.focus(focus);
  InputLayout layout;
  layout.floats("noise", 4);
  InputBatch batch;
  batch.reserve(layout, 2);
  InputValue a(layout), b(layout);
  a.floats[0] << 0.1f, 0.2f, 0.3f, 0.4f;
  b.floats[0] << 0.5f, 0.2f, 0.3f, 0.4f;
  batch.set_row(0, a);
  batch.set_row(1, b);
  const ProbOutput out{{"a zeb and", "zebra"}, {}, 0.01f};
  Mask hits = Mask::Constant(2, false);
  o.check(batch, out, hits);
  CHECK(!hits(0));
  CHECK(hits(1));
  CHECK(focus->find(input_key(batch, 0)) == 5);   // "zeb" at 2: 'r' needed at position 5
  CHECK(focus->find(input_key(batch, 1)) == -1);  // fired: nothing to aim at
  InputBatch one;
  one.reserve(layout, 1);
  one.set_row(0, a);
  CHECK(input_key(one, 0) == input_key(batch, 0));
}

TEST_CASE("RepeatedWordObjective: progress = longest run + how far the next word got", "[text_objectives]") {
  RepeatedWordObjective o(3);
  ProbOutput out{{"the the tx"}, {}, 0.01f};
  out.probs.resize(10);
  out.probs[9] = {{'h', 0.5f}};  // at "tx"'s 'x', the model's probability of 'h'
  // Run of 2 "the", next word "tx" holds "t" then needs 'h' (p 0.5 + p('H') 0.01): 2 + 1.51 / 4.
  CHECK(o.fitness(out, 0) == Approx(2.0f + 1.51f / 4));
  out.texts = {"The THE the"};
  CHECK(o.fitness(out, 0) == Approx(3.0f));  // fired
  out.texts = {"..."};
  CHECK(std::isnan(o.fitness(out, 0)));  // no word
}

TEST_CASE("TextPredicateObjective: an optional fitness of the text", "[text_objectives]") {
  TextPredicateObjective plain([](const std::string& t) { return t.find("xyz") != std::string::npos; }, "xyz");
  const TextOutput out{{"xy", "x"}};
  CHECK(!plain.has_fitness());
  CHECK(std::isnan(plain.fitness(out, 0)));
  TextPredicateObjective guided([](const std::string& t) { return t.find("xyz") != std::string::npos; }, "xyz",
                                [](const std::string& t) {  // longest prefix of "xyz" the text ends with
                                  for (std::size_t k = 3; k > 0; --k)
                                    if (t.size() >= k && t.compare(t.size() - k, k, "xyz", k) == 0)
                                      return static_cast<float>(k);
                                  return 0.0f;
                                });
  CHECK(guided.has_fitness());
  CHECK(guided.fitness(out, 0) == 2.0f);
  CHECK(guided.fitness(out, 1) == 1.0f);
}

namespace {
// A user's own token model, planted: it writes 40 characters, character j drawn by inverse CDF
// at noise u_j from a fixed distribution (space 0.5, each of the letters a..j 0.05), whatever
// the prompt. "faced" at a word start has probability 0.05^5 · 0.5 ≈ 1.6e-7 per position: random
// sampling does not say it in thousands of texts; progress fitness + aimed noise climbs to it
// one character at a time.
struct PlantedTokenModel {
  static constexpr Index kChars = 40;
  struct Output {
    std::vector<std::string> texts;
    RowMatrix coverage;  // unused: the hunt runs with NoCoverage
    float char_prob(Index row, std::size_t pos, char c) const {
      if (pos >= texts[static_cast<std::size_t>(row)].size()) return std::numeric_limits<float>::quiet_NaN();
      return c == ' ' ? 0.5f : (c >= 'a' && c <= 'j' ? 0.05f : 0.0f);
    }
    Index step_of(Index row, std::size_t pos) const {
      return pos < texts[static_cast<std::size_t>(row)].size() ? static_cast<Index>(pos) : -1;
    }
  };
  InputLayout input_layout() const {
    InputLayout l;
    l.tokens("prompt", 4, 4);
    l.floats("noise", kChars);
    return l;
  }
  void evaluate(const InputBatch& batch, Output& out) const {
    out.texts.resize(static_cast<std::size_t>(batch.rows()));
    out.coverage.setZero(batch.rows(), 1);
    for (Index r = 0; r < batch.rows(); ++r) {
      std::string& t = out.texts[static_cast<std::size_t>(r)];
      t.assign(kChars, ' ');
      for (Index j = 0; j < kChars; ++j) {
        const float u = batch.floats(1)(r, j);
        t[static_cast<std::size_t>(j)] =
            u < 0.5f ? ' ' : static_cast<char>('a' + std::min(9, static_cast<int>((u - 0.5f) / 0.05f)));
      }
    }
  }
};

FuzzResult hunt_planted(bool guided) {
  PlantedTokenModel model;
  auto focus = std::make_shared<InputFocus>();
  BlacklistObjective words({"faced"});
  StructuredMutatorOptions m;
  m.float_fraction = 0.1f;
  if (guided) {
    words.focus(focus);
    m.focus = focus;
  }
  FuzzOptions o;
  o.batch_size = 16;
  o.max_executions = 6000;
  o.seed = 3;
  o.keep_fitter = guided;
  InputValue seed(model.input_layout());
  seed.tokens[0] = {1, 2};
  Rng rng(1);
  rng.fill_uniform(seed.floats[1].data(), seed.floats[1].size());
  if (guided)
    return make_fuzzer(model, FitnessSampler<RecentSampler>(RecentSampler(), 0.9, 4), StructuredMutator(m),
                       NoCoverage(), words, o)
        .run({seed});
  return make_fuzzer(model, UniformSampler(), StructuredMutator(m), NoCoverage(), words, o).run({seed});
}
}  // namespace

TEST_CASE("Planted word: progress fitness + aimed noise finds it, random search does not", "[text_objectives]") {
  const FuzzResult guided = hunt_planted(true);
  REQUIRE(guided.found());
  CHECK(guided.findings.front().what.find("blacklisted word 'faced'") == 0);
  CHECK(guided.findings.front().execution < 6000);
  const FuzzResult random = hunt_planted(false);
  CHECK(!random.found());
  CHECK(random.stats.executions == 6000);
}
