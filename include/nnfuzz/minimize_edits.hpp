// SPDX-License-Identifier: MIT
// nnfuzz: minimisation of findings of models with structured inputs (InputLayout: token and float
// parts): minimize_edits(), delta debugging (ddmin) over the edit script from the root seed.
// Dense rows: minimize.hpp, which includes this header and holds MinimizeFindings for both.
#pragma once

#include "detail/config.hpp"
#include "detail/finite.hpp"
#include "detail/traits.hpp"
#include "fuzz_types.hpp"
#include "input.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace nnfuzz {

/// One edit that takes a root input toward a finding (structured inputs, InputLayout). Token
/// edits name positions of the root's sequence, so any subset of an edit script applies to the
/// root on its own (apply_edits()).
struct InputEdit {
  /// What an edit does.
  enum class Kind {
    substitute,  ///< token part: the root's token at `position` becomes `token`
    insert,      ///< token part: `token` goes before the root's token at `position` (at the root's length: after it)
    erase,       ///< token part: the root's token at `position` is removed
    set_float    ///< float part: element `position` becomes `value`
  };
  Index part = 0;               ///< the layout part it changes
  Kind kind = Kind::set_float;  ///< what it does
  Index position = 0;           ///< a position of the root's sequence, or a float element
  TokenId token = 0;            ///< substitute, insert: the new id
  float value = 0;              ///< set_float: the new value

  /// Same edit (the float compared by value).
  bool operator==(const InputEdit& o) const {
    return part == o.part && kind == o.kind && position == o.position && token == o.token && value == o.value;
  }
  /// Not the same edit.
  bool operator!=(const InputEdit& o) const { return !(*this == o); }
  /// "prompt: substitute [3] -> 17", "prompt: insert 5 before [2]", "prompt: erase [4]",
  /// "noise[12] = 0.25": the part's name from `layout`.
  std::string describe(const InputLayout& layout) const {
    const std::string& name = part >= 0 && part < layout.size() ? layout.part(part).name : std::string("?");
    switch (kind) {
      case Kind::substitute:
        return detail::message(name, ": substitute [", position, "] -> ", token);
      case Kind::insert:
        return detail::message(name, ": insert ", token, " before [", position, "]");
      case Kind::erase:
        return detail::message(name, ": erase [", position, "]");
      case Kind::set_float:
        break;
    }
    return detail::message(name, "[", position, "] = ", value);
  }
};

/// The edits that turn `root` into `finding`, both inputs of `layout`: for each token part a
/// shortest edit script (Levenshtein: substitutions, insertions, erasures of the root's tokens;
/// of the shortest scripts, the one that matches tokens from the end first, so the result is
/// deterministic), for each float part one set_float per element whose value differs. In part
/// order, then position order (insertions before the root token they precede, in sequence order).
/// apply_edits(layout, root, input_edits(layout, root, finding)) == finding. Throws
/// std::invalid_argument naming input_edits() when an input does not fit the layout
/// (check_input()) or a pair of sequences needs an edit table of more than 2^26 cells.
inline std::vector<InputEdit> input_edits(const InputLayout& layout, const InputValue& root,
                                          const InputValue& finding) {
  check_input("input_edits()", "the root", layout, root);
  check_input("input_edits()", "the finding", layout, finding);
  std::vector<InputEdit> edits;
  for (Index p = 0; p < layout.size(); ++p) {
    const auto q = static_cast<std::size_t>(p);
    if (layout.part(p).kind == InputPart::Kind::floats) {
      const RowVector &a = root.floats[q], &b = finding.floats[q];
      for (Index c = 0; c < a.cols(); ++c)
        if (a(c) != b(c)) edits.push_back({p, InputEdit::Kind::set_float, c, 0, b(c)});
      continue;
    }
    const std::vector<TokenId>&a = root.tokens[q], &b = finding.tokens[q];
    const std::size_t n = a.size(), m = b.size(), w = m + 1;
    if (static_cast<double>(n + 1) * static_cast<double>(m + 1) > static_cast<double>(Index{1} << 26))
      detail::fail("input_edits(): part '", layout.part(p).name, "' has sequences of ", n, " and ", m,
                   " tokens: the edit table would need more than 2^26 cells");
    std::vector<Index> d((n + 1) * w);
    for (std::size_t i = 0; i <= n; ++i) d[i * w] = static_cast<Index>(i);
    for (std::size_t j = 0; j <= m; ++j) d[j] = static_cast<Index>(j);
    for (std::size_t i = 1; i <= n; ++i)
      for (std::size_t j = 1; j <= m; ++j)
        d[i * w + j] = std::min(
            {d[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1), d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1});
    std::vector<InputEdit> part;  // traced back from the end, reversed below
    for (std::size_t i = n, j = m; i > 0 || j > 0;) {
      const Index here = d[i * w + j];
      if (i > 0 && j > 0 && a[i - 1] == b[j - 1] && here == d[(i - 1) * w + j - 1]) {
        --i, --j;
      } else if (i > 0 && j > 0 && here == d[(i - 1) * w + j - 1] + 1) {
        part.push_back({p, InputEdit::Kind::substitute, static_cast<Index>(i - 1), b[j - 1], 0});
        --i, --j;
      } else if (i > 0 && here == d[(i - 1) * w + j] + 1) {
        part.push_back({p, InputEdit::Kind::erase, static_cast<Index>(i - 1), 0, 0});
        --i;
      } else {
        part.push_back({p, InputEdit::Kind::insert, static_cast<Index>(i), b[j - 1], 0});
        --j;
      }
    }
    edits.insert(edits.end(), part.rbegin(), part.rend());
  }
  return edits;
}

