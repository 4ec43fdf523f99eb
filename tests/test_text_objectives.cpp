// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <nnfuzz/objectives/text.hpp>

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
