// SPDX-License-Identifier: MIT
// nnfuzz: a character-level language model as a fuzz target (TensorFuzz's third experiment).
#pragma once

#include "../detail/config.hpp"
#include "../input.hpp"
#include "../data/text.hpp"
#include "../models/char_rnn.hpp"
#include "../objectives/text.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

/// How close a generation came to saying a word: see CharRnnTarget::word_likelihood().
struct WordLikelihood {
  std::string word;        ///< the word, lower-cased
  double probability = 0;  ///< the highest probability, over the generation's word starts, of emitting it there
  Index step = -1;         ///< the generated step where that word start is (-1: the word fits at none)
};

/// A CharRnn that continues a prompt, as a Model with structured inputs: part 0 is the prompt
/// (token ids of the alphabet, 1..max_prompt of them, starting from the boundary id 0 or not),
/// part 1 — when sampling (temperature > 0) — is the sampling noise, one uniform in [0, 1) per
/// generated character. The generated text is a pure function of the input, so a finding
/// replays bit for bit; the mutator explores the prompt and the noise alike.
///
/// Output: `texts` (the generated continuations, decoded by the alphabet), `coverage` (per row,
/// the mean of the GRU states the generated characters were drawn from: H floats, or a seeded
/// projection of it to fewer, see project_coverage()), `logits` (the last step's, for
/// NonFiniteObjective), and what the text objectives' progress fitness reads (objectives/text.hpp):
/// `char_prob(row, pos, c)`, the model's probability of character c at text position pos, and
/// `step_of(row, pos)`, the generated step (noise element) that wrote text position pos. Both come
/// from the distributions the generation drew from (no extra forward pass) and are kept in
/// buffers reused across batches.
class CharRnnTarget {
 public:
  /// What evaluate() produces; reused across batches.
  struct Output {
    std::vector<std::string> texts;  ///< one generated continuation per row
    RowMatrix coverage;              ///< B x H (or B x dims, projected): mean state over the generation
    RowMatrix logits;                ///< B x vocab: the last step's logits
    /// B x (n_chars·vocab): block j of row b = the distribution char j was drawn from
    /// (softmax(logits / temperature); greedy: softmax(logits)).
    RowMatrix step_probs;
    /// B x (3·n_chars): the step that wrote each character of texts[b] (a boundary id writes 3).
    Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> text_steps;
    Index vocab = 0;                  ///< ids per step in step_probs
    std::array<int, 256> byte_ids{};  ///< the id of each byte (-1: not in the alphabet)

    /// The generated step (the index of the noise element) that wrote character `pos` of
    /// texts[row]; -1 for a position past the text.
    Index step_of(Index row, std::size_t pos) const {
      return pos < texts[static_cast<std::size_t>(row)].size() ? text_steps(row, static_cast<Index>(pos)) : -1;
    }
    /// The probability the model gave, at the step that wrote character `pos` of texts[row], to
    /// writing `c` there instead (given the text before pos; the emitted character's own
    /// probability when c is it). '\n' also counts the boundary id (whose text starts with a
    /// newline); inside a boundary's 3 characters it is 1 for the character written, else 0. NaN
    /// past the text (the continuation is not known there); 0 for a byte outside the alphabet.
    float char_prob(Index row, std::size_t pos, char c) const {
      const std::string& t = texts[static_cast<std::size_t>(row)];
      if (pos >= t.size()) return std::numeric_limits<float>::quiet_NaN();
      const Index step = text_steps(row, static_cast<Index>(pos));
      if (pos > 0 && text_steps(row, static_cast<Index>(pos - 1)) == step) return t[pos] == c ? 1.0f : 0.0f;
      const float* p = step_probs.row(row).data() + step * vocab;
      const int id = byte_ids[static_cast<unsigned char>(c)];
      float q = id >= 0 ? p[id] : 0.0f;
      if (c == '\n') q += p[Alphabet::kBoundary];
      return q;
    }
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
    gen_.keep_probs = true;
  }

