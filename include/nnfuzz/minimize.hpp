// SPDX-License-Identifier: MIT
// nnfuzz: minimisation of findings (libFuzzer's -minimize_crash, AFL's afl-tmin, for continuous
// inputs): the smallest change from the root seed that still makes the objective fire.
// Dense rows: minimize() (a line search, then block resets). Structured inputs (InputLayout:
// token and float parts): minimize_edits() (minimize_edits.hpp), delta debugging over the edit
// script from the root. Either kind: minimize_finding() and the stage MinimizeFindings.
#pragma once

#include "detail/config.hpp"
#include "detail/finite.hpp"
#include "detail/traits.hpp"
#include "fuzz_types.hpp"
#include "corpus.hpp"
#include "input.hpp"
#include "minimize_edits.hpp"
#include "stages.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// The size of a perturbation x − root in three norms.
struct PerturbationSize {
  Index l0 = 0;     ///< elements that differ
  double l2 = 0;    ///< Euclidean norm
  double linf = 0;  ///< largest absolute difference
};

/// The size of x − root. Throws std::invalid_argument for different widths.
inline PerturbationSize perturbation_size(const Eigen::Ref<const RowVector>& root,
                                          const Eigen::Ref<const RowVector>& x) {
  if (root.cols() != x.cols())
    detail::fail("perturbation_size(): root has ", root.cols(), " elements, the input ", x.cols());
  PerturbationSize s;
  double sq = 0;
  for (Index c = 0; c < x.cols(); ++c) {
    const double d = static_cast<double>(x(c)) - static_cast<double>(root(c));
    if (d == 0) continue;
    ++s.l0;
    sq += d * d;
    s.linf = std::max(s.linf, std::abs(d));
  }
  s.l2 = std::sqrt(sq);
  return s;
}

/// Options of minimize().
struct MinimizeOptions {
  /// Rows per model call while searching (candidates are evaluated side by side).
  Index batch_size = 64;
  /// The batch size a candidate is confirmed in: it is accepted only if it fires as the first of
  /// this many copies, as Fuzzer::replay() judges a finding (0: batch_size). Give the fuzzer's
  /// batch_size so that "it still fires" means what the fuzzer's replay means.
  Index confirm_batch_size = 0;
  /// Rounds of the line search root -> finding (each halves the interval 1/batch_size-fold).
  int line_rounds = 3;
  /// Greedy resets of blocks of elements to the root, block sizes halving down to 1 (afl-tmin).
  bool reset_elements = true;
  /// Budget of model executions (candidates and confirmations), the first confirmation included:
  /// it must be at least one confirmation's rows; the search stops when spent.
  Index max_executions = 20000;
};

/// What minimize() did.
struct MinimizeResult {
  RowVector input;                 ///< the minimised input (the finding itself if nothing smaller fired)
  PerturbationSize before, after;  ///< sizes of finding − root and input − root
  Index executions = 0;            ///< model executions spent
  double line_t = 1;               ///< the line search's result: input = root + t (finding − root), before resets
};

