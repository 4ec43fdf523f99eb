// SPDX-License-Identifier: MIT
// nnfuzz: mutators for structured inputs — token sequences (text) and float parts.
#pragma once

#include "../detail/config.hpp"
#include "../focus.hpp"
#include "../input.hpp"
#include "../rng.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace nnfuzz {

/// Levenshtein distance between two id sequences (insertions, deletions, substitutions),
/// stopping early once it exceeds `limit` (then returns limit + 1). O(|a|·|b|) time, O(|b|) memory
/// in `row` (reused by the caller).
inline Index edit_distance(const TokenId* a, Index na, const TokenId* b, Index nb, Index limit,
                           std::vector<Index>& row) {
  if (std::abs(na - nb) > limit) return limit + 1;
  row.resize(static_cast<std::size_t>(nb + 1));
  for (Index j = 0; j <= nb; ++j) row[static_cast<std::size_t>(j)] = j;
  for (Index i = 1; i <= na; ++i) {
    Index diag = row[0], best = i;
    row[0] = i;
    for (Index j = 1; j <= nb; ++j) {
      const Index up = row[static_cast<std::size_t>(j)];
      const Index v = std::min({up + 1, row[static_cast<std::size_t>(j - 1)] + 1, diag + (a[i - 1] != b[j - 1])});
      row[static_cast<std::size_t>(j)] = v;
      diag = up;
      best = std::min(best, v);
    }
    if (best > limit) return limit + 1;
  }
  return std::min(row[static_cast<std::size_t>(nb)], limit + 1);
}

/// Options of StructuredMutator.
struct StructuredMutatorOptions {
  Index max_edits = 2;  ///< token edits per mutant: 1..max_edits, uniformly (>= 1)
  /// Largest edit distance of a mutant's sequence from its root seed's (the text analogue of an
  /// L-inf ball; 0 = no bound). A mutant that would leave it is redrawn from the parent, and after
  /// 8 failed draws is the parent itself.
  Index max_distance = 0;
  /// Ids edits may write: empty = all of [0, vocab) of the part; else only these (e.g. the
  /// characters of a training alphabet, without special ids).
  std::vector<TokenId> alphabet;
  /// Leading tokens of every sequence that edits never touch (e.g. 1 for a start-of-text id);
  /// the alphabet check of check_seeds() skips them too.
  Index keep_prefix = 0;
  float insert_weight = 1, delete_weight = 1, substitute_weight = 1, swap_weight = 1;  ///< choice of edit (>= 0)
  /// Words (id sequences, e.g. the words of the seeds' prompts or of a training text) that a
  /// splice edit inserts whole at a random position (AFL's dictionary); empty = no splices.
  std::vector<std::vector<TokenId>> dictionary;
  /// Weight of the splice edit among the others (used only with a non-empty dictionary; >= 0).
  float splice_weight = 1;
  /// Float parts: the fraction of elements redrawn per mutant (0 = leave the float parts alone).
  float float_fraction = 0.1f;
  /// Float parts: redrawn elements get parent + N(0, sigma²) when sigma > 0, else a fresh
  /// uniform value in [lo, hi) (e.g. sampling noise, which is uniform on [0, 1)); clipped to [lo, hi].
  float sigma = 0;
  float lo = 0, hi = 1;  ///< domain of the float parts
  /// Prompt edits near the end: when tail > 0, a mutant's token edits land, with probability
  /// `tail_share`, in the last `tail` editable positions of the sequence (where a language
  /// model's continuation starts), else anywhere. 0 = anywhere always.
  Index tail = 0;
  float tail_share = 0.5f;  ///< see `tail`; in [0, 1]
  /// Aimed noise: positions recorded per input by an objective (BlacklistObjective::focus(): the
  /// generated step where the text needs the next character of its best partial match). For a
  /// parent with a recorded position s, a mutant is, with probability `focus_share`, the parent
  /// with element s of the first float part redrawn (uniform in [lo, hi)) and each later element
  /// redrawn with probability `focus_after` — tokens and the elements before s untouched, so the
  /// text up to s stays and step s draws afresh from the same distribution. Null = no aim.
  std::shared_ptr<const InputFocus> focus;
  float focus_share = 0.5f;  ///< see `focus`; in [0, 1]
  float focus_after = 0.1f;  ///< see `focus`; in [0, 1]
};

