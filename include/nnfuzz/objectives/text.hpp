// SPDX-License-Identifier: MIT
// nnfuzz: objectives on generated text — a word repeated many times in a row, a blacklisted word,
// a reading other than the expected one (an OCR misread), any predicate on the text.
//
// They read the model's Output member `texts`: a std::vector<std::string> with one generated
// text per row of the batch (what a language-model wrapper decodes its generations into).
//
// Progress fitness (how close a text came to firing, for FitnessSampler and
// FuzzOptions::keep_fitter) also reads
//     float char_prob(Index row, std::size_t pos, char c) const;
// the model's probability, at the step that wrote character `pos` of texts[row], of writing `c`
// there (NaN past the text), as CharRnnTarget::Output provides from the distributions the
// generation drew from. Without it the objectives have no fitness() (they fire as before);
// progress() says what is missing. BlacklistObjective::focus() additionally records, per input,
// the generated step to aim at, read through the Output member
//     Index step_of(Index row, std::size_t pos) const;  // the step that wrote text position pos
#pragma once

#include "../detail/config.hpp"
#include "../detail/finite.hpp"
#include "../detail/traits.hpp"
#include "../focus.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nnfuzz {

namespace detail {
inline bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '\''; }
// The words of a text: maximal runs of letters, digits and apostrophes, lower-cased.
inline void split_words(const std::string& text, std::vector<std::string>& words) {
  words.clear();
  std::string w;
  for (char c : text) {
    if (word_char(c)) {
      w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!w.empty()) {
      words.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
}
inline char lower_char(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Output members the progress fitness reads.
template <typename O, typename = void>
struct has_char_prob : std::false_type {};
template <typename O>
struct has_char_prob<
    O, void_t<decltype(static_cast<float>(std::declval<const O&>().char_prob(Index{0}, std::size_t{0}, 'a')))>>
    : std::true_type {};
template <typename O, typename = void>
struct has_step_of : std::false_type {};
template <typename O>
struct has_step_of<O, void_t<decltype(static_cast<Index>(std::declval<const O&>().step_of(Index{0}, std::size_t{0})))>>
    : std::true_type {};

// The probability of letter c in either case at text position pos (0 where unknown).
template <typename Output>
float case_free_prob(const Output& out, Index row, std::size_t pos, char c) {
  const char lo = lower_char(c), up = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  float p = out.char_prob(row, pos, lo);
  if (up != lo) p += out.char_prob(row, pos, up);
  return is_nan(p) ? 0.0f : std::min(p, 1.0f);
}
// Characters that end a word, whose probabilities count when a text holds a whole word followed
// by more letters ("category" for "cat").
inline const char* word_terminators() { return " .,;:!?\n"; }

// How close one text came to holding one of `words` whole: the best, over the text's word starts
// (position 0 and every position after a non-word character) and the words, of k + p, where k
// is how many leading characters of the word the text holds there (case-insensitive) and p the
// probability of the character the word needs next at that position (either case; for a whole
// word followed by a letter, the probability of a terminator). A word held whole scores
// length + 1. `pos` is the text position of the next needed character (npos when fired).
struct WordProgress {
  float score = -1;
  std::size_t pos = std::string::npos;
};
template <typename Output>
WordProgress word_progress(const Output& out, Index row, const std::string& text,
                           const std::vector<std::string>& words) {
  WordProgress best;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && word_char(text[i - 1])) continue;
    for (const std::string& w : words) {
      std::size_t k = 0;
      while (k < w.size() && i + k < text.size() && lower_char(text[i + k]) == w[k]) ++k;
      const std::size_t at = i + k;
      float score;
      std::size_t pos = at;
      if (k == w.size() && (at >= text.size() || !word_char(text[at]))) {
        score = static_cast<float>(k) + 1;
        pos = std::string::npos;
      } else if (k == w.size()) {
        float p = 0;
        for (const char* c = word_terminators(); *c; ++c) {
          const float q = out.char_prob(row, at, *c);
          if (!is_nan(q)) p += q;
        }
        score = static_cast<float>(k) + std::min(p, 1.0f);
      } else {
        score = static_cast<float>(k) + case_free_prob(out, row, at, w[k]);
      }
      if (score > best.score) best = {score, pos};
    }
  }
  return best;
}
}  // namespace detail