  /// Coverage vectors of `dims` floats instead of H: the mean GRU state times a fixed random
  /// H x dims matrix (entries N(0, 1/dims) from Rng(seed)), a Johnson–Lindenstrauss sketch that
  /// keeps distances roughly and makes nearest-neighbour queries cheap. Same seed => same
  /// matrix, same bits. dims = 0 restores the full state. Throws std::invalid_argument for dims
  /// outside [0, H].
  CharRnnTarget& project_coverage(Index dims, std::uint64_t seed = 1) {
    const Index H = net_.hidden_size();
    if (dims < 0 || dims > H)
      detail::fail("CharRnnTarget::project_coverage(): option 'dims' must be in [0, ", H, "] (0: the full state), got ",
                   dims);
    if (dims == 0) {
      projection_.resize(0, 0);
      return *this;
    }
    projection_.resize(H, dims);
    Rng rng(seed);
    rng.fill_normal(projection_.data(), projection_.size());
    projection_ *= 1.0f / std::sqrt(static_cast<float>(dims));
    return *this;
  }
  /// The projection (H x dims; empty when coverage is the full state).
  const RowMatrix& projection() const { return projection_; }

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
    mean_.setZero(B, H);
    out.text_steps.resize(B, 3 * n_chars_);
    out.vocab = net_.vocab_size();
    for (int c = 0; c < 256; ++c) {
      const char ch = static_cast<char>(c);
      out.byte_ids[static_cast<std::size_t>(c)] = alphabet_.contains(ch) ? alphabet_.id(ch) : -1;
    }
    for (Index b = 0; b < B; ++b) {
      std::string& t = out.texts[static_cast<std::size_t>(b)];
      t.clear();  // decoded in place: the string keeps its capacity from batch to batch
      for (Index j = 0; j < n_chars_; ++j) {
        const int id = gen_.tokens(b, j);
        const std::size_t at = t.size();
        if (id == Alphabet::kBoundary)
          t += Alphabet::kBoundaryText;
        else
          t.push_back(alphabet_.symbol(id));
        for (std::size_t k = at; k < t.size(); ++k) out.text_steps(b, static_cast<Index>(k)) = static_cast<int>(j);
        mean_.row(b) += gen_.hidden_at(b, j);
      }
    }
    mean_ /= static_cast<float>(n_chars_);
    if (projection_.size() == 0) {
      out.coverage = mean_;
    } else {
      out.coverage.resize(B, projection_.cols());
      detail::row_invariant_affine(mean_.data(), B, H, H, projection_.data(), projection_.cols(), nullptr,
                                   out.coverage.data(), projection_.cols());
    }
    out.logits = gen_.logits;
    out.step_probs.swap(gen_.probs);  // swapped back next batch: both buffers are reused
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