/// A mutator for models with an InputLayout: each mutant is its parent with 1..max_edits token
/// edits in every token part (insert, delete, substitute or swap of neighbours, over the part's
/// vocabulary or a given alphabet, or a splice of a dictionary word; within the part's max_len
/// and never below length 1), an
/// optional edit-distance bound to the root seed, and a fraction of every float part redrawn
/// (Gaussian around the parent, or uniform: resampling part of a model's sampling noise).
class StructuredMutator {
 public:
  /// Validates the options (std::invalid_argument naming the option and the value).
  explicit StructuredMutator(StructuredMutatorOptions options = {}) : o_(std::move(options)) {
    if (o_.max_edits < 1) detail::fail("StructuredMutator(): option 'max_edits' must be >= 1, got ", o_.max_edits);
    if (o_.max_distance < 0)
      detail::fail("StructuredMutator(): option 'max_distance' must be >= 0 (0 = no bound), got ", o_.max_distance);
    for (TokenId t : o_.alphabet)
      if (t < 0) detail::fail("StructuredMutator(): option 'alphabet' holds a negative id ", t);
    if (o_.keep_prefix < 0)
      detail::fail("StructuredMutator(): option 'keep_prefix' must be >= 0, got ", o_.keep_prefix);
    for (std::size_t i = 0; i < o_.dictionary.size(); ++i) {
      if (o_.dictionary[i].empty()) detail::fail("StructuredMutator(): option 'dictionary' word ", i, " is empty");
      for (TokenId t : o_.dictionary[i])
        if (t < 0) detail::fail("StructuredMutator(): option 'dictionary' word ", i, " holds a negative id ", t);
    }
    const float w[kEdits] = {o_.insert_weight, o_.delete_weight, o_.substitute_weight, o_.swap_weight,
                             o_.dictionary.empty() ? 0.0f : o_.splice_weight};
    float total = 0;
    for (float x : w) {
      if (!detail::is_finite(x) || !(x >= 0))
        detail::fail("StructuredMutator(): edit weights must be finite and >= 0, got ", x);
      total += x;
    }
    if (!(total > 0)) detail::fail("StructuredMutator(): at least one edit weight must be positive");
    for (int i = 0; i < kEdits; ++i) cumulative_[i] = (i ? cumulative_[i - 1] : 0) + w[i] / total;
    if (!detail::is_finite(o_.float_fraction) || !(o_.float_fraction >= 0 && o_.float_fraction <= 1))
      detail::fail("StructuredMutator(): option 'float_fraction' must be in [0, 1], got ", o_.float_fraction);
    if (!detail::is_finite(o_.sigma) || !(o_.sigma >= 0))
      detail::fail("StructuredMutator(): option 'sigma' must be finite and >= 0, got ", o_.sigma);
    if (!detail::is_finite(o_.lo) || !detail::is_finite(o_.hi) || !(o_.lo < o_.hi))
      detail::fail("StructuredMutator(): options 'lo' and 'hi' must be finite with lo < hi, got lo=", o_.lo,
                   " hi=", o_.hi);
    if (o_.tail < 0) detail::fail("StructuredMutator(): option 'tail' must be >= 0 (0 = anywhere), got ", o_.tail);
    for (const auto& [name, v] : {std::pair<const char*, float>{"tail_share", o_.tail_share},
                                  {"focus_share", o_.focus_share},
                                  {"focus_after", o_.focus_after}})
      if (!detail::is_finite(v) || !(v >= 0 && v <= 1))
        detail::fail("StructuredMutator(): option '", name, "' must be in [0, 1], got ", v);
  }

