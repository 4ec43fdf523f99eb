// SPDX-License-Identifier: MIT
// nnfuzz: objectives on generated text — a word repeated many times in a row, a blacklisted word,
// any predicate on the text.
//
// They read the model's Output member `texts`: a std::vector<std::string> with one generated
// text per row of the batch (what a language-model wrapper decodes its generations into).
#pragma once

#include "../detail/config.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
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
};

/// Fires when a generated text contains a word of a blacklist as a whole word
/// (case-insensitive: "cat" matches "Cat." but not "category").
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
  }
  /// Sets hits(r) for each row whose text holds a blacklisted word.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) {
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = !first_match(out.texts[static_cast<std::size_t>(r)]).empty();
  }
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
    return true;
  }

 private:
  std::vector<std::string> words_;
  mutable std::vector<std::string> scratch_;
};

/// Fires when a user predicate holds for a generated text (e.g. a std::regex_search).
class TextPredicateObjective {
 public:
  /// `predicate`: bool(const std::string&); `name` describes it in findings.
  explicit TextPredicateObjective(std::function<bool(const std::string&)> predicate, std::string name = "predicate")
      : predicate_(std::move(predicate)), name_(std::move(name)) {
    if (!predicate_) detail::fail("TextPredicateObjective(): the predicate is empty");
  }
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
};

}  // namespace nnfuzz