namespace detail {
inline std::string quoted_snippet(const std::string& text, std::size_t max = 80) {
  std::string s = text.size() > max ? text.substr(0, max) + "..." : text;
  for (char& c : s)
    if (c == '\n') c = ' ';
  return "\"" + s + "\"";
}
}  // namespace detail

/// Fires when a generated text holds the same word `times` or more times in a row
/// (case-insensitive; words are runs of letters, digits and apostrophes).
class RepeatedWordObjective {
 public:
  /// `times` >= 2.
  explicit RepeatedWordObjective(int times = 3) : times_(times) {
    if (times < 2) detail::fail("RepeatedWordObjective(): option 'times' must be >= 2, got ", times);
  }
  /// Sets hits(r) for each row whose text repeats a word.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = !repeated(out.texts[static_cast<std::size_t>(r)]).empty();
  }
  /// "word 'the' 4 times in a row in: "..."".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    const std::string& text = out.texts[static_cast<std::size_t>(row)];
    int n = 0;
    const std::string w = repeated(text, &n);
    return detail::message("word '", w, "' ", n, " times in a row in: ", detail::quoted_snippet(text));
  }
  /// The repeated word (Finding::fired).
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    return repeated(out.texts[static_cast<std::size_t>(row)]);
  }
  /// Progress toward a repeat: the best, over the runs of one word in the text, of the run's
  /// length n plus (k + p) / (|w| + 1), where k is how many leading characters of the run's word
  /// w the next word holds and p the probability of the character w needs next there (so a run
  /// of n scores in [n, n + 1), and a run of `times` fires). NaN for a text without words. Needs
  /// the Output member char_prob() (see the header comment); fitness() exists only then.
  template <typename Output>
  float progress(const Output& out, Index row) const {
    static_assert(detail::has_char_prob<Output>::value,
                  "nnfuzz: RepeatedWordObjective::progress() reads the Output member "
                  "`float char_prob(Index row, std::size_t pos, char c) const` (the model's probability of "
                  "character c at text position pos, as CharRnnTarget::Output has): your Output lacks it");
    const std::string& text = out.texts[static_cast<std::size_t>(row)];
    spans_.clear();
    for (std::size_t i = 0; i < text.size();) {
      if (!detail::word_char(text[i])) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < text.size() && detail::word_char(text[j])) ++j;
      spans_.emplace_back(i, j);
      i = j;
    }
    auto same = [&](std::size_t a, std::size_t b) {
      const auto [ai, aj] = spans_[a];
      const auto [bi, bj] = spans_[b];
      if (aj - ai != bj - bi) return false;
      for (std::size_t k = 0; k < aj - ai; ++k)
        if (detail::lower_char(text[ai + k]) != detail::lower_char(text[bi + k])) return false;
      return true;
    };
    float best = std::numeric_limits<float>::quiet_NaN();
    int run = 1;
    for (std::size_t w = 0; w < spans_.size(); ++w) {
      if (w + 1 < spans_.size() && same(w, w + 1)) {
        ++run;
        continue;
      }
      // The run of word w ends here; how far the next word (or the text after it) got toward it.
      const auto [wi, wj] = spans_[w];
      const std::size_t len = wj - wi;
      float partial = 0;
      if (w + 1 < spans_.size()) {
        const std::size_t start = spans_[w + 1].first, end = spans_[w + 1].second;
        std::size_t k = 0;
        while (k < len && start + k < end && detail::lower_char(text[start + k]) == detail::lower_char(text[wi + k]))
          ++k;
        partial = static_cast<float>(k) + (k < len ? detail::case_free_prob(out, row, start + k, text[wi + k]) : 0.0f);
      } else if (wj < text.size()) {  // the text ends after a separator: the next word's first character
        std::size_t at = wj;
        while (at < text.size() && !detail::word_char(text[at])) ++at;
        partial = detail::case_free_prob(out, row, at, text[wi]);
      }
      const float score = static_cast<float>(run) + partial / static_cast<float>(len + 1);
      if (!(score <= best)) best = score;
      run = 1;
    }
    return best;
  }
  /// The progress() of a row (higher = closer to a repeat), when the Output has char_prob().
  template <typename Output, std::enable_if_t<detail::has_char_prob<Output>::value, int> = 0>
  float fitness(const Output& out, Index row) const {
    return progress(out, row);
  }

  /// The repeated word of `text` (empty if none), and how often in a row.
  std::string repeated(const std::string& text, int* count = nullptr) const {
    std::vector<std::string> words;
    detail::split_words(text, words);
    int run = 1;
    for (std::size_t i = 1; i <= words.size(); ++i) {
      if (i < words.size() && words[i] == words[i - 1]) {
        ++run;
        continue;
      }
      if (run >= times_) {
        if (count) *count = run;
        return words[i - 1];
      }
      run = 1;
    }
    return {};
  }

 private:
  int times_;
  mutable std::vector<std::pair<std::size_t, std::size_t>> spans_;
};

