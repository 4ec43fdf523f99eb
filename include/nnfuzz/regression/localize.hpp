// SPDX-License-Identifier: MIT
// nnfuzz: where two versions part — for an input, every named intermediate tensor of the old
// and the new version compared under its Tolerance, in the order computed, and the first one
// whose difference exceeds it (TFLite's QuantizationDebugger and PyTorch's numeric suite give the
// per-layer errors; this names the layer where the versions part, per finding).
//
//     nnfuzz::TensorTolerances tol(nnfuzz::Tolerance::float16(2));
//     std::vector<nnfuzz::Localization> where = nnfuzz::localize_findings(pair, result.findings, tol);
//     for (const nnfuzz::DivergenceGroup& g : nnfuzz::group_by_first_tensor(where))
//       std::printf("%zu findings part at %s\n", g.count, g.tensor.c_str());
//
// A version names its tensors through a member of its Output, `for_each_tensor(f)`, calling
// f(name, matrix) for each tensor (rows = inputs) in the order computed — MlpTrace (models/mlp.hpp)
// and NanTarget's Output have one; give your own model's Output one to localise it.
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"
#include "../fuzz_types.hpp"
#include "../tolerance.hpp"
#include "metrics.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnfuzz {

/// One named tensor of the two versions, compared on one input.
struct TensorDivergence {
  std::string name;     ///< the tensor's name (the old version's)
  Tolerance tolerance;  ///< the tolerance it was compared under
  TensorError error;    ///< the element-wise errors (error.exceeds(): over the tolerance)
  double sqnr_db = 0;   ///< the candidate's SQNR against the reference on this input (dB)
};

/// Where two versions part on one input: every tensor both name, in the old version's order, and
/// the first one over its tolerance.
struct Localization {
  std::vector<TensorDivergence> tensors;  ///< in the order the old version computes them
  Index first = -1;                       ///< index in `tensors` of the first over its tolerance; -1: none
  /// True when some tensor is over its tolerance.
  bool diverges() const { return first >= 0; }
  /// The name of the first tensor over its tolerance ("" when none is).
  std::string first_tensor() const { return first >= 0 ? tensors[static_cast<std::size_t>(first)].name : ""; }
  /// "first diverging tensor: dense2 (max error 3 ulps over float16, 1 ulp; SQNR 41.2 dB); before it:
  /// dense1 0.5 ulps, relu1 0.5 ulps", or "no tensor over its tolerance (…)".
  std::string describe() const {
    auto error_of = [](const TensorDivergence& t) {
      return detail::message(t.error.max_units, t.tolerance.format == NumberFormat::float32 ? "" : " ",
                             t.tolerance.unit_name());
    };
    std::string s;
    if (first < 0) {
      s = "no tensor over its tolerance (";
      for (std::size_t i = 0; i < tensors.size(); ++i)
        s += (i ? ", " : "") + tensors[i].name + " " + error_of(tensors[i]);
      return s + ")";
    }
    const TensorDivergence& t = tensors[static_cast<std::size_t>(first)];
    s = detail::message("first diverging tensor: ", t.name, " (max error ", error_of(t), " over ",
                        t.tolerance.describe(), ", ", t.error.exceeded, " of ", t.error.size, " values; SQNR ",
                        t.sqnr_db, " dB)");
    if (first > 0) {
      s += "; before it:";
      for (Index i = 0; i < first; ++i)
        s += (i ? ", " : " ") + tensors[static_cast<std::size_t>(i)].name + " " +
             error_of(tensors[static_cast<std::size_t>(i)]);
    }
    return s;
  }
};

namespace detail {
// One row of a named tensor, as double.
struct NamedRow {
  std::string name;
  Eigen::RowVectorXd values;
};
template <typename Out>
std::vector<NamedRow> named_rows(const char* fn, const Out& out, Index row) {
  std::vector<NamedRow> rows;
  out.for_each_tensor([&](const auto& name, const auto& m) {
    if (row < 0 || row >= m.rows()) fail(fn, ": tensor '", name, "' has ", m.rows(), " rows, asked for row ", row);
    NamedRow n{std::string(name), Eigen::RowVectorXd(m.cols())};
    for (Index c = 0; c < m.cols(); ++c) n.values(c) = to_double(m(row, c));
    rows.push_back(std::move(n));
  });
  return rows;
}

// The two versions' own outputs inside a pair's Output: VersionPair's old_output / new_output,
// PairTarget's reference_trace / candidate_trace.
template <typename Out, typename = void>
struct has_version_outputs : std::false_type {};
template <typename Out>
struct has_version_outputs<
    Out, void_t<decltype(std::declval<const Out&>().old_output), decltype(std::declval<const Out&>().new_output)>>
    : std::true_type {};
template <typename Out, typename = void>
struct has_version_traces : std::false_type {};
template <typename Out>
struct has_version_traces<Out, void_t<decltype(std::declval<const Out&>().reference_trace),
                                      decltype(std::declval<const Out&>().candidate_trace)>> : std::true_type {};
template <typename Out>
const auto& old_version(const Out& out) {
  if constexpr (has_version_outputs<Out>::value)
    return out.old_output;
  else
    return out.reference_trace;
}
template <typename Out>
const auto& new_version(const Out& out) {
  if constexpr (has_version_outputs<Out>::value)
    return out.new_output;
  else
    return out.candidate_trace;
}
}  // namespace detail