/// `root` with `edits` applied, any subset of one input_edits() script, in its order (token
/// positions refer to the root, so the edits do not shift each other; insertions at one
/// position go in the order given). The result may not fit the layout — a sequence emptied by
/// erasures or longer than max_len by insertions (check_input() tells). Throws
/// std::invalid_argument naming apply_edits(), the edit and the value for an edit of a part the
/// layout lacks, of the wrong kind for its part, at a position outside the root, two edits of
/// one root token (substitute, erase), or a non-finite value.
inline InputValue apply_edits(const InputLayout& layout, const InputValue& root, const std::vector<InputEdit>& edits) {
  check_input("apply_edits()", "the root", layout, root);
  InputValue v = root;
  for (std::size_t e = 0; e < edits.size(); ++e) {
    const InputEdit& x = edits[e];
    if (x.part < 0 || x.part >= layout.size())
      detail::fail("apply_edits(): edit ", e, " names part ", x.part, ", the layout has ", layout.size());
    const InputPart& part = layout.part(x.part);
    const bool tokens = part.kind == InputPart::Kind::tokens;
    if (tokens == (x.kind == InputEdit::Kind::set_float))
      detail::fail("apply_edits(): edit ", e, " (", x.describe(layout), ") is of the wrong kind for part '", part.name,
                   "' (", tokens ? "tokens" : "floats", ")");
    const Index limit = tokens ? static_cast<Index>(root.tokens[static_cast<std::size_t>(x.part)].size()) +
                                     (x.kind == InputEdit::Kind::insert ? 1 : 0)
                               : part.width;
    if (x.position < 0 || x.position >= limit)
      detail::fail("apply_edits(): edit ", e, " (", x.describe(layout), ") has position ", x.position, ", outside [0, ",
                   limit, ")");
    if (x.kind == InputEdit::Kind::set_float) {
      if (!detail::is_finite(x.value))
        detail::fail("apply_edits(): edit ", e, " (", x.describe(layout), ") sets a non-finite value ", x.value);
      v.floats[static_cast<std::size_t>(x.part)](x.position) = x.value;
    }
  }
  for (Index p = 0; p < layout.size(); ++p) {
    if (layout.part(p).kind != InputPart::Kind::tokens) continue;
    const std::vector<TokenId>& a = root.tokens[static_cast<std::size_t>(p)];
    // Per root position: -1 keep, -2 erase, else the substitute; then the insertions before it.
    std::vector<std::int64_t> at(a.size(), -1);
    std::vector<std::vector<TokenId>> before(a.size() + 1);
    bool touched = false;
    for (std::size_t e = 0; e < edits.size(); ++e) {
      const InputEdit& x = edits[e];
      if (x.part != p) continue;
      touched = true;
      const auto i = static_cast<std::size_t>(x.position);
      if (x.kind == InputEdit::Kind::insert) {
        before[i].push_back(x.token);
        continue;
      }
      if (at[i] != -1)
        detail::fail("apply_edits(): edit ", e, " (", x.describe(layout), ") is a second edit of token [", x.position,
                     "] of part '", layout.part(p).name, "'");
      at[i] = x.kind == InputEdit::Kind::erase ? -2 : static_cast<std::int64_t>(x.token);
    }
    if (!touched) continue;
    std::vector<TokenId>& out = v.tokens[static_cast<std::size_t>(p)];
    out.clear();
    for (std::size_t i = 0; i <= a.size(); ++i) {
      out.insert(out.end(), before[i].begin(), before[i].end());
      if (i == a.size() || at[i] == -2) continue;
      out.push_back(at[i] == -1 ? a[i] : static_cast<TokenId>(at[i]));
    }
  }
  return v;
}