/// Fires when a generated text contains a word of a blacklist as a whole word
/// (case-insensitive: "cat" matches "Cat." but not "category").
///
/// Progress fitness (when the Output has char_prob(), see the header comment): how close the
/// text came to a word still hunted — the longest prefix of such a word that the text holds at
/// a word start, plus the model's probability of the character the word needs next there (see
/// progress()). Like laf-intel's split comparisons, it gives credit for each matching character.
class BlacklistObjective {
 public:
  /// The words (non-empty, made of letters, digits and apostrophes).
  explicit BlacklistObjective(std::vector<std::string> words) {
    if (words.empty()) detail::fail("BlacklistObjective(): the blacklist is empty");
    for (std::string& w : words) {
      if (w.empty()) detail::fail("BlacklistObjective(): the blacklist holds an empty word");
      for (char& c : w) {
        if (!detail::word_char(c))
          detail::fail("BlacklistObjective(): blacklist word '", w, "' holds '", c,
                       "', which is not a letter, digit or apostrophe (words are matched whole)");
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    words_ = std::move(words);
    std::size_t longest = 0;
    for (const std::string& w : words_) longest = std::max(longest, w.size());
    stage_ = static_cast<float>(longest) + 2;
  }
  /// Sets hits(r) for each row whose text holds a blacklisted word; with focus(), records for
  /// each row's input the generated step where its text needs the next character of its best
  /// partial match.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = !first_match(out.texts[static_cast<std::size_t>(r)]).empty();
    if constexpr (detail::has_char_prob<Output>::value && detail::has_step_of<Output>::value &&
                  std::is_same<Batch, InputBatch>::value) {
      if (!focus_ || words_.empty()) return;
      for (Index r = 0; r < batch.rows(); ++r) {
        const detail::WordProgress w = detail::word_progress(out, r, out.texts[static_cast<std::size_t>(r)], words_);
        if (w.pos == std::string::npos) continue;
        const Index step = out.step_of(r, w.pos);
        if (step >= 0) focus_->record(input_key(batch, r), step);
      }
    }
  }
  /// Progress toward the words still hunted: R·S + the best, over the text's word starts
  /// (position 0 and every position after a non-word character) and the words, of k + p — k the
  /// number of leading characters of the word the text holds there (case-insensitive), p the
  /// model's probability of the character the word needs next (either case; after a whole word
  /// followed by a letter, the probability of a terminator " .,;:!?\n"); a word held whole scores
  /// its length + 1. R is the number of retired words and S = the longest word's length + 2, so
  /// every text scores above any text scored before a retirement (a corpus element's fitness is
  /// recorded once; after a word is found the search turns to the others). Once every word is
  /// retired, R·S. Needs the Output member char_prob() (see the header comment).
  template <typename Output>
  float progress(const Output& out, Index row) const {
    static_assert(detail::has_char_prob<Output>::value,
                  "nnfuzz: BlacklistObjective::progress() reads the Output member "
                  "`float char_prob(Index row, std::size_t pos, char c) const` (the model's probability of "
                  "character c at text position pos, as CharRnnTarget::Output has): your Output lacks it");
    const float base = static_cast<float>(retired_) * stage_;
    if (words_.empty()) return base;
    return base +
           std::max(0.0f, detail::word_progress(out, row, out.texts[static_cast<std::size_t>(row)], words_).score);
  }
  /// The progress() of a row (higher = closer to a hunted word), when the Output has char_prob().
  template <typename Output, std::enable_if_t<detail::has_char_prob<Output>::value, int> = 0>
  float fitness(const Output& out, Index row) const {
    return progress(out, row);
  }
  /// Records in `focus` (shared with a mutator: StructuredMutatorOptions::focus), for every input
  /// checked, the generated step where its text needs the next character of its best partial
  /// match. Needs the Output members char_prob() and step_of(); null stops recording.
  BlacklistObjective& focus(std::shared_ptr<InputFocus> focus) {
    focus_ = std::move(focus);
    return *this;
  }
  /// Words retired so far.
  Index retired() const { return retired_; }
  /// "blacklisted word 'x' in: "..."".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    const std::string& text = out.texts[static_cast<std::size_t>(row)];
    return "blacklisted word '" + first_match(text) + "' in: " + detail::quoted_snippet(text);
  }
  /// The blacklisted word the row's text holds (Finding::fired).
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    return first_match(out.texts[static_cast<std::size_t>(row)]);
  }
  /// The first blacklisted word in `text` (empty if none).
  std::string first_match(const std::string& text) const {
    detail::split_words(text, scratch_);
    for (const std::string& w : scratch_)
      for (const std::string& b : words_)
        if (w == b) return b;
    return {};
  }
  /// The words still hunted, lower-cased.
  const std::vector<std::string>& words() const { return words_; }
  /// Stops firing for `word` (case-insensitive), e.g. from an on_finding callback, so that one
  /// run with max_findings = 0 hunts for every word instead of finding the easiest one again and
  /// again. Returns false when `word` was not (or no longer) in the list. Once every word is
  /// retired the objective fires no more.
  bool retire(std::string word) {
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto it = std::find(words_.begin(), words_.end(), word);
    if (it == words_.end()) return false;
    words_.erase(it);
    ++retired_;
    return true;
  }

 private:
  std::vector<std::string> words_;
  mutable std::vector<std::string> scratch_;
  float stage_ = 2;
  Index retired_ = 0;
  std::shared_ptr<InputFocus> focus_;
};