  /// Refuses seeds whose float parts leave [lo, hi] or whose ids are outside the alphabet.
  void check_seeds(const std::vector<InputValue>& seeds) const {
    for (std::size_t s = 0; s < seeds.size(); ++s) {
      for (std::size_t p = 0; p < seeds[s].floats.size(); ++p)
        for (Index c = 0; c < seeds[s].floats[p].cols(); ++c) {
          const float v = seeds[s].floats[p](c);
          if (v < o_.lo || v > o_.hi)
            detail::fail("StructuredMutator: seed ", s, " part ", p, " element ", c, " is ", v, ", outside [", o_.lo,
                         ", ", o_.hi, "]");
        }
      if (!o_.alphabet.empty())
        for (std::size_t p = 0; p < seeds[s].tokens.size(); ++p)
          for (std::size_t i = static_cast<std::size_t>(o_.keep_prefix); i < seeds[s].tokens[p].size(); ++i)
            if (std::find(o_.alphabet.begin(), o_.alphabet.end(), seeds[s].tokens[p][i]) == o_.alphabet.end())
              detail::fail("StructuredMutator: seed ", s, " part ", p, " token ", i, " (id ", seeds[s].tokens[p][i],
                           ") is not in the mutator's alphabet");
    }
  }

  /// Fills every row of `batch` with a mutant of `parent`.
  void mutate(const InputView& parent, const InputView& root, InputBatch& batch, Rng& rng) {
    const InputLayout& layout = parent.layout();
    Index aim = -1, noise = -1;  // the parent's recorded step, and the float part it indexes
    if (o_.focus && o_.focus_share > 0) {
      for (Index p = 0; p < layout.size() && noise < 0; ++p)
        if (layout.part(p).kind == InputPart::Kind::floats) noise = p;
      if (noise >= 0) aim = o_.focus->find(input_key(parent));
      if (aim >= layout.part(std::max<Index>(noise, 0)).width) aim = -1;
    }
    for (Index r = 0; r < batch.rows(); ++r) {
      batch.set_row(r, parent);
      if (aim >= 0 && rng.uniform() < o_.focus_share) {
        ++aimed_;
        auto row = batch.floats(noise).row(r);
        row(aim) = draw_float(rng);
        for (Index c = aim + 1; c < row.cols(); ++c)
          if (rng.uniform() < o_.focus_after) row(c) = draw_float(rng);
        continue;
      }
      near_end_ = o_.tail > 0 && rng.uniform() < o_.tail_share;
      for (Index p = 0; p < layout.size(); ++p) {
        const InputPart& part = layout.part(p);
        if (part.kind == InputPart::Kind::tokens)
          mutate_tokens(part, parent.ids(p), parent.length(p), root.ids(p), root.length(p), batch, p, r, rng);
        else if (o_.float_fraction > 0)
          mutate_floats(batch.floats(p).row(r), rng);
      }
    }
  }

  /// The options.
  const StructuredMutatorOptions& options() const { return o_; }
  /// Mutants made by aimed noise (StructuredMutatorOptions::focus) since construction.
  std::uint64_t aimed() const { return aimed_; }