/// Shrinks `finding` towards `root` while `objective` still fires on `model`:
///  1. a line search on x(t) = root + t (finding − root), t in (0, 1]: the smallest t found that
///     fires (batch_size values of t per model call, line_rounds rounds);
///  2. greedy resets (afl-tmin's block deletion for continuous inputs): blocks of the elements
///     that still differ from the root are set back to the root's values, block sizes halving
///     from half of them to one element; a reset is kept when the result still fires.
/// Every accepted step is confirmed in a batch of confirm_batch_size copies. The result never
/// grows in L0, L2 or L-inf: a line step scales the whole perturbation by t <= 1 (no element
/// ends farther from the root than in the finding, whatever the rounding), and a reset zeroes
/// some of its elements. Works for any dense model (`input_dim()`, `evaluate(batch, out)`)
/// and any objective the Fuzzer accepts. Throws std::invalid_argument for widths that differ from
/// the model's, non-finite inputs, bad options, or a finding that does not fire.
template <typename Model, typename Objective>
MinimizeResult minimize(Model& model, Objective& objective, const Eigen::Ref<const RowVector>& root,
                        const Eigen::Ref<const RowVector>& finding, const MinimizeOptions& o = {}) {
  const char* fn = "minimize()";
  const Index D = model.input_dim();
  if (root.cols() != D || finding.cols() != D)
    detail::fail(fn, ": root has ", root.cols(), " and the finding ", finding.cols(), " elements, the model takes ", D);
  if (!detail::all_finite(root.data(), static_cast<std::size_t>(D)) ||
      !detail::all_finite(finding.data(), static_cast<std::size_t>(D)))
    detail::fail(fn, ": the root or the finding holds a NaN or an infinity");
  if (o.batch_size < 2) detail::fail(fn, ": option 'batch_size' must be >= 2, got ", o.batch_size);
  if (o.confirm_batch_size < 0)
    detail::fail(fn, ": option 'confirm_batch_size' must be >= 0, got ", o.confirm_batch_size);
  if (o.line_rounds < 0) detail::fail(fn, ": option 'line_rounds' must be >= 0, got ", o.line_rounds);
  if (o.max_executions < 1) detail::fail(fn, ": option 'max_executions' must be >= 1, got ", o.max_executions);
  const Index confirm_rows = o.confirm_batch_size > 0 ? o.confirm_batch_size : o.batch_size;
  if (o.max_executions < confirm_rows)  // the first confirmation alone would overspend
    detail::fail(fn, ": option 'max_executions' = ", o.max_executions, " is less than one confirmation of ",
                 confirm_rows, " rows (option '", o.confirm_batch_size > 0 ? "confirm_batch_size" : "batch_size",
                 "'): raise it or lower that option");

  typename Model::Output out;
  Mask hits;
  RowMatrix batch, copies;
  for (const auto& [name, rows, m] : {std::tuple<const char*, Index, RowMatrix*>{"batch_size", o.batch_size, &batch},
                                      {"confirm_batch_size", confirm_rows, &copies}}) {
    const double mib = static_cast<double>(rows) * static_cast<double>(D) * 4.0 / (1 << 20);
    if (rows > std::numeric_limits<Index>::max() / std::max<Index>(D, 1))
      detail::fail(fn, ": option '", name, "' = ", rows, " needs a ", rows, " x ", D, " float batch (", mib,
                   " MiB): too large");
    try {
      m->resize(rows, D);
    } catch (const std::bad_alloc&) {
      detail::fail(fn, ": option '", name, "' = ", rows, " needs a ", rows, " x ", D, " float batch (", mib,
                   " MiB): cannot allocate it");
    }
  }
  MinimizeResult r;
  r.input = finding;
  r.before = perturbation_size(root, finding);
  auto eval = [&](const RowMatrix& b, Index rows) {
    model.evaluate(b.topRows(rows), out);
    detail::run_objective(objective, b.topRows(rows), out, hits);
    r.executions += rows;
  };
  auto confirm = [&](const Eigen::Ref<const RowVector>& x) {
    copies.rowwise() = x;
    eval(copies, confirm_rows);
    return static_cast<bool>(hits(0));
  };
  if (!confirm(finding)) detail::fail(fn, ": the objective does not fire on the finding (nothing to minimise)");
  // x(t) = root + t (finding - root), computed in double, never farther from the root than the
  // finding in any element (float rounding of the product cannot make it grow).
  auto along_line = [&](double t, RowVector& x) {
    for (Index c = 0; c < D; ++c) {
      const double d = static_cast<double>(finding(c)) - static_cast<double>(root(c));
      const float v = static_cast<float>(static_cast<double>(root(c)) + t * d);
      x(c) = std::abs(static_cast<double>(v) - root(c)) <= std::abs(d) ? v : finding(c);
    }
  };
  RowVector x(D);
  auto budget_left = [&](Index rows) { return r.executions + rows + confirm_rows <= o.max_executions; };

  // 1. Line search: the smallest t in (lo, hi] that fires.
  double lo = 0, hi = 1;
  for (int round = 0; round < o.line_rounds && budget_left(o.batch_size); ++round) {
    const Index n = o.batch_size;
    for (Index i = 0; i < n; ++i) {
      along_line(lo + (hi - lo) * static_cast<double>(i + 1) / static_cast<double>(n), x);
      batch.row(i) = x;
    }
    eval(batch, n);
    Index first = -1;
    for (Index i = 0; i < n - 1 && first < 0; ++i)  // row n - 1 is t = hi, which fires
      if (hits(i)) first = i;
    if (first < 0) break;
    const double t = lo + (hi - lo) * static_cast<double>(first + 1) / static_cast<double>(n);
    along_line(t, x);
    if (!budget_left(0) || !confirm(x)) break;
    lo = lo + (hi - lo) * static_cast<double>(first) / static_cast<double>(n);
    hi = t;
    r.input = x;
  }
  r.line_t = hi;

  // 2. Greedy block resets to the root, largest blocks first.
  if (o.reset_elements) {
    std::vector<Index> changed;
    for (Index c = 0; c < D; ++c)
      if (r.input(c) != root(c)) changed.push_back(c);
    for (Index block = std::max<Index>(1, static_cast<Index>(changed.size()) / 2); block >= 1 && !changed.empty();
         block /= 2) {
      // Candidates: each block of `block` consecutive changed elements reset; batch_size at a time.
      for (std::size_t start = 0; start < changed.size();) {
        Index n = 0;
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        for (std::size_t s = start; s < changed.size() && n < o.batch_size; s += static_cast<std::size_t>(block), ++n) {
          const std::size_t e = std::min(changed.size(), s + static_cast<std::size_t>(block));
          batch.row(n) = r.input;
          for (std::size_t k = s; k < e; ++k) batch(n, changed[k]) = root(changed[k]);
          spans.emplace_back(s, e);
        }
        if (n == 0 || !budget_left(n)) break;
        eval(batch, n);
        // Keep every block whose reset fired alone, if together they still fire; else the first.
        RowVector all = r.input, first_only = r.input;
        bool any = false;
        for (Index i = 0; i < n; ++i) {
          if (!hits(i)) continue;
          for (std::size_t k = spans[static_cast<std::size_t>(i)].first; k < spans[static_cast<std::size_t>(i)].second;
               ++k) {
            all(changed[k]) = root(changed[k]);
            if (!any) first_only(changed[k]) = root(changed[k]);
          }
          any = true;
        }
        start = spans.back().second;
        if (!any) continue;
        if (budget_left(0) && confirm(all))
          r.input = all;
        else if (budget_left(0) && confirm(first_only))
          r.input = first_only;
        else
          continue;
        std::vector<Index> still;  // drop the elements now at the root; restart this block size
        for (Index c : changed)
          if (r.input(c) != root(c)) still.push_back(c);
        changed.swap(still);
        start = 0;
      }
      if (block == 1) break;
    }
  }
  r.after = perturbation_size(root, r.input);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Either input kind: the minimiser the model's input kind takes, chosen by overload on the
// input-space tag (detail/traits.hpp), so a caller has one path for both.

namespace detail {
template <typename Model, typename Objective>
MinimizeResult minimize_kind(DenseInputs, Model& model, Objective& objective, const Eigen::Ref<const RowVector>& root,
                             const Finding& f, const MinimizeOptions& o) {
  return minimize(model, objective, root, f.input, o);
}
template <typename Model, typename Objective>
EditMinimizeResult minimize_kind(StructuredInputs, Model& model, Objective& objective, const InputValue& root,
                                 const Finding& f, const MinimizeOptions& o) {
  EditMinimizeOptions e;
  e.batch_size = o.batch_size;
  e.confirm_batch_size = o.confirm_batch_size;
  e.max_executions = o.max_executions;
  return minimize_edits(model, objective, root, f.value, e);
}
// Element i of a corpus as its input kind's minimiser takes a root.
inline Eigen::Map<const RowVector> stored_root(DenseInputs, const Corpus& c, Index i) { return c.input(i); }
inline InputValue stored_root(StructuredInputs, const Corpus& c, Index i) { return c.view(i).value(); }
}  // namespace detail

/// Minimises finding `f` of `model` towards `root` (its seed: a row for a dense model, an
/// InputValue for one with an InputLayout) with the minimiser of the model's input kind:
/// minimize() for dense rows (returns a MinimizeResult), minimize_edits() for structured inputs
/// (returns an EditMinimizeResult; `o`'s batch_size, confirm_batch_size and max_executions carry
/// over, the dense-only options are not used). Throws as the minimiser does.
template <typename Model, typename Objective, typename Root>
auto minimize_finding(Model& model, Objective& objective, const Root& root, const Finding& f,
                      const MinimizeOptions& o = {}) {
  return detail::minimize_kind(detail::input_space_t<Model>{}, model, objective, root, f, o);
}

/// `f` with its input replaced by the minimised one (`what` prefixed with "minimised: ").
inline Finding minimised_finding(Finding f, const MinimizeResult& r) {
  f.input = r.input;
  f.what = "minimised: " + f.what;
  return f;
}
/// `f` with its input replaced by the minimised one (`what` prefixed with "minimised: ").
inline Finding minimised_finding(Finding f, const EditMinimizeResult& r) {
  f.value = r.input;
  f.what = "minimised: " + f.what;
  return f;
}

/// What minimize() did, in one line: "L0 12 -> 3, L2 0.81 -> 0.2, Linf 0.2 -> 0.2".
inline std::string describe_minimised(const MinimizeResult& r, const Finding&) {
  return detail::message("L0 ", r.before.l0, " -> ", r.after.l0, ", L2 ", r.before.l2, " -> ", r.after.l2, ", Linf ",
                         r.before.linf, " -> ", r.after.linf);
}
/// What minimize_edits() did, in one line: "5 edits from seed #2 -> 1: token 3 'x' -> 'y'" (at
/// most eight edits named), with `layout` naming the parts.
inline std::string describe_minimised(const EditMinimizeResult& r, const Finding& f, const InputLayout& layout) {
  std::string s = detail::message(r.edits_before, " edit", r.edits_before == 1 ? "" : "s", " from seed #", f.root,
                                  " -> ", r.edits.size(), r.minimal ? "" : " (budget spent before ddmin ended)");
  for (std::size_t i = 0; i < r.edits.size() && i < 8; ++i) s += (i ? "; " : ": ") + r.edits[i].describe(layout);
  if (r.edits.size() > 8) s += "; ...";
  return s;
}

/// A stage (stages.hpp) that minimises every finding as it is reported, with the fuzzer's own
/// model and a copy of its objective, against the finding's root seed (the fuzz run itself does
/// not change): minimize() for a dense model, minimize_edits() for one with an InputLayout
/// (minimize_finding()). With confirm_batch_size 0, the fuzzer's batch_size is used: "it still
/// fires" then means what the fuzzer's replay means.
///
///     nnfuzz::MinimizeFindings mini;
///     fuzzer.run(seeds, mini);
///     for (const auto& m : mini.results()) ... m.input, m.before, m.after       // dense models
///     for (const auto& m : mini.edit_results()) ... m.input, m.edits           // structured inputs
class MinimizeFindings {
 public:
  /// Minimises with `options` (MinimizeOptions; for structured inputs its batch_size,
  /// confirm_batch_size and max_executions).
  explicit MinimizeFindings(MinimizeOptions options = {}) : o_(options) {}
  /// Minimises the findings reported since the last batch.
  template <typename Context>
  void perform(Context& ctx) {
    using Model = std::decay_t<decltype(ctx.model())>;
    for (const Finding& f : ctx.new_findings()) {
      MinimizeOptions o = o_;
      if (o.confirm_batch_size == 0) o.confirm_batch_size = ctx.options().batch_size;
      auto objective = ctx.objective();  // the run's objective keeps its state
      const auto root = detail::stored_root(detail::input_space_t<Model>{}, ctx.corpus(), f.root);
      keep(minimize_finding(ctx.model(), objective, root, f, o));
    }
  }
  /// One result per finding of a dense model, in the order found (empty for structured inputs).
  const std::vector<MinimizeResult>& results() const { return results_; }
  /// One result per finding of a model with an InputLayout, in the order found (empty for dense models).
  const std::vector<EditMinimizeResult>& edit_results() const { return edit_results_; }

 private:
  void keep(MinimizeResult r) { results_.push_back(std::move(r)); }
  void keep(EditMinimizeResult r) { edit_results_.push_back(std::move(r)); }

  MinimizeOptions o_;
  std::vector<MinimizeResult> results_;
  std::vector<EditMinimizeResult> edit_results_;
};

}  // namespace nnfuzz
