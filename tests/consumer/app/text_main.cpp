// SPDX-License-Identifier: MIT
// nnfuzz consumer test: a user's own token model, fuzzed for a blacklisted word with the text
// objective's progress fitness, against the installed nnfuzz. Written the way a user writes it,
// from the docs (docs/policies.md, "Text objectives"): the model is the user's hand-written
// bigram generator — a prompt of letter ids and one sampling uniform per generated letter in,
// the generated text and each step's letter probabilities out — not nnfuzz's CharRnnTarget.
// Exits 0 only when, with a fixed seed and budget, the fitness-guided search makes the model say
// the word (fuzz_test() reports it, minimised to the fewest edits from its seed) and random
// search with the same budget does not.
#include <nnfuzz/nnfuzz.hpp>  // first, before Eigen (F16C for Eigen::half under GCC)
#include <nnfuzz/minimize.hpp>
#include <nnfuzz/mutators/structured.hpp>
#include <nnfuzz/objectives/text.hpp>
#include <nnfuzz/testing/fuzz_test.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace {

const std::string kLetters = " abcdeilmnorstuz";  // id i is kLetters[i]; ' ' ends a word
constexpr int kVocab = 16;
constexpr int kChars = 24;  // generated per prompt

// The user's model: a bigram table, P(next | prev) = softmax over next of a hand-written score.
class BigramModel {
 public:
  struct Output {
    std::vector<std::string> texts;  // one generated text per row (what text objectives read)
    nnfuzz::RowMatrix coverage;      // B x 16: letter counts
    std::vector<float> probs;        // B x kChars x kVocab: the distribution of each step
    // The probability the model gave, at the step that wrote text position pos, to writing c there
    // (one letter per step: position = step). NaN past the text, 0 for a letter it cannot write.
    float char_prob(nnfuzz::Index row, std::size_t pos, char c) const {
      if (pos >= texts[static_cast<std::size_t>(row)].size()) return std::numeric_limits<float>::quiet_NaN();
      const std::size_t id = kLetters.find(c);
      if (id == std::string::npos) return 0.0f;
      return probs[(static_cast<std::size_t>(row) * kChars + pos) * kVocab + id];
    }
  };

  BigramModel() {
    for (int a = 0; a < kVocab; ++a) {
      float total = 0;
      for (int b = 0; b < kVocab; ++b)
        total += (table_[a][b] = std::exp(0.5f * static_cast<float>((a * 5 + b * 3) % 4)));
      for (int b = 0; b < kVocab; ++b) table_[a][b] /= total;
    }
  }
  nnfuzz::InputLayout input_layout() const {
    return nnfuzz::InputLayout().tokens("prompt", kVocab, 8).floats("noise", kChars);
  }
  void evaluate(const nnfuzz::InputBatch& batch, Output& out) const {
    const nnfuzz::Index B = batch.rows();
    out.texts.resize(static_cast<std::size_t>(B));
    out.coverage.setZero(B, kVocab);
    out.probs.resize(static_cast<std::size_t>(B) * kChars * kVocab);
    for (nnfuzz::Index r = 0; r < B; ++r) {
      int prev = batch.ids(0, r)[batch.length(0, r) - 1];
      std::string& text = out.texts[static_cast<std::size_t>(r)];
      text.clear();
      for (int j = 0; j < kChars; ++j) {
        const float u = batch.floats(1)(r, j);
        float* p = &out.probs[(static_cast<std::size_t>(r) * kChars + j) * kVocab];
        int next = -1;  // inverse CDF: the first letter whose cumulative probability passes u
        float cum = 0;
        for (int b = 0; b < kVocab; ++b) {
          p[b] = table_[prev][b];
          cum += p[b];
          if (next < 0 && u < cum) next = b;
        }
        if (next < 0) next = kVocab - 1;
        text.push_back(kLetters[static_cast<std::size_t>(next)]);
        out.coverage(r, next) += 1;
        prev = next;
      }
    }
  }

 private:
  float table_[kVocab][kVocab];
};

nnfuzz::InputValue prompt(const std::string& s, std::uint64_t seed) {
  nnfuzz::InputValue v(BigramModel{}.input_layout());
  for (char c : s) v.tokens[0].push_back(static_cast<nnfuzz::TokenId>(kLetters.find(c)));
  nnfuzz::Rng rng(seed);
  rng.fill_uniform(v.floats[1].data(), kChars, 0.0f, 1.0f);
  return v;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "consumer_text: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main() {
  const std::vector<nnfuzz::InputValue> seeds{prompt("to ", 1), prompt("a ", 2), prompt("no ", 3)};
  nnfuzz::StructuredMutatorOptions mo;
  mo.float_fraction = 0.1f;  // redraw about 2 of the 24 uniforms per mutant
  mo.lo = 0;
  mo.hi = 1;
  nnfuzz::FuzzOptions fo;
  fo.batch_size = 32;
  fo.keep_fitter = true;  // the fitness frontier joins the corpus
  const nnfuzz::BlacklistObjective blacklist({"zebra"});
  nnfuzz::FuzzTestOptions campaign;
  campaign.seed = 7;
  campaign.max_executions = 40000;

  // Guided by the blacklist's progress fitness: half the parents among the 8 fittest.
  auto guided =
      nnfuzz::make_fuzzer(BigramModel{}, nnfuzz::FitnessSampler<nnfuzz::RecentSampler>(nnfuzz::RecentSampler(), 0.5, 8),
                          nnfuzz::StructuredMutator(mo), nnfuzz::NoCoverage(), blacklist, fo);
  const nnfuzz::FuzzTestReport found = nnfuzz::fuzz_test(guided, seeds, campaign);
  std::printf("guided search: %s after %llu executions\n%s\n", found.passed ? "nothing" : "found",
              static_cast<unsigned long long>(found.executions), found.message.c_str());
  if (found.passed) return fail("the fitness-guided search did not make the model say 'zebra'");
  if (found.finding.fired != "zebra") return fail("the finding names '" + found.finding.fired + "', not 'zebra'");
  if (found.message.find("minimised: ") == std::string::npos)
    return fail("the failure message has no minimised form of the finding");
  if (found.minimised_edits.edits.empty() ||
      static_cast<nnfuzz::Index>(found.minimised_edits.edits.size()) > found.minimised_edits.edits_before)
    return fail("the minimised finding has no edits, or more than the finding");
  if (!guided.replay(found.minimised_edits.input)) return fail("the minimised finding does not replay");

  // Random search, same budget: mutants of the seeds only.
  nnfuzz::FuzzOptions ro = fo;
  ro.keep_fitter = false;
  auto random = nnfuzz::make_fuzzer(BigramModel{}, nnfuzz::UniformSampler(), nnfuzz::StructuredMutator(mo),
                                    nnfuzz::NoCoverage(), blacklist, ro);
  const nnfuzz::FuzzTestReport none = nnfuzz::fuzz_test(random, seeds, campaign);
  std::printf("random search: %s after %llu executions\n", none.passed ? "nothing" : "found",
              static_cast<unsigned long long>(none.executions));
  if (!none.passed)
    return fail("random search found the word too: the planted word is not hard enough\n" + none.message);
  std::printf("consumer_text: ok\n");
  return 0;
}