/// Options of minimize_edits().
struct EditMinimizeOptions {
  /// Candidates per model call (ddmin's subsets and complements are evaluated side by side).
  Index batch_size = 64;
  /// The batch size a candidate is confirmed in: it is accepted only if it fires as the first of
  /// this many copies, as Fuzzer::replay() judges a finding (0: batch_size). Give the fuzzer's
  /// batch_size so that "it still fires" means what the fuzzer's replay means.
  Index confirm_batch_size = 0;
  /// Budget of model executions (candidates and confirmations), the first confirmation included:
  /// at least one confirmation's rows; the search stops, keeping what it has, when spent.
  Index max_executions = 20000;
};

/// What minimize_edits() did.
struct EditMinimizeResult {
  InputValue input;              ///< the minimised input: the root with `edits` applied (the finding if none could go)
  std::vector<InputEdit> edits;  ///< the edits kept, a subset of input_edits(layout, root, finding), in its order
  Index edits_before = 0;        ///< edits from the root to the finding
  Index executions = 0;          ///< model executions spent
  /// ddmin ran to its end: removing any one of `edits` stops the objective firing (1-minimal).
  /// False when the budget ran out first.
  bool minimal = false;
};

namespace detail {
// Every token part of v holds 1..max_len ids (the only way a subset of edits can break a layout).
inline bool token_lengths_fit(const InputLayout& layout, const InputValue& v) {
  for (Index p = 0; p < layout.size(); ++p) {
    if (layout.part(p).kind != InputPart::Kind::tokens) continue;
    const auto n = static_cast<Index>(v.tokens[static_cast<std::size_t>(p)].size());
    if (n < 1 || n > layout.part(p).width) return false;
  }
  return true;
}
}  // namespace detail