/// Fires when a user predicate holds for a generated text (e.g. a std::regex_search). An
/// optional fitness says how close a text came (higher = closer), e.g. the length of the longest
/// partial match of a pattern: it then guides FitnessSampler and FuzzOptions::keep_fitter as the
/// blacklist's progress does.
class TextPredicateObjective {
 public:
  /// Text -> fitness (higher = closer to the predicate holding; NaN = unknown).
  using Fitness = std::function<float(const std::string&)>;
  /// `predicate`: bool(const std::string&); `name` describes it in findings; `fitness`, if given,
  /// float(const std::string&).
  explicit TextPredicateObjective(std::function<bool(const std::string&)> predicate, std::string name = "predicate",
                                  Fitness fitness = {})
      : predicate_(std::move(predicate)), name_(std::move(name)), fitness_(std::move(fitness)) {
    if (!predicate_) detail::fail("TextPredicateObjective(): the predicate is empty");
  }
  /// The user's fitness of the row's text; NaN (unknown: it guides nothing) when none was given.
  template <typename Output>
  float fitness(const Output& out, Index row) const {
    return fitness_ ? fitness_(out.texts[static_cast<std::size_t>(row)]) : std::numeric_limits<float>::quiet_NaN();
  }
  /// Whether a fitness was given.
  bool has_fitness() const { return static_cast<bool>(fitness_); }
  /// Sets hits(r) where the predicate holds.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = predicate_(out.texts[static_cast<std::size_t>(r)]);
  }
  /// "NAME holds for: "..."".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    return name_ + " holds for: " + detail::quoted_snippet(out.texts[static_cast<std::size_t>(row)]);
  }

 private:
  std::function<bool(const std::string&)> predicate_;
  std::string name_;
  Fitness fitness_;
};

