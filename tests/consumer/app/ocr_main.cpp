// SPDX-License-Identifier: MIT
// nnfuzz consumer test: a user's own text recogniser (a plain float* forward writing per-step
// class probabilities, as a CTC OCR head does) decoded by CtcTextModel and fuzzed for a
// blacklisted reading, against the installed nnfuzz. Written from the docs (docs/policies.md,
// "A text recogniser"): FunctionModel over the user's function, CtcTextModel over that, the
// default policies with BlacklistObjective, then with MisreadObjective (with_objective()). Exits
// 0 only when, with a fixed seed and budget, the search makes the recogniser read the word and
// misread its seed, and the findings read so when run again.
#include <nnfuzz/nnfuzz.hpp>
#include <nnfuzz/objectives/text.hpp>
#include <nnfuzz/targets/ctc_text.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace {

// The user's recogniser over a 2-pixel "image": 3 steps x 4 classes {blank, a, b, c}. Step 0
// writes c when pixel 0 is bright (else a), step 1 writes a when pixel 1 is bright (else blank),
// step 2 writes b. Seeds (dark pixels) read "ab"; "cab" needs both pixels above 0.8.
void recognise(const float* in, nnfuzz::Index rows, float* out) {
  for (nnfuzz::Index r = 0; r < rows; ++r) {
    const float x0 = in[2 * r], x1 = in[2 * r + 1];
    const float logits[3][4] = {{0, 1, 0, 8 * (x0 - 0.8f) + 1}, {1, 8 * (x1 - 0.8f) + 1, 0, 0}, {0, 0, 3, 0}};
    for (int t = 0; t < 3; ++t) {
      float z = 0;
      for (float l : logits[t]) z += std::exp(l);
      for (int k = 0; k < 4; ++k) out[r * 12 + t * 4 + k] = std::exp(logits[t][k]) / z;
    }
  }
}

}  // namespace

int main() {
  using Recogniser = nnfuzz::FunctionModel<void (*)(const float*, nnfuzz::Index, float*)>;
  nnfuzz::CtcTextModel<Recogniser> model(Recogniser(&recognise, 2, 12), nnfuzz::CtcTextOptions{"", {"a", "b", "c"}});
  nnfuzz::RowMatrix seeds(2, 2);
  seeds << 0.1f, 0.1f, 0.2f, 0.15f;
  nnfuzz::CtcTextModel<Recogniser>::Output out;
  model.evaluate(seeds, out);
  if (out.texts[0] != "ab") {
    std::fprintf(stderr, "consumer_ocr: the seed reads '%s', not 'ab'\n", out.texts[0].c_str());
    return 1;
  }
  nnfuzz::FuzzOptions o;
  o.max_executions = 20000;
  o.seed = 3;
  auto fuzzer = nnfuzz::make_fuzzer(model, nnfuzz::DefaultSampler(), nnfuzz::DefaultMutator(0.1f, {0.0f, 1.0f}),
                                    nnfuzz::CalibratedCoverage(), nnfuzz::BlacklistObjective({"cab"}), o);
  const nnfuzz::FuzzResult r = fuzzer.run(seeds);
  if (r.findings.empty()) {
    std::fprintf(stderr, "consumer_ocr: nothing read 'cab' in %llu executions\n",
                 static_cast<unsigned long long>(r.stats.executions));
    return 1;
  }
  model.evaluate(r.findings.front().input, out);
  if (out.texts[0] != "cab") {
    std::fprintf(stderr, "consumer_ocr: the finding reads '%s', not 'cab'\n", out.texts[0].c_str());
    return 1;
  }
  std::printf("consumer_ocr: ok ('cab' at execution %llu: %s)\n",
              static_cast<unsigned long long>(r.findings.front().execution), r.findings.front().what.c_str());

  // Any misreading of the first seed ("ab"): the defaults with the objective swapped in.
  nnfuzz::FuzzOptions mo;
  mo.max_executions = 20000;
  mo.seed = 4;
  auto misread = nnfuzz::make_fuzzer(model, mo).with_objective(nnfuzz::MisreadObjective("ab"));
  const nnfuzz::FuzzResult m = misread.run(seeds.topRows(1));
  if (m.findings.empty()) {
    std::fprintf(stderr, "consumer_ocr: no misreading of 'ab' in %llu executions\n",
                 static_cast<unsigned long long>(m.stats.executions));
    return 1;
  }
  model.evaluate(m.findings.front().input, out);
  if (out.texts[0] == "ab" || m.findings.front().what.find("for \"ab\"") == std::string::npos) {
    std::fprintf(stderr, "consumer_ocr: the misreading reads '%s' (%s)\n", out.texts[0].c_str(),
                 m.findings.front().what.c_str());
    return 1;
  }
  std::printf("consumer_ocr: ok (misread at execution %llu: %s)\n",
              static_cast<unsigned long long>(m.findings.front().execution), m.findings.front().what.c_str());
  return 0;
}