/// Minimises a finding of a model with structured inputs (InputLayout) by delta debugging
/// (ddmin, Zeller & Hildebrandt 2002) over the edits from `root` (its seed) to `finding`: the
/// edit script input_edits() gives — token substitutions, insertions and erasures of each token
/// part, and each float element that differs (e.g. the sampling-noise positions) — is split into
/// n chunks; the first chunk, else the first complement of a chunk, that still fires on the root
/// becomes the set (n back to 2, resp. n − 1); else n doubles, up to the set's size. The root
/// itself (no edit) is tried first. The chunks and complements of a round are evaluated
/// batch_size at a time and taken in that order, so the result is the one sequential ddmin gives
/// and is deterministic. Candidates whose token sequences leave 1..max_len are skipped. A
/// candidate is accepted only when it fires again as the first row of confirm_batch_size copies.
/// The result fires, has at most the finding's edits, and when `minimal` loses the objective on
/// dropping any one edit. The objective's state changes as its check() changes it (pass a copy).
/// Throws std::invalid_argument naming minimize_edits() for a root or finding that does not fit
/// the model's input_layout() (check_input()), bad options, or a finding that does not fire.
template <typename Model, typename Objective>
EditMinimizeResult minimize_edits(Model& model, Objective& objective, const InputValue& root, const InputValue& finding,
                                  const EditMinimizeOptions& o = {}) {
  const char* fn = "minimize_edits()";
  const InputLayout layout = model.input_layout();
  check_input(fn, "the root", layout, root);
  check_input(fn, "the finding", layout, finding);
  if (o.batch_size < 1) detail::fail(fn, ": option 'batch_size' must be >= 1, got ", o.batch_size);
  if (o.confirm_batch_size < 0)
    detail::fail(fn, ": option 'confirm_batch_size' must be >= 0, got ", o.confirm_batch_size);
  const Index confirm_rows = o.confirm_batch_size > 0 ? o.confirm_batch_size : o.batch_size;
  if (o.max_executions < confirm_rows)
    detail::fail(fn, ": option 'max_executions' = ", o.max_executions, " is less than one confirmation of ",
                 confirm_rows, " rows (option '", o.confirm_batch_size > 0 ? "confirm_batch_size" : "batch_size",
                 "'): raise it or lower that option");
  const Index cells = std::max<Index>(1, layout.float_cells() + layout.token_cells());
  InputBatch batch, copies;
  for (const auto& [name, rows, b] : {std::tuple<const char*, Index, InputBatch*>{"batch_size", o.batch_size, &batch},
                                      {"confirm_batch_size", confirm_rows, &copies}}) {
    if (rows > (Index{1} << 40) / cells)
      detail::fail(fn, ": option '", name, "' = ", rows, " needs ", rows, " inputs of ", cells, " cells: too large");
    try {
      b->reserve(layout, rows);
    } catch (const std::bad_alloc&) {
      detail::fail(fn, ": option '", name, "' = ", rows, " needs ", rows, " inputs of ", cells,
                   " cells: cannot allocate them");
    }
  }
  typename Model::Output out;
  Mask hits;
  EditMinimizeResult r;
  const std::vector<InputEdit> all = input_edits(layout, root, finding);
  r.edits_before = static_cast<Index>(all.size());
  r.input = finding;
  r.edits = all;
  auto eval = [&](InputBatch& b, Index rows) {
    b.set_rows(rows);
    model.evaluate(static_cast<const InputBatch&>(b), out);
    detail::run_objective(objective, static_cast<const InputBatch&>(b), out, hits);
    r.executions += rows;
  };
  auto confirm = [&](const InputValue& x) {
    for (Index i = 0; i < confirm_rows; ++i) copies.set_row(i, x);
    eval(copies, confirm_rows);
    return static_cast<bool>(hits(0));
  };
  if (!confirm(finding)) detail::fail(fn, ": the objective does not fire on the finding (nothing to minimise)");
  auto budget_left = [&](Index rows) { return r.executions + rows + confirm_rows <= o.max_executions; };

  // The edits of a set of indices into `all`, and the input they make.
  using Set = std::vector<std::size_t>;
  auto edits_of = [&](const Set& s) {
    std::vector<InputEdit> e;
    e.reserve(s.size());
    for (std::size_t i : s) e.push_back(all[i]);
    return e;
  };
  // The first candidate that fires and confirms (-1: none, or the budget ran out: `spent`).
  bool spent = false;
  auto first_firing = [&](const std::vector<Set>& cands, InputValue& fired) -> std::ptrdiff_t {
    std::vector<InputValue> inputs(cands.size());
    std::vector<std::size_t> rows;  // the candidates that fit, in order
    for (std::size_t c = 0; c < cands.size(); ++c) {
      inputs[c] = apply_edits(layout, root, edits_of(cands[c]));
      if (detail::token_lengths_fit(layout, inputs[c])) rows.push_back(c);
    }
    for (std::size_t start = 0; start < rows.size();) {
      const Index n = std::min<Index>(o.batch_size, static_cast<Index>(rows.size() - start));
      if (!budget_left(n)) {
        spent = true;
        return -1;
      }
      batch.set_rows(n);
      for (Index i = 0; i < n; ++i) batch.set_row(i, inputs[rows[start + static_cast<std::size_t>(i)]]);
      eval(batch, n);
      std::vector<std::size_t> hit;
      for (Index i = 0; i < n; ++i)
        if (hits(i)) hit.push_back(rows[start + static_cast<std::size_t>(i)]);
      for (std::size_t c : hit) {
        if (!budget_left(0)) {
          spent = true;
          return -1;
        }
        if (confirm(inputs[c])) {
          fired = std::move(inputs[c]);
          return static_cast<std::ptrdiff_t>(c);
        }
      }
      start += static_cast<std::size_t>(n);
    }
    return -1;
  };

  Set current(all.size());
  std::iota(current.begin(), current.end(), std::size_t{0});
  std::size_t n = 2;
  bool first_round = true;
  InputValue fired;
  while (!current.empty()) {
    std::vector<Set> cands;
    if (first_round) cands.emplace_back();  // the root itself
    const std::size_t chunks = std::min(n, current.size());
    std::vector<Set> parts(chunks);
    for (std::size_t k = 0; k < chunks; ++k) {
      const std::size_t b = k * current.size() / chunks, e = (k + 1) * current.size() / chunks;
      parts[k].assign(current.begin() + static_cast<std::ptrdiff_t>(b),
                      current.begin() + static_cast<std::ptrdiff_t>(e));
    }
    if (current.size() > 1) {
      cands.insert(cands.end(), parts.begin(), parts.end());
      if (chunks > 2)  // with 2 chunks each complement is the other chunk
        for (std::size_t k = 0; k < chunks; ++k) {
          Set c;
          for (std::size_t j = 0; j < chunks; ++j)
            if (j != k) c.insert(c.end(), parts[j].begin(), parts[j].end());
          cands.push_back(std::move(c));
        }
    }
    const std::size_t offset = first_round ? 1 : 0;
    first_round = false;
    const std::ptrdiff_t got = first_firing(cands, fired);
    if (spent) break;
    if (got < 0) {
      if (chunks >= current.size()) {  // every single edit's removal tried: 1-minimal
        r.minimal = true;
        break;
      }
      n = std::min(2 * n, current.size());
      continue;
    }
    const auto c = static_cast<std::size_t>(got);
    current = cands[c];
    r.input = std::move(fired);
    r.edits = edits_of(current);
    if (c < offset)
      n = 2;  // the root fires: no edit needed
    else if (c - offset < chunks)
      n = 2;
    else
      n = std::max<std::size_t>(n - 1, 2);
  }
  if (current.empty()) r.minimal = true;
  return r;
}

}  // namespace nnfuzz