  /// The likelihood report of one input: for each word, how probable the model made it to say
  /// the word along the generation of `v`, teacher-forced. At every word start of the generated
  /// text (step 0, and every step after one that wrote a non-word character: neither letter,
  /// digit nor apostrophe, as BlacklistObjective reads words) where the word fits in the n_chars
  /// steps, the word's characters are fed to the network from the state the generation had there
  /// and their probabilities multiplied: P(c_0 | the text so far) · P(c_1 | …, c_0) · … and, when
  /// steps remain after it, the probability that a non-word character or a boundary follows (the
  /// word whole, not a prefix of a longer one). Probabilities are those the generation draws from:
  /// softmax(logits / temperature), and softmax(logits) when greedy (how close the alternatives
  /// came). The spellings BlacklistObjective matches most often are summed: lower case,
  /// capitalised and upper case ("money", "Money", "MONEY"), each when the alphabet spells it. The highest over the
  /// word starts is reported, with its step. One generation and one forward pass over the word starts per word: no
  /// search. Throws std::invalid_argument when `v` does not fit input_layout(), for an empty word, a word with a
  /// character other than a letter, digit or apostrophe, or one the alphabet cannot spell.
  std::vector<WordLikelihood> word_likelihood(const InputValue& v, const std::vector<std::string>& words) {
    const char* fn = "CharRnnTarget::word_likelihood()";
    check_input(fn, "the input", input_layout(), v);
    for (const std::string& w : words) {
      if (w.empty()) detail::fail(fn, ": a word is empty");
      for (char c : w)
        if (!detail::word_char(c))
          detail::fail(fn, ": the word '", w, "' holds ", detail::describe_byte(static_cast<unsigned char>(c)),
                       ", which is not a letter, digit or apostrophe");
    }
    (void)continuation(v);  // fills gen_ (the states) and one_out_ (the step distributions)
    const Index V = net_.vocab_size(), H = net_.hidden_size();
    const double temp = temperature_ > 0 ? static_cast<double>(temperature_) : 1.0;
    // Word starts: step 0, and each step after one whose last character is not a word character.
    std::vector<Index> starts;
    for (Index j = 0; j < n_chars_; ++j) {
      const int prev = j > 0 ? gen_.tokens(0, j - 1) : -1;
      if (j == 0 || prev == Alphabet::kBoundary || !detail::word_char(alphabet_.symbol(prev))) starts.push_back(j);
    }
    // Ids that end a word: the boundary and every non-word byte.
    std::vector<char> ends(static_cast<std::size_t>(V), 0);
    ends[Alphabet::kBoundary] = 1;
    for (int id = 1; id < V; ++id) ends[static_cast<std::size_t>(id)] = !detail::word_char(alphabet_.symbol(id));
    auto prob_of = [&](const float* logits, int id, bool end) {  // softmax(logits / temp)[id], or of the ends
      double m = logits[0], total = 0, hit = 0;
      for (Index k = 1; k < V; ++k) m = std::max(m, static_cast<double>(logits[k]));
      for (Index k = 0; k < V; ++k) {
        const double e = std::exp((static_cast<double>(logits[k]) - m) / temp);
        total += e;
        if (end ? ends[static_cast<std::size_t>(k)] != 0 : k == id) hit += e;
      }
      return hit / total;
    };
    std::vector<WordLikelihood> report;
    for (const std::string& word : words) {
      WordLikelihood r;
      for (char c : word) r.word.push_back(detail::lower_char(c));
      std::vector<std::vector<int>> spellings;
      std::vector<std::string> seen;  // lower case, Capitalised, UPPER CASE: each once
      for (int cap = 0; cap < 3; ++cap) {
        std::string s = r.word;
        for (std::size_t k = 0; k < (cap == 0 ? 0 : cap == 1 ? 1 : s.size()); ++k)
          s[k] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[k])));
        if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
        seen.push_back(s);
        if (std::all_of(s.begin(), s.end(), [&](char c) { return alphabet_.contains(c); }))
          spellings.push_back(alphabet_.encode(s));
      }
      if (spellings.empty())
        detail::fail(fn, ": the model's alphabet spells neither '", r.word, "' nor its capitalised form");
      const auto L = static_cast<Index>(r.word.size());
      std::vector<Index> fit;
      for (Index j : starts)
        if (j + L <= n_chars_) fit.push_back(j);
      report.push_back(r);
      if (fit.empty()) continue;
      const auto S = static_cast<Index>(spellings.size()), rows = static_cast<Index>(fit.size()) * S;
      TokenMatrix ids(rows, L);
      RowMatrix initial(rows, H);
      for (Index f = 0; f < static_cast<Index>(fit.size()); ++f)
        for (Index s = 0; s < S; ++s) {
          for (Index k = 0; k < L; ++k)
            ids(f * S + s, k) = spellings[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)];
          initial.row(f * S + s) = gen_.hidden_at(0, fit[static_cast<std::size_t>(f)]);
        }
      net_.forward(ids, Eigen::VectorXi::Constant(rows, static_cast<int>(L)), initial, trace_);
      for (Index f = 0; f < static_cast<Index>(fit.size()); ++f) {
        const Index j = fit[static_cast<std::size_t>(f)];
        double p = 0;
        for (Index s = 0; s < S; ++s) {
          const Index row = f * S + s;
          double q = one_out_.step_probs(0, j * V + ids(row, 0));  // the generation's own distribution at j
          for (Index k = 1; k < L; ++k) q *= prob_of(trace_.logits_at(row, k - 1).data(), ids(row, k), false);
          if (j + L < n_chars_) q *= prob_of(trace_.logits_at(row, L - 1).data(), 0, true);
          p += q;
        }
        if (p > report.back().probability) {
          report.back().probability = p;
          report.back().step = j;
        }
      }
    }
    return report;
  }

  /// Refuses words the alphabet cannot spell (e.g. a blacklist for BlacklistObjective, which
  /// matches case-insensitively: a letter counts when the alphabet holds it in either case).
  /// Throws std::invalid_argument naming the word and the character.
  void check_words(const std::vector<std::string>& words) const {
    for (const std::string& w : words)
      for (const char c : w) {
        const auto u = static_cast<unsigned char>(c);
        if (!alphabet_.contains(c) && !alphabet_.contains(static_cast<char>(std::tolower(u))) &&
            !alphabet_.contains(static_cast<char>(std::toupper(u))))
          detail::fail("CharRnnTarget::check_words(): the word '", w, "' holds ", detail::describe_byte(u),
                       ", which the model's alphabet cannot spell");
      }
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
  RowMatrix noise_, mean_, projection_;
  CharRnnGeneration gen_;
  InputBatch one_;  // continuation()'s batch and output
  Output one_out_;
  CharRnnTrace trace_;  // word_likelihood()'s teacher-forced pass
};

}  // namespace nnfuzz