/// Fires when a row's text, spaces around it removed, is not `expected` (spaces around it removed
/// too): a recogniser that misreads the seed's text (OCR: an image of "DEBATE" read "DELATE").
/// The finding names the first diverging character.
///
/// Progress fitness (when the Output has char_prob()): how near the row came to a misreading —
/// 1 minus the model's probability of the least certain expected character (at the step that
/// wrote it), so that the search drives down the confidence of the right reading; 1 for a row
/// that fires (any reading other than `expected`).
class MisreadObjective {
 public:
  /// `expected`: the text the seed reads (for a corpus of several seeds, one objective per seed).
  explicit MisreadObjective(std::string expected) : expected_(trimmed(expected)) {
    if (expected_.empty())
      detail::fail("MisreadObjective(): the expected text '", expected, "' is empty or all spaces");
  }
  /// Sets hits(r) where the row's text (trimmed) is not the expected text.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = misread(out.texts[static_cast<std::size_t>(r)]);
  }
  /// 1 − the least probability of an expected character where the text reads it; 1 when it misreads.
  template <typename Output, std::enable_if_t<detail::has_char_prob<Output>::value, int> = 0>
  float fitness(const Output& out, Index row) const {
    const std::string& text = out.texts[static_cast<std::size_t>(row)];
    if (misread(text)) return 1.0f;
    const std::size_t at = text.find_first_not_of(' ');
    float least = 1.0f;
    for (std::size_t i = 0; i < expected_.size(); ++i) {
      if (static_cast<unsigned char>(expected_[i]) >= 0x80) continue;  // char_prob() answers one-byte keys only
      const float p = out.char_prob(row, at + i, expected_[i]);
      if (!detail::is_nan(p)) least = std::min(least, p);
    }
    return 1.0f - std::max(0.0f, least);
  }
  /// "reads "DELATE" for "DEBATE": 'L' for 'B' at position 2" (or what is missing or extra).
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    const std::string t = trimmed(out.texts[static_cast<std::size_t>(row)]);
    std::size_t i = 0;
    while (i < t.size() && i < expected_.size() && t[i] == expected_[i]) ++i;
    std::string what;
    if (i < t.size() && i < expected_.size())
      what = detail::message("'", t[i], "' for '", expected_[i], "' at position ", i);
    else if (i < expected_.size())
      what = detail::message("ends before '", expected_[i], "' at position ", i);
    else
      what = detail::message("extra '", t[i], "' at position ", i);
    return "reads " + detail::quoted_snippet(t) + " for " + detail::quoted_snippet(expected_) + ": " + what;
  }
  /// The text read (trimmed): Finding::fired.
  template <typename Output>
  std::string fired(const Output& out, Index row) const {
    return trimmed(out.texts[static_cast<std::size_t>(row)]);
  }
  /// Whether `text` (trimmed) is not the expected text.
  bool misread(const std::string& text) const { return trimmed(text) != expected_; }
  /// The expected text, trimmed.
  const std::string& expected() const { return expected_; }

 private:
  static std::string trimmed(const std::string& t) {
    const std::size_t a = t.find_first_not_of(' ');
    return a == std::string::npos ? std::string() : t.substr(a, t.find_last_not_of(' ') - a + 1);
  }
  std::string expected_;
};

}  // namespace nnfuzz
