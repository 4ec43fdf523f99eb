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
