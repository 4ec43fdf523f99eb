// SPDX-License-Identifier: MIT
// nnfuzz: a character-level language model as a fuzz target (TensorFuzz's third experiment).
#pragma once

#include "../detail/config.hpp"
#include "../input.hpp"
#include "../data/text.hpp"
#include "../models/char_rnn.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// A CharRnn that continues a prompt, as a Model with structured inputs: part 0 is the prompt
/// (token ids of the alphabet, 1..max_prompt of them, starting from the boundary id 0 or not),
/// part 1 — when sampling (temperature > 0) — is the sampling noise, one uniform in [0, 1) per
/// generated character. The generated text is a pure function of the input, so a finding
/// replays bit for bit; the mutator explores the prompt and the noise alike.
///
/// Output: `texts` (the generated continuations, decoded by the alphabet), `coverage` (per row,
/// the mean of the GRU states the generated characters were drawn from: H floats) and `logits`
/// (the last step's, for NonFiniteObjective). Text objectives (objectives/text.hpp) read `texts`.
class CharRnnTarget {
 public:
  /// What evaluate() produces; reused across batches.
  struct Output {
    std::vector<std::string> texts;  ///< one generated continuation per row
    RowMatrix coverage;              ///< B x H: mean state over the generation
    RowMatrix logits;                ///< B x vocab: the last step's logits
    /// The tensors NonFiniteObjective checks.
    template <class F>
    void for_each_tensor(F&& f) const {
      f("logits", logits);
      f("coverage", coverage);
    }
  };

  /// `n_chars` >= 1 generated per prompt; `max_prompt` >= 1; `temperature` >= 0 (0: greedy, and
  /// the input has no noise part). The alphabet must have the network's vocabulary size.
  CharRnnTarget(CharRnn net, Alphabet alphabet, Index max_prompt, Index n_chars, float temperature)
      : net_(std::move(net)),
        alphabet_(std::move(alphabet)),
        max_prompt_(max_prompt),
        n_chars_(n_chars),
        temperature_(temperature) {
    if (alphabet_.size() != net_.vocab_size())
      detail::fail("CharRnnTarget(): the alphabet has ", alphabet_.size(), " ids, the network's vocabulary ",
                   net_.vocab_size());
    if (max_prompt < 1) detail::fail("CharRnnTarget(): option 'max_prompt' must be >= 1, got ", max_prompt);
    if (n_chars < 1) detail::fail("CharRnnTarget(): option 'n_chars' must be >= 1, got ", n_chars);
    if (!detail::is_finite(temperature) || !(temperature >= 0))
      detail::fail("CharRnnTarget(): option 'temperature' must be finite and >= 0, got ", temperature);
  }

  /// tokens "prompt" (vocab, max_prompt) [+ floats "noise" (n_chars) when sampling].
  InputLayout input_layout() const {
    InputLayout l;
    l.tokens("prompt", net_.vocab_size(), max_prompt_);
    if (temperature_ > 0) l.floats("noise", n_chars_);
    return l;
  }

  /// Generates n_chars for every row.
  void evaluate(const InputBatch& batch, Output& out) {
    const Index B = batch.rows(), H = net_.hidden_size();
    lengths_ = batch.lengths(0).cast<int>();
    if (temperature_ > 0) {
      // Uniforms in [0, 1): a mutator clipping to [0, 1] may write 1 itself.
      noise_ = batch.floats(1).cwiseMax(0.0f).cwiseMin(std::nextafter(1.0f, 0.0f));
    } else {
      noise_.resize(B, 0);
    }
    net_.generate(batch.ids(0), lengths_, n_chars_, temperature_, noise_, gen_);
    out.texts.resize(static_cast<std::size_t>(B));
    out.coverage.setZero(B, H);
    for (Index b = 0; b < B; ++b) {
      out.texts[static_cast<std::size_t>(b)] = alphabet_.decode(gen_.tokens.row(b).data(), n_chars_);
      for (Index j = 0; j < n_chars_; ++j) out.coverage.row(b) += gen_.hidden_at(b, j);
    }
    out.coverage /= static_cast<float>(n_chars_);
    out.logits = gen_.logits;
  }

  /// Encodes a prompt string as an input: the boundary id (the start of a text, as in training),
  /// then the text's ids; the noise part, if any, all 0.5 (each char the median of its
  /// distribution: fill it with uniforms, e.g. Rng::fill_uniform, for varied seeds). Throws
  /// std::invalid_argument naming a character outside the alphabet, or a prompt longer than
  /// max_prompt - 1.
  InputValue prompt(const std::string& text) const {
    InputValue v(input_layout());
    const std::vector<int> ids = alphabet_.encode(text);
    if (static_cast<Index>(ids.size()) + 1 > max_prompt_)
      detail::fail("CharRnnTarget::prompt(): the prompt has ", ids.size(), " characters (at most ", max_prompt_ - 1,
                   ")");
    v.tokens[0].push_back(Alphabet::kBoundary);
    v.tokens[0].insert(v.tokens[0].end(), ids.begin(), ids.end());
    if (temperature_ > 0) v.floats[1] = RowVector::Constant(n_chars_, 0.5f);
    return v;
  }
  /// The text of an input's prompt (a leading boundary id dropped).
  std::string prompt_text(const InputValue& v) const {
    const auto& ids = v.tokens[0];
    const std::size_t skip = !ids.empty() && ids[0] == Alphabet::kBoundary ? 1 : 0;
    return alphabet_.decode(ids.data() + skip, static_cast<Index>(ids.size() - skip));
  }

  /// The continuation the model generates for one input (e.g. a Finding's value): evaluate() on a
  /// batch of one row. Throws std::invalid_argument when `v` does not fit input_layout().
  std::string continuation(const InputValue& v) {
    const InputLayout layout = input_layout();
    check_input("CharRnnTarget::continuation()", "the input", layout, v);
    one_.reserve(layout, 1);
    one_.set_row(0, v);
    evaluate(one_, one_out_);
    return one_out_.texts[0];
  }

  /// The network.
  const CharRnn& net() const { return net_; }
  /// The alphabet.
  const Alphabet& alphabet() const { return alphabet_; }

 private:
  CharRnn net_;
  Alphabet alphabet_;
  Index max_prompt_, n_chars_;
  float temperature_;
  Eigen::VectorXi lengths_;
  RowMatrix noise_;
  CharRnnGeneration gen_;
  InputBatch one_;  // continuation()'s batch and output
  Output one_out_;
};

}  // namespace nnfuzz