/// True when a pair's Output lets localize_rows() compare the two versions tensor by tensor:
/// it holds the versions' own outputs (VersionPair: old_output / new_output; PairTarget:
/// reference_trace / candidate_trace) and both have for_each_tensor().
template <typename PairOutput>
constexpr bool can_localize() {
  if constexpr (detail::has_version_outputs<PairOutput>::value || detail::has_version_traces<PairOutput>::value) {
    using O = std::decay_t<decltype(detail::old_version(std::declval<const PairOutput&>()))>;
    using N = std::decay_t<decltype(detail::new_version(std::declval<const PairOutput&>()))>;
    return detail::has_for_each_tensor<O>::value && detail::has_for_each_tensor<N>::value;
  } else {
    return false;
  }
}

/// Compares row `row` of every tensor the two versions' outputs name (for_each_tensor), in the
/// old version's order, each under tolerances.of(its name). A tensor only one version names is
/// skipped. Throws std::invalid_argument for a tensor whose widths differ between the versions, a
/// row out of range, or outputs that name no common tensor.
template <typename OldOut, typename NewOut>
Localization localize(const OldOut& old_out, const NewOut& new_out, Index row, const TensorTolerances& tolerances) {
  static_assert(detail::has_for_each_tensor<OldOut>::value && detail::has_for_each_tensor<NewOut>::value,
                "nnfuzz: localize() needs both versions' outputs to name their tensors: a member "
                "`template <class F> void for_each_tensor(F&& f) const` calling f(name, matrix) per tensor in the "
                "order computed (see regression/localize.hpp)");
  const std::vector<detail::NamedRow> a = detail::named_rows("localize()", old_out, row);
  const std::vector<detail::NamedRow> b = detail::named_rows("localize()", new_out, row);
  Localization loc;
  for (const detail::NamedRow& x : a) {
    const auto y = std::find_if(b.begin(), b.end(), [&](const detail::NamedRow& n) { return n.name == x.name; });
    if (y == b.end()) continue;
    if (y->values.size() != x.values.size())
      detail::fail("localize(): tensor '", x.name, "' has ", x.values.size(), " values per input in the old version, ",
                   y->values.size(), " in the new one");
    TensorDivergence t;
    t.name = x.name;
    t.tolerance = tolerances.of(x.name);
    t.error = tensor_error(x.values, y->values, t.tolerance);
    t.sqnr_db = sqnr_db(x.values, y->values);
    if (loc.first < 0 && t.error.exceeds()) loc.first = static_cast<Index>(loc.tensors.size());
    loc.tensors.push_back(std::move(t));
  }
  if (loc.tensors.empty()) detail::fail("localize(): the two versions name no tensor in common");
  return loc;
}

/// Runs a pair of versions (VersionPair or PairTarget whose versions name their tensors; see
/// can_localize()) on `rows`, one input at a time, and localises each.
template <typename Pair>
std::vector<Localization> localize_rows(Pair& pair, const Eigen::Ref<const RowMatrix>& rows,
                                        const TensorTolerances& tolerances) {
  using Out = typename std::decay_t<Pair>::Output;
  static_assert(can_localize<Out>(),
                "nnfuzz: localize_rows() needs a pair whose Output holds both versions' outputs (VersionPair's "
                "old_output/new_output, PairTarget's reference_trace/candidate_trace), each with for_each_tensor() "
                "(see regression/localize.hpp)");
  if (rows.rows() > 0 && rows.cols() != pair.input_dim())
    detail::fail("localize_rows(): the rows have ", rows.cols(), " values, the pair takes ", pair.input_dim());
  std::vector<Localization> all;
  all.reserve(static_cast<std::size_t>(rows.rows()));
  Out out;
  // One input per call: a version whose arithmetic depends on the batch would otherwise be
  // localised on another computation than the one that is replayed.
  for (Index r = 0; r < rows.rows(); ++r) {
    pair.evaluate(rows.middleRows(r, 1), out);
    all.push_back(localize(detail::old_version(out), detail::new_version(out), 0, tolerances));
  }
  return all;
}

/// localize_rows() over the inputs of dense findings.
template <typename Pair>
std::vector<Localization> localize_findings(Pair& pair, const std::vector<Finding>& findings,
                                            const TensorTolerances& tolerances) {
  return localize_rows(pair, finding_inputs(findings), tolerances);
}

/// The localisations that part at one tensor.
struct DivergenceGroup {
  std::string tensor;                ///< the first diverging tensor ("" : none over its tolerance)
  std::size_t count = 0;             ///< localisations in the group
  std::vector<std::size_t> members;  ///< their indices in the list given
};

/// Groups localisations by their first diverging tensor (as group_findings() groups by
/// signature), in the order the tensors are computed; the group of those with no tensor over
/// its tolerance (tensor "") comes last.
inline std::vector<DivergenceGroup> group_by_first_tensor(const std::vector<Localization>& where) {
  std::vector<DivergenceGroup> groups;
  std::vector<Index> order;  // position of each group's tensor in the computation
  for (std::size_t i = 0; i < where.size(); ++i) {
    const std::string name = where[i].first_tensor();
    auto it = std::find_if(groups.begin(), groups.end(), [&](const DivergenceGroup& g) { return g.tensor == name; });
    if (it == groups.end()) {
      groups.push_back({name, 0, {}});
      order.push_back(where[i].first >= 0 ? where[i].first : std::numeric_limits<Index>::max());
      it = groups.end() - 1;
    }
    ++it->count;
    it->members.push_back(i);
  }
  std::vector<std::size_t> idx(groups.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return order[x] < order[y]; });
  std::vector<DivergenceGroup> sorted;
  sorted.reserve(groups.size());
  for (std::size_t i : idx) sorted.push_back(std::move(groups[i]));
  return sorted;
}

}  // namespace nnfuzz