 private:
  void mutate_tokens(const InputPart& part, const TokenId* pids, Index plen, const TokenId* rids, Index rlen,
                     InputBatch& batch, Index p, Index r, Rng& rng) {
    seq_.resize(static_cast<std::size_t>(part.width) + 1);  // + 1: an insert into a full sequence
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::copy(pids, pids + plen, seq_.begin());
      Index len = plen;
      const Index edits = 1 + rng.uniform_index(o_.max_edits);
      for (Index e = 0; e < edits; ++e) edit(part, len, rng);
      if (o_.max_distance > 0 && edit_distance(seq_.data(), len, rids, rlen, o_.max_distance, dist_) > o_.max_distance)
        continue;
      batch.set_tokens(p, r, seq_.data(), len);
      return;
    }
    // Eight draws all left the ball: keep the parent's sequence for this part.
  }

  void edit(const InputPart& part, Index& len, Rng& rng) {
    const double u = rng.uniform();
    int kind = 0;
    while (kind < kEdits - 1 && u >= cumulative_[kind]) ++kind;
    Index lo = std::min(o_.keep_prefix, len);  // editable positions: [lo, len)
    if (near_end_) lo = std::max(lo, len - o_.tail);
    if (kind == 4 && o_.dictionary.empty()) kind = 2;  // (rounding of the cumulative weights)
    if (kind == 4) {                                   // splice a dictionary word, if it fits
      const auto& word =
          o_.dictionary[static_cast<std::size_t>(rng.uniform_index(static_cast<Index>(o_.dictionary.size())))];
      const Index n = static_cast<Index>(word.size());
      if (len + n <= part.width) {
        const Index at = lo + rng.uniform_index(len - lo + 1);
        std::copy_backward(seq_.begin() + at, seq_.begin() + len, seq_.begin() + len + n);
        std::copy(word.begin(), word.end(), seq_.begin() + at);
        len += n;
        return;
      }
      kind = 2;  // no room: substitute instead
    }
    if (kind == 0 && len >= part.width) kind = 2;           // full: substitute instead of insert
    if (kind == 1 && (len <= 1 || len - lo < 1)) kind = 2;  // never empty: substitute instead of delete
    if (kind == 3 && len - lo < 2) kind = 2;
    if (kind == 2 && len - lo < 1) kind = len < part.width ? 0 : -1;  // nothing to substitute: append, or nothing
    auto begin = seq_.begin();
    switch (kind) {
      case -1:
        break;
      case 0: {  // insert
        const Index at = lo + rng.uniform_index(len - lo + 1);
        std::copy_backward(begin + at, begin + len, begin + len + 1);
        seq_[static_cast<std::size_t>(at)] = draw(part, rng);
        ++len;
        break;
      }
      case 1: {  // delete
        const Index at = lo + rng.uniform_index(len - lo);
        std::copy(begin + at + 1, begin + len, begin + at);
        --len;
        break;
      }
      case 2:  // substitute
        seq_[static_cast<std::size_t>(lo + rng.uniform_index(len - lo))] = draw(part, rng);
        break;
      default: {  // swap neighbours
        const auto at = static_cast<std::size_t>(lo + rng.uniform_index(len - lo - 1));
        std::swap(seq_[at], seq_[at + 1]);
      }
    }
  }

  TokenId draw(const InputPart& part, Rng& rng) const {
    if (!o_.alphabet.empty())
      return o_.alphabet[static_cast<std::size_t>(rng.uniform_index(static_cast<Index>(o_.alphabet.size())))];
    return static_cast<TokenId>(rng.uniform_index(part.vocab));
  }

  float draw_float(Rng& rng) const {
    return std::min(o_.hi, o_.lo + (o_.hi - o_.lo) * static_cast<float>(rng.uniform()));
  }

  template <typename Row>
  void mutate_floats(Row&& row, Rng& rng) {
    const Index w = row.cols();
    const Index k = std::max<Index>(1, static_cast<Index>(std::lround(o_.float_fraction * static_cast<float>(w))));
    if (o_.sigma > 0) {  // the row's normals in one fill (fill_normal draws 32 at a time)
      normals_.resize(static_cast<std::size_t>(k));
      rng.fill_normal(normals_.data(), k);
    }
    for (Index i = 0; i < k; ++i) {
      const Index c = rng.uniform_index(w);
      float v;
      if (o_.sigma > 0) {
        v = row(c) + o_.sigma * normals_[static_cast<std::size_t>(i)];
      } else {
        v = o_.lo + (o_.hi - o_.lo) * static_cast<float>(rng.uniform());
      }
      row(c) = std::min(o_.hi, std::max(o_.lo, v));
    }
  }

  static constexpr int kEdits = 5;  // insert, delete, substitute, swap, splice
  StructuredMutatorOptions o_;
  double cumulative_[kEdits] = {0, 0, 0, 0, 0};
  std::vector<TokenId> seq_;
  std::vector<Index> dist_;
  std::vector<float> normals_;
  bool near_end_ = false;  // this mutant's edits land near the sequence's end
  std::uint64_t aimed_ = 0;
};

}  // namespace nnfuzz
